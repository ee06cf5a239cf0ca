//! N5 "bzip2": `BZh<blockSize>` streams (commons-compress on the Java side).

use std::io::Write;

use super::stream::read_exact_then_probe;
use crate::error::{Error, Result};

/// Checks that `block_size` is one bzip2 accepts (1..=9).
pub(crate) fn check_block_size(block_size: u32) -> Result<()> {
    if !(1..=9).contains(&block_size) {
        return Err(Error::invalid_metadata(format!(
            "bzip2 compression 'blockSize' {block_size} is outside 1..=9"
        )));
    }
    Ok(())
}

/// Appends the bzip2 stream of `data`, with `block_size` × 100 kB blocks, to `out`.
pub(crate) fn encode(data: &[u8], block_size: u32, out: &mut Vec<u8>) -> Result<()> {
    check_block_size(block_size)?;
    let io_err = |e: std::io::Error| Error::codec(format!("bzip2: compression failed: {e}"));
    let mut enc = ::bzip2::write::BzEncoder::new(&mut *out, ::bzip2::Compression::new(block_size));
    enc.write_all(data).map_err(io_err)?;
    enc.finish().map_err(io_err)?;
    Ok(())
}

/// Decodes a bzip2 payload (concatenated streams are one stream) into `out`.
/// The decoder's memory is bounded by the format (at most 900 kB blocks).
pub(crate) fn decode(payload: &[u8], out: &mut [u8]) -> Result<()> {
    read_exact_then_probe(::bzip2::bufread::MultiBzDecoder::new(payload), out, "bzip2")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn header_names_the_block_size() {
        let mut out = Vec::new();
        encode(b"hello", 9, &mut out).unwrap();
        assert_eq!(&out[..4], b"BZh9");
        out.clear();
        encode(b"hello", 1, &mut out).unwrap();
        assert_eq!(&out[..4], b"BZh1");
        assert_eq!(
            encode(b"x", 0, &mut out).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
    }

    #[test]
    fn corrupt_and_truncated_streams_are_codec_errors() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 13) as u8).collect();
        let mut enc = Vec::new();
        encode(&data, 9, &mut enc).unwrap();
        let mut back = vec![0u8; data.len()];
        decode(&enc, &mut back).unwrap();
        assert_eq!(back, data);
        for cut in [0, 3, 10, enc.len() / 2, enc.len() - 1] {
            assert_eq!(
                decode(&enc[..cut], &mut back).unwrap_err().kind(),
                ErrorKind::Codec,
                "cut {cut}"
            );
        }
        let mut bad = enc.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x55;
        assert_eq!(
            decode(&bad, &mut back).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }
}
