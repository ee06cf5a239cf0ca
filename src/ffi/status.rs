//! C API: the library's version, the thread's last error, status names and
//! dtype codes.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use super::boundary;
use super::convert;
use super::{n5_dtype, n5_status, N5_DTYPE_INVALID};
use crate::dtype::DataType;

const fn parse_decimal(s: &str) -> u32 {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut n = 0u32;
    while i < bytes.len() {
        n = n * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    n
}

const MAJOR: u32 = parse_decimal(env!("CARGO_PKG_VERSION_MAJOR"));
const MINOR: u32 = parse_decimal(env!("CARGO_PKG_VERSION_MINOR"));
const PATCH: u32 = parse_decimal(env!("CARGO_PKG_VERSION_PATCH"));
const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(s) => s,
    Err(_) => panic!("the crate version contains a NUL"),
};

/// The major version of the loaded library (`N5_VERSION_MAJOR` of its header).
#[no_mangle]
pub extern "C" fn n5_version_major() -> u32 {
    boundary::infallible("n5_version_major", 0, || MAJOR)
}

/// The minor version of the loaded library.
#[no_mangle]
pub extern "C" fn n5_version_minor() -> u32 {
    boundary::infallible("n5_version_minor", 0, || MINOR)
}

/// The patch version of the loaded library.
#[no_mangle]
pub extern "C" fn n5_version_patch() -> u32 {
    boundary::infallible("n5_version_patch", 0, || PATCH)
}

/// The loaded library's version as `MAJOR * 10000 + MINOR * 100 + PATCH`;
/// compare with `N5_VERSION_NUMBER` to check that the header you compiled
/// against matches the library you loaded.
#[no_mangle]
pub extern "C" fn n5_version_number() -> u32 {
    boundary::infallible("n5_version_number", 0, || {
        MAJOR * 10000 + MINOR * 100 + PATCH
    })
}

/// The loaded library's version as text, such as `"0.1.0"`. Static; never NULL.
#[no_mangle]
pub extern "C" fn n5_version_string() -> *const c_char {
    boundary::infallible("n5_version_string", c"".as_ptr(), || VERSION.as_ptr())
}

/// The status code of the calling thread's last failed call (`N5_OK` when
/// the last call succeeded). Does not change the last error.
#[no_mangle]
pub extern "C" fn n5_last_error_code() -> n5_status {
    boundary::quiet(super::N5_ERR_PANIC, boundary::last_code)
}

/// The message of the calling thread's last failed call, naming the
/// function and the path, key or block involved; `""` when the last call
/// succeeded. Never NULL. Owned by the library: do not free it. Valid until
/// the thread's next `n5_` call other than the error getters and the
/// `_free` functions. Does not change the last error.
#[no_mangle]
pub extern "C" fn n5_last_error_message() -> *const c_char {
    boundary::quiet(c"".as_ptr(), boundary::last_message)
}

/// The name of a status code, such as `"N5_ERR_NOT_FOUND"`; static, never
/// NULL (`"N5_ERR_UNKNOWN"` for a code that is not defined). Like
/// `strerror`, it needs no handle and does not change the last error.
#[no_mangle]
pub extern "C" fn n5_status_name(status: n5_status) -> *const c_char {
    boundary::quiet(c"N5_ERR_UNKNOWN".as_ptr(), || {
        match status {
            0 => c"N5_OK",
            1 => c"N5_ERR_INVALID_ARGUMENT",
            2 => c"N5_ERR_NULL_POINTER",
            3 => c"N5_ERR_INVALID_UTF8",
            4 => c"N5_ERR_IO",
            5 => c"N5_ERR_NOT_FOUND",
            6 => c"N5_ERR_ALREADY_EXISTS",
            7 => c"N5_ERR_INVALID_METADATA",
            8 => c"N5_ERR_UNSUPPORTED",
            9 => c"N5_ERR_DTYPE_MISMATCH",
            10 => c"N5_ERR_SHAPE_MISMATCH",
            11 => c"N5_ERR_OUT_OF_BOUNDS",
            12 => c"N5_ERR_BUFFER_SIZE",
            13 => c"N5_ERR_BUFFER_TOO_SMALL",
            14 => c"N5_ERR_CODEC",
            15 => c"N5_ERR_READ_ONLY",
            16 => c"N5_ERR_JSON",
            17 => c"N5_ERR_INVALID_HANDLE",
            18 => c"N5_ERR_NETWORK",
            19 => c"N5_ERR_ACCESS_DENIED",
            20 => c"N5_ERR_DANGLING_LINK",
            21 => c"N5_ERR_LINK_CYCLE",
            22 => c"N5_ERR_UNSAFE_PICKLE",
            23 => c"N5_ERR_INCOMPLETE",
            98 => c"N5_ERR_PANIC",
            99 => c"N5_ERR_INTERNAL",
            _ => c"N5_ERR_UNKNOWN",
        }
        .as_ptr()
    })
}

/// Bytes per element of `dtype`: 1, 2, 4 or 8 for the numeric types, 1
/// for `N5_DTYPE_BOOL`, 2 for `N5_DTYPE_FLOAT16`, 8 and 16 for
/// `N5_DTYPE_COMPLEX64` and `N5_DTYPE_COMPLEX128`, 8 for
/// `N5_DTYPE_DATETIME64` and `N5_DTYPE_TIMEDELTA64`; 0 for the types whose
/// size depends on the dataset (`N5_DTYPE_STRING`, `N5_DTYPE_OBJECT`,
/// `N5_DTYPE_FIXED_UTF32`, `N5_DTYPE_FIXED_BYTES`, `N5_DTYPE_STRUCT`: see
/// `n5_dataset_element_size`) and for codes that are not dtypes.
#[no_mangle]
pub extern "C" fn n5_dtype_size(dtype: n5_dtype) -> usize {
    boundary::infallible("n5_dtype_size", 0, || match dtype {
        20 | 21 => 8,
        _ => match DataType::from_code(dtype) {
            Some(t) if t.has_layout() => t.size(),
            _ => 0,
        },
    })
}

/// The name of `dtype`: the attributes.json name of N5's types (`"uint8"`
/// ... `"float64"`, `"string"`, `"object"`), then `"bool"`, `"float16"`,
/// `"complex64"`, `"complex128"`, `"fixed_utf32"`, `"fixed_bytes"`,
/// `"struct"`, `"datetime64"`, `"timedelta64"`; static; NULL for a code
/// that is not a dtype.
#[no_mangle]
pub extern "C" fn n5_dtype_name(dtype: n5_dtype) -> *const c_char {
    boundary::infallible("n5_dtype_name", std::ptr::null(), || {
        if !DataType::is_code(dtype) {
            return std::ptr::null();
        }
        let names = DTYPE_NAMES.get_or_init(|| {
            DataType::NAMES
                .iter()
                .map(|n| CString::new(*n).expect("dtype names have no NUL"))
                .collect()
        });
        names[dtype as usize - 1].as_ptr()
    })
}

/// NUL-terminated copies of [`DataType::NAMES`], made once and kept for
/// the life of the process.
static DTYPE_NAMES: OnceLock<Vec<CString>> = OnceLock::new();

/// The dtype code of a type name of `n5_dtype_name` (`"uint16"` gives
/// `N5_DTYPE_UINT16`, `"bool"` `N5_DTYPE_BOOL`); `N5_DTYPE_INVALID` (0)
/// with the last error set for an unknown name (`N5_ERR_INVALID_ARGUMENT`),
/// NULL or invalid UTF-8.
#[no_mangle]
pub extern "C" fn n5_dtype_from_name(name: *const c_char) -> n5_dtype {
    let mut code = N5_DTYPE_INVALID;
    let status = boundary::status("n5_dtype_from_name", || {
        let name = convert::string(name, "name")?;
        let index = DataType::NAMES
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| {
                crate::Error::invalid_argument(format!("'{name}' is not a dtype name"))
            })?;
        code = index as i32 + 1;
        Ok(())
    });
    if status == super::N5_OK {
        code
    } else {
        N5_DTYPE_INVALID
    }
}
