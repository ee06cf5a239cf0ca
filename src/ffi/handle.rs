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
    _opaque: [u8; 0],
}

/// An open dataset with its metadata cached. Opaque; created by
/// `n5_dataset_open` or `n5_dataset_create`, released by `n5_dataset_free`.
pub struct n5_dataset {
    _opaque: [u8; 0],
}

/// What a handle points to. `repr(C)` puts the tag first in every cell, so
/// the tag of any handle, of either type, is the first 8 bytes of an
/// allocation of at least 16: checking it never reads outside the cell,
/// even when C passes a container where a dataset is expected.
#[repr(C)]
struct Cell<T> {
    magic: u64,
    object: Option<T>,
}

/// A C handle type and the Rust object behind it.
pub(crate) trait Handle: Sized + 'static {
    /// The object a handle of this type holds.
    type Object: 'static;
    /// The tag of a live handle of this type.
    const LIVE: u64;
    /// The type's name in error messages.
    const WHAT: &'static str;
}

impl Handle for n5_container {
    type Object = Container;
    const LIVE: u64 = CONTAINER_LIVE;
    const WHAT: &'static str = "container";
}

impl Handle for n5_dataset {
    type Object = Dataset;
    const LIVE: u64 = DATASET_LIVE;
    const WHAT: &'static str = "dataset";
}

/// Move `object` into a new handle for C.
pub(crate) fn into_handle<H: Handle>(object: H::Object) -> *mut H {
    Box::into_raw(Box::new(Cell {
        magic: H::LIVE,
        object: Some(object),
    }))
    .cast::<H>()
}

/// The tag of the non-NULL handle `ptr`.
fn magic<H>(ptr: *const H) -> u64 {
    // SAFETY: a non-NULL handle comes from `into_handle` (of either type) and,
    // by the header's ownership rules, has not been freed while in use by
    // this call. Every cell is `repr(C)` with its u64 tag first, so the read
    // is aligned and inside the allocation whatever the cell's type. In
    // debug builds a freed cell stays allocated in the quarantine for the
    // next QUARANTINE_CAP frees, so the read is sound after a recent free
    // too and finds the dead tag (older freed handles are the caller's
    // undefined behaviour, as in release builds).
    unsafe { ptr.cast::<u64>().read() }
}

/// Borrow the object behind the handle `ptr` for the duration of a call.
pub(crate) fn borrow<'a, H: Handle>(ptr: *const H, arg: &str) -> Result<&'a H::Object> {
    if ptr.is_null() {
        return Err(Error::new(
            ErrorKind::NullPointer,
            format!("{} handle '{arg}' is NULL", H::WHAT),
        ));
    }
    if magic(ptr) != H::LIVE {
        return Err(invalid::<H>(arg));
    }
    // SAFETY: the live tag of this type says the cell is a `Cell<H::Object>`
    // made by `into_handle::<H>` and not yet freed.
    let cell = unsafe { &*ptr.cast::<Cell<H::Object>>() };
    cell.object.as_ref().ok_or_else(|| invalid::<H>(arg))
}

fn invalid<H: Handle>(arg: &str) -> Error {
    Error::new(
        ErrorKind::InvalidHandle,
        format!(
            "'{arg}' is not a live {} handle (already freed, or not a handle of this type)",
            H::WHAT
        ),
    )
}

/// Release the handle `ptr` (NULL is a no-op; a handle that is not live is
/// left alone).
pub(crate) fn free<H: Handle>(ptr: *mut H) {
    if ptr.is_null() || magic(ptr) != H::LIVE {
        return;
    }
    let cell_ptr = ptr.cast::<Cell<H::Object>>();
    // SAFETY: as in `borrow`; the caller gives up the handle with this call
    // and no other call uses it concurrently (the header's thread rules).
    let cell = unsafe { &mut *cell_ptr };
    cell.magic = DEAD;
    cell.object = None;
    let retired = Retired(cell_ptr.cast(), drop_cell::<H::Object>);
    if cfg!(debug_assertions) {
        quarantine(retired);
    } else {
        retired.release();
    }
}

/// Return the emptied cell at `ptr` to the allocator.
///
/// # Safety
/// `ptr` must come from `Box::into_raw` of a `Cell<T>` in `into_handle`, and
/// be released exactly once.
unsafe fn drop_cell<T>(ptr: *mut u8) {
    // SAFETY: the caller's contract above.
    drop(unsafe { Box::from_raw(ptr.cast::<Cell<T>>()) });
}

/// A freed, emptied cell waiting in the debug quarantine, with the function
/// that releases it. It keeps the cell as a pointer (not an address), so
/// that tools following pointers (Miri, leak checkers) see it reachable.
struct Retired(*mut u8, unsafe fn(*mut u8));

// SAFETY: a retired cell is empty and dead: no thread uses it any more, and
// the one that releases it (whichever evicts it) is its only owner.
unsafe impl Send for Retired {}

impl Retired {
    fn release(self) {
        // SAFETY: a `Retired` is made only by `free`, from a live cell of the
        // type its function drops; it is released once, since `release`
        // consumes it and `free` never retires a cell twice (the tag is dead
        // after the first free).
        unsafe { (self.1)(self.0) };
    }
}

/// How many freed cells debug builds keep before returning the oldest to
/// the allocator (a few MiB at most).
const QUARANTINE_CAP: usize = 1 << 16;

static QUARANTINE: Mutex<VecDeque<Retired>> = Mutex::new(VecDeque::new());

fn quarantine(retired: Retired) {
    let mut q = QUARANTINE.lock().unwrap_or_else(|p| p.into_inner());
    q.push_back(retired);
    while q.len() > QUARANTINE_CAP {
        if let Some(oldest) = q.pop_front() {
            oldest.release();
        }
    }
}
