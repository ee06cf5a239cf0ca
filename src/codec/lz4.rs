//! N5 "lz4": encoding as lz4-java's `LZ4BlockOutputStream` (the Java
//! reference), and decoding every framing peers write under `"type": "lz4"`:
//!
//! * `LZ4Block` streams (Java N5): pieces of `"LZ4Block"` magic, token, LE
//!   compressed and decompressed lengths, XXH32 checksum, data; an end marker;
//! * the LZ4 frame format, magic `04 22 4D 18` (rust-n5);
//! * numcodecs' LZ4: a u32 LE uncompressed size, then one LZ4 block (zarr 2);
//! * a bare LZ4 block, whose size is the block's (z5).
//!
//! The raw LZ4 calls are wrapped in the small [`raw`] module; decoding writes
//! straight into the caller's buffer and decodes no further than it needs.

use super::xxh32::xxh32;
use crate::error::{Error, Result};

/// The magic that starts every piece of an `LZ4Block` stream.
const LZ4BLOCK_MAGIC: &[u8; 8] = b"LZ4Block";
/// Magic, token, compressed length, decompressed length, checksum.
const LZ4BLOCK_HEADER: usize = 8 + 1 + 4 + 4 + 4;
/// lz4-java's XXH32 seed for piece checksums.
const LZ4BLOCK_SEED: u32 = 0x9747_B28C;
const METHOD_RAW: u8 = 0x10;
const METHOD_LZ4: u8 = 0x20;
/// lz4-java's block size limits (`LZ4BlockOutputStream`).
const MIN_BLOCK_SIZE: u32 = 64;
const MAX_BLOCK_SIZE: u32 = 1 << 25;

/// The LZ4 frame format's magic number (little-endian `04 22 4D 18`).
const FRAME_MAGIC: u32 = 0x184D_2204;
/// Skippable frames have magics `0x184D2A50..=0x184D2A5F`.
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// The block size actually used for writing: lz4-java accepts 64..=32 MiB.
/// Other values (z5 stores its compression level, e.g. 6, in `blockSize`)
/// are clamped into that range.
pub(crate) fn writing_block_size(block_size: u32) -> u32 {
    block_size.clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
}

/// The level nibble of an `LZ4Block` token: `max(0, ceil(log2(blockSize)) - 10)`.
fn token_level(block_size: u32) -> u8 {
    let ceil_log2 = u32::BITS - (block_size - 1).leading_zeros();
    ceil_log2.saturating_sub(10) as u8
}

/// Appends the `LZ4Block` stream of `data` to `out`, exactly as lz4-java's
/// `LZ4BlockOutputStream(out, blockSize)` frames it.
pub(crate) fn encode(data: &[u8], block_size: u32, out: &mut Vec<u8>) -> Result<()> {
    let block_size = writing_block_size(block_size);
    let level = token_level(block_size);
    let mut scratch = Vec::new();
    for piece in data.chunks(block_size as usize) {
        let check = xxh32(piece, LZ4BLOCK_SEED) & 0x0FFF_FFFF;
        let compressed = raw::compress(piece, &mut scratch)?;
        // Stored whenever compression does not make the piece smaller.
        let (method, body) = if compressed < piece.len() {
            (METHOD_LZ4, &scratch[..compressed])
        } else {
            (METHOD_RAW, piece)
        };
        out.extend_from_slice(LZ4BLOCK_MAGIC);
        out.push(method | level);
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&(piece.len() as u32).to_le_bytes());
        out.extend_from_slice(&check.to_le_bytes());
        out.extend_from_slice(body);
    }
    out.extend_from_slice(LZ4BLOCK_MAGIC);
    out.push(METHOD_RAW | level);
    out.extend_from_slice(&[0u8; 12]);
    Ok(())
}

/// Appends numcodecs' LZ4 framing of `data` to `out`: the uncompressed size
/// (4 bytes, little-endian), then one LZ4 block, as Zarr v2 arrays with the
/// `lz4` compressor store chunks (LZ4's default acceleration).
pub(crate) fn encode_numcodecs(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let n = u32::try_from(data.len())
        .map_err(|_| Error::codec("lz4: a chunk of 4 GiB or more has no numcodecs framing"))?;
    let mut scratch = Vec::new();
    let c = raw::compress(data, &mut scratch)?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&scratch[..c]);
    Ok(())
}

/// Decodes an lz4 payload of any of the four framings into `out`.
pub(crate) fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    if payload.starts_with(LZ4BLOCK_MAGIC) {
        return decode_lz4block(payload, out);
    }
    if let Some(magic) = le32(payload, 0) {
        if magic == FRAME_MAGIC || magic & 0xFFFF_FFF0 == SKIPPABLE_MAGIC {
            return decode_frames(payload, out);
        }
    }
    decode_sized_or_bare_block(payload, out)
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn corrupt(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::codec(format!("lz4 ({what}): {detail}"))
}

/// Reads pieces until `out` is full. Everything after that (more pieces, the
/// end marker, or nothing) is ignored.
fn decode_lz4block(payload: &[u8], out: &mut [u8]) -> Result<()> {
    const WHAT: &str = "LZ4Block stream";
    let mut pos = 0usize;
    let mut filled = 0usize;
    while filled < out.len() {
        let header = payload.get(pos..pos + LZ4BLOCK_HEADER).ok_or_else(|| {
            corrupt(
                WHAT,
                format!(
                    "the stream ends after {filled} of the {} bytes expected",
                    out.len()
                ),
            )
        })?;
        if &header[..8] != LZ4BLOCK_MAGIC {
            return Err(corrupt(WHAT, format!("no piece magic at offset {pos}")));
        }
        let token = header[8];
        let (method, level) = (token & 0xF0, u32::from(token & 0x0F));
        let field = |at: usize| {
            i32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let (clen, dlen, check) = (field(9), field(13), field(17));
        if method != METHOD_RAW && method != METHOD_LZ4 {
            return Err(corrupt(
                WHAT,
                format!("unknown method in token {token:#04x} at offset {pos}"),
            ));
        }
        if dlen < 0
            || clen < 0
            || dlen > 1 << (10 + level)
            || (dlen == 0) != (clen == 0)
            || (method == METHOD_RAW && dlen != clen)
        {
            return Err(corrupt(
                WHAT,
                format!("invalid piece at offset {pos}: token {token:#04x}, {clen} compressed bytes, {dlen} decompressed"),
            ));
        }
        if dlen == 0 {
            if check != 0 {
                return Err(corrupt(WHAT, format!("invalid end marker at offset {pos}")));
            }
            return Err(corrupt(
                WHAT,
                format!(
                    "the stream ends after {filled} of the {} bytes expected",
                    out.len()
                ),
            ));
        }
        let (clen, dlen) = (clen as usize, dlen as usize);
        let start = pos + LZ4BLOCK_HEADER;
        let body = payload.get(start..start + clen).ok_or_else(|| {
            corrupt(
                WHAT,
                format!(
                    "the piece at offset {pos} claims {clen} bytes, {} remain",
                    payload.len() - start
                ),
            )
        })?;
        let want = dlen.min(out.len() - filled);
        let dst = &mut out[filled..filled + want];
        if method == METHOD_RAW {
            dst.copy_from_slice(&body[..want]);
        } else if want == dlen {
            if raw::decompress_exact(body, dst) != Some(dlen) {
                return Err(corrupt(
                    WHAT,
                    format!("corrupt LZ4 data in the piece at offset {pos}"),
                ));
            }
        } else if raw::decompress_partial(body, dst, 0) != Some(want) {
            return Err(corrupt(
                WHAT,
                format!("corrupt LZ4 data in the piece at offset {pos}"),
            ));
        }
        // A piece read only in part cannot be checked: its checksum covers all of it.
        if want == dlen && (xxh32(dst, LZ4BLOCK_SEED) & 0x0FFF_FFFF) as i32 != check {
            return Err(corrupt(
                WHAT,
                format!("checksum mismatch in the piece at offset {pos}"),
            ));
        }
        filled += want;
        pos = start + clen;
    }
    Ok(())
}

/// Reads LZ4 frames (and skips skippable frames) until `out` is full.
fn decode_frames(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let mut pos = 0usize;
    let mut filled = 0usize;
    while filled < out.len() {
        let magic = le32(payload, pos).ok_or_else(|| {
            corrupt(
                "LZ4 frame",
                format!(
                    "the data ends after {filled} of the {} bytes expected",
                    out.len()
                ),
            )
        })?;
        if magic & 0xFFFF_FFF0 == SKIPPABLE_MAGIC {
            let size = le32(payload, pos + 4)
                .ok_or_else(|| corrupt("LZ4 frame", "truncated skippable frame"))?;
            pos = pos
                .checked_add(8 + size as usize)
                .filter(|&end| end <= payload.len())
                .ok_or_else(|| corrupt("LZ4 frame", "truncated skippable frame"))?;
            continue;
        }
        if magic != FRAME_MAGIC {
            return Err(corrupt(
                "LZ4 frame",
                format!("no frame magic at offset {pos}"),
            ));
        }
        filled = decode_frame(payload, &mut pos, out, filled)?;
    }
    Ok(())
}

/// Decodes the frame at `*pos` into `out[filled..]`; returns the new fill level
/// and leaves `*pos` after the frame (or where decoding stopped once `out` was full).
fn decode_frame(
    payload: &[u8],
    pos: &mut usize,
    out: &mut [u8],
    mut filled: usize,
) -> Result<usize> {
    const WHAT: &str = "LZ4 frame";
    let truncated = || corrupt(WHAT, "the frame is truncated");
    let desc_start = *pos + 4;
    let flg = *payload.get(desc_start).ok_or_else(truncated)?;
    let bd = *payload.get(desc_start + 1).ok_or_else(truncated)?;
    if flg >> 6 != 1 {
        return Err(corrupt(
            WHAT,
            format!("unsupported frame version {}", flg >> 6),
        ));
    }
    if flg & 0x02 != 0 || bd & 0x8F != 0 {
        return Err(corrupt(
            WHAT,
            "reserved bits are set in the frame descriptor",
        ));
    }
    let independent = flg & 0x20 != 0;
    let block_checksums = flg & 0x10 != 0;
    let has_content_size = flg & 0x08 != 0;
    let content_checksum = flg & 0x04 != 0;
    let has_dict_id = flg & 0x01 != 0;
    let block_max = match (bd >> 4) & 0x07 {
        id @ 4..=7 => 1usize << (8 + 2 * id),
        id => return Err(corrupt(WHAT, format!("invalid block maximum size id {id}"))),
    };
    let desc_len = 2 + if has_content_size { 8 } else { 0 } + if has_dict_id { 4 } else { 0 };
    let desc = payload
        .get(desc_start..desc_start + desc_len)
        .ok_or_else(truncated)?;
    let hc = *payload.get(desc_start + desc_len).ok_or_else(truncated)?;
    if hc != (xxh32(desc, 0) >> 8) as u8 {
        return Err(corrupt(WHAT, "frame descriptor checksum mismatch"));
    }
    if has_dict_id {
        return Err(corrupt(
            WHAT,
            "frames that need a dictionary are not supported",
        ));
    }
    let content_size =
        has_content_size.then(|| u64::from_le_bytes(desc[2..10].try_into().unwrap()));
    *pos = desc_start + desc_len + 1;
    let frame_start = filled;
    let mut last_block_complete = true;
    loop {
        let word = le32(payload, *pos);
        if filled == out.len() && !(last_block_complete && word == Some(0)) {
            // Full: the rest of this frame is not needed. (Right before the
            // end mark, with every block whole, the checksums are checked.)
            return Ok(filled);
        }
        let word = word.ok_or_else(truncated)?;
        *pos += 4;
        if word == 0 {
            // End mark. Check what can be checked without decoding more.
            let produced = (filled - frame_start) as u64;
            if let Some(size) = content_size {
                if size != produced {
                    return Err(corrupt(
                        WHAT,
                        format!("the frame holds {produced} bytes, its header says {size}"),
                    ));
                }
            }
            if content_checksum {
                let stored = le32(payload, *pos).ok_or_else(truncated)?;
                if xxh32(&out[frame_start..filled], 0) != stored {
                    return Err(corrupt(WHAT, "content checksum mismatch"));
                }
                *pos += 4;
            }
            return Ok(filled);
        }
        let stored = word & 0x8000_0000 != 0;
        let len = (word & 0x7FFF_FFFF) as usize;
        if len > block_max {
            return Err(corrupt(
                WHAT,
                format!(
                    "a block claims {len} bytes, more than the frame's {block_max}-byte maximum"
                ),
            ));
        }
        let data = payload.get(*pos..*pos + len).ok_or_else(truncated)?;
        *pos += len;
        if block_checksums {
            let stored_sum = le32(payload, *pos).ok_or_else(truncated)?;
            if xxh32(data, 0) != stored_sum {
                return Err(corrupt(WHAT, "block checksum mismatch"));
            }
            *pos += 4;
        }
        let remaining = out.len() - filled;
        let (n, complete) = if stored {
            let n = len.min(remaining);
            out[filled..filled + n].copy_from_slice(&data[..n]);
            (n, n == len)
        } else {
            let cap = remaining.min(block_max);
            let dict_len = if independent {
                0
            } else {
                (filled - frame_start).min(64 << 10)
            };
            let buf = &mut out[filled - dict_len..filled + cap];
            match raw::decompress_exact_with_dict(data, buf, dict_len) {
                Some(n) => (n, true),
                // Corrupt, or more than we need: then decode the start only.
                None if cap < block_max => match raw::decompress_partial(data, buf, dict_len) {
                    Some(n) if n == cap => (n, false),
                    _ => return Err(corrupt(WHAT, "corrupt LZ4 block")),
                },
                None => return Err(corrupt(WHAT, "corrupt LZ4 block")),
            }
        };
        last_block_complete = complete;
        filled += n;
    }
}

/// An upper bound of what an LZ4 block of `clen` bytes can decode to
/// (a match byte of 255 extends a match by 255 bytes).
fn max_block_output(clen: usize) -> usize {
    clen.saturating_mul(255).saturating_add(16)
}

/// numcodecs' size-prefixed block or a bare block (z5). Interpretations that
/// decode exactly `out.len()` bytes win over ones that only decode a prefix
/// (a partial decode checks less of the block).
fn decode_sized_or_bare_block(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let sized = le32(payload, 0)
        .map(|prefix| (prefix as usize, &payload[4..]))
        .filter(|&(claimed, block)| claimed <= max_block_output(block.len()));
    if let Some((claimed, block)) = sized {
        if claimed == out.len() && raw::decompress_exact(block, out) == Some(claimed) {
            return Ok(());
        }
        if claimed < out.len() {
            // A whole size-prefixed block that is too short? (claimed < out.len()
            // bounds the scratch buffer.)
            let mut scratch = vec![0u8; claimed];
            if raw::decompress_exact(block, &mut scratch) == Some(claimed) {
                return Err(corrupt(
                    "size-prefixed LZ4 block",
                    format!("the block holds {claimed} bytes, {} expected", out.len()),
                ));
            }
        }
    }
    match raw::decompress_exact(payload, out) {
        Some(n) if n == out.len() => return Ok(()),
        Some(n) => {
            return Err(corrupt(
                "bare LZ4 block",
                format!("the block holds {n} bytes, {} expected", out.len()),
            ))
        }
        None => {}
    }
    // Blocks that hold more than needed: decode their start only.
    if let Some((claimed, block)) = sized {
        if claimed > out.len() && raw::decompress_partial(block, out, 0) == Some(out.len()) {
            return Ok(());
        }
    }
    if raw::decompress_partial(payload, out, 0) == Some(out.len()) {
        return Ok(());
    }
    Err(Error::codec(format!(
        "lz4: the payload is neither an LZ4Block stream, an LZ4 frame, a size-prefixed \
         LZ4 block nor a bare LZ4 block of at least {} bytes",
        out.len()
    )))
}

/// Safe wrappers of the LZ4 block functions of the C library.
mod raw {
    use std::ffi::{c_char, c_int};

    use crate::error::{Error, Result};

    // Declared in lz4.h (1.9.4 and later); lz4-sys has no bindings for them.
    extern "C" {
        fn LZ4_decompress_safe_usingDict(
            src: *const c_char,
            dst: *mut c_char,
            src_size: c_int,
            dst_capacity: c_int,
            dict_start: *const c_char,
            dict_size: c_int,
        ) -> c_int;

        fn LZ4_decompress_safe_partial_usingDict(
            src: *const c_char,
            dst: *mut c_char,
            compressed_size: c_int,
            target_output_size: c_int,
            dst_capacity: c_int,
            dict_start: *const c_char,
            dict_size: c_int,
        ) -> c_int;
    }

    /// Compresses `src` (the fast compressor) into `scratch`, which is resized
    /// as needed; returns the compressed length.
    pub(super) fn compress(src: &[u8], scratch: &mut Vec<u8>) -> Result<usize> {
        let len = c_int::try_from(src.len())
            .map_err(|_| Error::codec("lz4: a piece is too large to compress"))?;
        // SAFETY: LZ4_compressBound is a pure function of its argument.
        let bound = unsafe { lz4_sys::LZ4_compressBound(len) };
        if bound <= 0 {
            return Err(Error::codec("lz4: a piece is too large to compress"));
        }
        scratch.resize(bound as usize, 0);
        // SAFETY: `src` is valid for reading `len` bytes, `scratch` for writing
        // `bound` bytes (resized just above), and LZ4 writes at most
        // `maxDestSize` bytes. They do not overlap.
        let n = unsafe {
            lz4_sys::LZ4_compress_default(
                src.as_ptr().cast::<c_char>(),
                scratch.as_mut_ptr().cast::<c_char>(),
                len,
                bound,
            )
        };
        if n <= 0 && !src.is_empty() {
            return Err(Error::codec("lz4: compression failed"));
        }
        Ok(n.max(0) as usize)
    }

    /// Decodes the whole LZ4 block `src` into `dst`; `None` when the block is
    /// corrupt or decodes to more than `dst.len()` bytes.
    pub(super) fn decompress_exact(src: &[u8], dst: &mut [u8]) -> Option<usize> {
        let src_len = c_int::try_from(src.len()).ok()?;
        let dst_len = c_int::try_from(dst.len()).ok()?;
        // SAFETY: `src` is valid for reading `src_len` bytes and `dst` for
        // writing `dst_len` bytes; LZ4_decompress_safe never reads or writes
        // outside them, whatever the input. They do not overlap.
        let n = unsafe {
            lz4_sys::LZ4_decompress_safe(
                src.as_ptr().cast::<c_char>(),
                dst.as_mut_ptr().cast::<c_char>(),
                src_len,
                dst_len,
            )
        };
        usize::try_from(n).ok()
    }

    /// Decodes the whole LZ4 block `src` into `buf[dict_len..]`;
    /// `buf[..dict_len]` is the data that precedes it (at most 64 KiB), which
    /// matches may refer to. `None` when the block is corrupt or decodes to
    /// more than `buf.len() - dict_len` bytes.
    pub(super) fn decompress_exact_with_dict(
        src: &[u8],
        buf: &mut [u8],
        dict_len: usize,
    ) -> Option<usize> {
        assert!(dict_len <= buf.len() && dict_len <= 64 << 10);
        let src_len = c_int::try_from(src.len()).ok()?;
        let capacity = c_int::try_from(buf.len() - dict_len).ok()?;
        let base = buf.as_mut_ptr();
        // SAFETY: `src` is valid for reading `src_len` bytes. The dictionary
        // `base..base+dict_len` and the destination `base+dict_len..
        // base+buf.len()` are disjoint parts of `buf`, both derived from the
        // one mutable pointer `base`; LZ4 only reads the first and writes at
        // most `capacity` bytes to the second, whatever the input. `src` does
        // not overlap `buf`.
        let n = unsafe {
            LZ4_decompress_safe_usingDict(
                src.as_ptr().cast::<c_char>(),
                base.add(dict_len).cast::<c_char>(),
                src_len,
                capacity,
                base.cast::<c_char>().cast_const(),
                dict_len as c_int,
            )
        };
        usize::try_from(n).ok()
    }

    /// Decodes the LZ4 block `src` (exactly one whole block) into
    /// `buf[dict_len..]`, stopping once that is full; `buf[..dict_len]` is the
    /// data that precedes it (at most 64 KiB is used), which matches may refer
    /// to. Returns the number of bytes decoded, which is less than
    /// `buf.len() - dict_len` when the block holds less; `None` when corrupt.
    pub(super) fn decompress_partial(src: &[u8], buf: &mut [u8], dict_len: usize) -> Option<usize> {
        assert!(dict_len <= buf.len() && dict_len <= 64 << 10);
        let src_len = c_int::try_from(src.len()).ok()?;
        let target = c_int::try_from(buf.len() - dict_len).ok()?;
        let dict_size = dict_len as c_int;
        let base = buf.as_mut_ptr();
        // SAFETY: `src` is valid for reading `src_len` bytes and is exactly
        // one block, which LZ4's partial decoder requires for any target. The
        // dictionary `base..base+dict_len` and the destination
        // `base+dict_len..base+buf.len()` are disjoint parts of `buf`, both
        // derived from the one mutable pointer `base`; LZ4 only reads the
        // first and writes at most `target` bytes to the second. `src` does
        // not overlap `buf`.
        let n = unsafe {
            LZ4_decompress_safe_partial_usingDict(
                src.as_ptr().cast::<c_char>(),
                base.add(dict_len).cast::<c_char>(),
                src_len,
                target,
                target,
                base.cast::<c_char>().cast_const(),
                dict_size,
            )
        };
        usize::try_from(n).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::io::Write;

    fn unhex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    const README: [u8; 12] = [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6];

    #[test]
    fn token_levels() {
        assert_eq!(token_level(64), 0);
        assert_eq!(token_level(1024), 0);
        assert_eq!(token_level(1025), 1);
        assert_eq!(token_level(65536), 6);
        assert_eq!(token_level(65537), 7);
        assert_eq!(token_level(1 << 25), 15);
        assert_eq!(writing_block_size(6), 64);
        assert_eq!(writing_block_size(u32::MAX), 1 << 25);
    }

    #[test]
    fn golden_readme_example_stored() {
        let golden = unhex(
            "4c 5a 34 42 6c 6f 63 6b 16 0c 00 00 00 0c 00 00 \
             00 90 25 8b 06 00 01 00 02 00 03 00 04 00 05 00 \
             06 4c 5a 34 42 6c 6f 63 6b 16 00 00 00 00 00 00 \
             00 00 00 00 00 00",
        );
        let mut out = Vec::new();
        encode(&README, 65536, &mut out).unwrap();
        assert_eq!(out, golden);
        let mut back = [0u8; 12];
        decode(&golden, &mut back).unwrap();
        assert_eq!(back, README);
    }

    #[test]
    fn golden_256_zeros_compressed() {
        let golden = unhex(
            "4c 5a 34 42 6c 6f 63 6b \
             26 0b 00 00 00 00 01 00 00 13 9e 47 0a 1f 00 01 \
             00 e7 50 00 00 00 00 00 4c 5a 34 42 6c 6f 63 6b \
             16 00 00 00 00 00 00 00 00 00 00 00 00",
        );
        let mut back = [0xffu8; 256];
        decode(&golden, &mut back).unwrap();
        assert_eq!(back, [0u8; 256]);
        // Our encoder frames it the same way (the LZ4 bytes may differ).
        let mut out = Vec::new();
        encode(&[0u8; 256], 65536, &mut out).unwrap();
        assert_eq!(&out[..9], &golden[..9], "magic and token 0x26");
        assert_eq!(&out[13..21], &golden[13..21], "dlen and checksum");
        assert_eq!(&out[out.len() - 21..], &golden[golden.len() - 21..]);
        let mut back = [0xffu8; 256];
        decode(&out, &mut back).unwrap();
        assert_eq!(back, [0u8; 256]);
    }

    #[test]
    fn golden_two_stored_pieces_of_64() {
        let data: Vec<u8> = (0..100).collect();
        let mut golden = unhex("4c 5a 34 42 6c 6f 63 6b 10 40 00 00 00 40 00 00 00 f8 2b ca 0d");
        golden.extend_from_slice(&data[..64]);
        golden.extend(unhex(
            "4c 5a 34 42 6c 6f 63 6b 10 24 00 00 00 24 00 00 00 3a 03 58 06",
        ));
        golden.extend_from_slice(&data[64..]);
        golden.extend(unhex(
            "4c 5a 34 42 6c 6f 63 6b 10 00 00 00 00 00 00 00 00 00 00 00 00",
        ));
        let mut out = Vec::new();
        encode(&data, 64, &mut out).unwrap();
        assert_eq!(out, golden);
        let mut back = vec![0u8; 100];
        decode(&golden, &mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn empty_input_is_just_the_end_marker() {
        let mut out = Vec::new();
        encode(&[], 65536, &mut out).unwrap();
        assert_eq!(
            out,
            unhex("4c 5a 34 42 6c 6f 63 6b 16 00 00 00 00 00 00 00 00 00 00 00 00")
        );
        decode(&out, &mut []).unwrap();
        assert_eq!(
            decode(&out, &mut [0u8; 1]).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }

    fn compressible(len: usize) -> Vec<u8> {
        (0..len).map(|i| ((i / 5) % 23) as u8).collect()
    }

    #[test]
    fn many_compressed_pieces_and_partial_reads() {
        let data = compressible(10_000);
        let mut enc = Vec::new();
        encode(&data, 1000, &mut enc).unwrap();
        assert_eq!(enc[8], METHOD_LZ4, "level 0 for 1000-byte pieces");
        let mut back = vec![0u8; data.len()];
        decode(&enc, &mut back).unwrap();
        assert_eq!(back, data);
        // Fewer bytes than the stream holds: decoded as far as needed.
        for want in [1usize, 999, 1000, 1001, 9999] {
            let mut part = vec![0u8; want];
            decode(&enc, &mut part).unwrap();
            assert_eq!(part, data[..want]);
        }
        // A stream without its end marker is fine once we have what we need.
        let cut = &enc[..enc.len() - LZ4BLOCK_HEADER];
        decode(cut, &mut back).unwrap();
        assert_eq!(back, data);
    }

    fn piece(token: u8, clen: i32, dlen: i32, check: i32, body: &[u8]) -> Vec<u8> {
        let mut p = LZ4BLOCK_MAGIC.to_vec();
        p.push(token);
        p.extend_from_slice(&clen.to_le_bytes());
        p.extend_from_slice(&dlen.to_le_bytes());
        p.extend_from_slice(&check.to_le_bytes());
        p.extend_from_slice(body);
        p
    }

    #[test]
    fn hostile_lz4block_streams_are_codec_errors() {
        let data = compressible(5000);
        let mut enc = Vec::new();
        encode(&data, 65536, &mut enc).unwrap();
        let mut back = vec![0u8; data.len()];
        let codec = |payload: &[u8], out: &mut [u8]| {
            let err = decode(payload, out).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
        };
        // Truncated anywhere before the data is complete.
        for cut in [8, 20, 21, 40, enc.len() - 22] {
            codec(&enc[..cut], &mut back);
        }
        // Bad checksum.
        let mut bad = enc.clone();
        bad[17] ^= 1;
        codec(&bad, &mut back);
        // Corrupt LZ4 data.
        let mut bad = enc.clone();
        bad[30] ^= 0x5a;
        codec(&bad, &mut back);
        // Unknown method, bad magic.
        let mut bad = enc.clone();
        bad[8] = 0x36;
        codec(&bad, &mut back);
        let mut bad = enc.clone();
        bad[3] = b'b';
        codec(&bad, &mut back);
        // A piece claiming 2 GiB (decompressed or compressed).
        codec(&piece(0x2f, 100, i32::MAX, 0, &[0; 100]), &mut back);
        codec(&piece(0x2f, i32::MAX, 1 << 25, 0, &[0; 100]), &mut back);
        codec(&piece(0x26, 100, -1, 0, &[0; 100]), &mut back);
        // More than the level allows (65536 bytes at level 6).
        codec(
            &piece(0x16, 65537, 65537, 0, &vec![0; 65537]),
            &mut vec![0u8; 65537],
        );
        // RAW with different lengths, zero lengths that disagree.
        codec(&piece(0x16, 10, 11, 0, &[0; 11]), &mut back);
        codec(&piece(0x16, 0, 5, 0, &[0; 5]), &mut back);
        // An end marker with a checksum, a premature end marker.
        codec(&piece(0x16, 0, 0, 7, &[]), &mut back);
        codec(&piece(0x16, 0, 0, 0, &[]), &mut back);
        // Asking for more than the stream holds.
        codec(&enc, &mut vec![0u8; data.len() + 1]);
    }

    fn frame(data: &[u8], linked: bool, block_checksum: bool, content_checksum: bool) -> Vec<u8> {
        let mut enc = ::lz4::EncoderBuilder::new()
            .block_size(::lz4::BlockSize::Max64KB)
            .block_mode(if linked {
                ::lz4::BlockMode::Linked
            } else {
                ::lz4::BlockMode::Independent
            })
            .block_checksum(if block_checksum {
                ::lz4::liblz4::BlockChecksum::BlockChecksumEnabled
            } else {
                ::lz4::liblz4::BlockChecksum::NoBlockChecksum
            })
            .checksum(if content_checksum {
                ::lz4::ContentChecksum::ChecksumEnabled
            } else {
                ::lz4::ContentChecksum::NoChecksum
            })
            .build(Vec::new())
            .unwrap();
        enc.write_all(data).unwrap();
        let (out, res) = enc.finish();
        res.unwrap();
        out
    }

    #[test]
    fn lz4_frames_of_every_kind() {
        // Repetitive across block boundaries, so linked blocks use the prefix.
        let mut data = compressible(300_000);
        data.extend((0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
        for linked in [false, true] {
            for bsum in [false, true] {
                for csum in [false, true] {
                    let f = frame(&data, linked, bsum, csum);
                    assert_eq!(&f[..4], &[0x04, 0x22, 0x4d, 0x18]);
                    let mut back = vec![0u8; data.len()];
                    decode(&f, &mut back).unwrap();
                    assert!(back == data, "linked {linked} bsum {bsum} csum {csum}");
                    for want in [1usize, 65_535, 65_536, 65_537, 200_000] {
                        let mut part = vec![0u8; want];
                        decode(&f, &mut part).unwrap();
                        assert!(part == data[..want]);
                    }
                    assert_eq!(
                        decode(&f, &mut vec![0u8; data.len() + 1])
                            .unwrap_err()
                            .kind(),
                        ErrorKind::Codec
                    );
                }
            }
        }
    }

    #[test]
    fn concatenated_and_skippable_frames() {
        let a = compressible(1000);
        let b = compressible(3000);
        let mut payload = frame(&a, false, false, true);
        payload.extend_from_slice(&0x184D_2A53u32.to_le_bytes());
        payload.extend_from_slice(&3u32.to_le_bytes());
        payload.extend_from_slice(b"xyz");
        payload.extend(frame(&b, false, false, true));
        let mut back = vec![0u8; 4000];
        decode(&payload, &mut back).unwrap();
        assert_eq!(&back[..1000], &a[..]);
        assert_eq!(&back[1000..], &b[..]);
    }

    #[test]
    fn rust_n5_golden_frame() {
        // aschampion/rust-n5 src/compression/lz4.rs TEST_BLOCK_I16_LZ4 (payload
        // after the N5 header): i16 values 1..=6 big-endian.
        let golden = unhex(
            "04 22 4d 18 64 40 a7 0c 00 00 80 00 01 00 02 00 \
             03 00 04 00 05 00 06 00 00 00 00 41 37 33 08",
        );
        let mut back = [0u8; 12];
        decode(&golden, &mut back).unwrap();
        assert_eq!(back, README);
    }

    #[test]
    fn hostile_frames_are_codec_errors() {
        let data = compressible(100_000);
        let f = frame(&data, false, true, true);
        let mut back = vec![0u8; data.len()];
        let codec = |payload: &[u8], out: &mut [u8]| {
            let err = decode(payload, out).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
        };
        for cut in [4, 5, 6, 7, 10, f.len() / 2, f.len() - 1] {
            codec(&f[..cut], &mut back);
        }
        for pos in [4, 5, 6, 9, f.len() / 2, f.len() - 1] {
            let mut bad = f.clone();
            bad[pos] ^= 0x10;
            codec(&bad, &mut back);
        }
        // A block claiming 2 GiB.
        let mut bad = f[..7].to_vec();
        bad.extend_from_slice(&0x7fff_ffffu32.to_le_bytes());
        codec(&bad, &mut back);
    }

    fn block(data: &[u8]) -> Vec<u8> {
        let mut scratch = Vec::new();
        let n = raw::compress(data, &mut scratch).unwrap();
        scratch.truncate(n);
        scratch
    }

    #[test]
    fn numcodecs_and_bare_blocks() {
        for len in [1usize, 12, 255, 496, 512, 4096, 100_000] {
            let data = compressible(len);
            let bare = block(&data);
            let mut sized = (len as u32).to_le_bytes().to_vec();
            sized.extend_from_slice(&bare);
            for payload in [&bare, &sized] {
                let mut back = vec![0u8; len];
                decode(payload, &mut back).unwrap();
                assert_eq!(back, data, "length {len}");
                // A prefix of the data.
                let mut part = vec![0u8; len.div_ceil(2)];
                decode(payload, &mut part).unwrap();
                assert_eq!(part, data[..part.len()]);
                // More than the block holds.
                let mut more = vec![0u8; len + 1];
                let res = decode(payload, &mut more);
                assert_eq!(
                    res.map_err(|e| e.kind()),
                    Err(ErrorKind::Codec),
                    "length {len}, sized {}",
                    payload.len() != bare.len()
                );
            }
        }
    }

    #[test]
    fn hostile_blocks_are_codec_errors() {
        let data = compressible(5000);
        let bare = block(&data);
        let mut back = vec![0u8; data.len()];
        for cut in [0, 1, 3, bare.len() / 2, bare.len() - 1] {
            assert_eq!(
                decode(&bare[..cut], &mut back).unwrap_err().kind(),
                ErrorKind::Codec
            );
        }
        // A size prefix claiming 2 GiB and 4 GiB.
        for claim in [0x8000_0000u32, u32::MAX] {
            let mut sized = claim.to_le_bytes().to_vec();
            sized.extend_from_slice(&bare[..bare.len() / 2]);
            assert_eq!(
                decode(&sized, &mut back).unwrap_err().kind(),
                ErrorKind::Codec
            );
        }
        // Random bytes.
        let noise: Vec<u8> = (0..3000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(
            decode(&noise, &mut back).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }
}
