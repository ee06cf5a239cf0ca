//! C API: containers, the group hierarchy and attributes.
//!
//! Paths are relative to the container root, `/`-separated; a leading `/`
//! is allowed and `""`, `"/"` and `"."` name the root. `..` resolves, but a
//! path that would leave the root is `N5_ERR_INVALID_ARGUMENT`.

use std::ffi::c_char;

use serde_json::{Map, Value};

use super::boundary;
use super::convert::{self, store, store_required, write_text};
use super::handle::{self, n5_container};
use super::{n5_mode, n5_status};
use crate::container::{Container, Mode, Options};
use crate::error::{Error, ErrorKind, Result};

fn container<'a>(c: *const n5_container) -> Result<&'a Container> {
    handle::borrow(c, "c")
}

fn json_text(value: &Value) -> String {
    crate::jsontext::to_string(value).unwrap_or_else(|_| "null".into())
}

/// The children (or, `recursive`, all descendants) of the group at `path`.
fn names(c: &Container, path: &str, recursive: bool) -> Result<Vec<String>> {
    if recursive {
        c.deep_list(path)
    } else {
        c.list(path)
    }
}

/// The body of `n5_list` and `n5_list_recursive`: the names as a JSON array.
fn list_json(
    c: *const n5_container,
    path: *const c_char,
    recursive: bool,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> Result<()> {
    let c = container(c)?;
    let path = convert::string(path, "path")?;
    convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
    let names = names(c, path, recursive)?;
    write_text(&json_text(&Value::from(names)), buf, buf_cap, out_len)
}

fn parse_json(text: &str, arg: &str) -> Result<Value> {
    crate::jsontext::parse(text.as_bytes()).map_err(|e| {
        Error::new(
            ErrorKind::Json,
            format!("argument '{arg}' is not JSON: {e}"),
        )
    })
}

/// Open the N5 container at `root`, a location: a file-system path
/// (`/data/vol.n5`, `file:///data/vol.n5`), `s3://bucket/prefix` (S3 and
/// S3-compatible stores), `gs://bucket/prefix` (Google Cloud Storage), the
/// `https://` forms of both (`https://bucket.s3.REGION.amazonaws.com/prefix`,
/// `https://storage.googleapis.com/bucket/prefix`), or any other `http://`
/// or `https://` URL (read-only). Percent-escapes in URLs are decoded once.
/// A format prefix may stand before it: `n5:`, `zarr:`, `zarr2:`, `zarr3:`,
/// `h5:` or `hdf5:`. A local HDF5 file is a container too (a library built
/// with HDF5 support): chosen by the prefix, an existing file with the HDF5
/// signature, else a name ending in `.h5` or `.hdf5`, or `"format":
/// "hdf5"`; `N5_ERR_UNSUPPORTED` for an HDF5 location on S3, GCS or
/// HTTP(S), or in a library built without HDF5 support;
/// `N5_ERR_INVALID_METADATA` for a file without the signature.
///
/// `mode` is `N5_MODE_READ`, `N5_MODE_READ_WRITE` (the root must exist) or
/// `N5_MODE_CREATE` (creates the root and its attributes.json with
/// `"n5": "4.0.0"` when missing, or the HDF5 file and its missing parent
/// directories; never truncates). `options_json` may be
/// NULL or a JSON object with these keys, all optional; unknown keys are an
/// error:
/// - `"threads"`: threads for decoding and encoding blocks in multi-block
///   work (region reads and writes): the calling thread plus up to N - 1
///   helpers shared by every call on this container, so concurrent callers
///   never oversubscribe the machine (0 or absent: one per core; 1: the
///   calling thread only).
/// - `"write_empty_blocks"`: `true` (default, as Java) stores all-zero
///   blocks like any other; `false` skips them and deletes a stored block
///   that becomes all zeros (missing blocks read as zeros; an HDF5 chunk
///   cannot be freed, and one not allocated stays so).
/// - `"follow_links"`: `true` (default) resolves paths through hdmf-zarr
///   links in Zarr containers (NWB files): a path segment that is no node
///   but a link of its group leads to the link's target, possibly in
///   another container, which is opened read-only with these options and
///   kept on this handle; `false` makes links neither listed nor found
///   (`n5_links_list` and `n5_link_resolve` work either way).
/// - `"format"`: the format of a container that `N5_MODE_CREATE` makes:
///   `"n5"`, `"zarr2"`, `"zarr3"` or `"hdf5"` (a prefix on `root` takes
///   precedence; existing containers keep their own).
/// - `"io_concurrency"`: requests (or file reads) in flight for
///   multi-block work, independent of `threads` (default: 32 for network
///   locations, 4 for the file system).
/// - `"cache_bytes"`: an in-memory cache of blocks shared by every dataset
///   of the container (default 0: none).
/// - `"s3"`: `endpoint`, `region`, `anonymous`, `path_style`,
///   `access_key_id`, `secret_access_key`, `session_token`, `profile`,
///   `checksum` (`"crc32c"`, the default, or `"md5"`: the checksum every
///   upload carries for the server to check).
/// - `"gcs"`: `endpoint`, `anonymous`, `credentials_file`, `token`.
/// - `"http"`: `headers` (an object of header names and values).
/// - `"retry"`: `max_attempts` (default 8), `max_seconds` (60),
///   `request_timeout_seconds` (30).
/// - `"hdf5"`: `default_block_size`, the block size (N5 order) of HDF5
///   datasets that are not chunked, where an entry exists and is above 0,
///   else the whole dimension (default `[64, 64, 64, 1, 1]`).
///
/// Credentials not given in the options come from the environment (S3:
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_PROFILE` with `~/.aws/credentials`; GCS:
/// `GOOGLE_APPLICATION_CREDENTIALS`, `STORAGE_EMULATOR_HOST`), else requests
/// are anonymous. Secrets never appear in an error message.
///
/// Returns a new handle to release with `n5_container_free`, or NULL with
/// the last error set (`N5_ERR_NOT_FOUND` for a missing root or bucket,
/// `N5_ERR_UNSUPPORTED` for a newer major format version,
/// `N5_ERR_READ_ONLY` for a write mode on a plain HTTP(S) location,
/// `N5_ERR_ACCESS_DENIED` for refused credentials, `N5_ERR_NETWORK` when
/// the server cannot be reached within the retry budget, ...).
#[no_mangle]
pub extern "C" fn n5_container_open(
    root: *const c_char,
    mode: n5_mode,
    options_json: *const c_char,
) -> *mut n5_container {
    boundary::value("n5_container_open", || {
        let root = convert::string(root, "root")?;
        let mode = Mode::from_code(mode).ok_or_else(|| {
            Error::invalid_argument(format!(
                "{mode} is not a mode (N5_MODE_READ 0, N5_MODE_READ_WRITE 1, N5_MODE_CREATE 2)"
            ))
        })?;
        let options = match convert::opt_string(options_json, "options_json")? {
            Some(text) => Options::from_json(text)?,
            None => Options::default(),
        };
        if root.is_empty() {
            return Err(Error::invalid_argument("the location is empty"));
        }
        let c = Container::open_with(root, mode, options)?;
        Ok(handle::into_handle::<n5_container>(c))
    })
}

/// Release a container handle. NULL is a no-op. Datasets opened from it
/// stay usable (they keep the container alive). Must not race with any other
/// use of the same handle. Does not change the last error.
#[no_mangle]
pub extern "C" fn n5_container_free(c: *mut n5_container) {
    boundary::quiet((), || handle::free(c))
}

/// The root's `"n5"` format version (such as `"4.0.0"`) as text in `buf`
/// (of an HDF5 file, the root group's string attribute `n5`, never a reason
/// to refuse the file); `""` when the root has none. Text output convention: `buf == NULL` with
/// `buf_cap == 0` stores only the length (without NUL) in `*out_len`; a
/// smaller buffer gives `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set.
#[no_mangle]
pub extern "C" fn n5_container_version(
    c: *const n5_container,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_container_version", || {
        let c = container(c)?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let v = c.version()?.unwrap_or_default();
        write_text(&v, buf, buf_cap, out_len)
    })
}

/// The container's format as text (same convention as
/// `n5_container_version`): `"n5"`, `"zarr2"`, `"zarr3"` or `"hdf5"`, as
/// chosen when it was opened (the location's prefix, an HDF5 file's
/// signature, `"format"` of the options for a new container, the root's
/// documents, one level down, the name's suffix, else N5).
#[no_mangle]
pub extern "C" fn n5_container_format(
    c: *const n5_container,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_container_format", || {
        let c = container(c)?;
        write_text(c.format().name(), buf, buf_cap, out_len)
    })
}

/// The container's location as given to `n5_container_open` (a path or a
/// URL), as text (same convention as `n5_container_version`).
#[no_mangle]
pub extern "C" fn n5_container_root(
    c: *const n5_container,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_container_root", || {
        let c = container(c)?;
        write_text(c.location(), buf, buf_cap, out_len)
    })
}

/// The mode the container was opened in (`N5_MODE_*`) in `*out_mode`.
#[no_mangle]
pub extern "C" fn n5_container_mode(c: *const n5_container, out_mode: *mut n5_mode) -> n5_status {
    boundary::status("n5_container_mode", || {
        let c = container(c)?;
        store_required(out_mode, c.mode().code(), "out_mode")
    })
}

/// The options in effect, as a JSON object such as
/// `{"threads":2,"write_empty_blocks":true,"follow_links":true,"io_concurrency":4,"cache_bytes":0,
/// "retry":{"max_attempts":8,"max_seconds":60.0,"request_timeout_seconds":30.0}}`
/// (never credentials; same text convention as `n5_container_version`).
#[no_mangle]
pub extern "C" fn n5_container_options(
    c: *const n5_container,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_container_options", || {
        let c = container(c)?;
        let o = c.options();
        let mut map = serde_json::Map::new();
        map.insert("threads".into(), o.threads.into());
        map.insert("write_empty_blocks".into(), o.write_empty_blocks.into());
        map.insert("follow_links".into(), o.follow_links.into());
        let remote = c.store().capabilities().remote;
        map.extend(o.storage.to_json_without_secrets(remote));
        let text = json_text(&Value::Object(map));
        write_text(&text, buf, buf_cap, out_len)
    })
}

/// Whether a group or dataset exists at `path`: `*out_exists` is 1 or 0.
/// Through a link (Zarr containers, `"follow_links"`), whether its target
/// exists: 0 for a dangling link; a link cycle is `N5_ERR_LINK_CYCLE`.
#[no_mangle]
pub extern "C" fn n5_exists(
    c: *const n5_container,
    path: *const c_char,
    out_exists: *mut i32,
) -> n5_status {
    boundary::status("n5_exists", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        convert::non_null(out_exists, "out_exists")?;
        let e = c.exists(path)?;
        store(out_exists, e as i32);
        Ok(())
    })
}

/// Whether a dataset exists at `path`: `*out_is_dataset` is 1 or 0 (0 for a
/// plain group, a missing path and a dangling link; through a link, for
/// its target).
#[no_mangle]
pub extern "C" fn n5_dataset_exists(
    c: *const n5_container,
    path: *const c_char,
    out_is_dataset: *mut i32,
) -> n5_status {
    boundary::status("n5_dataset_exists", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        convert::non_null(out_is_dataset, "out_is_dataset")?;
        let e = c.dataset_exists(path)?;
        store(out_is_dataset, e as i32);
        Ok(())
    })
}

/// Create the group at `path` and its missing parents; existing groups are
/// left as they are. Through a link of this container the group is created
/// below the link's target; a link at `path` is `N5_ERR_ALREADY_EXISTS`,
/// and a path through an external link `N5_ERR_READ_ONLY`.
#[no_mangle]
pub extern "C" fn n5_group_create(c: *mut n5_container, path: *const c_char) -> n5_status {
    boundary::status("n5_group_create", || {
        let c = container(c)?;
        c.create_group(convert::string(path, "path")?)
    })
}

/// The child groups and datasets of the group at `path` as a JSON array of
/// names, sorted (`["raw","seg"]`); `[]` on a dataset (block directories
/// are not children). In Zarr containers the names of the group's links
/// are members too, sorted with the others (unless `"follow_links"` is
/// false), and `path` may lead through links. `N5_ERR_NOT_FOUND` when
/// `path` does not exist, `N5_ERR_DANGLING_LINK` when it leads through a
/// dangling link. Same text convention as `n5_container_version`.
#[no_mangle]
pub extern "C" fn n5_list(
    c: *const n5_container,
    path: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_list", || {
        list_json(c, path, false, buf, buf_cap, out_len)
    })
}

/// Every group and dataset below `path`, as a JSON array of paths relative
/// to it (`["raw","raw/s0","seg"]`), depth first in sorted order, not
/// descending into datasets. Links are listed as entries and not descended
/// into. Same text convention as `n5_container_version`.
#[no_mangle]
pub extern "C" fn n5_list_recursive(
    c: *const n5_container,
    path: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_list_recursive", || {
        list_json(c, path, true, buf, buf_cap, out_len)
    })
}

/// The names that `n5_list` (when `recursive` is 0) or `n5_list_recursive`
/// (when it is 1) return, packed for callers without a JSON parser: each name's UTF-8
/// bytes followed by a NUL, one after the other (`"raw\0seg\0"`), as in
/// `n5_block_read_strings`. `*out_len` receives the packed length in bytes,
/// NULs included, and `*out_count` the number of names (may be NULL).
/// Size query: `buf == NULL` with `buf_cap == 0` stores only those; a
/// capacity below `*out_len` is `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set.
#[no_mangle]
pub extern "C" fn n5_list_names(
    c: *const n5_container,
    path: *const c_char,
    recursive: i32,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
    out_count: *mut usize,
) -> n5_status {
    boundary::status("n5_list_names", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let names = match recursive {
            0 | 1 => names(c, path, recursive == 1)?,
            other => {
                return Err(Error::invalid_argument(format!(
                    "recursive is {other}; it must be 0 or 1"
                )))
            }
        };
        let mut packed = Vec::new();
        for name in &names {
            packed.extend_from_slice(name.as_bytes());
            packed.push(0);
        }
        convert::write_bytes(&packed, buf.cast(), buf_cap, out_len)?;
        store(out_count, names.len());
        Ok(())
    })
}

/// Remove the group or dataset at `path` with everything below it. A path
/// that does not exist is not an error; the root is `N5_ERR_INVALID_ARGUMENT`.
/// When the last segment of `path` is a link, the link entry is removed,
/// never its target; a path through an external link is `N5_ERR_READ_ONLY`.
#[no_mangle]
pub extern "C" fn n5_remove(c: *mut n5_container, path: *const c_char) -> n5_status {
    boundary::status("n5_remove", || {
        let c = container(c)?;
        c.remove(convert::string(path, "path")?).map(|_| ())
    })
}

/// Delete the temporary files (`.n5tmp.*`) that writers killed in the middle
/// of a write left anywhere in the container, if they were last modified at
/// least `older_than_seconds` ago. Readers ignore them; this reclaims their
/// space. Give an age longer than any write takes (3600, say) while other
/// processes may be writing, since a write in progress has a temporary too.
/// Symlinks are neither followed nor removed, so datasets reached through a
/// symlink are not cleaned. `*out_removed` and
/// `*out_bytes` (each may be NULL) receive the number of files removed and
/// their total size in bytes. `N5_ERR_READ_ONLY` through a read-only handle.
#[no_mangle]
pub extern "C" fn n5_container_remove_stale_temporaries(
    c: *mut n5_container,
    older_than_seconds: u64,
    out_removed: *mut u64,
    out_bytes: *mut u64,
) -> n5_status {
    boundary::status("n5_container_remove_stale_temporaries", || {
        let c = container(c)?;
        let (files, bytes) =
            c.remove_stale_temporaries(std::time::Duration::from_secs(older_than_seconds))?;
        store(out_removed, files);
        store(out_bytes, bytes);
        Ok(())
    })
}

/// The whole attributes document of the group or dataset at `path` as JSON
/// text (on a dataset, with its `dimensions`, `blockSize`, `dataType` and
/// `compression`); `{}` for a group without attributes.json;
/// `N5_ERR_NOT_FOUND` when `path` does not exist. Same text convention as
/// `n5_container_version`.
#[no_mangle]
pub extern "C" fn n5_attributes_get(
    c: *const n5_container,
    path: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_attributes_get", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let doc = c.attributes(path)?;
        write_text(&json_text(&doc), buf, buf_cap, out_len)
    })
}

/// The value at the N5 attribute path `key` (`"a/b[2]"`: `/` and `[i]`
/// separate levels, `\/` and `\[` escape them, a leading `/` is ignored) of
/// the group or dataset at `path`, as JSON text. A missing key is
/// `N5_ERR_NOT_FOUND`. Same text convention as `n5_container_version`.
#[no_mangle]
pub extern "C" fn n5_attribute_get(
    c: *const n5_container,
    path: *const c_char,
    key: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_attribute_get", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        let key = convert::string(key, "key")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let value = c.get_attribute(path, key)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "no attribute '{key}' in '{}'",
                    crate::path::display(path.trim_start_matches('/'))
                ),
            )
        })?;
        write_text(&json_text(&value), buf, buf_cap, out_len)
    })
}

/// Merge the JSON object `json_object` into the attributes of the group or
/// dataset at `path`, as N5's setAttributes does: each top-level key
/// replaces the stored value (keys are plain keys, not attribute paths;
/// `null` is stored as null). The group must exist (`N5_ERR_NOT_FOUND`).
/// The document is rewritten atomically under an advisory lock, so merges
/// from several threads or processes all land.
#[no_mangle]
pub extern "C" fn n5_attributes_set(
    c: *mut n5_container,
    path: *const c_char,
    json_object: *const c_char,
) -> n5_status {
    boundary::status("n5_attributes_set", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        let text = convert::string(json_object, "json_object")?;
        let Value::Object(map) = parse_json(text, "json_object")? else {
            return Err(Error::new(
                ErrorKind::Json,
                "argument 'json_object' is not a JSON object",
            ));
        };
        c.set_attributes(path, &map)
    })
}

/// Set the value at the N5 attribute path `key` (see `n5_attribute_get`) to
/// the JSON text `json_value`, creating intermediate objects and arrays
/// (arrays grow with `0` for numbers and `null` otherwise, as in Java). An
/// index that would grow an array to more than 65,536 elements is
/// `N5_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn n5_attribute_set(
    c: *mut n5_container,
    path: *const c_char,
    key: *const c_char,
    json_value: *const c_char,
) -> n5_status {
    boundary::status("n5_attribute_set", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        let key = convert::string(key, "key")?;
        let value = parse_json(convert::string(json_value, "json_value")?, "json_value")?;
        c.set_attribute(path, key, value)
    })
}

/// Remove the value at the N5 attribute path `key` (array elements after it
/// shift down). A missing key is not an error.
#[no_mangle]
pub extern "C" fn n5_attribute_remove(
    c: *mut n5_container,
    path: *const c_char,
    key: *const c_char,
) -> n5_status {
    boundary::status("n5_attribute_remove", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        let key = convert::string(key, "key")?;
        c.remove_attribute(path, key).map(|_| ())
    })
}

/// Parse `text` as a JSON object (used by the dataset layer for compression).
pub(crate) fn parse_object(text: &str, arg: &str) -> Result<Map<String, Value>> {
    match parse_json(text, arg)? {
        Value::Object(map) => Ok(map),
        _ => Err(Error::new(
            ErrorKind::Json,
            format!("argument '{arg}' is not a JSON object"),
        )),
    }
}
