//! The N5 compression nearest a Zarr array's codecs: what `n5 ls` shows,
//! what a copy or a pyramid keeps when it is given none.

use serde_json::{json, Value};

use super::Format;
use crate::codec::Compression;

/// The `codecs` of a Zarr v3 document that act on chunk bytes: those of
/// the innermost chunks for a sharded array (nested sharding followed).
fn chunk_codecs(doc: &Value) -> Vec<Value> {
    let mut codecs = doc
        .get("codecs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    while let Some(inner) = codecs
        .iter()
        .find(|c| c.get("name").and_then(Value::as_str) == Some("sharding_indexed"))
        .and_then(|c| c.pointer("/configuration/codecs"))
        .and_then(Value::as_array)
    {
        codecs = inner.clone();
    }
    codecs
}

/// An integer member of a codec configuration.
fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// The N5 compression nearest the codecs of a Zarr array document of
/// `format` (its chunks' compressor; checksums, transposes and byte orders
/// have no N5 counterpart and are left out). Raw when it has none. N5 and
/// HDF5 documents carry it as `compression`.
pub fn compression_of(format: Format, doc: &Value) -> Compression {
    let n5 = match format {
        Format::N5 | Format::Hdf5 => {
            return Compression::from_json(&doc["compression"]).unwrap_or(Compression::Raw)
        }
        Format::Zarr2 => {
            let c = &doc["compressor"];
            match c.get("id").and_then(Value::as_str) {
                Some("gzip") => json!({"type": "gzip", "level": int(c, "level").unwrap_or(6)}),
                Some("zlib") => {
                    json!({"type": "gzip", "useZlib": true, "level": int(c, "level").unwrap_or(6)})
                }
                Some("zstd") => json!({"type": "zstd", "level": int(c, "level").unwrap_or(3)}),
                Some("bz2") => json!({"type": "bzip2", "blockSize": int(c, "level").unwrap_or(9)}),
                Some("lzma") => json!({"type": "xz", "preset": int(c, "preset").unwrap_or(6)}),
                Some("lz4") => json!({"type": "lz4"}),
                Some("blosc") => json!({
                    "type": "blosc",
                    "cname": c.get("cname").cloned().unwrap_or(json!("lz4")),
                    "clevel": int(c, "clevel").unwrap_or(5),
                    "shuffle": int(c, "shuffle").unwrap_or(1),
                    "blocksize": int(c, "blocksize").unwrap_or(0),
                }),
                _ => json!({"type": "raw"}),
            }
        }
        Format::Zarr3 => {
            let mut found = json!({"type": "raw"});
            for codec in chunk_codecs(doc) {
                let config = codec.get("configuration").cloned().unwrap_or(json!({}));
                found = match codec.get("name").and_then(Value::as_str) {
                    Some("gzip") => {
                        json!({"type": "gzip", "level": int(&config, "level").unwrap_or(6)})
                    }
                    Some("zstd") => {
                        json!({"type": "zstd", "level": int(&config, "level").unwrap_or(3)})
                    }
                    Some("blosc") => json!({
                        "type": "blosc",
                        "cname": config.get("cname").cloned().unwrap_or(json!("lz4")),
                        "clevel": int(&config, "clevel").unwrap_or(5),
                        "shuffle": match config.get("shuffle").and_then(Value::as_str) {
                            Some("shuffle") => 1,
                            Some("bitshuffle") => 2,
                            _ => 0,
                        },
                        "blocksize": int(&config, "blocksize").unwrap_or(0),
                    }),
                    _ => continue,
                };
            }
            found
        }
    };
    Compression::from_json(&n5).unwrap_or(Compression::Raw)
}
