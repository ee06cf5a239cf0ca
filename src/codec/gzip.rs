//! N5 "gzip": RFC 1952 gzip members written like Java N5 (commons-compress
//! header, mtime 0, OS 0xff) or, with `useZlib`, RFC 1950 zlib streams.
//! Decoding follows the bytes, not the flag: z5 ignores `useZlib`.

use std::io::Write;

use flate2::bufread::{MultiGzDecoder, ZlibDecoder};
use flate2::write::{DeflateEncoder, ZlibEncoder};
use flate2::{Compression as Level, Crc};

use super::stream::read_exact_then_probe;
use crate::error::{Error, Result};

/// The 10-byte gzip header commons-compress' `GzipCompressorOutputStream`
/// writes: magic, deflate, no flags, mtime 0, XFL 0, OS 255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff];

/// The deflate level for an N5 gzip `level` (-1 is zlib's default, 6).
pub(crate) fn deflate_level(level: i32) -> Result<Level> {
    match level {
        -1 => Ok(Level::new(6)),
        0..=9 => Ok(Level::new(level as u32)),
        _ => Err(Error::invalid_metadata(format!(
            "gzip compression 'level' {level} is outside -1..=9"
        ))),
    }
}

fn io_err(e: std::io::Error) -> Error {
    Error::codec(format!("gzip: compression failed: {e}"))
}

/// Appends the gzip (or, with `use_zlib`, zlib) stream of `data` to `out`.
pub(crate) fn encode(data: &[u8], level: i32, use_zlib: bool, out: &mut Vec<u8>) -> Result<()> {
    let level = deflate_level(level)?;
    if use_zlib {
        let mut enc = ZlibEncoder::new(&mut *out, level);
        enc.write_all(data).map_err(io_err)?;
        enc.finish().map_err(io_err)?;
        return Ok(());
    }
    out.extend_from_slice(&GZIP_HEADER);
    let mut enc = DeflateEncoder::new(&mut *out, level);
    enc.write_all(data).map_err(io_err)?;
    enc.finish().map_err(io_err)?;
    let mut crc = Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    // ISIZE is the input length modulo 2^32 (RFC 1952).
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    Ok(())
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
    if gzip || (!looks_like_zlib(payload) && !use_zlib) {
        // Concatenated members are read as one stream, as Java N5 master does.
        read_exact_then_probe(MultiGzDecoder::new(payload), out, "gzip")
    } else {
        read_exact_then_probe(ZlibDecoder::new(payload), out, "zlib")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    const README: [u8; 12] = [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6];

    #[test]
    fn golden_gzip_level_6_matches_java() {
        let mut out = Vec::new();
        encode(&README, 6, false, &mut out).unwrap();
        let golden = [
            0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x63, 0x60, 0x64, 0x60,
            0x62, 0x60, 0x66, 0x60, 0x61, 0x60, 0x65, 0x60, 0x03, 0x00, 0xaa, 0xea, 0x6d, 0xbf,
            0x0c, 0x00, 0x00, 0x00,
        ];
        assert_eq!(out, golden);
        // Level -1 is zlib's default, 6.
        let mut minus_one = Vec::new();
        encode(&README, -1, false, &mut minus_one).unwrap();
        assert_eq!(minus_one, golden);
    }

    #[test]
    fn golden_zlib_level_5_matches_java() {
        let mut out = Vec::new();
        encode(&README, 5, true, &mut out).unwrap();
        let golden = [
            0x78, 0x5e, 0x63, 0x60, 0x64, 0x60, 0x62, 0x60, 0x66, 0x60, 0x61, 0x60, 0x65, 0x60,
            0x03, 0x00, 0x00, 0x67, 0x00, 0x16,
        ];
        assert_eq!(out, golden);
        let mut back = [0u8; 12];
        decode(&out, true, &mut back).unwrap();
        assert_eq!(back, README);
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
