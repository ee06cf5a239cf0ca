//! The floors: how fast the same work goes without libn5.
//!
//! * I/O floor: the block files libn5 wrote, written (temporary file and
//!   rename, no fsync, as libn5's storage does) or read with plain std::fs,
//!   one file per block.
//! * Codec floor: the codec library alone compressing every block (from its
//!   big-endian bytes, prepared untimed) or decompressing it (into a reused
//!   block buffer), plus that file I/O. gzip is libdeflate's whole-buffer
//!   gzip (the library libn5 uses for gzip blocks), zstd the zstd crate with reused
//!   contexts, lz4 the LZ4 block API on the same 64 KiB pieces as libn5's
//!   LZ4Block framing with the XXH32 checksum the framing requires of every
//!   piece (the reference C XXH32 of the same library), blosc c-blosc's
//!   `_ctx` functions.
//!
//! On an object store (a job with storage options) the I/O floor is the
//! same GETs and PUTs of the same objects with libn5's own client (its
//! `Store`, the same retries and connection pool) and as many requests in
//! flight as libn5's `io_concurrency`; the codec floor adds the codec work
//! of the blocks, done by at most the job's threads at once.
//!
//! The output floor (FloorOut, reads of one box) is the codec floor (the
//! I/O floor for raw data) that also copies every block's bytes, as
//! stored, to their place in a fresh output buffer of the box's size: the
//! part of a read that no reader returning the data can skip, including
//! the first write of every page of that buffer (made untimed, as libn5's
//! caller makes it, and advised to use huge pages from 16 MiB on, as
//! libn5 advises it). For raw data the copy runs on the I/O threads, for
//! compressed data right after the block's decoding.
//!
//! Multi-block work is spread over the job's threads (std::thread::scope,
//! blocks handed out one at a time; on an object store, over
//! `io_concurrency` threads); single-block reads are one call each, so
//! their floor is sequential. Not in any floor: the byte swapping to and
//! from big-endian; not in the I/O and codec floors: the copy between
//! blocks and the region buffer.
//!
//! The floors of the sharded Zarr v3 layout are in [`crate::sharded`],
//! which uses this file's codecs, threads and copies.

use std::ffi::{c_char, c_int, c_void};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use n5::storage::Store;

use crate::sys;
use crate::workload::{
    box_bytes, measure, retire_tree, Codec, Impl, Job, Region, Report, Workload, DATASET,
};

// Linked by the blosc-src dependency (the same c-blosc build libn5 uses).
use blosc_src as _;

extern "C" {
    /// The reference XXH32 (xxhash.c, built into the lz4 crate's C library).
    fn XXH32(input: *const c_void, length: usize, seed: u32) -> u32;
    /// c-blosc 1.x: compress without global state (see blosc.h).
    fn blosc_compress_ctx(
        clevel: c_int,
        doshuffle: c_int,
        typesize: usize,
        nbytes: usize,
        src: *const c_void,
        dest: *mut c_void,
        destsize: usize,
        compressor: *const c_char,
        blocksize: usize,
        numinternalthreads: c_int,
    ) -> c_int;
    /// c-blosc 1.x: decompress without global state (see blosc.h).
    fn blosc_decompress_ctx(
        src: *const c_void,
        dest: *mut c_void,
        destsize: usize,
        numinternalthreads: c_int,
    ) -> c_int;
}

/// The LZ4Block checksum of a piece: XXH32 with lz4-java's seed, masked to
/// 28 bits.
fn piece_checksum(piece: &[u8]) -> u32 {
    // SAFETY: `piece` is readable for `piece.len()` bytes; XXH32 only reads
    // them.
    unsafe { XXH32(piece.as_ptr().cast(), piece.len(), 0x9747_B28C) & 0x0FFF_FFFF }
}

/// c-blosc's BLOSC_MAX_OVERHEAD.
const BLOSC_MAX_OVERHEAD: usize = 16;
/// lz4-java's LZ4Block piece header: magic, token, two lengths, checksum.
const LZ4_PIECE_HEADER: usize = 21;
/// Bytes per LZ4Block piece (N5's default blockSize).
const LZ4_PIECE: usize = 65536;

/// An error mapper that names the path.
pub(crate) fn io_err(what: &Path) -> impl Fn(io::Error) -> String + '_ {
    move |e| format!("{}: {e}", what.display())
}

/// Runs `work(state, i)` for every `i` in `0..n` on `threads` threads, each
/// with its own `init()` state; blocks are handed out one at a time.
pub(crate) fn parallel<S>(
    n: usize,
    threads: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    if threads <= 1 {
        let mut s = init();
        return (0..n).try_for_each(|i| work(&mut s, i));
    }
    let next = AtomicUsize::new(0);
    let error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut s = init();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    if let Err(e) = work(&mut s, i) {
                        next.store(n, Ordering::Relaxed);
                        *error.lock().expect("error slot") = Some(e);
                        return;
                    }
                }
            });
        }
    });
    match error.into_inner().expect("error slot") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Writes `data` to `path` as libn5's storage does: a temporary file in the
/// same directory (created on demand), then a rename; no fsync.
pub(crate) fn write_atomic(path: &Path, data: &[u8], unique: usize) -> Result<(), String> {
    let dir = path.parent().expect("block files have a parent");
    let name = path.file_name().expect("block files have a name");
    let tmp = dir.join(format!(
        ".tmp.{}.{}.{unique}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let mut file = match File::create(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
            File::create(&tmp).map_err(io_err(&tmp))?
        }
        Err(e) => return Err(io_err(&tmp)(e)),
    };
    file.write_all(data).map_err(io_err(&tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io_err(path))
}

/// Reads the whole file at `path` into `buf` (cleared first).
fn read_into(path: &Path, buf: &mut Vec<u8>) -> Result<(), String> {
    buf.clear();
    let mut file = File::open(path).map_err(io_err(path))?;
    file.read_to_end(buf).map_err(io_err(path))?;
    Ok(())
}

/// The N5 mode-0 block header of a block of `shape`.
fn block_header(shape: [u64; 3]) -> Vec<u8> {
    let mut h = vec![0, 0, 0, 3];
    for s in shape {
        h.extend_from_slice(&(s as u32).to_be_bytes());
    }
    h
}

/// A codec's per-thread state.
pub(crate) enum Coder {
    Raw,
    Gzip(libdeflater::Compressor, libdeflater::Decompressor),
    Lz4(Vec<u8>),
    Zstd(
        zstd::bulk::Compressor<'static>,
        zstd::bulk::Decompressor<'static>,
    ),
    Blosc,
}

impl Coder {
    /// Fresh state for `codec`.
    pub(crate) fn new(codec: Codec) -> Coder {
        match codec {
            Codec::Raw => Coder::Raw,
            Codec::Gzip => Coder::Gzip(
                libdeflater::Compressor::new(libdeflater::CompressionLvl::new(6).expect("level 6")),
                libdeflater::Decompressor::new(),
            ),
            Codec::Lz4 => Coder::Lz4(Vec::new()),
            Codec::Zstd => Coder::Zstd(
                zstd::bulk::Compressor::new(3).expect("zstd context"),
                zstd::bulk::Decompressor::new().expect("zstd context"),
            ),
            Codec::Blosc => Coder::Blosc,
        }
    }

    /// Appends the compressed `data` to `out`.
    pub(crate) fn encode(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Coder::Raw => out.extend_from_slice(data),
            Coder::Gzip(c, _) => {
                let start = out.len();
                out.resize(start + c.gzip_compress_bound(data.len()), 0);
                let n = c
                    .gzip_compress(data, &mut out[start..])
                    .map_err(|e| format!("gzip: {e}"))?;
                out.truncate(start + n);
            }
            Coder::Lz4(scratch) => {
                let bound = lz4::block::compress_bound(LZ4_PIECE).map_err(|e| e.to_string())?;
                scratch.resize(bound, 0);
                for piece in data.chunks(LZ4_PIECE) {
                    let n = lz4::block::compress_to_buffer(piece, None, false, scratch)
                        .map_err(|e| format!("lz4: {e}"))?;
                    let (method, body) = if n < piece.len() {
                        (0x20u8, &scratch[..n])
                    } else {
                        (0x10u8, piece)
                    };
                    out.extend_from_slice(b"LZ4Block");
                    out.push(method | 6);
                    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
                    out.extend_from_slice(&(piece.len() as u32).to_le_bytes());
                    out.extend_from_slice(&piece_checksum(piece).to_le_bytes());
                    out.extend_from_slice(body);
                }
                out.extend_from_slice(b"LZ4Block");
                out.push(0x16);
                out.extend_from_slice(&[0; 12]);
            }
            Coder::Zstd(c, _) => {
                let start = out.len();
                out.reserve(zstd::zstd_safe::compress_bound(data.len()));
                let mut cursor = io::Cursor::new(&mut *out);
                cursor.set_position(start as u64);
                c.compress_to_buffer(data, &mut cursor)
                    .map_err(|e| format!("zstd: {e}"))?;
            }
            Coder::Blosc => {
                let start = out.len();
                let capacity = data.len() + BLOSC_MAX_OVERHEAD;
                out.reserve(capacity);
                let cname = c"lz4";
                // SAFETY: `data` is readable for `data.len()` bytes, the
                // spare capacity writable for `capacity` bytes (c-blosc writes
                // at most `destsize`, never reading them), they do not
                // overlap, and `cname` is a NUL-terminated static string. The
                // _ctx call uses no globals.
                let n = unsafe {
                    blosc_compress_ctx(
                        5,
                        1,
                        2,
                        data.len(),
                        data.as_ptr().cast(),
                        out.spare_capacity_mut().as_mut_ptr().cast(),
                        capacity,
                        cname.as_ptr(),
                        0,
                        1,
                    )
                };
                if n <= 0 || n as usize > capacity {
                    return Err(format!("blosc_compress_ctx returned {n}"));
                }
                // SAFETY: c-blosc initialised the first `n` (≤ capacity)
                // bytes of the spare capacity.
                unsafe { out.set_len(start + n as usize) };
            }
        }
        Ok(())
    }

    /// Decompresses `payload` into exactly `out`.
    pub(crate) fn decode(&mut self, payload: &[u8], out: &mut [u8]) -> Result<(), String> {
        match self {
            Coder::Raw => out.copy_from_slice(
                payload
                    .get(..out.len())
                    .ok_or("raw: the payload is too short")?,
            ),
            Coder::Gzip(_, d) => {
                let n = d
                    .gzip_decompress(payload, out)
                    .map_err(|e| format!("gzip: {e}"))?;
                if n != out.len() {
                    return Err(format!("gzip: {n} bytes decoded, {} expected", out.len()));
                }
            }
            Coder::Lz4(_) => {
                let (mut pos, mut filled) = (0usize, 0usize);
                while filled < out.len() {
                    let h = payload
                        .get(pos..pos + LZ4_PIECE_HEADER)
                        .ok_or("lz4: the stream ends early")?;
                    let le =
                        |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
                    let (method, clen, dlen, check) =
                        (h[8] & 0xF0, le(9) as usize, le(13) as usize, le(17));
                    let body = payload
                        .get(pos + LZ4_PIECE_HEADER..pos + LZ4_PIECE_HEADER + clen)
                        .ok_or("lz4: a piece is cut off")?;
                    let dst = out
                        .get_mut(filled..filled + dlen)
                        .ok_or("lz4: more data than the block holds")?;
                    if method == 0x10 {
                        dst.copy_from_slice(body);
                    } else {
                        lz4::block::decompress_to_buffer(body, Some(dlen as i32), dst)
                            .map_err(|e| format!("lz4: {e}"))?;
                    }
                    if piece_checksum(dst) != check {
                        return Err("lz4: a piece's checksum does not match".into());
                    }
                    pos += LZ4_PIECE_HEADER + clen;
                    filled += dlen;
                }
            }
            Coder::Zstd(_, d) => {
                let n = d
                    .decompress_to_buffer(payload, out)
                    .map_err(|e| format!("zstd: {e}"))?;
                if n != out.len() {
                    return Err(format!("zstd: {n} bytes decoded, {} expected", out.len()));
                }
            }
            Coder::Blosc => {
                // c-blosc trusts the frame's own sizes; a Blosc1 frame states
                // its length (cbytes) at offset 12, checked against the payload.
                let cbytes = payload
                    .get(12..16)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                    .ok_or("blosc: no frame header")?;
                if cbytes > payload.len() {
                    return Err("blosc: the frame is cut off".into());
                }
                // SAFETY: `payload` holds the whole frame (checked above),
                // `out` is writable for `out.len()` bytes and c-blosc writes
                // at most `destsize` bytes; the buffers do not overlap. The
                // _ctx call uses no global state.
                let n = unsafe {
                    blosc_decompress_ctx(
                        payload.as_ptr().cast(),
                        out.as_mut_ptr().cast(),
                        out.len(),
                        1,
                    )
                };
                if n < 0 || n as usize != out.len() {
                    return Err(format!("blosc_decompress_ctx returned {n}"));
                }
            }
        }
        Ok(())
    }
}

/// The length of the N5 block header at the start of `bytes` (mode 0).
fn header_len(bytes: &[u8]) -> Result<usize, String> {
    let ndim = bytes
        .get(2..4)
        .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
        .ok_or("block file too short")?;
    Ok(4 + 4 * ndim)
}

/// The shape of the block at grid position `p`.
pub(crate) fn block_shape(job: &Job, p: [u64; 3]) -> [u64; 3] {
    [0, 1, 2].map(|d| job.block[d].min(job.dims[d] - p[d] * job.block[d]))
}

/// Every position of a grid of `g` cells, dimension 0 fastest.
pub(crate) fn positions_of(g: [u64; 3]) -> Vec<[u64; 3]> {
    let mut out = Vec::new();
    for z in 0..g[2] {
        for y in 0..g[1] {
            for x in 0..g[0] {
                out.push([x, y, z]);
            }
        }
    }
    out
}

/// The bytes of the block at `p`, cut from the raw (native-endian)
/// volume, big-endian (N5) or little-endian (Zarr's `bytes` codec).
pub(crate) fn block_bytes(job: &Job, volume: &[u8], p: [u64; 3], big_endian: bool) -> Vec<u8> {
    let shape = block_shape(job, p);
    let mut out = Vec::with_capacity((shape.iter().product::<u64>() * Job::ELEM) as usize);
    for z in 0..shape[2] {
        for y in 0..shape[1] {
            let x0 = p[0] * job.block[0];
            let (yy, zz) = (p[1] * job.block[1] + y, p[2] * job.block[2] + z);
            let start = ((x0 + job.dims[0] * (yy + job.dims[1] * zz)) * Job::ELEM) as usize;
            let row = &volume[start..start + (shape[0] * Job::ELEM) as usize];
            for v in row.chunks_exact(2) {
                let v = u16::from_ne_bytes([v[0], v[1]]);
                out.extend_from_slice(&if big_endian {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                });
            }
        }
    }
    out
}

/// Where a floor's block objects are: files below a container directory,
/// or objects of a store (a container on an object store).
enum Blocks {
    Files(PathBuf),
    Objects(Arc<dyn Store>),
}

impl Blocks {
    /// The blocks of the container at `at` (a directory, or for a remote
    /// job a URL).
    fn open(job: &Job, at: &Path) -> Result<Blocks, String> {
        if !job.is_remote() {
            return Ok(Blocks::Files(at.to_path_buf()));
        }
        let options = job.options()?;
        let url = at.to_str().ok_or("the location is not UTF-8")?;
        n5::storage::Location::parse(url)
            .and_then(|l| n5::storage::open(&l, &options.storage))
            .map(Blocks::Objects)
            .map_err(|e| e.to_string())
    }

    /// The object key of the block at `p`.
    fn key(p: [u64; 3]) -> String {
        format!("{DATASET}/{}/{}/{}", p[0], p[1], p[2])
    }

    /// Reads the block at `p` into `buf`.
    fn read(&self, p: [u64; 3], buf: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Blocks::Files(root) => read_into(&Job::block_path(root, p), buf),
            Blocks::Objects(store) => {
                let key = Blocks::key(p);
                match store.get_into(&key, buf) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(format!("{}: missing", store.describe(&key))),
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    }

    /// Writes the block at `p` (a file as libn5 writes it, or one PUT).
    fn write(&self, p: [u64; 3], data: &[u8], unique: usize) -> Result<(), String> {
        match self {
            Blocks::Files(root) => write_atomic(&Job::block_path(root, p), data, unique),
            Blocks::Objects(store) => store
                .put(&Blocks::key(p), &[data])
                .map_err(|e| e.to_string()),
        }
    }
}

/// Lets at most a fixed number of threads run codec work at once: on an
/// object store the floor's I/O threads outnumber the job's threads.
pub(crate) struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Gate {
    /// A gate that lets `n` threads (at least one) through at once.
    pub(crate) fn new(n: usize) -> Gate {
        Gate {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    /// Runs `f` once a place is free.
    pub(crate) fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let mut free = self.free.lock().expect("gate");
        while *free == 0 {
            free = self.freed.wait(free).expect("gate");
        }
        *free -= 1;
        drop(free);
        let out = f();
        *self.free.lock().expect("gate") += 1;
        self.freed.notify_one();
        out
    }
}

/// The codec contexts of the encoding threads: at most as many as the
/// [`Gate`] lets through, each kept warm from block to block, as libn5's
/// threads keep theirs (one per I/O worker, each cold in the cache when
/// its turn came, cost an S3 write of the 512³ zstd volume about 15% more
/// CPU time).
pub(crate) struct Encoders {
    codec: Codec,
    free: Mutex<Vec<Coder>>,
}

impl Encoders {
    /// No contexts yet; each is made on first use.
    pub(crate) fn new(codec: Codec) -> Encoders {
        Encoders {
            codec,
            free: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` through `gate` with a free context.
    pub(crate) fn with<T>(&self, gate: &Gate, f: impl FnOnce(&mut Coder) -> T) -> T {
        gate.run(|| {
            let free = self.free.lock().expect("encoders").pop();
            let mut coder = free.unwrap_or_else(|| Coder::new(self.codec));
            let done = f(&mut coder);
            self.free.lock().expect("encoders").push(coder);
            done
        })
    }
}

/// Runs a floor job (FloorIo, FloorCodec or FloorOut) of the N5 layout in
/// this (child) process (the sharded layout's are
/// [`crate::sharded::run_floor`]).
pub fn run_floor(job: &Job) -> Result<Report, String> {
    let out_floor = job.imp == Impl::FloorOut;
    if out_floor && !Impl::FloorOut.measures(job.workload, job.codec) {
        return Err(format!(
            "the output floor does not measure {}",
            job.workload.name()
        ));
    }
    let codec_floor = job.imp == Impl::FloorCodec || (out_floor && job.codec != Codec::Raw);
    let workers = if job.workload == Workload::ReadBlocks {
        1
    } else if job.is_remote() {
        job.options()?.storage.io_concurrency_for(true)
    } else {
        job.threads
    };
    let gate = Gate::new(job.threads);
    let source = Blocks::open(job, &job.container)?;
    if job.workload == Workload::Write {
        let positions = positions_of(job.grid());
        // Untimed: the exact blocks libn5 wrote (I/O floor) or the blocks'
        // big-endian bytes and headers (codec floor).
        let inputs: Vec<([u64; 3], Vec<u8>, Vec<u8>)> = if codec_floor {
            let volume = fs::read(&job.raw).map_err(io_err(&job.raw))?;
            positions
                .iter()
                .map(|&p| {
                    (
                        p,
                        block_header(block_shape(job, p)),
                        block_bytes(job, &volume, p, true),
                    )
                })
                .collect()
        } else {
            positions
                .iter()
                .map(|&p| {
                    let mut bytes = Vec::new();
                    source.read(p, &mut bytes)?;
                    Ok((p, Vec::new(), bytes))
                })
                .collect::<Result<_, String>>()?
        };
        let target = Blocks::open(job, &job.scratch)?;
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
                parallel(inputs.len(), workers, Vec::new, |buf, i| {
                    let (p, header, data) = &inputs[i];
                    if !codec_floor {
                        return target.write(*p, data, i);
                    }
                    buf.clear();
                    buf.extend_from_slice(header);
                    encoders.with(&gate, |coder| coder.encode(data, buf))?;
                    target.write(*p, buf, i)
                })
            },
        )?;
        return Ok(report);
    }
    let positions = job.touched_blocks();
    // The output floor's box; its buffer is made untimed, as libn5's
    // caller makes it, so that first writing its pages is timed.
    let region = job.read_boxes().remove(0);
    let out_len = if out_floor { box_bytes(&region) } else { 0 };
    let plane_len = (region.shape[0] * region.shape[1] * Job::ELEM) as usize;
    let (report, _) = measure(
        job.repeats,
        || {
            let resident = match &source {
                Blocks::Files(root) => sys::evict(root, job.cache)
                    .map_err(|e| format!("evicting {}: {e}", root.display()))?,
                Blocks::Objects(_) => f64::NAN,
            };
            Ok((vec![0u8; out_len], resident))
        },
        |out| {
            if out.len() >= sys::HUGE_PAGE_OUTPUT {
                sys::advise_huge_pages(out);
            }
            // One lock per z plane of the output: blocks copy plane by
            // plane, each starting at another plane.
            let planes: Vec<Mutex<&mut [u8]>> =
                out.chunks_mut(plane_len.max(1)).map(Mutex::new).collect();
            parallel(
                positions.len(),
                workers,
                || (Coder::new(job.codec), Vec::new(), Vec::new()),
                |(coder, file, block), i| {
                    let p = positions[i];
                    source.read(p, file)?;
                    let h = header_len(file)?;
                    if codec_floor {
                        let shape = block_shape(job, p);
                        block.resize((shape.iter().product::<u64>() * Job::ELEM) as usize, 0);
                        gate.run(|| {
                            coder.decode(&file[h..], block)?;
                            if out_floor {
                                place(job, &region, p, block, &planes, i);
                            }
                            Ok::<(), String>(())
                        })?;
                    } else if out_floor {
                        let payload = file.get(h..).ok_or("block file too short")?;
                        place(job, &region, p, payload, &planes, i);
                    }
                    Ok(())
                },
            )
        },
    )?;
    Ok(report)
}

/// Copies the part of the block at `p` (its bytes as stored, no byte swap)
/// that lies in `region` to its place in the output, whose z planes are
/// `planes`; the `i`-th block starts at plane `i * 37` (modulo its depth)
/// so that threads copying neighbouring blocks rarely wait for a plane.
pub(crate) fn place(
    job: &Job,
    region: &Region,
    p: [u64; 3],
    block: &[u8],
    planes: &[Mutex<&mut [u8]>],
    i: usize,
) {
    let shape = block_shape(job, p);
    let origin = [0, 1, 2].map(|d| p[d] * job.block[d]);
    let lo = [0, 1, 2].map(|d| origin[d].max(region.offset[d]));
    let hi = [0, 1, 2].map(|d| (origin[d] + shape[d]).min(region.offset[d] + region.shape[d]));
    if (0..3).any(|d| lo[d] >= hi[d]) {
        return;
    }
    let e = Job::ELEM;
    let row = ((hi[0] - lo[0]) * e) as usize;
    let depth = hi[2] - lo[2];
    for k in 0..depth {
        let z = lo[2] + (k + i as u64 * 37) % depth;
        let mut plane = planes[(z - region.offset[2]) as usize]
            .lock()
            .expect("output plane");
        for y in lo[1]..hi[1] {
            let src = ((((z - origin[2]) * shape[1] + (y - origin[1])) * shape[0]
                + (lo[0] - origin[0]))
                * e) as usize;
            let dst = (((y - region.offset[1]) * region.shape[0] + (lo[0] - region.offset[0])) * e)
                as usize;
            plane[dst..dst + row].copy_from_slice(&block[src..src + row]);
        }
    }
}
