//! N5 "xz": the `.xz` container (LZMA2, CRC64 check) as Java's
//! `XZCompressorOutputStream` writes it.

use std::io::Write;

use liblzma::stream::{Check, Stream, CONCATENATED};

use super::stream::read_exact_then_probe;
use crate::error::{Error, Result};

/// Decoder memory beyond the output: enough for the 64 MiB dictionary of
/// preset 9, the largest any N5 `preset` asks for. liblzma refuses streams
/// that need more, so a hostile header cannot make it allocate without bound.
const DECODER_MEMLIMIT: u64 = 96 << 20;

/// Checks that `preset` is one liblzma accepts (0..=9).
pub(crate) fn check_preset(preset: u32) -> Result<()> {
    if preset > 9 {
        return Err(Error::invalid_metadata(format!(
            "xz compression 'preset' {preset} is outside 0..=9"
        )));
    }
    Ok(())
}

/// Appends the `.xz` stream of `data`, compressed with `preset`, to `out`.
pub(crate) fn encode(data: &[u8], preset: u32, out: &mut Vec<u8>) -> Result<()> {
    check_preset(preset)?;
    let stream = Stream::new_easy_encoder(preset, Check::Crc64)
        .map_err(|e| Error::codec(format!("xz: cannot start the encoder: {e}")))?;
    let io_err = |e: std::io::Error| Error::codec(format!("xz: compression failed: {e}"));
    let mut enc = liblzma::write::XzEncoder::new_stream(&mut *out, stream);
    enc.write_all(data).map_err(io_err)?;
    enc.finish().map_err(io_err)?;
    Ok(())
}

/// Decodes an `.xz` payload (concatenated streams allowed, checks verified)
/// into `out`.
pub(crate) fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    let memlimit = DECODER_MEMLIMIT.saturating_add(out.len() as u64);
    let stream = Stream::new_stream_decoder(memlimit, CONCATENATED)
        .map_err(|e| Error::codec(format!("xz: cannot start the decoder: {e}")))?;
    read_exact_then_probe(
        liblzma::bufread::XzDecoder::new_stream(payload, stream),
        out,
        "xz",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn writes_an_xz_container_with_crc64() {
        let mut out = Vec::new();
        encode(b"hello hello hello", 6, &mut out).unwrap();
        assert_eq!(&out[..6], &[0xfd, b'7', b'z', b'X', b'Z', 0x00]);
        // Stream flags: check type 0x04 = CRC64.
        assert_eq!(&out[6..8], &[0x00, 0x04]);
        assert_eq!(&out[out.len() - 2..], b"YZ");
        assert_eq!(
            encode(b"x", 10, &mut out).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
    }

    #[test]
    fn bad_check_and_truncation_are_codec_errors() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut enc = Vec::new();
        encode(&data, 1, &mut enc).unwrap();
        let mut back = vec![0u8; data.len()];
        decode(&enc, &mut back).unwrap();
        assert_eq!(back, data);
        for cut in [0, 6, 12, enc.len() / 2, enc.len() - 1] {
            assert_eq!(
                decode(&enc[..cut], &mut back).unwrap_err().kind(),
                ErrorKind::Codec,
                "cut {cut}"
            );
        }
        // Corrupt a byte of compressed data or of the CRC64 of the block.
        for pos in [enc.len() / 2, 40] {
            let mut bad = enc.clone();
            bad[pos] ^= 0x01;
            assert_eq!(
                decode(&bad, &mut back).unwrap_err().kind(),
                ErrorKind::Codec
            );
        }
    }
}
