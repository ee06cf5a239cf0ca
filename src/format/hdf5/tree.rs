//! An HDF5 file as a container's hierarchy (the design's B2 and B4), on the
//! libhdf5 layer (`native`): groups and datasets of the file, listing,
//! creating groups along a path, removing (unlinking) objects, the
//! attributes of groups and datasets as N5's JSON attributes (with the
//! `dimensions`, `blockSize`, `dataType` and `compression` of a dataset
//! synthesized from the dataset, never stored), and creating and opening
//! datasets as [`Hdf5Array`]s. The store it gives the API is the file's
//! directory, in which the file's key is its name.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::array::{ArrayContext, Hdf5Array};
use super::native::dataset::NewDataset;
use super::native::{File, ObjectKind};
use super::Hdf5Options;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::Array;
use crate::format::n5::metadata::DatasetAttributes;
use crate::format::tree::Tree;
use crate::format::Format;
use crate::path::display;
use crate::storage::{FsStore, Store};

/// The hierarchy of an open HDF5 file.
pub(crate) struct Hdf5Tree {
    file: File,
    /// What its arrays share: the file's directory as a store, the file's
    /// key there, the options.
    context: ArrayContext,
}

/// Serialises the read-modify-write of attributes in this process (libhdf5's
/// file locking keeps other processes out of a file open for writing).
static ATTRIBUTES: Mutex<()> = Mutex::new(());

impl fmt::Debug for Hdf5Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hdf5Tree")
            .field("file", &self.file.path())
            .field("writable", &self.file.writable())
            .finish()
    }
}

impl Hdf5Tree {
    /// The hierarchy of `file`; arrays store blocks all of the fill value
    /// when `write_empty` (else an unallocated chunk stays so), and
    /// datasets that are not chunked get their block size from `options`.
    pub(crate) fn new(file: File, write_empty: bool, options: &Hdf5Options) -> Result<Hdf5Tree> {
        let path = file.path().to_path_buf();
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => Path::new(".").to_path_buf(),
        };
        let key = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string);
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
        Ok(Hdf5Tree {
            file,
            context: ArrayContext {
                store,
                key,
                write_empty,
                default_block_size: options.default_block_size.clone(),
            },
        })
    }

    /// The array at `p`, if a dataset of one of the ten numeric types is
    /// there.
    fn array(&self, p: &str) -> Result<Hdf5Array> {
        let dataset = self.file.open_dataset(p)?;
        Hdf5Array::new(self.file.clone(), dataset, self.context.clone())
    }

    /// The synthesized keys of the dataset at `p` (`None` for a dataset of
    /// a type the N5 API cannot open).
    fn synthesized(&self, p: &str) -> Result<Option<Map<String, Value>>> {
        match self.array(p) {
            Ok(array) => Ok(Some(array.attributes().to_json())),
            Err(e) if e.kind() == ErrorKind::Unsupported => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The error of setting or removing the synthesized `key` of the
    /// dataset at `p` to anything but its current value `current`.
    fn fixed_key(&self, p: &str, key: &str, current: &Value) -> Error {
        Error::new(
            ErrorKind::Unsupported,
            format!(
                "HDF5 file '{}', dataset '{}': '{key}' describes the dataset itself ({current}) \
                 and is not stored; it can only be set to that value",
                self.file.path().display(),
                display(p)
            ),
        )
    }
}

impl Tree for Hdf5Tree {
    fn format(&self) -> Format {
        Format::Hdf5
    }

    fn store(&self) -> &dyn Store {
        &*self.context.store
    }

    /// The root's string attribute `n5`, if any (never a reason to refuse
    /// the file, never written).
    fn version(&self) -> Result<Option<String>> {
        self.file.version()
    }

    fn node_exists(&self, p: &str) -> Result<bool> {
        Ok(matches!(
            self.file.kind(p)?,
            ObjectKind::Group | ObjectKind::Dataset
        ))
    }

    /// Any HDF5 dataset, also one of a type the N5 API cannot open.
    fn is_array(&self, p: &str) -> Result<bool> {
        Ok(self.file.kind(p)? == ObjectKind::Dataset)
    }

    fn can_list(&self) -> Result<bool> {
        Ok(true)
    }

    fn children(&self, p: &str) -> Result<Vec<String>> {
        self.file.list(p)
    }

    fn create_group(&self, p: &str) -> Result<()> {
        self.file.create_groups(p)
    }

    /// Unlinks the object (libhdf5 does not give its space back).
    fn remove(&self, p: &str) -> Result<bool> {
        match self.file.unlink(p) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `N5_JSON_ROOT` overlaid by the native attributes, and on a dataset
    /// the synthesized keys; `None` when no group or dataset is at `p`.
    fn read_attributes(&self, p: &str) -> Result<Option<Value>> {
        let kind = self.file.kind(p)?;
        if !matches!(kind, ObjectKind::Group | ObjectKind::Dataset) {
            return Ok(None);
        }
        let mut map = self.file.attributes(p)?;
        if kind == ObjectKind::Dataset {
            if let Some(synthesized) = self.synthesized(p)? {
                map.extend(synthesized);
            }
        }
        Ok(Some(Value::Object(map)))
    }

    /// Runs `f` on the attributes as [`Tree::read_attributes`] gives them,
    /// then stores each top-level key whose value `f` changed or added by
    /// the write mapping and removes each key it removed; a synthesized key
    /// of a dataset may only keep its value. Updates in one process are
    /// serialised; libhdf5's file locking keeps other processes out of a
    /// file open for writing.
    fn update_attributes(
        &self,
        p: &str,
        f: &mut dyn FnMut(&mut Value) -> Result<()>,
    ) -> Result<()> {
        let _guard = ATTRIBUTES.lock().unwrap_or_else(|e| e.into_inner());
        let kind = self.file.kind(p)?;
        if !matches!(kind, ObjectKind::Group | ObjectKind::Dataset) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "HDF5 file '{}': no group or dataset at '{}'",
                    self.file.path().display(),
                    display(p)
                ),
            ));
        }
        let stored = self.file.attributes(p)?;
        let synthesized = if kind == ObjectKind::Dataset {
            self.synthesized(p)?.unwrap_or_default()
        } else {
            Map::new()
        };
        let mut doc = stored.clone();
        doc.extend(synthesized.clone());
        let mut doc = Value::Object(doc);
        f(&mut doc)?;
        let after = match doc {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        for (key, current) in &synthesized {
            if after.get(key) != Some(current) {
                return Err(self.fixed_key(p, key, current));
            }
        }
        let changed: Map<String, Value> = after
            .iter()
            .filter(|(k, v)| !synthesized.contains_key(*k) && stored.get(*k) != Some(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !changed.is_empty() {
            self.file.set_attributes(p, &changed)?;
        }
        for key in stored.keys().filter(|k| !after.contains_key(*k)) {
            self.file.remove_attribute(p, key)?;
        }
        Ok(())
    }

    /// A chunked dataset: shape the dimensions reversed, chunks the block
    /// size reversed and clamped to [1, dimension], raw or gzip (shuffle and
    /// deflate).
    fn create_array(&self, p: &str, attributes: DatasetAttributes) -> Result<Arc<dyn Array>> {
        super::check_compression(&attributes.compression)?;
        crate::format::tree::check_n5_array(&attributes)?;
        let shape: Vec<u64> = attributes.dimensions.iter().rev().copied().collect();
        let chunk: Vec<u64> = attributes
            .block_size
            .iter()
            .rev()
            .map(|&b| b as u64)
            .collect();
        let dataset = self.file.create_dataset(
            p,
            &NewDataset {
                shape: &shape,
                chunk: &chunk,
                data_type: attributes.data_type,
                compression: &attributes.compression,
            },
        )?;
        Ok(Arc::new(Hdf5Array::new(
            self.file.clone(),
            dataset,
            self.context.clone(),
        )?))
    }

    /// The N5 dataset document (`dimensions`, `blockSize`, `dataType`,
    /// `compression`; `codecs`, N5's sharding, is refused).
    fn create_array_json(&self, p: &str, document: &Value) -> Result<Arc<dyn Array>> {
        let attributes = DatasetAttributes::from_json(document)?;
        self.create_array(p, attributes)
    }

    /// Any dataset of the ten numeric types; others are
    /// [`ErrorKind::Unsupported`] naming the HDF5 type.
    fn open_array(&self, p: &str) -> Result<Arc<dyn Array>> {
        Ok(Arc::new(self.array(p)?))
    }

    /// [`ErrorKind::Unsupported`] naming the HDF5 type when `key` is a
    /// native attribute of a type JSON has no form of (compound,
    /// reference, opaque, other enums, variable-length sequences, array
    /// types).
    fn check_left_out(&self, p: &str, key: &str) -> Result<()> {
        match self.file.attribute(p, key) {
            Err(e) if e.kind() == ErrorKind::Unsupported => Err(e),
            _ => Ok(()),
        }
    }

    /// None: libhdf5 writes in place, leaving no temporary files.
    fn remove_stale_temporaries(&self, _older_than: std::time::Duration) -> Result<(u64, u64)> {
        Ok((0, 0))
    }
}
