//! A library built without the cargo feature `hdf5` still tells HDF5
//! locations apart (by prefix, signature, suffix and option) and refuses
//! every one with `N5_ERR_UNSUPPORTED` naming the feature, before anything
//! is created or read; other containers open as before.
#![cfg(not(feature = "hdf5"))]

mod common;

use std::ffi::CString;

use n5::ffi::container::{n5_container_free, n5_container_open};
use n5::ffi::status::{n5_last_error_code, n5_last_error_message};
use n5::ffi::{N5_ERR_UNSUPPORTED, N5_MODE_CREATE, N5_MODE_READ};
use n5::{Container, ErrorKind, Mode, Options};

const MESSAGE: &str = "built without HDF5 support: cargo feature hdf5";

#[test]
fn every_hdf5_location_names_the_feature() {
    let dir = common::Scratch::new("hdf5-without");
    // A file with the HDF5 signature after a user block, named anything.
    let mut signed = vec![0u8; 512];
    signed.extend_from_slice(b"\x89HDF\r\n\x1a\n");
    signed.resize(2048, 0);
    std::fs::write(dir.join("vol.bin"), &signed).unwrap();
    let at = |name: &str| dir.join(name).display().to_string();
    for (root, mode, options) in [
        (at("new.h5"), Mode::Create, Options::default()),
        (at("new.HDF5"), Mode::Read, Options::default()),
        (at("vol.bin"), Mode::Read, Options::default()),
        (
            format!("h5:{}", at("other")),
            Mode::Create,
            Options::default(),
        ),
        (
            format!("hdf5:file://{}", at("other")),
            Mode::Read,
            Options::default(),
        ),
        (
            at("plain"),
            Mode::Create,
            Options::from_json(r#"{"format": "hdf5"}"#).unwrap(),
        ),
        (
            "h5:s3://bucket/data".to_string(),
            Mode::Read,
            Options::default(),
        ),
        (
            "gs://bucket/data.h5".to_string(),
            Mode::Read,
            Options::default(),
        ),
    ] {
        let e = Container::open_with(&root, mode, options).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{root}: {e}");
        assert!(e.message().contains(MESSAGE), "{root}: {e}");
    }
    // Nothing was created.
    for name in ["new.h5", "other", "plain"] {
        assert!(!dir.join(name).exists(), "{name}");
    }
    // The C API gives the status and the message.
    let root = CString::new(at("new.h5")).unwrap();
    let c = n5_container_open(root.as_ptr(), N5_MODE_CREATE, std::ptr::null());
    assert!(c.is_null());
    assert_eq!(n5_last_error_code(), N5_ERR_UNSUPPORTED);
    // SAFETY: the library's NUL-terminated message, read before the next call.
    let message = unsafe { std::ffi::CStr::from_ptr(n5_last_error_message()) };
    assert!(message.to_string_lossy().contains(MESSAGE));
    // Containers of the other formats open as before.
    let n5 = CString::new(at("vol.n5")).unwrap();
    let c = n5_container_open(n5.as_ptr(), N5_MODE_CREATE, std::ptr::null());
    assert!(!c.is_null());
    n5_container_free(c);
    let c = n5_container_open(n5.as_ptr(), N5_MODE_READ, std::ptr::null());
    assert!(!c.is_null());
    n5_container_free(c);
}
