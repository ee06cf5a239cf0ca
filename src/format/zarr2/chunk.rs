//! Zarr v2 chunks: the compressor's bytes of the whole chunk (edge chunks
//! too), elements in the dtype's byte order, in C order or, for
//! `"order": "F"`, Fortran order. Decoded chunks are native-endian arrays in
//! C order of the chunk shape, which is also the N5-order block of the
//! reversed shape the API works with.

use std::borrow::Cow;

use crate::error::{Error, ErrorKind, Result};
use crate::format::zarr3::chain::{transpose, untranspose};

use super::metadata::{ArrayMetadata, Compressor};
use super::pickle;
use crate::codec::Compression;
use crate::format::elements::{decode_vlen, encode_vlen, Elements};

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
            Compressor::Shared { codec, .. } => {
                crate::codec::check_decoded_size(codec, stored, n)?;
                codec.decode(stored, target)?
            }
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

/// The elements of a stored chunk of an object (`|O`) array, in C order:
/// the compressor decoded to whatever size its data has (up to 2 GiB),
/// then the object codec: `vlen-utf8`/`vlen-bytes` give packed strings or
/// bytes, `pickle` and `json2` (legacy hdmf-zarr) JSON values. `what`
/// names the chunk.
pub(crate) fn decode_elements(meta: &ArrayMetadata, stored: &[u8], what: &str) -> Result<Elements> {
    let limit = crate::format::n5::metadata::MAX_BLOCK_BYTES as usize;
    let codec = match &meta.compressor {
        Compressor::None => Compression::Raw,
        Compressor::Shared { codec, .. } => codec.clone(),
        Compressor::Lz4 { .. } => Compression::Lz4 { block_size: 0 },
    };
    let bytes = crate::codec::decode_unsized(&codec, stored, limit).map_err(|e| e.context(what))?;
    let n = meta.chunks.iter().product::<u64>() as usize;
    let elements = match meta.object_codec.as_deref() {
        Some("vlen-utf8" | "vlen-bytes") => decode_vlen(Cow::Owned(bytes), n, what)?,
        Some("pickle") => Elements::Json(pickle::decode_object_chunk(
            &bytes,
            what,
            &meta.dtype_json,
            n,
        )?),
        Some("json2") => Elements::Json(pickle::decode_json2_chunk(
            &bytes,
            what,
            &meta.dtype_json,
            n,
        )?),
        other => {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("{what}: no object codec for {other:?}"),
            ))
        }
    };
    if meta.fortran {
        Ok(from_fortran(&elements, &meta.chunks))
    } else {
        Ok(elements)
    }
}

/// The elements of a Fortran-order chunk of C-order `shape` in C order.
fn from_fortran(e: &Elements, shape: &[u64]) -> Elements {
    let n = e.len();
    // Fortran index of each C-order position.
    let rank = shape.len();
    let mut order = Vec::with_capacity(n);
    let mut idx = vec![0u64; rank];
    for _ in 0..n {
        let mut f = 0u64;
        for d in (0..rank).rev() {
            f = f * shape[d] + idx[d];
        }
        order.push(f as usize);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    match e {
        Elements::Json(v) => Elements::Json(order.iter().map(|&i| v[i].clone()).collect()),
        Elements::Packed { .. } => {
            let mut data = Vec::new();
            let mut ends = Vec::with_capacity(n);
            for &i in &order {
                data.extend_from_slice(e.bytes(i).expect("packed"));
                ends.push(data.len());
            }
            Elements::Packed { data, ends }
        }
    }
}

/// Encodes a chunk of packed elements (C order) of a `vlen-utf8` or
/// `vlen-bytes` array and appends it to `out`; legacy object codecs are
/// not written.
pub(crate) fn encode_elements(
    meta: &ArrayMetadata,
    elements: &Elements,
    out: &mut Vec<u8>,
) -> Result<()> {
    if !matches!(
        meta.object_codec.as_deref(),
        Some("vlen-utf8" | "vlen-bytes")
    ) || meta.fortran
    {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "writing object arrays encoded by {:?}{} is not supported (vlen-utf8 and vlen-bytes in C order are)",
                meta.object_codec,
                if meta.fortran { " in Fortran order" } else { "" }
            ),
        ));
    }
    let mut bytes = Vec::new();
    encode_vlen(elements, &mut bytes)?;
    match &meta.compressor {
        Compressor::None => out.extend_from_slice(&bytes),
        Compressor::Shared { codec, .. } => codec.encode(&bytes, 1, out)?,
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
