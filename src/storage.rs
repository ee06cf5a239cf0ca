//! File-system storage under a container root: reading whole files, atomic
//! writes (temporary file in the same directory, then rename), listing,
//! deletion, removal of the temporaries killed writers leave, and the
//! advisory directory lock that serialises read-modify-write updates of
//! attributes.json between processes.
//!
//! Keys are normalised container-relative paths (see [`crate::path`]); this
//! module never sees `..`, so nothing it does can reach outside the root.

use std::fs::{self, File};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};

/// Prefix of the temporary files that atomic writes create; names starting
/// with `.` are never groups, datasets or blocks, so readers skip them.
pub const TEMP_PREFIX: &str = ".n5tmp.";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A container root on the local file system.
#[derive(Debug)]
pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    /// Storage rooted at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsStore { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file-system path of `key`.
    pub fn path(&self, key: &str) -> PathBuf {
        if key.is_empty() {
            self.root.clone()
        } else {
            self.root.join(key)
        }
    }

    /// The whole content of the file at `key`, or `None` when it does not
    /// exist. A directory where a file is expected is an error.
    pub fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        Ok(self.read_into(key, &mut buf)?.then_some(buf))
    }

    /// Start reading the file at `key` into the page cache in the
    /// background, for a [`FsStore::read_into`] soon after. A hint only:
    /// a missing file or any error is ignored.
    pub fn prefetch(&self, key: &str) {
        if let Ok(file) = File::open(self.path(key)) {
            crate::os::will_need(&file);
        }
    }

    /// Read the whole file at `key` into `buf` (replacing its contents,
    /// reusing its memory); `false` when the file does not exist. A
    /// directory where a file is expected is an error.
    pub fn read_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        let Some((mut file, len)) = self.open(key)? else {
            return Ok(false);
        };
        buf.clear();
        buf.reserve(len.min(1 << 30) as usize);
        file.read_to_end(buf)
            .map_err(|e| Error::io(self.path(key).display(), e))?;
        Ok(true)
    }

    /// Open the file at `key` for reading, with its length; `None` when it
    /// does not exist. A directory where a file is expected is an error.
    pub fn open(&self, key: &str) -> Result<Option<(File, u64)>> {
        let path = self.path(key);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == IoKind::NotFound => return Ok(None),
            Err(e) if e.kind() == IoKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let meta = file.metadata().map_err(|e| Error::io(path.display(), e))?;
        if meta.is_dir() {
            return Err(Error::new(
                crate::ErrorKind::Io,
                format!(
                    "'{}' is a directory where a file was expected",
                    path.display()
                ),
            ));
        }
        Ok(Some((file, meta.len())))
    }

    /// Whether a file or directory exists at `key`.
    pub fn exists(&self, key: &str) -> bool {
        self.path(key).exists()
    }

    /// Whether a directory exists at `key`.
    pub fn is_dir(&self, key: &str) -> bool {
        self.path(key).is_dir()
    }

    /// Whether a regular file exists at `key`.
    pub fn is_file(&self, key: &str) -> bool {
        self.path(key).is_file()
    }

    /// Create the directory `key` and its parents.
    pub fn create_dirs(&self, key: &str) -> Result<()> {
        let path = self.path(key);
        fs::create_dir_all(&path).map_err(|e| Error::io(path.display(), e))
    }

    /// Replace the file at `key` with `data` atomically: the bytes go to a
    /// temporary file in the same directory, which is then renamed over the
    /// target, so readers see the old or the new content, never a mix, and a
    /// killed writer leaves the old file intact. Parent directories are created.
    pub fn write_atomic(&self, key: &str, data: &[u8]) -> Result<()> {
        self.write_atomic_parts(key, &[data])
    }

    /// [`FsStore::write_atomic`] of the concatenation of `parts` (such as a
    /// block header and its payload, without copying them together first).
    pub fn write_atomic_parts(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
        let path = self.path(key);
        let dir = path.parent().ok_or_else(|| {
            Error::invalid_argument(format!("cannot write to '{}'", path.display()))
        })?;
        let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            Error::invalid_argument(format!("cannot write to '{}'", path.display()))
        })?;
        let tmp = dir.join(format!(
            "{TEMP_PREFIX}{name}.{}.{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let mut file = match File::create(&tmp) {
            Ok(f) => f,
            Err(e) if e.kind() == IoKind::NotFound => {
                fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
                File::create(&tmp).map_err(|e| Error::io(tmp.display(), e))?
            }
            Err(e) => return Err(Error::io(tmp.display(), e)),
        };
        let result = parts
            .iter()
            .try_for_each(|part| file.write_all(part))
            .and_then(|_| fs::rename(&tmp, &path));
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(path.display(), e));
        }
        Ok(())
    }

    /// Delete the file at `key`; returns whether it existed.
    pub fn delete(&self, key: &str) -> Result<bool> {
        let path = self.path(key);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == IoKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path.display(), e)),
        }
    }

    /// Delete the temporary files (names starting with [`TEMP_PREFIX`]) below
    /// the root that were last modified at least `older_than` ago: what
    /// writers killed in the middle of a write leave behind. Symlinks met on
    /// the way are neither followed nor removed, so directories reached
    /// through a symlink are not searched (the walk checks each entry with
    /// `lstat`; it does not guard against another user replacing a
    /// directory by a symlink while it runs). Returns how many files were
    /// removed and their total size in bytes. A temporary that vanishes
    /// meanwhile (its write finished) is skipped; any other error stops the
    /// walk and names the path.
    pub fn remove_stale_temporaries(&self, older_than: Duration) -> Result<(u64, u64)> {
        let now = SystemTime::now();
        let (mut files, mut bytes) = (0u64, 0u64);
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == IoKind::NotFound => continue,
                Err(e) => return Err(Error::io(dir.display(), e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(dir.display(), e))?;
                let meta = match entry.metadata() {
                    Ok(m) => m,
                    Err(e) if e.kind() == IoKind::NotFound => continue, // removed meanwhile
                    Err(e) => return Err(Error::io(entry.path().display(), e)),
                };
                if meta.is_dir() {
                    stack.push(entry.path());
                    continue;
                }
                let temporary = entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(TEMP_PREFIX));
                let age = meta
                    .modified()
                    .ok()
                    .and_then(|m| now.duration_since(m).ok())
                    .unwrap_or(Duration::ZERO);
                if !temporary || !meta.is_file() || age < older_than {
                    continue;
                }
                match fs::remove_file(entry.path()) {
                    Ok(()) => {
                        files += 1;
                        bytes += meta.len();
                    }
                    Err(e) if e.kind() == IoKind::NotFound => {}
                    Err(e) => return Err(Error::io(entry.path().display(), e)),
                }
            }
        }
        Ok((files, bytes))
    }

    /// Delete the directory `key` and everything below it; returns whether it existed.
    pub fn remove_all(&self, key: &str) -> Result<bool> {
        let path = self.path(key);
        match fs::remove_dir_all(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == IoKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path.display(), e)),
        }
    }

    /// Names of the subdirectories of `key`, sorted; hidden names (starting
    /// with `.`) are skipped. `None` when `key` is not a directory.
    pub fn list_dirs(&self, key: &str) -> Result<Option<Vec<String>>> {
        self.list(key, true)
    }

    /// Names of the regular files in `key`, sorted, hidden names skipped.
    pub fn list_files(&self, key: &str) -> Result<Option<Vec<String>>> {
        self.list(key, false)
    }

    fn list(&self, key: &str, dirs: bool) -> Result<Option<Vec<String>>> {
        let path = self.path(key);
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == IoKind::NotFound => return Ok(None),
            Err(e) if e.kind() == IoKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(path.display(), e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // not UTF-8: cannot be named through the API
            };
            if name.starts_with('.') {
                continue;
            }
            let ft = match entry.file_type() {
                Ok(ft) if ft.is_symlink() => match fs::metadata(entry.path()) {
                    Ok(m) => m.file_type(),
                    Err(_) => continue,
                },
                Ok(ft) => ft,
                Err(e) => return Err(Error::io(entry.path().display(), e)),
            };
            if (dirs && ft.is_dir()) || (!dirs && ft.is_file()) {
                names.push(name);
            }
        }
        names.sort();
        Ok(Some(names))
    }

    /// Take an exclusive advisory lock (`flock`) on the directory `key`,
    /// held until the guard is dropped. Serialises read-modify-write updates
    /// of the files in that directory between threads and processes. No file
    /// is created for it.
    pub fn lock_dir(&self, key: &str) -> Result<DirLock> {
        let path = self.path(key);
        let file = File::open(&path).map_err(|e| Error::io(path.display(), e))?;
        match file.lock() {
            Ok(()) => {}
            // File systems without flock support: proceed unlocked, as
            // Java's default "permissive" policy does.
            Err(e) if e.kind() == IoKind::Unsupported => {}
            Err(e) => return Err(Error::io(path.display(), e)),
        }
        Ok(DirLock { _file: file })
    }
}

/// An advisory lock on a directory, released on drop (closing the descriptor
/// releases the `flock`).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}
