//! Zarr v3 `data_type` values: the names and configurations zarr-python 3
//! and the Zarr data type extensions write (`bool`, `float16`,
//! `complex64`, `fixed_length_utf32`, `struct`, `numpy.datetime64`, ...)
//! read into a [`DataType`] and written back. The first spelling of each
//! row of nwb.md §1 is the one written.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::dtype::{DataType, StructType, TimeUnit, MAX_FIXED_BYTES, MAX_STRUCT_DEPTH};
use crate::error::{Error, ErrorKind, Result};

/// The data type a zarr.json `data_type` value names.
pub(crate) fn parse(v: &Value) -> Result<DataType> {
    parse_at(v, 0)
}

fn parse_at(v: &Value, depth: usize) -> Result<DataType> {
    if depth > MAX_STRUCT_DEPTH {
        return Err(Error::invalid_metadata(format!(
            "data_type nests more than {MAX_STRUCT_DEPTH} deep"
        )));
    }
    let unsupported = |what: &str| {
        Error::new(
            ErrorKind::Unsupported,
            format!("data type {what} is not supported"),
        )
    };
    let (name, config) = match v {
        Value::String(s) => (s.as_str(), None),
        Value::Object(o) => {
            let name = o.get("name").and_then(Value::as_str).ok_or_else(|| {
                Error::invalid_metadata(format!("data_type {v} has no string 'name'"))
            })?;
            match o.get("configuration") {
                None | Some(Value::Null) => (name, None),
                Some(Value::Object(c)) => (name, Some(c)),
                Some(other) => {
                    return Err(Error::invalid_metadata(format!(
                        "data_type '{name}': configuration {other} is not an object"
                    )))
                }
            }
        }
        other => {
            return Err(Error::invalid_metadata(format!(
                "data_type {other} is neither a name nor an object"
            )))
        }
    };
    let need = |key: &str| -> Result<&Value> {
        config.and_then(|c| c.get(key)).ok_or_else(|| {
            Error::invalid_metadata(format!("data_type '{name}' has no configuration '{key}'"))
        })
    };
    let length = |unit: u64| -> Result<u32> {
        let n = need("length_bytes")?.as_u64().ok_or_else(|| {
            Error::invalid_metadata(format!(
                "data_type '{name}': length_bytes is not an integer"
            ))
        })?;
        if n == 0 || n % unit != 0 || n > MAX_FIXED_BYTES {
            return Err(Error::invalid_metadata(format!(
                "data_type '{name}': length_bytes {n} is not a positive multiple of {unit} up to 2 GiB"
            )));
        }
        Ok((n / unit) as u32)
    };
    Ok(match name {
        "uint8" | "uint16" | "uint32" | "uint64" | "int8" | "int16" | "int32" | "int64"
        | "float32" | "float64" | "bool" | "float16" | "complex64" | "complex128" => {
            DataType::from_plain_name(name).expect("a plain type name")
        }
        "string" | "variable_length_utf8" => DataType::String,
        "variable_length_bytes" | "bytes" => DataType::Object,
        "fixed_length_utf32" => DataType::FixedUtf32 { chars: length(4)? },
        "null_terminated_bytes" => DataType::FixedBytes {
            len: length(1)?,
            null_terminated: true,
        },
        "raw_bytes" => DataType::FixedBytes {
            len: length(1)?,
            null_terminated: false,
        },
        "numpy.datetime64" | "numpy.timedelta64" => {
            let unit = need("unit")?.as_str().ok_or_else(|| {
                Error::invalid_metadata(format!("data_type '{name}': unit is not a string"))
            })?;
            let scale = need("scale_factor")?.as_u64().ok_or_else(|| {
                Error::invalid_metadata(format!(
                    "data_type '{name}': scale_factor is not a positive integer"
                ))
            })?;
            let unit = TimeUnit::new(unit, scale)?;
            if name == "numpy.datetime64" {
                DataType::DateTime64(unit)
            } else {
                DataType::TimeDelta64(unit)
            }
        }
        "struct" | "structured" => {
            let fields = need("fields")?.as_array().ok_or_else(|| {
                Error::invalid_metadata(format!("data_type '{name}': fields is not a list"))
            })?;
            let mut out = Vec::with_capacity(fields.len().min(crate::dtype::MAX_STRUCT_FIELDS));
            for f in fields {
                // {"name", "data_type"} (struct), or [name, data_type]
                // (zarr-python 3.0 and 3.1's structured).
                let (fname, ftype) = match f {
                    Value::Object(o) => (o.get("name"), o.get("data_type")),
                    Value::Array(a) if a.len() == 2 => (a.first(), a.get(1)),
                    _ => (None, None),
                };
                let (Some(Value::String(fname)), Some(ftype)) = (fname, ftype) else {
                    return Err(Error::invalid_metadata(format!(
                        "data_type '{name}': field {f} is not a name and a data_type"
                    )));
                };
                let t = parse_at(ftype, depth + 1)?;
                if !t.has_layout() {
                    return Err(unsupported(&format!("'{t}' as a struct field ('{fname}')")));
                }
                out.push((fname.clone(), t));
            }
            DataType::Struct(Arc::new(StructType::new(out)?))
        }
        other => return Err(unsupported(&format!("'{other}'"))),
    })
}

/// The zarr.json `data_type` value of `t`.
pub(crate) fn to_json(t: &DataType) -> Value {
    match t {
        DataType::String => json!("string"),
        DataType::Object => json!("bytes"),
        DataType::FixedUtf32 { chars } => json!({
            "name": "fixed_length_utf32", "configuration": {"length_bytes": 4 * u64::from(*chars)}}),
        DataType::FixedBytes {
            len,
            null_terminated,
        } => json!({
            "name": if *null_terminated { "null_terminated_bytes" } else { "raw_bytes" },
            "configuration": {"length_bytes": len}}),
        DataType::DateTime64(u) | DataType::TimeDelta64(u) => json!({
            "name": if matches!(t, DataType::DateTime64(_)) { "numpy.datetime64" } else { "numpy.timedelta64" },
            "configuration": {"unit": u.unit, "scale_factor": u.scale}}),
        DataType::Struct(s) => {
            let fields: Vec<Value> = s
                .fields()
                .iter()
                .map(|f| {
                    let mut m = Map::new();
                    m.insert("name".into(), json!(f.name));
                    m.insert("data_type".into(), to_json(&f.data_type));
                    Value::Object(m)
                })
                .collect();
            json!({"name": "struct", "configuration": {"fields": fields}})
        }
        t => json!(t.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_reads_and_the_first_is_written() {
        for (v, shown, back) in [
            (json!("bool"), "bool", None),
            (json!("float16"), "float16", None),
            (json!("complex128"), "complex128", None),
            (json!("string"), "string", None),
            (
                json!("variable_length_utf8"),
                "string",
                Some(json!("string")),
            ),
            (
                json!("variable_length_bytes"),
                "object",
                Some(json!("bytes")),
            ),
            (
                json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 2048}}),
                "fixed_utf32[512]",
                None,
            ),
            (
                json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}),
                "fixed_bytes[4]",
                None,
            ),
            (
                json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}),
                "datetime64[10s]",
                None,
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [
                    {"name": "x", "data_type": "float32"},
                    {"name": "t", "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}}]}}),
                "struct(x float32, t fixed_utf32[2])",
                None,
            ),
            (
                json!({"name": "structured", "configuration": {"fields": [["a", "int8"], ["b", "bool"]]}}),
                "struct(a int8, b bool)",
                Some(json!({"name": "struct", "configuration": {"fields": [
                    {"name": "a", "data_type": "int8"}, {"name": "b", "data_type": "bool"}]}})),
            ),
        ] {
            let t = parse(&v).unwrap();
            assert_eq!(t.to_string(), shown);
            assert_eq!(to_json(&t), back.unwrap_or(v));
        }
    }

    #[test]
    fn bad_types_are_named() {
        for (v, kind) in [
            (json!("int128"), ErrorKind::Unsupported),
            (
                json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}}),
                ErrorKind::InvalidMetadata,
            ),
            (
                json!({"name": "fixed_length_utf32"}),
                ErrorKind::InvalidMetadata,
            ),
            (
                json!({"name": "raw_bytes", "configuration": {"length_bytes": 0}}),
                ErrorKind::InvalidMetadata,
            ),
            (
                json!({"name": "numpy.datetime64", "configuration": {"unit": "eon", "scale_factor": 1}}),
                ErrorKind::InvalidMetadata,
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [{"name": "s", "data_type": "string"}]}}),
                ErrorKind::Unsupported,
            ),
            (
                json!({"name": "struct", "configuration": {"fields": []}}),
                ErrorKind::InvalidMetadata,
            ),
            (
                json!({"name": "struct", "configuration": {"fields": [{"name": "a"}]}}),
                ErrorKind::InvalidMetadata,
            ),
            (json!(7), ErrorKind::InvalidMetadata),
        ] {
            assert_eq!(parse(&v).unwrap_err().kind(), kind, "{v}");
        }
        let mut deep = json!("uint8");
        for _ in 0..40 {
            deep = json!({"name": "struct", "configuration": {"fields": [{"name": "x", "data_type": deep}]}});
        }
        assert!(parse(&deep).is_err());
    }
}
