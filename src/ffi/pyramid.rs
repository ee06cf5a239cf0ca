//! The C functions of multiscale pyramids (pyramid.md): building one and
//! asking for its plan. They convert and delegate to [`crate::pyramid`].

use std::ffi::c_char;

use super::convert::{self, write_text};
use super::handle::{self, n5_container};
use super::{boundary, n5_status};
use crate::pyramid::build::{build, container_format, plan};
use crate::pyramid::plan::PyramidOptions;

/// Builds the multiscale pyramid of the numeric dataset `src_path` of `src`
/// as the group `dst_path` of `dst` (`src` and `dst` may be the same
/// handle): `s0` (the source copied, converted and re-chunked; kept as it is
/// when `dst_path/s0` is the source itself) and the levels `s1…sN`, each
/// reduced from the stored level before with tensorstore's downsampling
/// semantics, then the metadata of the output format (N5 for neuroglancer,
/// n5-viewer and COSEM; OME-NGFF 0.5 in Zarr v3; OME-NGFF 0.4 in Zarr v2;
/// BigDataViewer with `"format": "bdv"` at an N5 root). Blocks until done;
/// no callback. `options_json` (NULL: every default; unknown keys are an
/// error), lists in N5 order: `{"method": "mean" | "stride" | "median" |
/// "mode" | "min" | "max", "factors": "auto" | [2,2,1] | [[2,2,1],[2,2,2]],
/// "levels": 0 (until the stop rule), "min_size": 64 | [..], "format":
/// "n5" | "zarr2" | "zarr3" | "bdv", "axes": [..], "units": [..] (null:
/// none), "resolution": [..], "translation": [..], "compression": {N5
/// compression JSON}, "block_size": [..], "shard_shape": [..], "threads": 0
/// (dst's), "part": [I, N], "finalize": true}`. A build in parts writes the
/// shards of its columns; the part that completes the set, or a call with
/// `"finalize": true`, writes the levels above them and the metadata.
/// Status: `N5_ERR_JSON` (malformed options), `N5_ERR_INVALID_ARGUMENT`
/// (options that do not fit the source), `N5_ERR_NOT_FOUND` (src_path),
/// `N5_ERR_UNSUPPORTED` (a non-numeric source), `N5_ERR_ALREADY_EXISTS`
/// (dst_path holds something else; nothing written), `N5_ERR_READ_ONLY`,
/// the storage codes, and `N5_ERR_INCOMPLETE` (finalize before every part
/// has finished; nothing written).
#[no_mangle]
pub extern "C" fn n5_pyramid_build(
    src: *const n5_container,
    src_path: *const c_char,
    dst: *mut n5_container,
    dst_path: *const c_char,
    options_json: *const c_char,
) -> n5_status {
    boundary::status("n5_pyramid_build", || {
        let src = handle::borrow(src, "src")?;
        let dst = handle::borrow(dst.cast_const(), "dst")?;
        let src_path = convert::string(src_path, "src_path")?;
        let dst_path = convert::string(dst_path, "dst_path")?;
        let options =
            PyramidOptions::from_json(convert::opt_string(options_json, "options_json")?)?;
        build(src, src_path, dst, dst_path, &options, None).map(|_| ())
    })
}

/// The plan of the pyramid `n5_pyramid_build` would build from `src_path`
/// with `options_json` as JSON text, nothing written: `{"format",
/// "method", "levels": [{"path", "shape", "factors", "relative",
/// "shards"}]}` (`factors` from `s0`, `relative` from the level before,
/// `shards` the level's shard grid positions; for bdv those of one stack).
/// The format defaults to `src`'s container format. Same text convention
/// as `n5_container_version`; the statuses of `n5_pyramid_build`.
#[no_mangle]
pub extern "C" fn n5_pyramid_plan(
    src: *const n5_container,
    src_path: *const c_char,
    options_json: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_pyramid_plan", || {
        let src = handle::borrow(src, "src")?;
        let src_path = convert::string(src_path, "src_path")?;
        let options =
            PyramidOptions::from_json(convert::opt_string(options_json, "options_json")?)?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        // Without a destination, the format asked for, else the source's.
        let format = options.format.map_or(src.format(), container_format);
        let plan = plan(src, src_path, &options, format)?;
        write_text(&plan.to_json().to_string(), buf, buf_cap, out_len)
    })
}
