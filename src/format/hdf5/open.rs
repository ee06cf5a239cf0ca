//! Which locations are HDF5 files (the design's B1), decided without
//! libhdf5, and opening one as a container's hierarchy (with the cargo
//! feature `hdf5`; without it every HDF5 location is refused with a message
//! that names the feature).
//!
//! A location is an HDF5 file when its prefix is `h5:` or `hdf5:`; else
//! when it is an existing regular file with the HDF5 signature at byte 0,
//! 512, 1024, …; else when its name ends in `.h5` or `.hdf5` (any case),
//! or `{"format": "hdf5"}` is given, and no directory is there (existing
//! directories decide by their markers, as containers in a store do).

use std::sync::Arc;

use super::{signature, Hdf5Options};
use crate::error::{Error, ErrorKind, Result};
use crate::format::tree::Tree;
use crate::format::Format;
use crate::storage::location::FormatHint;
use crate::storage::Location;

/// How an HDF5 file is opened (without the feature `hdf5`, only its
/// location is read, for the message).
#[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
pub(crate) struct OpenFile<'a> {
    /// The location, for messages.
    pub location: &'a str,
    /// Whether the file may be written.
    pub writable: bool,
    /// Whether a missing file is created.
    pub create: bool,
    /// Whether blocks all of the fill value are written where no chunk is
    /// allocated yet.
    pub write_empty: bool,
    /// The options of HDF5 containers.
    pub options: &'a Hdf5Options,
}

/// Whether `location` is an HDF5 file, `option` being the format the
/// options name (`{"format": ...}`). Reads the first bytes of an existing
/// regular file at each offset where a signature may be; an error reading
/// them is [`ErrorKind::Io`].
pub(crate) fn chosen(location: &Location, option: Option<Format>) -> Result<bool> {
    match location.format {
        Some(FormatHint::Hdf5) => return Ok(true),
        Some(_) => return Ok(false),
        None => {}
    }
    let asked = option == Some(Format::Hdf5);
    let Some(path) = location.local_path() else {
        // Nothing is read from a remote location to decide: its name does.
        return Ok(super::has_hdf5_suffix(&location.display));
    };
    let named = path
        .file_name()
        .is_some_and(|n| super::has_hdf5_suffix(&n.to_string_lossy()));
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(false),
        Ok(meta) if meta.is_file() => {
            let found = signature::find(path).map_err(|e| Error::io(path.display(), e))?;
            Ok(found.is_some() || named || asked)
        }
        Ok(_) => Ok(named || asked),
        // Nothing there yet: the format a new container gets.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(option.map_or(named, |f| f == Format::Hdf5))
        }
        Err(e) => Err(Error::io(path.display(), e)),
    }
}

/// The error of an HDF5 location on a backend other than the local file
/// system.
pub(crate) fn local_only(location: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "'{location}': HDF5 files are local only (libhdf5 reads and writes files by path; \
             copy the file to a local disk)"
        ),
    )
}

/// Open the HDF5 file `location` names as a container's hierarchy, as
/// `how` says: read-only, for writing an existing file, or creating it
/// (and its missing parent directories) when nothing is there. Without
/// the cargo feature `hdf5`, [`ErrorKind::Unsupported`] naming it.
#[cfg(feature = "hdf5")]
pub(crate) fn open_tree(location: &Location, how: &OpenFile) -> Result<Arc<dyn Tree>> {
    use super::native::File;
    let path = location
        .local_path()
        .ok_or_else(|| local_only(how.location))?;
    let file = if how.create {
        File::create(path)?
    } else {
        File::open(path, how.writable)?
    };
    Ok(Arc::new(super::tree::Hdf5Tree::new(
        file,
        how.write_empty,
        how.options,
    )?))
}

/// Open the HDF5 file `location` names: without the cargo feature `hdf5`,
/// always [`ErrorKind::Unsupported`] naming the feature.
#[cfg(not(feature = "hdf5"))]
pub(crate) fn open_tree(_location: &Location, how: &OpenFile) -> Result<Arc<dyn Tree>> {
    Err(without_feature(how.location))
}

/// The error of an HDF5 location in a library built without the feature.
#[cfg(not(feature = "hdf5"))]
fn without_feature(location: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("'{location}' is an HDF5 file: built without HDF5 support: cargo feature hdf5"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("n5-hdf5-choice-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn chosen_at(text: &str, option: Option<Format>) -> bool {
        chosen(&Location::parse(text).unwrap(), option).unwrap()
    }

    #[test]
    fn prefix_signature_suffix_option_and_directories() {
        let dir = scratch("rules");
        let at = |name: &str| dir.join(name).display().to_string();
        // A file with the signature after a user block of 1024 bytes,
        // whatever its name.
        let mut bytes = vec![0u8; 1024];
        bytes.extend_from_slice(&signature::SIGNATURE);
        bytes.resize(4096, 0);
        std::fs::write(dir.join("vol.bin"), &bytes).unwrap();
        assert!(chosen_at(&at("vol.bin"), None));
        assert!(chosen_at(&at("vol.bin"), Some(Format::N5)));
        // A file without one: by its name or the option only.
        std::fs::write(dir.join("text.txt"), b"hello").unwrap();
        std::fs::write(dir.join("text.h5"), b"hello").unwrap();
        assert!(!chosen_at(&at("text.txt"), None));
        assert!(chosen_at(&at("text.txt"), Some(Format::Hdf5)));
        assert!(chosen_at(&at("text.h5"), None));
        // Prefixes decide.
        assert!(chosen_at(&format!("h5:{}", at("text.txt")), None));
        assert!(chosen_at(&format!("hdf5:{}", at("new")), None));
        assert!(!chosen_at(&format!("n5:{}", at("vol.bin")), None));
        // Nothing there: the option, else the name.
        assert!(chosen_at(&at("new.H5"), None));
        assert!(chosen_at(&at("new.hdf5"), None));
        assert!(!chosen_at(&at("new.h5"), Some(Format::N5)));
        assert!(chosen_at(&at("new"), Some(Format::Hdf5)));
        assert!(!chosen_at(&at("new"), None));
        // Directories decide by their markers, whatever their name.
        std::fs::create_dir_all(dir.join("dir.h5")).unwrap();
        assert!(!chosen_at(&at("dir.h5"), Some(Format::Hdf5)));
        // Remote locations by their name and prefix only.
        assert!(chosen_at("s3://bucket/data.h5", None));
        assert!(chosen_at("h5:https://example.org/data", None));
        assert!(!chosen_at("s3://bucket/data.n5", Some(Format::Hdf5)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
