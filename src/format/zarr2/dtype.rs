//! Zarr v2 `dtype` values: NumPy type strings (`<u2`, `|b1`, `<c8`, `<U12`,
//! `|S4`, `|V8`, `<M8[10s]`, `|O`) and structured field lists, read into a
//! [`DataType`] with the byte order each part is stored in, and written
//! back as zarr-python writes them.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::dtype::{DataType, StructType, TimeUnit, MAX_FIXED_BYTES, MAX_STRUCT_DEPTH};
use crate::error::{Error, ErrorKind, Result};
use crate::format::zarr3::chain::native;
use crate::format::zarr3::metadata::Endian;

/// A v2 dtype read: the type, and the parts of it whose stored byte order
/// is not this machine's.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Parsed {
    /// The element type.
    pub data_type: DataType,
    /// The byte order of a type that is one number, one complex or one
    /// UTF-32 string (`None` when it has no order or for structs).
    pub endian: Option<Endian>,
    /// What to byte-swap to turn a stored element into a native one: a
    /// type laid out as the element, whose swaps are exactly those needed
    /// (parts stored in native order become bytes); `None` when nothing
    /// needs swapping.
    pub swap: Option<DataType>,
}

/// Reads a `.zarray` `dtype` value.
pub(crate) fn parse(v: &Value) -> Result<Parsed> {
    parse_at(v, 0)
}

fn parse_at(v: &Value, depth: usize) -> Result<Parsed> {
    match v {
        Value::String(s) => parse_str(s),
        Value::Array(fields) => {
            if depth >= MAX_STRUCT_DEPTH {
                return Err(Error::invalid_metadata(format!(
                    "dtype nests more than {MAX_STRUCT_DEPTH} deep"
                )));
            }
            let mut types = Vec::with_capacity(fields.len().min(crate::dtype::MAX_STRUCT_FIELDS));
            let mut swaps = Vec::with_capacity(types.capacity());
            for f in fields {
                let parts = f.as_array().map(Vec::as_slice).unwrap_or_default();
                let (name, ftype) = match parts {
                    [Value::String(n), t] => (n, t),
                    [Value::String(n), _, shape] => {
                        return Err(Error::new(
                            ErrorKind::Unsupported,
                            format!("dtype field '{n}' is a sub-array of shape {shape}, which is not supported"),
                        ))
                    }
                    _ => {
                        return Err(Error::invalid_metadata(format!(
                            "dtype field {f} is not [name, dtype]"
                        )))
                    }
                };
                let p = parse_at(ftype, depth + 1)?;
                swaps.push((
                    name.clone(),
                    p.swap.clone().unwrap_or(DataType::FixedBytes {
                        len: p.data_type.size() as u32,
                        null_terminated: false,
                    }),
                ));
                types.push((name.clone(), p.data_type));
            }
            let any_swap = swaps
                .iter()
                .zip(&types)
                .any(|((_, s), (_, t))| s.swap_width() != Some(1) && t.size() > 0);
            let data_type = DataType::Struct(Arc::new(StructType::new(types)?));
            let swap = if any_swap && data_type.has_layout() {
                Some(DataType::Struct(Arc::new(StructType::new(swaps)?)))
            } else {
                None
            };
            Ok(Parsed {
                data_type,
                endian: None,
                swap,
            })
        }
        other => Err(Error::invalid_metadata(format!(
            "dtype {other} is neither a type string nor a field list"
        ))),
    }
}

fn parse_str(s: &str) -> Result<Parsed> {
    let unsupported = || {
        Error::new(
            ErrorKind::Unsupported,
            format!("dtype '{s}' is not supported"),
        )
    };
    let (order, rest) = match s.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (Some(c), &s[1..]),
        _ => (None, s),
    };
    let count = |digits: &str, unit: u64| -> Result<u32> {
        let n: u64 = digits.parse().map_err(|_| unsupported())?;
        if n == 0 || n.saturating_mul(unit) > MAX_FIXED_BYTES {
            return Err(Error::invalid_metadata(format!(
                "dtype '{s}': length {n} is not in 1..=2 GiB"
            )));
        }
        Ok(n as u32)
    };
    let t = match rest {
        "O" => DataType::Object,
        "b1" => DataType::Bool,
        "c8" => DataType::C64,
        "c16" => DataType::C128,
        "f2" => DataType::F16,
        _ if rest.starts_with('U') => DataType::FixedUtf32 {
            chars: count(&rest[1..], 4)?,
        },
        _ if rest.starts_with('S') => DataType::FixedBytes {
            len: count(&rest[1..], 1)?,
            null_terminated: true,
        },
        _ if rest.starts_with('V') => DataType::FixedBytes {
            len: count(&rest[1..], 1)?,
            null_terminated: false,
        },
        _ if rest.starts_with("M8") || rest.starts_with("m8") => {
            let unit = match &rest[2..] {
                "" => TimeUnit::new("generic", 1)?,
                u => {
                    let inner = u
                        .strip_prefix('[')
                        .and_then(|u| u.strip_suffix(']'))
                        .ok_or_else(unsupported)?;
                    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
                    let scale = if digits == 0 {
                        1
                    } else {
                        inner[..digits].parse().map_err(|_| unsupported())?
                    };
                    TimeUnit::new(&inner[digits..], scale)?
                }
            };
            if rest.starts_with('M') {
                DataType::DateTime64(unit)
            } else {
                DataType::TimeDelta64(unit)
            }
        }
        _ => {
            let name = match rest {
                "u1" => "uint8",
                "u2" => "uint16",
                "u4" => "uint32",
                "u8" => "uint64",
                "i1" => "int8",
                "i2" => "int16",
                "i4" => "int32",
                "i8" => "int64",
                "f4" => "float32",
                "f8" => "float64",
                _ => return Err(unsupported()),
            };
            DataType::from_plain_name(name).expect("a plain type name")
        }
    };
    let width = t.swap_width().unwrap_or(1);
    let endian = match (order, width) {
        (_, 1) => None,
        (Some('<'), _) => Some(Endian::Little),
        (Some('>'), _) => Some(Endian::Big),
        // '|' (not applicable) or none for a multi-byte type is ambiguous.
        _ => return Err(unsupported()),
    };
    let swap = (endian.is_some() && endian != Some(native())).then(|| t.clone());
    Ok(Parsed {
        data_type: t,
        endian,
        swap,
    })
}

/// The `.zarray` `dtype` value of `t` with every multi-byte part in byte
/// order `endian`: a type string, or a field list for a struct.
pub(crate) fn to_json(t: &DataType, endian: Endian) -> Value {
    let order = match endian {
        Endian::Little => '<',
        Endian::Big => '>',
    };
    let code = match t {
        DataType::Struct(s) => {
            return Value::Array(
                s.fields()
                    .iter()
                    .map(|f| json!([f.name, to_json(&f.data_type, endian)]))
                    .collect(),
            )
        }
        DataType::U8 => "u1".to_string(),
        DataType::U16 => "u2".into(),
        DataType::U32 => "u4".into(),
        DataType::U64 => "u8".into(),
        DataType::I8 => "i1".into(),
        DataType::I16 => "i2".into(),
        DataType::I32 => "i4".into(),
        DataType::I64 => "i8".into(),
        DataType::F16 => "f2".into(),
        DataType::F32 => "f4".into(),
        DataType::F64 => "f8".into(),
        DataType::C64 => "c8".into(),
        DataType::C128 => "c16".into(),
        DataType::Bool => "b1".into(),
        DataType::String | DataType::Object => "O".into(),
        DataType::FixedUtf32 { chars } => format!("U{chars}"),
        DataType::FixedBytes {
            len,
            null_terminated,
        } => format!("{}{len}", if *null_terminated { 'S' } else { 'V' }),
        DataType::DateTime64(u) | DataType::TimeDelta64(u) => {
            let letter = if matches!(t, DataType::DateTime64(_)) {
                'M'
            } else {
                'm'
            };
            match (u.unit, u.scale) {
                ("generic", _) => format!("{letter}8"),
                (unit, 1) => format!("{letter}8[{unit}]"),
                (unit, scale) => format!("{letter}8[{scale}{unit}]"),
            }
        }
    };
    let order = if t.swap_width() == Some(1) {
        '|'
    } else {
        order
    };
    json!(format!("{order}{code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_strings_read_and_write_back() {
        for (s, shown) in [
            ("|b1", "bool"),
            ("<f2", "float16"),
            (">c8", "complex64"),
            ("<c16", "complex128"),
            ("<U512", "fixed_utf32[512]"),
            ("|S4", "fixed_bytes[4]"),
            ("|V3", "fixed_bytes[3]"),
            ("<M8[ms]", "datetime64[ms]"),
            (">M8[10s]", "datetime64[10s]"),
            ("<m8[us]", "timedelta64[us]"),
            ("<M8", "datetime64"),
            ("|O", "object"),
            ("<u2", "uint16"),
        ] {
            let p = parse(&json!(s)).unwrap();
            assert_eq!(p.data_type.to_string(), shown, "{s}");
            let endian = p.endian.unwrap_or(Endian::Little);
            assert_eq!(to_json(&p.data_type, endian), json!(s), "{s}");
            let big = s.starts_with('>');
            assert_eq!(
                p.swap.is_some(),
                big == cfg!(target_endian = "little") && p.endian.is_some(),
                "{s}"
            );
        }
        assert_eq!(
            parse(&json!("|S4")).unwrap().data_type,
            DataType::FixedBytes {
                len: 4,
                null_terminated: true
            }
        );
        assert_eq!(
            parse(&json!("|V4")).unwrap().data_type,
            DataType::FixedBytes {
                len: 4,
                null_terminated: false
            }
        );
    }

    #[test]
    fn structs_swap_only_their_foreign_fields() {
        let v = json!([
            ["a", "<i4"],
            ["b", ">u2"],
            ["s", [["x", "|u1"], ["y", ">f8"]]]
        ]);
        let p = parse(&v).unwrap();
        assert_eq!(
            p.data_type.to_string(),
            "struct(a int32, b uint16, s struct(x uint8, y float64))"
        );
        assert_eq!(p.data_type.size(), 4 + 2 + 9);
        let swap = p.swap.expect("two big-endian fields");
        let mut e: Vec<u8> = (0..15).collect();
        swap.swap_in_place(&mut e);
        assert_eq!(e, [0, 1, 2, 3, 5, 4, 6, 14, 13, 12, 11, 10, 9, 8, 7]);
        assert_eq!(
            parse(&json!([["a", "<i4"], ["b", "|b1"]])).unwrap().swap,
            None
        );
        let legacy = parse(&json!([
            ["idx_start", "<i4"],
            ["count", "<i4"],
            ["timeseries", "|O"]
        ]))
        .unwrap();
        assert!(!legacy.data_type.has_layout());
        assert_eq!(
            to_json(&p.data_type, Endian::Little),
            json!([
                ["a", "<i4"],
                ["b", "<u2"],
                ["s", [["x", "|u1"], ["y", "<f8"]]]
            ])
        );
    }

    #[test]
    fn unsupported_and_bad_dtypes_are_named() {
        for (v, kind) in [
            (json!("<u16"), ErrorKind::Unsupported),
            (json!("|u2"), ErrorKind::Unsupported),
            (json!("<U0"), ErrorKind::InvalidMetadata),
            (json!("<U99999999999"), ErrorKind::InvalidMetadata),
            (json!("<M8[fortnight]"), ErrorKind::InvalidMetadata),
            (json!("<M8[s"), ErrorKind::Unsupported),
            (json!([["p", "<i2", [2]]]), ErrorKind::Unsupported),
            (json!([["a"]]), ErrorKind::InvalidMetadata),
            (json!([]), ErrorKind::InvalidMetadata),
            (
                json!([["a", "<i4"], ["a", "<i4"]]),
                ErrorKind::InvalidMetadata,
            ),
            (json!(3), ErrorKind::InvalidMetadata),
        ] {
            assert_eq!(parse(&v).unwrap_err().kind(), kind, "{v}");
        }
    }
}
