//! HDF5 filter pipelines in Rust, without libhdf5: decoding a chunk's
//! stored bytes into its elements, and encoding whole chunks for direct
//! chunk writes. Decoding covers deflate (a zlib stream, through the
//! crate's codecs), shuffle, fletcher32 (checked), zstd (filter 32015:
//! zstd frames) and blosc (filter 32001: blosc1 buffers), in any order the
//! pipeline has them, honouring a chunk's filter mask (bit i set: filter i
//! was skipped) and the layout flag "don't filter partial edge chunks".
//! Encoding covers deflate, shuffle and fletcher32. Both leave the
//! parallelism to the caller: nothing here takes a lock.

use std::cell::RefCell;

use crate::codec::Compression;
use crate::error::{Error, Result};

/// The byte order of stored elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ByteOrder {
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
}

/// One filter of a dataset's pipeline, as the file states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Filter {
    /// The filter identifier (1 deflate, 2 shuffle, 3 fletcher32, 32015
    /// zstd, ...).
    pub(crate) id: i32,
    /// Its name (may be empty for filters libhdf5 does not know).
    pub(crate) name: String,
    /// Its client data values.
    pub(crate) cd_values: Vec<u32>,
    /// Its flags (1: optional).
    pub(crate) flags: u32,
}

/// HDF5's filter identifiers.
pub(crate) mod id {
    /// deflate (zlib).
    pub(crate) const DEFLATE: i32 = 1;
    /// shuffle.
    pub(crate) const SHUFFLE: i32 = 2;
    /// fletcher32 checksum.
    pub(crate) const FLETCHER32: i32 = 3;
    /// The registered zstd filter.
    pub(crate) const ZSTD: i32 = 32015;
    /// The registered blosc (1) filter.
    pub(crate) const BLOSC: i32 = 32001;
}

/// One filter of a pipeline this module can run.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// deflate at a level (for encoding).
    Deflate(u32),
    /// shuffle of elements of this many bytes.
    Shuffle(usize),
    /// fletcher32: 4 checksum bytes after the data.
    Fletcher32,
    /// zstd frames.
    Zstd,
    /// blosc1 buffers.
    Blosc,
}

/// The steps of `filters`, if every one is among those this module runs.
fn steps(filters: &[Filter], elem_size: usize) -> Option<Vec<Step>> {
    filters
        .iter()
        .map(|f| match f.id {
            id::DEFLATE => Some(Step::Deflate(f.cd_values.first().copied().unwrap_or(6))),
            id::SHUFFLE => Some(Step::Shuffle(
                f.cd_values
                    .first()
                    .map(|&n| n as usize)
                    .filter(|&n| n > 0)
                    .unwrap_or(elem_size),
            )),
            id::FLETCHER32 => Some(Step::Fletcher32),
            id::ZSTD => Some(Step::Zstd),
            id::BLOSC => Some(Step::Blosc),
            _ => None,
        })
        .collect()
}

/// HDF5's Fletcher-32 checksum (`H5_checksum_fletcher32`): 16-bit words,
/// big-endian, the odd last byte as the high byte of a word.
pub(crate) fn fletcher32(data: &[u8]) -> u32 {
    let mut sum1: u32 = 0;
    let mut sum2: u32 = 0;
    let mut words = data.chunks_exact(2);
    loop {
        let mut n = 0;
        for w in words.by_ref().take(360) {
            sum1 += u32::from(u16::from_be_bytes([w[0], w[1]]));
            sum2 += sum1;
            n += 1;
        }
        if n == 0 {
            break;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let [last] = words.remainder() {
        sum1 += u32::from(*last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// Undoes shuffle: byte `b` of element `i` was at `b * n + i` (`n`
/// elements of `size` bytes); the bytes after the last whole element stay
/// where they are.
#[cfg(test)]
fn unshuffle(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = vec![0u8; data.len()];
    unshuffle_into(data, &mut out, size);
    out
}

/// [`unshuffle`] of `data` into `out` (of the same length).
fn unshuffle_into(data: &[u8], out: &mut [u8], size: usize) {
    let n = if size > 1 { data.len() / size } else { 0 };
    let whole = n * size;
    match size {
        _ if n == 0 => {}
        2 => {
            let (lo, hi) = data[..whole].split_at(n);
            for ((d, &l), &h) in out[..whole].chunks_exact_mut(2).zip(lo).zip(hi) {
                d[0] = l;
                d[1] = h;
            }
        }
        _ => {
            for (i, d) in out[..whole].chunks_exact_mut(size).enumerate() {
                for (b, byte) in d.iter_mut().enumerate() {
                    *byte = data[b * n + i];
                }
            }
        }
    }
    out[whole..].copy_from_slice(&data[whole..]);
}

/// Shuffles: byte `b` of element `i` goes to `b * n + i`.
fn shuffle(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = data.to_vec();
    let n = data.len() / size.max(1);
    if size > 1 && n > 1 {
        for b in 0..size {
            for i in 0..n {
                out[b * n + i] = data[i * size + b];
            }
        }
    }
    out
}

/// Reverses the bytes of every `size`-byte element of `buf`.
fn swap_elements(buf: &mut [u8], size: usize) {
    if size > 1 {
        for e in buf.chunks_exact_mut(size) {
            e.reverse();
        }
    }
}

/// The stored byte order of elements is not the machine's.
fn needs_swap(order: ByteOrder) -> bool {
    match order {
        ByteOrder::Little => cfg!(target_endian = "big"),
        ByteOrder::Big => cfg!(target_endian = "little"),
    }
}

/// What both directions need to know of a chunked dataset.
#[derive(Clone, Debug)]
struct Geometry {
    steps: Vec<Step>,
    elem_size: usize,
    swap: bool,
    chunk: Vec<u64>,
    chunk_bytes: usize,
    shape: Vec<u64>,
    partial_unfiltered: bool,
}

impl Geometry {
    fn new(
        filters: &[Filter],
        elem_size: usize,
        order: ByteOrder,
        chunk: &[u64],
        shape: &[u64],
        partial_unfiltered: bool,
    ) -> Option<Geometry> {
        let chunk_bytes = chunk
            .iter()
            .try_fold(elem_size as u64, |a, &c| a.checked_mul(c))
            .and_then(|b| usize::try_from(b).ok())?;
        Some(Geometry {
            steps: steps(filters, elem_size)?,
            elem_size,
            swap: needs_swap(order),
            chunk: chunk.to_vec(),
            chunk_bytes,
            shape: shape.to_vec(),
            partial_unfiltered,
        })
    }

    /// The chunk at `grid_pos` (C order) reaches beyond the dataset.
    fn is_partial(&self, grid_pos: &[u64]) -> bool {
        grid_pos
            .iter()
            .zip(&self.chunk)
            .zip(&self.shape)
            .any(|((&p, &c), &d)| p.saturating_add(1).saturating_mul(c) > d)
    }

    /// The steps applied to the chunk at `grid_pos` with `filter_mask`,
    /// each with the size of its input when encoding, where it is known:
    /// the chunk's size grows by 4 with fletcher32 and is unknown after a
    /// compressor.
    fn active(&self, filter_mask: u32, grid_pos: &[u64]) -> Vec<(&Step, Option<usize>)> {
        if self.partial_unfiltered && self.is_partial(grid_pos) {
            return Vec::new();
        }
        let mut size = Some(self.chunk_bytes);
        let mut out = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            if i < 32 && filter_mask >> i & 1 == 1 {
                continue;
            }
            out.push((step, size));
            size = match step {
                Step::Fletcher32 => size.map(|s| s + 4),
                Step::Shuffle(_) => size,
                Step::Deflate(_) | Step::Zstd | Step::Blosc => None,
            };
        }
        out
    }

    /// Whether every compressor of the pipeline (all filters applied) has
    /// an input of known size, that is, no compressor follows another.
    fn sizes_known(&self) -> bool {
        self.active(0, &[]).iter().all(|(step, size)| {
            size.is_some() || !matches!(step, Step::Deflate(_) | Step::Zstd | Step::Blosc)
        })
    }
}

/// Decodes the stored bytes of a chunked dataset's chunks into the chunk's
/// elements in native byte order, for datasets whose every filter is one
/// this module runs.
#[derive(Clone, Debug)]
pub(crate) struct ChunkDecoder {
    geometry: Geometry,
    context: String,
}

impl ChunkDecoder {
    /// The decoder of a chunked dataset with these filters (in pipeline
    /// order), element size, stored byte order, chunk shape and current
    /// shape (both C order), and "don't filter partial edge chunks" flag;
    /// `None` when a filter is not among deflate, shuffle, fletcher32,
    /// zstd and blosc, when a compressor follows another (the size it
    /// decodes to would be unknown), or when the chunk's size does not fit
    /// in memory.
    pub(crate) fn new(
        filters: &[Filter],
        elem_size: usize,
        order: ByteOrder,
        chunk: &[u64],
        shape: &[u64],
        partial_unfiltered: bool,
    ) -> Option<ChunkDecoder> {
        Geometry::new(filters, elem_size, order, chunk, shape, partial_unfiltered)
            .filter(Geometry::sizes_known)
            .map(|geometry| ChunkDecoder {
                geometry,
                context: "an HDF5 dataset".into(),
            })
    }

    /// The bytes of one decoded chunk (a whole chunk, also at the edges).
    pub(crate) fn chunk_bytes(&self) -> usize {
        self.geometry.chunk_bytes
    }

    /// Decodes `stored`, the bytes of the chunk at `grid_pos` (C order)
    /// stored with `filter_mask`, into `out` (exactly
    /// [`chunk_bytes`](Self::chunk_bytes) long): the chunk's elements in
    /// native byte order. Damaged or short data and a failed checksum are
    /// [`ErrorKind::Codec`](crate::error::ErrorKind::Codec) errors; nothing is
    /// decoded beyond the sizes the chunk shape gives.
    pub(crate) fn decode(
        &self,
        stored: &[u8],
        filter_mask: u32,
        grid_pos: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        self.decode_chunk(stored, filter_mask, grid_pos, out)
            .map_err(|e| e.context(format!("{}: chunk {grid_pos:?}", self.context)))
    }

    /// Whether the chunk at `grid_pos` (C order) stored with `filter_mask`
    /// is stored as its plain elements (no filter applied to it), in the
    /// stored byte order ([`ChunkDecoder::swaps`]).
    pub(crate) fn stores_plain(&self, filter_mask: u32, grid_pos: &[u64]) -> bool {
        self.geometry.active(filter_mask, grid_pos).is_empty()
    }

    /// Whether the stored byte order of elements is not this machine's.
    pub(crate) fn swaps(&self) -> bool {
        self.geometry.swap
    }

    /// Names the dataset (`"HDF5 file '...', object '...'"`) in the
    /// messages of errors.
    pub(crate) fn with_context(mut self, context: &str) -> ChunkDecoder {
        self.context = context.to_string();
        self
    }

    fn decode_chunk(
        &self,
        stored: &[u8],
        filter_mask: u32,
        grid_pos: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        let g = &self.geometry;
        if out.len() != g.chunk_bytes {
            return Err(Error::new(
                crate::error::ErrorKind::BufferSize,
                format!(
                    "a chunk decodes to {} bytes, not {}",
                    g.chunk_bytes,
                    out.len()
                ),
            ));
        }
        let active = g.active(filter_mask, grid_pos);
        SCRATCH.with_borrow_mut(|(a, b)| {
            let result = undo_steps(&active, stored, a, b, out);
            // A scratch buffer that grew beyond a chunk of this size
            // (a huge chunk) is not kept for the thread's lifetime.
            for buf in [a, b] {
                if buf.capacity() > KEEP_SCRATCH {
                    *buf = Vec::new();
                }
            }
            result
        })?;
        if g.swap {
            crate::geometry::swap_in_place(out, g.elem_size);
        }
        Ok(())
    }
}

thread_local! {
    /// Two buffers for the steps of this thread's chunk decoding that do not
    /// write the chunk's elements themselves, reused from chunk to chunk.
    static SCRATCH: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A [`SCRATCH`] buffer that grew beyond this is released after its chunk.
const KEEP_SCRATCH: usize = 64 << 20;

/// Where the data of a step is: the stored bytes, a scratch buffer, or
/// the caller's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    Stored,
    A,
    B,
    Out,
}

/// The scratch buffer a step writes to when its input is at `at`.
fn other(at: At) -> At {
    if at == At::A {
        At::B
    } else {
        At::A
    }
}

/// The places a step's data can be in.
struct Places<'x> {
    stored: &'x [u8],
    a: &'x mut Vec<u8>,
    b: &'x mut Vec<u8>,
    out: &'x mut [u8],
}

impl Places<'_> {
    /// The input (`from`, its first `len` bytes) and the output (`to`,
    /// resized to `to_len` when a scratch buffer) of one step.
    fn pair(&mut self, from: At, len: usize, to: At, to_len: usize) -> (&[u8], &mut [u8]) {
        // Grown to exactly what the step needs (not doubled, as a Vec
        // grows by default): a decode allocates no more than its chunk.
        fn grow(v: &mut Vec<u8>, to_len: usize) -> &mut [u8] {
            if v.len() < to_len {
                v.reserve_exact(to_len - v.len());
                v.resize(to_len, 0);
            }
            &mut v[..to_len]
        }
        match (from, to) {
            (At::Stored, At::A) => (&self.stored[..len], grow(self.a, to_len)),
            (At::Stored, At::B) => (&self.stored[..len], grow(self.b, to_len)),
            (At::Stored, At::Out) => (&self.stored[..len], &mut self.out[..to_len]),
            (At::A, At::B) => (&self.a[..len], grow(self.b, to_len)),
            (At::A, At::Out) => (&self.a[..len], &mut self.out[..to_len]),
            (At::B, At::A) => (&self.b[..len], grow(self.a, to_len)),
            (At::B, At::Out) => (&self.b[..len], &mut self.out[..to_len]),
            _ => unreachable!("a step writes to another place than its input"),
        }
    }

    /// The data at `at`.
    fn at(&self, at: At) -> &[u8] {
        match at {
            At::Stored => self.stored,
            At::A => self.a,
            At::B => self.b,
            At::Out => self.out,
        }
    }
}

/// Undoes `active` (the steps as applied when writing, each with the size
/// of its input then) on `stored`, last first, the last step writing
/// straight into `out` where it gives exactly its bytes; the checksum of
/// fletcher32 is checked and dropped without a copy.
fn undo_steps(
    active: &[(&Step, Option<usize>)],
    stored: &[u8],
    a: &mut Vec<u8>,
    b: &mut Vec<u8>,
    out: &mut [u8],
) -> Result<()> {
    let out_len = out.len();
    let mut places = Places { stored, a, b, out };
    let (mut at, mut len) = (At::Stored, stored.len());
    for (k, &(step, size)) in active.iter().rev().enumerate() {
        let last = k + 1 == active.len();
        match step {
            Step::Deflate(_) | Step::Zstd | Step::Blosc => {
                let Some(size) = size else {
                    return Err(Error::codec(format!(
                        "{} filter: follows another compressor, so the size it decodes to is \
                         unknown",
                        step_name(step)
                    )));
                };
                let codec = match step {
                    Step::Deflate(_) => Compression::Gzip {
                        level: 6,
                        use_zlib: true,
                    },
                    Step::Zstd => Compression::Zstd { level: 3 },
                    _ => Compression::Blosc {
                        cname: "blosclz".into(),
                        clevel: 5,
                        shuffle: 0,
                        blocksize: 0,
                    },
                };
                let to = if last && size == out_len {
                    At::Out
                } else {
                    other(at)
                };
                let (input, output) = places.pair(at, len, to, size);
                codec
                    .decode(input, output)
                    .map_err(|e| e.context(format!("{} filter", step_name(step))))?;
                (at, len) = (to, size);
            }
            Step::Shuffle(n) => {
                if size.is_some_and(|s| s != len) {
                    return Err(Error::codec(format!(
                        "shuffle filter: {len} bytes where {} belong",
                        size.unwrap_or(0)
                    )));
                }
                let to = if last && len == out_len {
                    At::Out
                } else {
                    other(at)
                };
                let (input, output) = places.pair(at, len, to, len);
                unshuffle_into(input, output, *n);
                at = to;
            }
            Step::Fletcher32 => {
                let body_len = len.checked_sub(4).filter(|&b| size.is_none_or(|s| s == b));
                let Some(body_len) = body_len else {
                    return Err(Error::codec(format!(
                        "fletcher32 filter: {len} bytes where {} belong",
                        size.map_or("at least 4".to_string(), |s| (s + 4).to_string())
                    )));
                };
                let (body, sum) = places.at(at)[..len].split_at(body_len);
                let stored_sum = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
                let computed = fletcher32(body);
                // HDF5 before 1.6.3 wrote the two halves byte-swapped.
                let old = ((computed & 0x00ff_00ff) << 8) | ((computed >> 8) & 0x00ff_00ff);
                if stored_sum != computed && stored_sum != old {
                    return Err(Error::codec(format!(
                        "fletcher32 filter: checksum {stored_sum:#010x} stored, {computed:#010x} \
                         computed: the chunk is damaged"
                    )));
                }
                len = body_len;
            }
        }
    }
    if at == At::Out {
        return Ok(());
    }
    // Unfiltered chunks may be stored longer than the chunk; filtered ones
    // decode to exactly its bytes.
    if len == out_len || (active.is_empty() && len > out_len) {
        let (data, out) = places.pair(at, out_len, At::Out, out_len);
        out.copy_from_slice(data);
        return Ok(());
    }
    Err(Error::codec(format!(
        "the chunk has {len} bytes, {out_len} expected"
    )))
}

/// A chunked HDF5 dataset's chunk storage as its file states it, and the
/// decoding of its chunks' stored bytes as libn5 does it in Rust when it
/// reads chunks of an HDF5 file itself (region reads of chunked datasets
/// whose filters it runs, with bytes straight from the file). Public so
/// that the fuzz targets reach that decoder with hostile pipelines and
/// chunks, as [`inspect_shard`](super::inspect_shard) is for the shard
/// writer; applications read HDF5 files through
/// `Dataset`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkPipeline {
    /// The filters in the order they are applied when writing, each as
    /// its identifier (1 deflate, 2 shuffle, 3 fletcher32, 32015 zstd,
    /// 32001 blosc, any other) and client data values.
    pub filters: Vec<(i32, Vec<u32>)>,
    /// The bytes of one stored element.
    pub elem_size: usize,
    /// The elements are stored big-endian (else little-endian).
    pub big_endian: bool,
    /// The chunk shape (C order).
    pub chunk: Vec<u64>,
    /// The dataset's current shape (C order).
    pub shape: Vec<u64>,
    /// The layout flag "don't filter partial edge chunks": chunks reaching
    /// beyond `shape` are stored without filters.
    pub partial_edge_chunks_unfiltered: bool,
}

impl ChunkPipeline {
    /// The decoder libn5 reads these chunks with, if it decodes them.
    fn decoder(&self) -> Option<ChunkDecoder> {
        let filters: Vec<Filter> = self
            .filters
            .iter()
            .map(|(id, cd_values)| Filter {
                id: *id,
                name: String::new(),
                cd_values: cd_values.clone(),
                flags: 0,
            })
            .collect();
        let order = if self.big_endian {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        ChunkDecoder::new(
            &filters,
            self.elem_size,
            order,
            &self.chunk,
            &self.shape,
            self.partial_edge_chunks_unfiltered,
        )
    }

    /// The bytes one chunk decodes to (a whole chunk, also at the edges);
    /// `None` when libn5 does not decode these chunks in Rust (and
    /// libhdf5 reads them): a filter other than deflate, shuffle,
    /// fletcher32, zstd and blosc, a compressor after another, or a chunk
    /// whose size does not fit in memory.
    pub fn chunk_bytes(&self) -> Option<usize> {
        self.decoder().map(|d| d.chunk_bytes())
    }

    /// Decodes `stored`, the stored bytes of the chunk at `grid_pos` (C
    /// order) written with `filter_mask` (bit i set: filter i was not
    /// applied), into `out`, exactly [`chunk_bytes`](Self::chunk_bytes)
    /// long: the chunk's elements in native byte order. Errors:
    /// [`ErrorKind::Unsupported`](crate::error::ErrorKind::Unsupported) when
    /// `chunk_bytes` is `None`,
    /// [`ErrorKind::BufferSize`](crate::error::ErrorKind::BufferSize) for an `out`
    /// of another length, [`ErrorKind::Codec`](crate::error::ErrorKind::Codec) for
    /// damaged or short data and failed checksums. Allocates no more than
    /// the larger of `stored` and the chunk, plus what a codec keeps.
    pub fn decode(
        &self,
        stored: &[u8],
        filter_mask: u32,
        grid_pos: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        let decoder = self.decoder().ok_or_else(|| {
            Error::new(
                crate::error::ErrorKind::Unsupported,
                format!(
                    "an HDF5 pipeline of filters {:?} is not decoded in Rust",
                    self.filters.iter().map(|f| f.0).collect::<Vec<_>>()
                ),
            )
        })?;
        decoder.decode(stored, filter_mask, grid_pos, out)
    }
}

/// The name of a step, for messages.
fn step_name(step: &Step) -> &'static str {
    match step {
        Step::Deflate(_) => "deflate",
        Step::Shuffle(_) => "shuffle",
        Step::Fletcher32 => "fletcher32",
        Step::Zstd => "zstd",
        Step::Blosc => "blosc",
    }
}

/// Encodes whole chunks for direct chunk writes, for datasets whose
/// filters are only deflate, shuffle and fletcher32.
#[derive(Clone, Debug)]
pub(crate) struct ChunkEncoder {
    geometry: Geometry,
    context: String,
}

impl ChunkEncoder {
    /// As [`ChunkDecoder::new`]; `None` unless every filter is deflate (at
    /// a level 0..=9), shuffle or fletcher32.
    pub(crate) fn new(
        filters: &[Filter],
        elem_size: usize,
        order: ByteOrder,
        chunk: &[u64],
        shape: &[u64],
        partial_unfiltered: bool,
    ) -> Option<ChunkEncoder> {
        let geometry = Geometry::new(filters, elem_size, order, chunk, shape, partial_unfiltered)?;
        geometry
            .steps
            .iter()
            .all(|s| {
                matches!(
                    s,
                    Step::Deflate(0..=9) | Step::Shuffle(_) | Step::Fletcher32
                )
            })
            .then_some(ChunkEncoder {
                geometry,
                context: "an HDF5 dataset".into(),
            })
    }

    /// The bytes of one whole chunk (for the tests).
    #[cfg(test)]
    pub(crate) fn chunk_bytes(&self) -> usize {
        self.geometry.chunk_bytes
    }

    /// The stored bytes of the chunk at `grid_pos` (C order) whose elements
    /// (native byte order, the whole chunk, also at the edges) are `chunk`,
    /// with every filter applied (filter mask 0).
    pub(crate) fn encode(&self, chunk: &[u8], grid_pos: &[u64]) -> Result<Vec<u8>> {
        self.encode_chunk(chunk, grid_pos)
            .map_err(|e| e.context(format!("{}: chunk {grid_pos:?}", self.context)))
    }

    /// Names the dataset (`"HDF5 file '...', object '...'"`) in the
    /// messages of errors.
    pub(crate) fn with_context(mut self, context: &str) -> ChunkEncoder {
        self.context = context.to_string();
        self
    }

    fn encode_chunk(&self, chunk: &[u8], grid_pos: &[u64]) -> Result<Vec<u8>> {
        let g = &self.geometry;
        if chunk.len() != g.chunk_bytes {
            return Err(Error::new(
                crate::error::ErrorKind::BufferSize,
                format!("a chunk has {} bytes, not {}", g.chunk_bytes, chunk.len()),
            ));
        }
        let mut data = chunk.to_vec();
        if g.swap {
            swap_elements(&mut data, g.elem_size);
        }
        for (step, _) in g.active(0, grid_pos) {
            data = match step {
                Step::Shuffle(n) => shuffle(&data, *n),
                Step::Fletcher32 => {
                    let sum = fletcher32(&data);
                    data.extend_from_slice(&sum.to_le_bytes());
                    data
                }
                Step::Deflate(level) => {
                    let mut out = Vec::with_capacity(data.len() / 2 + 64);
                    Compression::Gzip {
                        level: *level as i32,
                        use_zlib: true,
                    }
                    .encode(&data, g.elem_size, &mut out)?;
                    out
                }
                Step::Zstd | Step::Blosc => {
                    return Err(Error::new(
                        crate::error::ErrorKind::Internal,
                        "the chunk encoder has no zstd or blosc",
                    ))
                }
            };
        }
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(id: i32, cd: &[u32]) -> Filter {
        Filter {
            id,
            name: String::new(),
            cd_values: cd.to_vec(),
            flags: 0,
        }
    }

    #[test]
    fn fletcher32_matches_hdf5() {
        // Small inputs by hand; chunks h5py wrote with fletcher32 are
        // checked against libhdf5 in the file tests.
        assert_eq!(fletcher32(b""), 0);
        assert_eq!(fletcher32(&[0x01, 0x02]), (0x0102 << 16) | 0x0102);
        // The odd last byte counts as the high byte of a word.
        assert_eq!(fletcher32(&[0x01, 0x02, 0x03]), {
            let s1 = 0x0102u32 + 0x0300;
            let s2 = 0x0102u32 + s1;
            (s2 << 16) | s1
        });
        // Long inputs fold the sums every 360 words; the result stays in 16+16 bits.
        let long: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let sum = fletcher32(&long);
        let (mut a, mut b) = (0u64, 0u64);
        for w in long.chunks_exact(2) {
            a = (a + u64::from(u16::from_be_bytes([w[0], w[1]]))) % 65535;
            b = (b + a) % 65535;
        }
        // Modulo 65535 the folded sums agree with the plain definition.
        assert_eq!(u64::from(sum & 0xffff) % 65535, a);
        assert_eq!(u64::from(sum >> 16) % 65535, b);
    }

    #[test]
    fn shuffle_round_trips_and_keeps_the_tail() {
        let data: Vec<u8> = (0..23u8).collect();
        for size in [1, 2, 4, 8] {
            let s = shuffle(&data, size);
            assert_eq!(unshuffle(&s, size), data, "element size {size}");
        }
        let s = shuffle(&[1, 2, 3, 4, 5], 2);
        assert_eq!(s, vec![1, 3, 2, 4, 5]);
        // An element size a file may state beyond the chunk: nothing to
        // shuffle, and nothing done per byte of that size.
        let started = std::time::Instant::now();
        assert_eq!(unshuffle(&data, u32::MAX as usize), data);
        assert_eq!(shuffle(&data, u32::MAX as usize), data);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn encode_then_decode_gives_the_chunk_back() {
        let chunk = [4u64, 6];
        let shape = [10u64, 9];
        let elem = 4;
        let data: Vec<u8> = (0..4 * 6 * 4).map(|i| (i % 13) as u8).collect();
        let pipelines: Vec<Vec<Filter>> = vec![
            vec![],
            vec![filter(id::SHUFFLE, &[4]), filter(id::DEFLATE, &[6])],
            vec![filter(id::DEFLATE, &[1])],
            vec![filter(id::FLETCHER32, &[])],
            vec![
                filter(id::SHUFFLE, &[4]),
                filter(id::DEFLATE, &[9]),
                filter(id::FLETCHER32, &[]),
            ],
            vec![filter(id::FLETCHER32, &[]), filter(id::DEFLATE, &[4])],
        ];
        for filters in pipelines {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                for partial_unfiltered in [false, true] {
                    let enc = ChunkEncoder::new(
                        &filters,
                        elem,
                        order,
                        &chunk,
                        &shape,
                        partial_unfiltered,
                    )
                    .unwrap();
                    let dec = ChunkDecoder::new(
                        &filters,
                        elem,
                        order,
                        &chunk,
                        &shape,
                        partial_unfiltered,
                    )
                    .unwrap();
                    for pos in [[0u64, 0], [2, 1]] {
                        let stored = enc.encode(&data, &pos).unwrap();
                        let mut out = vec![0u8; dec.chunk_bytes()];
                        dec.decode(&stored, 0, &pos, &mut out).unwrap();
                        assert_eq!(out, data, "{filters:?} {order:?} {pos:?}");
                        let raw = partial_unfiltered && pos == [2, 1];
                        if raw {
                            // A partial edge chunk is stored without filters.
                            let mut native = data.clone();
                            if needs_swap(order) {
                                swap_elements(&mut native, elem);
                            }
                            assert_eq!(stored, native);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn scratch_buffers_grow_to_what_a_chunk_needs_and_no_more() {
        // Deflate then fletcher32 (fletcher32 outermost): the inflated
        // bytes go through a scratch buffer before unshuffle writes the
        // chunk. Chunks that grow a little each time must not leave the
        // scratch buffers at twice their size, as a Vec's own growth would.
        let filters = vec![
            filter(id::SHUFFLE, &[2]),
            filter(id::DEFLATE, &[6]),
            filter(id::FLETCHER32, &[]),
        ];
        for rows in [400u64, 420, 450, 480] {
            let chunk = [rows, 1000];
            let enc =
                ChunkEncoder::new(&filters, 2, ByteOrder::Little, &chunk, &chunk, false).unwrap();
            let dec =
                ChunkDecoder::new(&filters, 2, ByteOrder::Little, &chunk, &chunk, false).unwrap();
            let data: Vec<u8> = (0..dec.chunk_bytes()).map(|i| (i % 251) as u8).collect();
            let stored = enc.encode(&data, &[0, 0]).unwrap();
            let mut out = vec![0u8; dec.chunk_bytes()];
            dec.decode(&stored, 0, &[0, 0], &mut out).unwrap();
            assert_eq!(out, data);
            let most = stored.len().max(dec.chunk_bytes());
            SCRATCH.with_borrow(|(a, b)| {
                assert!(
                    a.capacity() <= most && b.capacity() <= most,
                    "scratch of {} and {} bytes for a chunk of {most}",
                    a.capacity(),
                    b.capacity()
                );
            });
        }
    }

    #[test]
    fn the_filter_mask_skips_filters_and_damage_is_an_error() {
        let chunk = [8u64];
        let shape = [8u64];
        let filters = vec![filter(id::SHUFFLE, &[2]), filter(id::DEFLATE, &[6])];
        let dec = ChunkDecoder::new(&filters, 2, ByteOrder::Little, &chunk, &shape, false).unwrap();
        let data: Vec<u8> = (0..16u8).collect();
        let native = if cfg!(target_endian = "big") {
            let mut d = data.clone();
            swap_elements(&mut d, 2);
            d
        } else {
            data.clone()
        };
        // Deflate skipped (bit 1): the stored bytes are only shuffled.
        let stored = shuffle(&data, 2);
        let mut out = vec![0u8; 16];
        dec.decode(&stored, 0b10, &[0], &mut out).unwrap();
        assert_eq!(out, native);
        // Both skipped.
        dec.decode(&data, 0b11, &[0], &mut out).unwrap();
        assert_eq!(out, native);
        // Not a zlib stream.
        let err = dec.decode(&stored, 0, &[0], &mut out).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Codec, "{err}");
        // Too short raw data.
        let err = dec.decode(&data[..10], 0b11, &[0], &mut out).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::Codec, "{err}");
        // A damaged checksum.
        let f = vec![filter(id::FLETCHER32, &[])];
        let dec = ChunkDecoder::new(&f, 2, ByteOrder::Little, &chunk, &shape, false).unwrap();
        let mut stored = data.clone();
        stored.extend_from_slice(&fletcher32(&data).to_le_bytes());
        dec.decode(&stored, 0, &[0], &mut out).unwrap();
        stored[3] ^= 1;
        let err = dec.decode(&stored, 0, &[0], &mut out).unwrap_err();
        assert!(err.message().contains("checksum"), "{err}");
    }

    #[test]
    fn only_known_filters_are_decoded_and_fewer_encoded() {
        let chunk = [4u64];
        let f = |id| vec![filter(id, &[])];
        for id in [
            id::DEFLATE,
            id::SHUFFLE,
            id::FLETCHER32,
            id::ZSTD,
            id::BLOSC,
        ] {
            assert!(
                ChunkDecoder::new(&f(id), 1, ByteOrder::Little, &chunk, &chunk, false).is_some()
            );
        }
        for id in [4, 5, 6, 32004, 32008] {
            assert!(
                ChunkDecoder::new(&f(id), 1, ByteOrder::Little, &chunk, &chunk, false).is_none()
            );
        }
        for id in [id::ZSTD, id::BLOSC] {
            assert!(
                ChunkEncoder::new(&f(id), 1, ByteOrder::Little, &chunk, &chunk, false).is_none()
            );
        }
        // Two compressors: the first one's decoded size would be unknown.
        let two = vec![filter(id::DEFLATE, &[6]), filter(id::ZSTD, &[])];
        assert!(ChunkDecoder::new(&two, 1, ByteOrder::Little, &chunk, &chunk, false).is_none());
        // A chunk whose size overflows is refused.
        assert!(
            ChunkDecoder::new(&[], 8, ByteOrder::Little, &[u64::MAX, 2], &[1, 1], false).is_none()
        );
    }
}
