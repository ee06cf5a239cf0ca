//! Zarr v2 chunks: the compressor's bytes of the whole chunk (edge chunks
//! too), elements in the dtype's byte order, in C order or, for
//! `"order": "F"`, Fortran order. Decoded chunks are native-endian arrays in
//! C order of the chunk shape, which is also the N5-order block of the
//! reversed shape the API works with.

use crate::error::{Error, ErrorKind, Result};
use crate::format::zarr3::chain::{transpose, untranspose};

use super::metadata::{ArrayMetadata, Compressor};

/// Bytes of one decoded chunk of `meta`.
pub(crate) fn chunk_bytes(meta: &ArrayMetadata) -> usize {
    meta.chunks.iter().product::<u64>() as usize * meta.data_type.size()
}

/// The axis order that turns a C-order array into the Fortran-order one
/// (dimensions reversed).
fn reversed(rank: usize) -> Vec<usize> {
    (0..rank).rev().collect()
}

/// Chunks of object (`|O`) arrays have no binary layout: their elements
/// are decoded one by one, never by [`decode`].
fn check_layout(meta: &ArrayMetadata) -> Result<()> {
    if meta.data_type.has_layout() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "chunks of {} elements have no binary layout",
                meta.data_type
            ),
        ))
    }
}

/// Decodes the stored chunk `stored` into `out` (exactly [`chunk_bytes`]).
pub(crate) fn decode(meta: &ArrayMetadata, stored: &[u8], out: &mut [u8]) -> Result<()> {
    check_layout(meta)?;
    let n = chunk_bytes(meta);
    if out.len() != n {
        return Err(Error::new(
            ErrorKind::Internal,
            format!("chunk buffer of {} bytes, {n} expected", out.len()),
        ));
    }
    let elem = meta.data_type.size();
    let mut fortran = if meta.fortran {
        Some(vec![0u8; n])
    } else {
        None
    };
    {
        let target: &mut [u8] = fortran.as_deref_mut().unwrap_or(out);
        match &meta.compressor {
            Compressor::None => {
                if stored.len() != n {
                    return Err(Error::codec(format!(
                        "the uncompressed chunk has {} bytes, {n} expected",
                        stored.len()
                    )));
                }
                target.copy_from_slice(stored);
            }
            Compressor::Shared { codec, .. } => codec.decode(stored, target)?,
            Compressor::Lz4 { .. } => {
                crate::codec::Compression::Lz4 { block_size: 0 }.decode(stored, target)?
            }
        }
        if let Some(swap) = &meta.swap {
            swap.swap_in_place(target);
        }
    }
    if let Some(f) = fortran {
        // The stored array is the C-order array transposed by reversing
        // its dimensions.
        let rank = meta.chunks.len();
        let t_shape: Vec<u64> = meta.chunks.iter().rev().copied().collect();
        untranspose(&f, &t_shape, &reversed(rank), elem, out);
    }
    Ok(())
}

/// Encodes the chunk `data` (native, C order) and appends it to `out`.
pub(crate) fn encode(meta: &ArrayMetadata, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    check_layout(meta)?;
    let n = chunk_bytes(meta);
    if data.len() != n {
        return Err(Error::new(
            ErrorKind::Internal,
            format!("chunk of {} bytes, {n} expected", data.len()),
        ));
    }
    let elem = meta.data_type.size();
    let mut bytes = if meta.fortran {
        let mut t = vec![0u8; n];
        transpose(
            data,
            &meta.chunks,
            &reversed(meta.chunks.len()),
            elem,
            &mut t,
        );
        t
    } else {
        data.to_vec()
    };
    if let Some(swap) = &meta.swap {
        swap.swap_in_place(&mut bytes);
    }
    match &meta.compressor {
        Compressor::None => out.extend_from_slice(&bytes),
        Compressor::Shared { codec, .. } => codec.encode(&bytes, elem, out)?,
        // Written with LZ4's default acceleration, whatever the document
        // says: any acceleration gives a block every reader decodes.
        Compressor::Lz4 { .. } => crate::codec::lz4_encode_numcodecs(&bytes, out)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trips_in_every_order_byte_order_and_compressor() {
        let data: Vec<u8> = (0..24u32).flat_map(u32::to_ne_bytes).collect();
        for (dtype, order, compressor) in [
            ("<u4", "C", json!(null)),
            (">u4", "C", json!(null)),
            ("<i4", "F", json!(null)),
            (">f4", "F", json!({"id": "zlib", "level": 1})),
            ("<u4", "C", json!({"id": "gzip", "level": 5})),
            ("<u4", "F", json!({"id": "zstd", "level": 3})),
            (
                ">u4",
                "C",
                json!({"id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 2, "blocksize": 0}),
            ),
            ("<u4", "C", json!({"id": "bz2", "level": 9})),
            ("<u4", "C", json!({"id": "lzma", "preset": 1})),
            ("<u4", "F", json!({"id": "lz4", "acceleration": 1})),
        ] {
            let meta = ArrayMetadata::from_json(&json!({
                "zarr_format": 2, "shape": [4, 6], "chunks": [4, 6],
                "dtype": dtype, "order": order, "compressor": compressor, "fill_value": 0, "filters": null,
            }))
            .unwrap();
            let mut stored = Vec::new();
            encode(&meta, &data, &mut stored).unwrap();
            let mut back = vec![0u8; data.len()];
            decode(&meta, &stored, &mut back).unwrap();
            assert_eq!(back, data, "{dtype} {order} {compressor}");
        }
    }

    #[test]
    fn fortran_order_and_big_endian_are_laid_out_as_numpy_does() {
        // np.array([[0, 1, 2], [3, 4, 5]], dtype=">u2", order="F").tobytes(order="F")
        let meta = ArrayMetadata::from_json(&json!({
            "zarr_format": 2, "shape": [2, 3], "chunks": [2, 3], "dtype": ">u2", "order": "F",
            "compressor": null, "fill_value": 0, "filters": null,
        }))
        .unwrap();
        let data: Vec<u8> = (0..6u16).flat_map(u16::to_ne_bytes).collect();
        let mut stored = Vec::new();
        encode(&meta, &data, &mut stored).unwrap();
        assert_eq!(stored, [0, 0, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5]);
    }
}
