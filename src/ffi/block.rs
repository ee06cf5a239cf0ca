//! C API: single blocks by grid position: numeric blocks (mode 0),
//! varlength blocks (mode 1), `string` and `object` blocks, existence,
//! headers, deletion and listing.
//!
//! Grid positions are in block units, `uint64_t[ndim]` in N5 order. Data
//! buffers hold elements in native byte order, dimension 0 fastest.

use std::ffi::{c_char, c_void};

use serde_json::Value;

use super::boundary;
use super::convert::{self, store, write_bytes, write_text, write_u64s};
use super::dataset::dataset;
use super::n5_dataset;
use super::n5_dtype;
use super::n5_status;
use crate::error::ErrorKind;

/// The nominal shape of the block at `grid_pos` in `out_shape[ndim]`: the
/// block size, clipped at the dataset's end (end blocks are smaller).
/// `N5_ERR_OUT_OF_BOUNDS` when `grid_pos` is outside the grid.
#[no_mangle]
pub extern "C" fn n5_block_shape(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    out_shape: *mut u64,
) -> n5_status {
    boundary::status("n5_block_shape", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        convert::non_null(out_shape, "out_shape")?;
        let shape = d.block_shape(&pos)?;
        write_u64s(out_shape, &shape);
        Ok(())
    })
}

/// Whether the block at `grid_pos` is stored: `*out_exists` is 1 or 0.
#[no_mangle]
pub extern "C" fn n5_block_exists(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    out_exists: *mut i32,
) -> n5_status {
    boundary::status("n5_block_exists", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        convert::non_null(out_exists, "out_exists")?;
        let e = d.block_exists(&pos)?;
        store(out_exists, e as i32);
        Ok(())
    })
}

/// Read the numeric block at `grid_pos` into `buf`, which holds the block's
/// nominal shape (`n5_block_shape`): `buf_len` must be exactly
/// `prod(shape) * n5_dtype_size(buf_dtype)` (`N5_ERR_BUFFER_SIZE`), and
/// `buf_dtype` must be the dataset's dtype (`N5_ERR_DTYPE_MISMATCH`).
///
/// `*out_shape` receives the nominal shape and `*out_found` 1, or 0 when
/// the block is not stored (the buffer is then zero-filled); both may be
/// NULL. A stored block larger than nominal but within the block size (end
/// blocks padded by tensorstore and zarr) is clipped; a smaller one
/// (written before the dataset grew) is zero-extended. On failure the
/// buffer's contents are unspecified.
#[no_mangle]
pub extern "C" fn n5_block_read(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    buf_dtype: n5_dtype,
    buf: *mut c_void,
    buf_len: usize,
    out_shape: *mut u64,
    out_found: *mut i32,
) -> n5_status {
    boundary::status("n5_block_read", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        convert::check_numeric_buf_dtype(d, buf_dtype)?;
        let out = convert::data_out(buf, buf_len, "buf")?;
        let shape = d.block_shape(&pos)?;
        let found = d.read_block_into(&pos, out)?;
        write_u64s(out_shape, &shape);
        store(out_found, found as i32);
        Ok(())
    })
}

/// Write the numeric block at `grid_pos` with `shape[ndim]` elements from
/// `buf` (`buf_len` exactly `prod(shape) * n5_dtype_size(buf_dtype)`).
/// Normal writers pass `n5_block_shape`; any shape with every extent from 1
/// to the block size is stored as given. The block file is replaced
/// atomically (written to a temporary file, then renamed).
#[no_mangle]
pub extern "C" fn n5_block_write(
    d: *mut n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    shape: *const u64,
    buf_dtype: n5_dtype,
    buf: *const c_void,
    buf_len: usize,
) -> n5_status {
    boundary::status("n5_block_write", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_numeric_buf_dtype(d, buf_dtype)?;
        let data = convert::data_in(buf, buf_len, "buf")?;
        d.write_block(&pos, &shape, data)
    })
}

/// Delete the block at `grid_pos`; a block that is not stored is not an
/// error. Reads of a deleted block give zeros.
#[no_mangle]
pub extern "C" fn n5_block_delete(
    d: *mut n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
) -> n5_status {
    boundary::status("n5_block_delete", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        d.delete_block(&pos).map(|_| ())
    })
}

/// The header of the block stored at `grid_pos`, without decompressing it:
/// `*out_mode` (`N5_BLOCK_MODE_*`), `out_shape[ndim]` (the shape written in
/// the header; zeros for an object block), `*out_num_elements` (elements,
/// or bytes for string and object blocks) and `*out_found` (0 when the
/// block is not stored; the other outputs are then untouched). Every output
/// may be NULL.
#[no_mangle]
pub extern "C" fn n5_block_info(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    out_mode: *mut i32,
    out_shape: *mut u64,
    out_num_elements: *mut u64,
    out_found: *mut i32,
) -> n5_status {
    boundary::status("n5_block_info", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        let Some(header) = d.block_header(&pos)? else {
            store(out_found, 0);
            return Ok(());
        };
        let mut shape: Vec<u64> = header.size.iter().map(|&s| s as u64).collect();
        shape.resize(ndim, 0);
        store(out_mode, i32::from(header.mode.code()));
        write_u64s(out_shape, &shape);
        store(out_num_elements, header.num_elements);
        store(out_found, 1);
        Ok(())
    })
}

/// Read the numeric block at `grid_pos` as stored, whatever its element
/// count (varlength blocks, mode 1, hold a number of elements unrelated to
/// their shape; mode 0 blocks work too).
///
/// `buf` has a capacity of `buf_cap` bytes. Size query: `buf == NULL` with
/// `buf_cap == 0` stores only `*out_num_elements` (required then). A
/// capacity below `*out_num_elements * n5_dtype_size(buf_dtype)` is
/// `N5_ERR_BUFFER_TOO_SMALL` with `*out_num_elements` set. `*out_shape`
/// receives the header's shape and `*out_found` 1; a block that is not
/// stored gives `*out_found = 0`, 0 elements and the nominal shape.
#[no_mangle]
pub extern "C" fn n5_block_read_varlength(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    buf_dtype: n5_dtype,
    buf: *mut c_void,
    buf_cap: usize,
    out_num_elements: *mut u64,
    out_shape: *mut u64,
    out_found: *mut i32,
) -> n5_status {
    boundary::status("n5_block_read_varlength", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        convert::check_numeric_buf_dtype(d, buf_dtype)?;
        if buf.is_null() && buf_cap == 0 {
            convert::non_null(out_num_elements, "out_num_elements")?;
        }
        let elem = d.data_type().size();
        let (data, shape, found) = match d.read_block(&pos)? {
            Some(block) => {
                let shape = block.header.size.iter().map(|&s| s as u64).collect();
                (block.data, shape, true)
            }
            None => (Vec::new(), d.block_shape(&pos)?, false),
        };
        let mut len = 0usize;
        let result = write_bytes(&data, buf, buf_cap, &mut len);
        store(out_num_elements, (len / elem) as u64);
        result?;
        write_u64s(out_shape, &shape);
        store(out_found, found as i32);
        Ok(())
    })
}

/// Write a varlength block at `grid_pos`: a header `shape[ndim]` (each
/// extent from 1 to the block size) with the `buf_len / n5_dtype_size`
/// elements of `buf`, any number (`buf_len` must be a whole number of
/// elements). When that number equals `prod(shape)` the block is written in
/// mode 0, as Java does.
#[no_mangle]
pub extern "C" fn n5_block_write_varlength(
    d: *mut n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    shape: *const u64,
    buf_dtype: n5_dtype,
    buf: *const c_void,
    buf_len: usize,
) -> n5_status {
    boundary::status("n5_block_write_varlength", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        convert::check_numeric_buf_dtype(d, buf_dtype)?;
        let data = convert::data_in(buf, buf_len, "buf")?;
        d.write_varlength_block(&pos, &shape, data)
    })
}

/// Read the `string` block at `grid_pos` (a dataset of dtype
/// `N5_DTYPE_STRING`; in Zarr also `N5_DTYPE_FIXED_UTF32`, a chunk's
/// nominal block in N5 order) into `buf` as packed strings: each string's
/// UTF-8 bytes followed by a NUL, one after the other (`"a\0bc\0"`). A Zarr
/// chunk that is not stored gives `*out_found = 0` and the fill value's
/// strings.
///
/// `*out_len` receives the packed length in bytes, NULs included, and
/// `*out_count` the number of strings. Size query: `buf == NULL` with
/// `buf_cap == 0` stores only those (`out_len` required then); a capacity
/// below `*out_len` is `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set.
/// `*out_shape` receives the header's shape and `*out_found` 1; a block
/// that is not stored gives `*out_found = 0`, no strings and the nominal
/// shape. `out_len` (with a buffer), `out_count`, `out_shape` and
/// `out_found` may be NULL.
#[no_mangle]
pub extern "C" fn n5_block_read_strings(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
    out_count: *mut usize,
    out_shape: *mut u64,
    out_found: *mut i32,
) -> n5_status {
    boundary::status("n5_block_read_strings", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let (shape, strings, found) = d.read_block_strings(&pos)?;
        let mut packed = Vec::new();
        for s in &strings {
            packed.extend_from_slice(s.as_bytes());
            packed.push(0);
        }
        let count = strings.len();
        write_bytes(&packed, buf.cast(), buf_cap, out_len)?;
        store(out_count, count);
        write_u64s(out_shape, &shape);
        store(out_found, found as i32);
        Ok(())
    })
}

/// Write the `string` block at `grid_pos` with header `shape[ndim]` from
/// packed strings: `packed_len` bytes holding each string's UTF-8 bytes
/// followed by a NUL (the last byte must be a NUL; `packed_len == 0` writes
/// no strings). Stored in mode 1, as Java does. In Zarr (`N5_DTYPE_STRING`
/// and `N5_DTYPE_FIXED_UTF32` arrays) `shape` must be the nominal block
/// shape and the strings fill it in N5 order.
#[no_mangle]
pub extern "C" fn n5_block_write_strings(
    d: *mut n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    shape: *const u64,
    packed: *const c_char,
    packed_len: usize,
) -> n5_status {
    boundary::status("n5_block_write_strings", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        let shape = convert::u64s(shape, ndim, "shape")?;
        let bytes = convert::data_in(packed.cast(), packed_len, "packed")?;
        let strings = convert::packed_strings(bytes, ErrorKind::InvalidArgument)?;
        d.write_block_strings(&pos, &shape, &strings)
    })
}

/// Read the `object` block at `grid_pos` (a dataset of dtype
/// `N5_DTYPE_OBJECT`): its opaque bytes into `buf`, their number into
/// `*out_len`. Size query: `buf == NULL` with `buf_cap == 0` stores only
/// `*out_len`; a smaller capacity is `N5_ERR_BUFFER_TOO_SMALL` with
/// `*out_len` set. A block that is not stored gives `*out_found = 0` and
/// length 0 (`out_found` may be NULL).
#[no_mangle]
pub extern "C" fn n5_block_read_object(
    d: *const n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    buf: *mut c_void,
    buf_cap: usize,
    out_len: *mut usize,
    out_found: *mut i32,
) -> n5_status {
    boundary::status("n5_block_read_object", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let (bytes, found) = match d.read_object_block(&pos)? {
            Some(bytes) => (bytes, true),
            None => (Vec::new(), false),
        };
        write_bytes(&bytes, buf, buf_cap, out_len)?;
        store(out_found, found as i32);
        Ok(())
    })
}

/// Write the `object` block at `grid_pos`: the `buf_len` opaque bytes of
/// `buf` in a mode-2 block.
#[no_mangle]
pub extern "C" fn n5_block_write_object(
    d: *mut n5_dataset,
    ndim: usize,
    grid_pos: *const u64,
    buf: *const c_void,
    buf_len: usize,
) -> n5_status {
    boundary::status("n5_block_write_object", || {
        let d = dataset(d)?;
        let pos = convert::dims_of(d, ndim, grid_pos, "grid_pos")?;
        let data = convert::data_in(buf, buf_len, "buf")?;
        d.write_object_block(&pos, data)
    })
}

/// The grid positions of every stored block as a JSON array of arrays
/// (`[[0,0,0],[1,0,0]]`), sorted with dimension 0 first; blocks left
/// outside a shrunken extent are included. Text output convention:
/// `buf == NULL` with `buf_cap == 0` stores only the length (without NUL) in
/// `*out_len`; a smaller buffer gives `N5_ERR_BUFFER_TOO_SMALL`.
#[no_mangle]
pub extern "C" fn n5_block_list(
    d: *const n5_dataset,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_block_list", || {
        let d = dataset(d)?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let blocks = d.list_blocks()?;
        let text = serde_json::to_string(&Value::from(blocks)).unwrap_or_default();
        write_text(&text, buf, buf_cap, out_len)
    })
}
