//! The arrays of both Zarr formats as the API's [`Array`]: their metadata
//! in N5 order (dimensions reversed; the block is the chunk, or the
//! innermost chunk of a sharded array), the key of each chunk or shard,
//! reading one block (through the shard index with range requests),
//! decoding and encoding a whole chunk or shard, resizing, and for the
//! region code the chunks as objects ([`ObjectBlocks`]) or as the inner
//! chunks of shards ([`ShardedBlocks`]). Works on any [`Store`].

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::array::{Array, Elements, ObjectBlocks, Order, RegionIo, ShardedBlocks, StoredType};
use super::fill::{self, Flavor};
use super::node::{as_object_mut, parse_json, ZARRAY, ZARR_JSON};
use super::zarr2;
use super::zarr3::chain::Chain;
use super::zarr3::index_cache::{self, IndexCache, IndexFrom};
use super::zarr3::metadata::{CodecSpec, Endian, KeyEncoding};
use super::zarr3::shard::{self, Entry, ShardLayout};
use super::Format;
use crate::codec::Compression;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::n5::block::{BlockHeader, BlockMode, DataBlock};
use crate::format::n5::metadata::DatasetAttributes;
use crate::geometry::{copy_box, fill_with, Placement};
use crate::path::{self, display};
use crate::storage::{ByteRange, Store};

/// A Zarr array's layout and codecs, read from its metadata once, and
/// where it is.
#[derive(Debug)]
pub(crate) struct ZarrArray {
    store: Arc<dyn Store>,
    /// The array's path in its container.
    path: String,
    /// Whether chunks all of the fill value are stored (else deleted;
    /// inner chunks of shards never are).
    write_empty: bool,
    /// The metadata in N5 order.
    attributes: Arc<DatasetAttributes>,
    /// Why no data can be written to the array, if so (`hdf5_shards`
    /// whose codecs HDF5 shards cannot hold).
    write_refusal: Option<Error>,
    format: Format,
    /// The metadata document as stored.
    document: Value,
    dtype: DataType,
    /// The array's shape (C order).
    shape: Vec<u64>,
    /// The chunk grid's chunk shape: the shard shape of a sharded array
    /// (C order).
    outer: Vec<u64>,
    /// The block: the innermost chunk shape (C order).
    inner: Vec<u64>,
    /// One element of the fill value, native byte order.
    fill: Vec<u8>,
    codec: Codec,
    /// The shard indexes kept from reads over a network.
    indexes: IndexCache,
}

#[derive(Debug)]
enum Codec {
    V2(Box<zarr2::metadata::ArrayMetadata>),
    V3 {
        /// The chain of a chunk of the grid (a whole shard when sharded).
        chain: Chain,
        keys: KeyEncoding,
        /// The sharding levels, outermost first; empty when the chain is
        /// not a plain `sharding_indexed` one.
        levels: Vec<ShardLayout>,
    },
}

/// The key of the metadata document of the array at `path` in a container
/// of `format` (.zarray or zarr.json).
fn metadata_key(format: Format, path: &str) -> String {
    path::join(
        path,
        match format {
            Format::Zarr2 => ZARRAY,
            _ => ZARR_JSON,
        },
    )
}

/// `v` reversed (C order to N5 order and back).
fn reversed(v: &[u64]) -> Vec<u64> {
    v.iter().rev().copied().collect()
}

impl ZarrArray {
    /// Edits the stored metadata document atomically (read-modify-write
    /// against every other writer) and gives the array it now describes;
    /// an edit that makes the document invalid is refused, nothing written.
    fn rewrite(&self, edit: &dyn Fn(&mut Map<String, Value>)) -> Result<Arc<dyn Array>> {
        let key = metadata_key(self.format, &self.path);
        let store = &*self.store;
        let mut rewritten = None;
        store.update(&key, &mut |current| {
            let bytes = current.ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("{} no longer exists", store.describe(&key)),
                )
            })?;
            let mut doc = parse_json(bytes, &key, store)?;
            edit(as_object_mut(&mut doc));
            let array = ZarrArray::from_stored(
                self.format,
                doc.clone(),
                self.store.clone(),
                &self.path,
                self.write_empty,
            )
            .map_err(|e| Error::invalid_argument(e.message()))?;
            rewritten = Some(array);
            crate::jsontext::to_vec_pretty(&doc)
                .map(Some)
                .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
        })?;
        let array = rewritten
            .ok_or_else(|| Error::new(ErrorKind::Internal, "the metadata update did not run"))?;
        super::consolidated::refresh(self.format, store, std::slice::from_ref(&self.path))?;
        Ok(Arc::new(array))
    }

    /// The array at `path` of a container of `format`, read from its
    /// metadata document; errors name the document.
    pub(crate) fn open(
        format: Format,
        store: Arc<dyn Store>,
        path: &str,
        write_empty: bool,
    ) -> Result<ZarrArray> {
        let key = metadata_key(format, path);
        let bytes = store.get(&key)?.ok_or_else(|| {
            Error::new(
                crate::error::ErrorKind::NotFound,
                format!("{} does not exist", store.describe(&key)),
            )
        })?;
        let doc = parse_json(&bytes, &key, &*store)?;
        let what = store.describe(&key);
        ZarrArray::from_stored(format, doc, store, path, write_empty).map_err(|e| e.context(what))
    }

    /// The array a new metadata document of `format` describes, at `path`
    /// of `store`: refused when no data could be written to it
    /// (`hdf5_shards` whose codecs HDF5 shards cannot hold, the read-only
    /// legacy object codecs `pickle` and `json2`).
    pub(crate) fn from_document(
        format: Format,
        document: Value,
        store: Arc<dyn Store>,
        path: &str,
        write_empty: bool,
    ) -> Result<ZarrArray> {
        super::zarr3::hdf5_shards::check_write(&document)?;
        let array = ZarrArray::from_stored(format, document, store, path, write_empty)?;
        if let Some(codec @ ("pickle" | "json2")) = array.stored_type().object_codec.as_deref() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "object arrays encoded by '{codec}' are read only (new ones use vlen-utf8 or vlen-bytes)"
                ),
            ));
        }
        Ok(array)
    }

    /// The array a stored metadata document of `format` describes, at
    /// `path` of `store`; one that no data could be written to reads, and
    /// refuses every write.
    fn from_stored(
        format: Format,
        document: Value,
        store: Arc<dyn Store>,
        path: &str,
        write_empty: bool,
    ) -> Result<ZarrArray> {
        let write_refusal = super::zarr3::hdf5_shards::check_write(&document).err();
        let at =
            |shape: &[u64], inner: &[u64], dtype: DataType| -> Result<Arc<DatasetAttributes>> {
                Ok(Arc::new(DatasetAttributes::new(
                    reversed(shape),
                    inner.iter().rev().map(|&c| c as u32).collect(),
                    dtype,
                    Compression::Raw,
                )?))
            };
        let path = path.to_string();
        match format {
            Format::Zarr2 => {
                let meta = zarr2::metadata::ArrayMetadata::from_json(&document)?;
                Ok(ZarrArray {
                    attributes: at(&meta.shape, &meta.chunks, meta.data_type.clone())?,
                    write_refusal,
                    store,
                    path,
                    write_empty,
                    format,
                    dtype: meta.data_type.clone(),
                    shape: meta.shape.clone(),
                    outer: meta.chunks.clone(),
                    inner: meta.chunks.clone(),
                    fill: meta.fill_value.clone(),
                    codec: Codec::V2(Box::new(meta)),
                    document,
                    indexes: IndexCache::default(),
                })
            }
            _ => {
                let meta = super::zarr3::metadata::ArrayMetadata::from_json(&document)?;
                let chain = Chain::new(
                    meta.codecs.clone(),
                    meta.data_type.clone(),
                    meta.chunk_shape.clone(),
                    meta.fill_value.clone(),
                );
                // Descend through plain sharding chains to the block.
                let mut levels: Vec<ShardLayout> = Vec::new();
                let mut inner = meta.chunk_shape.clone();
                let mut current = chain.clone();
                while let Some(spec) = current.sharding().cloned() {
                    let layout =
                        ShardLayout::new(&spec, meta.data_type.clone(), &inner, &meta.fill_value);
                    inner = layout.inner.shape.clone();
                    current = layout.inner.clone();
                    levels.push(layout);
                }
                Ok(ZarrArray {
                    attributes: at(&meta.shape, &inner, meta.data_type.clone())?,
                    write_refusal,
                    store,
                    path,
                    write_empty,
                    format,
                    dtype: meta.data_type.clone(),
                    shape: meta.shape.clone(),
                    outer: meta.chunk_shape.clone(),
                    inner,
                    fill: meta.fill_value.clone(),
                    codec: Codec::V3 {
                        chain,
                        keys: meta.key_encoding.clone(),
                        levels,
                    },
                    document,
                    indexes: IndexCache::default(),
                })
            }
        }
    }

    /// The layout of the array's shards (the outermost sharding level)
    /// when it is sharded, for reading parts of shards.
    fn shard_layout(&self) -> Option<&ShardLayout> {
        match &self.codec {
            Codec::V3 { levels, .. } => levels.first(),
            Codec::V2(_) => None,
        }
    }

    /// Bytes of a decoded block (innermost chunk, full size at the edges).
    fn block_bytes(&self) -> usize {
        self.inner.iter().product::<u64>() as usize * self.dtype.size()
    }

    /// Bytes of a decoded chunk of the grid (a whole shard when sharded).
    fn outer_bytes(&self) -> usize {
        self.outer.iter().product::<u64>() as usize * self.dtype.size()
    }

    /// The key (relative to the array) of the chunk of the grid at the N5
    /// grid position `pos` of that grid.
    fn outer_key(&self, pos: &[u64]) -> String {
        let c = reversed(pos);
        match &self.codec {
            Codec::V2(meta) => meta.chunk_key(&c),
            Codec::V3 { keys, .. } => keys.key(&c),
        }
    }

    /// The N5 grid position of the chunk of the grid that holds the block
    /// at the N5 grid position `block`.
    fn outer_of_block(&self, block: &[u64]) -> Vec<u64> {
        let (outer, inner) = (reversed(&self.outer), reversed(&self.inner));
        (0..block.len())
            .map(|d| block[d] * inner[d] / outer[d])
            .collect()
    }

    /// The key of the object holding the variable-length block at N5 grid
    /// position `pos`, and the number of its inner chunk when sharded
    /// (one level of sharding; nested sharding of such elements is not
    /// supported).
    fn elements_key(&self, pos: &[u64]) -> Result<(String, Option<usize>)> {
        match &self.codec {
            Codec::V3 { levels, .. } if !levels.is_empty() => {
                if levels.len() > 1 {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        "nested sharding of variable-length elements is not supported",
                    ));
                }
                let shard_pos = self.outer_of_block(pos);
                let key = path::join(&self.path, &self.outer_key(&shard_pos));
                let (outer, inner) = (reversed(&self.outer), reversed(&self.inner));
                // The inner chunk's position in the shard, C order.
                let within: Vec<u64> = (0..pos.len())
                    .rev()
                    .map(|d| pos[d] * inner[d] % outer[d] / inner[d])
                    .collect();
                Ok((key, Some(levels[0].number(&within))))
            }
            _ => Ok((path::join(&self.path, &self.outer_key(pos)), None)),
        }
    }

    /// Decodes a stored chunk of the grid (a whole shard when sharded) into
    /// `out` ([`ZarrArray::outer_bytes`]): native byte order, C order of
    /// the chunk, which is N5 order of the reversed shape.
    fn decode_outer(&self, stored: &[u8], out: &mut [u8]) -> Result<()> {
        match &self.codec {
            Codec::V2(meta) => zarr2::chunk::decode(meta, stored, out),
            Codec::V3 { chain, .. } => chain.decode(stored, out),
        }
    }

    /// Fill `out` with the fill value.
    fn fill_buffer(&self, out: &mut [u8]) {
        shard::fill_with(out, &self.fill);
    }

    /// Read the block at the N5 grid position `pos` of the array at `path`
    /// into `out` ([`ZarrArray::block_bytes`], full size at the edges; with
    /// `None`, only whether it is stored):
    /// the chunk, or in a sharded array the inner chunk, found through the
    /// shard's index with a range request (over a network, an index kept
    /// from an earlier read that lists the inner chunk, checked by the
    /// version the chunk's range comes with) and fetched with another. A
    /// missing chunk or inner chunk reads as the fill value and gives
    /// `false`. Errors name the key and, in a shard, the inner chunk.
    fn read_chunk(&self, pos: &[u64], out: Option<&mut [u8]>) -> Result<bool> {
        let fill = |out: Option<&mut [u8]>| {
            if let Some(out) = out {
                shard::fill_with(out, &self.fill);
            }
            Ok(false)
        };
        let levels = match &self.codec {
            Codec::V3 { levels, .. } if !levels.is_empty() => levels,
            _ => {
                let key = path::join(&self.path, &self.outer_key(pos));
                let Some(out) = out else {
                    return self.store.exists(&key);
                };
                return match self.store.get(&key)? {
                    None => fill(Some(out)),
                    Some(bytes) => {
                        self.decode_outer(&bytes, out)
                            .map_err(|e| e.context(self.store.describe(&key)))?;
                        Ok(true)
                    }
                };
            }
        };
        let shard_pos = self.outer_of_block(pos);
        let key = path::join(&self.path, &self.outer_key(&shard_pos));
        let what = self.store.describe(&key);
        // The block's element offset inside its shard, C order.
        let c_pos = reversed(pos);
        let mut within: Vec<u64> = (0..c_pos.len())
            .map(|d| (c_pos[d] * self.inner[d]) % self.outer[d])
            .collect();
        // The first level through range requests: the index (unless one
        // kept from an earlier read over a network lists the inner chunk),
        // then the inner chunk.
        let first = &levels[0];
        let at = chunk_of(first, &mut within);
        let number = first.number(&at);
        let keeping = index_cache::applies(self.store.capabilities());
        // A kept index is not used to say that an inner chunk is missing
        // or stored (only a read of the chunk's range can tell that it is
        // still right), so not for `out: None`.
        let kept = match out {
            Some(_) if keeping => self.indexes.listing(&key, std::iter::once(number)),
            _ => None,
        };
        let (entries, from) = match kept {
            Some(known) => (known.entries, IndexFrom::Kept(known.version)),
            None => {
                let range = first.index_request();
                let Some((index, version)) = self.store.get_range_versioned(&key, range)? else {
                    return fill(out);
                };
                // The shard's length is not known from a suffix read; every
                // entry is checked against what its range read returns
                // instead.
                let entries: Arc<[Option<Entry>]> =
                    first.decode_index(&index, u64::MAX, &what)?.into();
                if keeping {
                    self.indexes.keep(&key, version.as_ref(), &entries);
                }
                (entries, IndexFrom::Read(version))
            }
        };
        let Some(mut entry) = entries[number] else {
            return fill(out);
        };
        if out.is_none() && levels.len() == 1 {
            return Ok(true);
        }
        let span = ByteRange::Span {
            offset: entry.offset,
            len: entry.nbytes,
        };
        let bytes = match self.store.get_range_versioned(&key, span)? {
            Some((bytes, now)) if !index_cache::replaced(&from, now.as_ref()) => bytes,
            // Replaced (or deleted) since the index was read: the offsets
            // are the old shard's. The new shard whole, in one request.
            _ => {
                self.indexes.forget(&key);
                let Some(shard) = self.store.get(&key)? else {
                    return fill(out);
                };
                let len = shard.len() as u64;
                let range = first.index_range(len).ok_or_else(|| {
                    Error::codec(format!("{what}: {len} bytes, fewer than the shard index's"))
                })?;
                let entries = first.decode_index(
                    &shard[range.start as usize..range.end as usize],
                    len,
                    &what,
                )?;
                let Some(now) = entries[number] else {
                    return fill(out);
                };
                entry = now;
                shard[now.offset as usize..(now.offset + now.nbytes) as usize].to_vec()
            }
        };
        if bytes.len() as u64 != entry.nbytes {
            return Err(Error::codec(format!(
                "{what}: inner chunk {at:?} is at bytes {}..+{}, beyond the shard's {} bytes",
                entry.offset,
                entry.nbytes,
                entry.offset + bytes.len() as u64
            )));
        }
        // Deeper levels inside the bytes at hand.
        let mut current: &[u8] = &bytes;
        let mut layout = first;
        for next in &levels[1..] {
            let range = next.index_range(current.len() as u64).ok_or_else(|| {
                Error::codec(format!(
                    "{what}: the nested shard of inner chunk {at:?} has {} bytes, fewer than its index",
                    current.len()
                ))
            })?;
            let entries = next.decode_index(
                &current[range.start as usize..range.end as usize],
                current.len() as u64,
                &what,
            )?;
            let at = chunk_of(next, &mut within);
            match entries[next.number(&at)] {
                None => return fill(out),
                Some(e) => current = &current[e.offset as usize..(e.offset + e.nbytes) as usize],
            }
            layout = next;
        }
        if let Some(out) = out {
            layout
                .inner
                .decode(current, out)
                .map_err(|e| e.context(format!("{what}: inner chunk {at:?}")))?;
        }
        Ok(true)
    }
}

impl ZarrArray {
    /// The metadata document of a new array of `format` for the N5-order
    /// `attrs`: the nearest codec of the format for the N5 compression
    /// (raw: none; gzip, zstd and blosc in both; bzip2, xz and lz4 in
    /// Zarr v2 only), fill value 0, C order, little-endian elements, not
    /// sharded.
    pub(crate) fn document_for(format: Format, attrs: &DatasetAttributes) -> Result<Value> {
        let shape = reversed(&attrs.dimensions);
        let chunks: Vec<u64> = attrs.block_size.iter().rev().map(|&b| b as u64).collect();
        let elem = attrs.data_type.size();
        // Fill value zero, as each type spells it (false, [0.0, 0.0], "").
        let zero = vec![0u8; attrs.data_type.element_size()];
        // Strings and bytes of variable length: their vlen codec (a v2
        // filter, the v3 array -> bytes codec).
        let vlen = match attrs.data_type {
            DataType::String => Some("vlen-utf8"),
            DataType::Object => Some("vlen-bytes"),
            _ => None,
        };
        let object_filter = match vlen {
            Some(id) => json!([{"id": id}]),
            None => Value::Null,
        };
        let array_to_bytes = match vlen {
            Some(name) => json!({"name": name, "configuration": {}}),
            None => json!({"name": "bytes", "configuration": {"endian": "little"}}),
        };
        let unsupported = |codec: &str| {
            Error::new(
                crate::error::ErrorKind::Unsupported,
                format!(
                    "compression '{codec}' has no standard codec in {}",
                    format.name()
                ),
            )
        };
        let gzip_level = |level: i32| if level < 0 { 6 } else { level };
        let blosc_shuffle = |shuffle: i32| match shuffle {
            -1 if elem > 1 => 1,
            -1 => 0,
            s => s,
        };
        match format {
            Format::Zarr2 => {
                let compressor = match &attrs.compression {
                    Compression::Raw => Value::Null,
                    Compression::Gzip { level, use_zlib } => json!({
                        "id": if *use_zlib { "zlib" } else { "gzip" },
                        "level": gzip_level(*level)
                    }),
                    Compression::Zstd { level, .. } => json!({"id": "zstd", "level": level}),
                    Compression::Blosc {
                        cname,
                        clevel,
                        shuffle,
                        blocksize,
                    } => json!({
                        "id": "blosc", "cname": cname, "clevel": clevel,
                        "shuffle": blosc_shuffle(*shuffle), "blocksize": blocksize
                    }),
                    Compression::Bzip2 { block_size } => json!({"id": "bz2", "level": block_size}),
                    Compression::Xz { preset } => json!({
                        "id": "lzma", "format": 1, "check": -1, "preset": preset, "filters": null
                    }),
                    Compression::Lz4 { .. } => json!({"id": "lz4", "acceleration": 1}),
                };
                Ok(json!({
                    "zarr_format": 2,
                    "shape": shape,
                    "chunks": chunks,
                    "dtype": zarr2::dtype::to_json(&attrs.data_type, super::zarr3::metadata::Endian::Little),
                    "compressor": compressor,
                    "fill_value": fill::to_json(&zero, &attrs.data_type, Flavor::V2, None),
                    "order": "C",
                    "filters": object_filter,
                    "dimension_separator": "."
                }))
            }
            _ => {
                let mut codecs = vec![array_to_bytes];
                match &attrs.compression {
                    Compression::Raw => {}
                    Compression::Gzip { level, .. } => codecs.push(
                        json!({"name": "gzip", "configuration": {"level": gzip_level(*level)}}),
                    ),
                    Compression::Zstd { level, .. } => codecs.push(
                        json!({"name": "zstd", "configuration": {"level": level, "checksum": false}}),
                    ),
                    Compression::Blosc {
                        cname,
                        clevel,
                        shuffle,
                        blocksize,
                    } => codecs.push(json!({"name": "blosc", "configuration": {
                        "cname": cname, "clevel": clevel,
                        "shuffle": match blosc_shuffle(*shuffle) {
                            0 => "noshuffle",
                            2 => "bitshuffle",
                            _ => "shuffle",
                        },
                        // Blosc's typesize is 1..=255; c-blosc treats larger
                        // elements (structs, fixed strings) as bytes.
                        "typesize": if (1..=255).contains(&elem) { elem } else { 1 },
                        "blocksize": blocksize
                    }})),
                    Compression::Bzip2 { .. } => return Err(unsupported("bzip2")),
                    Compression::Xz { .. } => return Err(unsupported("xz")),
                    Compression::Lz4 { .. } => return Err(unsupported("lz4")),
                }
                Ok(json!({
                    "zarr_format": 3,
                    "node_type": "array",
                    "shape": shape,
                    "data_type": super::zarr3::dtype::to_json(&attrs.data_type),
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
                    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                    "fill_value": fill::to_json(&zero, &attrs.data_type, Flavor::V3, None),
                    "codecs": codecs,
                    "attributes": {}
                }))
            }
        }
    }

    /// Encodes the chunk of the grid at N5 grid position `pos` (`data`:
    /// [`ZarrArray::outer_bytes`], native, C order; a whole shard when
    /// sharded, whose inner chunks equal to the fill value are left out)
    /// and appends it to `out`.
    fn encode_outer(&self, pos: &[u64], data: &[u8], out: &mut Vec<u8>) -> Result<()> {
        match &self.codec {
            Codec::V2(meta) => zarr2::chunk::encode(meta, data, out),
            Codec::V3 { chain, .. } => chain.encode_at(data, Some(&reversed(pos)), out),
        }
    }

    /// Whether every element of `data` is the fill value.
    fn is_fill(&self, data: &[u8]) -> bool {
        shard::is_fill(data, &self.fill)
    }

    /// What a write stores for the decoded chunk of the grid `data` (a
    /// whole chunk or shard) at N5 grid position `pos`: `true` with its
    /// encoding in `out`, to be put in one atomic write, or `false` when
    /// the chunk is to be deleted instead (all fill value, in a sharded
    /// array, which would hold no inner chunk, or without `write_empty`).
    fn encode_for_write(
        &self,
        pos: &[u64],
        data: &[u8],
        write_empty: bool,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        if (self.shard_layout().is_some() || !write_empty) && self.is_fill(data) {
            return Ok(false);
        }
        out.clear();
        self.encode_outer(pos, data, out)?;
        Ok(true)
    }

    /// Change part of the shard at N5 grid position `pos` (of the grid of
    /// shards) of the array at `path`: `merge` receives the decoded shard
    /// (the fill value where nothing is stored) and changes it in place.
    /// The shard is read and replaced atomically with respect to every
    /// other writer ([`Store::update`]: conditional writes on object
    /// stores), so writers of different blocks of one shard, in other
    /// processes or on other machines, lose nothing; a shard left all fill
    /// value is deleted.
    fn merge_outer(&self, pos: &[u64], merge: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        let key = path::join(&self.path, &self.outer_key(pos));
        let what = self.store.describe(&key);
        let mut whole = vec![0u8; self.outer_bytes()];
        let mut empty = false;
        self.store.update(&key, &mut |current| {
            match current {
                Some(bytes) => self
                    .decode_outer(bytes, &mut whole)
                    .map_err(|e| e.context(what.clone()))?,
                None => self.fill_buffer(&mut whole),
            }
            merge(&mut whole);
            empty = self.is_fill(&whole);
            if empty {
                return Ok(None);
            }
            let mut out = Vec::new();
            self.encode_outer(pos, &whole, &mut out)
                .map_err(|e| e.context(what.clone()))?;
            Ok(Some(out))
        })?;
        if empty {
            self.store.delete(&key)?;
        }
        // This array's reads need not try an index it kept of the shard
        // before (its version would tell them).
        self.indexes.forget(&key);
        Ok(())
    }

    /// The N5 grid position (of the grid of chunks as stored) a key below
    /// the array names, `None` for any other key (metadata, strays).
    fn outer_position(&self, key: &str) -> Option<Vec<u64>> {
        if self.shape.is_empty() {
            // A rank-0 array's one chunk: `c` (v3 default keys) or `0`.
            return (key == self.outer_key(&[])).then(Vec::new);
        }
        let (rest, separator) = match &self.codec {
            Codec::V2(meta) => (key, meta.separator),
            Codec::V3 {
                keys: KeyEncoding::Default { separator },
                ..
            } => (key.strip_prefix('c')?.strip_prefix(*separator)?, *separator),
            Codec::V3 {
                keys: KeyEncoding::V2 { separator },
                ..
            } => (key, *separator),
        };
        let number = |n: &str| {
            let canonical = !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n.len() == 1 || !n.starts_with('0'));
            canonical.then(|| n.parse::<u64>().ok()).flatten()
        };
        let c: Option<Vec<u64>> = rest.split(separator).map(number).collect();
        let c = c.filter(|c| c.len() == self.shape.len())?;
        Some(reversed(&c))
    }

    /// The N5 grid positions of the blocks stored in the chunk of the grid
    /// at N5 position `outer` (the block itself when not sharded; in a
    /// shard, the inner chunks within the array that its index lists).
    fn blocks_in(&self, outer: &[u64]) -> Result<Vec<Vec<u64>>> {
        let (n5_outer, n5_inner) = (reversed(&self.outer), reversed(&self.inner));
        let dims = reversed(&self.shape);
        let per: Vec<u64> = n5_outer.iter().zip(&n5_inner).map(|(o, i)| o / i).collect();
        let mut out = Vec::new();
        let count: u64 = per.iter().product();
        for k in 0..count {
            let mut rest = k;
            let block: Vec<u64> = (0..per.len())
                .map(|d| {
                    let p = outer[d] * per[d] + rest % per[d];
                    rest /= per[d];
                    p
                })
                .collect();
            let inside = block
                .iter()
                .zip(&n5_inner)
                .zip(&dims)
                .all(|((&b, &i), &d)| b * i < d);
            if self.shard_layout().is_none() || (inside && self.read_chunk(&block, None)?) {
                out.push(block);
            }
        }
        Ok(out)
    }
}

impl ZarrArray {
    /// The error of the block at `grid_pos`, naming the object it is in
    /// (its path or URL) and the dataset.
    fn block_err(&self, grid_pos: &[u64], e: Error) -> Error {
        e.context(format!(
            "{} of dataset '{}'",
            self.store.describe(&self.block_key(grid_pos)),
            display(&self.path)
        ))
    }

    /// The block at `grid_pos` (nominal `shape`, native) as the whole
    /// chunk or inner chunk it is stored as: `data` where `shape` covers
    /// it, the fill value elsewhere.
    fn whole_block(&self, shape: &[u64], data: &[u8]) -> Vec<u8> {
        let elem = self.dtype.size();
        let full: Vec<u64> = reversed(&self.inner);
        let mut block = vec![0u8; self.block_bytes()];
        fill_with(&mut block, &self.fill);
        let zeros = vec![0u64; shape.len()];
        copy_box(
            data,
            Placement {
                shape,
                offset: &zeros,
            },
            &mut block,
            Placement {
                shape: &full,
                offset: &zeros,
            },
            shape,
            elem,
        );
        block
    }
}

impl Array for ZarrArray {
    fn format(&self) -> Format {
        self.format
    }

    fn attributes(&self) -> Arc<DatasetAttributes> {
        self.attributes.clone()
    }

    /// The zarr.json or .zarray as it was read when the array was opened.
    fn metadata(&self) -> Result<Value> {
        Ok(self.document.clone())
    }

    fn fill(&self) -> &[u8] {
        &self.fill
    }

    fn stored_type(&self) -> StoredType {
        let order = |e: Option<Endian>| match e {
            Some(Endian::Little) => "little",
            Some(Endian::Big) => "big",
            None => "none",
        };
        match &self.codec {
            Codec::V2(meta) => StoredType {
                stored: meta.dtype_json.clone(),
                byte_order: match (&meta.data_type, meta.endian) {
                    (_, Some(e)) => order(Some(e)),
                    // A struct's fields each have their own order: the
                    // description gives one when they agree.
                    (DataType::Struct(_), None) => {
                        let native = super::zarr3::chain::native();
                        let other = match native {
                            Endian::Little => Endian::Big,
                            Endian::Big => Endian::Little,
                        };
                        match &meta.swap {
                            None => order(Some(native)),
                            Some(s) if *s == meta.data_type => order(Some(other)),
                            Some(_) => "none",
                        }
                    }
                    _ => "none",
                },
                object_codec: meta.object_codec.clone(),
            },
            Codec::V3 { chain, .. } => {
                // The array -> bytes codec, inside shards too.
                let mut specs = chain.specs.as_slice();
                let mut endian = None;
                let mut object_codec = None;
                'find: loop {
                    for spec in specs {
                        match spec {
                            CodecSpec::Bytes { endian: e } => {
                                endian = *e;
                                break 'find;
                            }
                            CodecSpec::Sharding { codecs, .. } => {
                                specs = codecs.as_slice();
                                continue 'find;
                            }
                            CodecSpec::Vlen { utf8 } => {
                                object_codec = Some(
                                    if *utf8 { "vlen-utf8" } else { "vlen-bytes" }.to_string(),
                                );
                                break 'find;
                            }
                            _ => {}
                        }
                    }
                    break;
                }
                // Types without an order say "none" in their description.
                StoredType {
                    stored: self
                        .document
                        .get("data_type")
                        .cloned()
                        .unwrap_or(Value::Null),
                    byte_order: order(endian),
                    object_codec,
                }
            }
        }
    }

    fn check_write(&self) -> Result<()> {
        match &self.write_refusal {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn shard_shape(&self) -> Vec<u64> {
        reversed(&self.outer)
    }

    /// The `shape` of the metadata document (C order) is replaced
    /// atomically, every other member kept, and the new document checked
    /// before it is written.
    fn resize(&self, dimensions: &[u64]) -> Result<Arc<dyn Array>> {
        let shape = Value::from(reversed(dimensions));
        self.rewrite(&|doc| {
            doc.insert("shape".into(), shape.clone());
        })
    }

    fn set_dimension_names(&self, names: &[String]) -> Result<Option<Arc<dyn Array>>> {
        if self.format != Format::Zarr3 {
            return Ok(None);
        }
        let names = Value::from(names.iter().rev().cloned().collect::<Vec<String>>());
        self.rewrite(&|doc| {
            doc.insert("dimension_names".into(), names.clone());
        })
        .map(Some)
    }

    fn block_key(&self, grid_pos: &[u64]) -> String {
        path::join(&self.path, &self.outer_key(&self.outer_of_block(grid_pos)))
    }

    fn block_exists(&self, grid_pos: &[u64]) -> Result<bool> {
        self.read_chunk(grid_pos, None)
    }

    fn unit_object(&self, unit_pos: &[u64]) -> Option<(&dyn Store, String)> {
        Some((
            &*self.store,
            path::join(&self.path, &self.outer_key(unit_pos)),
        ))
    }

    /// The document without `attributes` and `dimension_names` (Zarr v3)
    /// and the chunk key spelling (`chunk_key_encoding`,
    /// `dimension_separator`): each array finds its units by its own keys.
    fn encoding(&self) -> Option<Value> {
        let mut doc = self.document.clone();
        if let Some(m) = doc.as_object_mut() {
            for key in [
                "attributes",
                "dimension_names",
                "chunk_key_encoding",
                "dimension_separator",
            ] {
                m.remove(key);
            }
        }
        Some(doc)
    }

    fn read_block(&self, grid_pos: &[u64]) -> Result<Option<DataBlock>> {
        let shape = self.attributes.block_shape(grid_pos)?;
        let n: u64 = shape.iter().product();
        let mut data = vec![0u8; n as usize * self.dtype.size()];
        if !self.read_block_into(grid_pos, &mut data)? {
            return Ok(None);
        }
        let header = BlockHeader {
            mode: BlockMode::Default,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: n,
        };
        Ok(Some(DataBlock { header, data }))
    }

    /// Zarr chunks have no header: the nominal one of a stored block.
    fn block_header(&self, grid_pos: &[u64]) -> Result<Option<BlockHeader>> {
        if !self.block_exists(grid_pos)? {
            return Ok(None);
        }
        let shape = self.attributes.block_shape(grid_pos)?;
        Ok(Some(BlockHeader {
            mode: BlockMode::Default,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: shape.iter().product(),
        }))
    }

    /// Zarr stores edge chunks whole: the block's part is cut from it.
    fn read_block_into(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<bool> {
        if out.len() == self.block_bytes() {
            return self.read_chunk(grid_pos, Some(out));
        }
        let shape = self.attributes.block_shape(grid_pos)?;
        let mut full = vec![0u8; self.block_bytes()];
        let found = self.read_chunk(grid_pos, Some(&mut full))?;
        let full_shape: Vec<u64> = reversed(&self.inner);
        let zeros = vec![0u64; shape.len()];
        copy_box(
            &full,
            Placement {
                shape: &full_shape,
                offset: &zeros,
            },
            out,
            Placement {
                shape: &shape,
                offset: &zeros,
            },
            &shape,
            self.dtype.size(),
        );
        Ok(found)
    }

    /// The chunk (or inner chunk) is `data` where `shape` covers it and the
    /// fill value elsewhere; a chunk is replaced whole, and in a sharded
    /// array its shard is changed atomically (see [`ZarrArray::merge_outer`]).
    fn write_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        let block = self.whole_block(shape, data);
        if self.shard_layout().is_some() {
            let elem = self.dtype.size();
            let shard_pos = self.outer_of_block(grid_pos);
            let (outer, inner) = (reversed(&self.outer), reversed(&self.inner));
            let offset: Vec<u64> = (0..grid_pos.len())
                .map(|d| grid_pos[d] * inner[d] % outer[d])
                .collect();
            let zeros = vec![0u64; inner.len()];
            return self.merge_outer(&shard_pos, &mut |shard| {
                copy_box(
                    &block,
                    Placement {
                        shape: &inner,
                        offset: &zeros,
                    },
                    shard,
                    Placement {
                        shape: &outer,
                        offset: &offset,
                    },
                    &inner,
                    elem,
                )
            });
        }
        let key = self.block_key(grid_pos);
        let mut out = Vec::new();
        let keep = self
            .encode_for_write(grid_pos, &block, self.write_empty, &mut out)
            .map_err(|e| self.block_err(grid_pos, e))?;
        if keep {
            self.store.put(&key, &[&out])
        } else {
            self.store.delete(&key).map(|_| ())
        }
    }

    /// In a sharded array the inner chunk becomes fill value, which leaves
    /// it out of its shard.
    fn delete_block(&self, grid_pos: &[u64]) -> Result<bool> {
        if self.shard_layout().is_some() {
            if !self.block_exists(grid_pos)? {
                return Ok(false);
            }
            let shape = self.attributes.block_shape(grid_pos)?;
            let mut fill = vec![0u8; shape.iter().product::<u64>() as usize * self.fill.len()];
            fill_with(&mut fill, &self.fill);
            self.write_block(grid_pos, &shape, &fill)?;
            return Ok(true);
        }
        self.store.delete(&self.block_key(grid_pos))
    }

    /// The chunks (shards) stored, then in a sharded array the blocks each
    /// shard's index lists.
    fn list_blocks(&self) -> Result<Vec<Vec<u64>>> {
        let mut out = Vec::new();
        for key in self.store.list_keys(&self.path)? {
            if let Some(outer) = self.outer_position(&key) {
                out.extend(self.blocks_in(&outer)?);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// The chunk, or in a sharded array (one level of sharding) the inner
    /// chunk found through the shard's index.
    fn read_elements(&self, grid_pos: &[u64]) -> Result<Option<Elements>> {
        let (key, inner) = self.elements_key(grid_pos)?;
        let what = self.store.describe(&key);
        let Some(bytes) = self.store.get(&key)? else {
            return Ok(None);
        };
        match (&self.codec, inner) {
            (Codec::V2(meta), _) => zarr2::chunk::decode_elements(meta, &bytes, &what).map(Some),
            (Codec::V3 { chain, .. }, None) => chain.decode_elements(&bytes, &what).map(Some),
            (Codec::V3 { levels, .. }, Some(i)) => {
                let layout = &levels[0];
                let entries = layout.whole_index(&bytes, &what)?;
                let Some(e) = entries[i] else {
                    return Ok(None);
                };
                let part = &bytes[e.offset as usize..(e.offset + e.nbytes) as usize];
                let what = format!("{what}: inner chunk {:?}", layout.position(i));
                layout.inner.decode_elements(part, &what).map(Some)
            }
        }
    }

    /// A base64 pickle (hdmf-zarr's compounds) is decoded by the pickle
    /// reader; `0` and `null` are as stored.
    fn fill_json(&self) -> Result<Value> {
        let Codec::V2(meta) = &self.codec else {
            return Ok(Value::Null);
        };
        match self.document.get("fill_value") {
            Some(Value::String(text)) if meta.data_type.is_variable_struct() => {
                let what = format!("the fill value of '{}'", display(&self.path));
                zarr2::pickle::fill_value_json(text, &what, &meta.dtype_json)
            }
            Some(v) => Ok(v.clone()),
            None => Ok(Value::Null),
        }
    }

    /// A sharded array's shard is read and replaced atomically
    /// ([`Store::update`]), its other inner chunks kept as stored.
    fn write_elements(&self, grid_pos: &[u64], elements: &Elements) -> Result<()> {
        let n = self.attributes.block_num_elements();
        if elements.len() != n {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("{} elements for a block of {n}", elements.len()),
            ));
        }
        let (key, inner) = self.elements_key(grid_pos)?;
        let what = self.store.describe(&key);
        let fill = elements.all_equal(&self.fill);
        let encode = |out: &mut Vec<u8>| -> Result<()> {
            match &self.codec {
                Codec::V2(meta) => zarr2::chunk::encode_elements(meta, elements, out),
                Codec::V3 { chain, levels, .. } => match levels.first() {
                    Some(layout) => layout.inner.encode_elements(elements, out),
                    None => chain.encode_elements(elements, out),
                },
            }
            .map_err(|e| e.context(what.clone()))
        };
        let Some(i) = inner else {
            if fill && !self.write_empty {
                return self.store.delete(&key).map(|_| ());
            }
            let mut out = Vec::new();
            encode(&mut out)?;
            return self.store.put(&key, &[&out]);
        };
        let Codec::V3 { levels, .. } = &self.codec else {
            unreachable!("only Zarr v3 arrays are sharded")
        };
        let layout = &levels[0];
        let mut mine = Vec::new();
        if !fill {
            encode(&mut mine)?;
        }
        let mut empty = false;
        self.store.update(&key, &mut |current| {
            let entries = match current {
                Some(bytes) => layout.whole_index(bytes, &what)?,
                None => vec![None; layout.chunks()],
            };
            let parts: Vec<Option<&[u8]>> = entries
                .iter()
                .enumerate()
                .map(|(j, e)| {
                    if j == i {
                        (!fill).then_some(&mine[..])
                    } else {
                        e.and_then(|e| {
                            current.map(|b| &b[e.offset as usize..(e.offset + e.nbytes) as usize])
                        })
                    }
                })
                .collect();
            empty = parts.iter().all(Option::is_none);
            if empty {
                return Ok(None);
            }
            let mut out = Vec::new();
            layout.assemble(&parts, &mut out)?;
            Ok(Some(out))
        })?;
        if empty {
            self.store.delete(&key)?;
        }
        self.indexes.forget(&key);
        Ok(())
    }

    fn region(&self) -> RegionIo<'_> {
        if self.shard_layout().is_some() {
            RegionIo::Shards(self)
        } else {
            RegionIo::Objects(self)
        }
    }
}

impl ObjectBlocks for ZarrArray {
    fn store(&self) -> &dyn Store {
        &*self.store
    }

    fn key(&self, grid_pos: &[u64]) -> String {
        path::join(&self.path, &self.outer_key(grid_pos))
    }

    /// Zarr stores edge chunks whole.
    fn buffer_shape(&self, _grid_pos: &[u64], _nominal: &[u64]) -> Vec<u64> {
        reversed(&self.outer)
    }

    fn stored_elements(&self, _grid_pos: &[u64], _stored: &[u8]) -> Result<Option<(usize, Order)>> {
        Ok(None)
    }

    fn decode(&self, grid_pos: &[u64], stored: &[u8], out: &mut [u8]) -> Result<Order> {
        self.decode_outer(stored, out)
            .map_err(|e| self.block_err(grid_pos, e))?;
        Ok(Order::Native)
    }

    fn write_order(&self) -> Order {
        Order::Native
    }

    fn encode(
        &self,
        grid_pos: &[u64],
        _shape: &[u64],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        self.encode_for_write(grid_pos, data, self.write_empty, out)
            .map_err(|e| self.block_err(grid_pos, e))
    }
}

impl ShardedBlocks for ZarrArray {
    fn store(&self) -> &dyn Store {
        &*self.store
    }

    fn shard_key(&self, shard_pos: &[u64]) -> String {
        path::join(&self.path, &self.outer_key(shard_pos))
    }

    fn shard_bytes(&self) -> usize {
        self.outer_bytes()
    }

    fn chunk_shape(&self) -> Vec<u64> {
        reversed(&self.layout().inner.shape)
    }

    fn chunks_per_shard(&self) -> usize {
        self.layout().chunks()
    }

    fn chunk_bytes(&self) -> usize {
        self.layout().inner.chunk_bytes()
    }

    fn entry_number(&self, within: &[u64]) -> usize {
        self.layout().number(&reversed(within))
    }

    fn entry_position(&self, i: usize) -> Vec<u64> {
        reversed(&self.layout().position(i))
    }

    fn index_request(&self) -> ByteRange {
        self.layout().index_request()
    }

    fn decode_index(
        &self,
        encoded: &[u8],
        shard_len: u64,
        what: &str,
    ) -> Result<Vec<Option<Entry>>> {
        self.layout().decode_index(encoded, shard_len, what)
    }

    fn whole_index(&self, shard: &[u8], what: &str) -> Result<Vec<Option<Entry>>> {
        self.layout().whole_index(shard, what)
    }

    fn decode_chunk(&self, encoded: &[u8], out: &mut [u8]) -> Result<()> {
        self.layout().inner.decode(encoded, out)
    }

    fn chunk_view<'b>(&self, encoded: &'b [u8], buf: &'b mut [u8]) -> Result<&'b [u8]> {
        if encoded.len() == buf.len() && self.layout().inner.stores_as_is() {
            return Ok(encoded);
        }
        self.decode_chunk(encoded, buf)?;
        Ok(buf)
    }

    fn indexes(&self) -> &IndexCache {
        &self.indexes
    }

    fn encode_shard_from(
        &self,
        shard_pos: &[u64],
        out: &mut Vec<u8>,
        gather: &mut dyn FnMut(&[u64], &mut [u8]),
    ) -> Result<bool> {
        let mut at = Vec::new();
        let shard_at = reversed(shard_pos);
        let stored = self
            .layout()
            .encode_from_at(Some(&shard_at), out, |p, chunk| {
                at.clear();
                at.extend(p.iter().rev());
                gather(&at, chunk)
            })?;
        Ok(stored > 0)
    }

    fn encode_shard(&self, shard_pos: &[u64], data: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.encode_for_write(shard_pos, data, self.write_empty, out)
    }

    fn merge_shard(&self, shard_pos: &[u64], merge: &mut dyn FnMut(&mut [u8])) -> Result<()> {
        self.merge_outer(shard_pos, merge)
    }
}

impl ZarrArray {
    /// The outermost sharding level (only called on sharded arrays).
    fn layout(&self) -> &ShardLayout {
        self.shard_layout()
            .expect("the shard operations are only offered for sharded arrays")
    }
}

/// The position (C order) of the inner chunk of `layout` that holds the
/// element offset `within` (relative to the shard), which becomes the offset
/// relative to that inner chunk.
fn chunk_of(layout: &ShardLayout, within: &mut [u64]) -> Vec<u64> {
    let shape = &layout.inner.shape;
    (0..within.len())
        .map(|d| {
            let p = within[d] / shape[d];
            within[d] %= shape[d];
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStore;
    use serde_json::json;

    /// A uint16 array of 8×8 in one shard of 4×4 inner chunks (index at the
    /// end, with or without its CRC-32C), stored under `a/c/0/0`.
    fn sharded(store: &Arc<MemoryStore>, crc: bool) -> (ZarrArray, Vec<u8>) {
        let mut index_codecs =
            vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
        if crc {
            index_codecs.push(json!({"name": "crc32c"}));
        }
        let doc = json!({
            "zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 7,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [4, 4],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_codecs": index_codecs, "index_location": "end"}}]
        });
        let a = ZarrArray::from_document(Format::Zarr3, doc, store.clone(), "a", true).unwrap();
        // Element (row r, column c) holds 100 r + c; the inner chunk at
        // row 1, column 1 is all fill value, so it is left out.
        let mut data = Vec::new();
        for r in 0..8u16 {
            for c in 0..8u16 {
                let v = if r >= 4 && c >= 4 { 7 } else { 100 * r + c };
                data.extend_from_slice(&v.to_ne_bytes());
            }
        }
        let Codec::V3 { chain, .. } = &a.codec else {
            unreachable!()
        };
        let mut shard = Vec::new();
        chain.encode(&data, &mut shard).unwrap();
        store.put("a/c/0/0", &[&shard]).unwrap();
        (a, shard)
    }

    fn block(a: &ZarrArray, pos: &[u64]) -> Result<(bool, Vec<u16>)> {
        let mut out = vec![0u8; a.block_bytes()];
        let found = a.read_chunk(pos, Some(&mut out))?;
        let v = out
            .chunks_exact(2)
            .map(|c| u16::from_ne_bytes([c[0], c[1]]))
            .collect();
        Ok((found, v))
    }

    #[test]
    fn blosc_typesize_of_large_elements_is_one() {
        let t = DataType::FixedUtf32 { chars: 512 };
        let c = crate::codec::Compression::from_json(&json!({"type": "blosc"})).unwrap();
        let attrs = DatasetAttributes::new(vec![3], vec![3], t, c).unwrap();
        let doc = ZarrArray::document_for(Format::Zarr3, &attrs).unwrap();
        let blosc = &doc["codecs"][1]["configuration"];
        assert_eq!(blosc["typesize"], json!(1), "{doc}");
    }

    #[test]
    fn blocks_of_a_shard_through_its_index() {
        let s = Arc::new(MemoryStore::new());
        let (a, _) = sharded(&s, true);
        assert_eq!(a.shard_shape(), vec![8, 8]);
        assert_eq!(a.attributes().block_size, vec![4, 4]);
        // N5 position [1, 0]: columns 4..8 of rows 0..4.
        let (found, v) = block(&a, &[1, 0]).unwrap();
        assert!(found);
        assert_eq!(v[0], 4);
        assert_eq!(v[5], 105);
        // The left-out inner chunk: fill value.
        let (found, v) = block(&a, &[1, 1]).unwrap();
        assert!(!found);
        assert!(v.iter().all(|&x| x == 7));
        assert!(a.read_chunk(&[0, 1], None).unwrap());
        assert!(!a.read_chunk(&[1, 1], None).unwrap());
        // No shard at all.
        s.delete("a/c/0/0").unwrap();
        assert!(!block(&a, &[0, 0]).unwrap().0);
    }

    #[test]
    fn hostile_shards_are_errors_naming_the_shard_and_inner_chunk() {
        let s = Arc::new(MemoryStore::new());
        // A damaged index: its CRC-32C no longer matches.
        let (a, shard) = sharded(&s, true);
        let mut bad = shard.clone();
        let at = bad.len() - 10;
        bad[at] ^= 1;
        s.put("a/c/0/0", &[&bad]).unwrap();
        let e = block(&a, &[0, 0]).unwrap_err();
        assert!(e.message().contains("a/c/0/0"), "{e}");
        // A truncated shard: shorter than its index.
        s.put("a/c/0/0", &[&shard[..20]]).unwrap();
        assert!(block(&a, &[0, 0]).is_err());
        // An entry that points beyond the shard (no CRC to catch it first).
        let (a, shard) = sharded(&s, false);
        let mut bad = shard.clone();
        let index_at = bad.len() - 64;
        bad[index_at..index_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        s.put("a/c/0/0", &[&bad]).unwrap();
        let e = block(&a, &[0, 0]).unwrap_err();
        assert!(
            e.message().contains("a/c/0/0") && e.message().contains("[0, 0]"),
            "{e}"
        );
        // Absurd sizes: no allocation follows them.
        bad[index_at + 8..index_at + 16].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
        s.put("a/c/0/0", &[&bad]).unwrap();
        assert!(block(&a, &[0, 0]).is_err());
    }
}
