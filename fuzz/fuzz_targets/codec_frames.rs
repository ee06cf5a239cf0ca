//! Codec frames: any bytes decoded as the payload of one compression into an
//! output buffer of a chosen length, without an N5 block header in front.
//! This reaches the codecs' own framing directly: the four lz4 framings
//! (LZ4Block, LZ4 frame, size-prefixed and bare blocks), blosc frame headers,
//! zstd frames, gzip and zlib headers and trailers, bzip2 and xz streams.
//! Input: one selector byte (the compression), three bytes of little-endian
//! output length (up to 1 MiB), then the payload. Every input must give the
//! decoded bytes or an error.
#![no_main]

#[path = "../common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use n5::Compression;

/// Largest output buffer an input can ask for.
const MAX_OUT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, payload) = data.split_at(4);
    let compression = common::compression(head[0]);
    let len = u32::from_le_bytes([head[1], head[2], head[3], 0]) as usize % (MAX_OUT + 1);
    let mut out = vec![0u8; len];
    if compression.decode(payload, &mut out).is_ok() && matches!(compression, Compression::Raw) {
        assert_eq!(&out[..], &payload[..len]);
    }
});
