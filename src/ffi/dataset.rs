//! C API: creating and opening datasets, and their metadata.
//!
//! Per-dimension arrays are `uint64_t[ndim]` in N5 order (index 0 is the
//! first entry of `dimensions` in attributes.json, the fastest-varying
//! axis), preceded by `ndim`, which must equal the dataset's rank.

use std::ffi::c_char;

use serde_json::Value;

use super::boundary;
use super::container::parse_object;
use super::convert::{self, store_required, store_u64s, write_text};
use super::handle::{self, n5_container, n5_dataset};
use super::{n5_dtype, n5_status};
use crate::codec::Compression;
use crate::container::Container;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::metadata::DatasetAttributes;

pub(crate) fn dataset<'a>(d: *const n5_dataset) -> Result<&'a Dataset> {
    handle::borrow(d, "d")
}

fn container<'a>(c: *const n5_container) -> Result<&'a Container> {
    handle::borrow(c, "c")
}

/// Create a dataset at `path` (and its missing parent groups) and return a
/// handle to it.
///
/// `dimensions` and `block_size` hold `ndim` (1 to 64) values in N5 order;
/// every block extent is from 1 to 2^31-1. `dtype` is an `N5_DTYPE_*` code.
/// `compression_json` is N5's compression object, such as
/// `{"type":"gzip","level":6}`, `{"type":"zstd","level":3}`,
/// `{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1}`, or NULL for
/// raw; missing parameters get the defaults Java writes, and the complete
/// object is stored. A parameter the type does not have (a typo) or a value
/// its compressor refuses is `N5_ERR_INVALID_ARGUMENT`; an unknown type is
/// `N5_ERR_UNSUPPORTED`. A dataset already at `path` is `N5_ERR_ALREADY_EXISTS`;
/// user attributes of a group at `path` are kept.
///
/// Returns a new handle to release with `n5_dataset_free`, or NULL with the
/// last error set.
#[no_mangle]
pub extern "C" fn n5_dataset_create(
    c: *mut n5_container,
    path: *const c_char,
    ndim: usize,
    dimensions: *const u64,
    block_size: *const u64,
    dtype: n5_dtype,
    compression_json: *const c_char,
) -> *mut n5_dataset {
    boundary::value("n5_dataset_create", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        if ndim > crate::metadata::MAX_RANK {
            return Err(Error::invalid_argument(format!(
                "ndim is {ndim}; a dataset has at most {} dimensions",
                crate::metadata::MAX_RANK
            )));
        }
        let dims = convert::u64s(dimensions, ndim, "dimensions")?;
        let blocks = convert::u64s(block_size, ndim, "block_size")?;
        let data_type = convert::dtype(dtype)?;
        let compression = match convert::opt_string(compression_json, "compression_json")? {
            Some(text) => Compression::from_user_json(&Value::Object(parse_object(
                text,
                "compression_json",
            )?))?,
            None => Compression::Raw,
        };
        let blocks = blocks
            .iter()
            .map(|&b| {
                u32::try_from(b).map_err(|_| {
                    Error::invalid_argument(format!(
                        "block size {b} is too large (at most 2^31-1 per dimension)"
                    ))
                })
            })
            .collect::<Result<Vec<u32>>>()?;
        let attrs = DatasetAttributes::new(dims, blocks, data_type, compression)?;
        let ds = c.create_dataset(path, attrs)?;
        Ok(handle::into_handle::<n5_dataset>(ds))
    })
}

/// Create a dataset at `path` (and its missing parent groups) from the
/// container format's own metadata document, and return a handle to it:
/// for Zarr v3 a zarr.json array document (`zarr_format` and `node_type`
/// may be left out; any chunk key encoding, fill value, codec chain and
/// sharding the format allows), for Zarr v2 a .zarray document, for N5 and
/// HDF5 the dataset attributes (`dimensions`, `blockSize`, `dataType`,
/// `compression`; raw or gzip in HDF5). Shapes are in the document's own order (C order for
/// Zarr). The document is checked whole before anything is written:
/// `N5_ERR_INVALID_METADATA` or `N5_ERR_UNSUPPORTED` naming what is wrong,
/// `N5_ERR_ALREADY_EXISTS` for a dataset already at `path`; user attributes
/// of a group at `path` are kept.
///
/// Returns a new handle to release with `n5_dataset_free`, or NULL with the
/// last error set.
#[no_mangle]
pub extern "C" fn n5_dataset_create_json(
    c: *mut n5_container,
    path: *const c_char,
    metadata_json: *const c_char,
) -> *mut n5_dataset {
    boundary::value("n5_dataset_create_json", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        let text = convert::string(metadata_json, "metadata_json")?;
        let doc = Value::Object(parse_object(text, "metadata_json")?);
        let ds = c.create_dataset_json(path, &doc)?;
        Ok(handle::into_handle::<n5_dataset>(ds))
    })
}

/// Open the dataset at `path`, reading its metadata once. Returns a new
/// handle to release with `n5_dataset_free`, or NULL with the last error set
/// (`N5_ERR_NOT_FOUND` for a missing path or a plain group,
/// `N5_ERR_INVALID_METADATA` or `N5_ERR_UNSUPPORTED` for metadata that
/// cannot be read).
#[no_mangle]
pub extern "C" fn n5_dataset_open(c: *mut n5_container, path: *const c_char) -> *mut n5_dataset {
    boundary::value("n5_dataset_open", || {
        let c = container(c)?;
        let ds = c.open_dataset(convert::string(path, "path")?)?;
        Ok(handle::into_handle::<n5_dataset>(ds))
    })
}

/// Release a dataset handle. NULL is a no-op. Must not race with any other
/// use of the same handle. Does not change the last error.
#[no_mangle]
pub extern "C" fn n5_dataset_free(d: *mut n5_dataset) {
    boundary::quiet((), || handle::free(d))
}

/// The dataset's rank in `*out_ndim`.
#[no_mangle]
pub extern "C" fn n5_dataset_ndim(d: *const n5_dataset, out_ndim: *mut usize) -> n5_status {
    boundary::status("n5_dataset_ndim", || {
        let d = dataset(d)?;
        store_required(out_ndim, d.attributes().ndim(), "out_ndim")
    })
}

/// The dataset's dimensions (its extent in elements) in `out_dims[ndim]`.
#[no_mangle]
pub extern "C" fn n5_dataset_dimensions(
    d: *const n5_dataset,
    ndim: usize,
    out_dims: *mut u64,
) -> n5_status {
    boundary::status("n5_dataset_dimensions", || {
        let d = dataset(d)?;
        convert::check_ndim(d, ndim)?;
        store_u64s(out_dims, ndim, &d.attributes().dimensions, "out_dims")
    })
}

/// The dataset's block size in `out_block_size[ndim]`.
#[no_mangle]
pub extern "C" fn n5_dataset_block_size(
    d: *const n5_dataset,
    ndim: usize,
    out_block_size: *mut u64,
) -> n5_status {
    boundary::status("n5_dataset_block_size", || {
        let d = dataset(d)?;
        convert::check_ndim(d, ndim)?;
        let b: Vec<u64> = d
            .attributes()
            .block_size
            .iter()
            .map(|&b| b as u64)
            .collect();
        store_u64s(out_block_size, ndim, &b, "out_block_size")
    })
}

/// The dataset's shard shape in `out[ndim]`: for a sharded Zarr v3 array
/// the shape of its shards (the chunk grid's chunks; the outermost level
/// of nested sharding), otherwise the block size.
#[no_mangle]
pub extern "C" fn n5_dataset_shard_shape(
    d: *const n5_dataset,
    ndim: usize,
    out: *mut u64,
) -> n5_status {
    boundary::status("n5_dataset_shard_shape", || {
        let d = dataset(d)?;
        convert::check_ndim(d, ndim)?;
        store_u64s(out, ndim, &d.shard_shape(), "out")
    })
}

/// The dataset's own metadata document as JSON text (same convention as
/// `n5_container_version`): the array's zarr.json or .zarray as stored, an
/// N5 dataset's attributes.json (its user attributes included), or for an
/// HDF5 dataset the N5 members with `hdf5`: `shape`, `maxshape`, `chunks`,
/// `layout` and `filters` as HDF5 states them (C order).
#[no_mangle]
pub extern "C" fn n5_dataset_metadata(
    d: *const n5_dataset,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_dataset_metadata", || {
        let d = dataset(d)?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let text = d.metadata()?.to_string();
        write_text(&text, buf, buf_cap, out_len)
    })
}

/// The number of blocks along each dimension (`ceil(dimensions /
/// block_size)`) in `out_grid_shape[ndim]`.
#[no_mangle]
pub extern "C" fn n5_dataset_grid_shape(
    d: *const n5_dataset,
    ndim: usize,
    out_grid_shape: *mut u64,
) -> n5_status {
    boundary::status("n5_dataset_grid_shape", || {
        let d = dataset(d)?;
        convert::check_ndim(d, ndim)?;
        store_u64s(
            out_grid_shape,
            ndim,
            &d.attributes().grid_shape(),
            "out_grid_shape",
        )
    })
}

/// The dataset's element type (`N5_DTYPE_*`) in `*out_dtype`.
#[no_mangle]
pub extern "C" fn n5_dataset_dtype(d: *const n5_dataset, out_dtype: *mut n5_dtype) -> n5_status {
    boundary::status("n5_dataset_dtype", || {
        let d = dataset(d)?;
        store_required(out_dtype, d.data_type().code(), "out_dtype")
    })
}

/// The dataset's compression as N5's JSON object, complete with its
/// parameters (`{"type":"gzip","level":6,"useZlib":false}`). Text output
/// convention: `buf == NULL` with `buf_cap == 0` stores only the length
/// (without NUL) in `*out_len`; a smaller buffer gives
/// `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set.
#[no_mangle]
pub extern "C" fn n5_dataset_compression(
    d: *const n5_dataset,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_dataset_compression", || {
        let d = dataset(d)?;
        let json = d.attributes().compression.to_json();
        let text = serde_json::to_string(&json).unwrap_or_default();
        write_text(&text, buf, buf_cap, out_len)
    })
}

/// The dataset's path in its container (normalised, without a leading
/// `/`; `""` for a dataset at the root), as text (same convention as
/// `n5_dataset_compression`).
#[no_mangle]
pub extern "C" fn n5_dataset_path(
    d: *const n5_dataset,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_dataset_path", || {
        let d = dataset(d)?;
        write_text(d.path(), buf, buf_cap, out_len)
    })
}

/// Change the dataset's dimensions to `dims[ndim]` (the rank stays the
/// same). Stored blocks are kept, also those outside a smaller extent.
/// Handles to the same dataset opened elsewhere keep their cached
/// dimensions until reopened.
#[no_mangle]
pub extern "C" fn n5_dataset_set_dimensions(
    d: *mut n5_dataset,
    ndim: usize,
    dims: *const u64,
) -> n5_status {
    boundary::status("n5_dataset_set_dimensions", || {
        let d = dataset(d)?;
        let dims = convert::dims_of(d, ndim, dims, "dims")?;
        d.set_dimensions(&dims)
    })
}

/// Bytes per element of the dataset's binary layout in `*out_size`: the
/// element size of region and block buffers (`buf_len` is `prod(shape)`
/// times it). 0 for elements of variable length (`N5_DTYPE_STRING` and
/// `N5_DTYPE_OBJECT` datasets, structs with such fields), which are read
/// with `n5_region_read_strings`, `n5_region_read_bytes` or
/// `n5_region_read_json`.
#[no_mangle]
pub extern "C" fn n5_dataset_element_size(d: *const n5_dataset, out_size: *mut usize) -> n5_status {
    boundary::status("n5_dataset_element_size", || {
        let d = dataset(d)?;
        store_required(out_size, d.element_size(), "out_size")
    })
}

/// The full description of the dataset's element type as JSON, on every
/// dataset: `{"name": n5_dtype_name, "size": element size, "byte_order":
/// "little"|"big"|"none", "stored": the Zarr v3 data_type, the Zarr v2
/// dtype or the N5 dataType}`, plus `length_bytes` (fixed strings and
/// bytes), `null_terminated` (fixed bytes), `unit` and `scale_factor`
/// (datetimes), `object_codec` (`vlen-utf8`, `vlen-bytes`, `pickle`,
/// `json2`), `fields` (`[{"name", "offset", "type"}]`, structs, which have
/// no `byte_order` of their own), `reference: true` (hdmf-zarr reference
/// datasets) and `reference_fields` (hdmf-zarr compounds). Text output
/// convention as `n5_dataset_compression`.
#[no_mangle]
pub extern "C" fn n5_dataset_dtype_json(
    d: *const n5_dataset,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_dataset_dtype_json", || {
        let d = dataset(d)?;
        write_text(&d.dtype_json()?.to_string(), buf, buf_cap, out_len)
    })
}
