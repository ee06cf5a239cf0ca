//! The floors of the sharded Zarr v3 layout (`--format zarr3-sharded`):
//! the same bytes libn5 must read, read as the same ranges, with no N5 work,
//! and the shard geometry they and the report share.
//!
//! The array (see [`Job::zarr3_metadata`]) is stored as shards of
//! [`Job::shard`] at `vol/c/z/y/x` (Zarr's order), each holding inner
//! chunks of [`Job::block`] (bytes little endian + the codec) followed by
//! its index: a pair of little-endian u64 (offset, nbytes) per inner chunk
//! in C order of Zarr's dimensions (N5's dimension 0 fastest), then the
//! CRC-32C of those pairs.
//!
//! * read_all: on an object store every shard read whole (one GET each);
//!   on a local disk as read_region of the whole volume; every inner chunk
//!   decoded.
//! * read_blocks: per block, the index (the shard's last bytes: a suffix
//!   range; on an object store once per shard, as libn5 keeps the indexes
//!   it read over a network), then the inner chunk's range, decoded; one
//!   block at a time.
//! * read_region: on an object store a shard whose every inner chunk the
//!   region touches read whole (libn5's rule, [`touched_shards`]), while
//!   the rest is read; of a shard it touches in part (on a local disk, of
//!   every shard) the index, then the inner chunks it touches, neighbours
//!   at most [`COALESCE_GAP`] apart joined into ranges of at most
//!   [`COALESCE_MAX`] ([`COALESCE_MAX_REMOTE`] on an object store; libn5's
//!   constants and rule); the indexes first, all
//!   at once, then the ranges.
//! * write: every inner chunk encoded, each shard assembled with its index
//!   and written once (a file as libn5 writes it, or one PUT).
//!
//! As in [`crate::floor`], the I/O floor (FloorIo) only moves the bytes,
//! the codec floor (FloorCodec) also encodes or decodes every inner chunk
//! read, and the output floor (FloorOut) also copies every inner chunk to
//! its place in the output box. Local files are read with
//! `File::read_exact_at`, objects with libn5's own `Store` (`get_range`,
//! `get_into`, `put`), as many at once as libn5's `io_concurrency` (4 on a
//! local disk, 32 on an object store; single blocks one at a time), the
//! codec work and copies on at most the job's threads.

use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use n5::storage::{ByteRange, Store};

use crate::floor::{
    block_bytes, block_shape, io_err, parallel, place, positions_of, write_atomic, Coder, Encoders,
    Gate,
};
use crate::sys;
use crate::workload::{
    box_bytes, measure, retire_tree, shard_key, Codec, Impl, Job, Region, Report, Workload,
};

/// Inner chunks at most this many bytes apart are fetched in one range
/// (libn5's `COALESCE_GAP`, src/format/zarr3/shard.rs).
pub const COALESCE_GAP: u64 = 256 << 10;
/// The largest coalesced range (libn5's `COALESCE_MAX`).
pub const COALESCE_MAX: u64 = 2 << 20;
/// The largest coalesced range on an object store (libn5's
/// `COALESCE_MAX_REMOTE`).
pub const COALESCE_MAX_REMOTE: u64 = 8 << 20;
/// Over a network, a shard whose every inner chunk a read touches but that
/// it does not cover is read whole when it holds at most this many bytes
/// decoded (libn5's `WHOLE_SHARD_MAX`, src/region/sharded.rs).
const WHOLE_SHARD_MAX: u64 = 48 << 20;
/// The index entry of an inner chunk that is not stored.
const EMPTY: u64 = u64::MAX;

/// Inner chunks per shard in each dimension (N5 order).
fn per_shard(job: &Job) -> [u64; 3] {
    [0, 1, 2].map(|d| job.shard[d] / job.block[d])
}

/// Bytes of a shard's index: 16 per inner chunk and the checksum.
fn index_len(job: &Job) -> u64 {
    per_shard(job).iter().product::<u64>() * 16 + 4
}

/// The shard holding the inner chunk at grid position `c`.
fn shard_of(job: &Job, c: [u64; 3]) -> [u64; 3] {
    let n = per_shard(job);
    [0, 1, 2].map(|d| c[d] / n[d])
}

/// The index entry number of the inner chunk at grid position `c` in its
/// shard (C order of Zarr's dimensions: N5's dimension 0 fastest).
fn entry_number(job: &Job, c: [u64; 3]) -> usize {
    let n = per_shard(job);
    let l = [0, 1, 2].map(|d| c[d] % n[d]);
    ((l[2] * n[1] + l[1]) * n[0] + l[0]) as usize
}

/// The grid positions of the inner chunks of the shard at `s`, in index
/// order.
fn chunks_of(job: &Job, s: [u64; 3]) -> Vec<[u64; 3]> {
    let n = per_shard(job);
    let grid = job.grid();
    let mut out = Vec::new();
    for z in 0..n[2] {
        for y in 0..n[1] {
            for x in 0..n[0] {
                let c = [s[0] * n[0] + x, s[1] * n[1] + y, s[2] * n[2] + z];
                if (0..3).all(|d| c[d] < grid[d]) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// A shard's index: per entry number, `(offset, nbytes)` or `None` for an
/// inner chunk not stored.
type Index = Vec<Option<(u64, u64)>>;

/// The index `bytes` of a shard, checked (length, CRC-32C).
fn parse_index(job: &Job, bytes: &[u8]) -> Result<Index, String> {
    if bytes.len() as u64 != index_len(job) {
        return Err(format!(
            "a shard index of {} bytes, {} expected",
            bytes.len(),
            index_len(job)
        ));
    }
    let (pairs, crc) = bytes.split_at(bytes.len() - 4);
    if crc32c::crc32c(pairs) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err("a shard index's CRC-32C does not match".into());
    }
    let u64le = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    Ok(pairs
        .chunks_exact(16)
        .map(|e| {
            let (offset, nbytes) = (u64le(&e[..8]), u64le(&e[8..]));
            (offset != EMPTY || nbytes != EMPTY).then_some((offset, nbytes))
        })
        .collect())
}

/// The shards a read workload touches, each with whether it is read whole
/// (on an object store, when the workload's box touches every inner chunk
/// of it, and covers it or it holds at most [`WHOLE_SHARD_MAX`] bytes
/// decoded; libn5 reads every shard on a local disk as index and ranges):
/// deduplicated
/// for whole-volume and region reads; for single blocks one per block read
/// (repetitions included), never whole.
pub fn touched_shards(job: &Job) -> Vec<([u64; 3], bool)> {
    if job.workload == Workload::ReadBlocks {
        return job
            .positions
            .iter()
            .map(|&p| (shard_of(job, p), false))
            .collect();
    }
    let r = job.read_boxes().remove(0);
    let first = [0, 1, 2].map(|d| r.offset[d] / job.shard[d]);
    let last = [0, 1, 2].map(|d| (r.offset[d] + r.shape[d] - 1) / job.shard[d]);
    let mut out = Vec::new();
    for z in first[2]..=last[2] {
        for y in first[1]..=last[1] {
            for x in first[0]..=last[0] {
                let s = [x, y, z];
                // The box's first and last voxel in the shard, and the
                // shard's last voxel in the array, per dimension.
                let (mut covered, mut every_chunk) = (true, true);
                for (d, &sd) in s.iter().enumerate() {
                    let lo = sd * job.shard[d];
                    let hi = (lo + job.shard[d]).min(job.dims[d]);
                    let first = r.offset[d].max(lo);
                    let last = (r.offset[d] + r.shape[d]).min(hi) - 1;
                    let b = job.block[d];
                    covered &= r.offset[d] <= lo && hi <= r.offset[d] + r.shape[d];
                    every_chunk &= first / b == lo / b && last / b == (hi - 1) / b;
                }
                let raw = job.shard.iter().product::<u64>() * 2;
                let whole = covered || (every_chunk && raw <= WHOLE_SHARD_MAX);
                out.push((s, whole && job.is_remote()));
            }
        }
    }
    out
}

/// What a read workload of the sharded array needs at least, for the
/// report's request table.
#[derive(Clone, Copy, Debug)]
pub struct Needed {
    /// Inner chunks the workload touches (per call, repetitions included).
    pub chunks: u64,
    /// Their stored bytes (from the shards' indexes).
    pub chunk_bytes: u64,
    /// Shards it touches (per call for single blocks).
    pub shards: u64,
    /// Their bytes, each shard read whole.
    pub shard_bytes: u64,
}

/// [`Needed`] of `job` (a read of the array at `store`), from the shards'
/// sizes and indexes.
pub fn needed(job: &Job, store: &dyn Store) -> Result<Needed, String> {
    let mut indexes: std::collections::HashMap<[u64; 3], (u64, Index)> = Default::default();
    let mut shard = |s: [u64; 3]| -> Result<(u64, Index), String> {
        if let Some(known) = indexes.get(&s) {
            return Ok(known.clone());
        }
        let key = shard_key(s);
        let size = store
            .size(&key)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{}: missing", store.describe(&key)))?;
        let bytes = store
            .get_range(&key, ByteRange::Suffix(index_len(job)))
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{}: missing", store.describe(&key)))?;
        let known = (size, parse_index(job, &bytes)?);
        indexes.insert(s, known.clone());
        Ok(known)
    };
    let mut n = Needed {
        chunks: 0,
        chunk_bytes: 0,
        shards: 0,
        shard_bytes: 0,
    };
    for c in job.touched_blocks() {
        let (_, index) = shard(shard_of(job, c))?;
        n.chunks += 1;
        n.chunk_bytes += index[entry_number(job, c)].map_or(0, |e| e.1);
    }
    for (s, _) in touched_shards(job) {
        n.shards += 1;
        n.shard_bytes += shard(s)?.0;
    }
    Ok(n)
}

/// Inner chunks fetched as one range of a shard.
struct Run {
    offset: u64,
    len: u64,
    /// Grid position, offset and length of every inner chunk in it.
    chunks: Vec<([u64; 3], u64, u64)>,
}

/// libn5's coalescing (src/format/zarr3/shard.rs `coalesce`): the chunks in
/// the order of their bytes, each joined to the previous range when it
/// starts at most `gap` bytes after it and the range stays within `max`.
fn coalesce(mut wanted: Vec<([u64; 3], u64, u64)>, gap: u64, max: u64) -> Vec<Run> {
    wanted.sort_by_key(|&(c, offset, nbytes)| (offset, nbytes, c));
    let mut runs: Vec<Run> = Vec::new();
    for (c, offset, nbytes) in wanted {
        let end = offset.saturating_add(nbytes);
        if let Some(run) = runs.last_mut() {
            let run_end = run.offset + run.len;
            let joined = end.max(run_end) - run.offset;
            if offset <= run_end.saturating_add(gap) && joined <= max.max(run.len) {
                run.len = joined;
                run.chunks.push((c, offset, nbytes));
                continue;
            }
        }
        runs.push(Run {
            offset,
            len: nbytes,
            chunks: vec![(c, offset, nbytes)],
        });
    }
    runs
}

/// Where the shards are: files below a container directory, or objects of
/// a store.
enum Shards {
    Files(PathBuf),
    Objects(Arc<dyn Store>),
}

impl Shards {
    /// The shards of the array at `at` (a directory, or for a remote job a
    /// URL).
    fn open(job: &Job, at: &Path) -> Result<Shards, String> {
        if !job.is_remote() {
            return Ok(Shards::Files(at.to_path_buf()));
        }
        let options = job.options()?;
        let url = at.to_str().ok_or("the location is not UTF-8")?;
        n5::storage::Location::parse(url)
            .and_then(|l| n5::storage::open(&l, &options.storage))
            .map(Shards::Objects)
            .map_err(|e| e.to_string())
    }

    /// The file of the shard at `s`.
    fn path(root: &Path, s: [u64; 3]) -> PathBuf {
        root.join(shard_key(s))
    }

    /// Reads the whole shard at `s` into `buf`.
    fn read_whole(&self, s: [u64; 3], buf: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Shards::Files(root) => {
                let path = Shards::path(root, s);
                buf.clear();
                let mut file = File::open(&path).map_err(io_err(&path))?;
                std::io::Read::read_to_end(&mut file, buf).map_err(io_err(&path))?;
                Ok(())
            }
            Shards::Objects(store) => {
                let key = shard_key(s);
                match store.get_into(&key, buf) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(format!("{}: missing", store.describe(&key))),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    /// Reads `range` (a span or a suffix) of the shard at `s` into `buf`.
    fn read_range(&self, s: [u64; 3], range: ByteRange, buf: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Shards::Files(root) => {
                let path = Shards::path(root, s);
                let file = File::open(&path).map_err(io_err(&path))?;
                let (offset, len) = match range {
                    ByteRange::Span { offset, len } => (offset, len),
                    ByteRange::Suffix(n) => {
                        let size = file.metadata().map_err(io_err(&path))?.len();
                        (size.saturating_sub(n), n.min(size))
                    }
                    ByteRange::From(offset) => {
                        let size = file.metadata().map_err(io_err(&path))?.len();
                        (offset, size.saturating_sub(offset))
                    }
                };
                buf.resize(len as usize, 0);
                file.read_exact_at(buf, offset).map_err(io_err(&path))
            }
            Shards::Objects(store) => {
                let key = shard_key(s);
                match store.get_range(&key, range) {
                    Ok(Some(bytes)) => {
                        *buf = bytes;
                        Ok(())
                    }
                    Ok(None) => Err(format!("{}: missing", store.describe(&key))),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    /// Writes the shard at `s` (a file as libn5 writes it, or one PUT).
    fn write(&self, s: [u64; 3], data: &[u8], unique: usize) -> Result<(), String> {
        match self {
            Shards::Files(root) => write_atomic(&Shards::path(root, s), data, unique),
            Shards::Objects(store) => store.put(&shard_key(s), &[data]).map_err(|e| e.to_string()),
        }
    }
}

/// Every shard grid position, dimension 0 fastest.
fn all_shards(job: &Job) -> Vec<[u64; 3]> {
    positions_of([0, 1, 2].map(|d| job.dims[d].div_ceil(job.shard[d])))
}

/// What a floor does with the inner chunks it reads.
struct Sink<'a> {
    job: &'a Job,
    /// Decode them (codec and output floors of compressed data).
    decode: bool,
    /// The output box and its z planes (output floor).
    out: Option<(&'a Region, &'a [Mutex<&'a mut [u8]>])>,
    gate: &'a Gate,
}

impl Sink<'_> {
    /// Handles the stored bytes `payload` of the inner chunk at `c`, with
    /// the thread's coder and chunk buffer; `i` spreads the output copies.
    fn chunk(
        &self,
        c: [u64; 3],
        payload: &[u8],
        coder: &mut Coder,
        chunk: &mut Vec<u8>,
        i: usize,
    ) -> Result<(), String> {
        let job = self.job;
        if self.decode {
            let shape = block_shape(job, c);
            chunk.resize((shape.iter().product::<u64>() * Job::ELEM) as usize, 0);
            self.gate.run(|| {
                coder.decode(payload, chunk)?;
                if let Some((region, planes)) = self.out {
                    place(job, region, c, chunk, planes, i);
                }
                Ok::<(), String>(())
            })
        } else {
            // Raw: the stored bytes are the chunk; the copy is CPU work too.
            if let Some((region, planes)) = self.out {
                self.gate.run(|| place(job, region, c, payload, planes, i));
            }
            Ok(())
        }
    }

    /// Handles every stored inner chunk of the whole shard `bytes` at `s`.
    fn whole_shard(
        &self,
        s: [u64; 3],
        bytes: &[u8],
        coder: &mut Coder,
        chunk: &mut Vec<u8>,
    ) -> Result<(), String> {
        let job = self.job;
        let ilen = index_len(job) as usize;
        let at = bytes
            .len()
            .checked_sub(ilen)
            .ok_or("a shard shorter than its index")?;
        let index = parse_index(job, &bytes[at..])?;
        for c in chunks_of(job, s) {
            let Some((offset, nbytes)) = index[entry_number(job, c)] else {
                continue;
            };
            let payload = bytes
                .get(offset as usize..(offset + nbytes) as usize)
                .ok_or("an inner chunk beyond the shard's end")?;
            let i = entry_number(job, c);
            self.chunk(c, payload, coder, chunk, i)?;
        }
        Ok(())
    }
}

/// Runs a floor job of the sharded layout in this (child) process.
pub fn run_floor(job: &Job) -> Result<Report, String> {
    if (0..3).any(|d| !job.shard[d].is_multiple_of(job.block[d])) {
        return Err("the shard shape must be a multiple of the inner chunks'".into());
    }
    let out_floor = job.imp == Impl::FloorOut;
    let decode = job.codec != Codec::Raw && (job.imp == Impl::FloorCodec || out_floor);
    // As many reads or writes in flight as libn5 has (its io_concurrency:
    // 4 on a local disk, 32 on an object store), the codec work on at most
    // the job's threads (the gate).
    let workers = if job.workload == Workload::ReadBlocks {
        1
    } else {
        job.options()?.storage.io_concurrency_for(job.is_remote())
    };
    let gate = Gate::new(job.threads);
    let source = Shards::open(job, &job.container)?;
    if job.workload == Workload::Write {
        let encode = job.imp == Impl::FloorCodec;
        return write_floor(job, &source, encode, workers, &gate);
    }
    let region = job.read_boxes().remove(0);
    let out_len = if out_floor { box_bytes(&region) } else { 0 };
    let plane_len = (region.shape[0] * region.shape[1] * Job::ELEM) as usize;
    let (report, _) = measure(
        job.repeats,
        || {
            let resident = match &source {
                Shards::Files(root) => sys::evict(root, job.cache)
                    .map_err(|e| format!("evicting {}: {e}", root.display()))?,
                Shards::Objects(_) => f64::NAN,
            };
            Ok((vec![0u8; out_len], resident))
        },
        |out| {
            if out.len() >= sys::HUGE_PAGE_OUTPUT {
                sys::advise_huge_pages(out);
            }
            let planes: Vec<Mutex<&mut [u8]>> =
                out.chunks_mut(plane_len.max(1)).map(Mutex::new).collect();
            let sink = Sink {
                job,
                decode,
                out: out_floor.then_some((&region, &planes[..])),
                gate: &gate,
            };
            match job.workload {
                Workload::ReadAll if job.is_remote() => read_all(job, &source, &sink, workers),
                Workload::ReadBlocks => read_blocks(job, &source, &sink),
                _ => read_region(job, &source, &sink, workers),
            }
        },
    )?;
    Ok(report)
}

/// read_all on an object store: every shard whole (on a local disk it is
/// [`read_region`] of the whole volume).
fn read_all(job: &Job, source: &Shards, sink: &Sink, workers: usize) -> Result<(), String> {
    let shards = all_shards(job);
    let io_only = !sink.decode && sink.out.is_none();
    parallel(
        shards.len(),
        workers,
        || (Coder::new(job.codec), Vec::new(), Vec::new()),
        |(coder, file, chunk), i| {
            source.read_whole(shards[i], file)?;
            if io_only {
                return Ok(());
            }
            sink.whole_shard(shards[i], file, coder, chunk)
        },
    )
}

/// read_blocks: per block the index, then the inner chunk; one at a time.
/// On an object store, as libn5 keeps the indexes it read, each shard's
/// index once.
fn read_blocks(job: &Job, source: &Shards, sink: &Sink) -> Result<(), String> {
    let mut coder = Coder::new(job.codec);
    let (mut index, mut bytes, mut chunk) = (Vec::new(), Vec::new(), Vec::new());
    let mut kept: std::collections::HashMap<[u64; 3], Index> = Default::default();
    for (i, &c) in job.positions.iter().enumerate() {
        let s = shard_of(job, c);
        if !job.is_remote() || !kept.contains_key(&s) {
            source.read_range(s, ByteRange::Suffix(index_len(job)), &mut index)?;
            kept.insert(s, parse_index(job, &index)?);
        }
        let Some((offset, len)) = kept[&s][entry_number(job, c)] else {
            continue;
        };
        source.read_range(s, ByteRange::Span { offset, len }, &mut bytes)?;
        sink.chunk(c, &bytes, &mut coder, &mut chunk, i)?;
    }
    Ok(())
}

/// read_region (and read_all on a local disk): indexes of the shards read
/// in part, then their touched inner chunks as coalesced ranges, and
/// meanwhile (on an object store, at most as many at once as there are
/// such shards besides `workers`) the shards read whole.
fn read_region(job: &Job, source: &Shards, sink: &Sink, workers: usize) -> Result<(), String> {
    let shards = touched_shards(job);
    let wholes: Vec<[u64; 3]> = shards.iter().filter(|s| s.1).map(|s| s.0).collect();
    std::thread::scope(|scope| {
        let whole = scope.spawn(|| {
            parallel(
                wholes.len(),
                wholes.len().min(workers),
                || (Coder::new(job.codec), Vec::new(), Vec::new()),
                |(coder, bytes, chunk), i| {
                    source.read_whole(wholes[i], bytes)?;
                    sink.whole_shard(wholes[i], bytes, coder, chunk)
                },
            )
        });
        let partial = read_partial_shards(job, &shards, source, sink, workers);
        let whole = whole
            .join()
            .map_err(|_| "a thread reading whole shards panicked")?;
        partial.and(whole)
    })
}

/// The part of [`read_region`] that reads shards in part.
fn read_partial_shards(
    job: &Job,
    shards: &[([u64; 3], bool)],
    source: &Shards,
    sink: &Sink,
    workers: usize,
) -> Result<(), String> {
    let partial: Vec<[u64; 3]> = shards.iter().filter(|s| !s.1).map(|s| s.0).collect();
    let indexes: Vec<Mutex<Index>> = partial.iter().map(|_| Mutex::new(Vec::new())).collect();
    parallel(partial.len(), workers, Vec::new, |buf, i| {
        source.read_range(partial[i], ByteRange::Suffix(index_len(job)), buf)?;
        *indexes[i].lock().expect("index") = parse_index(job, buf)?;
        Ok(())
    })?;
    let mut pieces: Vec<(Run, [u64; 3])> = Vec::new();
    let touched = job.touched_blocks();
    for (k, &s) in partial.iter().enumerate() {
        let index = indexes[k].lock().expect("index");
        let wanted: Vec<([u64; 3], u64, u64)> = touched
            .iter()
            .filter(|&&c| shard_of(job, c) == s)
            .filter_map(|&c| index[entry_number(job, c)].map(|(o, n)| (c, o, n)))
            .collect();
        for run in coalesce(
            wanted,
            COALESCE_GAP,
            if job.is_remote() {
                COALESCE_MAX_REMOTE
            } else {
                COALESCE_MAX
            },
        ) {
            pieces.push((run, s));
        }
    }
    parallel(
        pieces.len(),
        workers,
        || (Coder::new(job.codec), Vec::new(), Vec::new()),
        |(coder, bytes, chunk), i| {
            let (run, s) = &pieces[i];
            let range = ByteRange::Span {
                offset: run.offset,
                len: run.len,
            };
            source.read_range(*s, range, bytes)?;
            for &(c, offset, nbytes) in &run.chunks {
                let at = (offset - run.offset) as usize;
                let payload = bytes
                    .get(at..at + nbytes as usize)
                    .ok_or("a range came back short")?;
                sink.chunk(c, payload, coder, chunk, entry_number(job, c))?;
            }
            Ok(())
        },
    )
}

/// The write floor: every shard assembled from its encoded inner chunks
/// (codec floor) or the exact shard libn5 wrote (I/O floor), written once.
fn write_floor(
    job: &Job,
    source: &Shards,
    encode: bool,
    workers: usize,
    gate: &Gate,
) -> Result<Report, String> {
    let shards = all_shards(job);
    let n_entries = per_shard(job).iter().product::<u64>() as usize;
    // Untimed: the inner chunks' little-endian bytes, in index order, or
    // the shards libn5 wrote.
    let inputs: Vec<Vec<([u64; 3], Vec<u8>)>> = if encode {
        let volume = fs::read(&job.raw).map_err(io_err(&job.raw))?;
        shards
            .iter()
            .map(|&s| {
                chunks_of(job, s)
                    .into_iter()
                    .map(|c| (c, block_bytes(job, &volume, c, false)))
                    .collect()
            })
            .collect()
    } else {
        shards
            .iter()
            .map(|&s| {
                let mut bytes = Vec::new();
                source.read_whole(s, &mut bytes)?;
                Ok(vec![(s, bytes)])
            })
            .collect::<Result<_, String>>()?
    };
    let target = Shards::open(job, &job.scratch)?;
    let encoders = Encoders::new(job.codec);
    let (report, ()) = measure(
        job.repeats,
        || {
            if !job.is_remote() {
                retire_tree(&job.scratch)?;
                fs::create_dir_all(&job.scratch).map_err(io_err(&job.scratch))?;
                sys::sync_all();
            }
            Ok(((), f64::NAN))
        },
        |()| {
            parallel(shards.len(), workers, Vec::new, |buf, i| {
                if !encode {
                    return target.write(shards[i], &inputs[i][0].1, i);
                }
                buf.clear();
                let mut index = vec![(EMPTY, EMPTY); n_entries];
                // A shard's inner chunks in one pass through the gate, as
                // libn5 encodes a shard on one thread: one shard is sent
                // while the next is encoded.
                encoders.with(gate, |coder| {
                    for (c, data) in &inputs[i] {
                        let start = buf.len() as u64;
                        coder.encode(data, buf)?;
                        index[entry_number(job, *c)] = (start, buf.len() as u64 - start);
                    }
                    Ok::<(), String>(())
                })?;
                let at = buf.len();
                for (offset, nbytes) in index {
                    buf.extend_from_slice(&offset.to_le_bytes());
                    buf.extend_from_slice(&nbytes.to_le_bytes());
                }
                let crc = crc32c::crc32c(&buf[at..]);
                buf.extend_from_slice(&crc.to_le_bytes());
                target.write(shards[i], buf, i)
            })
        },
    )?;
    Ok(report)
}
