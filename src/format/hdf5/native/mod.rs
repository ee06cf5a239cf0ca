//! Local HDF5 files through the system's libhdf5 (cargo feature `hdf5`):
//! the safe layer the HDF5 backend of the N5 API stands on. This file owns
//! the lock, handles and errors every libhdf5 call goes through, opening and
//! creating files, and the hierarchy (what is at a path, listing a group,
//! creating groups, unlinking). [`attrs`] maps attributes to JSON and back,
//! [`dataset`] describes, reads, writes and creates datasets, [`filters`]
//! decodes and encodes chunks in Rust (no libhdf5 there).
//!
//! **Dimension order.** Every shape, offset, chunk shape and chunk grid
//! position taken or returned here is in HDF5's order: C order, the slowest
//! dimension first, as h5py and h5dump state them. The N5 API's order is the
//! reverse; data buffers are the same bytes in both (dimension 0 of N5 is the
//! last, fastest one of HDF5), so the caller reverses only its offset and
//! shape vectors. Buffers hold elements in native byte order.
//!
//! **Locking.** libhdf5 runs one call at a time: every call into it here
//! runs inside [`locked`], hdf5-metno's process-wide reentrant lock (the
//! same lock hdf5-metno's own wrappers take), which also initialises the
//! library and turns off its printing of error stacks. A failing call's
//! error stack becomes the message of an [`Error`] that names the file and
//! the object.
//!
//! **Paths** are N5 paths relative to the file's root group (`""`, `"/"`,
//! `"."` are the root; `"a/b"` and `"/a/b"` are the same); `..` must have
//! been resolved by the caller.

pub(crate) mod attrs;
pub(crate) mod dataset;

#[cfg(test)]
mod tests;

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_uint};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hdf5_metno::globals::{H5P_FILE_ACCESS, H5P_LINK_CREATE};
use hdf5_metno_sys as sys;
use sys::h5::{hbool_t, herr_t, hsize_t, htri_t, H5_index_t, H5_iter_order_t};
use sys::h5f::{H5F_libver_t, H5F_scope_t, H5F_ACC_EXCL, H5F_ACC_RDONLY, H5F_ACC_RDWR};
use sys::h5i::{hid_t, H5I_type_t};
use sys::h5p::H5P_DEFAULT;

use crate::error::{Error, ErrorKind, Result};

/// Runs `f` under hdf5-metno's process-wide lock, the one lock every call
/// into libhdf5 takes. The lock is reentrant, so `f` may call functions
/// that take it again. The first use on a thread initialises libhdf5 and
/// stops it from printing error stacks on that thread.
pub(crate) fn locked<T>(f: impl FnOnce() -> T) -> T {
    hdf5_metno::sync::sync(f)
}

/// An identifier libhdf5 handed out (a file, group, dataset, attribute,
/// datatype, dataspace or property list), closed when dropped.
pub(crate) struct Hid {
    id: hid_t,
    close: unsafe extern "C" fn(hid_t) -> herr_t,
}

impl Hid {
    /// The raw identifier, valid while `self` lives.
    pub(crate) fn id(&self) -> hid_t {
        self.id
    }
}

impl Drop for Hid {
    fn drop(&mut self) {
        // SAFETY: `id` came from libhdf5 with `close` as its closing function
        // and is closed exactly once, here, under the lock. A failure to
        // close leaves nothing to do (the error stack is cleared by the next
        // failing call's query).
        locked(|| unsafe {
            (self.close)(self.id);
        });
    }
}

/// The closing functions of the kinds of identifiers.
pub(crate) mod close {
    pub(crate) use super::sys::h5a::H5Aclose as attribute;
    pub(crate) use super::sys::h5f::H5Fclose as file;
    pub(crate) use super::sys::h5o::H5Oclose as object;
    pub(crate) use super::sys::h5p::H5Pclose as plist;
    pub(crate) use super::sys::h5s::H5Sclose as space;
    pub(crate) use super::sys::h5t::H5Tclose as datatype;
}

/// The message of the current libhdf5 error stack (clearing it) and the
/// kind of error it shows: a failure of the file driver or of reading and
/// writing bytes is [`ErrorKind::Io`], one of the filter pipeline
/// [`ErrorKind::Codec`]; anything else is `default`. Call it under the lock,
/// right after the failing call, on the same thread.
fn stack_error(default: ErrorKind) -> (ErrorKind, String) {
    use hdf5_metno::MajorErrorCode as Major;
    let stack = hdf5_metno::Error::query().ok().and_then(|e| e.stack());
    match stack {
        Some(stack) if stack.top().is_some() => {
            let kind = if stack.contains_major(Major::Pipeline) {
                ErrorKind::Codec
            } else if stack.contains_major(Major::Io)
                || stack.contains_major(Major::VirtualFileLayer)
            {
                ErrorKind::Io
            } else {
                default
            };
            (kind, stack.description().to_string())
        }
        _ => (default, "libhdf5 reported an error".to_string()),
    }
}

/// A failed call: an error of the kind the error stack shows (else
/// `default`), saying `what` failed on `context` and why.
pub(crate) fn failed(default: ErrorKind, context: &str, what: &str) -> Error {
    let (kind, message) = stack_error(default);
    Error::new(kind, format!("{context}: {what}: {message}"))
}

/// `ret`, a libhdf5 status, as a result: negative is failure.
pub(crate) fn check(ret: herr_t, kind: ErrorKind, context: &str, what: &str) -> Result<()> {
    if ret < 0 {
        Err(failed(kind, context, what))
    } else {
        Ok(())
    }
}

/// `ret`, a libhdf5 tri-state (negative failure, 0 false, positive true).
pub(crate) fn check_tri(ret: htri_t, kind: ErrorKind, context: &str, what: &str) -> Result<bool> {
    if ret < 0 {
        Err(failed(kind, context, what))
    } else {
        Ok(ret > 0)
    }
}

/// `id`, a new identifier, owned with its closing function; negative is
/// failure.
pub(crate) fn check_id(
    id: hid_t,
    close: unsafe extern "C" fn(hid_t) -> herr_t,
    kind: ErrorKind,
    context: &str,
    what: &str,
) -> Result<Hid> {
    if id < 0 {
        Err(failed(kind, context, what))
    } else {
        Ok(Hid { id, close })
    }
}

/// `s` as a C string for libhdf5; a NUL inside is
/// [`ErrorKind::InvalidArgument`].
pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid_argument(format!("{what} '{s}' contains a NUL")))
}

/// Takes a string libhdf5 allocated (names it returns), freeing it with
/// `H5free_memory`.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string allocated by libhdf5, not used
/// afterwards.
pub(crate) unsafe fn take_h5_string(ptr: *mut c_char) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the caller promises a NUL-terminated string from libhdf5.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes().to_vec();
    // SAFETY: libhdf5 allocated `ptr`; H5free_memory is its matching free.
    unsafe { sys::h5::H5free_memory(ptr.cast()) };
    Some(bytes)
}

/// What a path leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjectKind {
    /// A group (through hard links, or soft links that resolve).
    Group,
    /// A dataset, of any type.
    Dataset,
    /// A link that leads to neither: a named datatype, an external or
    /// user-defined link (never followed), a soft link that does not
    /// resolve. The name is taken.
    Other,
    /// Nothing: no link of that name, or a parent on the path that is not
    /// a group.
    None,
}

/// A path resolved to what is there; groups and datasets stay open.
pub(crate) enum Resolved {
    /// A group, open.
    Group(Hid),
    /// A dataset, open.
    Dataset(Hid),
    /// See [`ObjectKind::Other`].
    Other,
    /// See [`ObjectKind::None`].
    None,
}

impl Resolved {
    /// The kind of object, without the handle.
    pub(crate) fn kind(&self) -> ObjectKind {
        match self {
            Resolved::Group(_) => ObjectKind::Group,
            Resolved::Dataset(_) => ObjectKind::Dataset,
            Resolved::Other => ObjectKind::Other,
            Resolved::None => ObjectKind::None,
        }
    }
}

/// The components of an N5 path (`""`, `"/"`, `"."` → none).
pub(crate) fn components(path: &str) -> Result<Vec<&str>> {
    let mut out = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                return Err(Error::invalid_argument(format!(
                    "path '{path}': '..' must be resolved before it reaches the HDF5 layer"
                )))
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The absolute HDF5 path of `components` (`/` for none).
pub(crate) fn absolute(components: &[&str]) -> String {
    format!("/{}", components.join("/"))
}

/// The link type of `name` in the group `group`, as libhdf5's
/// `H5L_type_t` number (0 hard, 1 soft, 64 external, other user-defined).
/// Read through a mirror of `H5L_info_t` whose type is a plain integer, so
/// a user-defined link type is a number, not an invalid Rust enum value.
fn link_type(group: hid_t, name: &CStr, context: &str) -> Result<c_int> {
    /// The leading fields of `H5L_info1_t` (1.8, 1.10) and `H5L_info2_t`
    /// (1.12 and later), which agree; the union is given room for the
    /// larger (a 16-byte object token).
    #[repr(C)]
    struct LinkInfo {
        type_: c_int,
        corder_valid: hbool_t,
        corder: i64,
        cset: c_int,
        u: [u64; 2],
    }
    let mut info = LinkInfo {
        type_: -1,
        corder_valid: Default::default(),
        corder: 0,
        cset: 0,
        u: [0; 2],
    };
    #[cfg(not(n5_hdf5_1_12))]
    // SAFETY: `info` has the layout of H5L_info1_t (and more room); `name`
    // is a C string; under the lock.
    let ret = locked(|| unsafe {
        sys::h5l::H5Lget_info1(
            group,
            name.as_ptr(),
            (&mut info as *mut LinkInfo).cast(),
            H5P_DEFAULT,
        )
    });
    #[cfg(n5_hdf5_1_12)]
    // SAFETY: `info` has the layout of H5L_info2_t; `name` is a C string;
    // under the lock.
    let ret = locked(|| unsafe {
        sys::h5l::H5Lget_info2(
            group,
            name.as_ptr(),
            (&mut info as *mut LinkInfo).cast(),
            H5P_DEFAULT,
        )
    });
    check(ret, ErrorKind::InvalidMetadata, context, "reading the link")?;
    let _ = (info.corder_valid, info.corder, info.cset, info.u);
    Ok(info.type_)
}

/// The names of the links in the open group `group`, in the order libhdf5
/// stores them. Iterating in that native order walks the group's own index
/// (symbol table, link messages, or the name B-tree of dense storage):
/// libhdf5 1.10 answers any other order of a dense group from a table it
/// sizes by the B-tree's record count and fills by walking the tree, and
/// frees entries it never filled when a damaged tree holds fewer records
/// than it counts (a crash in `H5G__link_release_table`).
fn link_names(group: hid_t, context: &str) -> Result<Vec<Vec<u8>>> {
    unsafe extern "C" fn collect(
        _group: hid_t,
        name: *const c_char,
        _info: *const sys::h5l::H5L_info_t,
        data: *mut std::ffi::c_void,
    ) -> herr_t {
        let result = std::panic::catch_unwind(|| {
            // SAFETY: `data` is the `Vec<Vec<u8>>` passed to H5Literate
            // below and `name` a NUL-terminated string libhdf5 owns for the
            // duration of the callback.
            unsafe {
                let names = &mut *data.cast::<Vec<Vec<u8>>>();
                names.push(CStr::from_ptr(name).to_bytes().to_vec());
            }
        });
        if result.is_ok() {
            0
        } else {
            -1
        }
    }
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut index: hsize_t = 0;
    // SAFETY: `group` is an open group; the callback only pushes to
    // `names`, which outlives the call; under the lock.
    let ret = locked(|| unsafe {
        sys::h5l::H5Literate(
            group,
            H5_index_t::H5_INDEX_NAME,
            H5_iter_order_t::H5_ITER_NATIVE,
            &mut index,
            Some(collect),
            (&mut names as *mut Vec<Vec<u8>>).cast(),
        )
    });
    check(
        ret,
        ErrorKind::InvalidMetadata,
        context,
        "listing the group",
    )?;
    Ok(names)
}

/// A link of a group, as [`followed_link`] finds it.
enum Link {
    /// There is no link of that name.
    Missing,
    /// An external or user-defined link, which libn5 does not follow.
    NotFollowed,
    /// A hard or soft link, its name as a C string.
    Followed { name: CString, soft: bool },
}

/// The link `name` in the open group `group`: whether there is one, and
/// whether libn5 follows it (hard and soft links).
fn followed_link(group: hid_t, name: &str, context: &str) -> Result<Link> {
    let cname = cstring(name, "name")?;
    // SAFETY: `group` is an open group, `cname` a C string; under the lock.
    let exists = locked(|| unsafe { sys::h5l::H5Lexists(group, cname.as_ptr(), H5P_DEFAULT) });
    if !check_tri(
        exists,
        ErrorKind::InvalidMetadata,
        context,
        "looking up the link",
    )? {
        return Ok(Link::Missing);
    }
    const HARD: c_int = 0;
    const SOFT: c_int = 1;
    match link_type(group, &cname, context)? {
        HARD => Ok(Link::Followed {
            name: cname,
            soft: false,
        }),
        SOFT => Ok(Link::Followed {
            name: cname,
            soft: true,
        }),
        _ => Ok(Link::NotFollowed),
    }
}

/// What the link `name` in the open group `group` leads to (hard and soft
/// links followed, external and user-defined ones not).
fn resolve_child(group: hid_t, name: &str, context: &str) -> Result<Resolved> {
    let (cname, soft) = match followed_link(group, name, context)? {
        Link::Missing => return Ok(Resolved::None),
        Link::NotFollowed => return Ok(Resolved::Other),
        Link::Followed { name, soft } => (name, soft),
    };
    let opened = locked(|| {
        // SAFETY: as above; H5Oopen follows hard and soft links.
        let id = unsafe { sys::h5o::H5Oopen(group, cname.as_ptr(), H5P_DEFAULT) };
        if id < 0 {
            return Err(failed(
                ErrorKind::InvalidMetadata,
                context,
                "opening the object",
            ));
        }
        let hid = Hid {
            id,
            close: close::object,
        };
        // SAFETY: `id` is open.
        let t = unsafe { sys::h5i::H5Iget_type(id) };
        Ok((hid, t))
    });
    match opened {
        // A soft link whose target is missing or cannot be opened.
        Err(_) if soft => Ok(Resolved::Other),
        Err(e) => Err(e),
        Ok((hid, H5I_type_t::H5I_GROUP)) => Ok(Resolved::Group(hid)),
        Ok((hid, H5I_type_t::H5I_DATASET)) => Ok(Resolved::Dataset(hid)),
        Ok(_) => Ok(Resolved::Other),
    }
}

/// What the link `name` in the open group `group` leads to (hard and soft
/// links followed, external and user-defined ones not), without opening
/// the object: libhdf5 tells the kind from which messages its header
/// holds, decoding none of them, where opening a dataset decodes its
/// type, layout and filters and opening a named datatype its type
/// (decoders that libhdf5 1.10 runs unchecked on damaged headers).
fn child_kind(group: hid_t, name: &str, context: &str) -> Result<ObjectKind> {
    let (cname, soft) = match followed_link(group, name, context)? {
        Link::Missing => return Ok(ObjectKind::None),
        Link::NotFollowed => return Ok(ObjectKind::Other),
        Link::Followed { name, soft } => (name, soft),
    };
    let object = locked(|| {
        #[cfg(not(n5_hdf5_1_12))]
        {
            let mut info = std::mem::MaybeUninit::<sys::h5o::H5O_info1_t>::zeroed();
            // SAFETY: as above; `info` is written on success (all zeros, a
            // valid value, before); H5O_INFO_BASIC reads the header only.
            let ret = unsafe {
                sys::h5o::H5Oget_info_by_name2(
                    group,
                    cname.as_ptr(),
                    info.as_mut_ptr(),
                    sys::h5o::H5O_INFO_BASIC,
                    H5P_DEFAULT,
                )
            };
            // SAFETY: zeroed, then written by libhdf5.
            (ret, unsafe { info.assume_init() }.type_)
        }
        #[cfg(n5_hdf5_1_12)]
        {
            let mut info = std::mem::MaybeUninit::<sys::h5o::H5O_info2_t>::zeroed();
            // SAFETY: as above.
            let ret = unsafe {
                sys::h5o::H5Oget_info_by_name3(
                    group,
                    cname.as_ptr(),
                    info.as_mut_ptr(),
                    sys::h5o::H5O_INFO_BASIC,
                    H5P_DEFAULT,
                )
            };
            // SAFETY: zeroed, then written by libhdf5.
            (ret, unsafe { info.assume_init() }.type_)
        }
    });
    match object {
        // A soft link whose target is missing or unreadable.
        (ret, _) if ret < 0 && soft => Ok(ObjectKind::Other),
        (ret, _) if ret < 0 => Err(failed(
            ErrorKind::InvalidMetadata,
            context,
            "reading the object header",
        )),
        (_, sys::h5o::H5O_type_t::H5O_TYPE_GROUP) => Ok(ObjectKind::Group),
        (_, sys::h5o::H5O_type_t::H5O_TYPE_DATASET) => Ok(ObjectKind::Dataset),
        _ => Ok(ObjectKind::Other),
    }
}

/// The parts of an open file shared by its datasets.
pub(crate) struct FileInner {
    /// The file identifier.
    id: Hid,
    /// The path it was opened with.
    path: PathBuf,
    /// Whether it was opened for writing.
    writable: bool,
    /// The same file opened read-only by the OS, for positional reads of
    /// chunk bytes that need no libhdf5 (region reads stream through it,
    /// with the kernel's read-ahead).
    reader: std::fs::File,
    /// libhdf5's own descriptor of the file (its sec2 driver), read-ahead
    /// off but while [`FileInner::streaming`] runs.
    library_fd: Option<c_int>,
    /// The size of the user block (the offset of the superblock), which
    /// addresses libhdf5 < 1.14.4 reports are relative to.
    userblock: u64,
    /// The largest size [`FileInner::size`] saw, so that checking that a
    /// chunk lies inside the file needs no `fstat` per chunk.
    seen_size: std::sync::atomic::AtomicU64,
}

impl FileInner {
    /// `"HDF5 file '<path>'"`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!("HDF5 file '{}'", self.path.display())
    }

    /// `"HDF5 file '<path>', object '<object>'"`, for messages.
    pub(crate) fn context(&self, object: &str) -> String {
        format!("HDF5 file '{}', object '{object}'", self.path.display())
    }

    /// The file's identifier.
    pub(crate) fn id(&self) -> hid_t {
        self.id.id()
    }

    /// [`ErrorKind::ReadOnly`] unless the file was opened for writing.
    pub(crate) fn check_writable(&self, object: &str) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::ReadOnly,
                format!("{}: the file is open read-only", self.context(object)),
            ))
        }
    }

    /// Writes libhdf5's buffered metadata and data to the file.
    pub(crate) fn flush(&self) -> Result<()> {
        // SAFETY: the file is open; under the lock.
        let ret =
            locked(|| unsafe { sys::h5f::H5Fflush(self.id(), H5F_scope_t::H5F_SCOPE_GLOBAL) });
        check(ret, ErrorKind::Io, &self.describe(), "flushing the file")
    }

    /// Runs `f`, a call into libhdf5 (under the lock) that reads data
    /// through it (`H5Dread`: contiguous datasets, chunks only libhdf5
    /// decodes), with the kernel's read-ahead on libhdf5's descriptor,
    /// which is off otherwise.
    pub(crate) fn streaming<T>(&self, f: impl FnOnce() -> T) -> T {
        use crate::os::{advise_access, Access};
        let Some(fd) = self.library_fd else {
            return f();
        };
        advise_access(fd, Access::Normal);
        let out = f();
        advise_access(fd, Access::Scattered);
        out
    }

    /// The current size of the file in bytes.
    pub(crate) fn size(&self) -> Result<u64> {
        let size = self
            .reader
            .metadata()
            .map(|m| m.len())
            .map_err(|e| Error::io(self.path.display(), e))?;
        self.seen_size
            .fetch_max(size, std::sync::atomic::Ordering::Relaxed);
        Ok(size)
    }

    /// Whether the file holds byte `end - 1`, with the size last seen
    /// where that answers it (a file open here only grows; one cut short
    /// by another program since gives fewer bytes when read, which the
    /// readers check), else the current size; that size with the answer.
    pub(crate) fn reaches(&self, end: u64) -> Result<(bool, u64)> {
        let seen = self.seen_size.load(std::sync::atomic::Ordering::Relaxed);
        if end <= seen {
            return Ok((true, seen));
        }
        let size = self.size()?;
        Ok((end <= size, size))
    }

    /// Resolves `path` from the root group.
    pub(crate) fn resolve(&self, path: &str) -> Result<Resolved> {
        let comps = components(path)?;
        let context = self.context(&absolute(&comps));
        let root = cstring("/", "path")?;
        let mut current = locked(|| {
            // SAFETY: the file is open; "/" is its root group.
            let id = unsafe { sys::h5o::H5Oopen(self.id(), root.as_ptr(), H5P_DEFAULT) };
            check_id(
                id,
                close::object,
                ErrorKind::InvalidMetadata,
                &context,
                "opening the root group",
            )
        })
        .map(Resolved::Group)?;
        for name in comps {
            let Resolved::Group(group) = &current else {
                return Ok(Resolved::None);
            };
            current = resolve_child(group.id(), name, &context)?;
        }
        Ok(current)
    }
}

/// An open HDF5 file. Cheap to clone (the file stays open while a clone or
/// a [`Dataset`](dataset::Dataset) of it lives).
#[derive(Clone)]
pub(crate) struct File {
    inner: Arc<FileInner>,
}

/// The lowest and highest library versions whose object formats files
/// created here may use: object headers v2 and v1 B-tree chunk indexes
/// (HDF5 1.8), never the formats of 1.12 and later (layout v5 of HDF5 2.0
/// included), so HDF5 1.8 and 1.10 read the files.
const LIBVER_LOW: H5F_libver_t = H5F_libver_t::H5F_LIBVER_V18;
const LIBVER_HIGH: H5F_libver_t = H5F_libver_t::H5F_LIBVER_V110;

impl File {
    /// Opens the existing HDF5 file at `path`, read-only or for reading
    /// and writing. A missing file is [`ErrorKind::NotFound`]; a file
    /// without the HDF5 signature is [`ErrorKind::InvalidMetadata`] ("not
    /// an HDF5 file"), refused before libhdf5 reads it. A file another
    /// process holds open for writing is refused by libhdf5's file locking,
    /// and libhdf5 refuses to open for writing a file this process holds
    /// open read-only until every handle of it is gone.
    pub(crate) fn open(path: &Path, writable: bool) -> Result<File> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| Error::io(&shown, e))?;
        if !meta.is_file() {
            return Err(Error::invalid_argument(format!(
                "'{shown}' is not a regular file, so not an HDF5 file"
            )));
        }
        let reader = std::fs::File::open(path).map_err(|e| Error::io(&shown, e))?;
        if super::signature::find_in(&reader, meta.len())
            .map_err(|e| Error::io(&shown, e))?
            .is_none()
        {
            return Err(Error::invalid_metadata(format!(
                "HDF5 file '{shown}': not an HDF5 file (no HDF5 signature at byte 0, 512, 1024, ...)"
            )));
        }
        let cpath = path_cstring(path)?;
        let context = format!("HDF5 file '{shown}'");
        let flags = if writable {
            H5F_ACC_RDWR
        } else {
            H5F_ACC_RDONLY
        };
        let id = locked(|| {
            // SAFETY: `cpath` is a C string; default access properties.
            let id = unsafe { sys::h5f::H5Fopen(cpath.as_ptr(), flags, H5P_DEFAULT) };
            check_id(
                id,
                close::file,
                ErrorKind::InvalidMetadata,
                &context,
                "opening",
            )
        })?;
        File::finish(id, path, writable, reader)
    }

    /// Opens the HDF5 file at `path` for reading and writing as it is
    /// (never truncated), or creates it, with its missing parent
    /// directories, when nothing is there. New files get libver bounds
    /// (1.8, 1.10): object headers v2, v1 B-tree chunk indexes, layout
    /// messages v3/v4 only, even when libhdf5 is 2.x.
    pub(crate) fn create(path: &Path) -> Result<File> {
        let shown = path.display().to_string();
        match std::fs::symlink_metadata(path) {
            Ok(_) => return File::open(path, true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&shown, e)),
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display(), e))?;
        }
        let cpath = path_cstring(path)?;
        let context = format!("HDF5 file '{shown}'");
        let id = locked(|| {
            // SAFETY: creating and closing a property list; under the lock.
            let fapl = check_id(
                unsafe { sys::h5p::H5Pcreate(*H5P_FILE_ACCESS) },
                close::plist,
                ErrorKind::Internal,
                &context,
                "creating file access properties",
            )?;
            // SAFETY: `fapl` is a file access property list.
            let ret = unsafe { sys::h5p::H5Pset_libver_bounds(fapl.id(), LIBVER_LOW, LIBVER_HIGH) };
            check(
                ret,
                ErrorKind::Internal,
                &context,
                "setting libver bounds (1.8, 1.10)",
            )?;
            // SAFETY: `cpath` is a C string; EXCL never truncates a file
            // that appeared meanwhile.
            let id = unsafe {
                sys::h5f::H5Fcreate(cpath.as_ptr(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.id())
            };
            check_id(id, close::file, ErrorKind::Io, &context, "creating")
        })?;
        let reader = std::fs::File::open(path).map_err(|e| Error::io(&shown, e))?;
        File::finish(id, path, true, reader)
    }

    fn finish(id: Hid, path: &Path, writable: bool, reader: std::fs::File) -> Result<File> {
        let context = format!("HDF5 file '{}'", path.display());
        // libhdf5 reads the file in small scattered pieces (metadata) on
        // its descriptor: with the kernel's usual read-ahead each would
        // read megabytes ahead and start a stream that the chunk reads of
        // `reader` then follow across the gaps of a region. Its whole-box
        // reads (`H5Dread`) restore read-ahead while they run
        // ([`FileInner::streaming`]).
        let library_fd = library_descriptor(&id, &context)?;
        if let Some(fd) = library_fd {
            close_on_exec(fd, &context)?;
            crate::os::advise_access(fd, crate::os::Access::Scattered);
        }
        let userblock = locked(|| {
            // SAFETY: the file is open; its creation property list is
            // closed by the Hid.
            let fcpl = check_id(
                unsafe { sys::h5f::H5Fget_create_plist(id.id()) },
                close::plist,
                ErrorKind::InvalidMetadata,
                &context,
                "reading the creation properties",
            )?;
            let mut size: hsize_t = 0;
            // SAFETY: `fcpl` is a file creation property list.
            let ret = unsafe { sys::h5p::H5Pget_userblock(fcpl.id(), &mut size) };
            check(
                ret,
                ErrorKind::InvalidMetadata,
                &context,
                "reading the user block size",
            )?;
            Ok(size)
        })?;
        Ok(File {
            inner: Arc::new(FileInner {
                id,
                path: path.to_path_buf(),
                writable,
                reader,
                library_fd,
                userblock,
                seen_size: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// The shared parts (for datasets and attributes).
    pub(crate) fn inner(&self) -> &Arc<FileInner> {
        &self.inner
    }

    /// The path the file was opened with.
    pub(crate) fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Whether the file is open for writing.
    pub(crate) fn writable(&self) -> bool {
        self.inner.writable
    }

    /// The size of the file's user block: 0, or the offset of its
    /// superblock (512, 1024, ...). Only the tests ask; chunk addresses
    /// account for it inside this layer.
    #[cfg(test)]
    pub(crate) fn userblock(&self) -> u64 {
        self.inner.userblock
    }

    /// Writes libhdf5's buffered metadata and data to the file.
    pub(crate) fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// What is at `path` (the object itself is not opened: see
    /// `child_kind`).
    pub(crate) fn kind(&self, path: &str) -> Result<ObjectKind> {
        let comps = components(path)?;
        let Some((last, parents)) = comps.split_last() else {
            return Ok(self.inner.resolve(path)?.kind());
        };
        let context = self.inner.context(&absolute(&comps));
        match self.inner.resolve(&parents.join("/"))? {
            Resolved::Group(group) => child_kind(group.id(), last, &context),
            _ => Ok(ObjectKind::None),
        }
    }

    /// The names of the groups and datasets in the group at `path` (hard
    /// links, and soft links that resolve to one), sorted by bytes; named
    /// datatypes, external, user-defined and dangling links are left out,
    /// and so are names that are not UTF-8. A dataset gives none; nothing
    /// at `path` is [`ErrorKind::NotFound`].
    pub(crate) fn list(&self, path: &str) -> Result<Vec<String>> {
        let comps = components(path)?;
        let context = self.inner.context(&absolute(&comps));
        let group = match self.inner.resolve(path)? {
            Resolved::Group(g) => g,
            Resolved::Dataset(_) => return Ok(Vec::new()),
            Resolved::Other | Resolved::None => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("{context}: no group or dataset there"),
                ))
            }
        };
        let names_found = link_names(group.id(), &context)?;
        let mut names = Vec::new();
        for name in names_found {
            let Ok(name) = String::from_utf8(name) else {
                continue;
            };
            if matches!(
                child_kind(group.id(), &name, &context)?,
                ObjectKind::Group | ObjectKind::Dataset
            ) {
                names.push(name);
            }
        }
        names.sort_unstable();
        Ok(names)
    }

    /// Creates the groups missing along `path` (the root always exists).
    /// Something other than a group on the path, the last component
    /// included, is [`ErrorKind::AlreadyExists`].
    pub(crate) fn create_groups(&self, path: &str) -> Result<()> {
        let comps = components(path)?;
        let context = self.inner.context(&absolute(&comps));
        self.inner.check_writable(&absolute(&comps))?;
        let Resolved::Group(mut group) = self.inner.resolve("")? else {
            return Err(Error::invalid_metadata(format!(
                "{}: the root is not a group",
                self.inner.describe()
            )));
        };
        let mut created = false;
        for (i, name) in comps.iter().enumerate() {
            let here = absolute(&comps[..=i]);
            group = match resolve_child(group.id(), name, &context)? {
                Resolved::Group(g) => g,
                Resolved::None => {
                    let cname = cstring(name, "name")?;
                    created = true;
                    locked(|| {
                        // SAFETY: `group` is open, `cname` a C string.
                        let id = unsafe {
                            sys::h5g::H5Gcreate2(
                                group.id(),
                                cname.as_ptr(),
                                H5P_DEFAULT,
                                H5P_DEFAULT,
                                H5P_DEFAULT,
                            )
                        };
                        check_id(
                            id,
                            close::object,
                            ErrorKind::Io,
                            &self.inner.context(&here),
                            "creating the group",
                        )
                    })?
                }
                Resolved::Dataset(_) | Resolved::Other => {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!(
                            "{}: something other than a group is there",
                            self.inner.context(&here)
                        ),
                    ))
                }
            };
        }
        if created {
            self.flush()?;
        }
        Ok(())
    }

    /// Unlinks the object at `path` (libhdf5 does not give its space back).
    /// The root is [`ErrorKind::InvalidArgument`]; no link there is
    /// [`ErrorKind::NotFound`].
    pub(crate) fn unlink(&self, path: &str) -> Result<()> {
        let comps = components(path)?;
        let here = absolute(&comps);
        let context = self.inner.context(&here);
        let Some((name, parents)) = comps.split_last() else {
            return Err(Error::invalid_argument(format!(
                "{context}: the root group cannot be removed"
            )));
        };
        self.inner.check_writable(&here)?;
        let parent = match self.inner.resolve(&parents.join("/"))? {
            Resolved::Group(g) => g,
            _ => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("{context}: nothing there"),
                ))
            }
        };
        if resolve_child(parent.id(), name, &context)?.kind() == ObjectKind::None {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{context}: nothing there"),
            ));
        }
        let cname = cstring(name, "name")?;
        // SAFETY: `parent` is an open group, `cname` a C string.
        let ret =
            locked(|| unsafe { sys::h5l::H5Ldelete(parent.id(), cname.as_ptr(), H5P_DEFAULT) });
        check(ret, ErrorKind::Io, &context, "unlinking")?;
        self.flush()
    }

    /// The root group's string attribute `n5` (the version n5-hdf5 writes),
    /// if there is one; an `n5` attribute of another type is none.
    pub(crate) fn version(&self) -> Result<Option<String>> {
        let Resolved::Group(root) = self.inner.resolve("")? else {
            return Ok(None);
        };
        attrs::read_string_attribute(&self.inner, root.id(), "/", "n5")
    }

    /// A link creation property list that creates missing intermediate
    /// groups.
    pub(crate) fn intermediate_lcpl(&self, context: &str) -> Result<Hid> {
        locked(|| {
            // SAFETY: creating a link creation property list.
            let lcpl = check_id(
                unsafe { sys::h5p::H5Pcreate(*H5P_LINK_CREATE) },
                close::plist,
                ErrorKind::Internal,
                context,
                "creating link creation properties",
            )?;
            // SAFETY: `lcpl` is a link creation property list.
            let ret = unsafe { sys::h5p::H5Pset_create_intermediate_group(lcpl.id(), 1 as c_uint) };
            check(
                ret,
                ErrorKind::Internal,
                context,
                "asking for intermediate groups",
            )?;
            Ok(lcpl)
        })
    }
}

/// The file descriptor libhdf5 opened for the file `file` with its
/// default (sec2) driver; `None` for other drivers.
fn library_descriptor(file: &Hid, context: &str) -> Result<Option<c_int>> {
    locked(|| {
        // SAFETY: the file is open; the access property list is closed by
        // its Hid; for the sec2 driver the handle libhdf5 gives is a
        // pointer to its `int` descriptor, valid while the file is open.
        unsafe {
            let fapl = check_id(
                sys::h5f::H5Fget_access_plist(file.id()),
                close::plist,
                ErrorKind::Internal,
                context,
                "reading the access properties",
            )?;
            if sys::h5p::H5Pget_driver(fapl.id()) != *hdf5_metno::globals::H5FD_SEC2 {
                return Ok(None);
            }
            let mut handle: *mut std::os::raw::c_void = std::ptr::null_mut();
            let ret = sys::h5f::H5Fget_vfd_handle(file.id(), fapl.id(), &mut handle);
            check(
                ret,
                ErrorKind::Internal,
                context,
                "reading the file descriptor",
            )?;
            Ok((!handle.is_null()).then(|| *handle.cast::<c_int>()))
        }
    })
}

/// Marks libhdf5's descriptor `fd` close-on-exec. libhdf5's sec2 driver
/// opens files without it, so a process the host program starts (any fork
/// and exec) would inherit the descriptor and, with it, libhdf5's lock on
/// the file for as long as that process lives, locking other programs out
/// of the file.
fn close_on_exec(fd: c_int, context: &str) -> Result<()> {
    // SAFETY: fcntl only takes the descriptor (libhdf5's, open while the
    // file is) and integers; setting FD_CLOEXEC changes nothing else about
    // it.
    let failed = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) < 0
    };
    if failed {
        return Err(Error::io(context, std::io::Error::last_os_error()));
    }
    Ok(())
}

/// `path` as a C string (its bytes, as the OS has them).
fn path_cstring(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid_argument(format!("path '{}' contains a NUL", path.display())))
}
