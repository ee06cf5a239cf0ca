//! Conversions between C arguments and Rust values: strings in, text out
//! with the size-query convention, per-dimension `uint64_t` arrays, data
//! buffers, scalar outputs and dtype codes.
//!
//! Every raw pointer the C API receives is read or written here (or in
//! `handle`), after a NULL check. Arrays are copied with unaligned reads and
//! writes, so callers may pass any alignment.

use std::ffi::{c_char, c_void, CStr};

use crate::dataset::Dataset;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};

fn null(arg: &str) -> Error {
    Error::new(ErrorKind::NullPointer, format!("argument '{arg}' is NULL"))
}

/// Fail with `N5_ERR_NULL_POINTER` when `ptr` is NULL.
pub(crate) fn non_null<T>(ptr: *const T, arg: &str) -> Result<()> {
    if ptr.is_null() {
        Err(null(arg))
    } else {
        Ok(())
    }
}

/// The NUL-terminated UTF-8 string at `ptr`.
pub(crate) fn string<'a>(ptr: *const c_char, arg: &str) -> Result<&'a str> {
    non_null(ptr, arg)?;
    // SAFETY: non-NULL, and by the header's rule 2 a NUL-terminated string
    // that stays valid for the duration of the call.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    std::str::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::InvalidUtf8,
            format!(
                "argument '{arg}' is not valid UTF-8 ({e}): {}",
                String::from_utf8_lossy(bytes)
            ),
        )
    })
}

/// Like [`string`], but NULL gives `None`.
pub(crate) fn opt_string<'a>(ptr: *const c_char, arg: &str) -> Result<Option<&'a str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        string(ptr, arg).map(Some)
    }
}

/// Check that `out_len` can receive a size query's answer and that `buf`
/// and `cap` agree (NULL only with capacity 0).
pub(crate) fn check_out_buf<T>(
    buf: *const T,
    cap: usize,
    out_len: *const usize,
    arg: &str,
) -> Result<()> {
    if buf.is_null() {
        if cap != 0 {
            return Err(Error::new(
                ErrorKind::NullPointer,
                format!("argument '{arg}' is NULL but its capacity is {cap}"),
            ));
        }
        non_null(out_len, "out_len")?;
    }
    Ok(())
}

/// Store `text` in `buf` (capacity `cap`) with the size-query convention:
/// `buf == NULL && cap == 0` only stores the length (without NUL) in
/// `*out_len`; a buffer too small for the text and its NUL is
/// `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set and the buffer untouched.
/// `out_len` may be NULL when a buffer is given.
pub(crate) fn write_text(
    text: &str,
    buf: *mut c_char,
    cap: usize,
    out_len: *mut usize,
) -> Result<()> {
    check_out_buf(buf, cap, out_len, "buf")?;
    let len = text.len();
    if !buf.is_null() && cap <= len {
        store(out_len, len);
        return Err(Error::new(
            ErrorKind::BufferTooSmall,
            format!(
                "the text needs {} bytes with its NUL; the buffer holds {cap}",
                len + 1
            ),
        ));
    }
    if !buf.is_null() {
        // SAFETY: `buf` is non-NULL and valid for `cap > len` bytes (rule 3
        // of the header); the source is a distinct Rust string.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), len);
            *buf.add(len) = 0;
        }
    }
    store(out_len, len);
    Ok(())
}

/// Store bytes in `buf` (capacity `cap`) with the size-query convention of
/// [`write_text`] but without adding a NUL: a capacity of `bytes.len()` suffices.
pub(crate) fn write_bytes(
    bytes: &[u8],
    buf: *mut c_void,
    cap: usize,
    out_len: *mut usize,
) -> Result<()> {
    check_out_buf(buf, cap, out_len, "buf")?;
    if !buf.is_null() && cap < bytes.len() {
        store(out_len, bytes.len());
        return Err(Error::new(
            ErrorKind::BufferTooSmall,
            format!(
                "the data needs {} bytes; the buffer holds {cap}",
                bytes.len()
            ),
        ));
    }
    if !buf.is_null() {
        // SAFETY: `buf` is non-NULL and valid for `cap >= bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len()) };
    }
    store(out_len, bytes.len());
    Ok(())
}

/// Store `value` in `*out` unless `out` is NULL (optional outputs).
pub(crate) fn store<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, and by the header valid for one `T`; any
        // alignment is accepted.
        unsafe { out.write_unaligned(value) };
    }
}

/// Store `value` in the required output `*out`.
pub(crate) fn store_required<T>(out: *mut T, value: T, arg: &str) -> Result<()> {
    non_null(out, arg)?;
    store(out, value);
    Ok(())
}

/// Check that `ndim` equals the dataset's rank.
pub(crate) fn check_ndim(ds: &Dataset, ndim: usize) -> Result<()> {
    let rank = ds.attributes().ndim();
    if ndim != rank {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            format!(
                "ndim is {ndim} but dataset '{}' has {rank} dimensions",
                crate::path::display(ds.path())
            ),
        ));
    }
    Ok(())
}

/// The strings of a packed buffer: each string's UTF-8 bytes followed by a
/// NUL (`"a\0bc\0"`). A last byte that is not a NUL is an error of kind
/// `unended`; a string that is not UTF-8 is `N5_ERR_INVALID_UTF8` naming
/// it.
pub(crate) fn packed_strings(bytes: &[u8], unended: ErrorKind) -> Result<Vec<&str>> {
    if bytes.last().is_some_and(|&b| b != 0) {
        return Err(Error::new(
            unended,
            "packed strings must end with a NUL (each string is NUL-terminated)",
        ));
    }
    let count = bytes.iter().filter(|&&b| b == 0).count();
    bytes
        .split(|&b| b == 0)
        .take(count)
        .enumerate()
        .map(|(i, s)| {
            std::str::from_utf8(s).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidUtf8,
                    format!("packed string {i} is not valid UTF-8: {e}"),
                )
            })
        })
        .collect()
}

/// Copy the `len` values at `ptr` (any alignment; NULL only with `len` 0):
/// an array of any length, such as element lengths.
pub(crate) fn u64_slice(ptr: *const u64, len: usize, arg: &str) -> Result<Vec<u64>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    non_null(ptr, arg)?;
    check_len(len.saturating_mul(8))?;
    Ok((0..len)
        // SAFETY: non-NULL and, by the header's rule 2, valid for `len`
        // values for the call; read unaligned so any alignment is accepted.
        .map(|i| unsafe { ptr.add(i).read_unaligned() })
        .collect())
}

/// Copy the `ndim` values at `ptr` (any alignment).
pub(crate) fn u64s(ptr: *const u64, ndim: usize, arg: &str) -> Result<Vec<u64>> {
    if ndim > crate::metadata::MAX_RANK {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            format!(
                "ndim {ndim} exceeds the maximum rank {}",
                crate::metadata::MAX_RANK
            ),
        ));
    }
    // A rank-0 array's per-dimension arrays are empty: NULL is allowed.
    if ndim == 0 {
        return Ok(Vec::new());
    }
    non_null(ptr, arg)?;
    Ok((0..ndim)
        // SAFETY: non-NULL and, by the header's rule 6, valid for `ndim`
        // values; read unaligned so any alignment is accepted.
        .map(|i| unsafe { ptr.add(i).read_unaligned() })
        .collect())
}

/// The dataset's rank checked against `ndim`, then the `ndim` values at `ptr`.
pub(crate) fn dims_of(ds: &Dataset, ndim: usize, ptr: *const u64, arg: &str) -> Result<Vec<u64>> {
    check_ndim(ds, ndim)?;
    u64s(ptr, ndim, arg)
}

/// Store `values` in the `ndim`-long array `out`, after checking `ndim`.
pub(crate) fn store_u64s(out: *mut u64, ndim: usize, values: &[u64], arg: &str) -> Result<()> {
    if ndim != values.len() {
        return Err(Error::new(
            ErrorKind::ShapeMismatch,
            format!(
                "ndim is {ndim} but the dataset has {} dimensions",
                values.len()
            ),
        ));
    }
    if ndim > 0 {
        non_null(out, arg)?;
    }
    write_u64s(out, values);
    Ok(())
}

/// Store `values` in `out` unless it is NULL (optional per-dimension outputs).
pub(crate) fn write_u64s(out: *mut u64, values: &[u64]) {
    if out.is_null() {
        return;
    }
    for (i, &v) in values.iter().enumerate() {
        // SAFETY: non-NULL and valid for the dataset's rank, which the
        // caller passed as `ndim` and was checked against `values.len()`.
        unsafe { out.add(i).write_unaligned(v) };
    }
}

fn check_len(len: usize) -> Result<()> {
    if len > isize::MAX as usize {
        return Err(Error::new(
            ErrorKind::BufferSize,
            format!("buffer length {len} exceeds the address space"),
        ));
    }
    Ok(())
}

/// The caller's input data buffer (`NULL` only with length 0).
pub(crate) fn data_in<'a>(buf: *const c_void, len: usize, arg: &str) -> Result<&'a [u8]> {
    check_len(len)?;
    if len == 0 {
        return Ok(&[]);
    }
    non_null(buf, arg)?;
    // SAFETY: non-NULL, valid for `len` bytes for the duration of the call
    // (rule 2 of the header), `len <= isize::MAX`, and u8 needs no alignment.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) })
}

/// The caller's output data buffer (`NULL` only with length 0).
pub(crate) fn data_out<'a>(buf: *mut c_void, len: usize, arg: &str) -> Result<&'a mut [u8]> {
    check_len(len)?;
    if len == 0 {
        return Ok(&mut []);
    }
    non_null(buf, arg)?;
    // SAFETY: as in `data_in`; the caller lends the buffer to this call
    // exclusively.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) })
}

/// The type with code `code`, or `N5_ERR_INVALID_ARGUMENT`: codes 17–21
/// need a length, fields or a unit that only a metadata document gives.
pub(crate) fn dtype(code: i32) -> Result<DataType> {
    DataType::from_code(code).ok_or_else(|| {
        if DataType::is_code(code) {
            Error::invalid_argument(format!(
                "{} ({code}) needs a length, fields or a unit: use n5_dataset_create_json",
                DataType::NAMES[code as usize - 1]
            ))
        } else {
            Error::invalid_argument(format!(
                "{code} is not a dtype code (N5_DTYPE_UINT8 = 1 .. N5_DTYPE_TIMEDELTA64 = 21)"
            ))
        }
    })
}

/// Check that a buffer of dtype `code` fits the dataset's type and that the
/// type has a binary layout (`Dataset::check_layout`).
pub(crate) fn check_numeric_buf_dtype(ds: &Dataset, code: i32) -> Result<()> {
    check_buf_dtype(ds, code)?;
    ds.check_layout(&ds.attributes())
}

/// Check that a buffer of dtype `code` fits the dataset's type: the codes
/// are equal (the dataset's own parameters, such as a fixed length or
/// struct fields, come with it).
pub(crate) fn check_buf_dtype(ds: &Dataset, code: i32) -> Result<()> {
    if !DataType::is_code(code) {
        return Err(Error::invalid_argument(format!(
            "{code} is not a dtype code (N5_DTYPE_UINT8 = 1 .. N5_DTYPE_TIMEDELTA64 = 21)"
        )));
    }
    let actual = ds.data_type();
    if code != actual.code() {
        return Err(Error::new(
            ErrorKind::DtypeMismatch,
            format!(
                "the buffer holds {} but dataset '{}' holds {actual}",
                DataType::NAMES[code as usize - 1],
                crate::path::display(ds.path())
            ),
        ));
    }
    Ok(())
}
