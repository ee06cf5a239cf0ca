//! The `sharding_indexed` codec: a shard holds inner chunks, each encoded
//! with the inner chain, and an index of `(offset, nbytes)` per inner chunk
//! (C order; both `2^64-1` for an empty one), encoded with the index chain
//! and stored at the start or the end. This file reads and checks indexes
//! and decodes and encodes whole shards, in the plain layout or, for an
//! array with the `hdf5_shards` member, as HDF5 files: the dataset of the
//! shard clipped to the array, its datatype and fill value in the `bytes`
//! codec's byte order, the filter its inner compressor becomes.
//!
//! Every index entry is checked against the shard's length before any inner
//! chunk is read: an entry past the end, an absurd size or a partial
//! overlap with another entry is an error naming the inner chunk, and no
//! allocation follows a size the index claims.

use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::hdf5::shard_file::{Filter, IndexAt, ShardFile};
use crate::geometry::swap_in_place;
use crate::geometry::{copy_box, Placement};
use crate::storage::ByteRange;

use super::chain::{native, Chain};
use super::metadata::{CodecSpec, Endian, Hdf5Shards, IndexLocation, Shuffle};

/// An empty entry's offset and size.
pub(crate) const EMPTY: u64 = u64::MAX;

/// Where an inner chunk's bytes are in its shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// First byte.
    pub offset: u64,
    /// Number of bytes.
    pub nbytes: u64,
}

/// The layout of the shards of one array (or of one level of nested
/// sharding).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ShardLayout {
    /// Inner chunks per shard along each dimension (C order).
    pub per_shard: Vec<u64>,
    /// The inner chunks' chain.
    pub inner: Chain,
    /// The index's chain (shape `per_shard + [2]`, uint64).
    pub index: Chain,
    /// Where the index is.
    pub location: IndexLocation,
    /// Set when every shard written is an HDF5 file too (`hdf5_shards`).
    pub hdf5: Option<Hdf5Shards>,
}

impl ShardLayout {
    /// The layout `spec` (a `sharding_indexed` codec) gives shards of
    /// `shard_shape` (C order) of `dtype` with fill value `fill`.
    pub(crate) fn new(
        spec: &CodecSpec,
        dtype: DataType,
        shard_shape: &[u64],
        fill: &[u8],
    ) -> ShardLayout {
        let CodecSpec::Sharding {
            chunk_shape,
            codecs,
            index_codecs,
            index_location,
            hdf5,
        } = spec
        else {
            unreachable!("ShardLayout::new is given a sharding codec")
        };
        let per_shard: Vec<u64> = shard_shape
            .iter()
            .zip(chunk_shape)
            .map(|(s, c)| s / c)
            .collect();
        let mut index_shape = per_shard.clone();
        index_shape.push(2);
        ShardLayout {
            inner: Chain::new(codecs.clone(), dtype, chunk_shape.clone(), fill.to_vec()),
            index: Chain::new(
                index_codecs.clone(),
                DataType::U64,
                index_shape,
                EMPTY.to_ne_bytes().to_vec(),
            ),
            per_shard,
            location: *index_location,
            hdf5: hdf5.clone(),
        }
    }

    /// The shard shape (C order).
    pub(crate) fn shard_shape(&self) -> Vec<u64> {
        self.per_shard
            .iter()
            .zip(&self.inner.shape)
            .map(|(p, c)| p * c)
            .collect()
    }

    /// Inner chunks per shard.
    pub(crate) fn chunks(&self) -> usize {
        self.per_shard.iter().product::<u64>() as usize
    }

    /// Bytes of the encoded index (fixed: its codecs do not compress).
    pub(crate) fn index_bytes(&self) -> usize {
        let crcs = self
            .index
            .specs
            .iter()
            .filter(|c| matches!(c, CodecSpec::Crc32c))
            .count();
        self.index.chunk_bytes() + 4 * crcs
    }

    /// The inner chunk number `i` (C order) as a position in the shard.
    pub(crate) fn position(&self, mut i: usize) -> Vec<u64> {
        let mut pos = vec![0u64; self.per_shard.len()];
        for d in (0..pos.len()).rev() {
            let n = self.per_shard[d] as usize;
            pos[d] = (i % n) as u64;
            i /= n;
        }
        pos
    }

    /// The number (C order) of the inner chunk at `pos`.
    pub(crate) fn number(&self, pos: &[u64]) -> usize {
        pos.iter()
            .zip(&self.per_shard)
            .fold(0usize, |acc, (&p, &n)| acc * n as usize + p as usize)
    }

    /// Decodes and checks an encoded index of a shard of `shard_len` bytes:
    /// every entry lies inside the shard and outside the index, and no two
    /// entries overlap unless they are the same bytes. `what` names the
    /// shard in errors.
    pub(crate) fn decode_index(
        &self,
        encoded: &[u8],
        shard_len: u64,
        what: &str,
    ) -> Result<Vec<Option<Entry>>> {
        if encoded.len() != self.index_bytes() {
            return Err(Error::codec(format!(
                "{what}: the shard index has {} bytes, {} expected",
                encoded.len(),
                self.index_bytes()
            )));
        }
        let mut raw = vec![0u8; self.index.chunk_bytes()];
        self.index
            .decode(encoded, &mut raw)
            .map_err(|e| e.context(format!("{what}: shard index")))?;
        let words: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect();
        // The bytes inner chunks may use.
        let index_len = self.index_bytes() as u64;
        let (lo, hi) = match self.location {
            IndexLocation::Start => (index_len, shard_len),
            IndexLocation::End => (0, shard_len.saturating_sub(index_len)),
        };
        let mut entries = Vec::with_capacity(self.chunks());
        for (i, pair) in words.chunks_exact(2).enumerate() {
            let (offset, nbytes) = (pair[0], pair[1]);
            if offset == EMPTY && nbytes == EMPTY {
                entries.push(None);
                continue;
            }
            let end = offset.checked_add(nbytes);
            if offset < lo || end.is_none_or(|e| e > hi) {
                return Err(Error::codec(format!(
                    "{what}: inner chunk {:?} is at bytes {offset}..+{nbytes}, outside the {} bytes its shard holds for chunks",
                    self.position(i),
                    hi.saturating_sub(lo)
                )));
            }
            entries.push(Some(Entry { offset, nbytes }));
        }
        // Overlaps: sorted by offset, each entry must end before the next
        // starts, or be exactly the same bytes.
        let mut order: Vec<usize> = (0..entries.len())
            .filter(|&i| entries[i].is_some())
            .collect();
        order.sort_by_key(|&i| entries[i].map(|e| (e.offset, e.nbytes)));
        for w in order.windows(2) {
            let (a, b) = (entries[w[0]].expect("kept"), entries[w[1]].expect("kept"));
            if a != b && a.offset + a.nbytes > b.offset {
                return Err(Error::codec(format!(
                    "{what}: inner chunks {:?} and {:?} overlap in the shard",
                    self.position(w[0]),
                    self.position(w[1])
                )));
            }
        }
        Ok(entries)
    }

    /// Encodes an index.
    pub(crate) fn encode_index(&self, entries: &[Option<Entry>], out: &mut Vec<u8>) -> Result<()> {
        let mut raw = Vec::with_capacity(entries.len() * 16);
        for e in entries {
            let (o, n) = e.map_or((EMPTY, EMPTY), |e| (e.offset, e.nbytes));
            raw.extend_from_slice(&o.to_ne_bytes());
            raw.extend_from_slice(&n.to_ne_bytes());
        }
        self.index.encode(&raw, out)
    }

    /// The checked entries of the index of `bytes`, a whole shard
    /// ([`ShardLayout::decode_index`]); `what` names the shard in errors.
    pub(crate) fn whole_index(&self, bytes: &[u8], what: &str) -> Result<Vec<Option<Entry>>> {
        let range = self.index_range(bytes.len() as u64).ok_or_else(|| {
            Error::codec(format!(
                "{what}: the shard has {} bytes, fewer than its {}-byte index",
                bytes.len(),
                self.index_bytes()
            ))
        })?;
        let index = &bytes[range.start as usize..range.end as usize];
        self.decode_index(index, bytes.len() as u64, what)
    }

    /// Appends a shard made of already encoded inner chunks (`None`: not
    /// stored), in C order, with its index where the layout puts it; a
    /// shard of variable-length elements is assembled so.
    pub(crate) fn assemble(&self, parts: &[Option<&[u8]>], out: &mut Vec<u8>) -> Result<()> {
        let shard_start = out.len();
        if self.location == IndexLocation::Start {
            out.resize(shard_start + self.index_bytes(), 0);
        }
        let mut entries = Vec::with_capacity(parts.len());
        for part in parts {
            entries.push(part.map(|bytes| {
                let start = out.len();
                out.extend_from_slice(bytes);
                Entry {
                    offset: (start - shard_start) as u64,
                    nbytes: bytes.len() as u64,
                }
            }));
        }
        match self.location {
            IndexLocation::Start => {
                let mut index = Vec::with_capacity(self.index_bytes());
                self.encode_index(&entries, &mut index)?;
                out[shard_start..shard_start + index.len()].copy_from_slice(&index);
            }
            IndexLocation::End => self.encode_index(&entries, out)?,
        }
        Ok(())
    }

    /// The request that fetches a shard's index without knowing the
    /// shard's length: the first bytes, or a suffix when it is at the end.
    pub(crate) fn index_request(&self) -> ByteRange {
        let len = self.index_bytes() as u64;
        match self.location {
            IndexLocation::Start => ByteRange::Span { offset: 0, len },
            IndexLocation::End => ByteRange::Suffix(len),
        }
    }

    /// The index's bytes within a shard of `shard_len` bytes.
    pub(crate) fn index_range(&self, shard_len: u64) -> Option<std::ops::Range<u64>> {
        let n = self.index_bytes() as u64;
        if shard_len < n {
            return None;
        }
        Some(match self.location {
            IndexLocation::Start => 0..n,
            IndexLocation::End => shard_len - n..shard_len,
        })
    }
}

/// Neighbouring inner chunks further apart than this many bytes are
/// fetched with separate requests; closer ones with one request that also
/// brings the bytes between them (cheaper than a request's round trip on an
/// object store, and one read instead of two on a disk).
pub(crate) const COALESCE_GAP: u64 = 256 << 10;

/// A coalesced request grows to at most this many bytes (more requests in
/// flight rather than one long one); a larger inner chunk goes alone.
pub(crate) const COALESCE_MAX: u64 = 2 << 20;

/// [`COALESCE_MAX`] over a network, where every request costs a round
/// trip: on S3, region reads of the sharded benchmark array took 0.90–0.95×
/// the time with blosc (48 GETs instead of 55) and 0.98–1.01× with zstd
/// than with 2 MiB.
pub(crate) const COALESCE_MAX_REMOTE: u64 = 8 << 20;

/// One byte range of a shard to fetch and the inner chunks in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// First byte of the range in the shard.
    pub offset: u64,
    /// Length of the range.
    pub len: u64,
    /// The inner chunks in the range: the caller's number for each and its
    /// entry (offsets relative to the shard, not to the range).
    pub chunks: Vec<(usize, Entry)>,
}

/// The inner chunks `wanted` (the caller's number and the index entry of
/// each) grouped into ranges of the shard to fetch: in the order of their
/// bytes, neighbours at most `gap` bytes apart joined into one range while
/// it stays within `max` bytes. Entries that are the same bytes share them.
pub(crate) fn coalesce(mut wanted: Vec<(usize, Entry)>, gap: u64, max: u64) -> Vec<Run> {
    wanted.sort_by_key(|&(n, e)| (e.offset, e.nbytes, n));
    let mut runs: Vec<Run> = Vec::new();
    for (n, e) in wanted {
        let end = e.offset.saturating_add(e.nbytes);
        if let Some(run) = runs.last_mut() {
            let run_end = run.offset + run.len;
            let joined = end.max(run_end) - run.offset;
            if e.offset <= run_end.saturating_add(gap) && joined <= max.max(run.len) {
                run.len = joined;
                run.chunks.push((n, e));
                continue;
            }
        }
        runs.push(Run {
            offset: e.offset,
            len: e.nbytes,
            chunks: vec![(n, e)],
        });
    }
    runs
}

/// Decodes the whole shard `bytes` (the array → bytes codec `spec`, shard
/// shape `shape` in C order) into `out` (native, C order); missing inner
/// chunks read as the fill value `fill`.
pub(crate) fn decode_whole(
    spec: &CodecSpec,
    dtype: DataType,
    shape: &[u64],
    fill: &[u8],
    bytes: &[u8],
    out: &mut [u8],
) -> Result<()> {
    let layout = ShardLayout::new(spec, dtype.clone(), shape, fill);
    let entries = layout.whole_index(bytes, "shard")?;
    let mut chunk = vec![0u8; layout.inner.chunk_bytes()];
    for (i, entry) in entries.iter().enumerate() {
        let pos = layout.position(i);
        match entry {
            Some(e) => layout
                .inner
                .decode(
                    &bytes[e.offset as usize..(e.offset + e.nbytes) as usize],
                    &mut chunk,
                )
                .map_err(|err| err.context(format!("inner chunk {pos:?}")))?,
            None => fill_with(&mut chunk, fill),
        }
        place(&layout, shape, &pos, &chunk, out, dtype.size(), true);
    }
    Ok(())
}

/// Encodes the shard `data` (native, C order of `shape`) and appends it to
/// `out`: inner chunks equal to the fill value are left out.
impl ShardLayout {
    /// The HDF5 file of a shard of this layout (whose codecs
    /// `hdf5_shards::refusal` accepts) with the region `extent` (C order)
    /// in the array.
    fn hdf5_file(&self, extent: &[u64]) -> Result<ShardFile> {
        let layout = self;
        let inner = &layout.inner;
        let internal = || {
            Error::new(
                ErrorKind::Internal,
                format!("HDF5 shards with inner codecs {:?}", inner.specs),
            )
        };
        let (endian, compressor) = match inner.specs.as_slice() {
            [CodecSpec::Bytes { endian }] => (endian, None),
            [CodecSpec::Bytes { endian }, c] => (endian, Some(c)),
            _ => return Err(internal()),
        };
        let filter = match compressor {
            None => Filter::None,
            Some(CodecSpec::Zstd { level, .. }) => Filter::Zstd { level: *level },
            Some(CodecSpec::Blosc {
                cname,
                clevel,
                shuffle,
                typesize,
                ..
            }) => Filter::Blosc {
                typesize: *typesize,
                clevel: *clevel,
                shuffle: match shuffle {
                    Shuffle::None => 0,
                    Shuffle::Byte => 1,
                    Shuffle::Bit => 2,
                },
                compressor: match cname.as_str() {
                    "blosclz" => 0,
                    "lz4" => 1,
                    "lz4hc" => 2,
                    "snappy" => 3,
                    "zlib" => 4,
                    "zstd" => 5,
                    _ => return Err(internal()),
                },
            },
            Some(_) => return Err(internal()),
        };
        let big_endian = *endian == Some(Endian::Big);
        let mut fill = inner.fill.clone();
        let file_order = if big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        if file_order != native() {
            let elem = fill.len();
            swap_in_place(&mut fill, elem);
        }
        let shard: Vec<u64> = layout
            .per_shard
            .iter()
            .zip(&inner.shape)
            .map(|(p, c)| p * c)
            .collect();
        ShardFile::new(
            inner.dtype.clone(),
            big_endian,
            extent,
            &shard,
            &inner.shape,
            &fill,
            filter,
            match layout.location {
                IndexLocation::Start => IndexAt::Start,
                IndexLocation::End => IndexAt::End,
            },
            layout.index_bytes() as u64,
        )
    }
}

#[cfg(test)]
pub(crate) fn encode_whole(
    spec: &CodecSpec,
    dtype: DataType,
    shape: &[u64],
    fill: &[u8],
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    encode_whole_at(spec, dtype, shape, fill, None, data, out)
}

/// [`encode_whole`] of the shard at the shard-grid position `at` (C
/// order) of its array, which clips the dataset of an HDF5 shard
/// ([`ShardLayout::encode_from_at`]).
pub(crate) fn encode_whole_at(
    spec: &CodecSpec,
    dtype: DataType,
    shape: &[u64],
    fill: &[u8],
    at: Option<&[u64]>,
    data: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let layout = ShardLayout::new(spec, dtype.clone(), shape, fill);
    layout.encode_from_at(at, out, |pos, chunk| {
        place(&layout, shape, pos, data, chunk, dtype.size(), false)
    })?;
    Ok(())
}

impl ShardLayout {
    /// Encodes the shard at the shard-grid position `at` (C order) of the
    /// array and appends it to `out`; `None` for a shard inside the array.
    /// `gather` fills the buffer it is given with the inner chunk at the
    /// position (C order, in inner chunks) it is given, and inner chunks
    /// equal to the fill value are left out. Each is encoded straight into
    /// `out`, after the room kept for an index at the start or before the
    /// index at the end. Returns the number of inner chunks stored (none:
    /// the shard need not be).
    /// Only HDF5 shards depend on `at`: their dataset is the shard clipped to
    /// the array, and inner chunks wholly outside it are left out.
    pub(crate) fn encode_from_at(
        &self,
        at: Option<&[u64]>,
        out: &mut Vec<u8>,
        gather: impl FnMut(&[u64], &mut [u8]),
    ) -> Result<usize> {
        match &self.hdf5 {
            Some(h) => {
                let extent = h.extent(&self.shard_shape(), at);
                self.encode_hdf5(&extent, out, gather)
            }
            None => self.encode_plain(out, gather),
        }
    }

    /// [`ShardLayout::encode_from_at`] of a plain shard.
    fn encode_plain(
        &self,
        out: &mut Vec<u8>,
        mut gather: impl FnMut(&[u64], &mut [u8]),
    ) -> Result<usize> {
        let mut chunk = vec![0u8; self.inner.chunk_bytes()];
        let mut entries = Vec::with_capacity(self.chunks());
        let shard_start = out.len();
        if self.location == IndexLocation::Start {
            out.resize(shard_start + self.index_bytes(), 0);
        }
        let mut stored = 0;
        for i in 0..self.chunks() {
            let pos = self.position(i);
            gather(&pos, &mut chunk);
            if is_fill(&chunk, &self.inner.fill) {
                entries.push(None);
                continue;
            }
            let start = out.len();
            self.inner.encode(&chunk, out)?;
            entries.push(Some(Entry {
                offset: (start - shard_start) as u64,
                nbytes: (out.len() - start) as u64,
            }));
            stored += 1;
        }
        match self.location {
            IndexLocation::Start => {
                let mut index = Vec::with_capacity(self.index_bytes());
                self.encode_index(&entries, &mut index)?;
                if index.len() != self.index_bytes() {
                    return Err(Error::new(
                        ErrorKind::Internal,
                        format!(
                            "a shard index of {} bytes, {} expected",
                            index.len(),
                            self.index_bytes()
                        ),
                    ));
                }
                out[shard_start..shard_start + index.len()].copy_from_slice(&index);
            }
            IndexLocation::End => self.encode_index(&entries, out)?,
        }
        Ok(stored)
    }

    /// [`ShardLayout::encode_from_at`] of a shard that is an HDF5 file too
    /// (hdf5.md A3): room for the user block and the HDF5 metadata, the
    /// inner chunks in C order (those equal to the fill value or wholly
    /// outside `extent`, the shard's region in the array, left out), the
    /// index at the end, then the metadata and the index at the start
    /// written into the room kept. Every inner chunk is encoded once, and
    /// the Fixed Array and the Zarr index point at the same bytes.
    fn encode_hdf5(
        &self,
        extent: &[u64],
        out: &mut Vec<u8>,
        mut gather: impl FnMut(&[u64], &mut [u8]),
    ) -> Result<usize> {
        let file = self.hdf5_file(extent)?;
        let shard_start = out.len();
        let head = file.head_len() as usize;
        out.resize(shard_start + head, 0);
        let mut chunk = vec![0u8; self.inner.chunk_bytes()];
        let mut entries = Vec::with_capacity(self.chunks());
        let mut stored = 0;
        for i in 0..self.chunks() {
            let pos = self.position(i);
            let outside = pos
                .iter()
                .zip(&self.inner.shape)
                .zip(extent)
                .any(|((&p, &c), &e)| p * c >= e);
            if outside {
                entries.push(None);
                continue;
            }
            gather(&pos, &mut chunk);
            if is_fill(&chunk, &self.inner.fill) {
                entries.push(None);
                continue;
            }
            let start = out.len();
            self.inner.encode(&chunk, out)?;
            entries.push(Some(Entry {
                offset: (start - shard_start) as u64,
                nbytes: (out.len() - start) as u64,
            }));
            stored += 1;
        }
        let mut index = Vec::with_capacity(self.index_bytes());
        self.encode_index(&entries, &mut index)?;
        if index.len() != self.index_bytes() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "a shard index of {} bytes, {} expected",
                    index.len(),
                    self.index_bytes()
                ),
            ));
        }
        if self.location == IndexLocation::End {
            out.extend_from_slice(&index);
        }
        let chunks: Vec<Option<(u64, u64)>> = entries
            .iter()
            .map(|e| e.map(|e| (e.offset, e.nbytes)))
            .collect();
        let file_len = (out.len() - shard_start) as u64;
        let head_bytes = &mut out[shard_start..shard_start + head];
        file.write_head(&chunks, file_len, head_bytes)?;
        if self.location == IndexLocation::Start {
            head_bytes[..index.len()].copy_from_slice(&index);
        }
        Ok(stored)
    }
}

/// Copies between the inner chunk at `pos` and the shard array (`shape`,
/// C order): into the shard when `into_shard`, else out of it.
fn place(
    layout: &ShardLayout,
    shape: &[u64],
    pos: &[u64],
    src: &[u8],
    dst: &mut [u8],
    elem: usize,
    into_shard: bool,
) {
    // N5 order (reversed) for copy_box.
    let inner: Vec<u64> = layout.inner.shape.iter().rev().copied().collect();
    let shard: Vec<u64> = shape.iter().rev().copied().collect();
    let offset: Vec<u64> = pos.iter().rev().zip(&inner).map(|(p, c)| p * c).collect();
    let zero = vec![0u64; inner.len()];
    let (chunk_at, shard_at) = (
        Placement {
            shape: &inner,
            offset: &zero,
        },
        Placement {
            shape: &shard,
            offset: &offset,
        },
    );
    if into_shard {
        copy_box(src, chunk_at, dst, shard_at, &inner, elem);
    } else {
        copy_box(src, shard_at, dst, chunk_at, &inner, elem);
    }
}

pub(crate) use crate::geometry::{fill_with, is_fill};

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::metadata::parse_chain;
    use super::*;

    fn layout(location: &str, shard: &[u64], inner: &[u64]) -> (CodecSpec, ShardLayout) {
        let codecs = json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": location}}]);
        let spec = parse_chain(Some(&codecs), DataType::U8, shard, 0)
            .unwrap()
            .remove(0);
        let l = ShardLayout::new(&spec, DataType::U8, shard, &[9]);
        (spec, l)
    }

    #[test]
    fn neighbouring_inner_chunks_share_a_request() {
        let e = |offset, nbytes| Entry { offset, nbytes };
        // Out of order, one gap small enough, one too large, one shared.
        let runs = coalesce(
            vec![
                (3, e(1000, 100)),
                (0, e(0, 100)),
                (1, e(100, 50)),
                (2, e(160, 40)),
                (4, e(1000, 100)),
            ],
            10,
            1 << 20,
        );
        let spans: Vec<(u64, u64, Vec<usize>)> = runs
            .iter()
            .map(|r| (r.offset, r.len, r.chunks.iter().map(|c| c.0).collect()))
            .collect();
        assert_eq!(
            spans,
            vec![(0, 200, vec![0, 1, 2]), (1000, 100, vec![3, 4])]
        );
        // The size limit splits; a chunk larger than it goes alone.
        let runs = coalesce(
            vec![(0, e(0, 60)), (1, e(60, 60)), (2, e(120, 500))],
            0,
            100,
        );
        let lens: Vec<u64> = runs.iter().map(|r| r.len).collect();
        assert_eq!(lens, vec![60, 60, 500]);
        assert!(coalesce(Vec::new(), 0, 1).is_empty());
    }

    #[test]
    fn index_size_positions_and_numbers() {
        let (_, l) = layout("end", &[4, 6], &[2, 3]);
        assert_eq!(l.chunks(), 4);
        assert_eq!(l.index_bytes(), 4 * 16 + 4);
        assert_eq!(l.position(3), [1, 1]);
        assert_eq!(l.position(1), [0, 1]);
        assert_eq!(l.number(&[1, 0]), 2);
        assert_eq!(l.index_range(100), Some(32..100));
        assert_eq!(l.index_range(10), None);
    }

    #[test]
    fn whole_shards_leave_out_fill_chunks_and_read_them_back() {
        for location in ["start", "end"] {
            let (spec, l) = layout(location, &[4, 6], &[2, 3]);
            // Inner chunk [0, 1] (columns 3..6 of rows 0..2) holds data; the rest is fill.
            let mut data = vec![9u8; 24];
            for r in 0..2 {
                for c in 3..6 {
                    data[r * 6 + c] = (r * 6 + c) as u8;
                }
            }
            let mut shard = Vec::new();
            encode_whole(&spec, DataType::U8, &[4, 6], &[9], &data, &mut shard).unwrap();
            assert_eq!(shard.len(), 6 + l.index_bytes(), "{location}");
            let range = l.index_range(shard.len() as u64).unwrap();
            let entries = l
                .decode_index(
                    &shard[range.start as usize..range.end as usize],
                    shard.len() as u64,
                    "s",
                )
                .unwrap();
            assert_eq!(entries.iter().filter(|e| e.is_some()).count(), 1);
            let mut back = vec![0u8; 24];
            decode_whole(&spec, DataType::U8, &[4, 6], &[9], &shard, &mut back).unwrap();
            assert_eq!(back, data, "{location}");
        }
    }

    #[test]
    fn hostile_indexes_name_the_inner_chunk() {
        let (_, l) = layout("end", &[4, 6], &[2, 3]);
        let index = |entries: &[(u64, u64)]| {
            let e: Vec<Option<Entry>> = entries
                .iter()
                .map(|&(offset, nbytes)| {
                    (offset != EMPTY || nbytes != EMPTY).then_some(Entry { offset, nbytes })
                })
                .collect();
            let mut out = Vec::new();
            l.encode_index(&e, &mut out).unwrap();
            out
        };
        let len = 100u64;
        let ok = index(&[(0, 6), (6, 6), (EMPTY, EMPTY), (6, 6)]);
        assert!(
            l.decode_index(&ok, len, "s").is_ok(),
            "the same bytes twice are fine"
        );
        for (entries, says) in [
            (
                vec![(0, 6), (90, 6), (EMPTY, EMPTY), (EMPTY, EMPTY)],
                "[0, 1]",
            ),
            (
                vec![(0, 6), (u64::MAX - 1, 6), (EMPTY, EMPTY), (EMPTY, EMPTY)],
                "[0, 1]",
            ),
            (
                vec![(0, 6), (3, 6), (EMPTY, EMPTY), (EMPTY, EMPTY)],
                "overlap",
            ),
            (
                vec![(EMPTY, EMPTY), (EMPTY, EMPTY), (EMPTY, EMPTY), (EMPTY, 3)],
                "[1, 1]",
            ),
        ] {
            let e = l
                .decode_index(&index(&entries), len, "shard c/0/0")
                .unwrap_err();
            assert!(
                e.message().contains(says) && e.message().contains("shard c/0/0"),
                "{e}"
            );
        }
        let mut bad = ok.clone();
        bad[5] ^= 0x10;
        let e = l.decode_index(&bad, len, "s").unwrap_err();
        assert!(e.message().contains("crc32c"), "{e}");
        assert!(l.decode_index(&ok[1..], len, "s").is_err());
    }
}
