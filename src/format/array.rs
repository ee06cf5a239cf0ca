//! The one array interface of the format layer: what the API (`dataset`
//! and `region`) asks of an array, whatever its format. An [`Array`] gives
//! its metadata in N5 order (dimension 0 fastest; the block is the unit of
//! block I/O: an N5 block, a Zarr chunk, or the inner chunk of a shard),
//! its fill value, resizing, block I/O by grid position, and through
//! [`RegionIo`] the chunk operations the region code runs on many blocks
//! at once. N5 (`n5::array`) and both Zarr formats (`zarr`) implement it;
//! the code above this layer names no format.
//!
//! This file also gives that code the vocabulary of shard indexes it needs
//! ([`Entry`], [`Run`], [`coalesce`], the kept indexes of
//! [`IndexCache`]), whichever format's shards they describe.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::Format;
use crate::error::{Error, ErrorKind, Result};
pub(crate) use crate::format::elements::Elements;
use crate::format::n5::block::{BlockHeader, DataBlock};
use crate::format::n5::metadata::DatasetAttributes;
use crate::storage::{ByteRange, Store};

pub(crate) use super::zarr3::index_cache::{applies as keeps_indexes, replaced, IndexCache};
pub(crate) use super::zarr3::index_cache::{IndexFrom, Known};
pub(crate) use super::zarr3::shard::{
    coalesce, Entry, Run, COALESCE_GAP, COALESCE_MAX, COALESCE_MAX_REMOTE,
};

/// An open array of any format. Implementations hold the store and the
/// array's path; their metadata is fixed (a resize gives a new array).
/// Callers check grid positions, block shapes, buffer sizes, the data
/// type and the container's mode before they call a block method.
pub(crate) trait Array: Send + Sync + fmt::Debug {
    /// The container format the array belongs to (for messages).
    fn format(&self) -> Format;

    /// The metadata the API works with, N5 order.
    fn attributes(&self) -> Arc<DatasetAttributes>;

    /// The array's own metadata document (`n5_dataset_metadata`).
    fn metadata(&self) -> Result<Value>;

    /// One element of the value that blocks which are not stored read as,
    /// in native byte order.
    fn fill(&self) -> &[u8];

    /// How the array's elements are stored (`n5_dataset_dtype_json`): the
    /// format's own spelling of the type, the stored byte order, and the
    /// codec of variable-length elements. By default an N5 dataset's:
    /// the `dataType` name, big-endian.
    fn stored_type(&self) -> StoredType {
        let t = self.attributes().data_type.clone();
        StoredType {
            stored: Value::from(t.name()),
            byte_order: if t.swap_width().is_some_and(|w| w > 1) {
                "big"
            } else {
                "none"
            },
            object_codec: None,
        }
    }

    /// Whether data can be written to the array: an error saying why not
    /// when its metadata asks for a layout its codecs cannot give.
    fn check_write(&self) -> Result<()> {
        Ok(())
    }

    /// The shape of the objects blocks are stored in (N5 order): the shard
    /// shape of a sharded array, else the block size.
    fn shard_shape(&self) -> Vec<u64>;

    /// Change the dimensions (rank unchanged) in the stored metadata,
    /// atomically, and give the array as it now is.
    fn resize(&self, dimensions: &[u64]) -> Result<Arc<dyn Array>>;

    /// Name the dimensions (N5 order) in the array's own metadata where the
    /// format has a place for them (Zarr v3 `dimension_names`), atomically,
    /// and give the array as it now is; `None` where names are user
    /// attributes (N5 `axes`, Zarr v2 `_ARRAY_DIMENSIONS`) or have no place.
    fn set_dimension_names(&self, _names: &[String]) -> Result<Option<Arc<dyn Array>>> {
        Ok(None)
    }

    /// The storage key of the object that holds the block at `grid_pos`.
    fn block_key(&self, grid_pos: &[u64]) -> String;

    /// Whether the block at `grid_pos` is stored.
    fn block_exists(&self, grid_pos: &[u64]) -> Result<bool>;

    /// The block at `grid_pos` as stored (header and native-order payload),
    /// `None` when not stored.
    fn read_block(&self, grid_pos: &[u64]) -> Result<Option<DataBlock>>;

    /// The header of the block stored at `grid_pos` without its payload,
    /// `None` when not stored.
    fn block_header(&self, grid_pos: &[u64]) -> Result<Option<BlockHeader>>;

    /// Read the numeric block at `grid_pos` into `out` (its nominal shape,
    /// native order); the fill value and `false` when it is not stored.
    fn read_block_into(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<bool>;

    /// Write the numeric block at `grid_pos` of `shape` (within the block
    /// size) from `data` (native order), replacing it atomically.
    fn write_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()>;

    /// Delete the block at `grid_pos`; whether it was stored.
    fn delete_block(&self, grid_pos: &[u64]) -> Result<bool>;

    /// The grid positions of every stored block, sorted.
    fn list_blocks(&self) -> Result<Vec<Vec<u64>>>;

    /// The store and key of the object that holds the unit at `unit_pos`
    /// (a position of the shard grid: a shard of a sharded array, else a
    /// block) and nothing else, so that stored units can be copied as they
    /// are between arrays of the same [`Array::encoding`]; `None` where
    /// units are not objects of their own (HDF5 files).
    fn unit_object(&self, _unit_pos: &[u64]) -> Option<(&dyn Store, String)> {
        None
    }

    /// What decides the stored bytes of every unit: the array's metadata
    /// without what only names or describes it (user attributes, dimension
    /// names, the spelling of chunk keys). Two arrays of one format with
    /// equal encodings store the same data as the same bytes. `None` where
    /// units are not copied as stored bytes (see [`Array::unit_object`]).
    fn encoding(&self) -> Option<Value> {
        None
    }

    /// Whether the format has `what` (N5's varlength, string and object
    /// blocks): an [`ErrorKind::Unsupported`] error naming the format if
    /// not.
    fn own_blocks(&self, what: &str) -> Result<()> {
        Err(unsupported_on(self.format(), what))
    }

    /// Write a block of `shape` whose header says it holds the elements of
    /// `data`, however many (N5's varlength blocks).
    fn write_varlength_block(&self, _grid_pos: &[u64], _shape: &[u64], _data: &[u8]) -> Result<()> {
        Err(unsupported_on(self.format(), "varlength blocks"))
    }

    /// The strings of the `string` block at `grid_pos` with the shape its
    /// header gives, `None` when not stored (N5's string blocks).
    fn read_string_block(&self, _grid_pos: &[u64]) -> Result<Option<(Vec<u32>, Vec<String>)>> {
        Err(unsupported_on(self.format(), "string blocks"))
    }

    /// Write the `string` block at `grid_pos` with header `shape` (N5's
    /// string blocks).
    fn write_string_block(
        &self,
        _grid_pos: &[u64],
        _shape: &[u64],
        _strings: &[&str],
    ) -> Result<()> {
        Err(unsupported_on(self.format(), "string blocks"))
    }

    /// Write the `object` block at `grid_pos`: opaque bytes (N5's object
    /// blocks).
    fn write_object_block(&self, _grid_pos: &[u64], _bytes: &[u8]) -> Result<()> {
        Err(unsupported_on(self.format(), "object blocks"))
    }

    /// The elements of the block at `grid_pos` of an array of
    /// variable-length elements (its nominal shape, N5 order), `None` when
    /// not stored.
    fn read_elements(&self, _grid_pos: &[u64]) -> Result<Option<Elements>> {
        Err(unsupported_on(self.format(), "variable-length elements"))
    }

    /// The fill value of an array of legacy objects (pickle, json2) as the
    /// JSON of its elements: what a block that is not stored holds.
    fn fill_json(&self) -> Result<Value> {
        Ok(Value::Null)
    }

    /// Replace the block at `grid_pos` of an array of variable-length
    /// elements with `elements` (as many as the nominal block holds), or
    /// delete it when they are all the fill value and empty chunks are not
    /// written.
    fn write_elements(&self, _grid_pos: &[u64], _elements: &Elements) -> Result<()> {
        Err(unsupported_on(self.format(), "variable-length elements"))
    }

    /// How region reads reach the array's blocks.
    fn region(&self) -> RegionIo<'_>;

    /// How region writes reach the array's blocks (those of reads unless
    /// the format writes another way).
    fn region_writes(&self) -> RegionIo<'_> {
        self.region()
    }
}

/// How an array's elements are stored ([`Array::stored_type`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StoredType {
    /// The format's spelling: the Zarr v3 `data_type` value, the Zarr v2
    /// `dtype` value, or the N5 `dataType`.
    pub stored: Value,
    /// `"little"`, `"big"`, or `"none"` for types without a byte order.
    pub byte_order: &'static str,
    /// The codec of variable-length elements (`vlen-utf8`, `vlen-bytes`,
    /// `pickle`, `json2`).
    pub object_codec: Option<String>,
}

/// How the region code reads and writes an array's blocks.
pub(crate) enum RegionIo<'a> {
    /// Every block is an object of its own (or a byte range of one),
    /// fetched and written by key.
    Objects(&'a dyn ObjectBlocks),
    /// Blocks are the inner chunks of shards, found through each shard's
    /// index and written a shard at a time.
    Shards(&'a dyn ShardedBlocks),
    /// The array reads and writes whole regions itself (a library that
    /// owns the file does the I/O: HDF5's, built with the feature `hdf5`).
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    Whole(&'a dyn WholeRegions),
}

/// Regions an array reads and writes itself ([`RegionIo::Whole`]); offsets
/// and shapes N5 order, buffers native order, dimension 0 fastest, already
/// checked against the array.
pub(crate) trait WholeRegions: Sync {
    /// Read the region at `offset` of `shape` into `out`.
    fn read_region(&self, offset: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()>;

    /// Write `data` to the region at `offset` of `shape`.
    fn write_region(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<()>;
}

/// The byte order of elements in a buffer, relative to this machine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// This machine's byte order.
    Native,
    /// The other byte order: converted as the elements are copied.
    Swapped,
}

impl Order {
    /// The order of elements stored big-endian.
    pub(crate) const fn big_endian() -> Order {
        if cfg!(target_endian = "big") {
            Order::Native
        } else {
            Order::Swapped
        }
    }
}

/// Blocks stored one object each (N5 blocks, unsharded Zarr chunks).
pub(crate) trait ObjectBlocks: Sync {
    /// The store the objects are in.
    fn store(&self) -> &dyn Store;

    /// The key of the object of the block at `grid_pos`.
    fn key(&self, grid_pos: &[u64]) -> String;

    /// Where the stored bytes of the block at `grid_pos` are: the key of
    /// their object and, where they are a part of it, their byte range;
    /// `None` when the block is known not to be stored. By default the
    /// whole object at [`ObjectBlocks::key`].
    fn source(&self, grid_pos: &[u64]) -> Result<Option<(String, Option<ByteRange>)>> {
        Ok(Some((self.key(grid_pos), None)))
    }

    /// The shape (N5 order) of the buffer a block at `grid_pos` is decoded
    /// into and encoded from: its nominal shape, or the whole chunk where a
    /// format stores edge chunks whole.
    fn buffer_shape(&self, grid_pos: &[u64], nominal: &[u64]) -> Vec<u64>;

    /// Where the elements of a block stored raw and whole start in its
    /// stored bytes, and their order, so that they are copied from there
    /// with no decode buffer; `None` for any other block.
    fn stored_elements(&self, grid_pos: &[u64], stored: &[u8]) -> Result<Option<(usize, Order)>>;

    /// Decode the stored bytes of the block at `grid_pos` into `out` (its
    /// [`ObjectBlocks::buffer_shape`]), leaving the elements in the order
    /// it gives (whichever costs least).
    fn decode(&self, grid_pos: &[u64], stored: &[u8], out: &mut [u8]) -> Result<Order>;

    /// Whether region reads from a local store have the decoding threads
    /// read the blocks themselves ([`ObjectBlocks::read_stored_into`]),
    /// with no I/O threads: true where the blocks are ranges of one file in
    /// the order the reads take them (HDF5 chunks), whose read-ahead the
    /// kernel does, so that a hand-over between threads per block only
    /// costs time. Default: false (N5 and Zarr blocks are files of their
    /// own, several of which in flight read faster).
    fn read_by_decoders(&self) -> bool {
        false
    }

    /// Reads the stored bytes of the block at `grid_pos` into `buf`
    /// (replacing what it held): `Some(false)` when the block is not
    /// stored. With `memory_only`, only bytes already in memory (the page
    /// cache) are read: `None` when some would have to come from the disk,
    /// or the format cannot tell. By default [`ObjectBlocks::source`] read
    /// from [`ObjectBlocks::store`], which cannot tell.
    fn read_stored_into(
        &self,
        grid_pos: &[u64],
        buf: &mut Vec<u8>,
        memory_only: bool,
    ) -> Result<Option<bool>> {
        if memory_only {
            return Ok(None);
        }
        Ok(Some(match self.source(grid_pos)? {
            Some((key, Some(range))) => self.store().get_range_into(&key, range, buf)?.is_some(),
            Some((key, None)) => self.store().get_into(&key, buf)?,
            None => false,
        }))
    }

    /// The order blocks are given to [`ObjectBlocks::encode`] in.
    fn write_order(&self) -> Order;

    /// Encode the block at `grid_pos` (`data`: its buffer shape `shape`,
    /// in [`ObjectBlocks::write_order`]) into `out`, replacing its
    /// contents; `false` when the block is not to be stored (empty), so
    /// that the caller deletes it instead.
    fn encode(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool>;

    /// Encode and store the block at `grid_pos` as
    /// [`ObjectBlocks::encode`] does, building the object in `scratch`.
    fn put(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let key = self.key(grid_pos);
        if self.encode(grid_pos, shape, data, scratch)? {
            self.store().put(&key, &[scratch])
        } else {
            self.store().delete(&key).map(|_| ())
        }
    }

    /// Called once a region write has put every block (a format that
    /// writes through a library flushes its file here).
    fn finish_writes(&self) -> Result<()> {
        Ok(())
    }
}

/// Blocks stored as the inner chunks of shards (sharded Zarr v3). Shard
/// positions, shapes and inner-chunk positions are N5 order; entries of a
/// shard's index are numbered as the index holds them.
pub(crate) trait ShardedBlocks: Sync {
    /// The store the shards are in.
    fn store(&self) -> &dyn Store;

    /// The key of the shard at shard-grid position `shard_pos`.
    fn shard_key(&self, shard_pos: &[u64]) -> String;

    /// Bytes of a whole shard decoded.
    fn shard_bytes(&self) -> usize;

    /// The shape (N5 order) of a shard's inner chunks: the array's block,
    /// or with nested sharding the inner shards of the first level, which
    /// are read and written whole.
    fn chunk_shape(&self) -> Vec<u64>;

    /// Inner chunks per shard.
    fn chunks_per_shard(&self) -> usize;

    /// Bytes of one inner chunk decoded.
    fn chunk_bytes(&self) -> usize;

    /// The index entry number of the inner chunk at `within` (its position
    /// among the shard's inner chunks).
    fn entry_number(&self, within: &[u64]) -> usize;

    /// The position among the shard's inner chunks of entry number `i`.
    fn entry_position(&self, i: usize) -> Vec<u64>;

    /// The request that fetches a shard's index without knowing its length.
    fn index_request(&self) -> ByteRange;

    /// Decode and check a shard's index read alone from a shard of
    /// `shard_len` bytes (`u64::MAX`: unknown); `what` names the shard.
    fn decode_index(
        &self,
        encoded: &[u8],
        shard_len: u64,
        what: &str,
    ) -> Result<Vec<Option<Entry>>>;

    /// The checked index of a whole shard's bytes.
    fn whole_index(&self, shard: &[u8], what: &str) -> Result<Vec<Option<Entry>>>;

    /// Decode an inner chunk's bytes into `out` ([`ShardedBlocks::chunk_bytes`], native).
    fn decode_chunk(&self, encoded: &[u8], out: &mut [u8]) -> Result<()>;

    /// The decoded bytes of an inner chunk stored as `encoded`: `encoded`
    /// itself where inner chunks are stored as they are (no codec changes
    /// a byte) and it has the chunk's size, else decoded into `buf`
    /// ([`ShardedBlocks::decode_chunk`]). Saves a copy of every chunk of
    /// uncompressed shards.
    fn chunk_view<'b>(&self, encoded: &'b [u8], buf: &'b mut [u8]) -> Result<&'b [u8]> {
        self.decode_chunk(encoded, buf)?;
        Ok(buf)
    }

    /// The shard indexes this array keeps from reads over a network.
    fn indexes(&self) -> &IndexCache;

    /// Encode the shard at `shard_pos` whole into `out`: `gather` fills
    /// the buffer it is given with the inner chunk at the position (N5
    /// order, in inner chunks) it is given. `false` when the shard holds no
    /// inner chunk and is to be deleted instead.
    fn encode_shard_from(
        &self,
        shard_pos: &[u64],
        out: &mut Vec<u8>,
        gather: &mut dyn FnMut(&[u64], &mut [u8]),
    ) -> Result<bool>;

    /// Encode the decoded shard at `shard_pos` (`data`: its whole shape,
    /// native) into `out`; `false` when it is to be deleted instead.
    fn encode_shard(&self, shard_pos: &[u64], data: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Change part of the shard at `shard_pos` atomically with respect to
    /// every other writer: `merge` receives it decoded and changes it.
    fn merge_shard(&self, shard_pos: &[u64], merge: &mut dyn FnMut(&mut [u8])) -> Result<()>;
}

/// The error of an operation a format does not have (varlength, string
/// and object blocks outside N5).
pub(crate) fn unsupported_on(format: Format, what: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("{what} exist in N5 only, not in {}", format.name()),
    )
}
