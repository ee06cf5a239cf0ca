//! What the tool reads from and writes into Zarr metadata documents: the N5
//! compression nearest an array's codecs (what `ls` shows and `cp` keeps),
//! one-line summaries of a codec chain or compressor, the chunk key
//! encoding, the fill value as JSON in each format's spelling, and the
//! array documents `cp` creates (Zarr v2 .zarray, Zarr v3 zarr.json with
//! or without `sharding_indexed`).

pub use n5::format::nearest::compression_of;
use n5::format::Format;
use n5::{Container, DataType, DatasetAttributes};
use serde_json::{json, Value};

/// A codec as one line: `name(key=value, ...)`, nested codec lists
/// (sharding) written the same way.
fn codec_line(codec: &Value) -> String {
    let name = codec
        .get("name")
        .or_else(|| codec.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let config = codec
        .get("configuration")
        .and_then(Value::as_object)
        .cloned()
        .or_else(|| {
            // A Zarr v2 compressor: every member but its id.
            codec.get("id")?;
            codec.as_object().map(|m| {
                m.iter()
                    .filter(|(k, _)| k.as_str() != "id")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
        })
        .unwrap_or_default();
    if config.is_empty() {
        return name.to_string();
    }
    let members: Vec<String> = config
        .iter()
        .map(|(k, v)| match v.as_array() {
            Some(list) if list.iter().all(|c| c.get("name").is_some()) && !list.is_empty() => {
                format!("{k}=[{}]", chain_line(list))
            }
            _ => format!("{k}={v}"),
        })
        .collect();
    format!("{name}({})", members.join(", "))
}

/// A codec list as one line, codecs joined by ` | `.
fn chain_line(codecs: &[Value]) -> String {
    codecs
        .iter()
        .map(codec_line)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// How the chunks of a Zarr array document are encoded, as one line: the
/// Zarr v3 codec chain, or the Zarr v2 filters and compressor.
pub fn codecs_line(format: Format, doc: &Value) -> String {
    match format {
        Format::Zarr3 => chain_line(
            doc.get("codecs")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice),
        ),
        _ => {
            let compressor = match &doc["compressor"] {
                Value::Null => "none".to_string(),
                c => codec_line(c),
            };
            match doc.get("filters").and_then(Value::as_array) {
                Some(f) if !f.is_empty() => {
                    format!("filters [{}], compressor {compressor}", chain_line(f))
                }
                _ => compressor,
            }
        }
    }
}

/// The chunk key encoding of a Zarr array document, as one line:
/// `default (separator "/")`, `v2 (separator ".")`.
pub fn key_encoding_line(format: Format, doc: &Value) -> String {
    match format {
        Format::Zarr3 => {
            let e = &doc["chunk_key_encoding"];
            let name = e.get("name").and_then(Value::as_str).unwrap_or("default");
            let default_sep = if name == "v2" { "." } else { "/" };
            let sep = e
                .pointer("/configuration/separator")
                .and_then(Value::as_str)
                .unwrap_or(default_sep);
            format!("{name} (separator \"{sep}\")")
        }
        _ => {
            let sep = doc
                .get("dimension_separator")
                .and_then(Value::as_str)
                .unwrap_or(".");
            format!("v2 (dimension_separator \"{sep}\")")
        }
    }
}

/// The fill value `bytes` (one native-order element of `t`) as the
/// `fill_value` of a document of `format`: a number, or for floats that
/// are not finite `"NaN"`, `"Infinity"`, `"-Infinity"`; in Zarr v3 a NaN
/// other than the canonical one keeps its bits as a hex string.
pub fn fill_json(format: Format, t: DataType, bytes: &[u8]) -> Value {
    let mut b8 = [0u8; 8];
    let n = bytes.len().min(8);
    b8[..n].copy_from_slice(&bytes[..n]);
    let float = |v: f64, canonical_nan: bool, hex: String| {
        if v.is_finite() {
            json!(v)
        } else if v.is_nan() {
            if format == Format::Zarr3 && !canonical_nan {
                json!(hex)
            } else {
                json!("NaN")
            }
        } else if v > 0.0 {
            json!("Infinity")
        } else {
            json!("-Infinity")
        }
    };
    match t {
        DataType::U8 => json!(bytes[0]),
        DataType::I8 => json!(bytes[0] as i8),
        DataType::U16 => json!(u16::from_ne_bytes([b8[0], b8[1]])),
        DataType::I16 => json!(i16::from_ne_bytes([b8[0], b8[1]])),
        DataType::U32 => json!(u32::from_ne_bytes([b8[0], b8[1], b8[2], b8[3]])),
        DataType::I32 => json!(i32::from_ne_bytes([b8[0], b8[1], b8[2], b8[3]])),
        DataType::U64 => json!(u64::from_ne_bytes(b8)),
        DataType::I64 => json!(i64::from_ne_bytes(b8)),
        DataType::F32 => {
            let bits = u32::from_ne_bytes([b8[0], b8[1], b8[2], b8[3]]);
            float(
                f32::from_bits(bits) as f64,
                bits == f32::NAN.to_bits(),
                format!("0x{bits:08x}"),
            )
        }
        DataType::F64 => {
            let bits = u64::from_ne_bytes(b8);
            float(
                f64::from_bits(bits),
                bits == f64::NAN.to_bits(),
                format!("0x{bits:016x}"),
            )
        }
        // Other types come with their own metadata's fill value.
        _ => json!(0),
    }
}

/// What a new array gets besides its N5 metadata.
pub struct NewArray<'a> {
    /// The shard shape (N5 order) of a sharded Zarr v3 array.
    pub shard: Option<&'a [u64]>,
    /// One native-order element of the fill value.
    pub fill: &'a [u8],
    /// Zarr v3 `dimension_names` (C order), carried from a Zarr v3 source.
    pub dimension_names: Option<Value>,
    /// A sharded Zarr v3 array's shards are HDF5 files too (the
    /// `hdf5_shards` member).
    pub hdf5_shards: bool,
}

/// The metadata document of a new dataset of `attrs` (N5 order, with the
/// N5 compression to map) in a container of `format`, for
/// [`Container::create_dataset_json`] (N5 and HDF5: the N5 dataset
/// members, raw or gzip only in HDF5): the compression becomes the
/// format's codec (an error naming it when the format has none), and a
/// shard shape makes the Zarr v3 array `sharding_indexed` (inner chunks of
/// the block size with that codec, index `bytes` + `crc32c` at the end),
/// with the `hdf5_shards` member when asked.
pub fn new_document(
    format: Format,
    attrs: &DatasetAttributes,
    new: &NewArray,
) -> n5::Result<Value> {
    let mut doc = Container::dataset_document(format, attrs)?;
    if matches!(format, Format::N5 | Format::Hdf5) {
        return Ok(doc);
    }
    doc["fill_value"] = if attrs.data_type.is_numeric() {
        fill_json(format, attrs.data_type.clone(), new.fill)
    } else {
        format.fill_value_json(&attrs.data_type, new.fill)
    };
    if format != Format::Zarr3 {
        return Ok(doc);
    }
    if let Some(names) = &new.dimension_names {
        doc["dimension_names"] = names.clone();
    }
    if let Some(shard) = new.shard {
        let inner: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
        Container::shard_document(&mut doc, &inner, shard);
        if new.hdf5_shards {
            doc["hdf5_shards"] = json!({"must_understand": false});
        }
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use n5::Compression;

    #[test]
    fn codecs_map_to_the_nearest_n5_compression() {
        let v3 = json!({"codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2], "codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 5}}],
            "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}]});
        assert_eq!(
            compression_of(Format::Zarr3, &v3),
            Compression::Zstd { level: 5 }
        );
        let v2 = json!({"compressor": {"id": "zlib", "level": 1}});
        assert_eq!(
            compression_of(Format::Zarr2, &v2),
            Compression::Gzip {
                level: 1,
                use_zlib: true
            }
        );
        assert_eq!(
            compression_of(Format::Zarr2, &json!({"compressor": null})),
            Compression::Raw
        );
        assert!(codecs_line(Format::Zarr3, &v3)
            .starts_with("sharding_indexed(chunk_shape=[2], codecs=[bytes | zstd(level=5)]"));
    }

    #[test]
    fn fill_values_in_each_spelling() {
        let nan = f32::from_bits(0x7fc0_0001).to_ne_bytes();
        assert_eq!(
            fill_json(Format::Zarr3, DataType::F32, &nan),
            json!("0x7fc00001")
        );
        assert_eq!(fill_json(Format::Zarr2, DataType::F32, &nan), json!("NaN"));
        assert_eq!(
            fill_json(
                Format::Zarr2,
                DataType::F64,
                &f64::NEG_INFINITY.to_ne_bytes()
            ),
            json!("-Infinity")
        );
        assert_eq!(
            fill_json(Format::Zarr3, DataType::I16, &(-7i16).to_ne_bytes()),
            json!(-7)
        );
        assert_eq!(
            fill_json(Format::Zarr3, DataType::F32, &1.5f32.to_ne_bytes()),
            json!(1.5)
        );
    }
}
