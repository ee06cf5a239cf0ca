//! N5 data types: the `dataType` names of attributes.json, their element sizes,
//! and the C API's numeric codes.

use crate::error::{Error, Result};

/// An N5 `dataType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// `string`: UTF-8 strings, each ended by NUL, stored in mode-1 blocks.
    String,
    /// `object`: opaque bytes, stored in mode-2 blocks.
    Object,
}

impl DataType {
    /// Every data type, in C-code order.
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

    /// The name used in attributes.json.
    pub const fn name(self) -> &'static str {
        match self {
            DataType::U8 => "uint8",
            DataType::U16 => "uint16",
            DataType::U32 => "uint32",
            DataType::U64 => "uint64",
            DataType::I8 => "int8",
            DataType::I16 => "int16",
            DataType::I32 => "int32",
            DataType::I64 => "int64",
            DataType::F32 => "float32",
            DataType::F64 => "float64",
            DataType::String => "string",
            DataType::Object => "object",
        }
    }

    /// The type named `name` in attributes.json.
    pub fn from_name(name: &str) -> Result<Self> {
        DataType::ALL
            .iter()
            .copied()
            .find(|t| t.name() == name)
            .ok_or_else(|| Error::invalid_metadata(format!("unknown dataType '{name}'")))
    }

    /// Bytes per element; 1 for `string` and `object` (their blocks are byte streams).
    pub const fn size(self) -> usize {
        match self {
            DataType::U8 | DataType::I8 | DataType::String | DataType::Object => 1,
            DataType::U16 | DataType::I16 => 2,
            DataType::U32 | DataType::I32 | DataType::F32 => 4,
            DataType::U64 | DataType::I64 | DataType::F64 => 8,
        }
    }

    /// Whether this is one of the ten numeric types.
    pub const fn is_numeric(self) -> bool {
        !matches!(self, DataType::String | DataType::Object)
    }

    /// The C API's `n5_dtype` code (1..=12; 0 is invalid).
    pub const fn code(self) -> i32 {
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
        }
    }

    /// The type with C code `code`, if any.
    pub fn from_code(code: i32) -> Option<Self> {
        DataType::ALL.iter().copied().find(|t| t.code() == code)
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
        assert_eq!(DataType::from_code(0), None);
    }
}
