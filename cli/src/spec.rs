//! Parsing of the values users type: shape and offset lists (`64,64,32`),
//! data type names (`uint16`, `u16`), and compressions given as JSON
//! (`{"type":"gzip","level":-1}`) or short names (`gzip`, `zstd:19`, `raw`).

use n5::{Compression, DataType};
use serde_json::{json, Value};

use crate::error::{CliError, CliResult};

/// A list of integers separated by commas, `x` or spaces, with optional
/// brackets: `64,64,32`, `64x64x32`, `[64, 64, 32]`. `what` names the option
/// in errors.
pub fn list(what: &str, text: &str) -> CliResult<Vec<u64>> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    let values: Result<Vec<u64>, _> = inner
        .split([',', 'x', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse::<u64>())
        .collect();
    match values {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(CliError::usage(
            what,
            format!("'{text}' is not a list of non-negative integers such as 64,64,32"),
        )),
    }
}

/// A data type: the N5 names (`uint8` ... `float64`) or numpy-style
/// short ones (`u1`, `u8`, `i16`, `f4`, `f32`...).
pub fn data_type(text: &str) -> CliResult<DataType> {
    let t = text.trim().to_ascii_lowercase();
    if let Ok(d) = DataType::from_name(&t) {
        if d.is_numeric() {
            return Ok(d);
        }
    }
    let d = match t.as_str() {
        "u1" | "u8" => DataType::U8,
        "u2" | "u16" => DataType::U16,
        "u4" | "u32" => DataType::U32,
        "u64" => DataType::U64,
        "i1" | "i8" => DataType::I8,
        "i2" | "i16" => DataType::I16,
        "i4" | "i32" => DataType::I32,
        "i64" => DataType::I64,
        "f4" | "f32" | "float" => DataType::F32,
        "f8" | "f64" | "double" => DataType::F64,
        _ => {
            return Err(CliError::usage(
                "--dtype",
                format!("unknown data type '{text}' (uint8, uint16, uint32, uint64, int8, int16, int32, int64, float32, float64)"),
            ))
        }
    };
    Ok(d)
}

/// A compression: a JSON object as in attributes.json, or a short name
/// (`raw`, `gzip`, `zlib`, `bzip2`, `xz`, `lz4`, `blosc`, `zstd`) with an
/// optional `:LEVEL` (gzip/zlib/zstd level, xz preset, bzip2 blockSize,
/// blosc clevel, lz4 blockSize).
pub fn compression(text: &str) -> CliResult<Compression> {
    let t = text.trim();
    let bad = |m: String| CliError::usage("--compression", m);
    let value: Value = if t.starts_with('{') {
        serde_json::from_str(t).map_err(|e| bad(format!("not valid JSON: {e}")))?
    } else {
        let (name, level) = match t.split_once(':') {
            Some((n, l)) => {
                let l: i64 = l
                    .parse()
                    .map_err(|_| bad(format!("'{l}' in '{t}' is not an integer")))?;
                (n.to_ascii_lowercase(), Some(l))
            }
            None => (t.to_ascii_lowercase(), None),
        };
        let mut v = match name.as_str() {
            "raw" | "none" => json!({"type": "raw"}),
            "gzip" => json!({"type": "gzip"}),
            "zlib" => json!({"type": "gzip", "useZlib": true}),
            "bzip2" => json!({"type": "bzip2"}),
            "xz" => json!({"type": "xz"}),
            "lz4" => json!({"type": "lz4"}),
            "blosc" => json!({"type": "blosc"}),
            "zstd" => json!({"type": "zstd"}),
            _ => {
                return Err(bad(format!(
                    "unknown compression '{t}' (raw, gzip, zlib, bzip2, xz, lz4, blosc, zstd, optionally :LEVEL, or a JSON object)"
                )))
            }
        };
        if let Some(level) = level {
            let key = match name.as_str() {
                "gzip" | "zlib" | "zstd" => "level",
                "xz" => "preset",
                "bzip2" | "lz4" => "blockSize",
                "blosc" => "clevel",
                _ => return Err(bad(format!("'{name}' takes no level"))),
            };
            v[key] = json!(level);
        }
        v
    };
    Compression::from_user_json(&value).map_err(|e| bad(e.message().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(list("s", "1,2,3").unwrap(), vec![1, 2, 3]);
        assert_eq!(list("s", "[4, 5]").unwrap(), vec![4, 5]);
        assert_eq!(list("s", "64x32").unwrap(), vec![64, 32]);
        assert!(list("s", "a,b").is_err());
        assert!(list("s", "").is_err());
        assert!(list("s", "-1").is_err());
    }

    #[test]
    fn compressions() {
        assert_eq!(compression("raw").unwrap(), Compression::Raw);
        assert_eq!(
            compression("zstd:19").unwrap(),
            Compression::Zstd { level: 19 }
        );
        assert_eq!(
            compression(r#"{"type":"gzip","level":-1}"#).unwrap(),
            Compression::Gzip {
                level: -1,
                use_zlib: false
            }
        );
        assert!(compression("gzip:12").is_err());
        assert!(compression("snappy").is_err());
        assert!(compression(r#"{"type":"gzip","lvl":1}"#).is_err());
    }

    #[test]
    fn data_types() {
        assert_eq!(data_type("uint16").unwrap(), DataType::U16);
        assert_eq!(data_type("f4").unwrap(), DataType::F32);
        assert!(data_type("string").is_err());
    }
}
