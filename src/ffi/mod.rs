//! The C API: `extern "C"` functions over the Rust core, and nothing else.
//!
//! This layer only converts (C pointers and integer codes to Rust values and
//! back) and delegates to [`crate::Container`] and [`crate::Dataset`]. Every
//! exported function runs inside the panic boundary of `boundary`, which
//! clears the thread's last error on entry, records it on failure and turns a
//! panic into `N5_ERR_PANIC`. `include/n5.h` is generated from these files
//! by cbindgen (see `tests/header.rs`), so the doc comments here are the
//! header's documentation.
//!
//! Modules, in the header's order: [`status`] (versions, errors, dtypes),
//! [`container`] (containers, groups, attributes), [`links`] (hdmf-zarr
//! links and object references), [`dataset`] (dataset metadata),
//! [`block`] (blocks of every kind) and [`region`] (regions).
//! `boundary`, `convert` and `handle` hold the machinery they share.

// The exported functions take raw pointers from C and are declared safe
// `extern "C" fn`s, as C callers see them: each pointer is checked for NULL
// and its validity for the sizes given is the caller's side of the contract
// stated in the header's preamble. Every dereference sits in a helper of
// `convert` or `handle` with its own safety comment.
#![allow(clippy::not_unsafe_ptr_arg_deref)]
// The C API's names are C names.
#![allow(non_camel_case_types)]

pub mod block;
pub(crate) mod boundary;
pub mod container;
pub(crate) mod convert;
pub mod dataset;
pub(crate) mod handle;
pub mod links;
pub mod pyramid;
pub mod region;
pub mod status;

pub use handle::{n5_container, n5_dataset};

/// A status code returned by most functions: `N5_OK` (0) or one of the
/// non-negative `N5_ERR_*` codes. Numbers are never reused.
pub type n5_status = i32;

/// An element type code (`N5_DTYPE_*`). Zero is invalid, so zero-filled
/// memory is never a valid type.
pub type n5_dtype = i32;

/// How a container is opened (`N5_MODE_*`).
pub type n5_mode = i32;

/// Success.
pub const N5_OK: n5_status = 0;
/// An argument is out of its domain (a path above the root, a zero extent,
/// an unknown dtype or mode code, ...).
pub const N5_ERR_INVALID_ARGUMENT: n5_status = 1;
/// A required pointer argument was NULL.
pub const N5_ERR_NULL_POINTER: n5_status = 2;
/// A string argument was not valid UTF-8.
pub const N5_ERR_INVALID_UTF8: n5_status = 3;
/// The operating system reported an I/O failure.
pub const N5_ERR_IO: n5_status = 4;
/// A container, group, dataset or attribute does not exist.
pub const N5_ERR_NOT_FOUND: n5_status = 5;
/// Something is already there (a dataset at the path given to `n5_dataset_create`).
pub const N5_ERR_ALREADY_EXISTS: n5_status = 6;
/// Stored metadata (attributes.json) cannot describe a valid dataset.
pub const N5_ERR_INVALID_METADATA: n5_status = 7;
/// Valid but unsupported (an unknown compression, a newer major format version).
pub const N5_ERR_UNSUPPORTED: n5_status = 8;
/// The buffer's dtype differs from the dataset's.
pub const N5_ERR_DTYPE_MISMATCH: n5_status = 9;
/// `ndim` or a shape does not fit the dataset.
pub const N5_ERR_SHAPE_MISMATCH: n5_status = 10;
/// A region or grid position lies outside the dataset.
pub const N5_ERR_OUT_OF_BOUNDS: n5_status = 11;
/// A data buffer's length is not exactly what the shape requires.
pub const N5_ERR_BUFFER_SIZE: n5_status = 12;
/// An output buffer is too small; the required length was stored in `*out_len`.
pub const N5_ERR_BUFFER_TOO_SMALL: n5_status = 13;
/// A block could not be encoded or decoded (corrupt or hostile data).
pub const N5_ERR_CODEC: n5_status = 14;
/// A write through a container opened with `N5_MODE_READ`.
pub const N5_ERR_READ_ONLY: n5_status = 15;
/// JSON text could not be parsed or has the wrong shape.
pub const N5_ERR_JSON: n5_status = 16;
/// A handle that was freed or never valid (detected in debug builds).
pub const N5_ERR_INVALID_HANDLE: n5_status = 17;
/// A network request could not be completed within the retry budget
/// (connection refused or reset, timeout, HTTP 5xx or 429); the message
/// names the URL, the HTTP status and the server's error code.
pub const N5_ERR_NETWORK: n5_status = 18;
/// The server refused the credentials or the operation (HTTP 401, 403 on a
/// signed request or a write, a bad signature or key); the message says
/// which credentials source was used, never the secret.
pub const N5_ERR_ACCESS_DENIED: n5_status = 19;
/// A link's or reference's target container or path is missing; the
/// message names the link (group and name) or the reference, its `source`
/// and `path`, and which of the two is missing.
pub const N5_ERR_DANGLING_LINK: n5_status = 20;
/// Resolving a path met a link cycle or more than 40 links; the message
/// names the links met.
pub const N5_ERR_LINK_CYCLE: n5_status = 21;
/// A pickled chunk or fill value uses an opcode, global or call outside the
/// data-only subset libn5 reads; nothing was executed.
pub const N5_ERR_UNSAFE_PICKLE: n5_status = 22;
/// `n5_pyramid_build` with `"finalize": true` before every part of the
/// build had finished; nothing was written. The message names the parts
/// missing.
pub const N5_ERR_INCOMPLETE: n5_status = 23;
/// A panic inside the library was caught; the process goes on.
pub const N5_ERR_PANIC: n5_status = 98;
/// A bug in the library.
pub const N5_ERR_INTERNAL: n5_status = 99;

/// Not a type: zero-filled memory is never a valid dtype.
pub const N5_DTYPE_INVALID: n5_dtype = 0;
/// `uint8`
pub const N5_DTYPE_UINT8: n5_dtype = 1;
/// `uint16`
pub const N5_DTYPE_UINT16: n5_dtype = 2;
/// `uint32`
pub const N5_DTYPE_UINT32: n5_dtype = 3;
/// `uint64`
pub const N5_DTYPE_UINT64: n5_dtype = 4;
/// `int8`
pub const N5_DTYPE_INT8: n5_dtype = 5;
/// `int16`
pub const N5_DTYPE_INT16: n5_dtype = 6;
/// `int32`
pub const N5_DTYPE_INT32: n5_dtype = 7;
/// `int64`
pub const N5_DTYPE_INT64: n5_dtype = 8;
/// `float32` (IEEE 754 binary32)
pub const N5_DTYPE_FLOAT32: n5_dtype = 9;
/// `float64` (IEEE 754 binary64)
pub const N5_DTYPE_FLOAT64: n5_dtype = 10;
/// `string`: blocks of NUL-terminated UTF-8 strings (`n5_block_read_strings`).
pub const N5_DTYPE_STRING: n5_dtype = 11;
/// `object`: blocks of opaque bytes (`n5_block_read_object`).
pub const N5_DTYPE_OBJECT: n5_dtype = 12;
/// `bool`: one byte, 0 or 1 (Zarr `|b1`, `bool`).
pub const N5_DTYPE_BOOL: n5_dtype = 13;
/// `float16` (IEEE 754 binary16).
pub const N5_DTYPE_FLOAT16: n5_dtype = 14;
/// `complex64`: float32 real part, then float32 imaginary part.
pub const N5_DTYPE_COMPLEX64: n5_dtype = 15;
/// `complex128`: float64 real part, then float64 imaginary part.
pub const N5_DTYPE_COMPLEX128: n5_dtype = 16;
/// `fixed_utf32`: n UTF-32 code units per element, NUL-padded (Zarr `<U n`,
/// `fixed_length_utf32`); n from `n5_dataset_element_size` / 4.
pub const N5_DTYPE_FIXED_UTF32: n5_dtype = 17;
/// `fixed_bytes`: n bytes per element (Zarr `|S n`, `|V n`,
/// `null_terminated_bytes`, `raw_bytes`).
pub const N5_DTYPE_FIXED_BYTES: n5_dtype = 18;
/// `struct`: named fields packed in declared order, no padding (Zarr
/// structured types); `n5_dataset_dtype_json` gives the fields and offsets.
pub const N5_DTYPE_STRUCT: n5_dtype = 19;
/// `datetime64`: int64 counts of the dataset's unit (NaT = INT64_MIN).
pub const N5_DTYPE_DATETIME64: n5_dtype = 20;
/// `timedelta64`: int64 counts of the dataset's unit.
pub const N5_DTYPE_TIMEDELTA64: n5_dtype = 21;

/// Read only: nothing is ever created, locked or written; every writing
/// function returns `N5_ERR_READ_ONLY`. The root must exist.
pub const N5_MODE_READ: n5_mode = 0;
/// Read and write an existing container (the root must exist).
pub const N5_MODE_READ_WRITE: n5_mode = 1;
/// Read and write, creating the root directory and its attributes.json
/// (`"n5": "4.0.0"`) when missing; an existing container is opened as it is.
pub const N5_MODE_CREATE: n5_mode = 2;

/// Block mode 0: a full block of `prod(shape)` elements.
pub const N5_BLOCK_MODE_DEFAULT: i32 = 0;
/// Block mode 1: a block whose element count differs from `prod(shape)`.
pub const N5_BLOCK_MODE_VARLENGTH: i32 = 1;
/// Block mode 2: an `object` block of opaque bytes, without a shape.
pub const N5_BLOCK_MODE_OBJECT: i32 = 2;

#[cfg(test)]
mod tests;
