//! The NumPy `.npy` format (versions 1.0 to 3.0): the header that `n5 cat`
//! writes and `n5 import` reads.
//!
//! N5 order (dimension 0 fastest) is C order with the dimensions reversed,
//! so `n5 cat` writes C-order arrays of shape `reversed(N5 shape)`, as
//! tensorstore, z5py and zarr present N5 data; `n5 import` also takes
//! Fortran-order files, whose shape is then the N5 shape as it is. The
//! bytes are the same either way: no transposition is ever needed.

use std::io::{Read, Write};

use n5::DataType;

/// What a `.npy` header says about its array.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The element type.
    pub data_type: DataType,
    /// Whether the elements are big-endian.
    pub big_endian: bool,
    /// The shape in N5 order (dimension 0 fastest).
    pub shape: Vec<u64>,
    /// Where the data starts in the file (the header's length).
    pub data_offset: u64,
}

/// A Python string literal of `s` (single-quoted, `\\` and `'` escaped).
fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' | '\'' => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A datetime unit as NumPy writes it inside `M8[...]`: `ms`, `10s`;
/// `None` for the generic unit (plain `M8`).
fn unit_text(u: &n5::dtype::TimeUnit) -> Option<String> {
    match (u.unit, u.scale) {
        ("generic", _) => None,
        (unit, 1) => Some(unit.to_string()),
        (unit, scale) => Some(format!("{scale}{unit}")),
    }
}

/// The `descr` of a data type in little-endian byte order, as the Python
/// literal the header holds: a quoted type string (`'<f2'`, `'<U512'`,
/// `'|S4'`, `'<M8[ms]'`), or for a struct the list of its fields
/// (`[('idx_start', '<i4'), ...]`, nested for struct fields); `None` for
/// types without a binary layout (`string`, `object`, structs with such
/// fields), which no `.npy` file holds.
pub fn descr(t: &DataType) -> Option<String> {
    let plain = |s: &str| Some(py_str(s));
    match t {
        DataType::U8 => plain("|u1"),
        DataType::I8 => plain("|i1"),
        DataType::U16 => plain("<u2"),
        DataType::I16 => plain("<i2"),
        DataType::U32 => plain("<u4"),
        DataType::I32 => plain("<i4"),
        DataType::U64 => plain("<u8"),
        DataType::I64 => plain("<i8"),
        DataType::F32 => plain("<f4"),
        DataType::F64 => plain("<f8"),
        DataType::Bool => plain("|b1"),
        DataType::F16 => plain("<f2"),
        DataType::C64 => plain("<c8"),
        DataType::C128 => plain("<c16"),
        DataType::FixedUtf32 { chars } => plain(&format!("<U{chars}")),
        DataType::FixedBytes {
            len,
            null_terminated: true,
        } => plain(&format!("|S{len}")),
        DataType::FixedBytes { len, .. } => plain(&format!("|V{len}")),
        DataType::DateTime64(u) => plain(&match unit_text(u) {
            Some(u) => format!("<M8[{u}]"),
            None => "<M8".into(),
        }),
        DataType::TimeDelta64(u) => plain(&match unit_text(u) {
            Some(u) => format!("<m8[{u}]"),
            None => "<m8".into(),
        }),
        DataType::Struct(s) if t.has_layout() => {
            let fields: Option<Vec<String>> = s
                .fields()
                .iter()
                .map(|f| Some(format!("({}, {})", py_str(&f.name), descr(&f.data_type)?)))
                .collect();
            Some(format!("[{}]", fields?.join(", ")))
        }
        DataType::String | DataType::Object | DataType::Struct(_) => None,
    }
}

/// Write the header of a little-endian C-order array of N5 shape `shape`
/// (`[]`: a 0-d array); an error for types without a binary layout
/// (see [`descr`]).
pub fn write_header(out: &mut impl Write, t: &DataType, shape: &[u64]) -> std::io::Result<()> {
    let descr = descr(t).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{t} elements have no fixed size, which .npy files need"),
        )
    })?;
    let mut c_shape: Vec<String> = shape.iter().rev().map(|d| d.to_string()).collect();
    let shape_text = match c_shape.len() {
        1 => format!("({},)", c_shape.remove(0)),
        _ => format!("({})", c_shape.join(", ")),
    };
    let mut dict = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': {shape_text}, }}");
    // Magic (6) + version (2) + length (2 or 4) + dict + '\n', a multiple of 64.
    let (version, len_bytes) = if dict.len() + 11 <= 65535 {
        (1u8, 2)
    } else {
        (2u8, 4)
    };
    let total = (10 + (len_bytes - 2) + dict.len() + 1).div_ceil(64) * 64;
    let pad = total - (10 + (len_bytes - 2) + dict.len() + 1);
    dict.extend(std::iter::repeat_n(' ', pad));
    dict.push('\n');
    out.write_all(b"\x93NUMPY")?;
    out.write_all(&[version, 0])?;
    if version == 1 {
        out.write_all(&(dict.len() as u16).to_le_bytes())?;
    } else {
        out.write_all(&(dict.len() as u32).to_le_bytes())?;
    }
    out.write_all(dict.as_bytes())
}

/// Read a `.npy` header from `input`, leaving it at the first data byte.
pub fn read_header(input: &mut impl Read) -> Result<Header, String> {
    let mut start = [0u8; 8];
    input
        .read_exact(&mut start)
        .map_err(|_| "too short for a .npy file".to_string())?;
    if &start[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (len, len_bytes) = match start[6] {
        1 => {
            let mut b = [0u8; 2];
            input.read_exact(&mut b).map_err(|e| e.to_string())?;
            (u16::from_le_bytes(b) as usize, 2)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            input.read_exact(&mut b).map_err(|e| e.to_string())?;
            (u32::from_le_bytes(b) as usize, 4)
        }
        v => return Err(format!(".npy version {v} is not supported")),
    };
    if len > 1 << 20 {
        return Err(format!(".npy header of {len} bytes is too long"));
    }
    let mut dict = vec![0u8; len];
    input
        .read_exact(&mut dict)
        .map_err(|_| "the .npy header is cut short".to_string())?;
    let dict = String::from_utf8_lossy(&dict);
    Ok(Header {
        data_offset: (start.len() + len_bytes + len) as u64,
        ..parse_dict(&dict)?
    })
}

/// The quoted value or the raw text following `'key':` in the header dict.
fn value_of<'a>(dict: &'a str, key: &str) -> Result<&'a str, String> {
    let at = dict
        .find(&format!("'{key}'"))
        .ok_or_else(|| format!("the .npy header has no '{key}'"))?;
    let rest = dict[at + key.len() + 2..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("the .npy header is malformed near '{key}'"))?
        .trim_start();
    Ok(rest)
}

fn parse_dict(dict: &str) -> Result<Header, String> {
    let descr_text = value_of(dict, "descr")?;
    let quote = descr_text
        .chars()
        .next()
        .filter(|c| *c == '\'' || *c == '"')
        .ok_or("the .npy 'descr' is not a simple type (structured arrays are not supported)")?;
    let descr: &str = descr_text[1..]
        .split(quote)
        .next()
        .ok_or("the .npy 'descr' is malformed")?;
    let (order, code) = descr.split_at(1.min(descr.len()));
    let big_endian = order == ">";
    let code = if matches!(order, "<" | ">" | "|" | "=") {
        code
    } else {
        descr
    };
    let data_type = match code {
        "u1" | "B" => DataType::U8,
        "i1" | "b" => DataType::I8,
        "u2" => DataType::U16,
        "i2" => DataType::I16,
        "u4" => DataType::U32,
        "i4" => DataType::I32,
        "u8" => DataType::U64,
        "i8" => DataType::I64,
        "f4" => DataType::F32,
        "f8" => DataType::F64,
        _ => return Err(format!("the .npy type '{descr}' has no N5 data type")),
    };
    let fortran = value_of(dict, "fortran_order")?.starts_with("True");
    let shape_text = value_of(dict, "shape")?;
    let close = shape_text
        .find(')')
        .ok_or("the .npy 'shape' is malformed")?;
    let dims: Result<Vec<u64>, _> = shape_text[1..close]
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<u64>())
        .collect();
    let mut shape =
        dims.map_err(|_| format!("the .npy shape {} is malformed", &shape_text[..=close]))?;
    if shape.is_empty() {
        return Err("the .npy file holds a scalar; N5 datasets have at least one dimension".into());
    }
    if !fortran {
        shape.reverse();
    }
    Ok(Header {
        data_type,
        big_endian,
        shape,
        data_offset: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let mut buf = Vec::new();
        write_header(&mut buf, &DataType::U16, &[5, 4, 3]).unwrap();
        assert_eq!(buf.len() % 64, 0);
        let text = String::from_utf8_lossy(&buf[10..]).to_string();
        assert!(text.contains("'shape': (3, 4, 5)"), "{text}");
        let h = read_header(&mut &buf[..]).unwrap();
        assert_eq!(
            h,
            Header {
                data_type: DataType::U16,
                big_endian: false,
                shape: vec![5, 4, 3],
                data_offset: buf.len() as u64,
            }
        );
        let mut one = Vec::new();
        write_header(&mut one, &DataType::F64, &[7]).unwrap();
        assert_eq!(read_header(&mut &one[..]).unwrap().shape, vec![7]);
    }

    #[test]
    fn fortran_and_big_endian() {
        let h = parse_dict("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }").unwrap();
        assert!(h.big_endian);
        assert_eq!(h.shape, vec![2, 3]);
        assert_eq!(h.data_type, DataType::I32);
        assert!(parse_dict("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }").is_err());
        assert!(parse_dict("{'descr': '<u1', 'fortran_order': False, 'shape': (), }").is_err());
    }

    #[test]
    fn descriptions_of_every_type() {
        use n5::dtype::{StructType, TimeUnit};
        let d = |t: DataType| descr(&t).unwrap();
        assert_eq!(d(DataType::Bool), "'|b1'");
        assert_eq!(d(DataType::F16), "'<f2'");
        assert_eq!(d(DataType::C128), "'<c16'");
        assert_eq!(d(DataType::FixedUtf32 { chars: 512 }), "'<U512'");
        let bytes = |null_terminated| DataType::FixedBytes {
            len: 4,
            null_terminated,
        };
        assert_eq!(d(bytes(true)), "'|S4'");
        assert_eq!(d(bytes(false)), "'|V4'");
        assert_eq!(
            d(DataType::DateTime64(TimeUnit::new("ms", 1).unwrap())),
            "'<M8[ms]'"
        );
        assert_eq!(
            d(DataType::TimeDelta64(TimeUnit::new("s", 10).unwrap())),
            "'<m8[10s]'"
        );
        let s = StructType::new(vec![
            ("idx_start".into(), DataType::I32),
            ("it's".into(), DataType::FixedUtf32 { chars: 2 }),
        ])
        .unwrap();
        assert_eq!(
            d(DataType::Struct(std::sync::Arc::new(s))),
            "[('idx_start', '<i4'), ('it\\'s', '<U2')]"
        );
        assert_eq!(descr(&DataType::String), None);
        let mut header = Vec::new();
        write_header(&mut header, &DataType::C64, &[]).unwrap();
        assert!(String::from_utf8_lossy(&header).contains("'shape': ()"));
        assert!(write_header(&mut Vec::new(), &DataType::Object, &[1]).is_err());
    }
}
