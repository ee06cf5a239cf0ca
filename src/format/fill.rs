//! Fill values of Zarr arrays as their metadata writes them (nwb.md §1):
//! a JSON value read into one element of the binary layout in native byte
//! order (for strings and bytes, the element's own bytes), and written
//! back in the form zarr-python writes.

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::dtype::json::{f16_from_f64, f16_to_f64, trim_nuls, utf32_string, write_float, Width};
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::jsontext;

/// Which metadata the value comes from: they differ for structs (v3: an
/// object of field values; v2: base64 of the record as stored) and for
/// the `0`/`null` that zarr-python 2 writes for object arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `.zarray`.
    V2,
    /// `zarr.json`.
    V3,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// One element of `t` holding the fill value `v`, native byte order; for
/// `string` and `object` the string's UTF-8 or the bytes. `swap` is what
/// turns a stored v2 record (base64) into a native one.
pub(crate) fn parse(
    v: &Value,
    t: &DataType,
    flavor: Flavor,
    swap: Option<&DataType>,
) -> Result<Vec<u8>> {
    let bad = || Error::invalid_metadata(format!("fill_value {v} is not a value of {t}"));
    macro_rules! int {
        ($t:ty) => {{
            let n = v
                .as_i64()
                .and_then(|n| <$t>::try_from(n).ok())
                .or_else(|| v.as_u64().and_then(|n| <$t>::try_from(n).ok()))
                // A whole number written as a float (z5py writes 0.0 for
                // integer arrays), exactly representable.
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
                        .and_then(|f| <$t>::try_from(f as i64).ok())
                })
                .ok_or_else(bad)?;
            n.to_ne_bytes().to_vec()
        }};
    }
    let bytes = match t {
        DataType::U8 => int!(u8),
        DataType::U16 => int!(u16),
        DataType::U32 => int!(u32),
        DataType::U64 => int!(u64),
        DataType::I8 => int!(i8),
        DataType::I16 => int!(i16),
        DataType::I32 => int!(i32),
        DataType::I64 => int!(i64),
        DataType::DateTime64(_) | DataType::TimeDelta64(_) => match v {
            Value::String(s) if s == "NaT" => i64::MIN.to_ne_bytes().to_vec(),
            _ => int!(i64),
        },
        DataType::Bool => match v {
            Value::Bool(b) => vec![u8::from(*b)],
            _ => match v.as_u64() {
                Some(n @ (0 | 1)) => vec![n as u8],
                _ => return Err(bad()),
            },
        },
        DataType::F16 => float_bits(v, 2).ok_or_else(bad)?,
        DataType::F32 => float_bits(v, 4).ok_or_else(bad)?,
        DataType::F64 => float_bits(v, 8).ok_or_else(bad)?,
        DataType::C64 | DataType::C128 => {
            let half = t.size() / 2;
            let [re, im] = v.as_array().map(Vec::as_slice).unwrap_or_default() else {
                return Err(bad());
            };
            let mut out = float_bits(re, half).ok_or_else(bad)?;
            out.extend(float_bits(im, half).ok_or_else(bad)?);
            out
        }
        DataType::FixedUtf32 { chars } => {
            let s = match v {
                Value::String(s) => s.as_str(),
                // zarr-python 2 writes 0 for an empty default.
                _ if v.as_u64() == Some(0) => "",
                _ => return Err(bad()),
            };
            let mut out = Vec::with_capacity(4 * *chars as usize);
            for c in s.chars() {
                out.extend((c as u32).to_ne_bytes());
            }
            if out.len() > 4 * *chars as usize {
                return Err(bad());
            }
            out.resize(4 * *chars as usize, 0);
            out
        }
        DataType::FixedBytes { len, .. } => {
            let mut out = base64_of(v).ok_or_else(bad)?;
            if out.len() > *len as usize {
                return Err(bad());
            }
            out.resize(*len as usize, 0);
            out
        }
        DataType::String => match v {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Null => Vec::new(),
            _ if v.as_u64() == Some(0) => Vec::new(),
            _ => return Err(bad()),
        },
        DataType::Object => match v {
            Value::Null => Vec::new(),
            _ if v.as_u64() == Some(0) => Vec::new(),
            _ => base64_of(v).ok_or_else(bad)?,
        },
        DataType::Struct(s) => {
            if !t.has_layout() {
                // A legacy compound with object fields: its fill is a
                // pickle that only the JSON reading of missing chunks uses.
                return Ok(Vec::new());
            }
            match (v, flavor) {
                (Value::Object(fields), _) => {
                    let mut out = vec![0u8; s.size()];
                    for f in s.fields() {
                        let fv = fields.get(&f.name).ok_or_else(bad)?;
                        let e = parse(fv, &f.data_type, flavor, None)?;
                        out[f.offset..f.offset + e.len()].copy_from_slice(&e);
                    }
                    out
                }
                (Value::String(_), _) => {
                    let mut out = base64_of(v)
                        .filter(|b| b.len() == s.size())
                        .ok_or_else(bad)?;
                    if let Some(swap) = swap {
                        swap.swap_in_place(&mut out);
                    }
                    out
                }
                _ if v.as_u64() == Some(0) => vec![0u8; s.size()],
                _ => return Err(bad()),
            }
        }
    };
    Ok(bytes)
}

fn base64_of(v: &Value) -> Option<Vec<u8>> {
    b64().decode(v.as_str()?).ok()
}

/// A float of `size` bytes from a number, one of the names of the
/// special values, or `0x` and the bits in hexadecimal.
fn float_bits(v: &Value, size: usize) -> Option<Vec<u8>> {
    let value = match v {
        Value::String(s) => match s.as_str() {
            "NaN" | jsontext::NAN => f64::NAN,
            "Infinity" | jsontext::INFINITY => f64::INFINITY,
            "-Infinity" | jsontext::NEG_INFINITY => f64::NEG_INFINITY,
            _ => {
                let hex = s.strip_prefix("0x")?;
                if hex.len() != 2 * size || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let bits = u64::from_str_radix(hex, 16).ok()?;
                return Some(match size {
                    2 => (bits as u16).to_ne_bytes().to_vec(),
                    4 => (bits as u32).to_ne_bytes().to_vec(),
                    _ => bits.to_ne_bytes().to_vec(),
                });
            }
        },
        _ => v.as_f64()?,
    };
    Some(match size {
        2 => f16_from_f64(value).to_ne_bytes().to_vec(),
        4 => (value as f32).to_ne_bytes().to_vec(),
        _ => value.to_ne_bytes().to_vec(),
    })
}

/// The fill value as the metadata writes it (inverse of [`parse`]; v2
/// structs as base64 of the record in byte order `swap` gives from
/// native).
pub(crate) fn to_json(
    bytes: &[u8],
    t: &DataType,
    flavor: Flavor,
    swap: Option<&DataType>,
) -> Value {
    macro_rules! int {
        ($t:ty) => {{
            const N: usize = std::mem::size_of::<$t>();
            let mut b = [0u8; N];
            b.copy_from_slice(&bytes[..N]);
            json!(<$t>::from_ne_bytes(b))
        }};
    }
    match t {
        DataType::U8 => int!(u8),
        DataType::U16 => int!(u16),
        DataType::U32 => int!(u32),
        DataType::U64 => int!(u64),
        DataType::I8 => int!(i8),
        DataType::I16 => int!(i16),
        DataType::I32 => int!(i32),
        DataType::I64 | DataType::DateTime64(_) | DataType::TimeDelta64(_) => int!(i64),
        DataType::Bool => json!(bytes[0] != 0),
        DataType::F16 => {
            let bits = u16::from_ne_bytes([bytes[0], bytes[1]]);
            float_json(f16_to_f64(bits), Width::Half, bits != 0x7e00, || {
                format!("0x{bits:04x}")
            })
        }
        DataType::F32 => {
            let bits = u32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes"));
            let f = f32::from_bits(bits);
            float_json(
                f64::from(f),
                Width::Single,
                bits != f32::NAN.to_bits(),
                || format!("0x{bits:08x}"),
            )
        }
        DataType::F64 => {
            let bits = u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"));
            float_json(
                f64::from_bits(bits),
                Width::Double,
                bits != f64::NAN.to_bits(),
                || format!("0x{bits:016x}"),
            )
        }
        DataType::C64 => json!([
            to_json(&bytes[..4], &DataType::F32, flavor, None),
            to_json(&bytes[4..8], &DataType::F32, flavor, None)
        ]),
        DataType::C128 => json!([
            to_json(&bytes[..8], &DataType::F64, flavor, None),
            to_json(&bytes[8..16], &DataType::F64, flavor, None)
        ]),
        DataType::FixedUtf32 { .. } => json!(utf32_string(bytes).unwrap_or_default()),
        DataType::FixedBytes {
            null_terminated, ..
        } => {
            json!(b64().encode(if *null_terminated {
                trim_nuls(bytes)
            } else {
                bytes
            }))
        }
        DataType::String => json!(String::from_utf8_lossy(bytes)),
        DataType::Object => json!(b64().encode(bytes)),
        DataType::Struct(s) => {
            if !t.has_layout() || bytes.len() != s.size() {
                return json!(0);
            }
            match flavor {
                Flavor::V3 => {
                    let mut m = Map::new();
                    for f in s.fields() {
                        let size = f.data_type.size();
                        m.insert(
                            f.name.clone(),
                            to_json(
                                &bytes[f.offset..f.offset + size],
                                &f.data_type,
                                flavor,
                                None,
                            ),
                        );
                    }
                    Value::Object(m)
                }
                Flavor::V2 => {
                    let mut stored = bytes.to_vec();
                    if let Some(swap) = swap {
                        swap.swap_in_place(&mut stored);
                    }
                    json!(b64().encode(stored))
                }
            }
        }
    }
}

/// A float as JSON: a number, or the name of a special value; NaNs other
/// than the default one by their bits (`hex`), when `odd_nan`.
fn float_json(f: f64, width: Width, odd_nan: bool, hex: impl Fn() -> String) -> Value {
    if f.is_nan() {
        if odd_nan {
            json!(hex())
        } else {
            json!("NaN")
        }
    } else if f == f64::INFINITY {
        json!("Infinity")
    } else if f == f64::NEG_INFINITY {
        json!("-Infinity")
    } else {
        // The shortest text that reads back at the element's width.
        serde_json::from_str(&{
            let mut s = String::new();
            write_float(&mut s, f, width);
            s
        })
        .unwrap_or_else(|_| json!(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{StructType, TimeUnit};
    use std::sync::Arc;

    fn round(v: Value, t: &DataType, flavor: Flavor) -> Vec<u8> {
        let b = parse(&v, t, flavor, None).unwrap_or_else(|e| panic!("{v} {t}: {e}"));
        assert_eq!(b.len(), if t.has_layout() { t.size() } else { b.len() });
        assert_eq!(to_json(&b, t, flavor, None), v, "{t}");
        b
    }

    #[test]
    fn fill_values_of_every_type() {
        round(json!(false), &DataType::Bool, Flavor::V2);
        round(json!(1.5), &DataType::F16, Flavor::V3);
        round(json!("-Infinity"), &DataType::F16, Flavor::V3);
        round(json!("0x7c01"), &DataType::F16, Flavor::V3);
        round(json!([1.0, "NaN"]), &DataType::C64, Flavor::V3);
        round(json!([0.25, -2.0]), &DataType::C128, Flavor::V2);
        let u = round(json!("ab"), &DataType::FixedUtf32 { chars: 3 }, Flavor::V3);
        assert_eq!(&u[8..], &[0; 4]);
        round(
            json!("YQ=="),
            &DataType::FixedBytes {
                len: 2,
                null_terminated: true,
            },
            Flavor::V2,
        );
        round(
            json!("AAE="),
            &DataType::FixedBytes {
                len: 2,
                null_terminated: false,
            },
            Flavor::V2,
        );
        let dt = DataType::DateTime64(TimeUnit::new("ms", 1).unwrap());
        assert_eq!(
            parse(&json!("NaT"), &dt, Flavor::V2, None).unwrap(),
            i64::MIN.to_ne_bytes()
        );
        round(json!(-9223372036854775808i64), &dt, Flavor::V3);
        round(json!("été"), &DataType::String, Flavor::V3);
        assert!(parse(&json!(0), &DataType::String, Flavor::V2, None)
            .unwrap()
            .is_empty());
        assert!(parse(&Value::Null, &DataType::Object, Flavor::V2, None)
            .unwrap()
            .is_empty());
        let s = DataType::Struct(Arc::new(
            StructType::new(vec![
                ("idx_start".into(), DataType::I32),
                ("timeseries".into(), DataType::FixedUtf32 { chars: 2 }),
            ])
            .unwrap(),
        ));
        round(json!({"idx_start": 0, "timeseries": ""}), &s, Flavor::V3);
        let rec = round(json!("AQAAAGEAAAAAAAAA"), &s, Flavor::V2);
        assert_eq!(&rec[..4], &1i32.to_ne_bytes());
        for (v, t) in [
            (json!("abcd"), DataType::FixedUtf32 { chars: 3 }),
            (
                json!("YWJj"),
                DataType::FixedBytes {
                    len: 2,
                    null_terminated: true,
                },
            ),
            (json!(2), DataType::Bool),
            (json!([1.0]), DataType::C64),
            (json!("0x7c0"), DataType::F16),
            (json!({"idx_start": 0}), s.clone()),
            (json!("AQAA"), s.clone()),
            (json!(1.5), dt.clone()),
        ] {
            assert!(parse(&v, &t, Flavor::V3, None).is_err(), "{v} {t}");
        }
    }
}
