//! Decoding a payload whose decoded size is not known before it is decoded
//! (chunks of variable-length strings and bytes): the output grows with
//! what the data really decodes to, up to a limit, and is never allocated
//! from a size a header claims beyond what the payload can hold.

use std::io::Read;

use super::{blosc, lz4, Compression};
use crate::error::{Error, Result};

/// Reads all of `reader` (a decompressor) into a vector, refusing more
/// than `limit` bytes.
fn read_all(reader: impl Read, limit: usize, what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| {
            Error::codec(format!(
                "{what}: corrupt data after {} bytes: {e}",
                out.len()
            ))
        })?;
    if out.len() > limit {
        return Err(Error::codec(format!(
            "{what}: the payload decodes to more than {limit} bytes"
        )));
    }
    Ok(out)
}

/// Decodes `payload`, compressed with `c`, whatever its decoded size, up to
/// `limit` bytes ([`crate::error::ErrorKind::Codec`] beyond).
pub(crate) fn decode_unsized(c: &Compression, payload: &[u8], limit: usize) -> Result<Vec<u8>> {
    match c {
        Compression::Raw => {
            if payload.len() > limit {
                return Err(Error::codec(format!(
                    "raw: {} bytes, more than {limit}",
                    payload.len()
                )));
            }
            Ok(payload.to_vec())
        }
        Compression::Gzip { .. } => {
            if payload.starts_with(&[0x1f, 0x8b]) {
                read_all(flate2::bufread::MultiGzDecoder::new(payload), limit, "gzip")
            } else {
                read_all(flate2::bufread::ZlibDecoder::new(payload), limit, "zlib")
            }
        }
        Compression::Zstd { .. } => {
            // A frame that declares a size it can plausibly hold is decoded
            // at once into an output of that size; anything else streams.
            if let Some(out) = super::zstd::decode_declared(payload, limit) {
                return Ok(out);
            }
            let dec = ::zstd::stream::read::Decoder::with_buffer(payload)
                .map_err(|e| Error::codec(format!("zstd: cannot start the decoder: {e}")))?;
            read_all(dec, limit, "zstd")
        }
        Compression::Bzip2 { .. } => read_all(
            ::bzip2::bufread::MultiBzDecoder::new(payload),
            limit,
            "bzip2",
        ),
        Compression::Xz { .. } => read_all(
            liblzma::bufread::XzDecoder::new_multi_decoder(payload),
            limit,
            "xz",
        ),
        Compression::Lz4 { .. } => {
            // numcodecs' framing: the decoded size, then one LZ4 block,
            // which expands at most 255-fold.
            let size = payload
                .get(..4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
                .ok_or_else(|| Error::codec("lz4: a payload shorter than its size prefix"))?;
            if size > limit || size > payload.len().saturating_mul(255) + 64 {
                return Err(Error::codec(format!(
                    "lz4: a size prefix of {size} bytes that {} bytes cannot hold",
                    payload.len()
                )));
            }
            let mut out = vec![0u8; size];
            lz4::decode(payload, &mut out)?;
            Ok(out)
        }
        Compression::Blosc { .. } => blosc::decode_unsized(payload, limit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn codecs() -> Vec<Compression> {
        vec![
            Compression::Raw,
            Compression::Gzip {
                level: 5,
                use_zlib: false,
            },
            Compression::Gzip {
                level: 5,
                use_zlib: true,
            },
            Compression::Zstd { level: 3 },
            Compression::Bzip2 { block_size: 1 },
            Compression::Xz { preset: 1 },
            Compression::Blosc {
                cname: "zstd".into(),
                clevel: 5,
                shuffle: 0,
                blocksize: 0,
            },
            Compression::Blosc {
                cname: "lz4".into(),
                clevel: 5,
                shuffle: 1,
                blocksize: 0,
            },
        ]
    }

    #[test]
    fn every_codec_decodes_to_the_size_its_data_has() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for c in codecs() {
            let mut enc = Vec::new();
            c.encode(&text, 1, &mut enc).unwrap();
            assert_eq!(decode_unsized(&c, &enc, 1 << 30).unwrap(), text, "{c:?}");
            let e = decode_unsized(&c, &enc, text.len() - 1).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Codec, "{c:?}");
            if enc.len() > 64 {
                assert!(
                    decode_unsized(&c, &enc[..enc.len() / 2], 1 << 30).is_err()
                        || c == Compression::Raw,
                    "{c:?}"
                );
            }
        }
        let mut enc = Vec::new();
        crate::codec::lz4_encode_numcodecs(&text, &mut enc).unwrap();
        let lz4 = Compression::Lz4 { block_size: 0 };
        assert_eq!(decode_unsized(&lz4, &enc, 1 << 30).unwrap(), text);
        // A size prefix the block cannot hold allocates nothing of it.
        let mut lying = enc.clone();
        lying[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode_unsized(&lz4, &lying, usize::MAX).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }

    #[test]
    fn blosc_frames_of_high_ratio_decode_block_by_block() {
        // 24 MiB of zeros: zstd inside blosc compresses them far beyond
        // 256:1, so the frame is decoded one internal block at a time.
        let zeros = vec![0u8; 24 << 20];
        let c = Compression::Blosc {
            cname: "zstd".into(),
            clevel: 5,
            shuffle: 0,
            blocksize: 1 << 20,
        };
        let mut enc = Vec::new();
        c.encode(&zeros, 1, &mut enc).unwrap();
        assert!(
            enc.len() * 256 + (1 << 20) < zeros.len(),
            "{} bytes",
            enc.len()
        );
        assert_eq!(decode_unsized(&c, &enc, 1 << 30).unwrap(), zeros);
        // A frame that claims more than its blocks hold fails, having
        // allocated no more than what it really decoded plus a block.
        let mut lying = enc.clone();
        lying[4..8].copy_from_slice(&(200u32 << 20).to_le_bytes());
        assert_eq!(
            decode_unsized(&c, &lying, 1 << 30).unwrap_err().kind(),
            ErrorKind::Codec
        );
        assert_eq!(
            decode_unsized(&c, &enc, 1 << 20).unwrap_err().kind(),
            ErrorKind::Codec
        );
    }
}
