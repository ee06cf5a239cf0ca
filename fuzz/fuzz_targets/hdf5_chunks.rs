//! The Rust decoder of HDF5 chunks (`n5::format::hdf5::ChunkPipeline`,
//! which region reads of HDF5 files run on bytes straight from the file):
//! the input picks a pipeline as a file would state it (filter ids among
//! deflate, shuffle, fletcher32, zstd, blosc and others, their client data
//! values, up to 32-bit), the element size and byte order, the chunk and
//! dataset shapes (rank 1 to 4, chunks of at most 1 MiB), the chunk's grid
//! position, its filter mask and the "don't filter partial edge chunks"
//! flag, and gives the chunk's bytes. Either those bytes are decoded as
//! they are (hostile chunks), or they are the chunk's elements, which the
//! target encodes itself through the pipeline (its own shuffle and
//! fletcher32, the crate's deflate, zstd and blosc encoders), optionally
//! with one stored byte changed, and which must decode back exactly.
//! Every decode must give the chunk or an error (`Codec`, or
//! `Unsupported` for pipelines libn5 leaves to libhdf5), never a panic or
//! a loop, and its largest single Rust allocation may not exceed the
//! larger of the stored bytes and the decoded chunk by more than a
//! codec's fixed state (the C codecs' allocations are held to the run's
//! `-malloc_limit_mb`).
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;
use n5::format::hdf5::ChunkPipeline;
use n5::{Compression, ErrorKind};

/// The system allocator, remembering the largest allocation since
/// [`LARGEST`] was last reset.
struct Tracking;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// What a decoder may allocate beyond the stored bytes and the chunk: the
/// inflate window and state of zlib-rs and the like.
const CODEC_STATE: usize = 256 << 10;

/// HDF5's filter identifiers.
const DEFLATE: i32 = 1;
const SHUFFLE: i32 = 2;
const FLETCHER32: i32 = 3;
const ZSTD: i32 = 32015;
const BLOSC: i32 = 32001;

/// The input read a byte at a time (zeros once it is used up).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// A small value, or with 255 any 32-bit one.
    fn value(&mut self) -> u32 {
        match self.byte() {
            255 => self.u32(),
            b => u32::from(b),
        }
    }
}

/// HDF5's shuffle (`H5Z_filter_shuffle`): byte `b` of element `i` to
/// `b * n + i` for `n` whole elements of `size` bytes, the rest in place;
/// nothing changes for one element or elements of one byte.
fn shuffle(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = data.to_vec();
    let n = if size > 1 { data.len() / size } else { 0 };
    if n > 1 {
        for i in 0..n {
            for b in 0..size {
                out[b * n + i] = data[i * size + b];
            }
        }
    }
    out
}

/// HDF5's Fletcher-32 as libhdf5 computes it (`H5_checksum_fletcher32`),
/// kept apart from libn5's: 16-bit big-endian words (an odd last byte as
/// the high byte of one), both sums folded into 16 bits every 360 words
/// and at the end.
fn fletcher32(data: &[u8]) -> u32 {
    let mut sum1: u32 = 0;
    let mut sum2: u32 = 0;
    let mut left = data.len() / 2;
    let mut words = data.chunks_exact(2);
    while left > 0 {
        let n = left.min(360);
        left -= n;
        for w in words.by_ref().take(n) {
            sum1 += (u32::from(w[0]) << 8) | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if data.len() % 2 == 1 {
        sum1 += u32::from(data[data.len() - 1]) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// The stored bytes of a chunk of `elements` (native order) through the
/// pipeline, with the filters `skipped` says left out; `None` for a filter
/// the target cannot apply.
fn encode(p: &ChunkPipeline, elements: &[u8], skipped: &dyn Fn(usize) -> bool) -> Option<Vec<u8>> {
    let mut data = elements.to_vec();
    if p.big_endian == cfg!(target_endian = "little") && p.elem_size > 1 {
        for e in data.chunks_exact_mut(p.elem_size) {
            e.reverse();
        }
    }
    for (i, (id, cd)) in p.filters.iter().enumerate() {
        if skipped(i) {
            continue;
        }
        let compression = match *id {
            SHUFFLE => {
                let size = cd.first().map(|&n| n as usize).filter(|&n| n > 0);
                data = shuffle(&data, size.unwrap_or(p.elem_size));
                continue;
            }
            FLETCHER32 => {
                let sum = fletcher32(&data);
                data.extend_from_slice(&sum.to_le_bytes());
                continue;
            }
            DEFLATE => Compression::Gzip {
                level: cd.first().map_or(6, |&l| l.min(9) as i32),
                use_zlib: true,
            },
            ZSTD => Compression::Zstd { level: 1 },
            BLOSC => Compression::Blosc {
                cname: "lz4".into(),
                clevel: 5,
                shuffle: 1,
                blocksize: 0,
            },
            _ => return None,
        };
        let mut out = Vec::new();
        compression
            .encode(&data, p.elem_size.max(1), &mut out)
            .expect("encoding a chunk");
        data = out;
    }
    Some(data)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let flags = input.byte();
    let rank = usize::from(flags & 3) + 1;
    let encoded = flags & 4 != 0;
    let damaged = flags & 8 != 0;
    let elem_size = [1, 2, 4, 8, 2, 4, 3, 16][usize::from(input.byte() & 7)];
    let mut p = ChunkPipeline {
        elem_size,
        big_endian: flags & 16 != 0,
        partial_edge_chunks_unfiltered: flags & 32 != 0,
        ..ChunkPipeline::default()
    };
    for _ in 0..rank {
        let c = u64::from(input.byte() % 16) + 1;
        p.chunk.push(c);
        p.shape.push(u64::from(input.byte()) % (3 * c + 1));
    }
    let grid_pos: Vec<u64> = p
        .chunk
        .iter()
        .zip(&p.shape)
        .map(|(&c, &d)| u64::from(input.byte()) % d.div_ceil(c).max(1))
        .collect();
    for _ in 0..input.byte() % 5 {
        let id = match input.byte() {
            b @ 0..=249 => [DEFLATE, SHUFFLE, FLETCHER32, ZSTD, BLOSC][usize::from(b % 5)],
            _ => i32::from(u16::from_le_bytes([input.byte(), input.byte()])),
        };
        let cd = (0..input.byte() % 4).map(|_| input.value()).collect();
        p.filters.push((id, cd));
    }
    let filter_mask = match input.byte() {
        255 => input.u32(),
        m => u32::from(m & 0x1f),
    };
    let at = usize::from(u16::from_le_bytes([input.byte(), input.byte()]));
    let flip = input.byte() | 1;
    let payload = input.0;

    // Whether the chunk is stored without any filter: every filter masked,
    // or a partial edge chunk whose layout leaves those unfiltered.
    let partial = grid_pos
        .iter()
        .zip(&p.chunk)
        .zip(&p.shape)
        .any(|((&g, &c), &d)| (g + 1) * c > d);
    let unfiltered = p.partial_edge_chunks_unfiltered && partial;
    let skipped = |i: usize| unfiltered || (i < 32 && filter_mask >> i & 1 == 1);
    let plain = (0..p.filters.len()).all(skipped);

    let Some(chunk_bytes) = p.chunk_bytes() else {
        let mut out = vec![0u8; 16];
        let err = p
            .decode(payload, filter_mask, &grid_pos, &mut out)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        return;
    };
    let elements: Vec<u8> = if encoded {
        payload.iter().copied().cycle().take(chunk_bytes).collect()
    } else {
        Vec::new()
    };
    let mut stored = if encoded {
        match encode(&p, &elements, &skipped) {
            Some(stored) if elements.len() == chunk_bytes => stored,
            _ => return,
        }
    } else {
        payload.to_vec()
    };
    let changed = encoded && damaged && !stored.is_empty();
    if changed {
        let i = at % stored.len();
        stored[i] ^= flip;
    }

    let mut out = vec![0u8; chunk_bytes];
    LARGEST.store(0, Ordering::Relaxed);
    let result = p.decode(&stored, filter_mask, &grid_pos, &mut out);
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= chunk_bytes.max(stored.len()) + CODEC_STATE,
        "an allocation of {largest} bytes decoding {} stored bytes into {chunk_bytes}",
        stored.len()
    );
    match result {
        Ok(()) => {
            if encoded && !changed {
                assert!(out == elements, "the chunk did not decode back: {p:?}");
            }
            if plain {
                let mut want = stored
                    .get(..chunk_bytes)
                    .expect("a chunk stored plain decoded from fewer bytes than it has")
                    .to_vec();
                if p.big_endian == cfg!(target_endian = "little") && elem_size > 1 {
                    for e in want.chunks_exact_mut(elem_size) {
                        e.reverse();
                    }
                }
                assert!(out == want, "a chunk stored plain decoded otherwise");
            }
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Codec, "{e}");
            assert!(
                !encoded || changed,
                "a chunk the target encoded failed to decode: {e} ({p:?})"
            );
        }
    }
});
