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
