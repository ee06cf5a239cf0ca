//! Elements as JSON text (`n5_region_read_json`, `n5 cat`, fill values):
//! integers exactly, floats as the shortest decimal that reads back to the
//! same value of the element's own width (Python's `repr` layout: `1.0`,
//! `-0.0`, `1e-07`), NaN and infinities as the strings `"NaN"`,
//! `"Infinity"`, `"-Infinity"`, complex numbers as `[re, im]`, fixed
//! strings without their NUL padding, bytes as padded base64, structs as
//! objects with their fields in declared order. Also the IEEE binary16
//! conversions float16 needs.

use std::fmt::Write;

use base64::Engine;

use super::DataType;
use crate::error::{Error, Result};

impl DataType {
    /// One element of this type (native byte order, exactly
    /// [`DataType::size`] bytes of a type with a binary layout) as the JSON
    /// value `n5_region_read_json` gives it (nwb.md §1). Types without a
    /// layout (`string`, `object`, structs with such fields) and a slice of
    /// another length are [`crate::error::ErrorKind::InvalidArgument`]; invalid
    /// UTF-32 in a fixed string is an error too.
    pub fn element_json(&self, element: &[u8]) -> Result<serde_json::Value> {
        if !self.has_layout() || element.len() != self.size() {
            return Err(Error::invalid_argument(format!(
                "{} bytes are no element of {self}",
                element.len()
            )));
        }
        let mut out = String::new();
        write_element(&mut out, self, element)?;
        serde_json::from_str(&out)
            .map_err(|e| Error::new(crate::error::ErrorKind::Internal, e.to_string()))
    }
}

/// Append the JSON text of one element of `t` (native byte order, exactly
/// `t.size()` bytes) to `out`. Invalid UTF-32 in a fixed string is an
/// error (the caller names the element).
pub(crate) fn write_element(out: &mut String, t: &DataType, e: &[u8]) -> Result<()> {
    macro_rules! int {
        ($t:ty) => {{
            let v = <$t>::from_ne_bytes(e.try_into().expect("element size"));
            let _ = write!(out, "{v}");
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
        DataType::Bool => out.push_str(if e[0] != 0 { "true" } else { "false" }),
        DataType::F16 => {
            let bits = u16::from_ne_bytes([e[0], e[1]]);
            write_float(out, f16_to_f64(bits), Width::Half);
        }
        DataType::F32 => write_float(
            out,
            f64::from(f32::from_ne_bytes(e.try_into().expect("4"))),
            Width::Single,
        ),
        DataType::F64 => write_float(
            out,
            f64::from_ne_bytes(e.try_into().expect("8")),
            Width::Double,
        ),
        DataType::C64 => {
            out.push('[');
            write_element(out, &DataType::F32, &e[..4])?;
            out.push_str(", ");
            write_element(out, &DataType::F32, &e[4..8])?;
            out.push(']');
        }
        DataType::C128 => {
            out.push('[');
            write_element(out, &DataType::F64, &e[..8])?;
            out.push_str(", ");
            write_element(out, &DataType::F64, &e[8..16])?;
            out.push(']');
        }
        DataType::FixedUtf32 { .. } => write_string(out, &utf32_string(e)?),
        DataType::FixedBytes {
            null_terminated, ..
        } => {
            let bytes = if *null_terminated { trim_nuls(e) } else { e };
            out.push('"');
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(bytes));
            out.push('"');
        }
        DataType::Struct(s) => {
            out.push('{');
            for (i, f) in s.fields().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, &f.name);
                out.push_str(": ");
                let size = f.data_type.size();
                write_element(out, &f.data_type, &e[f.offset..f.offset + size])?;
            }
            out.push('}');
        }
        DataType::String | DataType::Object => {
            return Err(Error::new(
                crate::error::ErrorKind::Internal,
                "variable-length elements have no binary layout",
            ))
        }
    }
    Ok(())
}

/// The bytes of `e` without trailing NUL bytes.
pub(crate) fn trim_nuls(e: &[u8]) -> &[u8] {
    let end = e.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &e[..end]
}

/// The string held by a fixed UTF-32 element (native-order code units),
/// trailing NULs removed.
pub(crate) fn utf32_string(e: &[u8]) -> Result<String> {
    let units: Vec<u32> = e
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let end = units.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
    units[..end]
        .iter()
        .map(|&u| {
            char::from_u32(u)
                .ok_or_else(|| Error::codec(format!("0x{u:x} is not a Unicode scalar value")))
        })
        .collect()
}

/// Append `s` as a JSON string.
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The width of a float, for its shortest round-trip decimal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// binary16
    Half,
    /// binary32
    Single,
    /// binary64
    Double,
}

/// Append a float: the strings of the special values, else the shortest
/// decimal that reads back to `v` at `width`, laid out as Python's `repr`.
pub(crate) fn write_float(out: &mut String, v: f64, width: Width) {
    if v.is_nan() {
        out.push_str("\"NaN\"");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
        return;
    }
    let sci = match width {
        Width::Double => format!("{v:e}"),
        Width::Single => format!("{:e}", v as f32),
        Width::Half => {
            let bits = f16_from_f64(v);
            (0..=5)
                .map(|p| format!("{v:.p$e}"))
                .find(|s| {
                    s.parse::<f64>()
                        .is_ok_and(|back| f16_from_f64(back) == bits)
                })
                .unwrap_or_else(|| format!("{v:e}"))
        }
    };
    python_layout(out, &sci);
}

/// Lay out Rust's `{:e}` text (`-1.25e-7`) as Python's `repr` does: plain
/// decimals with a `.` for exponents -4..16, else `d.ddde±XX`.
fn python_layout(out: &mut String, sci: &str) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let point = exp as usize + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                for _ in digits.len()..point {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
}

/// The value of IEEE binary16 `bits`.
pub(crate) fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (bits >> 10) & 0x1f;
    let frac = f64::from(bits & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        0x1f if frac == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(i32::from(e) - 15),
    }
}

/// `v` rounded to the nearest IEEE binary16 (ties to even), as bits.
pub(crate) fn f16_from_f64(v: f64) -> u16 {
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    if v.is_nan() {
        return 0x7e00;
    }
    let a = v.abs();
    if a.is_infinite() || a >= 65520.0 {
        return sign | 0x7c00;
    }
    // Units of the smallest subnormal (2^-24) for tiny values; else the
    // exponent and a rounded 10-bit fraction.
    let (exp, scaled) = if a < 2f64.powi(-14) {
        (0, a * 2f64.powi(24))
    } else {
        let e = a.log2().floor() as i32;
        // log2 may be off by one at exact powers near the boundary.
        let e = if 2f64.powi(e) > a {
            e - 1
        } else if 2f64.powi(e + 1) <= a {
            e + 1
        } else {
            e
        };
        (e + 15, (a / 2f64.powi(e) - 1.0) * 1024.0)
    };
    let floor = scaled.floor();
    let rest = scaled - floor;
    let mut m = floor as u32;
    if rest > 0.5 || (rest == 0.5 && m % 2 == 1) {
        m += 1;
    }
    let bits = if exp == 0 {
        // A subnormal that rounds up to 1024 becomes the smallest normal.
        m
    } else {
        ((exp as u32) << 10) + m
    };
    sign | bits as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_json_of_layout_types_only() {
        use serde_json::json;
        let c = [1.5f32.to_ne_bytes(), (-2.0f32).to_ne_bytes()].concat();
        assert_eq!(DataType::C64.element_json(&c).unwrap(), json!([1.5, -2.0]));
        assert_eq!(DataType::Bool.element_json(&[1]).unwrap(), json!(true));
        let s: Vec<u8> = "ab\0"
            .chars()
            .flat_map(|c| (c as u32).to_ne_bytes())
            .collect();
        let t = DataType::FixedUtf32 { chars: 3 };
        assert_eq!(t.element_json(&s).unwrap(), json!("ab"));
        assert!(t.element_json(&s[..8]).is_err());
        assert!(DataType::String.element_json(b"x").is_err());
    }

    fn float(v: f64, w: Width) -> String {
        let mut s = String::new();
        write_float(&mut s, v, w);
        s
    }

    #[test]
    fn floats_read_back_and_look_like_python() {
        for (v, w, want) in [
            (1.0, Width::Double, "1.0"),
            (-0.0, Width::Double, "-0.0"),
            (1e-7, Width::Double, "1e-07"),
            (0.1, Width::Double, "0.1"),
            (0.0001, Width::Double, "0.0001"),
            (1e16, Width::Double, "1e+16"),
            (123456789012345.6, Width::Double, "123456789012345.6"),
            (1.5e300, Width::Double, "1.5e+300"),
            (f64::from(0.1f32), Width::Single, "0.1"),
            (f64::from(16777216f32), Width::Single, "16777216.0"),
            (f64::NAN, Width::Single, "\"NaN\""),
            (f64::NEG_INFINITY, Width::Double, "\"-Infinity\""),
            (f16_to_f64(0x3555), Width::Half, "0.3333"),
            (f16_to_f64(0x7bff), Width::Half, "65500.0"),
            (f16_to_f64(0x0001), Width::Half, "6e-08"),
        ] {
            assert_eq!(float(v, w), want, "{v}");
        }
        for bits in 0..=u16::MAX {
            let v = f16_to_f64(bits);
            if v.is_nan() {
                continue;
            }
            assert_eq!(f16_from_f64(v), bits, "{bits:#x}");
            if v.is_infinite() {
                continue;
            }
            let text = float(v, Width::Half);
            assert_eq!(
                f16_from_f64(text.parse::<f64>().unwrap()),
                bits,
                "{bits:#x}: {text}"
            );
        }
        assert_eq!(f16_from_f64(65519.0), 0x7bff);
        assert_eq!(f16_from_f64(65520.0), 0x7c00);
        assert_eq!(f16_from_f64(2f64.powi(-25)), 0);
        assert_eq!(f16_from_f64(2f64.powi(-25) * 1.5), 1);
    }

    #[test]
    fn elements_of_every_kind() {
        use crate::dtype::{StructType, TimeUnit};
        let mut s = String::new();
        let t = DataType::Struct(std::sync::Arc::new(
            StructType::new(vec![
                ("b".into(), DataType::Bool),
                ("c".into(), DataType::C64),
                ("s".into(), DataType::FixedUtf32 { chars: 3 }),
                (
                    "v".into(),
                    DataType::FixedBytes {
                        len: 3,
                        null_terminated: true,
                    },
                ),
                (
                    "t".into(),
                    DataType::DateTime64(TimeUnit::new("ms", 1).unwrap()),
                ),
            ])
            .unwrap(),
        ));
        let mut e = vec![1u8];
        e.extend(1.5f32.to_ne_bytes());
        e.extend(f32::INFINITY.to_ne_bytes());
        for u in ['é' as u32, 'x' as u32, 0] {
            e.extend(u.to_ne_bytes());
        }
        e.extend([b'a', 0, 0]);
        e.extend(i64::MIN.to_ne_bytes());
        write_element(&mut s, &t, &e).unwrap();
        assert_eq!(
            s,
            "{\"b\": true, \"c\": [1.5, \"Infinity\"], \"s\": \"éx\", \"v\": \"YQ==\", \"t\": -9223372036854775808}"
        );
        let bad = 0xd800u32.to_ne_bytes();
        assert!(write_element(&mut s, &DataType::FixedUtf32 { chars: 1 }, &bad).is_err());
        let mut q = String::new();
        write_string(&mut q, "a\"\\\u{1}");
        assert_eq!(q, "\"a\\\"\\\\\\u0001\"");
    }
}
