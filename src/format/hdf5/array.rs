//! An HDF5 dataset as the API's [`Array`] (the design's B3), on the libhdf5
//! layer (`native`, whose shapes are C order: every vector is reversed on
//! the way there and back; buffers are the same bytes in both orders).
//!
//! Dimensions are the dataset's reversed; blocks are its chunks (a
//! contiguous, compact or virtual dataset gets the block size of the
//! options), clipped at the end as N5's; a block is present when its chunk
//! is allocated (when the dataset's storage is, for the others). Region
//! reads of chunked datasets whose filters Rust decodes go through the
//! region engine as byte ranges of the file ([`ObjectBlocks`]): libhdf5 is
//! asked, under its lock, only where each chunk is, and the chunks are read
//! with positional reads and decoded on the container's threads. Every
//! other read and every write goes through libhdf5 ([`WholeRegions`],
//! `H5Dread` and `H5Dwrite`), and every writing call flushes the file
//! before it returns.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::filters::{ChunkDecoder, ChunkEncoder};
use super::native::dataset::{ChunkLocation, Dataset, Layout};
use super::native::File;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::{Array, ObjectBlocks, Order, RegionIo, WholeRegions};
use crate::format::n5::block::{BlockHeader, BlockMode, DataBlock};
use crate::format::n5::metadata::DatasetAttributes;
use crate::format::Format;
use crate::geometry::{copy_box, fill_with, is_fill, Placement};
use crate::storage::{ByteRange, Store};

/// What the arrays of one HDF5 container share.
#[derive(Clone)]
pub(crate) struct ArrayContext {
    /// The file's directory as a store: chunk bytes are byte ranges of the
    /// object [`ArrayContext::key`] there.
    pub(crate) store: Arc<dyn Store>,
    /// The file's name in its directory (`None` when it is not UTF-8: then
    /// every read goes through libhdf5).
    pub(crate) key: Option<String>,
    /// Whether blocks all of the fill value are written where no chunk is
    /// allocated yet.
    pub(crate) write_empty: bool,
    /// The block size (N5 order) of datasets that are not chunked, where an
    /// entry exists and is above 0.
    pub(crate) default_block_size: Vec<u64>,
}

/// An open HDF5 dataset of one of the ten numeric types.
pub(crate) struct Hdf5Array {
    file: File,
    dataset: Dataset,
    context: ArrayContext,
    attributes: Arc<DatasetAttributes>,
    /// The Rust decoder of the dataset's chunks, when it has one.
    decoder: Option<ChunkDecoder>,
    /// The Rust encoder of whole chunks, when the filters allow one.
    encoder: Option<ChunkEncoder>,
    /// The stored size and filter mask of the chunks (C-order positions)
    /// whose location [`ObjectBlocks::source`] gave, until they are decoded.
    found: Mutex<HashMap<Vec<u64>, (u64, u32)>>,
}

impl fmt::Debug for Hdf5Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hdf5Array")
            .field("file", &self.file.path())
            .field("dataset", &self.dataset.path())
            .field("attributes", &self.attributes)
            .finish()
    }
}

/// `v` reversed: N5 order to C order and back.
fn rev(v: &[u64]) -> Vec<u64> {
    v.iter().rev().copied().collect()
}

impl Hdf5Array {
    /// The array of `dataset` of `file`: [`ErrorKind::Unsupported`] naming
    /// the HDF5 type unless it holds one of the ten numeric types,
    /// [`ErrorKind::InvalidMetadata`] when its blocks would be larger than
    /// N5 allows (2^31 bytes).
    pub(crate) fn new(file: File, dataset: Dataset, context: ArrayContext) -> Result<Hdf5Array> {
        let data_type = dataset.data_type()?;
        let d = dataset.description();
        let dimensions = rev(&d.shape);
        let block: Vec<u64> = match &d.chunk {
            Some(chunk) => rev(chunk),
            None => dimensions
                .iter()
                .enumerate()
                .map(|(i, &dim)| {
                    context
                        .default_block_size
                        .get(i)
                        .copied()
                        .filter(|&b| b > 0)
                        .unwrap_or(dim.clamp(1, i32::MAX as u64))
                })
                .collect(),
        };
        let block_size = block
            .iter()
            .map(|&b| u32::try_from(b).unwrap_or(u32::MAX))
            .collect();
        let attributes = DatasetAttributes::new(dimensions, block_size, data_type, d.compression())
            .map_err(|e| Error::invalid_metadata(format!("{}: {}", d.context, e.message())))?;
        let decoder = d.chunk_decoder();
        let encoder = d.chunk_encoder();
        Ok(Hdf5Array {
            file,
            dataset,
            context,
            attributes: Arc::new(attributes),
            decoder,
            encoder,
            found: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the dataset is chunked (its blocks are its chunks).
    fn chunked(&self) -> bool {
        self.dataset.description().layout == Layout::Chunked
    }

    /// The element offset (N5 order) of the block at `grid_pos`.
    fn block_offset(&self, grid_pos: &[u64]) -> Vec<u64> {
        grid_pos
            .iter()
            .zip(&self.attributes.block_size)
            .map(|(&p, &b)| p * b as u64)
            .collect()
    }

    /// The block size (N5 order).
    fn block_size(&self) -> Vec<u64> {
        self.attributes
            .block_size
            .iter()
            .map(|&b| b as u64)
            .collect()
    }

    /// The bytes of one element.
    fn elem(&self) -> usize {
        self.attributes.data_type.size()
    }

    /// Read the nominal box of the present block at `grid_pos` into `out`:
    /// a chunk Rust decodes is read with a positional read and decoded
    /// here; any other box is read by libhdf5. `false` when the chunk is
    /// not allocated (`out` untouched).
    fn read_present(&self, grid_pos: &[u64], nominal: &[u64], out: &mut [u8]) -> Result<bool> {
        if let (Some(decoder), true) = (&self.decoder, self.chunked()) {
            let c = rev(grid_pos);
            let Some(location) = self.dataset.chunk_location(&c)? else {
                return Ok(false);
            };
            let stored = self.dataset.read_stored_chunk(&c, &location)?;
            let block = self.block_size();
            if block == nominal {
                decoder.decode(&stored, location.filter_mask, &c, out)?;
            } else {
                let mut whole = vec![0u8; decoder.chunk_bytes()];
                decoder.decode(&stored, location.filter_mask, &c, &mut whole)?;
                let zero = vec![0u64; nominal.len()];
                copy_box(
                    &whole,
                    Placement {
                        shape: &block,
                        offset: &zero,
                    },
                    out,
                    Placement {
                        shape: nominal,
                        offset: &zero,
                    },
                    nominal,
                    self.elem(),
                );
            }
            return Ok(true);
        }
        if !self.block_exists(grid_pos)? {
            return Ok(false);
        }
        let offset = self.block_offset(grid_pos);
        self.dataset.read(&rev(&offset), &rev(nominal), out)?;
        Ok(true)
    }

    /// Write `data` (the nominal shape of the block at `grid_pos`, native
    /// order) through libhdf5 and flush, unless blocks all of the fill
    /// value are not to be written and `data` is one where no chunk is
    /// allocated.
    fn write_nominal(&self, grid_pos: &[u64], nominal: &[u64], data: &[u8]) -> Result<()> {
        if !self.context.write_empty
            && is_fill(data, self.fill())
            && !self.block_exists(grid_pos)?
        {
            return Ok(());
        }
        let offset = self.block_offset(grid_pos);
        self.dataset.write(&rev(&offset), &rev(nominal), data)
    }

    /// Where the chunk at `grid_pos` is stored, asked of libhdf5, with its
    /// size and filter mask kept for its decoding (see
    /// [`take_found`](Self::take_found)); `None` when it is not allocated.
    fn locate(&self, grid_pos: &[u64]) -> Result<Option<ChunkLocation>> {
        let c = rev(grid_pos);
        let location = self.dataset.chunk_location(&c)?;
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        match &location {
            Some(l) => found.insert(c, (l.size, l.filter_mask)),
            None => found.remove(&c),
        };
        Ok(location)
    }

    /// The size and filter mask of the chunk at `c` (C order) that
    /// [`ObjectBlocks::source`] found, else asked of libhdf5 again.
    fn take_found(&self, c: &[u64]) -> Result<(u64, u32)> {
        let known = self
            .found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(c);
        if let Some(known) = known {
            return Ok(known);
        }
        match self.dataset.chunk_location(c)? {
            Some(l) => Ok((l.size, l.filter_mask)),
            None => Err(Error::codec(format!(
                "{}: chunk {c:?} is no longer stored",
                self.dataset.context()
            ))),
        }
    }
}

impl Array for Hdf5Array {
    fn format(&self) -> Format {
        Format::Hdf5
    }

    fn attributes(&self) -> Arc<DatasetAttributes> {
        self.attributes.clone()
    }

    /// The N5 dataset members and, under `hdf5`, the dataset as HDF5
    /// states it (C order): `shape`, `maxshape` (null: unlimited),
    /// `chunks` (null when not chunked), `layout`, `filters`, and
    /// `storage_size`, the bytes its data take in the file.
    fn metadata(&self) -> Result<Value> {
        let d = self.dataset.description();
        let mut doc = self.attributes.to_json();
        let maxshape: Vec<Value> = d
            .max_shape
            .iter()
            .map(|m| m.map_or(Value::Null, Value::from))
            .collect();
        let filters: Vec<Value> = d
            .filters
            .iter()
            .map(|f| json!({"id": f.id, "name": f.name, "cd_values": f.cd_values}))
            .collect();
        doc.insert(
            "hdf5".into(),
            json!({
                "shape": d.shape,
                "maxshape": maxshape,
                "chunks": d.chunk,
                "layout": d.layout.name(),
                "filters": filters,
                "storage_size": self.dataset.storage_size(),
            }),
        );
        Ok(Value::Object(doc))
    }

    fn fill(&self) -> &[u8] {
        &self.dataset.description().fill_value
    }

    fn shard_shape(&self) -> Vec<u64> {
        self.block_size()
    }

    /// `H5Dset_extent` within the maximum dimensions (shrinking discards
    /// the data outside); beyond them [`ErrorKind::Unsupported`] naming
    /// them.
    fn resize(&self, dimensions: &[u64]) -> Result<Arc<dyn Array>> {
        let mut dataset = self.file.open_dataset(self.dataset.path())?;
        dataset.set_extent(&rev(dimensions))?;
        Ok(Arc::new(Hdf5Array::new(
            self.file.clone(),
            dataset,
            self.context.clone(),
        )?))
    }

    /// The file's name: every block is a part of the one file.
    fn block_key(&self, _grid_pos: &[u64]) -> String {
        self.context.key.clone().unwrap_or_default()
    }

    fn block_exists(&self, grid_pos: &[u64]) -> Result<bool> {
        if self.chunked() {
            self.dataset.chunk_allocated(&rev(grid_pos))
        } else {
            self.dataset.storage_allocated()
        }
    }

    fn read_block(&self, grid_pos: &[u64]) -> Result<Option<DataBlock>> {
        let nominal = self.attributes.block_shape(grid_pos)?;
        let count: u64 = nominal.iter().product();
        let mut data = vec![0u8; count as usize * self.elem()];
        if !self.read_present(grid_pos, &nominal, &mut data)? {
            return Ok(None);
        }
        Ok(Some(DataBlock {
            header: header(&nominal),
            data,
        }))
    }

    /// Mode 0 and the nominal shape, for a present block.
    fn block_header(&self, grid_pos: &[u64]) -> Result<Option<BlockHeader>> {
        let nominal = self.attributes.block_shape(grid_pos)?;
        Ok(self.block_exists(grid_pos)?.then(|| header(&nominal)))
    }

    fn read_block_into(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<bool> {
        let nominal = self.attributes.block_shape(grid_pos)?;
        if self.read_present(grid_pos, &nominal, out)? {
            return Ok(true);
        }
        fill_with(out, self.fill());
        Ok(false)
    }

    /// The fill value over the part of the nominal box `shape` does not
    /// reach; what `shape` holds beyond the dataset's end is left out.
    fn write_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        let nominal = self.attributes.block_shape(grid_pos)?;
        if shape == nominal {
            return self.write_nominal(grid_pos, &nominal, data);
        }
        let elem = self.elem();
        let count: u64 = nominal.iter().product();
        let mut buf = vec![0u8; count as usize * elem];
        fill_with(&mut buf, self.fill());
        let extent: Vec<u64> = shape
            .iter()
            .zip(&nominal)
            .map(|(&s, &n)| s.min(n))
            .collect();
        let zero = vec![0u64; shape.len()];
        copy_box(
            data,
            Placement {
                shape,
                offset: &zero,
            },
            &mut buf,
            Placement {
                shape: &nominal,
                offset: &zero,
            },
            &extent,
            elem,
        );
        self.write_nominal(grid_pos, &nominal, &buf)
    }

    /// Writes the fill value over a present block (HDF5 cannot free a
    /// chunk: it stays present).
    fn delete_block(&self, grid_pos: &[u64]) -> Result<bool> {
        if !self.block_exists(grid_pos)? {
            return Ok(false);
        }
        let nominal = self.attributes.block_shape(grid_pos)?;
        let count: u64 = nominal.iter().product();
        let mut buf = vec![0u8; count as usize * self.elem()];
        fill_with(&mut buf, self.fill());
        let offset = self.block_offset(grid_pos);
        self.dataset.write(&rev(&offset), &rev(&nominal), &buf)?;
        Ok(true)
    }

    /// The allocated chunks; every block of a dataset that is not chunked
    /// when its storage is allocated.
    fn list_blocks(&self) -> Result<Vec<Vec<u64>>> {
        if self.chunked() {
            let mut out: Vec<Vec<u64>> = self
                .dataset
                .allocated_chunks()?
                .iter()
                .map(|c| rev(c))
                .collect();
            out.sort_unstable();
            return Ok(out);
        }
        if !self.dataset.storage_allocated()? {
            return Ok(Vec::new());
        }
        let grid = self.attributes.grid_shape();
        let total = grid.iter().try_fold(1u64, |a, &g| a.checked_mul(g));
        // Every block holds at least one element stored in the file (or,
        // for a virtual dataset, in its sources): a grid larger than the
        // file's bytes is not listed.
        let limit = self.file.inner().size()?.max(1 << 20);
        let Some(total) = total.filter(|&t| t <= limit) else {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{}: a grid of {grid:?} blocks is too large to list; choose a larger \
                     hdf5.default_block_size",
                    self.dataset.context()
                ),
            ));
        };
        let mut out = Vec::with_capacity(total as usize);
        let mut pos = vec![0u64; grid.len()];
        for _ in 0..total {
            out.push(pos.clone());
            // Dimension 0 slowest, so the list comes out sorted.
            for d in (0..pos.len()).rev() {
                pos[d] += 1;
                if pos[d] < grid[d] {
                    break;
                }
                pos[d] = 0;
            }
        }
        Ok(out)
    }

    /// Chunks Rust decodes are byte ranges of the file; everything else is
    /// read by libhdf5.
    fn region(&self) -> RegionIo<'_> {
        if self.decoder.is_some() && self.chunked() && self.context.key.is_some() {
            RegionIo::Objects(self)
        } else {
            RegionIo::Whole(self)
        }
    }

    /// Written by libhdf5, which merges partial chunks itself.
    fn region_writes(&self) -> RegionIo<'_> {
        RegionIo::Whole(self)
    }
}

/// The mode-0 header of a block of `shape`.
fn header(shape: &[u64]) -> BlockHeader {
    BlockHeader {
        mode: BlockMode::Default,
        size: shape.iter().map(|&s| s as u32).collect(),
        num_elements: shape.iter().product(),
    }
}

impl ObjectBlocks for Hdf5Array {
    fn store(&self) -> &dyn Store {
        &*self.context.store
    }

    fn key(&self, grid_pos: &[u64]) -> String {
        self.block_key(grid_pos)
    }

    /// Where libhdf5 says the chunk is (asked under its lock): the file and
    /// the chunk's byte range, checked against the file's size; `None`
    /// when it is not allocated.
    fn source(&self, grid_pos: &[u64]) -> Result<Option<(String, Option<ByteRange>)>> {
        Ok(self.locate(grid_pos)?.map(|location| {
            let range = ByteRange::Span {
                offset: location.offset,
                len: location.size,
            };
            (self.block_key(grid_pos), Some(range))
        }))
    }

    /// The chunk's bytes read from the file libhdf5 has open, where it
    /// says the chunk is (asked under its lock), with a positional read
    /// beside the other decoding threads' reads; `memory_only` reads only
    /// from the page cache.
    fn read_stored_into(
        &self,
        grid_pos: &[u64],
        buf: &mut Vec<u8>,
        memory_only: bool,
    ) -> Result<Option<bool>> {
        let Some(location) = self.locate(grid_pos)? else {
            return Ok(Some(false));
        };
        let c = rev(grid_pos);
        let read = self
            .dataset
            .read_stored_chunk_into(&c, &location, buf, memory_only)?;
        Ok(read.then_some(true))
    }

    /// The whole chunk: HDF5 stores edge chunks whole.
    fn buffer_shape(&self, _grid_pos: &[u64], _nominal: &[u64]) -> Vec<u64> {
        self.block_size()
    }

    /// A chunk stored without any filter applied, of the whole chunk's
    /// size: its elements from byte 0, in the stored byte order.
    fn stored_elements(&self, grid_pos: &[u64], stored: &[u8]) -> Result<Option<(usize, Order)>> {
        let Some(decoder) = &self.decoder else {
            return Ok(None);
        };
        let c = rev(grid_pos);
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        let Some(&(size, mask)) = found.get(&c) else {
            return Ok(None);
        };
        if !decoder.stores_plain(mask, &c)
            || size != stored.len() as u64
            || stored.len() != decoder.chunk_bytes()
        {
            return Ok(None);
        }
        found.remove(&c);
        let order = if decoder.swaps() {
            Order::Swapped
        } else {
            Order::Native
        };
        Ok(Some((0, order)))
    }

    /// The chunk decoded in Rust (filters and byte order, honouring the
    /// chunk's filter mask and the layout's "don't filter partial edge
    /// chunks"), after checking that as many bytes were read as libhdf5
    /// says are stored.
    fn decode(&self, grid_pos: &[u64], stored: &[u8], out: &mut [u8]) -> Result<Order> {
        let decoder = self.decoder.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!(
                    "{}: the chunks are not decoded in Rust",
                    self.dataset.context()
                ),
            )
        })?;
        let c = rev(grid_pos);
        let (size, mask) = self.take_found(&c)?;
        if stored.len() as u64 != size {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "{}: chunk {c:?}: {} bytes read where {size} are stored (the file was cut \
                     short or changed)",
                    self.dataset.context(),
                    stored.len()
                ),
            ));
        }
        decoder.decode(stored, mask, &c, out)?;
        Ok(Order::Native)
    }

    /// Chunks are ranges of one local file, taken in file order when
    /// libhdf5 wrote them in order.
    fn read_by_decoders(&self) -> bool {
        true
    }

    fn write_order(&self) -> Order {
        Order::Native
    }

    /// The stored bytes of a whole chunk (native order), all filters
    /// applied, where Rust encodes the dataset's filters (deflate, shuffle,
    /// fletcher32); [`ErrorKind::Unsupported`] for other filters, which only
    /// libhdf5 applies ([`ObjectBlocks::put`] writes through it).
    fn encode(
        &self,
        grid_pos: &[u64],
        _shape: &[u64],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let Some(encoder) = &self.encoder else {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{}: the dataset's filters are applied by libhdf5 only",
                    self.dataset.context()
                ),
            ));
        };
        *out = encoder.encode(data, &rev(grid_pos))?;
        Ok(true)
    }

    /// Writes the block's nominal part of `data` (the whole chunk, native
    /// order) through libhdf5, without flushing ([`ObjectBlocks::finish_writes`]
    /// flushes).
    fn put(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let nominal = self.attributes.block_shape(grid_pos)?;
        let part: &[u8] = if shape == nominal {
            data
        } else {
            let count: u64 = nominal.iter().product();
            scratch.clear();
            scratch.resize(count as usize * self.elem(), 0);
            let zero = vec![0u64; nominal.len()];
            copy_box(
                data,
                Placement {
                    shape,
                    offset: &zero,
                },
                scratch,
                Placement {
                    shape: &nominal,
                    offset: &zero,
                },
                &nominal,
                self.elem(),
            );
            scratch
        };
        if !self.context.write_empty
            && is_fill(part, self.fill())
            && !self.block_exists(grid_pos)?
        {
            return Ok(());
        }
        let offset = self.block_offset(grid_pos);
        self.dataset.write_box(&rev(&offset), &rev(&nominal), part)
    }

    fn finish_writes(&self) -> Result<()> {
        self.dataset.flush()
    }
}

impl WholeRegions for Hdf5Array {
    /// `H5Dread` of the box.
    fn read_region(&self, offset: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        self.dataset.read(&rev(offset), &rev(shape), out)
    }

    /// `H5Dwrite` of the box, then one flush. When blocks all of the fill
    /// value are not to be written, the box is written block by block,
    /// leaving out the blocks it covers whole that are all of the fill
    /// value and not allocated.
    fn write_region(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        if self.context.write_empty || !self.chunked() {
            return self.dataset.write(&rev(offset), &rev(shape), data);
        }
        let elem = self.elem();
        let block = self.block_size();
        let n = shape.len();
        if shape.contains(&0) {
            return Ok(());
        }
        let first: Vec<u64> = (0..n).map(|d| offset[d] / block[d]).collect();
        let last: Vec<u64> = (0..n)
            .map(|d| (offset[d] + shape[d] - 1) / block[d])
            .collect();
        let mut pos = first.clone();
        let mut buf = Vec::new();
        loop {
            let nominal = self.attributes.block_shape(&pos)?;
            let start = self.block_offset(&pos);
            let lo: Vec<u64> = (0..n).map(|d| start[d].max(offset[d])).collect();
            let extent: Vec<u64> = (0..n)
                .map(|d| (start[d] + nominal[d]).min(offset[d] + shape[d]) - lo[d])
                .collect();
            let in_region: Vec<u64> = (0..n).map(|d| lo[d] - offset[d]).collect();
            let count: u64 = extent.iter().product();
            buf.clear();
            buf.resize(count as usize * elem, 0);
            let zero = vec![0u64; n];
            copy_box(
                data,
                Placement {
                    shape,
                    offset: &in_region,
                },
                &mut buf,
                Placement {
                    shape: &extent,
                    offset: &zero,
                },
                &extent,
                elem,
            );
            let skip =
                extent == nominal && is_fill(&buf, self.fill()) && !self.block_exists(&pos)?;
            if !skip {
                self.dataset.write_box(&rev(&lo), &rev(&extent), &buf)?;
            }
            // The next block, dimension 0 fastest.
            let mut d = 0;
            loop {
                if d == n {
                    return self.dataset.flush();
                }
                pos[d] += 1;
                if pos[d] <= last[d] {
                    break;
                }
                pos[d] = first[d];
                d += 1;
            }
        }
    }
}
