//! Element types: the N5 `dataType` names and C codes of every type the
//! library reads and writes (the ten numeric ones, N5's `string` and
//! `object` blocks, and the Zarr types of nwb.md §1: bool, float16,
//! complex, fixed-length UTF-32 strings and bytes, structs, datetimes),
//! their element sizes and in-memory layout, and the byte swapping that
//! turns a stored byte order into the native one. How each format spells a
//! type is the format's business; what an element means in JSON is
//! `json`'s.

use std::sync::Arc;

use crate::error::{Error, Result};

pub(crate) mod json;

/// An element type. The ten numeric types, `string` and `object` are N5's;
/// the others come from Zarr. Types with parameters (fixed lengths, struct
/// fields, datetime units) carry them, so two datasets' types are equal
/// exactly when their elements are laid out alike.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `uint8`
    U8,
    /// `uint16`
    U16,
    /// `uint32`
    U32,
    /// `uint64`
    U64,
    /// `int8`
    I8,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `float32`
    F32,
    /// `float64`
    F64,
    /// `string`: N5's mode-1 blocks of NUL-ended UTF-8 strings; in Zarr,
    /// variable-length UTF-8 strings (`vlen-utf8`).
    String,
    /// `object`: N5's mode-2 blocks of opaque bytes; in Zarr, variable-length
    /// bytes (`vlen-bytes`) or legacy pickled/JSON objects.
    Object,
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `float16`: IEEE 754 binary16.
    F16,
    /// `complex64`: float32 real part, then float32 imaginary part.
    C64,
    /// `complex128`: float64 real part, then float64 imaginary part.
    C128,
    /// `fixed_utf32`: `chars` UTF-32 code units, NUL-padded.
    FixedUtf32 {
        /// Code units per element.
        chars: u32,
    },
    /// `fixed_bytes`: `len` bytes.
    FixedBytes {
        /// Bytes per element.
        len: u32,
        /// Whether trailing NUL bytes are padding (`|S n`,
        /// `null_terminated_bytes`) rather than data (`|V n`, `raw_bytes`).
        null_terminated: bool,
    },
    /// `struct`: named fields packed in declared order.
    Struct(Arc<StructType>),
    /// `datetime64`: int64 counts of `unit` since the epoch; NaT is INT64_MIN.
    DateTime64(TimeUnit),
    /// `timedelta64`: int64 counts of `unit`.
    TimeDelta64(TimeUnit),
}

/// The fields of a struct type, packed: each field's offset is the sum of
/// the sizes before it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructType {
    fields: Vec<Field>,
    size: usize,
    variable: bool,
}

/// One field of a struct.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// Its byte offset in the element.
    pub offset: usize,
    /// Its type.
    pub data_type: DataType,
}

/// The unit of a datetime or timedelta: a NumPy unit name and a multiple
/// (`<M8[10s]` is unit `s`, scale 10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeUnit {
    /// The unit (`Y`, `M`, `W`, `D`, `h`, `m`, `s`, `ms`, `us`, `ns`, `ps`,
    /// `fs`, `as`, or `generic`).
    pub unit: &'static str,
    /// How many units one step is (1 for most).
    pub scale: u32,
}

/// NumPy's datetime units.
pub const TIME_UNITS: [&str; 14] = [
    "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic",
];

/// Nesting deeper than this in a struct type is refused (no format writes
/// more than a few levels).
pub const MAX_STRUCT_DEPTH: usize = 16;

/// More fields than this in one struct type are refused.
pub const MAX_STRUCT_FIELDS: usize = 4096;

/// The largest fixed string or bytes element, in bytes (so that a chunk's
/// size check cannot overflow before it is made).
pub const MAX_FIXED_BYTES: u64 = 1 << 31;

impl TimeUnit {
    /// The unit named `unit` (one of [`TIME_UNITS`]) with multiple `scale`.
    pub fn new(unit: &str, scale: u64) -> Result<TimeUnit> {
        let unit = TIME_UNITS
            .iter()
            .find(|u| **u == unit)
            .ok_or_else(|| Error::invalid_metadata(format!("'{unit}' is not a datetime unit")))?;
        let scale = u32::try_from(scale)
            .ok()
            .filter(|&s| s >= 1)
            .ok_or_else(|| {
                Error::invalid_metadata(format!("datetime scale {scale} is not in 1..2^32"))
            })?;
        Ok(TimeUnit { unit, scale })
    }
}

impl StructType {
    /// A struct of `fields` (name, type) packed in order. Names must be
    /// distinct and not empty; sub-structs count towards the depth.
    pub fn new(fields: Vec<(String, DataType)>) -> Result<StructType> {
        if fields.is_empty() {
            return Err(Error::invalid_metadata(
                "a struct type needs at least one field",
            ));
        }
        if fields.len() > MAX_STRUCT_FIELDS {
            return Err(Error::invalid_metadata(format!(
                "a struct type of {} fields (at most {MAX_STRUCT_FIELDS})",
                fields.len()
            )));
        }
        let mut out = Vec::with_capacity(fields.len());
        let mut offset = 0usize;
        let mut variable = false;
        for (name, data_type) in fields {
            if name.is_empty() || out.iter().any(|f: &Field| f.name == name) {
                return Err(Error::invalid_metadata(format!(
                    "struct field name '{name}' is empty or repeated"
                )));
            }
            if data_type.depth() >= MAX_STRUCT_DEPTH {
                return Err(Error::invalid_metadata(format!(
                    "struct types nest more than {MAX_STRUCT_DEPTH} deep"
                )));
            }
            let size = data_type.element_size();
            variable |= size == 0;
            out.push(Field {
                name,
                offset,
                data_type,
            });
            offset = offset
                .checked_add(size)
                .filter(|&o| o as u64 <= MAX_FIXED_BYTES)
                .ok_or_else(|| Error::invalid_metadata("a struct element of more than 2 GiB"))?;
        }
        Ok(StructType {
            fields: out,
            size: if variable { 0 } else { offset },
            variable,
        })
    }

    /// The fields, in declared order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Bytes per element; 0 when a field has no fixed size.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether a field has no fixed size (a legacy compound with object
    /// fields), so that the struct has no binary layout.
    pub fn is_variable(&self) -> bool {
        self.variable
    }
}

impl DataType {
    /// The twelve N5 types, in C-code order.
    pub const ALL: [DataType; 12] = [
        DataType::U8,
        DataType::U16,
        DataType::U32,
        DataType::U64,
        DataType::I8,
        DataType::I16,
        DataType::I32,
        DataType::I64,
        DataType::F32,
        DataType::F64,
        DataType::String,
        DataType::Object,
    ];

    /// The numeric types, in C-code order.
    pub const NUMERIC: [DataType; 10] = [
        DataType::U8,
        DataType::U16,
        DataType::U32,
        DataType::U64,
        DataType::I8,
        DataType::I16,
        DataType::I32,
        DataType::I64,
        DataType::F32,
        DataType::F64,
    ];

    /// Every type name of the C API (`n5_dtype_name`), by code 1..=21.
    pub const NAMES: [&'static str; 21] = [
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "int8",
        "int16",
        "int32",
        "int64",
        "float32",
        "float64",
        "string",
        "object",
        "bool",
        "float16",
        "complex64",
        "complex128",
        "fixed_utf32",
        "fixed_bytes",
        "struct",
        "datetime64",
        "timedelta64",
    ];

    /// The type's name (`n5_dtype_name`; the N5 `dataType` for N5's own).
    pub fn name(&self) -> &'static str {
        Self::NAMES[self.code() as usize - 1]
    }

    /// The N5 type named `name` in attributes.json.
    pub fn from_name(name: &str) -> Result<Self> {
        DataType::ALL
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .ok_or_else(|| Error::invalid_metadata(format!("unknown dataType '{name}'")))
    }

    /// The type named `name` among those that need no parameter (codes
    /// 1–16), whatever the format.
    pub fn from_plain_name(name: &str) -> Option<Self> {
        (1..=16)
            .filter_map(Self::from_code)
            .find(|t| t.name() == name)
    }

    /// Bytes per element of the binary layout; 1 for `string` and `object`
    /// (N5 blocks of them are byte streams), 0 for a struct with a field
    /// of no fixed size.
    pub fn size(&self) -> usize {
        match self {
            DataType::U8 | DataType::I8 | DataType::String | DataType::Object | DataType::Bool => 1,
            DataType::U16 | DataType::I16 | DataType::F16 => 2,
            DataType::U32 | DataType::I32 | DataType::F32 => 4,
            DataType::U64
            | DataType::I64
            | DataType::F64
            | DataType::C64
            | DataType::DateTime64(_)
            | DataType::TimeDelta64(_) => 8,
            DataType::C128 => 16,
            DataType::FixedUtf32 { chars } => 4 * *chars as usize,
            DataType::FixedBytes { len, .. } => *len as usize,
            DataType::Struct(s) => s.size(),
        }
    }

    /// Bytes per element of the binary layout region and block I/O use
    /// (`n5_dataset_element_size`): [`DataType::size`], but 0 for types
    /// without one (`string`, `object`, structs with such fields).
    pub fn element_size(&self) -> usize {
        if self.has_layout() {
            self.size()
        } else {
            0
        }
    }

    /// Whether this is one of the ten numeric types.
    pub const fn is_numeric(&self) -> bool {
        matches!(
            self,
            DataType::U8
                | DataType::U16
                | DataType::U32
                | DataType::U64
                | DataType::I8
                | DataType::I16
                | DataType::I32
                | DataType::I64
                | DataType::F32
                | DataType::F64
        )
    }

    /// Whether elements have a fixed binary layout, so that region and
    /// block I/O apply (every type but `string`, `object` and structs with
    /// such fields).
    pub fn has_layout(&self) -> bool {
        match self {
            DataType::String | DataType::Object => false,
            DataType::Struct(s) => !s.is_variable(),
            _ => true,
        }
    }

    /// Whether this is a struct with a field of no fixed size (a legacy
    /// compound with object fields).
    pub fn is_variable_struct(&self) -> bool {
        matches!(self, DataType::Struct(s) if s.is_variable())
    }

    /// How deep struct types nest in this type (0 for others).
    fn depth(&self) -> usize {
        match self {
            DataType::Struct(s) => {
                1 + s
                    .fields
                    .iter()
                    .map(|f| f.data_type.depth())
                    .max()
                    .unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// The C API's `n5_dtype` code (1..=21; 0 is invalid).
    pub const fn code(&self) -> i32 {
        match self {
            DataType::U8 => 1,
            DataType::U16 => 2,
            DataType::U32 => 3,
            DataType::U64 => 4,
            DataType::I8 => 5,
            DataType::I16 => 6,
            DataType::I32 => 7,
            DataType::I64 => 8,
            DataType::F32 => 9,
            DataType::F64 => 10,
            DataType::String => 11,
            DataType::Object => 12,
            DataType::Bool => 13,
            DataType::F16 => 14,
            DataType::C64 => 15,
            DataType::C128 => 16,
            DataType::FixedUtf32 { .. } => 17,
            DataType::FixedBytes { .. } => 18,
            DataType::Struct(_) => 19,
            DataType::DateTime64(_) => 20,
            DataType::TimeDelta64(_) => 21,
        }
    }

    /// The type with C code `code` when it needs no parameter (codes
    /// 1–16); `None` for the others and for codes that are not types.
    pub fn from_code(code: i32) -> Option<Self> {
        Some(match code {
            1..=12 => DataType::ALL[code as usize - 1].clone(),
            13 => DataType::Bool,
            14 => DataType::F16,
            15 => DataType::C64,
            16 => DataType::C128,
            _ => return None,
        })
    }

    /// Whether `code` is a type code (1..=21).
    pub const fn is_code(code: i32) -> bool {
        1 <= code && code <= 21
    }

    /// The width of the words byte swapping reverses when every part of
    /// an element is a word of one width at a multiple of it (1: nothing to
    /// swap); `None` for structs mixing widths.
    pub fn swap_width(&self) -> Option<usize> {
        match self {
            DataType::C64 => Some(4),
            DataType::C128 => Some(8),
            DataType::FixedUtf32 { .. } => Some(4),
            DataType::FixedBytes { .. } | DataType::String | DataType::Object => Some(1),
            DataType::Struct(s) => {
                let mut width = 1;
                for f in &s.fields {
                    let w = f.data_type.swap_width()?;
                    if w == 1 {
                        continue;
                    }
                    if (width != 1 && width != w) || f.offset % w != 0 {
                        return None;
                    }
                    width = w;
                }
                if s.size % width != 0 {
                    return None;
                }
                Some(width)
            }
            t => Some(t.size()),
        }
    }

    /// Reverse the byte order of every element of `data` (whole elements
    /// of this type): each number, each half of a complex, each UTF-32
    /// code unit and each field of a struct, bytes left as they are.
    pub fn swap_in_place(&self, data: &mut [u8]) {
        match self.swap_width() {
            Some(w) => crate::geometry::swap_in_place(data, w),
            None => {
                let size = self.size();
                if size == 0 {
                    return;
                }
                for element in data.chunks_exact_mut(size) {
                    self.swap_element(element);
                }
            }
        }
    }

    /// Copy `src` to `dst` (equal lengths, whole elements), reversing the
    /// byte order of each element as [`DataType::swap_in_place`] does.
    pub fn swap_copy(&self, dst: &mut [u8], src: &[u8]) {
        match self.swap_width() {
            Some(w) => crate::geometry::swap_copy(dst, src, w),
            None => {
                dst.copy_from_slice(src);
                self.swap_in_place(dst);
            }
        }
    }

    /// Swap one element, field by field.
    fn swap_element(&self, element: &mut [u8]) {
        match self {
            DataType::Struct(s) => {
                for f in &s.fields {
                    let size = f.data_type.size();
                    if let Some(part) = element.get_mut(f.offset..f.offset + size) {
                        f.data_type.swap_in_place(part);
                    }
                }
            }
            t => t.swap_in_place(element),
        }
    }
}

impl DataType {
    /// The description `n5_dataset_dtype_json` gives of this type (without
    /// what the dataset adds: `stored`, `object_codec`, references):
    /// `name`, `size` (the element size), `byte_order` (`byte_order` for
    /// types with one, `"none"` otherwise; left out for structs, whose
    /// fields each have theirs), `length_bytes` and `null_terminated` for
    /// fixed strings and bytes, `unit` and `scale_factor` for datetimes,
    /// `fields` (`name`, `offset`, `type`) for structs.
    pub fn describe(&self, byte_order: &str) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let mut m = serde_json::Map::new();
        m.insert("name".into(), json!(self.name()));
        m.insert("size".into(), json!(self.element_size()));
        if !matches!(self, DataType::Struct(_)) {
            let order = if self.swap_width().is_some_and(|w| w > 1) {
                byte_order
            } else {
                "none"
            };
            m.insert("byte_order".into(), json!(order));
        }
        match self {
            DataType::FixedUtf32 { chars } => {
                m.insert("length_bytes".into(), json!(4 * u64::from(*chars)));
            }
            DataType::FixedBytes {
                len,
                null_terminated,
            } => {
                m.insert("length_bytes".into(), json!(len));
                m.insert("null_terminated".into(), json!(null_terminated));
            }
            DataType::DateTime64(u) | DataType::TimeDelta64(u) => {
                m.insert("unit".into(), json!(u.unit));
                m.insert("scale_factor".into(), json!(u.scale));
            }
            DataType::Struct(s) => {
                let fields: Vec<serde_json::Value> = s
                    .fields()
                    .iter()
                    .map(|f| {
                        json!({"name": f.name, "offset": f.offset,
                               "type": f.data_type.describe(byte_order)})
                    })
                    .collect();
                m.insert("fields".into(), json!(fields));
            }
            _ => {}
        }
        m
    }
}

impl std::fmt::Display for DataType {
    /// The name, with parameters as the `n5` tool shows them:
    /// `fixed_utf32[512]`, `fixed_bytes[4]`, `datetime64[10s]`,
    /// `struct(x float32, y float32)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataType::FixedUtf32 { chars } => write!(f, "fixed_utf32[{chars}]"),
            DataType::FixedBytes { len, .. } => write!(f, "fixed_bytes[{len}]"),
            DataType::DateTime64(u) | DataType::TimeDelta64(u) => {
                let name = self.name();
                if u.unit == "generic" {
                    f.write_str(name)
                } else if u.scale == 1 {
                    write!(f, "{name}[{}]", u.unit)
                } else {
                    write!(f, "{name}[{}{}]", u.scale, u.unit)
                }
            }
            DataType::Struct(s) => {
                f.write_str("struct(")?;
                for (i, field) in s.fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{} {}", field.name, field.data_type)?;
                }
                f.write_str(")")
            }
            t => f.write_str(t.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for t in DataType::ALL {
            assert_eq!(DataType::from_name(t.name()).unwrap(), t);
            assert_eq!(DataType::from_code(t.code()), Some(t));
        }
        assert!(DataType::from_name("bool").is_err());
        assert_eq!(DataType::from_plain_name("bool"), Some(DataType::Bool));
        assert_eq!(DataType::from_code(0), None);
        assert_eq!(DataType::from_code(17), None);
        for code in 1..=21 {
            assert!(DataType::is_code(code));
        }
        assert!(!DataType::is_code(22));
    }

    fn record() -> DataType {
        DataType::Struct(Arc::new(
            StructType::new(vec![
                ("a".into(), DataType::I8),
                ("b".into(), DataType::F64),
                ("c".into(), DataType::C64),
                ("d".into(), DataType::FixedUtf32 { chars: 2 }),
            ])
            .unwrap(),
        ))
    }

    #[test]
    fn sizes_and_swaps_follow_the_layout() {
        let t = record();
        assert_eq!(t.size(), 1 + 8 + 8 + 8);
        assert_eq!(t.swap_width(), None);
        let mut e: Vec<u8> = (0..25).collect();
        t.swap_in_place(&mut e);
        let mut want = vec![0u8];
        want.extend((1..9).rev());
        want.extend([12, 11, 10, 9, 16, 15, 14, 13]);
        want.extend([20, 19, 18, 17, 24, 23, 22, 21]);
        assert_eq!(e, want);
        let mut copy = vec![0u8; 25];
        t.swap_copy(&mut copy, &want);
        assert_eq!(copy, (0..25).collect::<Vec<u8>>());
        assert_eq!(DataType::C128.swap_width(), Some(8));
        assert_eq!(
            DataType::FixedBytes {
                len: 3,
                null_terminated: true
            }
            .swap_width(),
            Some(1)
        );
        let uniform = DataType::Struct(Arc::new(
            StructType::new(vec![
                ("i".into(), DataType::I32),
                ("s".into(), DataType::FixedUtf32 { chars: 3 }),
            ])
            .unwrap(),
        ));
        assert_eq!(uniform.swap_width(), Some(4));
        assert_eq!(uniform.to_string(), "struct(i int32, s fixed_utf32[3])");
        let variable = StructType::new(vec![("o".into(), DataType::Object)]).unwrap();
        assert!(variable.is_variable());
        assert_eq!(DataType::Struct(Arc::new(variable)).element_size(), 0);
    }

    #[test]
    fn struct_types_are_checked() {
        assert!(StructType::new(vec![]).is_err());
        assert!(
            StructType::new(vec![("a".into(), DataType::U8), ("a".into(), DataType::U8)]).is_err()
        );
        let mut t = DataType::U8;
        for _ in 0..MAX_STRUCT_DEPTH {
            t = DataType::Struct(Arc::new(StructType::new(vec![("x".into(), t)]).unwrap()));
        }
        assert!(StructType::new(vec![("x".into(), t)]).is_err());
        let big = DataType::FixedBytes {
            len: 1 << 30,
            null_terminated: false,
        };
        assert!(StructType::new(vec![
            ("a".into(), big.clone()),
            ("b".into(), big.clone()),
            ("c".into(), big)
        ])
        .is_err());
        assert!(TimeUnit::new("fortnight", 1).is_err());
        assert!(TimeUnit::new("s", 0).is_err());
        assert_eq!(TimeUnit::new("s", 10).unwrap().scale, 10);
    }
}
