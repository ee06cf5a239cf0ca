//! N5 "blosc" (n5-blosc): one Blosc1 frame (c-blosc 1.x) per block.
//!
//! Only the thread-safe `_ctx` entry points of c-blosc are used (its global
//! functions share state), always with one internal thread. Every frame header
//! is checked against the payload before c-blosc sees it, and c-blosc never
//! writes more than `out.len()` bytes.

use std::ffi::{c_int, c_void, CString};

use blosc_src::{
    blosc_cbuffer_validate, blosc_compress_ctx, blosc_decompress_ctx, blosc_getitem,
    BLOSC_MAX_BUFFERSIZE, BLOSC_MAX_OVERHEAD, BLOSC_MEMCPYED, BLOSC_MIN_HEADER_LENGTH,
};

use crate::error::{Error, Result};

/// The compressors n5-blosc names (and c-blosc 1.x is built with here).
pub(crate) const CNAMES: [&str; 6] = ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"];

/// The largest internal block `blosc_getitem` may be asked to handle when a
/// frame holds more than the caller needs: it allocates about three blocks.
const GETITEM_MAX_BLOCK: usize = 4 << 20;

/// Checks blosc parameters: a known `cname`, `clevel` 0..=9, `shuffle`
/// -1..=2.
pub(crate) fn check_params(cname: &str, clevel: u32, shuffle: i32) -> Result<()> {
    if !CNAMES.contains(&cname) {
        return Err(Error::invalid_metadata(format!(
            "blosc compression 'cname' \"{cname}\" is not one of {}",
            CNAMES.join(", ")
        )));
    }
    if clevel > 9 {
        return Err(Error::invalid_metadata(format!(
            "blosc compression 'clevel' {clevel} is outside 0..=9"
        )));
    }
    if !(-1..=2).contains(&shuffle) {
        return Err(Error::invalid_metadata(format!(
            "blosc compression 'shuffle' {shuffle} is not -1, 0, 1 or 2"
        )));
    }
    Ok(())
}

/// Appends one Blosc1 frame of `data` to `out`. `elem_size` becomes the blosc
/// typesize (1 when outside 1..=255); `shuffle` -1 means byte shuffle when
/// `elem_size > 1`, else none.
pub(crate) fn encode(
    data: &[u8],
    elem_size: usize,
    cname: &str,
    clevel: u32,
    shuffle: i32,
    blocksize: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    check_params(cname, clevel, shuffle)?;
    let doshuffle = match shuffle {
        -1 if elem_size > 1 => 1,
        -1 => 0,
        other => other,
    };
    let blocksize = usize::try_from(blocksize).map_err(|_| {
        Error::invalid_metadata(format!(
            "blosc compression 'blocksize' {blocksize} is too large"
        ))
    })?;
    if data.len() > BLOSC_MAX_BUFFERSIZE as usize {
        return Err(Error::codec(format!(
            "blosc: {} bytes exceed the largest blosc frame ({} bytes)",
            data.len(),
            BLOSC_MAX_BUFFERSIZE
        )));
    }
    let typesize = if (1..=255).contains(&elem_size) {
        elem_size
    } else {
        1
    };
    let compressor = CString::new(cname).expect("compressor names have no NUL");
    let capacity = data.len() + BLOSC_MAX_OVERHEAD as usize;
    let start = out.len();
    // c-blosc writes into the spare capacity, which is not zeroed first.
    out.reserve(capacity);
    let dest = out.spare_capacity_mut();
    // SAFETY: `data` is valid for reading `data.len()` bytes (≤
    // BLOSC_MAX_BUFFERSIZE, checked above); `dest` is valid for writing
    // at least `capacity` bytes (reserved above) and c-blosc writes at most
    // `destsize` bytes, never reading them. The two buffers do not overlap.
    // `compressor` is a NUL-terminated string that outlives the call. The
    // _ctx variant uses no global state.
    let written = unsafe {
        blosc_compress_ctx(
            clevel as c_int,
            doshuffle as c_int,
            typesize,
            data.len(),
            data.as_ptr().cast::<c_void>(),
            dest.as_mut_ptr().cast::<c_void>(),
            capacity,
            compressor.as_ptr(),
            blocksize,
            1,
        )
    };
    if written <= 0 || written as usize > capacity {
        return Err(Error::codec(format!(
            "blosc: compression failed (c-blosc returned {written})"
        )));
    }
    // SAFETY: c-blosc initialised the first `written` (≤ capacity, checked)
    // bytes of the spare capacity.
    unsafe { out.set_len(start + written as usize) };
    Ok(())
}

fn le32(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

/// Decodes the Blosc1 frame at the start of `payload` into `out`.
///
/// The frame must hold at least `out.len()` bytes. When it holds more, only the
/// first `out.len()` are decoded (`blosc_getitem`), provided the frame's
/// internal block size is moderate; nothing is ever allocated from the size
/// the header claims.
pub(crate) fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let header_len = BLOSC_MIN_HEADER_LENGTH as usize;
    if payload.len() < header_len {
        return Err(Error::codec(format!(
            "blosc: a {}-byte payload is shorter than the 16-byte frame header",
            payload.len()
        )));
    }
    let (version, typesize) = (payload[0], payload[3] as usize);
    let nbytes = le32(payload, 4);
    let blocksize = le32(payload, 8);
    let cbytes = le32(payload, 12);
    if version != 2 {
        return Err(Error::codec(format!(
            "blosc: unsupported frame format version {version} (c-blosc 1.x writes 2)"
        )));
    }
    if cbytes < header_len || cbytes > payload.len() {
        return Err(Error::codec(format!(
            "blosc: the frame header claims {cbytes} compressed bytes, the payload has {}",
            payload.len()
        )));
    }
    if nbytes > BLOSC_MAX_BUFFERSIZE as usize {
        return Err(Error::codec(format!(
            "blosc: the frame header claims {nbytes} bytes, more than a blosc frame can hold"
        )));
    }
    let mut validated = 0usize;
    // SAFETY: `payload` is valid for reading `cbytes` bytes (cbytes ≤
    // payload.len(), checked above, and ≥ the 16-byte header the function
    // reads); `validated` is a valid place for the result.
    let rc = unsafe {
        blosc_cbuffer_validate(payload.as_ptr().cast::<c_void>(), cbytes, &mut validated)
    };
    if rc != 0 || validated != nbytes {
        return Err(Error::codec("blosc: the frame header is invalid"));
    }
    if nbytes < out.len() {
        return Err(Error::codec(format!(
            "blosc: the frame holds {nbytes} bytes, {} expected",
            out.len()
        )));
    }
    if out.is_empty() {
        return Ok(());
    }
    if nbytes == out.len() {
        // SAFETY: the header was validated: the frame's `cbytes` (which c-blosc
        // trusts as the source length) lie within `payload`; `out` is valid for
        // writing `out.len()` bytes and c-blosc writes at most `destsize`
        // bytes. The buffers do not overlap. The _ctx variant with one thread
        // uses no global state.
        let n = unsafe {
            blosc_decompress_ctx(
                payload.as_ptr().cast::<c_void>(),
                out.as_mut_ptr().cast::<c_void>(),
                out.len(),
                1,
            )
        };
        if n < 0 || n as usize != out.len() {
            return Err(Error::codec(format!(
                "blosc: corrupt frame (c-blosc returned {n}, {} bytes expected)",
                out.len()
            )));
        }
        return Ok(());
    }
    decode_prefix(payload, out, typesize, blocksize, nbytes)
}

/// Decodes the first `out.len()` of the `nbytes` bytes of a validated frame.
fn decode_prefix(
    payload: &[u8],
    out: &mut [u8],
    typesize: usize,
    blocksize: usize,
    nbytes: usize,
) -> Result<()> {
    let memcpyed = payload[2] & BLOSC_MEMCPYED as u8 != 0;
    if memcpyed {
        // A stored frame: the data follows the header as is.
        let data = payload.get(16..16 + nbytes).ok_or_else(|| {
            Error::codec("blosc: a stored frame is shorter than its header claims")
        })?;
        out.copy_from_slice(&data[..out.len()]);
        return Ok(());
    }
    if typesize == 0 || blocksize == 0 || blocksize > nbytes {
        return Err(Error::codec("blosc: the frame header is invalid"));
    }
    if blocksize > GETITEM_MAX_BLOCK.max(out.len()) {
        return Err(Error::codec(format!(
            "blosc: the frame holds {nbytes} bytes in blocks of {blocksize}, more than \
             the {} bytes expected; refusing to decode a part of it",
            out.len()
        )));
    }
    let nitems = out.len().div_ceil(typesize);
    let wanted = nitems * typesize;
    if wanted > nbytes || nitems > c_int::MAX as usize {
        return Err(Error::codec(format!(
            "blosc: the frame holds {nbytes} bytes, not a whole number of {typesize}-byte items covering {}",
            out.len()
        )));
    }
    if wanted == out.len() {
        getitem(payload, nitems, out)
    } else {
        let mut tmp = vec![0u8; wanted];
        getitem(payload, nitems, &mut tmp)?;
        let len = out.len();
        out.copy_from_slice(&tmp[..len]);
        Ok(())
    }
}

/// Decodes a whole Blosc1 frame whose decoded size the caller does not
/// know, up to `limit` bytes. A frame whose header claims at most 256 times
/// its compressed size (more than any lz4 or blosclz frame can expand) is
/// decoded at once; a larger claim is decoded one internal block at a time
/// (blocks of at most 4 MiB), so memory follows what the data really
/// decodes to.
pub(crate) fn decode_unsized(payload: &[u8], limit: usize) -> Result<Vec<u8>> {
    if payload.len() < BLOSC_MIN_HEADER_LENGTH as usize {
        return Err(Error::codec(format!(
            "blosc: a {}-byte payload is shorter than the 16-byte frame header",
            payload.len()
        )));
    }
    let nbytes = le32(payload, 4);
    let blocksize = le32(payload, 8);
    let cbytes = le32(payload, 12).min(payload.len());
    let typesize = (payload[3] as usize).max(1);
    if nbytes > limit {
        return Err(Error::codec(format!(
            "blosc: the frame claims {nbytes} bytes, more than {limit}"
        )));
    }
    if nbytes <= cbytes.saturating_mul(256) + (1 << 20) {
        let mut out = vec![0u8; nbytes];
        decode(payload, &mut out)?;
        return Ok(out);
    }
    let memcpyed = payload[2] & BLOSC_MEMCPYED as u8 != 0;
    if payload[0] != 2 || nbytes > BLOSC_MAX_BUFFERSIZE as usize {
        return Err(Error::codec("blosc: the frame header is invalid"));
    }
    if memcpyed
        || blocksize == 0
        || blocksize > GETITEM_MAX_BLOCK
        || !blocksize.is_multiple_of(typesize)
        || !nbytes.is_multiple_of(typesize)
    {
        return Err(Error::codec(format!(
            "blosc: a frame of {cbytes} bytes claiming {nbytes} in blocks of {blocksize}"
        )));
    }
    // Validated like `decode` does before c-blosc sees it.
    let mut validated = 0usize;
    // SAFETY: `payload` is valid for `cbytes` ≤ payload.len() bytes, at
    // least the 16-byte header; `validated` is a valid place.
    let rc = unsafe {
        blosc_cbuffer_validate(payload.as_ptr().cast::<c_void>(), cbytes, &mut validated)
    };
    if rc != 0 || validated != nbytes {
        return Err(Error::codec("blosc: the frame header is invalid"));
    }
    let mut out = Vec::new();
    while out.len() < nbytes {
        let start = out.len();
        let len = blocksize.min(nbytes - start);
        out.resize(start + len, 0);
        getitem_at(payload, start / typesize, len / typesize, &mut out[start..])?;
    }
    Ok(out)
}

/// `blosc_getitem` of the first `nitems` items of a frame that
/// [`decode_prefix`] checked, into `dest` (exactly `nitems * typesize` bytes).
fn getitem(payload: &[u8], nitems: usize, dest: &mut [u8]) -> Result<()> {
    getitem_at(payload, 0, nitems, dest)
}

/// `blosc_getitem` of `nitems` items from item `start` of a frame whose
/// header was checked, into `dest` (exactly `nitems * typesize` bytes,
/// within the frame's `nbytes`).
fn getitem_at(payload: &[u8], start: usize, nitems: usize, dest: &mut [u8]) -> Result<()> {
    if start > c_int::MAX as usize || nitems > c_int::MAX as usize {
        return Err(Error::codec("blosc: more items than c-blosc can address"));
    }
    // SAFETY: the header was validated (version, cbytes within `payload`,
    // nbytes ≤ BLOSC_MAX_BUFFERSIZE, 0 < blocksize ≤ nbytes, typesize > 0) and
    // `nitems` items of `typesize` bytes from item `start` lie within the
    // frame's `nbytes`, so c-blosc takes no early exit that would leak or
    // print; `dest` is valid for writing `nitems * typesize` bytes, which is
    // all blosc_getitem writes. It uses a local context, no global state.
    let n = unsafe {
        blosc_getitem(
            payload.as_ptr().cast::<c_void>(),
            start as c_int,
            nitems as c_int,
            dest.as_mut_ptr().cast::<c_void>(),
        )
    };
    if n < 0 || n as usize != dest.len() {
        return Err(Error::codec(format!(
            "blosc: corrupt frame (c-blosc returned {n}, {} bytes expected)",
            dest.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| ((i / 3) % 50) as u8).collect()
    }

    #[test]
    fn frame_header_records_typesize_and_shuffle() {
        let data = sample(4000);
        for (elem, shuffle, want_ts, want_flag) in [
            (2usize, 1, 2u8, 0x01u8),
            (8, -1, 8, 0x01),
            (1, -1, 1, 0x00),
            (4, 2, 4, 0x04),
            (300, 0, 1, 0),
        ] {
            let mut out = Vec::new();
            encode(&data, elem, "lz4", 5, shuffle, 0, &mut out).unwrap();
            assert_eq!(out[0], 2, "format version");
            assert_eq!(out[3], want_ts, "typesize for elem {elem}");
            assert_eq!(
                out[2] & 0x05,
                want_flag,
                "shuffle flags for {elem}/{shuffle}"
            );
            assert_eq!(le32(&out, 4), data.len());
            assert_eq!(le32(&out, 12), out.len());
            let mut back = vec![0u8; data.len()];
            decode(&out, &mut back).unwrap();
            assert_eq!(back, data);
        }
    }

    #[test]
    fn every_compressor_round_trips() {
        let data = sample(10_000);
        for cname in CNAMES {
            for shuffle in [0, 1, 2] {
                let mut out = vec![0xAA];
                encode(&data, 4, cname, 9, shuffle, 0, &mut out).unwrap();
                let mut back = vec![0u8; data.len()];
                decode(&out[1..], &mut back).unwrap();
                assert_eq!(back, data, "{cname} shuffle {shuffle}");
            }
        }
        // The requested blocksize is honoured where c-blosc does not enlarge
        // it for splitting (zstd never splits in its default mode).
        let mut out = Vec::new();
        encode(&data, 2, "zstd", 9, 1, 256, &mut out).unwrap();
        assert_eq!(le32(&out, 8), 256, "requested blocksize");
        let mut back = vec![0u8; data.len()];
        decode(&out, &mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn bad_parameters_are_invalid_metadata() {
        let mut out = Vec::new();
        for (cname, clevel, shuffle) in [("lzma", 5, 0), ("lz4", 10, 0), ("lz4", 5, 3)] {
            let err = encode(b"abc", 1, cname, clevel, shuffle, 0, &mut out).unwrap_err();
            assert_eq!(
                err.kind(),
                ErrorKind::InvalidMetadata,
                "{cname} {clevel} {shuffle}"
            );
        }
    }

    #[test]
    fn a_frame_holding_more_decodes_its_prefix() {
        // Compressed frames (several internal blocks) and stored frames.
        let data = sample(100_000);
        for (cname, clevel, elem) in [("zstd", 5, 4usize), ("blosclz", 0, 2), ("lz4", 5, 8)] {
            let mut enc = Vec::new();
            encode(&data, elem, cname, clevel, 1, 4096, &mut enc).unwrap();
            for want in [1usize, 7, 4096, 4097, 99_999] {
                let mut back = vec![0u8; want];
                decode(&enc, &mut back).unwrap();
                assert_eq!(back, data[..want], "{cname} prefix {want}");
            }
        }
    }

    #[test]
    fn hostile_frames_are_codec_errors() {
        let data = sample(5000);
        let mut enc = Vec::new();
        encode(&data, 2, "lz4", 5, 1, 0, &mut enc).unwrap();
        let mut back = vec![0u8; data.len()];

        // Truncated payloads.
        for cut in [0, 5, 15, 16, enc.len() - 1] {
            assert_eq!(
                decode(&enc[..cut], &mut back).unwrap_err().kind(),
                ErrorKind::Codec
            );
        }
        // More bytes wanted than the frame holds.
        let mut more = vec![0u8; data.len() + 1];
        assert_eq!(
            decode(&enc, &mut more).unwrap_err().kind(),
            ErrorKind::Codec
        );
        // A header claiming 2 GiB (over the maximum) or 1 GiB of data.
        for claim in [0x8000_0000u32, 0x4000_0000] {
            let mut bad = enc.clone();
            bad[4..8].copy_from_slice(&claim.to_le_bytes());
            let err = decode(&bad, &mut back).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
        }
        // A header claiming 1 GiB in 1 GiB blocks, wanted 10 bytes.
        let mut bad = enc.clone();
        bad[4..8].copy_from_slice(&0x4000_0000u32.to_le_bytes());
        bad[8..12].copy_from_slice(&0x4000_0000u32.to_le_bytes());
        let mut small = [0u8; 10];
        assert_eq!(
            decode(&bad, &mut small).unwrap_err().kind(),
            ErrorKind::Codec
        );
        // cbytes larger than the payload, or smaller than the header.
        for cbytes in [enc.len() as u32 + 1, 3, u32::MAX] {
            let mut bad = enc.clone();
            bad[12..16].copy_from_slice(&cbytes.to_le_bytes());
            assert_eq!(
                decode(&bad, &mut back).unwrap_err().kind(),
                ErrorKind::Codec
            );
        }
        // Wrong version, corrupt bytes all over the body.
        let mut bad = enc.clone();
        bad[0] = 3;
        assert_eq!(
            decode(&bad, &mut back).unwrap_err().kind(),
            ErrorKind::Codec
        );
        for pos in (16..enc.len()).step_by(7) {
            let mut bad = enc.clone();
            bad[pos] ^= 0xff;
            // Must not panic or crash; corrupt data may or may not be detected.
            let _ = decode(&bad, &mut back);
        }
    }

    #[test]
    fn empty_input() {
        let mut enc = Vec::new();
        encode(&[], 4, "zstd", 5, 1, 0, &mut enc).unwrap();
        assert_eq!(enc.len(), 16);
        decode(&enc, &mut []).unwrap();
        assert_eq!(
            decode(&enc, &mut [0u8; 1]).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }
}
