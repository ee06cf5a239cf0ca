//! What the `hdf5_shards` member of a Zarr v3 array allows (hdf5.md A2):
//! an array that carries it (`metadata` reads it) has every shard libn5
//! writes made an HDF5 file as well (`shard` lays the file out with
//! `format::hdf5::shard_file`), when its codecs are ones an HDF5 chunk can
//! hold; otherwise every write to it is refused with the reason, which
//! this file gives.

use serde_json::Value;

use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::hdf5::shard_file::MAX_RANK;

use super::metadata::{hdf5_shards_member, ArrayMetadata, CodecSpec, Endian, HDF5_SHARDS};

/// Why HDF5 shards cannot be written for an array of `dtype` whose chunk
/// grid is `grid` (the shard shape, C order) and whose codecs are `codecs`
/// (hdf5.md A2); `None` when they can.
pub(crate) fn refusal(dtype: DataType, grid: &[u64], codecs: &[CodecSpec]) -> Option<String> {
    if !dtype.is_numeric() {
        return Some(format!(
            "data type {dtype}: HDF5 shards hold the ten numeric types"
        ));
    }
    let rank = grid.len();
    if rank == 0 {
        return Some("a rank-0 array: HDF5 chunks only datasets of rank 1 and more".into());
    }
    if rank > MAX_RANK {
        return Some(format!(
            "rank {rank}: HDF5 datasets have at most {MAX_RANK} dimensions"
        ));
    }
    let transpose = "'transpose': HDF5 chunks are C order; there is no transpose filter";
    let (chunk_shape, inner, index) =
        match codecs {
            [CodecSpec::Sharding {
                chunk_shape,
                codecs,
                index_codecs,
                ..
            }] => (chunk_shape, codecs, index_codecs),
            [CodecSpec::Sharding { .. }, after, ..] => {
                return Some(format!(
                "codec '{}' after 'sharding_indexed': the shard file must itself be the HDF5 file",
                after.name()
            ))
            }
            [CodecSpec::Transpose { .. }, ..] => return Some(transpose.into()),
            _ => return Some(
                "the array is not sharded: HDF5 shards need codecs = exactly [sharding_indexed]"
                    .into(),
            ),
        };
    let mut compressors = 0;
    for codec in inner {
        let why = match codec {
            CodecSpec::Bytes { .. } => continue,
            CodecSpec::Zstd { .. } | CodecSpec::Blosc { .. } => {
                compressors += 1;
                if compressors < 2 {
                    continue;
                }
                "two compressors: HDF5 gets one filter here".to_string()
            }
            CodecSpec::Gzip { .. } => "inner codec 'gzip': HDF5's deflate filter is zlib (RFC 1950) while Zarr's gzip codec is gzip (RFC 1952): no HDF5 reader could decode the chunks; use zstd or blosc".into(),
            CodecSpec::Crc32c => "inner codec 'crc32c': HDF5 has no CRC32C filter (its Fletcher32 is another checksum)".into(),
            CodecSpec::Transpose { .. } => format!("inner codec {transpose}"),
            CodecSpec::Sharding { .. } => "nested sharding: an HDF5 chunk cannot itself be a shard".into(),
            CodecSpec::Vlen { .. } => "variable-length elements: HDF5 shards hold the ten numeric types".into(),
            CodecSpec::Numcodecs { id, .. } => format!("inner codec 'numcodecs.{id}': HDF5 shards take zstd or blosc"),
        };
        return Some(why);
    }
    let little = CodecSpec::Bytes {
        endian: Some(Endian::Little),
    };
    if !(**index == [little.clone()] || **index == [little, CodecSpec::Crc32c]) {
        let names: Vec<&str> = index.iter().map(CodecSpec::name).collect();
        return Some(format!(
            "index_codecs {names:?} (or a big-endian index): the index codecs must be `bytes` little (+ `crc32c`)"
        ));
    }
    let chunk_bytes = chunk_shape
        .iter()
        .try_fold(dtype.size() as u64, |a, &c| a.checked_mul(c));
    if chunk_bytes.is_none_or(|b| b >= 1 << 32) {
        return Some(format!(
            "an inner chunk of {chunk_shape:?} {}: HDF5 chunks hold less than 4 GiB",
            dtype.name()
        ));
    }
    None
}

/// Checks that data may be written to the array whose metadata document
/// is `document`: an array with the `hdf5_shards` member whose codecs HDF5
/// shards cannot hold (or a Zarr v2 array with it) is refused with
/// [`ErrorKind::Unsupported`] and the reason. Arrays without the member
/// pass at once.
pub(crate) fn check_write(document: &Value) -> Result<()> {
    let Some(map) = document.as_object() else {
        return Ok(());
    };
    if hdf5_shards_member(map)?.is_none() {
        return Ok(());
    }
    let unsupported = |why: String| {
        Err(Error::new(
            ErrorKind::Unsupported,
            format!("'{HDF5_SHARDS}' cannot be honoured: {why}"),
        ))
    };
    if map.get("zarr_format").and_then(Value::as_u64) != Some(3) {
        return unsupported("HDF5 shards are shards of Zarr v3 arrays".into());
    }
    let meta = ArrayMetadata::from_members(map)?;
    match refusal(meta.data_type, &meta.chunk_shape, &meta.codecs) {
        Some(why) => unsupported(why),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::hdf5::inspect_shard;
    use crate::format::zarr3::chain::Chain;
    use crate::format::zarr3::metadata::Hdf5Shards;
    use crate::format::zarr3::shard::{decode_whole, ShardLayout};

    fn le() -> Value {
        json!({"name": "bytes", "configuration": {"endian": "little"}})
    }

    /// A uint16 array document (fill value 7) of C-order `shape` in shards
    /// of `shard`, with the `hdf5_shards` member and the chain `codecs`.
    fn document(shape: &[u64], shard: &[u64], codecs: Value) -> Value {
        json!({
            "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 7,
            "codecs": codecs, "hdf5_shards": {"must_understand": false}
        })
    }

    fn sharding(inner: &[u64], codecs: Value, index: Value, location: &str) -> Value {
        json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs, "index_codecs": index,
            "index_location": location}})
    }

    #[test]
    fn every_refusal_of_the_contract_names_its_reason() {
        let crc = json!({"name": "crc32c"});
        let zstd = json!({"name": "zstd", "configuration": {"level": 1}});
        let blosc = json!({"name": "blosc", "configuration": {"cname": "lz4", "typesize": 2}});
        let index = json!([le(), crc]);
        let s = |codecs: Value| json!([sharding(&[2, 2], codecs, index.clone(), "end")]);
        for (codecs, says) in [
            (s(json!([le(), {"name": "gzip"}])), "RFC 1952"),
            (s(json!([le(), crc])), "no CRC32C filter"),
            (s(json!([le(), zstd, blosc])), "one filter"),
            (
                s(json!([sharding(
                    &[1, 1],
                    json!([le()]),
                    index.clone(),
                    "end"
                )])),
                "cannot itself be a shard",
            ),
            (
                s(json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, le()])),
                "no transpose filter",
            ),
            (
                json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
                       sharding(&[2, 2], json!([le()]), index.clone(), "end")]),
                "no transpose filter",
            ),
            (
                json!([sharding(&[2, 2], json!([le()]), index.clone(), "end"), crc]),
                "must itself be the HDF5 file",
            ),
            (json!([le()]), "not sharded"),
            (
                json!([sharding(
                    &[2, 2],
                    json!([le()]),
                    json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
                    "end"
                )]),
                "`bytes` little",
            ),
            (
                json!([sharding(
                    &[2, 2],
                    json!([le()]),
                    json!([le(), crc, crc]),
                    "end"
                )]),
                "`bytes` little",
            ),
        ] {
            let doc = document(&[8, 8], &[4, 4], codecs.clone());
            let e = check_write(&doc).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{codecs}: {e}");
            assert!(e.message().contains(says), "{codecs}: {e}");
            // The array still opens (for reading); writes are refused above.
            ArrayMetadata::from_json(&doc).unwrap();
        }
        for codecs in [json!([le()]), json!([le(), zstd]), json!([le(), blosc])] {
            for index in [json!([le()]), json!([le(), crc])] {
                let doc = document(
                    &[8, 8],
                    &[4, 4],
                    json!([sharding(&[2, 2], codecs.clone(), index, "start")]),
                );
                check_write(&doc).unwrap();
                let m = ArrayMetadata::from_json(&doc).unwrap();
                let [CodecSpec::Sharding { hdf5: Some(h), .. }] = m.codecs.as_slice() else {
                    panic!("{codecs}: no HDF5 shards")
                };
                assert_eq!(h.array_shape, [8, 8]);
            }
        }
        // A value that is not an object is invalid metadata, also at open.
        let mut doc = document(&[8, 8], &[4, 4], s(json!([le()])));
        doc["hdf5_shards"] = json!(true);
        let e = ArrayMetadata::from_json(&doc).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{e}");
        assert_eq!(
            check_write(&doc).unwrap_err().kind(),
            ErrorKind::InvalidMetadata
        );
        // Members inside are no reason to refuse, "must_understand": true
        // neither (the library understands it).
        doc["hdf5_shards"] = json!({"must_understand": true, "note": [1]});
        check_write(&doc).unwrap();
        // Zarr v2 arrays have no HDF5 shards.
        let v2 = json!({"zarr_format": 2, "hdf5_shards": {"must_understand": false}});
        assert_eq!(check_write(&v2).unwrap_err().kind(), ErrorKind::Unsupported);
        // Without the member nothing is checked.
        check_write(&json!({"zarr_format": 3})).unwrap();
    }

    #[test]
    fn an_edge_shard_is_clipped_to_the_array() {
        let h = Hdf5Shards {
            array_shape: vec![10, 3],
        };
        assert_eq!(h.extent(&[4, 4], None), [4, 4]);
        assert_eq!(h.extent(&[4, 4], Some(&[0, 0])), [4, 3]);
        assert_eq!(h.extent(&[4, 4], Some(&[2, 0])), [2, 3]);
        assert_eq!(h.extent(&[4, 4], Some(&[3, 1])), [0, 0]);
    }

    /// The chain of a chunk of the grid of the array of `doc`.
    fn chain(doc: &Value) -> Chain {
        let m = ArrayMetadata::from_json(doc).unwrap();
        Chain::new(m.codecs, m.data_type, m.chunk_shape, m.fill_value)
    }

    #[test]
    fn hdf5_shards_read_back_as_zarr_shards_and_parse_as_hdf5() {
        let zstd = json!({"name": "zstd", "configuration": {"level": 3, "checksum": true}});
        for (location, codecs, index) in [
            ("end", json!([le()]), json!([le(), {"name": "crc32c"}])),
            ("start", json!([le(), zstd]), json!([le()])),
            (
                "end",
                json!([{"name": "bytes", "configuration": {"endian": "big"}}, zstd]),
                json!([le()]),
            ),
        ] {
            // A 6 × 5 array in shards of 4 × 4: the shard at [1, 1] holds 2 × 1
            // elements, one of its four 2 × 2 inner chunks in part.
            let doc = document(
                &[6, 5],
                &[4, 4],
                json!([sharding(&[2, 2], codecs.clone(), index, location)]),
            );
            let c = chain(&doc);
            let spec = c.sharding().unwrap().clone();
            // Every element 100 r + c of the whole array; fill (7) past it.
            let data: Vec<u8> = (0..16u16)
                .flat_map(|i| {
                    let (r, col) = (4 + i / 4, 4 + i % 4);
                    let v = if r < 6 && col < 5 { 100 * r + col } else { 7 };
                    v.to_ne_bytes()
                })
                .collect();
            let mut shard = Vec::new();
            c.encode_at(&data, Some(&[1, 1]), &mut shard).unwrap();
            let info = inspect_shard(&shard).unwrap_or_else(|e| panic!("{codecs}: {e}"));
            assert_eq!(info.dims, [2, 1], "{codecs}");
            assert_eq!(info.max_dims, [4, 4]);
            assert_eq!(info.chunk, [2, 2]);
            assert_eq!(info.fill.as_deref().map(|f| f.len()), Some(2));
            // Only inner chunk [0, 0] holds a part of the array.
            assert!(info.chunks[0].is_some() && info.chunks[1..].iter().all(Option::is_none));
            assert_eq!(info.eof, shard.len() as u64);
            assert_eq!(info.members.len(), if location == "end" { 2 } else { 1 });
            let layout = ShardLayout::new(&spec, DataType::U16, &[4, 4], &7u16.to_ne_bytes());
            let entries = layout.whole_index(&shard, "s").unwrap();
            let zarr: Vec<Option<(u64, u64)>> = entries
                .iter()
                .map(|e| e.map(|e| (e.offset, e.nbytes)))
                .collect();
            assert_eq!(zarr, info.chunks, "{codecs}: the two indexes");
            match location {
                "end" => assert_eq!(
                    info.zarrindex,
                    Some((
                        (shard.len() - layout.index_bytes()) as u64,
                        layout.index_bytes() as u64
                    ))
                ),
                _ => assert_eq!(info.user_block, 512),
            }
            let mut back = vec![0u8; data.len()];
            decode_whole(
                &spec,
                DataType::U16,
                &[4, 4],
                &7u16.to_ne_bytes(),
                &shard,
                &mut back,
            )
            .unwrap();
            assert_eq!(back, data, "{codecs}");
        }
    }

    #[test]
    fn many_inner_chunks_keep_one_unpaged_data_block() {
        // 48 × 48 inner chunks of 1 × 1: 2304, more than 2^10.
        let doc = document(
            &[48, 48],
            &[48, 48],
            json!([sharding(&[1, 1], json!([le()]), json!([le()]), "start")]),
        );
        let c = chain(&doc);
        let data: Vec<u8> = (0..48 * 48u16).flat_map(u16::to_ne_bytes).collect();
        let mut shard = Vec::new();
        c.encode(&data, &mut shard).unwrap();
        let info = inspect_shard(&shard).unwrap();
        assert_eq!(info.chunks.len(), 2304);
        // The index (36 KiB) in a user block of 64 KiB.
        assert_eq!(info.user_block, 65536);
        // Element 7 is the fill value: its chunk is left out.
        assert_eq!(info.chunks.iter().filter(|c| c.is_none()).count(), 1);
        assert!(info.chunks[7].is_none());
    }
}
