//! Unit tests of the C layer's machinery that C programs cannot reach: the
//! panic boundary, the thread-local last error and the debug-build handle
//! quarantine. The C API as a whole is tested from C in tests/c/.

use std::ffi::{c_char, CStr, CString};

use super::boundary;
use super::container::*;
use super::dataset::*;
use super::status::*;
use super::*;
use crate::error::{Error, ErrorKind};

fn message() -> String {
    // SAFETY: n5_last_error_message never returns NULL and its text stays
    // valid until the next call on this thread.
    unsafe { CStr::from_ptr(n5_last_error_message()) }
        .to_str()
        .unwrap()
        .to_string()
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

#[test]
fn a_panic_becomes_a_status_and_the_process_goes_on() {
    let code = boundary::status("n5_test", || panic!("boom {}", 42));
    assert_eq!(code, N5_ERR_PANIC);
    assert_eq!(n5_last_error_code(), N5_ERR_PANIC);
    assert_eq!(message(), "n5_test: panic inside the library: boom 42");
    let null: *mut n5_container = boundary::value("n5_test", || panic!("static message"));
    assert!(null.is_null());
    assert!(message().ends_with("static message"));
    assert_eq!(boundary::infallible("n5_test", 7u32, || panic!()), 7);
    assert_eq!(n5_last_error_code(), N5_ERR_PANIC);
    // The next call clears it.
    assert_eq!(
        n5_version_number(),
        10000 * n5_version_major() + 100 * n5_version_minor() + n5_version_patch()
    );
    assert_eq!(n5_last_error_code(), N5_OK);
    assert_eq!(message(), "");
}

#[test]
fn errors_carry_their_code_and_function_name() {
    let code = boundary::status("n5_test", || {
        Err(Error::new(ErrorKind::OutOfBounds, "dimension 2"))
    });
    assert_eq!(code, N5_ERR_OUT_OF_BOUNDS);
    assert_eq!(message(), "n5_test: dimension 2");
    // Interior NULs cannot cut the message short.
    boundary::status("n5_test", || Err(Error::invalid_argument("a\0b")));
    assert_eq!(message(), "n5_test: a\\0b");
}

#[test]
fn the_last_error_is_per_thread() {
    let code = boundary::status("n5_test", || Err(Error::invalid_argument("here")));
    assert_eq!(code, N5_ERR_INVALID_ARGUMENT);
    std::thread::spawn(|| {
        assert_eq!(n5_last_error_code(), N5_OK);
        assert_eq!(message(), "");
        boundary::status("n5_test", || Err(Error::invalid_argument("there")));
    })
    .join()
    .unwrap();
    assert_eq!(message(), "n5_test: here");
}

#[test]
fn status_names_cover_every_kind() {
    use ErrorKind::*;
    for kind in [
        InvalidArgument,
        NullPointer,
        InvalidUtf8,
        Io,
        NotFound,
        AlreadyExists,
        InvalidMetadata,
        Unsupported,
        DtypeMismatch,
        ShapeMismatch,
        OutOfBounds,
        BufferSize,
        BufferTooSmall,
        Codec,
        ReadOnly,
        Json,
        InvalidHandle,
        Panic,
        Internal,
    ] {
        // SAFETY: static NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(n5_status_name(kind.code())) };
        assert_ne!(name.to_str().unwrap(), "N5_ERR_UNKNOWN", "{kind:?}");
    }
}

#[test]
fn freed_handles_are_detected_in_debug_builds() {
    let dir = std::env::temp_dir().join(format!("n5-ffi-uaf-{}", std::process::id()));
    let root = c(dir.to_str().unwrap());
    let container = n5_container_open(root.as_ptr(), N5_MODE_CREATE, std::ptr::null());
    assert!(!container.is_null(), "{}", message());
    let dims = [4u64, 4];
    let ds = n5_dataset_create(
        container,
        c("a").as_ptr(),
        2,
        dims.as_ptr(),
        dims.as_ptr(),
        N5_DTYPE_UINT8,
        std::ptr::null(),
    );
    assert!(!ds.is_null(), "{}", message());
    // Free the container first: the dataset keeps it alive.
    n5_container_free(container);
    let mut ndim = 0usize;
    assert_eq!(n5_dataset_ndim(ds, &mut ndim), N5_OK);
    assert_eq!(ndim, 2);
    n5_dataset_free(ds);
    if cfg!(debug_assertions) {
        let mut exists = 0;
        assert_eq!(
            n5_exists(container, c("").as_ptr(), &mut exists),
            N5_ERR_INVALID_HANDLE
        );
        assert!(
            message().contains("not a live container handle"),
            "{}",
            message()
        );
        assert_eq!(n5_dataset_ndim(ds, &mut ndim), N5_ERR_INVALID_HANDLE);
        // A second free is harmless and leaves the last error alone.
        n5_dataset_free(ds);
        n5_container_free(container);
        assert_eq!(n5_last_error_code(), N5_ERR_INVALID_HANDLE);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn text_outputs_follow_the_size_query_convention() {
    let dir = std::env::temp_dir().join(format!("n5-ffi-text-{}", std::process::id()));
    let root = c(dir.to_str().unwrap());
    let container = n5_container_open(root.as_ptr(), N5_MODE_CREATE, std::ptr::null());
    let mut len = usize::MAX;
    let null_buf: *mut c_char = std::ptr::null_mut();
    assert_eq!(
        n5_container_version(container, null_buf, 0, &mut len),
        N5_OK
    );
    assert_eq!(len, 5);
    let mut buf = [b'x' as c_char; 6];
    len = 0;
    assert_eq!(
        n5_container_version(container, buf.as_mut_ptr(), 5, &mut len),
        N5_ERR_BUFFER_TOO_SMALL
    );
    assert_eq!(len, 5);
    assert_eq!(buf[0], b'x' as c_char, "the buffer is untouched");
    assert_eq!(
        n5_container_version(container, buf.as_mut_ptr(), 6, std::ptr::null_mut()),
        N5_OK
    );
    // SAFETY: the call NUL-terminated the buffer.
    assert_eq!(unsafe { CStr::from_ptr(buf.as_ptr()) }, c"4.0.0");
    assert_eq!(
        n5_container_version(container, null_buf, 3, &mut len),
        N5_ERR_NULL_POINTER
    );
    n5_container_free(container);
    std::fs::remove_dir_all(dir).unwrap();
}
