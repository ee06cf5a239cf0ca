//! C API: reading and writing regions (boxes in element units that may
//! span many blocks).
//!
//! `offset` and `shape` are `uint64_t[ndim]` in N5 order; the buffer is
//! contiguous with dimension 0 fastest (column-major), elements in native
//! byte order.

use std::ffi::c_void;

use super::boundary;
use super::convert;
use super::dataset::dataset;
use super::{n5_dataset, n5_dtype, n5_status};

/// Read the region at `offset[ndim]` with `shape[ndim]` into `buf`
/// (`buf_len` exactly `prod(shape) * n5_dtype_size(buf_dtype)`; `buf_dtype`
/// the dataset's dtype). Blocks that are not stored read as zeros. A region
/// reaching past the dataset's dimensions is `N5_ERR_OUT_OF_BOUNDS`, naming
/// the dimension. On failure the buffer's contents are unspecified.
#[no_mangle]
pub extern "C" fn n5_region_read(
    d: *const n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    buf_dtype: n5_dtype,
    buf: *mut c_void,
    buf_len: usize,
) -> n5_status {
    boundary::status("n5_region_read", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_numeric_buf_dtype(d, buf_dtype)?;
        let out = convert::data_out(buf, buf_len, "buf")?;
        d.read_region(&offset, &shape, out)
    })
}

/// Write the region at `offset[ndim]` with `shape[ndim]` from `buf`
/// (`buf_len` exactly `prod(shape) * n5_dtype_size(buf_dtype)`). Blocks the
/// region covers only in part are read, updated and written back; every
/// block file is replaced atomically. Overlapping concurrent region writes
/// that touch the same block may lose one of the updates.
#[no_mangle]
pub extern "C" fn n5_region_write(
    d: *mut n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    buf_dtype: n5_dtype,
    buf: *const c_void,
    buf_len: usize,
) -> n5_status {
    boundary::status("n5_region_write", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_numeric_buf_dtype(d, buf_dtype)?;
        let data = convert::data_in(buf, buf_len, "buf")?;
        d.write_region(&offset, &shape, data)
    })
}

/// The elements of the region at `offset[ndim]` with `shape[ndim]` as one
/// flat JSON array in N5 order (dimension 0 fastest), on any dataset:
/// integers exactly, floats as the shortest decimal that reads back to the
/// same value (`1.0`, `1e-07`), NaN and infinities as `"NaN"`,
/// `"Infinity"`, `"-Infinity"`, bool as `true`/`false`, complex numbers as
/// `[re, im]`, fixed strings without their NUL padding, bytes as base64,
/// structs as objects with their fields in order, datetimes as the stored
/// integers; hdmf-zarr reference fields as `{"source", "path"}` objects
/// (`null` when empty). Text output convention: `buf == NULL` with
/// `buf_cap == 0` stores only the length (without NUL) in `*out_len`; a
/// smaller buffer gives `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set.
#[no_mangle]
pub extern "C" fn n5_region_read_json(
    d: *const n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    buf: *mut std::ffi::c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_region_read_json", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let text = d.read_region_json(&offset, &shape)?;
        convert::write_text(&text, buf, buf_cap, out_len)
    })
}

/// Read the strings of the region at `offset[ndim]` with `shape[ndim]` of an
/// `N5_DTYPE_STRING` (Zarr variable-length) or `N5_DTYPE_FIXED_UTF32`
/// dataset into `buf` packed as `n5_block_read_strings` packs them: each
/// string's UTF-8 bytes followed by a NUL, exactly `prod(shape)` of them in
/// N5 order (fixed strings without their NUL padding). `*out_len` receives
/// the packed length, NULs included. Size query: `buf == NULL` with
/// `buf_cap == 0` stores only `*out_len`; a capacity below it is
/// `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set. A string holding U+0000
/// is `N5_ERR_UNSUPPORTED` naming it (use `n5_region_read_bytes` or
/// `n5_region_read_json`).
#[no_mangle]
pub extern "C" fn n5_region_read_strings(
    d: *const n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    buf: *mut std::ffi::c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_region_read_strings", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let strings = d.read_region_strings(&offset, &shape)?;
        let mut packed = Vec::with_capacity(strings.iter().map(|s| s.len() + 1).sum());
        for (i, s) in strings.iter().enumerate() {
            if s.as_bytes().contains(&0) {
                return Err(crate::Error::new(
                    crate::ErrorKind::Unsupported,
                    format!("element {i} of the region holds U+0000, which packed strings cannot: use n5_region_read_bytes or n5_region_read_json"),
                ));
            }
            packed.extend_from_slice(s.as_bytes());
            packed.push(0);
        }
        convert::write_bytes(&packed, buf.cast(), buf_cap, out_len)
    })
}

/// Write the strings of the region at `offset[ndim]` with `shape[ndim]` of
/// an `N5_DTYPE_STRING` or `N5_DTYPE_FIXED_UTF32` dataset from `packed`
/// (`packed_len` bytes: each string's UTF-8 bytes followed by a NUL, N5
/// order). A number of strings other than `prod(shape)` is
/// `N5_ERR_BUFFER_SIZE`, invalid UTF-8 `N5_ERR_INVALID_UTF8`, a string
/// longer than a fixed field `N5_ERR_INVALID_ARGUMENT` naming it.
#[no_mangle]
pub extern "C" fn n5_region_write_strings(
    d: *mut n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    packed: *const std::ffi::c_char,
    packed_len: usize,
) -> n5_status {
    boundary::status("n5_region_write_strings", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        let bytes = convert::data_in(packed.cast(), packed_len, "packed")?;
        let strings = convert::packed_strings(bytes, crate::ErrorKind::BufferSize)?;
        d.write_region_strings(&offset, &shape, &strings)
    })
}

/// Read the elements of the region at `offset[ndim]` with `shape[ndim]` of
/// an `N5_DTYPE_OBJECT` (Zarr `vlen-bytes`) or `N5_DTYPE_STRING` dataset:
/// their bytes concatenated in N5 order into `buf`, `*out_len` their total,
/// and each one's length in `out_lengths[lengths_len]` (`lengths_len` must
/// be `prod(shape)`: `N5_ERR_BUFFER_SIZE`). Size query: `buf == NULL` with
/// `buf_cap == 0` stores `*out_len` and fills `out_lengths`; a capacity
/// below `*out_len` is `N5_ERR_BUFFER_TOO_SMALL`. Pickled and JSON
/// (legacy) object arrays are `N5_ERR_UNSUPPORTED`: use
/// `n5_region_read_json`.
#[no_mangle]
pub extern "C" fn n5_region_read_bytes(
    d: *const n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    buf: *mut c_void,
    buf_cap: usize,
    out_len: *mut usize,
    out_lengths: *mut u64,
    lengths_len: usize,
) -> n5_status {
    boundary::status("n5_region_read_bytes", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_out_buf(buf.cast::<u8>(), buf_cap, out_len, "buf")?;
        let n = shape.iter().try_fold(1u64, |a, &s| a.checked_mul(s));
        if n != Some(lengths_len as u64) {
            return Err(crate::Error::new(
                crate::ErrorKind::BufferSize,
                format!("lengths_len is {lengths_len}; the region has {n:?} elements"),
            ));
        }
        if lengths_len > 0 {
            convert::non_null(out_lengths, "out_lengths")?;
        }
        let (data, lengths) = d.read_region_bytes(&offset, &shape)?;
        convert::write_u64s(out_lengths, &lengths);
        convert::write_bytes(&data, buf.cast(), buf_cap, out_len)
    })
}

/// Write the elements of the region at `offset[ndim]` with `shape[ndim]` of
/// an `N5_DTYPE_OBJECT` (`vlen-bytes`) or `N5_DTYPE_STRING` dataset (UTF-8,
/// checked: `N5_ERR_INVALID_UTF8`): `data[data_len]` their bytes
/// concatenated in N5 order, `lengths[lengths_len]` each one's length
/// (`lengths_len` must be `prod(shape)` and the lengths must add up to
/// `data_len`: `N5_ERR_BUFFER_SIZE`).
#[no_mangle]
pub extern "C" fn n5_region_write_bytes(
    d: *mut n5_dataset,
    ndim: usize,
    offset: *const u64,
    shape: *const u64,
    data: *const c_void,
    data_len: usize,
    lengths: *const u64,
    lengths_len: usize,
) -> n5_status {
    boundary::status("n5_region_write_bytes", || {
        let d = dataset(d)?;
        let offset = convert::dims_of(d, ndim, offset, "offset")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        let data = convert::data_in(data, data_len, "data")?;
        let lengths = convert::u64_slice(lengths, lengths_len, "lengths")?;
        d.write_region_bytes(&offset, &shape, data, &lengths)
    })
}
