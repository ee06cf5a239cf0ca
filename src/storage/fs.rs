//! The local file system as a [`Store`]: objects are files under a root
//! directory, directories are directories. Writes are atomic (a temporary
//! file in the same directory, then rename), read-modify-write updates hold
//! an advisory `flock` on the object's directory so processes sharing the
//! disk serialise them, the temporaries killed writers leave can be removed,
//! and symlinks inside the root are followed (dangling ones read as
//! missing).
//!
//! Keys are normalised container-relative paths (see [`crate::path`]); this
//! module never sees `..`, so nothing it does can reach outside the root.

use std::fs::{self, File};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::store::{
    copy_through, ByteRange, Capabilities, Exact, Listing, Precondition, Store, UpdateFn, Version,
};
use crate::error::{Error, ErrorKind, Result};

/// Prefix of the temporary files that atomic writes create; names starting
/// with `.` are never groups, datasets or blocks, so readers skip them.
pub const TEMP_PREFIX: &str = ".n5tmp.";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A container root on the local file system.
#[derive(Debug)]
pub struct FsStore {
    root: PathBuf,
    location: String,
    /// The file last opened for a range read, kept open for the next
    /// ranges of it (a shard's inner chunks, an index and its chunks): one
    /// `stat` of the path per range instead of an open, an `fstat` and a
    /// close, and the kernel's read-ahead state of the open file carries
    /// from range to range.
    ranged: Mutex<Option<OpenFile>>,
}

/// A file kept open by [`FsStore`] for range reads.
#[derive(Debug)]
struct OpenFile {
    key: String,
    file: Arc<File>,
    meta: fs::Metadata,
}

impl FsStore {
    /// Storage rooted at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        FsStore {
            location: root.display().to_string(),
            root,
            ranged: Mutex::new(None),
        }
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

    /// Open the file at `key` for reading, with its length; `None` when it
    /// does not exist. A directory where a file is expected is an error.
    fn open(&self, key: &str) -> Result<Option<(File, fs::Metadata)>> {
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
                ErrorKind::Io,
                format!(
                    "'{}' is a directory where a file was expected",
                    path.display()
                ),
            ));
        }
        Ok(Some((file, meta)))
    }

    /// [`FsStore::open`] for a range read: the file kept open for ranges
    /// when the path still names it (same device, inode, size and
    /// modification time: a file renamed over it, or written since, is
    /// opened anew), else the file opened now, which is kept instead.
    fn open_for_ranges(&self, key: &str) -> Result<Option<(Arc<File>, fs::Metadata)>> {
        use std::os::unix::fs::MetadataExt;
        let kept = {
            let guard = self.ranged.lock().unwrap_or_else(|p| p.into_inner());
            guard
                .as_ref()
                .filter(|o| o.key == key)
                .map(|o| (o.file.clone(), o.meta.clone()))
        };
        if let Some((file, meta)) = kept {
            if let Ok(now) = fs::metadata(self.path(key)) {
                if now.is_file()
                    && now.dev() == meta.dev()
                    && now.ino() == meta.ino()
                    && now.len() == meta.len()
                    && now.modified().ok() == meta.modified().ok()
                {
                    return Ok(Some((file, meta)));
                }
            }
        }
        let Some((file, meta)) = self.open(key)? else {
            return Ok(None);
        };
        let file = Arc::new(file);
        *self.ranged.lock().unwrap_or_else(|p| p.into_inner()) = Some(OpenFile {
            key: key.to_string(),
            file: file.clone(),
            meta: meta.clone(),
        });
        Ok(Some((file, meta)))
    }

    /// Write the concatenation of `parts` to a new temporary file beside
    /// `key`'s file (creating its directory), and return the temporary's
    /// path and the target's.
    fn write_temporary(&self, key: &str, parts: &[&[u8]]) -> Result<(PathBuf, PathBuf)> {
        self.write_temporary_with(key, |file| {
            parts.iter().try_for_each(|part| file.write_all(part))
        })
    }

    /// A temporary file next to `key`'s, filled by `fill`: its path and
    /// `key`'s. Nothing is left behind when `fill` fails.
    fn write_temporary_with(
        &self,
        key: &str,
        fill: impl FnOnce(&mut File) -> std::io::Result<()>,
    ) -> Result<(PathBuf, PathBuf)> {
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
        if let Err(e) = fill(&mut file) {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(path.display(), e));
        }
        Ok((tmp, path))
    }

    /// Take an exclusive advisory lock (`flock`) on the directory `dir`,
    /// held until the guard is dropped. Serialises read-modify-write updates
    /// of the files in that directory between threads and processes. No file
    /// is created for it.
    pub fn lock_dir(&self, dir: &str) -> Result<DirLock> {
        let path = self.path(dir);
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

    /// The version of the file at `path`: its modification time, size and
    /// inode, which an atomic replacement always changes.
    fn version_of(meta: &fs::Metadata) -> Version {
        use std::os::unix::fs::MetadataExt;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
            .unwrap_or_default();
        Version(format!(
            "{}.{}-{}-{}",
            mtime.as_secs(),
            mtime.subsec_nanos(),
            meta.len(),
            meta.ino()
        ))
    }
}

fn parent_dir(key: &str) -> &str {
    key.rsplit_once('/').map_or("", |(dir, _)| dir)
}

impl Store for FsStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn describe(&self, key: &str) -> String {
        format!("'{}'", self.path(key).display())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            writable: true,
            list: true,
            remote: false,
            exact_versions: false,
        }
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        let Some((file, meta)) = self.open(key)? else {
            return Ok(false);
        };
        buf.clear();
        read_whole(&file, &meta, buf).map_err(|e| Error::io(self.path(key).display(), e))?;
        Ok(true)
    }

    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        let Some((file, meta)) = self.open_for_ranges(key)? else {
            return Ok(None);
        };
        let span = range.resolve(meta.len());
        // The open file's own metadata: a replacement (a rename over the
        // key) is another file with another version.
        let version = FsStore::version_of(&meta);
        buf.clear();
        // The span lies inside the file as it was opened; a file cut short
        // since gives fewer bytes, which the caller sees.
        crate::os::read_at_into(&file, span.start, (span.end - span.start) as usize, buf)
            .map_err(|e| Error::io(self.path(key).display(), e))?;
        Ok(Some(Some(version)))
    }

    fn get_exact(&self, key: &str, parts: &mut [&mut [u8]]) -> Result<Exact> {
        let Some((mut file, meta)) = self.open(key)? else {
            return Ok(Exact::Missing);
        };
        let len = meta.len();
        let io = |e| Error::io(self.path(key).display(), e);
        if len != parts.iter().map(|p| p.len() as u64).sum::<u64>() {
            let mut whole = Vec::with_capacity(len.min(1 << 30) as usize);
            file.read_to_end(&mut whole).map_err(io)?;
            return Ok(Exact::Other(whole));
        }
        for part in parts.iter_mut() {
            file.read_exact(part).map_err(io)?;
        }
        Ok(Exact::Read)
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        let Some((file, meta)) = self.open(key)? else {
            return Ok(None);
        };
        let version = FsStore::version_of(&meta);
        let mut data = Vec::new();
        read_whole(&file, &meta, &mut data).map_err(|e| Error::io(self.path(key).display(), e))?;
        Ok(Some((data, version)))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        match fs::metadata(self.path(key)) {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(_) => Ok(None),
            Err(e) if matches!(e.kind(), IoKind::NotFound | IoKind::NotADirectory) => Ok(None),
            Err(e) => Err(Error::io(self.path(key).display(), e)),
        }
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
        let (tmp, path) = self.write_temporary(key, parts)?;
        if let Err(e) = fs::rename(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(path.display(), e));
        }
        Ok(())
    }

    fn put_copy(
        &self,
        key_here: &str,
        src: &dyn Store,
        key: &str,
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        let Some(from) = src.local_file(key) else {
            return copy_through(self, key_here, src, key, buf);
        };
        let mut file = match File::open(&from) {
            Ok(f) => f,
            Err(e) if matches!(e.kind(), IoKind::NotFound | IoKind::NotADirectory) => {
                self.delete(key_here)?;
                return Ok(false);
            }
            Err(e) => return Err(Error::io(src.describe(key), e)),
        };
        // File to file: `io::copy` has the kernel copy the bytes
        // (copy_file_range on Linux), so none pass through this process.
        let (tmp, path) = self
            .write_temporary_with(key_here, |out| std::io::copy(&mut file, out).map(|_| ()))
            .map_err(|e| e.context(format!("copying {}", src.describe(key))))?;
        if let Err(e) = fs::rename(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(path.display(), e));
        }
        Ok(true)
    }

    fn local_file(&self, key: &str) -> Option<PathBuf> {
        Some(self.path(key))
    }

    fn put_if(&self, key: &str, data: &[u8], condition: &Precondition) -> Result<bool> {
        let (tmp, path) = self.write_temporary(key, &[data])?;
        let result = match condition {
            // A hard link fails when the target exists: an atomic create.
            Precondition::Absent => match fs::hard_link(&tmp, &path) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == IoKind::AlreadyExists => Ok(false),
                Err(e) => Err(Error::io(path.display(), e)),
            },
            // Under the directory lock, as every update on this store.
            Precondition::Matches(version) => {
                let _lock = self.lock_dir(parent_dir(key))?;
                match fs::metadata(&path) {
                    Ok(m) if FsStore::version_of(&m) == *version => fs::rename(&tmp, &path)
                        .map(|_| true)
                        .map_err(|e| Error::io(path.display(), e)),
                    Ok(_) => Ok(false),
                    Err(e) if e.kind() == IoKind::NotFound => Ok(false),
                    Err(e) => Err(Error::io(path.display(), e)),
                }
            }
        };
        let _ = fs::remove_file(&tmp);
        result
    }

    fn delete(&self, key: &str) -> Result<bool> {
        let path = self.path(key);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == IoKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path.display(), e)),
        }
    }

    fn delete_dir(&self, dir: &str) -> Result<bool> {
        let path = self.path(dir);
        match fs::remove_dir_all(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == IoKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(path.display(), e)),
        }
    }

    fn list(&self, dir: &str) -> Result<Option<Listing>> {
        let path = self.path(dir);
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == IoKind::NotFound => return Ok(None),
            Err(e) if e.kind() == IoKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let mut listing = Listing::default();
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
                    Err(_) => continue, // dangling
                },
                Ok(ft) => ft,
                Err(e) => return Err(Error::io(entry.path().display(), e)),
            };
            if ft.is_dir() {
                listing.dirs.push(name);
            } else if ft.is_file() {
                listing.files.push(name);
            }
        }
        listing.dirs.sort();
        listing.files.sort();
        Ok(Some(listing))
    }

    fn is_dir(&self, dir: &str) -> Result<bool> {
        Ok(self.path(dir).is_dir())
    }

    fn create_dir(&self, dir: &str) -> Result<()> {
        let path = self.path(dir);
        fs::create_dir_all(&path).map_err(|e| Error::io(path.display(), e))
    }

    /// Read-modify-write under an advisory lock on the key's directory,
    /// which must exist: `f` runs once.
    fn update(&self, key: &str, f: &mut UpdateFn<'_>) -> Result<()> {
        // The lock lives in the key's directory, made first if missing (a
        // new shard's), so that writers racing to create the key share it.
        let parent = parent_dir(key);
        if !self.is_dir(parent)? {
            self.create_dir(parent)?;
        }
        let _lock = self.lock_dir(parent)?;
        let current = self.get(key)?;
        if let Some(next) = f(current.as_deref())? {
            self.put(key, &[&next])?;
        }
        Ok(())
    }

    /// Delete the temporary files (names starting with [`TEMP_PREFIX`]) below
    /// the root that were last modified at least `older_than` ago: what
    /// writers killed in the middle of a write leave behind. Symlinks met on
    /// the way are neither followed nor removed, so directories reached
    /// through a symlink are not searched (the walk checks each entry with
    /// `lstat`; it does not guard against another user replacing a
    /// directory by a symlink while it runs). A temporary that vanishes
    /// meanwhile (its write finished) is skipped; any other error stops the
    /// walk and names the path.
    fn remove_stale_temporaries(&self, older_than: Duration) -> Result<(u64, u64)> {
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
}

/// An advisory lock on a directory, released on drop (closing the descriptor
/// releases the `flock`).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Appends the whole of `file` to `out`: the size it had when opened in
/// one read, then whatever lies beyond (a file that grew, or one that
/// reports no size, as some virtual file systems do) until the end.
fn read_whole(file: &File, meta: &fs::Metadata, out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut at = 0u64;
    let mut want = usize::try_from(meta.len()).unwrap_or(usize::MAX).max(1);
    loop {
        let got = crate::os::read_at_into(file, at, want, out)?;
        if got < want {
            return Ok(());
        }
        at += got as u64;
        want = 64 << 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "reads procfs")]
    fn whole_reads_go_past_the_size_a_file_reports() {
        // procfs reports a size of 0 for files that hold text.
        let file = File::open("/proc/self/status").unwrap();
        let meta = file.metadata().unwrap();
        assert_eq!(meta.len(), 0);
        let mut out = Vec::new();
        read_whole(&file, &meta, &mut out).unwrap();
        assert!(String::from_utf8_lossy(&out).contains("Name:"), "{out:?}");
        // An ordinary file: exactly its bytes.
        let dir = std::env::temp_dir().join(format!("n5-fs-whole-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
        fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let mut out = vec![1, 2];
        read_whole(&file, &file.metadata().unwrap(), &mut out).unwrap();
        assert_eq!(out[..2], [1, 2]);
        assert_eq!(out[2..], data[..]);
        fs::remove_dir_all(&dir).unwrap();
    }

    fn scratch(name: &str) -> (FsStore, PathBuf) {
        let dir = std::env::temp_dir().join(format!("n5-fs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        (FsStore::new(&dir), dir)
    }

    #[test]
    fn objects_ranges_versions_and_conditions() {
        let (s, dir) = scratch("objects");
        assert_eq!(s.get("a/b").unwrap(), None);
        s.put("a/b", &[b"hello ", b"world"]).unwrap();
        assert_eq!(s.get("a/b").unwrap().unwrap(), b"hello world");
        assert_eq!(s.size("a/b").unwrap(), Some(11));
        assert_eq!(s.size("a").unwrap(), None);
        let range = |r| s.get_range("a/b", r).unwrap().unwrap();
        assert_eq!(range(ByteRange::Span { offset: 6, len: 3 }), b"wor");
        assert_eq!(range(ByteRange::Suffix(5)), b"world");
        assert_eq!(range(ByteRange::From(20)), b"");
        let (mut x, mut y) = ([0u8; 5], [0u8; 6]);
        assert_eq!(
            s.get_exact("a/b", &mut [&mut x, &mut y]).unwrap(),
            Exact::Read
        );
        assert_eq!((&x, &y), (b"hello", b" world"));
        assert_eq!(
            s.get_exact("a/b", &mut [&mut x]).unwrap(),
            Exact::Other(b"hello world".to_vec())
        );
        assert!(!s.put_if("a/b", b"x", &Precondition::Absent).unwrap());
        assert!(s.put_if("a/c", b"x", &Precondition::Absent).unwrap());
        let (_, v) = s.get_versioned("a/b").unwrap().unwrap();
        assert!(s
            .put_if("a/b", b"new", &Precondition::Matches(v.clone()))
            .unwrap());
        assert!(!s
            .put_if("a/b", b"newer", &Precondition::Matches(v))
            .unwrap());
        assert_eq!(s.get("a/b").unwrap().unwrap(), b"new");
        let listing = s.list("a").unwrap().unwrap();
        assert_eq!(listing.files, ["b", "c"], "no temporaries are left");
        assert_eq!(s.list_keys("").unwrap(), ["a/b", "a/c"]);
        s.update("a/b", &mut |old| Ok(Some([old.unwrap(), b"!"].concat())))
            .unwrap();
        assert_eq!(s.get("a/b").unwrap().unwrap(), b"new!");
        assert!(s.delete_dir("a").unwrap());
        assert!(!s.is_dir("a").unwrap());
        fs::remove_dir_all(dir).unwrap();
    }
}
