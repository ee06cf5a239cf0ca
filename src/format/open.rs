//! Opening a container's hierarchy at a location, whatever its format: an
//! HDF5 file, which libhdf5 opens by its path, or a container in a store
//! (N5, Zarr v2, Zarr v3), which the caller's store holds ([`open_tree`],
//! [`open_in_store`]). The API names no format: it hands this file the
//! location and how to open it, and gets a [`Tree`].

use std::sync::Arc;

use super::tree::{open_store_tree, OpenStore, Tree};
use super::{hdf5, Format, FormatOptions};
use crate::error::Result;
use crate::storage::location::FormatHint;
use crate::storage::{Location, Store};

/// How a container is opened.
pub(crate) struct OpenTree<'a> {
    /// The location, for messages.
    pub location: &'a str,
    /// Whether the container may be written.
    pub writable: bool,
    /// Whether a missing container is created.
    pub create: bool,
    /// The format a new container gets (`"format"` of the options); a
    /// location's prefix and an existing container decide first.
    pub new_format: Option<Format>,
    /// Whether arrays store blocks all of the fill value.
    pub write_empty: bool,
    /// The options of the formats.
    pub options: &'a FormatOptions,
}

/// Open the container at `location`: an HDF5 file (see `hdf5::open` for
/// which locations are), else the container in the store `store` opens
/// (called only then).
pub(crate) fn open_tree(
    location: &Location,
    how: &OpenTree,
    store: impl FnOnce() -> Result<Arc<dyn Store>>,
) -> Result<Arc<dyn Tree>> {
    if hdf5::open::chosen(location, how.new_format)? {
        let file = hdf5::open::OpenFile {
            location: how.location,
            writable: how.writable,
            create: how.create,
            write_empty: how.write_empty,
            options: &how.options.hdf5,
        };
        return hdf5::open::open_tree(location, &file);
    }
    open_in_store(store()?, location.format, how)
}

/// Open the container held by `store`, whose location's prefix is `hint`
/// (N5, Zarr v2 or Zarr v3; a store never holds an HDF5 container, which
/// is a local file).
pub(crate) fn open_in_store(
    store: Arc<dyn Store>,
    hint: Option<FormatHint>,
    how: &OpenTree,
) -> Result<Arc<dyn Tree>> {
    if hint == Some(FormatHint::Hdf5) {
        return Err(hdf5::open::local_only(how.location));
    }
    let tree = open_store_tree(
        store,
        OpenStore {
            location: how.location,
            writable: how.writable,
            create: how.create,
            hint,
            new_format: how.new_format,
            write_empty: how.write_empty,
        },
    )?;
    Ok(Arc::new(tree))
}
