//! Where a command-line PATH points: the container root (a local directory
//! or a URL: `s3://`, `gs://`, `https://`...) and the group or dataset path
//! inside it, the storage options that location gets, and opening the
//! container there.
//!
//! `vol.n5/raw/s0` names the dataset `raw/s0` of the container `vol.n5`: the
//! last path component ending in `.n5` (or `.zarr`, `.h5`, `.hdf5`) is the
//! root. A local path that goes through an existing file has that file as
//! its root (`data.h5/t00000/s00/0/cells`, `hdf5:vol.bin/raw`: an HDF5
//! file and a path inside it), and behind `h5:` or `hdf5:` without such a
//! name the first component that is not a directory is the file, there or
//! not. Without either, the root is the highest
//! directory of the path as written (including `.`) whose attributes.json
//! has an `"n5"` version; failing that, the path itself. URLs split by the same rule
//! (`s3://bucket/vol.n5/raw/s0` is `raw/s0` in `s3://bucket/vol.n5`);
//! without a `.n5` or `.zarr` component, the highest prefix whose
//! attributes.json has an `"n5"` key is found by reading it through the
//! store, else the whole URL is the root. A format prefix (`n5:`) stays
//! with the root.

use std::path::{Path, PathBuf};

use n5::storage::location::Backend;
use n5::storage::Store;
use n5::{Container, Mode, Options};

use crate::error::{At, CliError, CliResult};
use crate::global::Global;

/// What a location's format prefix asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// `n5:`, `zarr2:` or `zarr3:`: that format.
    Exactly(n5::format::Format),
    /// `zarr:`: Zarr, v3 when the root has zarr.json and v2 otherwise for
    /// a container that is there; for a new one, `--format` (or the
    /// `format` option) decides, else v3.
    AnyZarr,
}

/// A container root and a path inside it, with the argument as typed.
#[derive(Clone, Debug)]
pub struct Location {
    /// The container root as a location string for the library: a local
    /// path or a URL, with its format prefix (`n5:`) if one was given.
    pub root: String,
    /// The root directory on disk when the location is local.
    pub local: Option<PathBuf>,
    /// The group or dataset path inside the container (`""` is the root).
    pub inner: String,
    /// The argument as the user wrote it (credentials left out), for messages.
    pub arg: String,
    /// The options the container opens with (threads set by [`Location::open`]).
    options: Options,
}

/// `(format prefix, rest)` of a location string, split as the library
/// splits it.
fn split_format(text: &str) -> (&str, &str) {
    let (_, rest) = n5::storage::location::split_format(text);
    (&text[..text.len() - rest.len()], rest)
}

impl Location {
    /// Split the command-line PATH or URL `arg` into a container root and
    /// an inner path, with the storage options of `g`. Reads the store of a
    /// URL without a `.n5` component to find its root.
    pub fn parse(arg: &str, g: &Global) -> CliResult<Location> {
        let (format, rest) = split_format(arg);
        // The library's message names the location, without credentials.
        let parsed =
            n5::storage::Location::parse(arg).map_err(|e| CliError::usage("", e.message()))?;
        let options = g.options_for(rest, &parsed);
        match &parsed.backend {
            Backend::File(path) => {
                let path = if rest.contains("://") {
                    // file:///...: the decoded path.
                    path.to_string_lossy().into_owned()
                } else {
                    rest.to_string()
                };
                Ok(Location::parse_local(format, &path, arg, options))
            }
            _ => Location::parse_url(format, rest, &parsed, options),
        }
    }

    /// The split of a local path (`path` without its format prefix).
    fn parse_local(format: &str, path: &str, arg: &str, options: Options) -> Location {
        let as_path = Path::new(path);
        let names: Vec<String> = as_path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        // A file on the way is the root: nothing is below a file but what
        // the file itself holds. Behind `h5:` or `hdf5:` without a name
        // that says so, the first component that is not a directory is the
        // file, there or not.
        let file = (0..names.len()).find(|&i| prefix(&names[..=i]).is_file());
        let hdf5 = matches!(format, "h5:" | "hdf5:");
        let split = file
            .or_else(|| names.iter().rposition(|n| is_container_name(n)))
            .or_else(|| {
                hdf5.then(|| (0..names.len()).find(|&i| !prefix(&names[..=i]).is_dir()))
                    .flatten()
            })
            .or_else(|| {
                // The highest prefix with a versioned attributes.json.
                (0..names.len()).find(|&i| has_version(&prefix(&names[..=i])))
            });
        let (root, inner) = match split {
            Some(i) => (prefix(&names[..=i]), names[i + 1..].join("/")),
            None if !as_path.is_absolute() && has_version(Path::new(".")) => {
                (PathBuf::from("."), names.join("/"))
            }
            None => (as_path.to_path_buf(), String::new()),
        };
        Location {
            root: format!("{format}{}", root.display()),
            local: Some(root),
            inner,
            arg: arg.to_string(),
            options,
        }
    }

    /// The split of a URL (`url` without its format prefix, `parsed` as the
    /// library reads it).
    fn parse_url(
        format: &str,
        url: &str,
        parsed: &n5::storage::Location,
        options: Options,
    ) -> CliResult<Location> {
        let arg = format!("{format}{}", parsed.display);
        let whole = |options: Options| Location {
            root: format!("{format}{url}"),
            local: None,
            inner: String::new(),
            arg: arg.clone(),
            options,
        };
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let after = &url[scheme_end..];
        if after.contains(['?', '#']) {
            // A query or fragment: the URL names the root as it is.
            return Ok(whole(options));
        }
        let (authority, path) = after.split_once('/').unwrap_or((after, ""));
        let base = format!("{}{authority}", &url[..scheme_end]);
        let names: Vec<&str> = path
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        let candidate = |i: usize| -> String {
            if i == 0 {
                base.clone()
            } else {
                format!("{base}/{}", names[..i].join("/"))
            }
        };
        let decode = |parts: &[&str]| -> CliResult<String> {
            let decoded: Vec<String> = parts
                .iter()
                .map(|p| n5::storage::http::percent_decode(p, "location"))
                .collect::<n5::Result<_>>()
                .map_err(|e| CliError::usage(&arg, e.message()))?;
            Ok(decoded.join("/"))
        };
        // The shallowest prefix that is a location at all (path-style S3
        // and GCS URLs need their bucket).
        let Some(first) =
            (0..=names.len()).find(|&i| n5::storage::Location::parse(&candidate(i)).is_ok())
        else {
            return Ok(whole(options));
        };
        let split = match names
            .iter()
            .rposition(|n| decode(&[n]).is_ok_and(|d| is_container_name(&d)))
        {
            Some(i) if i + 1 >= first => i + 1,
            _ => find_versioned_root(&candidate(first), &names[first..], &options)
                .map_or(names.len(), |k| first + k),
        };
        Ok(Location {
            root: format!("{format}{}", candidate(split)),
            local: None,
            inner: decode(&names[split..])?,
            arg,
            options,
        })
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
            inner,
            arg,
            ..self.clone()
        }
    }

    /// Whether the location is on the local file system.
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// Open the container in `mode` with `threads` threads for region I/O.
    pub fn open(&self, mode: Mode, threads: usize) -> CliResult<Container> {
        match &self.local {
            Some(root) if mode == Mode::Read && !root.exists() => {
                return Err(CliError::new(
                    &self.arg,
                    "no such container, directory or file",
                ));
            }
            None if mode != Mode::Read && self.is_web() => {
                return Err(CliError::new(
                    &self.arg,
                    "plain HTTP(S) locations are read-only (write to S3 or Google Cloud Storage through s3:// or gs://)",
                ));
            }
            _ => {}
        }
        Container::open_with(
            &self.root,
            mode,
            Options {
                threads,
                ..self.options.clone()
            },
        )
        .at(&self.arg)
    }

    /// [`Location::open`] with the options a copy writes with: `format`
    /// for a container that [`Mode::Create`] makes (an existing one keeps
    /// its own), and whether blocks equal to the fill value are stored. A
    /// `zarr:` prefix becomes `zarr2:` or `zarr3:` after `format`, so that
    /// the container the library creates (or opens) is the one asked for;
    /// a container there of another format is an error naming both.
    pub fn open_for_copy(
        &self,
        mode: Mode,
        threads: usize,
        format: n5::format::Format,
        write_empty_blocks: bool,
    ) -> CliResult<Container> {
        use n5::format::Format;
        use n5::storage::location::{split_format, FormatHint};
        let root = match split_format(&self.root) {
            (Some(FormatHint::Zarr), rest) if format != Format::N5 => {
                let explicit = if format == Format::Zarr2 {
                    "zarr2:"
                } else {
                    "zarr3:"
                };
                format!("{explicit}{rest}")
            }
            _ => self.root.clone(),
        };
        let c = Location {
            root,
            options: Options {
                format: Some(format),
                write_empty_blocks,
                ..self.options.clone()
            },
            ..self.clone()
        }
        .open(mode, threads)?;
        if c.format() != format {
            return Err(CliError::new(
                &self.arg,
                format!(
                    "is a {} container, not {}",
                    c.format().name(),
                    format.name()
                ),
            ));
        }
        Ok(c)
    }

    /// The format of the container at this location when one is there
    /// (its root has a marker, or it has children), `None` when nothing
    /// is there yet or it cannot be read.
    pub fn existing_format(&self) -> Option<n5::format::Format> {
        let c = self.open(Mode::Read, 1).ok()?;
        if c.format() == n5::format::Format::Hdf5 {
            // A file: its store is the directory it is in.
            return Some(c.format());
        }
        let store = c.store();
        let marked = [
            "attributes.json",
            "zarr.json",
            ".zgroup",
            ".zarray",
            ".zattrs",
        ]
        .iter()
        .any(|m| store.exists(m).unwrap_or(false));
        let children = c.list("").is_ok_and(|l| !l.is_empty());
        (marked || children).then(|| c.format())
    }

    /// What the location's prefix says about its format, if it has one.
    pub fn prefix(&self) -> Option<Prefix> {
        use n5::format::Format;
        use n5::storage::location::FormatHint;
        Some(match n5::storage::location::split_format(&self.root).0? {
            FormatHint::N5 => Prefix::Exactly(Format::N5),
            FormatHint::Zarr2 => Prefix::Exactly(Format::Zarr2),
            FormatHint::Zarr3 => Prefix::Exactly(Format::Zarr3),
            FormatHint::Hdf5 => Prefix::Exactly(Format::Hdf5),
            FormatHint::Zarr => Prefix::AnyZarr,
        })
    }

    /// The format the location's prefix names (`n5:`, `zarr2:`, `zarr3:`;
    /// `zarr:` is Zarr v3 when the root has zarr.json, else v2, for a
    /// container that is there), if any: `None` for `zarr:` where nothing
    /// is there yet (see [`Location::prefix`]).
    pub fn prefix_format(&self) -> Option<n5::format::Format> {
        match self.prefix()? {
            Prefix::Exactly(f) => Some(f),
            Prefix::AnyZarr => self.existing_format(),
        }
    }

    /// The format the root's name suggests: `.zarr` Zarr v3, `.n5` N5,
    /// `.h5` and `.hdf5` HDF5.
    pub fn suffix_format(&self) -> Option<n5::format::Format> {
        let root = self.root.trim_end_matches('/').to_ascii_lowercase();
        if root.ends_with(".zarr") {
            Some(n5::format::Format::Zarr3)
        } else if root.ends_with(".n5") {
            Some(n5::format::Format::N5)
        } else if root.ends_with(".h5") || root.ends_with(".hdf5") {
            Some(n5::format::Format::Hdf5)
        } else {
            None
        }
    }

    /// Whether the location is a plain HTTP(S) URL (read-only, no listing).
    fn is_web(&self) -> bool {
        n5::storage::Location::parse(&self.root).is_ok_and(|l| matches!(l.backend, Backend::Web(_)))
    }

    /// The root as the library normalises it (backend, bucket, prefix),
    /// to tell whether two locations are one container.
    pub fn normalized_root(&self) -> Option<Backend> {
        n5::storage::Location::parse(&self.root)
            .ok()
            .map(|l| l.backend)
    }

    /// Whether the root is recognisably a container: a directory named
    /// `*.n5` or `*.zarr`, one whose attributes.json has an `"n5"` version,
    /// or a Zarr root (zarr.json, .zgroup or .zarray). Always false for
    /// URLs.
    pub fn root_is_container(&self) -> bool {
        let Some(root) = &self.local else {
            return false;
        };
        let named = root
            .file_name()
            .is_some_and(|n| is_container_name(&n.to_string_lossy()));
        let zarr = ["zarr.json", ".zgroup", ".zarray"]
            .iter()
            .any(|m| root.join(m).is_file());
        root.is_dir() && (named || zarr || has_version(root))
    }

    /// How `key` (a container-relative key such as a block key) is named
    /// in messages: its file-system path for a local container (the file
    /// itself for a container that is one file, whose blocks are all in
    /// it), else its URL as `store` describes it.
    pub fn describe(&self, store: &dyn Store, key: &str) -> String {
        match &self.local {
            Some(root) if root.is_file() => root.display().to_string(),
            Some(root) => {
                let mut p = root.clone();
                for part in key.split('/').filter(|s| !s.is_empty()) {
                    p.push(part);
                }
                p.display().to_string()
            }
            None => store.describe(key),
        }
    }
}

/// The number of components of `names` below `base` that make the highest
/// root with a versioned attributes.json, read through the store of `base`;
/// `None` when no prefix short of the whole has one, or the store fails.
fn find_versioned_root(base: &str, names: &[&str], options: &Options) -> Option<usize> {
    let location = n5::storage::Location::parse(base).ok()?;
    let store = n5::storage::open(&location, &options.storage).ok()?;
    // The whole URL is the root when nothing above it is: no need to read it.
    for k in 0..names.len() {
        let decoded: Vec<String> = names[..k]
            .iter()
            .map(|p| n5::storage::http::percent_decode(p, "location"))
            .collect::<n5::Result<_>>()
            .ok()?;
        let key = n5::path::normalize(&join(&decoded.join("/"), "attributes.json")).ok()?;
        match store.get(&key) {
            Ok(Some(bytes)) => {
                if serde_json::from_slice::<serde_json::Value>(&bytes)
                    .is_ok_and(|v| v.get("n5").is_some())
                {
                    return Some(k);
                }
            }
            Ok(None) => {}
            // The open reports what is wrong with the store.
            Err(_) => return None,
        }
    }
    None
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

/// Whether a name marks a container root: a directory `*.n5` or `*.zarr`,
/// or an HDF5 file `*.h5` or `*.hdf5`, any case.
fn is_container_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (name.len() > 3 && (lower.ends_with(".n5") || lower.ends_with(".h5")))
        || (name.len() > 5 && (lower.ends_with(".zarr") || lower.ends_with(".hdf5")))
}

/// Whether `dir/attributes.json` holds an `"n5"` version.
fn has_version(dir: &Path) -> bool {
    std::fs::read(dir.join("attributes.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v.get("n5").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(arg: &str) -> Location {
        Location::parse(arg, &Global::default()).unwrap()
    }

    #[test]
    fn the_last_n5_component_is_the_root() {
        let l = parse("/data/a.n5/b.n5/raw/s0");
        assert_eq!(l.local, Some(PathBuf::from("/data/a.n5/b.n5")));
        assert_eq!(l.root, "/data/a.n5/b.n5");
        assert_eq!(l.inner, "raw/s0");
        let l = parse("vol.n5/");
        assert_eq!(l.root, "vol.n5");
        assert_eq!(l.inner, "");
        assert_eq!(l.child("x").inner, "x");
        assert_eq!(l.child("x").arg, "vol.n5/x");
        let l = parse("n5:vol.n5/raw");
        assert_eq!(l.root, "n5:vol.n5");
        assert_eq!(l.local, Some(PathBuf::from("vol.n5")));
        assert_eq!(l.inner, "raw");
        let l = parse("file:///data/my%20vol.n5/raw");
        assert_eq!(l.root, "/data/my vol.n5");
        assert_eq!(l.inner, "raw");
    }

    #[test]
    fn a_zarr_component_is_a_root_too() {
        let l = parse("/data/vol.zarr/raw/s0");
        assert_eq!(l.root, "/data/vol.zarr");
        assert_eq!(l.inner, "raw/s0");
        let l = parse("zarr2:s3://bucket/v.ZARR/a");
        assert_eq!(l.root, "zarr2:s3://bucket/v.ZARR");
        assert_eq!(l.inner, "a");
        assert_eq!(l.prefix_format(), Some(n5::format::Format::Zarr2));
        // zarr: where nothing is there yet: some Zarr, no version.
        let l = parse("zarr:/nonexistent/place/newz");
        assert_eq!(l.prefix(), Some(Prefix::AnyZarr));
        assert_eq!(l.prefix_format(), None);
        assert_eq!(parse("/nonexistent/place/newz").prefix(), None);
        assert_eq!(
            parse("out.zarr").suffix_format(),
            Some(n5::format::Format::Zarr3)
        );
        assert_eq!(
            parse("out.n5").suffix_format(),
            Some(n5::format::Format::N5)
        );
        assert_eq!(parse("/tmp/out").suffix_format(), None);
    }

    #[test]
    fn hdf5_files_are_roots() {
        let l = parse("/data/vol.h5/t00000/s00/0/cells");
        assert_eq!(l.root, "/data/vol.h5");
        assert_eq!(l.inner, "t00000/s00/0/cells");
        assert_eq!(l.suffix_format(), Some(n5::format::Format::Hdf5));
        let l = parse("hdf5:/data/VOL.HDF5/raw");
        assert_eq!(l.root, "hdf5:/data/VOL.HDF5");
        assert_eq!(l.prefix_format(), Some(n5::format::Format::Hdf5));
        // An existing file on the way is the root, whatever its name.
        let dir = std::env::temp_dir().join(format!("n5-cli-file-root-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vol.bin"), b"x").unwrap();
        let l = parse(&format!("h5:{}/vol.bin/t00000/cells", dir.display()));
        assert_eq!(l.root, format!("h5:{}/vol.bin", dir.display()));
        assert_eq!(l.inner, "t00000/cells");
        assert_eq!(
            l.describe(&n5::storage::MemoryStore::new(), "vol.bin"),
            format!("{}/vol.bin", dir.display())
        );
        // Behind h5:, the first component that is no directory.
        let l = parse(&format!("h5:{}/new.bin/raw/s0", dir.display()));
        assert_eq!(l.root, format!("h5:{}/new.bin", dir.display()));
        assert_eq!(l.inner, "raw/s0");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_a_marker_the_path_is_the_root() {
        let l = parse("/nonexistent/place/vol");
        assert_eq!(l.root, "/nonexistent/place/vol");
        assert_eq!(l.inner, "");
        assert_eq!(
            l.describe(&n5::storage::MemoryStore::new(), "ds/0/1"),
            "/nonexistent/place/vol/ds/0/1"
        );
    }

    #[test]
    fn urls_split_like_paths() {
        let l = parse("s3://bucket/a/vol.n5/raw/s0");
        assert_eq!(l.root, "s3://bucket/a/vol.n5");
        assert_eq!(l.local, None);
        assert_eq!(l.inner, "raw/s0");
        assert_eq!(l.child("x").arg, "s3://bucket/a/vol.n5/raw/s0/x");
        let l = parse("n5:gs://b/vol.n5/my%20ds/");
        assert_eq!(l.root, "n5:gs://b/vol.n5");
        assert_eq!(l.inner, "my ds");
        let l = parse("https://s3.amazonaws.com/x.n5/raw");
        assert_eq!(l.root, "https://s3.amazonaws.com/x.n5");
        assert_eq!(l.inner, "raw");
        let l = parse("https://example.org:8443/data/v.N5/a/b");
        assert_eq!(l.root, "https://example.org:8443/data/v.N5");
        assert_eq!(l.inner, "a/b");
        assert!(Location::parse("ftp://h/x.n5", &Global::default()).is_err());
        let e = Location::parse("https://user:s3cret@h/x.n5", &Global::default()).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        assert_eq!(e.code, crate::error::EXIT_USAGE);
    }
}
