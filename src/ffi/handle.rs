//! The two opaque handle types and their life cycle.
//!
//! A handle is a heap cell holding a magic tag and the Rust object
//! ([`Container`] or [`Dataset`], both `Arc`-backed, `Send + Sync`). A
//! dataset holds its container, so handles may be freed in any order.
//!
//! Every call checks the tag, and freeing scribbles it. In debug builds a
//! freed cell is not returned to the allocator at once: its object is
//! dropped and the empty cell waits in a bounded quarantine, so a call with
//! a freed handle reads a dead tag and fails with `N5_ERR_INVALID_HANDLE`
//! instead of touching reused memory. Release builds free at once (a freed
//! handle is then the caller's undefined behaviour, as with `free`).

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::container::Container;
use crate::dataset::Dataset;
use crate::error::{Error, ErrorKind, Result};

const CONTAINER_LIVE: u64 = 0x6e35_636f_6e74_0001; // "n5cont"
const DATASET_LIVE: u64 = 0x6e35_6461_7461_0001; // "n5data"
const DEAD: u64 = 0xdead_dead_dead_dead;

/// An open N5 container (a root directory). Opaque; created by
/// `n5_container_open`, released by `n5_container_free`.
pub struct n5_container {
    magic: u64,
    inner: Option<Container>,
}

/// An open dataset with its metadata cached. Opaque; created by
/// `n5_dataset_open` or `n5_dataset_create`, released by `n5_dataset_free`.
pub struct n5_dataset {
    magic: u64,
    inner: Option<Dataset>,
}

/// A handle type: a tagged cell around a Rust object.
pub(crate) trait Handle: Sized + 'static {
    type Object;
    const LIVE: u64;
    const WHAT: &'static str;
    fn new_cell(object: Self::Object) -> Self;
    fn magic(&self) -> u64;
    fn object(&self) -> Option<&Self::Object>;
    fn kill(&mut self);
    fn retire(ptr: *mut Self) -> Retired;
}

impl Handle for n5_container {
    type Object = Container;
    const LIVE: u64 = CONTAINER_LIVE;
    const WHAT: &'static str = "container";
    fn new_cell(object: Container) -> Self {
        n5_container {
            magic: Self::LIVE,
            inner: Some(object),
        }
    }
    fn magic(&self) -> u64 {
        self.magic
    }
    fn object(&self) -> Option<&Container> {
        self.inner.as_ref()
    }
    fn kill(&mut self) {
        self.magic = DEAD;
        self.inner = None;
    }
    fn retire(ptr: *mut Self) -> Retired {
        Retired::Container(ptr as usize)
    }
}

impl Handle for n5_dataset {
    type Object = Dataset;
    const LIVE: u64 = DATASET_LIVE;
    const WHAT: &'static str = "dataset";
    fn new_cell(object: Dataset) -> Self {
        n5_dataset {
            magic: Self::LIVE,
            inner: Some(object),
        }
    }
    fn magic(&self) -> u64 {
        self.magic
    }
    fn object(&self) -> Option<&Dataset> {
        self.inner.as_ref()
    }
    fn kill(&mut self) {
        self.magic = DEAD;
        self.inner = None;
    }
    fn retire(ptr: *mut Self) -> Retired {
        Retired::Dataset(ptr as usize)
    }
}

/// Move `object` into a new handle for C.
pub(crate) fn into_handle<H: Handle>(object: H::Object) -> *mut H {
    Box::into_raw(Box::new(H::new_cell(object)))
}

/// Borrow the object behind the handle `ptr` for the duration of a call.
pub(crate) fn borrow<'a, H: Handle>(ptr: *const H, arg: &str) -> Result<&'a H::Object> {
    if ptr.is_null() {
        return Err(Error::new(
            ErrorKind::NullPointer,
            format!("{} handle '{arg}' is NULL", H::WHAT),
        ));
    }
    // SAFETY: a non-NULL handle comes from `into_handle` and, by the header's
    // ownership rules, has not been freed while in use by this call. In debug
    // builds a freed cell stays allocated (quarantine), so reading its tag is
    // sound and tells live from dead.
    let cell = unsafe { &*ptr };
    if cell.magic() != H::LIVE {
        return Err(invalid::<H>(arg));
    }
    cell.object().ok_or_else(|| invalid::<H>(arg))
}

fn invalid<H: Handle>(arg: &str) -> Error {
    Error::new(
        ErrorKind::InvalidHandle,
        format!(
            "'{arg}' is not a live {} handle (already freed, or not a handle)",
            H::WHAT
        ),
    )
}

/// Release the handle `ptr` (NULL is a no-op; a handle that is not live is
/// left alone).
pub(crate) fn free<H: Handle>(ptr: *mut H) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: as in `borrow`; the caller gives up the handle with this call
    // and no other call uses it concurrently (the header's thread rules).
    let cell = unsafe { &mut *ptr };
    if cell.magic() != H::LIVE {
        return;
    }
    cell.kill();
    if cfg!(debug_assertions) {
        quarantine(H::retire(ptr));
    } else {
        // SAFETY: `ptr` came from `Box::into_raw` in `into_handle` and is
        // released exactly once (its tag was live and is now dead).
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// A freed, emptied handle cell waiting in the debug quarantine.
pub(crate) enum Retired {
    Container(usize),
    Dataset(usize),
}

/// How many freed cells debug builds keep before returning the oldest to
/// the allocator (a few MiB at most).
const QUARANTINE_CAP: usize = 1 << 16;

static QUARANTINE: Mutex<VecDeque<Retired>> = Mutex::new(VecDeque::new());

fn quarantine(cell: Retired) {
    let mut q = QUARANTINE.lock().unwrap_or_else(|p| p.into_inner());
    q.push_back(cell);
    while q.len() > QUARANTINE_CAP {
        match q.pop_front() {
            // SAFETY: each address came from `Box::into_raw` of that type,
            // was emptied by `kill` and entered the queue exactly once.
            Some(Retired::Container(p)) => drop(unsafe { Box::from_raw(p as *mut n5_container) }),
            Some(Retired::Dataset(p)) => drop(unsafe { Box::from_raw(p as *mut n5_dataset) }),
            None => break,
        }
    }
}
