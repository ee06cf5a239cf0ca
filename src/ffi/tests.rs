//! Unit tests of the C layer's machinery that C programs cannot reach: the
//! panic boundary, the thread-local last error and the debug-build handle
//! quarantine. The C API as a whole is tested from C in tests/c/; the last
//! test here drives every pointer-taking path once from Rust, with raw
//! blocks, so that Miri (`tests/miri.sh`) can check the C layer's unsafe
//! code, which it cannot reach through a C program.

use std::ffi::{c_char, CStr, CString};

use std::ffi::c_void;

use super::block::*;
use super::boundary;
use super::container::*;
use super::dataset::*;
use super::links::*;
use super::region::*;
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
        Network,
        AccessDenied,
        DanglingLink,
        LinkCycle,
        UnsafePickle,
        Incomplete,
        Panic,
        Internal,
    ] {
        // SAFETY: static NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(n5_status_name(kind.code())) };
        assert_ne!(name.to_str().unwrap(), "N5_ERR_UNKNOWN", "{kind:?}");
        assert_eq!(name.to_str().unwrap(), kind.status_name(), "{kind:?}");
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

/// The text a size-query function writes, through a buffer of exactly the
/// reported length.
fn text(f: impl Fn(*mut c_char, usize, *mut usize) -> n5_status) -> String {
    let mut len = 0usize;
    assert_eq!(f(std::ptr::null_mut(), 0, &mut len), N5_OK);
    let mut buf = vec![0 as c_char; len + 1];
    assert_eq!(f(buf.as_mut_ptr(), buf.len(), &mut len), N5_OK);
    // SAFETY: the call NUL-terminated the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn every_pointer_path_round_trips_with_raw_blocks() {
    let dir = std::env::temp_dir().join(format!("n5-ffi-paths-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = c(dir.to_str().unwrap());
    let raw = c(r#"{"type":"raw"}"#);
    let ctr = n5_container_open(
        root.as_ptr(),
        N5_MODE_CREATE,
        c(r#"{"threads":1}"#).as_ptr(),
    );
    assert!(!ctr.is_null(), "{}", message());
    let (dims, bs) = ([5u64, 7], [2u64, 3]);
    let d = n5_dataset_create(
        ctr,
        c("g/u16").as_ptr(),
        2,
        dims.as_ptr(),
        bs.as_ptr(),
        N5_DTYPE_UINT16,
        raw.as_ptr(),
    );
    assert!(!d.is_null(), "{}", message());

    // Regions: a whole write, an unaligned read.
    let data: Vec<u16> = (0..35).map(|i| i * 1000 + 7).collect();
    let (zero, whole) = ([0u64, 0], [5u64, 7]);
    let ok = |st: n5_status| assert_eq!(st, N5_OK, "{}", message());
    ok(n5_region_write(
        d,
        2,
        zero.as_ptr(),
        whole.as_ptr(),
        N5_DTYPE_UINT16,
        data.as_ptr().cast::<c_void>(),
        70,
    ));
    let mut part = [0u16; 6];
    ok(n5_region_read(
        d,
        2,
        [1u64, 2].as_ptr(),
        [2u64, 3].as_ptr(),
        N5_DTYPE_UINT16,
        part.as_mut_ptr().cast::<c_void>(),
        12,
    ));
    // Dimension 0 varies fastest: element (x, y) is data[x + 5 * y].
    assert_eq!(part, [11007, 12007, 16007, 17007, 21007, 22007]);

    // Blocks: the edge block (2, 2) is 1 x 1.
    let edge = [2u64, 2];
    let (mut shape, mut found, mut one) = ([0u64; 2], 0i32, [0u16; 1]);
    ok(n5_block_read(
        d,
        2,
        edge.as_ptr(),
        N5_DTYPE_UINT16,
        one.as_mut_ptr().cast::<c_void>(),
        2,
        shape.as_mut_ptr(),
        &mut found,
    ));
    assert_eq!((shape, found, one), ([1, 1], 1, [34007]));
    ok(n5_block_write(
        d,
        2,
        edge.as_ptr(),
        [1u64, 1].as_ptr(),
        N5_DTYPE_UINT16,
        [5u16].as_ptr().cast::<c_void>(),
        2,
    ));
    let (mut mode, mut count) = (0i32, 0u64);
    ok(n5_block_info(
        d,
        2,
        edge.as_ptr(),
        &mut mode,
        shape.as_mut_ptr(),
        &mut count,
        &mut found,
    ));
    assert_eq!((mode, shape, count, found), (0, [1, 1], 1, 1));
    ok(n5_block_shape(d, 2, [0u64, 2].as_ptr(), shape.as_mut_ptr()));
    assert_eq!(shape, [2, 1]);
    let mut exists = 0i32;
    ok(n5_block_exists(d, 2, edge.as_ptr(), &mut exists));
    assert_eq!(exists, 1);
    let blocks = text(|b, n, l| n5_block_list(d, b, n, l));
    assert!(blocks.contains("[2,2]"), "{blocks}");
    ok(n5_block_delete(d, 2, edge.as_ptr()));

    // Varlength: 4 elements in a block of nominal shape 2 x 3.
    let four = [1u16, 2, 3, 4];
    ok(n5_block_write_varlength(
        d,
        2,
        edge.as_ptr(),
        [2u64, 3].as_ptr(),
        N5_DTYPE_UINT16,
        four.as_ptr().cast::<c_void>(),
        8,
    ));
    let mut back = [0u16; 4];
    ok(n5_block_read_varlength(
        d,
        2,
        edge.as_ptr(),
        N5_DTYPE_UINT16,
        back.as_mut_ptr().cast::<c_void>(),
        8,
        &mut count,
        shape.as_mut_ptr(),
        &mut found,
    ));
    assert_eq!((back, count, shape, found), (four, 4, [2, 3], 1));

    // Metadata getters.
    let mut n = 0usize;
    ok(n5_dataset_ndim(d, &mut n));
    assert_eq!(n, 2);
    let mut out = [0u64; 2];
    ok(n5_dataset_dimensions(d, 2, out.as_mut_ptr()));
    assert_eq!(out, dims);
    ok(n5_dataset_block_size(d, 2, out.as_mut_ptr()));
    assert_eq!(out, bs);
    ok(n5_dataset_grid_shape(d, 2, out.as_mut_ptr()));
    assert_eq!(out, [3, 3]);
    let mut t = 0;
    ok(n5_dataset_dtype(d, &mut t));
    assert_eq!(t, N5_DTYPE_UINT16);
    assert_eq!(n5_dtype_from_name(c("uint16").as_ptr()), N5_DTYPE_UINT16);
    assert_eq!(text(|b, n, l| n5_dataset_path(d, b, n, l)), "g/u16");
    assert!(text(|b, n, l| n5_dataset_compression(d, b, n, l)).contains("raw"));
    ok(n5_dataset_set_dimensions(d, 2, [6u64, 7].as_ptr()));

    // Strings and objects.
    let one_dim = [1u64];
    let s = n5_dataset_create(
        ctr,
        c("g/s").as_ptr(),
        1,
        [2u64].as_ptr(),
        [2u64].as_ptr(),
        N5_DTYPE_STRING,
        raw.as_ptr(),
    );
    let packed = b"ab\0\xc3\xa9\0";
    ok(n5_block_write_strings(
        s,
        1,
        [0u64].as_ptr(),
        [2u64].as_ptr(),
        packed.as_ptr().cast::<c_char>(),
        packed.len(),
    ));
    let (mut strings, mut len, mut nstr) = ([0 as c_char; 16], 0usize, 0usize);
    ok(n5_block_read_strings(
        s,
        1,
        [0u64].as_ptr(),
        strings.as_mut_ptr(),
        16,
        &mut len,
        &mut nstr,
        shape.as_mut_ptr(),
        &mut found,
    ));
    assert_eq!((len, nstr, found), (packed.len(), 2, 1));
    let o = n5_dataset_create(
        ctr,
        c("g/o").as_ptr(),
        1,
        one_dim.as_ptr(),
        one_dim.as_ptr(),
        N5_DTYPE_OBJECT,
        raw.as_ptr(),
    );
    ok(n5_block_write_object(
        o,
        1,
        [0u64].as_ptr(),
        b"xyz".as_ptr().cast::<c_void>(),
        3,
    ));
    let mut bytes = [0u8; 8];
    ok(n5_block_read_object(
        o,
        1,
        [0u64].as_ptr(),
        bytes.as_mut_ptr().cast::<c_void>(),
        8,
        &mut len,
        &mut found,
    ));
    assert_eq!((&bytes[..len], found), (&b"xyz"[..], 1));

    // Groups, listings and attributes.
    ok(n5_group_create(ctr, c("h").as_ptr()));
    ok(n5_attributes_set(
        ctr,
        c("h").as_ptr(),
        c(r#"{"a":[1,2]}"#).as_ptr(),
    ));
    ok(n5_attribute_set(
        ctr,
        c("h").as_ptr(),
        c("b/c").as_ptr(),
        c("\"x\"").as_ptr(),
    ));
    let key = c("a[1]");
    assert_eq!(
        text(|b, n, l| n5_attribute_get(ctr, c("h").as_ptr(), key.as_ptr(), b, n, l)),
        "2"
    );
    assert!(text(|b, n, l| n5_attributes_get(ctr, c("h").as_ptr(), b, n, l)).contains("\"c\""));
    ok(n5_attribute_remove(ctr, c("h").as_ptr(), c("a").as_ptr()));
    assert_eq!(
        text(|b, n, l| n5_list(ctr, c("").as_ptr(), b, n, l)),
        r#"["g","h"]"#
    );
    assert!(text(|b, n, l| n5_list_recursive(ctr, c("").as_ptr(), b, n, l)).contains("g/u16"));
    let mut names = [0 as c_char; 32];
    ok(n5_list_names(
        ctr,
        c("g").as_ptr(),
        0,
        names.as_mut_ptr(),
        32,
        &mut len,
        &mut nstr,
    ));
    assert_eq!((len, nstr), (8, 3)); // "o\0s\0u16\0"
    let (mut e, mut is_ds) = (0i32, 0i32);
    ok(n5_exists(ctr, c("g/s").as_ptr(), &mut e));
    ok(n5_dataset_exists(ctr, c("g/s").as_ptr(), &mut is_ds));
    assert_eq!((e, is_ds), (1, 1));
    let mut m = -1;
    ok(n5_container_mode(ctr, &mut m));
    assert_eq!(m, N5_MODE_CREATE);
    assert!(text(|b, n, l| n5_container_options(ctr, b, n, l)).contains("threads"));
    assert_eq!(
        text(|b, n, l| n5_container_root(ctr, b, n, l)),
        dir.to_str().unwrap()
    );
    ok(n5_remove(ctr, c("h").as_ptr()));
    let (mut removed, mut bytes) = (u64::MAX, u64::MAX);
    ok(n5_container_remove_stale_temporaries(
        ctr,
        0,
        &mut removed,
        &mut bytes,
    ));
    assert_eq!((removed, bytes), (0, 0));

    // A dataset opened again outlives its container handle.
    let again = n5_dataset_open(ctr, c("g/u16").as_ptr());
    n5_container_free(ctr);
    ok(n5_region_read(
        again,
        2,
        zero.as_ptr(),
        [1u64, 1].as_ptr(),
        N5_DTYPE_UINT16,
        one.as_mut_ptr().cast::<c_void>(),
        2,
    ));
    assert_eq!(one, [7]);
    for h in [d, s, o, again] {
        n5_dataset_free(h);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn link_functions_round_trip_through_pointers() {
    // In memory: Miri runs this test, and it cannot make the hard links a
    // Zarr container's create-only writes use on disk.
    let options = crate::Options::from_json(r#"{"threads":1,"format":"zarr3"}"#).unwrap();
    let store = std::sync::Arc::new(crate::storage::MemoryStore::new());
    let container =
        crate::Container::open_store(store, "memory", crate::Mode::Create, options).unwrap();
    let ctr = super::handle::into_handle::<n5_container>(container);
    let ok = |st: n5_status| assert_eq!(st, N5_OK, "{}", message());
    ok(n5_group_create(ctr, c("a/target").as_ptr()));
    ok(n5_group_create(ctr, c("g").as_ptr()));
    ok(n5_link_create(
        ctr,
        c("g").as_ptr(),
        c("l").as_ptr(),
        c(".").as_ptr(),
        c("a/target").as_ptr(),
    ));
    let listed = text(|b, n, l| n5_links_list(ctr, c("g").as_ptr(), b, n, l));
    assert_eq!(
        listed,
        format!(
            r#"[{{"name":"l","source":".","path":"/a/target","target":{{"location":"{}","path":"/a/target","kind":"group"}}}}]"#,
            "memory"
        )
    );
    let resolved = text(|b, n, l| n5_link_resolve(ctr, c("/g/l").as_ptr(), b, n, l));
    assert!(resolved.ends_with(r#""path":"/a/target","kind":"group","hops":1}"#));
    let reference = c(r#"{"_REFERENCE": {"source": ".", "path": "/g/l"}}"#);
    let target =
        text(|b, n, l| n5_reference_resolve(ctr, c("g").as_ptr(), reference.as_ptr(), b, n, l));
    assert!(target.ends_with(r#""path":"/a/target","kind":"group"}"#));
    let mut len = 0usize;
    assert_eq!(
        n5_reference_resolve(
            ctr,
            c("g").as_ptr(),
            c("{").as_ptr(),
            std::ptr::null_mut(),
            0,
            &mut len
        ),
        N5_ERR_JSON
    );
    n5_container_free(ctr);
}
