//! The panic boundary and the thread-local last error.
//!
//! Every exported function body runs in [`status`], [`value`] or
//! [`infallible`]: they clear the calling thread's last error, run the body
//! under `catch_unwind`, and on failure record the error (code and message,
//! prefixed with the function's name) and return the failure value of the
//! function's return type (the status code, NULL, or 0). A panic never
//! unwinds into C; it becomes `N5_ERR_PANIC` with the panic's message.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::n5_status;
use crate::error::{Error, ErrorKind, Result};

struct LastError {
    code: n5_status,
    message: CString,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError {
        code: 0,
        message: CString::default(),
    });
}

/// Forget the calling thread's last error.
pub(crate) fn clear() {
    let _ = LAST_ERROR.try_with(|e| {
        let mut e = e.borrow_mut();
        if e.code != 0 {
            e.code = 0;
            e.message = CString::default();
        }
    });
}

/// Record `code` and `message` as the calling thread's last error.
pub(crate) fn record(code: n5_status, message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|e| {
        *e.borrow_mut() = LastError { code, message };
    });
}

/// The calling thread's last error code (0 when none).
pub(crate) fn last_code() -> n5_status {
    LAST_ERROR.try_with(|e| e.borrow().code).unwrap_or(0)
}

/// The calling thread's last error message; the pointer stays valid until
/// the thread's next call that records or clears an error.
pub(crate) fn last_message() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().message.as_ptr())
        .unwrap_or(c"".as_ptr())
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// What a function returns when it fails.
pub(crate) trait Failure {
    /// The return value for a failure of `kind`.
    fn failure(kind: ErrorKind) -> Self;
}

impl Failure for n5_status {
    fn failure(kind: ErrorKind) -> Self {
        kind.code()
    }
}

impl<T> Failure for *mut T {
    fn failure(_: ErrorKind) -> Self {
        std::ptr::null_mut()
    }
}

impl Failure for usize {
    fn failure(_: ErrorKind) -> Self {
        0
    }
}

/// Run `body` for the function `name` and return its value, or the failure
/// value of `R` after recording the error or the panic.
pub(crate) fn value<R: Failure>(name: &str, body: impl FnOnce() -> Result<R>) -> R {
    clear();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => fail(name, &e),
        Err(payload) => {
            let e = Error::new(
                ErrorKind::Panic,
                format!(
                    "panic inside the library: {}",
                    panic_message(payload.as_ref())
                ),
            );
            fail(name, &e)
        }
    }
}

/// Record `e` for the function `name` and return the failure value of `R`.
fn fail<R: Failure>(name: &str, e: &Error) -> R {
    record(e.kind().code(), &format!("{name}: {}", e.message()));
    R::failure(e.kind())
}

/// Run `body` for the function `name`: `N5_OK`, or the error's status code.
pub(crate) fn status(name: &str, body: impl FnOnce() -> Result<()>) -> n5_status {
    value(name, || body().map(|()| super::N5_OK))
}

/// Run `body`, which cannot fail, for a function whose C signature has no
/// error return (the version getters): a panic gives `fallback`, with the
/// panic recorded as the last error.
pub(crate) fn infallible<R>(name: &str, fallback: R, body: impl FnOnce() -> R) -> R {
    clear();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            record(
                ErrorKind::Panic.code(),
                &format!(
                    "{name}: panic inside the library: {}",
                    panic_message(payload.as_ref())
                ),
            );
            fallback
        }
    }
}

/// Run `body` without touching the last error (the `_free` functions and
/// the error getters); a panic gives `fallback` and is swallowed.
pub(crate) fn quiet<R>(fallback: R, body: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}
