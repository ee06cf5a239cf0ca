//! Zarr v2 metadata: the .zarray document of an array (shape, chunks,
//! dtype with its byte order, C or F order, compressor, fill value,
//! dimension separator) parsed and checked before anything is read, and
//! written back as zarr-python and numcodecs write it. Shapes stay in the
//! document's order (C order, last dimension fastest).

#[cfg(test)]
use serde_json::json;
use serde_json::{Map, Value};

use crate::codec::Compression;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::uint_list;
use crate::format::zarr3::metadata::{fill_value as fill_value_v3, Endian};

/// The largest rank an array may have (as for N5 datasets).
const MAX_RANK: usize = crate::format::n5::metadata::MAX_RANK;

/// The compressor of a Zarr v2 array (numcodecs' `id` and parameters).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Compressor {
    /// `null`: the chunk bytes as they are.
    None,
    /// A codec whose bytes are those of one of the shared codecs: gzip,
    /// zlib, zstd, blosc, bz2 and lzma (the .xz container).
    Shared {
        /// numcodecs' id, kept to write it back.
        id: String,
        /// The shared codec.
        codec: Compression,
        /// The document's other parameters, written back as read.
        config: Map<String, Value>,
    },
    /// numcodecs' `lz4`: the uncompressed size (4 bytes, little-endian),
    /// then one LZ4 block.
    Lz4 {
        /// LZ4's acceleration (1 = default).
        acceleration: i32,
    },
}

/// The metadata of a Zarr v2 array.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArrayMetadata {
    /// The array's shape, document (C) order.
    pub shape: Vec<u64>,
    /// The chunk shape, document order.
    pub chunks: Vec<u64>,
    /// Element type.
    pub data_type: DataType,
    /// Byte order of stored elements (`None` for one-byte types).
    pub endian: Option<Endian>,
    /// Whether chunks are stored in Fortran order (first dimension fastest).
    pub fortran: bool,
    /// The compressor.
    pub compressor: Compressor,
    /// One element of the fill value, native byte order (zeros for `null`).
    pub fill_value: Vec<u8>,
    /// Whether the document's fill value is `null`.
    pub fill_null: bool,
    /// `.` or `/` between the indices of chunk keys.
    pub separator: char,
}

/// The type, byte order and size of a NumPy type string such as `<u2`.
pub(crate) fn parse_dtype(s: &str) -> Result<(DataType, Option<Endian>)> {
    let unsupported = || {
        Error::new(
            ErrorKind::Unsupported,
            format!(
                "dtype '{s}' is not supported (the ten numeric types are: |u1, |i1, and <u2 ... >f8 in either byte order)"
            ),
        )
    };
    let (order, rest) = match s.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (Some(c), &s[1..]),
        _ => (None, s),
    };
    let t = match rest {
        "u1" => DataType::U8,
        "u2" => DataType::U16,
        "u4" => DataType::U32,
        "u8" => DataType::U64,
        "i1" => DataType::I8,
        "i2" => DataType::I16,
        "i4" => DataType::I32,
        "i8" => DataType::I64,
        "f4" => DataType::F32,
        "f8" => DataType::F64,
        _ => return Err(unsupported()),
    };
    let endian = match (order, t.size()) {
        (_, 1) => None,
        (Some('<'), _) => Some(Endian::Little),
        (Some('>'), _) => Some(Endian::Big),
        // '|' (not applicable) or none for a multi-byte type is ambiguous.
        _ => return Err(unsupported()),
    };
    Ok((t, endian))
}

/// The NumPy type string of `t` in byte order `endian`.
pub(crate) fn dtype_string(t: DataType, endian: Option<Endian>) -> String {
    let code = match t {
        DataType::U8 => "u1",
        DataType::U16 => "u2",
        DataType::U32 => "u4",
        DataType::U64 => "u8",
        DataType::I8 => "i1",
        DataType::I16 => "i2",
        DataType::I32 => "i4",
        DataType::I64 => "i8",
        DataType::F32 => "f4",
        DataType::F64 => "f8",
        DataType::String | DataType::Object => "V1",
    };
    let order = match (t.size(), endian) {
        (1, _) => '|',
        (_, Some(Endian::Big)) => '>',
        _ => '<',
    };
    format!("{order}{code}")
}

impl Compressor {
    /// Parses the `compressor` member (`null` or a numcodecs config).
    pub(crate) fn from_json(v: &Value) -> Result<Compressor> {
        let obj = match v {
            Value::Null => return Ok(Compressor::None),
            Value::Object(o) => o,
            other => {
                return Err(Error::invalid_metadata(format!(
                    "compressor {other} is neither null nor an object"
                )))
            }
        };
        let id = obj
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid_metadata(format!("compressor {v} has no string 'id'")))?;
        let int = |key: &str, default: i64| -> Result<i64> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(default),
                Some(n) => n.as_i64().ok_or_else(|| {
                    Error::invalid_metadata(format!(
                        "compressor '{id}': '{key}' is {n}, not an integer"
                    ))
                }),
            }
        };
        let range = |key: &str, value: i64, lo: i64, hi: i64| -> Result<i64> {
            if (lo..=hi).contains(&value) {
                Ok(value)
            } else {
                Err(Error::invalid_metadata(format!(
                    "compressor '{id}': '{key}' {value} is outside {lo}..={hi}"
                )))
            }
        };
        let mut config = obj.clone();
        config.remove("id");
        let codec = match id {
            "gzip" | "zlib" => Compression::Gzip {
                level: range("level", int("level", 1)?, 0, 9)? as i32,
                use_zlib: id == "zlib",
            },
            "zstd" => Compression::Zstd {
                level: range("level", int("level", 1)?, -131_072, 22)? as i32,
            },
            "bz2" => Compression::Bzip2 {
                block_size: range("level", int("level", 1)?, 1, 9)? as u32,
            },
            "lzma" => {
                // numcodecs' FORMAT_XZ is 1; the other formats and custom
                // filter chains have no shared codec.
                let format = int("format", 1)?;
                if format != 1 || obj.get("filters").is_some_and(|f| !f.is_null()) {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!("compressor 'lzma' with format {format} or custom filters is not supported (format 1, .xz, is)"),
                    ));
                }
                Compression::Xz {
                    preset: range("preset", int("preset", 6)?, 0, 9)? as u32,
                }
            }
            "blosc" => {
                let cname = match obj.get("cname") {
                    None => "lz4".to_string(),
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => {
                        return Err(Error::invalid_metadata(format!(
                            "compressor 'blosc': 'cname' is {other}"
                        )))
                    }
                };
                Compression::Blosc {
                    cname,
                    clevel: range("clevel", int("clevel", 5)?, 0, 9)? as u32,
                    // numcodecs: -1 automatic (bit for 1-byte, byte otherwise).
                    shuffle: range("shuffle", int("shuffle", 1)?, -1, 2)? as i32,
                    blocksize: range("blocksize", int("blocksize", 0)?, 0, i64::MAX)? as u64,
                }
            }
            "lz4" => {
                return Ok(Compressor::Lz4 {
                    acceleration: range("acceleration", int("acceleration", 1)?, 1, 65_537)? as i32,
                })
            }
            other => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("compressor '{other}' is not supported (gzip, zlib, zstd, blosc, bz2, lzma and lz4 are)"),
                ))
            }
        };
        Ok(Compressor::Shared {
            id: id.to_string(),
            codec,
            config,
        })
    }

    /// The `compressor` member as numcodecs writes it.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Compressor::None => Value::Null,
            Compressor::Shared { id, config, .. } => {
                let mut o = Map::new();
                o.insert("id".into(), json!(id));
                for (k, v) in config {
                    o.insert(k.clone(), v.clone());
                }
                Value::Object(o)
            }
            Compressor::Lz4 { acceleration } => json!({"id": "lz4", "acceleration": acceleration}),
        }
    }
}

impl ArrayMetadata {
    /// Reads a .zarray document.
    pub(crate) fn from_json(doc: &Value) -> Result<ArrayMetadata> {
        let map = doc
            .as_object()
            .ok_or_else(|| Error::invalid_metadata(".zarray is not a JSON object"))?;
        match map.get("zarr_format") {
            Some(v) if v.as_u64() == Some(2) => {}
            other => {
                return Err(Error::invalid_metadata(format!(
                    "zarr_format is {other:?}, not 2"
                )))
            }
        }
        let shape = uint_list(map, "shape", MAX_RANK)?;
        let chunks = uint_list(map, "chunks", MAX_RANK)?;
        if shape.len() > MAX_RANK {
            return Err(Error::invalid_metadata(format!(
                "rank {} is above {MAX_RANK}",
                shape.len()
            )));
        }
        if chunks.len() != shape.len() {
            return Err(Error::invalid_metadata(format!(
                "chunks {chunks:?} and shape {shape:?} differ in rank"
            )));
        }
        if chunks.contains(&0) {
            return Err(Error::invalid_metadata(format!(
                "chunks {chunks:?} has a zero extent"
            )));
        }
        let (data_type, endian) = match map.get("dtype") {
            Some(Value::String(s)) => parse_dtype(s)?,
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("dtype {other} is not supported (structured types are not)"),
                ))
            }
            None => return Err(Error::invalid_metadata("'dtype' is missing")),
        };
        let chunk_bytes = chunks
            .iter()
            .try_fold(data_type.size() as u64, |a, &b| a.checked_mul(b))
            .filter(|&b| b <= crate::format::n5::metadata::MAX_BLOCK_BYTES);
        if chunk_bytes.is_none() {
            return Err(Error::invalid_metadata(format!(
                "a chunk of {chunks:?} {} holds more than 2 GiB",
                data_type.name()
            )));
        }
        let fortran = match map.get("order").and_then(Value::as_str) {
            Some("C") => false,
            Some("F") => true,
            _ => {
                return Err(Error::invalid_metadata(format!(
                    "order is {:?}, not \"C\" or \"F\"",
                    map.get("order")
                )))
            }
        };
        let compressor = Compressor::from_json(map.get("compressor").unwrap_or(&Value::Null))?;
        match map.get("filters") {
            None | Some(Value::Null) => {}
            Some(Value::Array(f)) if f.is_empty() => {}
            Some(Value::Array(f)) => {
                let ids: Vec<String> = f
                    .iter()
                    .map(|x| x.get("id").map_or_else(|| x.to_string(), |i| i.to_string()))
                    .collect();
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("filters {} are not supported", ids.join(", ")),
                ));
            }
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "filters is {other}, not a list"
                )))
            }
        }
        let (fill_value, fill_null) = match map.get("fill_value") {
            None | Some(Value::Null) => (vec![0u8; data_type.size()], true),
            Some(v) => (fill_value_v3(v, data_type)?, false),
        };
        let separator = match map.get("dimension_separator") {
            None | Some(Value::Null) => '.',
            Some(Value::String(s)) if s == "." => '.',
            Some(Value::String(s)) if s == "/" => '/',
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "dimension_separator {other} is neither \".\" nor \"/\""
                )))
            }
        };
        Ok(ArrayMetadata {
            shape,
            chunks,
            data_type,
            endian,
            fortran,
            compressor,
            fill_value,
            fill_null,
            separator,
        })
    }

    /// The .zarray document.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "zarr_format": 2,
            "shape": self.shape,
            "chunks": self.chunks,
            "dtype": dtype_string(self.data_type, self.endian),
            "compressor": self.compressor.to_json(),
            "fill_value": if self.fill_null {
                Value::Null
            } else {
                crate::format::zarr3::metadata::fill_value_json(&self.fill_value, self.data_type)
            },
            "order": if self.fortran { "F" } else { "C" },
            "filters": Value::Null,
            "dimension_separator": self.separator.to_string(),
        })
    }

    /// The key of the chunk at `pos` (document order), below the array.
    pub(crate) fn chunk_key(&self, pos: &[u64]) -> String {
        if pos.is_empty() {
            return "0".into();
        }
        let parts: Vec<String> = pos.iter().map(u64::to_string).collect();
        parts.join(&self.separator.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zarray(extra: Value) -> Value {
        let mut doc = json!({
            "zarr_format": 2, "shape": [10, 20], "chunks": [4, 8], "dtype": "<u2",
            "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
            "fill_value": 0, "order": "C", "filters": null,
        });
        for (k, v) in extra.as_object().unwrap() {
            doc[k] = v.clone();
        }
        doc
    }

    #[test]
    fn reads_what_zarr_python_writes_and_writes_it_back() {
        let m = ArrayMetadata::from_json(&zarray(json!({}))).unwrap();
        assert_eq!(
            (m.data_type, m.endian),
            (DataType::U16, Some(Endian::Little))
        );
        assert_eq!(m.chunk_key(&[1, 2]), "1.2");
        assert!(matches!(&m.compressor, Compressor::Shared { id, .. } if id == "blosc"));
        assert_eq!(ArrayMetadata::from_json(&m.to_json()).unwrap(), m);
        let m = ArrayMetadata::from_json(&zarray(json!({
            "dtype": ">f8", "order": "F", "fill_value": "NaN", "dimension_separator": "/",
            "compressor": {"id": "zlib", "level": 3}})))
        .unwrap();
        assert_eq!(m.endian, Some(Endian::Big));
        assert!(m.fortran);
        assert!(f64::from_ne_bytes(m.fill_value.clone().try_into().unwrap()).is_nan());
        assert_eq!(m.chunk_key(&[3, 0]), "3/0");
        assert_eq!(
            m.compressor,
            Compressor::Shared {
                id: "zlib".into(),
                codec: Compression::Gzip {
                    level: 3,
                    use_zlib: true
                },
                config: serde_json::from_value(json!({"level": 3})).unwrap(),
            }
        );
        assert_eq!(ArrayMetadata::from_json(&m.to_json()).unwrap(), m);
        let m = ArrayMetadata::from_json(&zarray(
            json!({"fill_value": null, "compressor": null, "dtype": "|u1"}),
        ))
        .unwrap();
        assert!(m.fill_null);
        assert_eq!(m.compressor, Compressor::None);
    }

    #[test]
    fn unsupported_types_compressors_and_filters_are_named() {
        for (extra, named) in [
            (json!({"dtype": "<c8"}), "<c8"),
            (json!({"dtype": "|b1"}), "|b1"),
            (json!({"dtype": "<U4"}), "<U4"),
            (json!({"dtype": "|u2"}), "|u2"),
            (json!({"dtype": [["a", "<u2"]]}), "structured"),
            (json!({"compressor": {"id": "snappy"}}), "snappy"),
            (json!({"compressor": {"id": "lzma", "format": 2}}), "lzma"),
            (
                json!({"filters": [{"id": "delta", "dtype": "<u2"}]}),
                "delta",
            ),
        ] {
            let e = ArrayMetadata::from_json(&zarray(extra.clone())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{extra}: {e}");
            assert!(e.message().contains(named), "{extra}: {e}");
        }
    }

    #[test]
    fn hostile_documents_are_errors() {
        for extra in [
            json!({"zarr_format": 3}),
            json!({"shape": [10]}),
            json!({"chunks": [0, 8]}),
            json!({"chunks": [4294967296u64, 4294967296u64]}),
            json!({"order": "K"}),
            json!({"fill_value": 70000}),
            json!({"dimension_separator": "-"}),
            json!({"compressor": {"id": "gzip", "level": 11}}),
            json!({"compressor": "gzip"}),
        ] {
            let e = ArrayMetadata::from_json(&zarray(extra.clone())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{extra}: {e}");
        }
    }
}
