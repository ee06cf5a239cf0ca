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
use crate::format::fill::{self, Flavor};
use crate::format::uint_list;
use crate::format::zarr3::metadata::Endian;

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
    /// Byte order of a stored element that is one number, complex or
    /// UTF-32 string (`None` for one-byte types and structs).
    pub endian: Option<Endian>,
    /// The `dtype` value as the document has it, written back as read.
    pub dtype_json: Value,
    /// What to byte-swap between stored and native elements (see
    /// [`super::dtype::Parsed::swap`]).
    pub swap: Option<DataType>,
    /// How the elements of an object (`|O`) array are encoded: the id of
    /// its filter (`vlen-utf8`, `vlen-bytes`, `pickle`, `json2`).
    pub object_codec: Option<String>,
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

/// The object codec among `filters`: `|O` arrays need exactly one of
/// `vlen-utf8`, `vlen-bytes`, `pickle`, `json2` (and structs with object
/// fields `pickle` or `json2`); other filters are not supported.
fn object_codec(filters: Option<&Value>, t: &DataType) -> Result<Option<String>> {
    let ids: Vec<String> = match filters {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(f)) => f
            .iter()
            .map(|x| match x.get("id") {
                Some(Value::String(s)) => s.clone(),
                _ => x.to_string(),
            })
            .collect(),
        Some(other) => {
            return Err(Error::invalid_metadata(format!(
                "filters is {other}, not a list"
            )))
        }
    };
    let has_objects = match t {
        DataType::Object => true,
        DataType::Struct(_) => !t.has_layout(),
        _ => false,
    };
    const OBJECT_CODECS: [&str; 4] = ["vlen-utf8", "vlen-bytes", "pickle", "json2"];
    match ids.as_slice() {
        [] if has_objects => Err(Error::invalid_metadata(
            "an object (|O) dtype needs an object codec among its filters (vlen-utf8, vlen-bytes, pickle or json2)",
        )),
        [] => Ok(None),
        [id] if has_objects && OBJECT_CODECS.contains(&id.as_str()) => {
            if matches!(t, DataType::Struct(_)) && id.starts_with("vlen") {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("a struct with object fields encoded by '{id}' is not supported (pickle and json2 are)"),
                ));
            }
            Ok(Some(id.clone()))
        }
        ids => Err(Error::new(
            ErrorKind::Unsupported,
            format!("filters {} are not supported", ids.join(", ")),
        )),
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
        let dtype_json = map
            .get("dtype")
            .ok_or_else(|| Error::invalid_metadata("'dtype' is missing"))?
            .clone();
        let super::dtype::Parsed {
            mut data_type,
            endian,
            swap,
        } = super::dtype::parse(&dtype_json)?;
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
        let object_codec = object_codec(map.get("filters"), &data_type)?;
        if object_codec.as_deref() == Some("vlen-utf8") {
            data_type = DataType::String;
        }
        let (fill_value, fill_null) = match map.get("fill_value") {
            // zarr-python reads a null fill value as NaT for datetimes and
            // timedeltas, as zeros otherwise.
            None | Some(Value::Null) => match data_type {
                DataType::DateTime64(_) | DataType::TimeDelta64(_) => {
                    (i64::MIN.to_ne_bytes().to_vec(), true)
                }
                _ => (vec![0u8; data_type.element_size()], true),
            },
            Some(v) => (
                fill::parse(v, &data_type, Flavor::V2, swap.as_ref())?,
                false,
            ),
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
            dtype_json,
            swap,
            object_codec,
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
            "dtype": self.dtype_json,
            "compressor": self.compressor.to_json(),
            "fill_value": if self.fill_null {
                Value::Null
            } else {
                fill::to_json(&self.fill_value, &self.data_type, Flavor::V2, self.swap.as_ref())
            },
            "order": if self.fortran { "F" } else { "C" },
            "filters": match &self.object_codec {
                Some(id) => json!([{"id": id}]),
                None => Value::Null,
            },
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
            (m.data_type.clone(), m.endian),
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
            (json!({"dtype": "<c32"}), "<c32"),
            (json!({"dtype": "<f16"}), "<f16"),
            (json!({"dtype": "|u2"}), "|u2"),
            (json!({"dtype": [["p", "<u2", [2]]]}), "sub-array"),
            (
                json!({"dtype": "|O", "filters": [{"id": "msgpack2"}]}),
                "msgpack2",
            ),
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
