//! Datasets: creating and opening them in a container, and an open array
//! of the format layer (`format::array`), replaced as a whole when it is
//! resized, with block-level I/O by grid position (numeric blocks, and
//! N5's varlength, string and object blocks where the format has them).
//! The container's mode, grid positions, block shapes, buffer sizes and
//! data types are checked here before the array is asked; what only a
//! format knows (a varlength block's bytes) the array checks.

use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::container::Container;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::Array;
use crate::format::links::Place;
use crate::format::n5::block::{BlockHeader, DataBlock};
use crate::format::n5::metadata::DatasetAttributes;
use crate::format::Format;
use crate::geometry::check_buffer;
use crate::path::{self, display};
use crate::storage::Store;

impl Container {
    /// Create a dataset at `path` (and its parent groups). User attributes
    /// already on a group at `path` are kept; a dataset already there is an
    /// [`ErrorKind::AlreadyExists`] error.
    /// Through a link of this container the dataset is created below the
    /// link's target; a link at `path` is [`ErrorKind::AlreadyExists`].
    pub fn create_dataset(&self, path: &str, attributes: DatasetAttributes) -> Result<Dataset> {
        self.check_writable()?;
        let (c, p) = self.place_for_new(path)?;
        let array = c.tree().create_array(&p, attributes)?;
        Ok(Dataset::new(c, p, array))
    }

    /// The metadata document [`Container::create_dataset`] writes for
    /// `attributes` in a container of `format`: the N5 dataset members, a
    /// Zarr v2 .zarray, or a Zarr v3 zarr.json array document (fill value
    /// 0, no sharding, the N5 compression mapped to the format's codec;
    /// shapes in the format's own order). A compression with no codec in
    /// the format is an [`ErrorKind::Unsupported`] error naming it, so a
    /// caller can check a whole plan before writing anything, and build
    /// on the document (sharding, fill value) for
    /// [`Container::create_dataset_json`].
    pub fn dataset_document(format: Format, attributes: &DatasetAttributes) -> Result<Value> {
        crate::format::tree::dataset_document(format, attributes)
    }

    /// `document`, a Zarr v3 array document from
    /// [`Container::dataset_document`] (chunks of its block size), made
    /// `sharding_indexed` with shards of `shard` (N5 order): the chunks
    /// become inner chunks with the same codecs, the shard index `bytes` +
    /// `crc32c` at the shard's end.
    pub fn shard_document(document: &mut Value, block_size: &[u64], shard: &[u64]) {
        crate::format::tree::shard_document(document, block_size, shard)
    }

    /// Create a dataset at `path` (and its parent groups) from the format's
    /// own metadata document: a zarr.json array document for Zarr v3
    /// (`zarr_format` and `node_type` may be left out; sharding and every
    /// codec of the format allowed), a .zarray document for Zarr v2, the
    /// dataset attributes (`dimensions`, `blockSize`, `dataType`,
    /// `compression`) for N5. Shapes are in the document's own order. The
    /// document is checked whole before anything is written; user
    /// attributes of a group already at `path` are kept.
    /// Links are treated as in [`Container::create_dataset`].
    pub fn create_dataset_json(&self, path: &str, document: &Value) -> Result<Dataset> {
        self.check_writable()?;
        let (c, p) = self.place_for_new(path)?;
        let array = c.tree().create_array_json(&p, document)?;
        Ok(Dataset::new(c, p, array))
    }

    /// Open the dataset at `path`, reading its metadata once. Through links
    /// (where they are followed), the link's target: the dataset belongs to
    /// the target's container (its [`Dataset::path`] is the target's), which
    /// for an external link is read-only and kept alive by the dataset.
    pub fn open_dataset(&self, path: &str) -> Result<Dataset> {
        let p = path::normalize(path)?;
        let missing = match self.tree().open_array(&p) {
            Ok(array) => return Ok(Dataset::new(self.clone(), p, array)),
            Err(e) if e.kind() == ErrorKind::NotFound && self.follows_links() => e,
            Err(e) => return Err(e),
        };
        match self.locate(&p)? {
            Place::Found(found) if !found.container.same(self) || found.path != p => {
                let array = found.container.tree().open_array(&found.path)?;
                Ok(Dataset::new(found.container, found.path, array))
            }
            _ => Err(missing),
        }
    }
}

/// An open dataset. Cheap to clone; keeps its container alive.
/// `Send + Sync`: every method may be called from any thread.
#[derive(Clone, Debug)]
pub struct Dataset {
    container: Container,
    path: String,
    /// The array as it is now, replaced as a whole when it is resized.
    array: Arc<RwLock<Arc<dyn Array>>>,
}

impl Dataset {
    /// The array `array` at `path` of `container`.
    pub(crate) fn new(container: Container, path: String, array: Arc<dyn Array>) -> Self {
        Dataset {
            container,
            path,
            array: Arc::new(RwLock::new(array)),
        }
    }

    /// A snapshot of the array.
    pub(crate) fn array(&self) -> Arc<dyn Array> {
        match self.array.read() {
            Ok(a) => a.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The shard shape (N5 order): the chunk grid's shape of a sharded Zarr
    /// array, else the block size.
    pub fn shard_shape(&self) -> Vec<u64> {
        self.array().shard_shape()
    }

    /// The N5 compression nearest the dataset's codecs: its own for N5 and
    /// HDF5, the chunk compressor of a Zarr array (of its innermost chunks
    /// when sharded), raw when it has none.
    pub fn nearest_compression(&self) -> crate::codec::Compression {
        match self.metadata() {
            Ok(doc) => crate::format::nearest::compression_of(self.container().format(), &doc),
            Err(_) => self.attributes().compression.clone(),
        }
    }

    /// One element of the value that blocks which are not stored read as,
    /// in native byte order: a Zarr array's `fill_value`, zeros for N5.
    pub fn fill_value(&self) -> Vec<u8> {
        self.array().fill().to_vec()
    }

    /// The dataset's own metadata document: a Zarr array's zarr.json or
    /// .zarray as it was read when the dataset was opened, or an N5
    /// dataset's attributes.json as stored now (user attributes included).
    pub fn metadata(&self) -> Result<Value> {
        self.array().metadata()
    }

    /// The container this dataset belongs to.
    pub fn container(&self) -> &Container {
        &self.container
    }

    /// The dataset's normalised path in its container (`""` for the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// A snapshot of the dataset's metadata.
    pub fn attributes(&self) -> Arc<DatasetAttributes> {
        self.array().attributes()
    }

    /// The dataset's data type.
    pub fn data_type(&self) -> DataType {
        self.attributes().data_type.clone()
    }

    /// Change the dataset's dimensions (rank unchanged), keeping every stored
    /// block. Blocks outside the new extent stay stored and reappear if the
    /// dataset grows again, as with the other N5 implementations.
    pub fn set_dimensions(&self, dimensions: &[u64]) -> Result<()> {
        self.container.check_writable()?;
        // Held across the resize: resizes through one handle go one at a
        // time, so the array kept is the one stored last.
        let mut current = self.array.write().unwrap_or_else(|p| p.into_inner());
        current
            .attributes()
            .check_rank(dimensions.len(), "dimensions")?;
        *current = current.resize(dimensions)?;
        Ok(())
    }

    /// Name the dimensions (N5 order, one name each) in the array's own
    /// metadata where the format has a place for them: Zarr v3's
    /// `dimension_names`. Elsewhere names are user attributes (N5 `axes`,
    /// Zarr v2 `_ARRAY_DIMENSIONS`) and this changes nothing.
    pub fn set_dimension_names(&self, names: &[String]) -> Result<()> {
        self.container.check_writable()?;
        let mut current = self.array.write().unwrap_or_else(|p| p.into_inner());
        current.attributes().check_rank(names.len(), "names")?;
        if let Some(renamed) = current.set_dimension_names(names)? {
            *current = renamed;
        }
        Ok(())
    }

    /// The storage key of the block at `grid_pos`.
    pub fn block_key(&self, grid_pos: &[u64]) -> String {
        self.array().block_key(grid_pos)
    }

    /// The nominal shape of the block at `grid_pos` (`blockSize` clipped at
    /// the dataset's end).
    pub fn block_shape(&self, grid_pos: &[u64]) -> Result<Vec<u64>> {
        self.attributes().block_shape(grid_pos)
    }

    /// Whether the block at `grid_pos` is stored.
    pub fn block_exists(&self, grid_pos: &[u64]) -> Result<bool> {
        let array = self.array();
        array.attributes().check_grid_pos(grid_pos)?;
        array.block_exists(grid_pos)
    }

    /// Read the block at `grid_pos` as stored: its header and its decoded
    /// payload (numeric elements in native byte order). `None` when the
    /// block is not stored.
    pub fn read_block(&self, grid_pos: &[u64]) -> Result<Option<DataBlock>> {
        let array = self.array();
        array.attributes().check_grid_pos(grid_pos)?;
        array.read_block(grid_pos)
    }

    /// The header of the block stored at `grid_pos` (mode, shape and element
    /// count as written), without decompressing its payload; `None` when
    /// the block is not stored.
    pub fn block_header(&self, grid_pos: &[u64]) -> Result<Option<BlockHeader>> {
        let array = self.array();
        array.attributes().check_grid_pos(grid_pos)?;
        array.block_header(grid_pos)
    }

    /// Read the numeric block at `grid_pos` into `out`, which holds the
    /// block's nominal shape ([`Dataset::block_shape`]) in native byte order.
    /// A stored block larger than nominal (padded end blocks) is clipped, a
    /// smaller one is zero-extended, a missing one gives the fill value and
    /// `false`.
    pub fn read_block_into(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<bool> {
        let array = self.array();
        let attrs = array.attributes();
        self.check_layout(&attrs)?;
        let shape = attrs.block_shape(grid_pos)?;
        check_buffer(&shape, attrs.data_type.size(), out.len())?;
        array.read_block_into(grid_pos, out)
    }

    /// Check that the dataset's elements have a binary layout (every type
    /// but strings, bytes and objects of variable length): N5's `string`
    /// and `object` datasets have their own block functions
    /// ([`ErrorKind::DtypeMismatch`]); variable-length Zarr arrays are read
    /// and written as strings, bytes or JSON ([`ErrorKind::Unsupported`]).
    pub(crate) fn check_layout(&self, attrs: &DatasetAttributes) -> Result<()> {
        if attrs.data_type.has_layout() {
            return Ok(());
        }
        let path = display(&self.path);
        let t = &attrs.data_type;
        if self.array().own_blocks("").is_ok() {
            return Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!(
                    "dataset '{path}' holds {t} data, which is read and written by its own block functions"
                ),
            ));
        }
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "dataset '{path}' holds {t} elements of variable length, which have no binary layout: use n5_region_read_strings/n5_region_write_strings, n5_region_read_bytes/n5_region_write_bytes or n5_region_read_json"
            ),
        ))
    }

    fn check_write(
        &self,
        attrs: &DatasetAttributes,
        grid_pos: &[u64],
        shape: &[u64],
    ) -> Result<()> {
        self.container.check_writable()?;
        attrs.check_grid_pos(grid_pos)?;
        attrs.check_rank(shape.len(), "block shape")?;
        for (d, (&s, &b)) in shape.iter().zip(&attrs.block_size).enumerate() {
            if s == 0 || s > b as u64 {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "block shape {shape:?} is not within 1..=blockSize {:?} in dimension {d}",
                        attrs.block_size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Write a numeric block of `shape` at `grid_pos` from `data` (native
    /// byte order, `prod(shape)` elements). Normal writers pass
    /// [`Dataset::block_shape`]; any shape within `1..=blockSize` is stored
    /// as given in N5 (Zarr stores the chunk whole, the fill value where
    /// `shape` does not reach). The block is replaced atomically. With
    /// [`crate::Options::write_empty_blocks`] off, a block all of the fill
    /// value is not stored, and a stored one at `grid_pos` is deleted.
    pub fn write_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        let array = self.array();
        let attrs = array.attributes();
        self.check_layout(&attrs)?;
        self.check_write(&attrs, grid_pos, shape)?;
        check_buffer(shape, attrs.data_type.size(), data.len())?;
        array.check_write()?;
        array.write_block(grid_pos, shape, data)
    }

    /// Write a varlength (mode 1) block: a header `shape` with
    /// `data.len() / element size` elements, any number. When that number
    /// equals `prod(shape)` the block is written in mode 0, as Java does.
    /// N5 only.
    pub fn write_varlength_block(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let array = self.array();
        array.own_blocks("varlength blocks")?;
        let attrs = array.attributes();
        self.check_layout(&attrs)?;
        self.check_write(&attrs, grid_pos, shape)?;
        array.write_varlength_block(grid_pos, shape, data)
    }

    /// Read the strings of the `string` block at `grid_pos` (`None` when not
    /// stored) with the header's shape.
    pub fn read_string_block(&self, grid_pos: &[u64]) -> Result<Option<(Vec<u32>, Vec<String>)>> {
        let array = self.array();
        self.expect_type(DataType::String)?;
        array.attributes().check_grid_pos(grid_pos)?;
        array.read_string_block(grid_pos)
    }

    /// Write the `string` block at `grid_pos` with header `shape`: each
    /// string as UTF-8 followed by NUL, always in mode 1, as Java does.
    pub fn write_string_block<S: AsRef<str>>(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        strings: &[S],
    ) -> Result<()> {
        let array = self.array();
        self.expect_type(DataType::String)?;
        self.check_write(&array.attributes(), grid_pos, shape)?;
        let strings: Vec<&str> = strings.iter().map(AsRef::as_ref).collect();
        array.write_string_block(grid_pos, shape, &strings)
    }

    /// Read the bytes of the `object` block at `grid_pos` (`None` when not stored).
    pub fn read_object_block(&self, grid_pos: &[u64]) -> Result<Option<Vec<u8>>> {
        self.expect_type(DataType::Object)?;
        Ok(self.read_block(grid_pos)?.map(|b| b.data))
    }

    /// Write the `object` block at `grid_pos`: opaque bytes in a mode-2 block.
    pub fn write_object_block(&self, grid_pos: &[u64], bytes: &[u8]) -> Result<()> {
        let array = self.array();
        self.expect_type(DataType::Object)?;
        self.container.check_writable()?;
        array.attributes().check_grid_pos(grid_pos)?;
        array.write_object_block(grid_pos, bytes)
    }

    /// Check that the dataset holds `t`; formats without such blocks say so
    /// first.
    fn expect_type(&self, t: DataType) -> Result<()> {
        let array = self.array();
        array.own_blocks(&format!("{t} blocks"))?;
        let actual = array.attributes().data_type.clone();
        if actual != t {
            return Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!("dataset '{}' holds {actual}, not {t}", display(&self.path)),
            ));
        }
        Ok(())
    }

    /// Delete the block at `grid_pos`; returns whether it was stored.
    pub fn delete_block(&self, grid_pos: &[u64]) -> Result<bool> {
        self.container.check_writable()?;
        let array = self.array();
        array.attributes().check_grid_pos(grid_pos)?;
        array.check_write()?;
        array.delete_block(grid_pos)
    }

    /// The grid positions of every stored block, in lexicographic order of
    /// their keys' numbers (dimension 0 first). Blocks outside the current
    /// grid (left by a shrinking resize) are included. Object stores answer
    /// from a flat listing of the dataset's keys (a thousand per request);
    /// in a sharded Zarr array, each stored shard's index is read for the
    /// inner chunks it holds.
    pub fn list_blocks(&self) -> Result<Vec<Vec<u64>>> {
        self.array().list_blocks()
    }

    /// Whether this dataset and `other` store the same data as the same
    /// bytes, unit for unit (shards of a sharded Zarr array, else blocks):
    /// one format, and equal metadata but for what only names or describes
    /// the array (user attributes, dimension names, the spelling of chunk
    /// keys). Their stored units can then be copied with
    /// [`Dataset::read_stored_unit`] and [`Dataset::write_stored_unit`]
    /// instead of decoded and encoded again. Always false for HDF5.
    pub fn same_encoding(&self, other: &Dataset) -> bool {
        let (a, b) = (self.array(), other.array());
        a.format() == b.format()
            && a.encoding()
                .is_some_and(|e| b.encoding().is_some_and(|f| e == f))
    }

    /// Reads the stored bytes of the unit at `unit_pos` (a position of the
    /// shard grid, [`Dataset::shard_shape`]: a whole shard of a sharded
    /// Zarr array, else a block) into `buf`, replacing what it held, as
    /// they are stored (not decoded); `false` when the unit is not stored.
    /// HDF5 datasets are [`ErrorKind::Unsupported`].
    pub fn read_stored_unit(&self, unit_pos: &[u64], buf: &mut Vec<u8>) -> Result<bool> {
        let array = self.array();
        let (store, key) = self.unit_object(&*array, unit_pos)?;
        store.get_into(&key, buf)
    }

    /// Stores `bytes`, the stored bytes of a unit of a dataset of the
    /// [`Dataset::same_encoding`] (from [`Dataset::read_stored_unit`]), as
    /// the unit at `unit_pos`, replacing it atomically; `None` deletes it.
    /// The bytes are stored as given: readers decode (and check) them.
    /// HDF5 datasets are [`ErrorKind::Unsupported`].
    pub fn write_stored_unit(&self, unit_pos: &[u64], bytes: Option<&[u8]>) -> Result<()> {
        self.container.check_writable()?;
        let array = self.array();
        array.check_write()?;
        let (store, key) = self.unit_object(&*array, unit_pos)?;
        match bytes {
            Some(b) => store.put(&key, &[b]),
            None => store.delete(&key).map(|_| ()),
        }
    }

    /// Copies the unit at `unit_pos` of `from`, a dataset of the
    /// [`Dataset::same_encoding`], to the unit at `unit_pos` here, as it is
    /// stored, replacing it atomically (deleting it when `from` does not
    /// store the unit); whether `from` stores it. Between datasets on the
    /// local file system the kernel copies the file; otherwise the bytes
    /// pass through `buf`. Encodings that differ are
    /// [`ErrorKind::InvalidArgument`]; HDF5 datasets are
    /// [`ErrorKind::Unsupported`].
    pub fn copy_stored_unit(
        &self,
        unit_pos: &[u64],
        from: &Dataset,
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        self.container.check_writable()?;
        let array = self.array();
        array.check_write()?;
        let (store, key) = self.unit_object(&*array, unit_pos)?;
        let from_array = from.array();
        let (from_store, from_key) = from.unit_object(&*from_array, unit_pos)?;
        if !self.same_encoding(from) {
            return Err(Error::invalid_argument(format!(
                "dataset '{}' and dataset '{}' do not store their units alike: their stored units cannot be copied",
                display(&from.path),
                display(&self.path)
            )));
        }
        store.put_copy(&key, from_store, &from_key, buf)
    }

    /// The store and key of the unit at `unit_pos`, checked against the
    /// shard grid.
    fn unit_object<'a>(
        &self,
        array: &'a dyn Array,
        unit_pos: &[u64],
    ) -> Result<(&'a dyn Store, String)> {
        let attrs = array.attributes();
        attrs.check_rank(unit_pos.len(), "unit position")?;
        let unit = array.shard_shape();
        for (d, &p) in unit_pos.iter().enumerate() {
            let units = attrs.dimensions[d].div_ceil(unit[d].max(1));
            if p >= units {
                return Err(Error::new(
                    ErrorKind::OutOfBounds,
                    format!(
                        "unit {unit_pos:?} of dataset '{}' is outside its grid of {} units in dimension {d}",
                        display(&self.path),
                        units
                    ),
                ));
            }
        }
        array.unit_object(unit_pos).ok_or_else(|| {
            Error::new(
                ErrorKind::Unsupported,
                format!(
                    "dataset '{}' ({}) does not store its units as objects of their own",
                    display(&self.path),
                    array.format().name()
                ),
            )
        })
    }
}
