//! Where a command-line path points: the container root on disk and the
//! group or dataset path inside it, and opening the container there.
//!
//! `vol.n5/raw/s0` names the dataset `raw/s0` of the container `vol.n5`: the
//! last path component ending in `.n5` is the root. Without one, the root is
//! the highest directory of the path as written (including `.`) whose
//! attributes.json has an `"n5"` version; failing that, the path itself.

use std::path::{Path, PathBuf};

use n5::{Container, Mode, Options};

use crate::error::{At, CliError, CliResult};

/// A container root and a path inside it, with the argument as typed.
#[derive(Clone, Debug)]
pub struct Location {
    /// The container's root directory.
    pub root: PathBuf,
    /// The group or dataset path inside the container (`""` is the root).
    pub inner: String,
    /// The argument as the user wrote it, for messages.
    pub arg: String,
}

impl Location {
    /// Split the command-line path `arg` into a container root and an inner path.
    pub fn parse(arg: &str) -> Location {
        let path = Path::new(arg);
        let names: Vec<String> = path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let split = names.iter().rposition(|n| is_n5_name(n)).or_else(|| {
            // The highest prefix with a versioned attributes.json.
            (0..names.len()).find(|&i| has_version(&prefix(&names[..=i])))
        });
        match split {
            Some(i) => Location {
                root: prefix(&names[..=i]),
                inner: names[i + 1..].join("/"),
                arg: arg.to_string(),
            },
            None if !path.is_absolute() && has_version(Path::new(".")) => Location {
                root: PathBuf::from("."),
                inner: names.join("/"),
                arg: arg.to_string(),
            },
            None => Location {
                root: path.to_path_buf(),
                inner: String::new(),
                arg: arg.to_string(),
            },
        }
    }

    /// A location below this one (`child` relative to `inner`).
    pub fn child(&self, child: &str) -> Location {
        let inner = join(&self.inner, child);
        let arg = if child.is_empty() {
            self.arg.clone()
        } else {
            format!("{}/{child}", self.arg.trim_end_matches('/'))
        };
        Location {
            root: self.root.clone(),
            inner,
            arg,
        }
    }

    /// Open the container in `mode` with `threads` threads for region I/O.
    pub fn open(&self, mode: Mode, threads: usize) -> CliResult<Container> {
        if mode == Mode::Read && !self.root.is_dir() {
            return Err(CliError::new(&self.arg, "no such container or directory"));
        }
        Container::open_with(
            &self.root,
            mode,
            Options {
                threads,
                ..Options::default()
            },
        )
        .at(&self.arg)
    }

    /// Whether the root is recognisably a container: a directory named
    /// `*.n5`, or one whose attributes.json has an `"n5"` version.
    pub fn root_is_container(&self) -> bool {
        let named = self
            .root
            .file_name()
            .is_some_and(|n| is_n5_name(&n.to_string_lossy()));
        self.root.is_dir() && (named || has_version(&self.root))
    }

    /// The file-system path of `key` (a container-relative key such as a block key).
    pub fn file(&self, key: &str) -> PathBuf {
        let mut p = self.root.clone();
        for part in key.split('/').filter(|s| !s.is_empty()) {
            p.push(part);
        }
        p
    }
}

/// Join two container-relative paths (either may be `""`).
pub fn join(base: &str, child: &str) -> String {
    match (base.is_empty(), child.is_empty()) {
        (true, _) => child.to_string(),
        (_, true) => base.to_string(),
        _ => format!("{base}/{child}"),
    }
}

fn prefix(names: &[String]) -> PathBuf {
    names.iter().collect()
}

/// Whether `dir/attributes.json` holds an `"n5"` version.
/// Whether a directory name marks a container root: `*.n5`, any case.
fn is_n5_name(name: &str) -> bool {
    name.len() > 3 && name.to_ascii_lowercase().ends_with(".n5")
}

fn has_version(dir: &Path) -> bool {
    std::fs::read(dir.join("attributes.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.get("n5").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_n5_component_is_the_root() {
        let l = Location::parse("/data/a.n5/b.n5/raw/s0");
        assert_eq!(l.root, PathBuf::from("/data/a.n5/b.n5"));
        assert_eq!(l.inner, "raw/s0");
        let l = Location::parse("vol.n5/");
        assert_eq!(l.root, PathBuf::from("vol.n5"));
        assert_eq!(l.inner, "");
        assert_eq!(l.child("x").inner, "x");
        assert_eq!(l.child("x").arg, "vol.n5/x");
    }

    #[test]
    fn without_a_marker_the_path_is_the_root() {
        let l = Location::parse("/nonexistent/place/vol");
        assert_eq!(l.root, PathBuf::from("/nonexistent/place/vol"));
        assert_eq!(l.inner, "");
        assert_eq!(
            l.file("ds/0/1"),
            PathBuf::from("/nonexistent/place/vol/ds/0/1")
        );
    }
}
