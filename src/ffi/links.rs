//! C API: hdmf-zarr links and object references (NWB files stored as Zarr
//! v2 or v3): listing a group's links, resolving a path through links,
//! creating links, and resolving object references.
//!
//! Every result names a node as `{"location", "path", "kind"}`: `location`
//! is `n5_container_root(c)` for the container itself and the location an
//! external link's `source` leads to for another; `path` is absolute and
//! normalised (`"/"` for the root); `kind` is `"group"` or `"dataset"`.

use std::ffi::c_char;

use serde_json::Value;

use super::boundary;
use super::convert::{self, write_text};
use super::handle::{self, n5_container};
use super::n5_status;
use crate::container::Container;
use crate::error::{Error, ErrorKind, Result};
use crate::links::LinkEntry;

fn container<'a>(c: *const n5_container) -> Result<&'a Container> {
    handle::borrow(c, "c")
}

/// The links held by the group at `group_path` (itself resolved through
/// links), in stored order, as a JSON array: `[{"name", "source", "path",
/// "target": {"location", "path", "kind"} | null}]`, where `target` is the
/// final node (further links followed) and, when the link leads nowhere,
/// `target` is null and `"error"` (the message) and `"status"` (the
/// status name, such as `"N5_ERR_DANGLING_LINK"`) say why. `[]` for a
/// group without links, for a dataset, and in N5 and HDF5 containers
/// (which have no links). Works whatever `"follow_links"` says.
///
/// A link is stored in its group's attributes as `{"name", "source",
/// "path"}` under `_LINKS` (Zarr v3) or `zarr_link` (Zarr v2); `source` is
/// `"."` (this container) or a location relative to this container
/// (`"../other.nwb.zarr"`, resolved on every backend: a directory join for
/// paths, RFC 3986 for URLs), `path` is absolute in the target container.
///
/// Errors: `N5_ERR_NOT_FOUND` for a missing group, `N5_ERR_INVALID_METADATA`
/// for a malformed list. Text output convention: `buf == NULL` with
/// `buf_cap == 0` stores only the length (without NUL) in `*out_len`; a
/// smaller buffer gives `N5_ERR_BUFFER_TOO_SMALL` with `*out_len` set.
#[no_mangle]
pub extern "C" fn n5_links_list(
    c: *const n5_container,
    group_path: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_links_list", || {
        let c = container(c)?;
        let path = convert::string(group_path, "group_path")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let entries = c.links(path)?;
        let list = Value::Array(entries.iter().map(LinkEntry::to_json).collect());
        write_text(&list.to_string(), buf, buf_cap, out_len)
    })
}

/// The node at `path`, following links in every segment (whatever
/// `"follow_links"` says), as JSON `{"location", "path", "kind", "hops"}`:
/// `hops` is the number of links followed (0 for a plain node, and always
/// in N5 and HDF5 containers, which have no links). At most 40 links are
/// followed per call.
///
/// Errors: `N5_ERR_NOT_FOUND` (nothing at `path`), `N5_ERR_DANGLING_LINK`
/// (a link on the way leads to a missing container or path; the message
/// names the link and which is missing), `N5_ERR_LINK_CYCLE` (a cycle, or
/// more than 40 links), `N5_ERR_UNSUPPORTED` (an absolute `source`),
/// `N5_ERR_INVALID_ARGUMENT` (a `source` climbing above the file-system
/// root, the bucket or the host's root). Same text convention as
/// `n5_links_list`.
#[no_mangle]
pub extern "C" fn n5_link_resolve(
    c: *const n5_container,
    path: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_link_resolve", || {
        let c = container(c)?;
        let path = convert::string(path, "path")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let target = c.resolve_link(path)?;
        write_text(&target.to_json(true).to_string(), buf, buf_cap, out_len)
    })
}

/// Add the link `name` to the group at `group_path` (resolved through
/// links), in the stored form of the container's format (Zarr v3 `_LINKS`,
/// Zarr v2 `zarr_link`; appended to the list the group already has), as a
/// conditional update of the group's attributes (concurrent creators lose
/// nothing); consolidated metadata, where the container has it, is updated
/// too. `source` is `"."` or a location relative to this container;
/// `target_path` is absolute in the target (a missing leading `/` is
/// added). The target is resolved first and must exist; the link stores the
/// final node (its container relative to this one, its own path), as
/// hdmf-zarr does.
///
/// Errors: `N5_ERR_UNSUPPORTED` in N5 and HDF5 containers;
/// `N5_ERR_READ_ONLY` on a read-only handle or for a group behind an
/// external link; `N5_ERR_INVALID_ARGUMENT` for a name that is empty, `.`,
/// `..` or holds `/`, and for a dataset at `group_path`;
/// `N5_ERR_NOT_FOUND` for a missing group; `N5_ERR_ALREADY_EXISTS` when
/// `name` is a member or a link of the group; `N5_ERR_DANGLING_LINK` when
/// the target (or its container) is missing, nothing written.
#[no_mangle]
pub extern "C" fn n5_link_create(
    c: *mut n5_container,
    group_path: *const c_char,
    name: *const c_char,
    source: *const c_char,
    target_path: *const c_char,
) -> n5_status {
    boundary::status("n5_link_create", || {
        let c = container(c)?;
        let group = convert::string(group_path, "group_path")?;
        let name = convert::string(name, "name")?;
        let source = convert::string(source, "source")?;
        let target = convert::string(target_path, "target_path")?;
        c.create_link(group, name, source, target)
    })
}

/// The node an hdmf-zarr object reference names, as JSON `{"location",
/// "path", "kind"}`. `reference_json` is the reference as JSON text, in any
/// stored form: the Zarr v3 attribute value `{"_REFERENCE": {"source",
/// "path"}}`, the Zarr v2 attribute value `{"zarr_dtype": "object",
/// "value": {"source", "path", ...}}`, a JSON string (a v3 element: an
/// absolute path in this container, `"\"/acquisition/ts_a\""`), or an
/// object with `source` and `path` (a v2 element, or a normalised one).
/// `owner_path` is the node holding the reference (resolved through
/// links): `source` is relative to the container that node is in. Links in
/// the target's path are followed; object ids are not checked.
///
/// Errors: `N5_ERR_JSON` for text that is not JSON,
/// `N5_ERR_INVALID_ARGUMENT` for JSON that is no reference,
/// `N5_ERR_NOT_FOUND` for a missing owner, `N5_ERR_DANGLING_LINK` when the
/// target or its container is missing (the message names the source and
/// path). Same text convention as `n5_links_list`.
#[no_mangle]
pub extern "C" fn n5_reference_resolve(
    c: *const n5_container,
    owner_path: *const c_char,
    reference_json: *const c_char,
    buf: *mut c_char,
    buf_cap: usize,
    out_len: *mut usize,
) -> n5_status {
    boundary::status("n5_reference_resolve", || {
        let c = container(c)?;
        let owner = convert::string(owner_path, "owner_path")?;
        let text = convert::string(reference_json, "reference_json")?;
        convert::check_out_buf(buf, buf_cap, out_len, "buf")?;
        let reference: Value = serde_json::from_str(text).map_err(|e| {
            Error::new(
                ErrorKind::Json,
                format!("argument 'reference_json' is not JSON: {e}"),
            )
        })?;
        let target = c.resolve_reference(owner, &reference)?;
        write_text(&target.to_json(false).to_string(), buf, buf_cap, out_len)
    })
}
