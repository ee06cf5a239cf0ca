//! N5 "gzip": RFC 1952 gzip members written like Java N5 (commons-compress
//! header, mtime 0, OS 0xff) or, with `useZlib`, RFC 1950 zlib streams.
//! Decoding follows the bytes, not the flag: z5 ignores `useZlib`.
//!
//! Deflate itself is libdeflate's whole-buffer coder (much faster than
//! streaming zlib); each thread keeps its coder state between blocks.
//! Decoding falls back to flate2's streaming decoders for what a
//! whole-buffer decoder cannot do: several concatenated members, and
//! streams longer than the block (their surplus is ignored, never decoded).

use std::cell::RefCell;

use flate2::bufread::{MultiGzDecoder, ZlibDecoder};
use libdeflater::{CompressionLvl, Compressor, Decompressor};

use super::stream::read_exact_then_probe;
use crate::error::{Error, Result};

/// The 10-byte gzip header commons-compress' `GzipCompressorOutputStream`
/// writes: magic, deflate, no flags, mtime 0, XFL 0, OS 255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff];

/// The deflate level for an N5 gzip `level` (-1 is zlib's default, 6).
pub(crate) fn deflate_level(level: i32) -> Result<i32> {
    match level {
        -1 => Ok(6),
        0..=9 => Ok(level),
        _ => Err(Error::invalid_metadata(format!(
            "gzip compression 'level' {level} is outside -1..=9"
        ))),
    }
}

thread_local! {
    /// This thread's compressor and the level it was made for.
    static COMPRESSOR: RefCell<Option<(i32, Compressor)>> = const { RefCell::new(None) };
    /// This thread's decompressor.
    static DECOMPRESSOR: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's compressor for `level` (0..=9).
fn with_compressor<T>(level: i32, f: impl FnOnce(&mut Compressor) -> T) -> Result<T> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(l, _)| *l != level) {
            let lvl = CompressionLvl::new(level)
                .map_err(|_| Error::invalid_metadata(format!("gzip level {level}")))?;
            *slot = Some((level, Compressor::new(lvl)));
        }
        let (_, compressor) = slot.as_mut().expect("set above");
        Ok(f(compressor))
    })
}

/// The 10-byte gzip header, the deflate stream, CRC-32 and ISIZE of
/// `data` appended to `out` (or, with `use_zlib`, a zlib stream).
pub(crate) fn encode(data: &[u8], level: i32, use_zlib: bool, out: &mut Vec<u8>) -> Result<()> {
    let level = deflate_level(level)?;
    with_compressor(level, |c| {
        let start = out.len();
        if !use_zlib {
            out.extend_from_slice(&GZIP_HEADER);
        }
        let body = out.len();
        let bound = if use_zlib {
            c.zlib_compress_bound(data.len())
        } else {
            c.deflate_compress_bound(data.len())
        };
        out.resize(body + bound, 0);
        let n = if use_zlib {
            c.zlib_compress(data, &mut out[body..])
        } else {
            c.deflate_compress(data, &mut out[body..])
        };
        match n {
            Ok(n) => out.truncate(body + n),
            Err(e) => {
                out.truncate(start);
                return Err(Error::codec(format!("gzip: compression failed: {e}")));
            }
        }
        if !use_zlib {
            out.extend_from_slice(&libdeflater::crc32(data).to_le_bytes());
            // ISIZE is the input length modulo 2^32 (RFC 1952).
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        }
        Ok(())
    })?
}

/// Whether `payload` starts with a zlib (RFC 1950) header: deflate method,
/// window ≤ 32 KiB and the header check `(CMF*256 + FLG) % 31 == 0`.
fn looks_like_zlib(payload: &[u8]) -> bool {
    match payload {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

/// Decodes a gzip or zlib payload into `out`, whichever the bytes are;
/// `use_zlib` only decides for a payload that is neither (for the error).
pub(crate) fn decode(payload: &[u8], use_zlib: bool, out: &mut [u8]) -> Result<()> {
    let gzip = payload.starts_with(&[0x1f, 0x8b]);
    let zlib = !gzip && (looks_like_zlib(payload) || use_zlib);
    // The fast path: one stream that decodes to exactly `out` (checksum
    // verified). Anything else goes the streaming way below.
    let exact = DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let d = slot.get_or_insert_with(Decompressor::new);
        let n = if gzip {
            d.gzip_decompress(payload, out)
        } else if zlib {
            d.zlib_decompress(payload, out)
        } else {
            return false;
        };
        n == Ok(out.len())
    });
    if exact {
        return Ok(());
    }
    if !zlib {
        // Concatenated members are read as one stream, as Java N5 master does.
        read_exact_then_probe(MultiGzDecoder::new(payload), out, "gzip")
    } else {
        read_exact_then_probe(ZlibDecoder::new(payload), out, "zlib")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const README: [u8; 12] = [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6];

    /// Java N5's gzip of the format notes' example, level 6.
    const JAVA_GZIP: [u8; 32] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x63, 0x60, 0x64, 0x60, 0x62,
        0x60, 0x66, 0x60, 0x61, 0x60, 0x65, 0x60, 0x03, 0x00, 0xaa, 0xea, 0x6d, 0xbf, 0x0c, 0x00,
        0x00, 0x00,
    ];

    #[test]
    fn golden_gzip_decodes_and_ours_has_javas_framing() {
        let mut back = [0u8; 12];
        decode(&JAVA_GZIP, false, &mut back).unwrap();
        assert_eq!(back, README);
        // Our member has Java's header and trailer (CRC-32, ISIZE); the
        // deflate stream in between is libdeflate's, any standard decoder
        // reads it.
        for level in [-1, 0, 1, 6, 9] {
            let mut out = Vec::new();
            encode(&README, level, false, &mut out).unwrap();
            assert_eq!(out[..10], JAVA_GZIP[..10], "level {level}");
            assert_eq!(out[out.len() - 8..], JAVA_GZIP[24..], "level {level}");
            let mut back = [0u8; 12];
            decode(&out, false, &mut back).unwrap();
            assert_eq!(back, README);
            let mut streamed = Vec::new();
            std::io::Read::read_to_end(&mut MultiGzDecoder::new(&out[..]), &mut streamed).unwrap();
            assert_eq!(streamed, README);
        }
    }

    #[test]
    fn golden_zlib_level_5_decodes() {
        // Java N5's zlib stream of the example, level 5.
        let java = [
            0x78, 0x5e, 0x63, 0x60, 0x64, 0x60, 0x62, 0x60, 0x66, 0x60, 0x61, 0x60, 0x65, 0x60,
            0x03, 0x00, 0x00, 0x67, 0x00, 0x16,
        ];
        let mut back = [0u8; 12];
        decode(&java, true, &mut back).unwrap();
        assert_eq!(back, README);
        let mut out = Vec::new();
        encode(&README, 5, true, &mut out).unwrap();
        assert!(looks_like_zlib(&out));
        assert_eq!(out[out.len() - 4..], java[16..], "Adler-32 trailer");
        decode(&out, true, &mut back).unwrap();
        assert_eq!(back, README);
    }

    #[test]
    fn surplus_and_concatenated_members_take_the_streaming_path() {
        let data: Vec<u8> = (0..5000u32)
            .flat_map(|i| ((i % 251) as u16).to_be_bytes())
            .collect();
        let mut one = Vec::new();
        encode(&data, 6, false, &mut one).unwrap();
        // A stream longer than the block: the first bytes, the rest ignored.
        let mut head = vec![0u8; 100];
        decode(&one, false, &mut head).unwrap();
        assert_eq!(head, data[..100]);
        // Two members read as one stream.
        let mut two = one.clone();
        encode(&data, 1, false, &mut two).unwrap();
        let mut both = vec![0u8; 2 * data.len()];
        decode(&two, false, &mut both).unwrap();
        assert_eq!(both[..data.len()], data[..]);
        assert_eq!(both[data.len()..], data[..]);
        // Too short is an error.
        let mut more = vec![0u8; data.len() + 1];
        assert!(decode(&one, false, &mut more).is_err());
    }

    #[test]
    fn appends_to_existing_output() {
        let mut out = vec![9, 9];
        encode(&README, 6, false, &mut out).unwrap();
        assert_eq!(&out[..3], &[9, 9, 0x1f]);
        let mut back = [0u8; 12];
        decode(&out[2..], false, &mut back).unwrap();
        assert_eq!(back, README);
    }

    #[test]
    fn the_readme_gzip_with_os_byte_zero_decodes() {
        // The N5 README shows OS byte 0x00 (java.util.zip); headers are ignored.
        let mut out = Vec::new();
        encode(&README, 6, false, &mut out).unwrap();
        out[9] = 0x00;
        out[4] = 0x12; // an mtime, as Python writes
        let mut back = [0u8; 12];
        decode(&out, false, &mut back).unwrap();
        assert_eq!(back, README);
    }

    #[test]
    fn follows_the_bytes_not_the_flag() {
        let mut gz = Vec::new();
        encode(&README, 6, false, &mut gz).unwrap();
        let mut zl = Vec::new();
        encode(&README, 6, true, &mut zl).unwrap();
        for (payload, flag) in [(&gz, true), (&zl, false), (&gz, false), (&zl, true)] {
            let mut back = [0u8; 12];
            decode(payload, flag, &mut back).unwrap();
            assert_eq!(back, README);
        }
    }

    #[test]
    fn concatenated_members_are_one_stream() {
        let mut two = Vec::new();
        encode(&README[..5], 6, false, &mut two).unwrap();
        encode(&README[5..], 1, false, &mut two).unwrap();
        let mut back = [0u8; 12];
        decode(&two, false, &mut back).unwrap();
        assert_eq!(back, README);
    }

    #[test]
    fn bad_crc_and_truncation_are_codec_errors() {
        let mut gz = Vec::new();
        encode(&README, 6, false, &mut gz).unwrap();
        let n = gz.len();
        gz[n - 8] ^= 1;
        let mut back = [0u8; 12];
        assert_eq!(
            decode(&gz, false, &mut back).unwrap_err().kind(),
            ErrorKind::Codec
        );

        let mut zl = Vec::new();
        encode(&README, 6, true, &mut zl).unwrap();
        let n = zl.len();
        zl[n - 1] ^= 1;
        assert_eq!(
            decode(&zl, true, &mut back).unwrap_err().kind(),
            ErrorKind::Codec
        );

        let mut gz = Vec::new();
        encode(&README, 6, false, &mut gz).unwrap();
        for cut in [0, 5, 10, 15, gz.len() - 9] {
            let err = decode(&gz[..cut], false, &mut back).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Codec, "cut at {cut}: {err}");
        }
        // Asking for more than the stream holds.
        let mut more = [0u8; 13];
        assert_eq!(
            decode(&gz, false, &mut more).unwrap_err().kind(),
            ErrorKind::Codec
        );
        // Garbage.
        assert_eq!(
            decode(b"not a gzip stream", false, &mut back)
                .unwrap_err()
                .kind(),
            ErrorKind::Codec
        );
        assert_eq!(
            decode(b"not a zlib stream", true, &mut back)
                .unwrap_err()
                .kind(),
            ErrorKind::Codec
        );
    }

    #[test]
    fn level_out_of_range_is_invalid_metadata() {
        let mut out = Vec::new();
        assert_eq!(
            encode(&README, 10, false, &mut out).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
        assert_eq!(
            encode(&README, -2, true, &mut out).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
    }
}
