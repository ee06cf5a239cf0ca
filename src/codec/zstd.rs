//! N5 "zstd" (n5-zstandard): one frame with the content size in its header
//! when encoding; any sequence of frames, with or without content size, when
//! decoding.

use std::cell::RefCell;

use super::stream::{ceil_log2, read_exact_then_probe};
use crate::error::{Error, Result};

/// The smallest window (log2) the decoder always accepts: 16 MiB, enough for
/// frames that streaming compressors write without a content size at any
/// level up to 19. Larger windows are accepted up to twice the output size.
const MIN_WINDOW_LOG_MAX: u32 = 24;
/// zstd's own ceiling on 64-bit machines.
const MAX_WINDOW_LOG_MAX: u32 = 31;

/// Checks that `level` is within zstd's range.
pub(crate) fn check_level(level: i32) -> Result<()> {
    let (min, max) = (
        ::zstd::zstd_safe::min_c_level(),
        ::zstd::zstd_safe::max_c_level(),
    );
    if !(min..=max).contains(&level) {
        return Err(Error::invalid_metadata(format!(
            "zstd compression 'level' {level} is outside {min}..={max}"
        )));
    }
    Ok(())
}

thread_local! {
    /// This thread's compression context and the level it is set to.
    static COMPRESSOR: RefCell<Option<(i32, ::zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
    /// This thread's decompression context.
    static DECOMPRESSOR: RefCell<Option<::zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Appends one zstd frame of `data` (content size in the header) to `out`.
/// Each thread keeps its compression context from block to block (making
/// one costs more than compressing a small block).
pub(crate) fn encode(data: &[u8], level: i32, out: &mut Vec<u8>) -> Result<()> {
    encode_frame(data, level, false, out)
}

/// [`encode`] with the frame's content checksum (XXH64) when `checksum`.
pub(crate) fn encode_frame(
    data: &[u8],
    level: i32,
    checksum: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    check_level(level)?;
    let fail = |e: std::io::Error| Error::codec(format!("zstd: compression failed: {e}"));
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(l, _)| *l != level) {
            *slot = Some((level, ::zstd::bulk::Compressor::new(level).map_err(fail)?));
        }
        let (_, c) = slot.as_mut().expect("set above");
        c.include_checksum(checksum).map_err(fail)?;
        // Straight into the spare capacity after what `out` holds (the
        // cursor's position): no zero fill of the bound first, which for
        // a 512 KiB block costs about a hundredth of compressing it.
        let start = out.len();
        out.reserve(::zstd::zstd_safe::compress_bound(data.len()));
        let mut cursor = std::io::Cursor::new(&mut *out);
        cursor.set_position(start as u64);
        match c.compress_to_buffer(data, &mut cursor) {
            Ok(_) => Ok(()),
            Err(e) => {
                out.truncate(start);
                Err(fail(e))
            }
        }
    })
}

/// Decodes a zstd payload into `out`, refusing frames whose window would need
/// far more memory than `out` (see [`MIN_WINDOW_LOG_MAX`]).
pub(crate) fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    // The fast path: frames that decode to exactly `out`, in one pass with
    // this thread's context, straight into `out` (no window beyond it).
    let exact = DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = ::zstd::bulk::Decompressor::new().ok();
        }
        slot.as_mut().is_some_and(
            |d| matches!(d.decompress_to_buffer(payload, &mut *out), Ok(n) if n == out.len()),
        )
    });
    if exact {
        return Ok(());
    }
    // Anything else (surplus data, truncated or corrupt frames) streams, with
    // the decoder's window bounded by the block's size.
    let mut dec = ::zstd::stream::read::Decoder::with_buffer(payload)
        .map_err(|e| Error::codec(format!("zstd: cannot start the decoder: {e}")))?;
    let window_log_max = (ceil_log2(out.len()) + 1).clamp(MIN_WINDOW_LOG_MAX, MAX_WINDOW_LOG_MAX);
    dec.window_log_max(window_log_max)
        .map_err(|e| Error::codec(format!("zstd: cannot limit the window: {e}")))?;
    read_exact_then_probe(dec, out, "zstd")
}

/// How many times its payload a zstd frame may claim to decode to and
/// still be decoded at once into an output of that size (see
/// [`decode_declared`]): blosc's bound for the same decision.
pub(crate) const DECLARED_RATIO_MAX: usize = 256;

/// Decodes a payload whose first frame declares its content size, when that
/// size is at most `limit` and at most [`DECLARED_RATIO_MAX`] times the
/// payload (plus 1 MiB), in one pass with this thread's context into a
/// vector of exactly that size; `None` when the frame declares no size or
/// a larger one, or the payload does not decode to exactly it (more
/// frames, corrupt data): the caller then streams it, growing its output
/// with what the data really decodes to.
pub(crate) fn decode_declared(payload: &[u8], limit: usize) -> Option<Vec<u8>> {
    let size = match ::zstd::zstd_safe::get_frame_content_size(payload) {
        Ok(Some(size)) => usize::try_from(size).ok()?,
        _ => return None,
    };
    let bound = payload
        .len()
        .saturating_mul(DECLARED_RATIO_MAX)
        .saturating_add(1 << 20);
    if size > limit || size > bound {
        return None;
    }
    let mut out = Vec::with_capacity(size);
    let exact = DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = ::zstd::bulk::Decompressor::new().ok();
        }
        // Straight into the vector's spare capacity: no zero fill first.
        slot.as_mut().is_some_and(
            |d| matches!(d.decompress_to_buffer(payload, &mut out), Ok(n) if n == size),
        )
    });
    exact.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn frame_header_carries_the_content_size() {
        for len in [0usize, 1, 1000, 300_000] {
            let data = vec![7u8; len];
            let mut out = Vec::new();
            encode(&data, 3, &mut out).unwrap();
            assert_eq!(&out[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
            assert_eq!(
                ::zstd::zstd_safe::get_frame_content_size(&out).ok(),
                Some(Some(len as u64)),
                "length {len}"
            );
        }
    }

    #[test]
    fn declared_sizes_decode_at_once_and_the_rest_is_refused() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut frame = Vec::new();
        encode(&data, 3, &mut frame).unwrap();
        assert_eq!(
            decode_declared(&frame, usize::MAX).as_deref(),
            Some(&data[..])
        );
        // Above the limit, or two frames (more than the first declares).
        assert_eq!(decode_declared(&frame, data.len() - 1), None);
        let mut two = frame.clone();
        two.extend_from_slice(&frame);
        assert_eq!(decode_declared(&two, usize::MAX), None);
        // A frame without its content size, and a cut frame.
        let streamed = ::zstd::stream::encode_all(&data[..], 3).unwrap();
        assert_eq!(
            ::zstd::zstd_safe::get_frame_content_size(&streamed).ok(),
            Some(None)
        );
        assert_eq!(decode_declared(&streamed, usize::MAX), None);
        assert_eq!(decode_declared(&frame[..frame.len() - 3], usize::MAX), None);
        // A header that claims more than 256 times its payload (and 1 MiB).
        let zeros = vec![0u8; 64 << 20];
        let mut bomb = Vec::new();
        encode(&zeros, 3, &mut bomb).unwrap();
        assert!(bomb.len() * DECLARED_RATIO_MAX + (1 << 20) < zeros.len());
        assert_eq!(decode_declared(&bomb, usize::MAX), None);
        let empty = {
            let mut out = Vec::new();
            encode(&[], 3, &mut out).unwrap();
            out
        };
        assert_eq!(decode_declared(&empty, usize::MAX), Some(Vec::new()));
    }

    #[test]
    fn negative_levels_and_range() {
        let data = vec![1u8; 1000];
        let mut out = Vec::new();
        encode(&data, -5, &mut out).unwrap();
        let mut back = vec![0u8; 1000];
        decode(&out, &mut back).unwrap();
        assert_eq!(back, data);
        assert_eq!(
            encode(&data, 23, &mut out).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
    }

    #[test]
    fn frames_without_content_size_and_several_frames() {
        let a = vec![3u8; 5000];
        let b: Vec<u8> = (0..7000u32).map(|i| (i % 7) as u8).collect();
        let mut payload = Vec::new();
        // A streaming frame: no content size in its header.
        let mut enc = ::zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        std::io::Write::write_all(&mut enc, &a).unwrap();
        let streamed = enc.finish().unwrap();
        assert_eq!(
            ::zstd::zstd_safe::get_frame_content_size(&streamed).ok(),
            Some(None)
        );
        payload.extend_from_slice(&streamed);
        encode(&b, 19, &mut payload).unwrap();
        let mut back = vec![0u8; a.len() + b.len()];
        decode(&payload, &mut back).unwrap();
        assert_eq!(&back[..a.len()], &a[..]);
        assert_eq!(&back[a.len()..], &b[..]);
    }

    #[test]
    fn corrupt_checksum_and_truncation_are_codec_errors() {
        let data: Vec<u8> = (0..4000u32).map(|i| (i % 17) as u8).collect();
        let mut c = ::zstd::bulk::Compressor::new(3).unwrap();
        c.include_checksum(true).unwrap();
        let mut enc = c.compress(&data).unwrap();
        let mut back = vec![0u8; data.len()];
        decode(&enc, &mut back).unwrap();
        assert_eq!(back, data);
        for cut in [0, 3, 8, enc.len() / 2, enc.len() - 1] {
            assert_eq!(
                decode(&enc[..cut], &mut back).unwrap_err().kind(),
                ErrorKind::Codec,
                "cut {cut}"
            );
        }
        let n = enc.len();
        enc[n - 1] ^= 0xff;
        assert_eq!(
            decode(&enc, &mut back).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }
}
