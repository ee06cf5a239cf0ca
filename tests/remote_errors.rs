//! Bad credentials and bad places, through the C API as a C program sees
//! them: a wrong secret is `N5_ERR_ACCESS_DENIED` naming the credentials
//! source and never the secret; a missing bucket is `N5_ERR_NOT_FOUND`; a
//! write mode on plain HTTP is `N5_ERR_READ_ONLY`; `n5_list` over plain
//! HTTP is `N5_ERR_UNSUPPORTED`; `..` in a path or a location never leaves
//! the container's prefix (`N5_ERR_INVALID_ARGUMENT` above it, and nothing
//! written outside it).

mod common;

use std::ffi::{CStr, CString};

use common::places::{object_stores, options_json, Kind};
use common::Scratch;
use n5::ffi::container::{
    n5_container_free, n5_container_open, n5_exists, n5_group_create, n5_list,
};
use n5::ffi::status::{n5_last_error_code, n5_last_error_message};
use n5::ffi::{
    n5_container, N5_ERR_ACCESS_DENIED, N5_ERR_INVALID_ARGUMENT, N5_ERR_NOT_FOUND,
    N5_ERR_READ_ONLY, N5_ERR_UNSUPPORTED, N5_MODE_CREATE, N5_MODE_READ, N5_MODE_READ_WRITE, N5_OK,
};
use n5::storage::Location;
use n5::{Container, Mode, Options};
use serde_json::{json, Value};

fn message() -> String {
    // SAFETY: n5_last_error_message returns a NUL-terminated string owned
    // by the library, valid until this thread's next call.
    unsafe { CStr::from_ptr(n5_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// `n5_container_open`; the handle or the status with its message.
fn open(location: &str, mode: i32, options: &Value) -> Result<*mut n5_container, (i32, String)> {
    let l = CString::new(location).unwrap();
    let o = CString::new(options.to_string()).unwrap();
    let c = n5_container_open(l.as_ptr(), mode, o.as_ptr());
    if c.is_null() {
        Err((n5_last_error_code(), message()))
    } else {
        Ok(c)
    }
}

#[test]
fn wrong_credentials_and_missing_buckets() {
    for place in object_stores("bad-places") {
        let options = Value::Object(options_json(&place));
        let (scheme, rest) = place.location.split_once("://").unwrap();
        let bucket = rest.split('/').next().unwrap();
        // A bucket that does not exist, in every mode.
        let missing = place.location.replacen(bucket, "n5-no-such-bucket", 1);
        for mode in [N5_MODE_READ, N5_MODE_READ_WRITE, N5_MODE_CREATE] {
            let (code, m) = open(&missing, mode, &options).unwrap_err();
            assert_eq!(code, N5_ERR_NOT_FOUND, "{scheme}: {m}");
            assert!(m.contains("n5-no-such-bucket"), "{scheme}: {m}");
        }
        if place.kind != Kind::S3 {
            continue; // fake-gcs-server accepts any credentials
        }
        // A wrong secret: refused, naming the source, never the secret.
        let mut wrong = options.clone();
        wrong["s3"]["secret_access_key"] = json!("not-the-secret-8d3f");
        let (code, m) = open(&place.location, N5_MODE_CREATE, &wrong).unwrap_err();
        assert_eq!(code, N5_ERR_ACCESS_DENIED, "{m}");
        assert!(
            m.contains("s3.access_key_id") && m.contains("SignatureDoesNotMatch"),
            "{m}"
        );
        assert!(!m.contains("not-the-secret-8d3f"), "{m}");
        // The same from the environment, in a child process.
        let out = common::child_test(
            "wrong_credentials_from_the_environment_child",
            "N5_TEST_ENV_LOCATION",
            &format!(
                "{}|{}",
                place.location,
                options["s3"]["endpoint"].as_str().unwrap()
            ),
        )
        .env(
            "AWS_ACCESS_KEY_ID",
            options["s3"]["access_key_id"].as_str().unwrap(),
        )
        .env("AWS_SECRET_ACCESS_KEY", "env-secret-5a1c")
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Run by `wrong_credentials_and_missing_buckets` in a child process with
/// wrong credentials in its environment.
#[test]
fn wrong_credentials_from_the_environment_child() {
    let Ok(spec) = std::env::var("N5_TEST_ENV_LOCATION") else {
        return;
    };
    let (location, endpoint) = spec.split_once('|').unwrap();
    let options = json!({"s3": {"endpoint": endpoint}});
    let (code, m) = open(location, N5_MODE_READ, &options).unwrap_err();
    assert_eq!(code, N5_ERR_ACCESS_DENIED, "{m}");
    assert!(m.contains("AWS_ACCESS_KEY_ID"), "{m}");
    assert!(!m.contains("env-secret-5a1c"), "{m}");
}

#[test]
fn plain_http_is_read_only_and_cannot_list() {
    let s = Scratch::new("http-errors");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    c.create_group("g/h").unwrap();
    let site = n5_testkit::server_or_skip!(n5_testkit::http(s.path()));
    let location = site.url_for("c.n5");
    for mode in [N5_MODE_READ_WRITE, N5_MODE_CREATE] {
        let (code, m) = open(&location, mode, &json!({})).unwrap_err();
        assert_eq!(code, N5_ERR_READ_ONLY, "{m}");
    }
    let c = open(&location, N5_MODE_READ, &json!({})).unwrap();
    let path = CString::new("g").unwrap();
    let mut len = 0usize;
    assert_eq!(
        n5_list(c, path.as_ptr(), std::ptr::null_mut(), 0, &mut len),
        N5_ERR_UNSUPPORTED
    );
    assert!(message().contains("cannot list"), "{}", message());
    // Everything else works without listing.
    let mut exists = 0;
    assert_eq!(n5_exists(c, path.as_ptr(), &mut exists), N5_OK);
    let _ = exists; // a group without attributes.json cannot be seen over HTTP
    assert_eq!(n5_group_create(c, path.as_ptr()), N5_ERR_READ_ONLY);
    n5_container_free(c);
}

#[test]
fn dot_dot_never_leaves_the_prefix() {
    for place in object_stores("dot-dot") {
        let options = Value::Object(options_json(&place));
        let c = open(&place.location, N5_MODE_CREATE, &options).unwrap();
        let mut exists = 0;
        for escaping in ["..", "../x", "a/../..", "/a/b/../../../etc"] {
            let p = CString::new(escaping).unwrap();
            assert_eq!(
                n5_exists(c, p.as_ptr(), &mut exists),
                N5_ERR_INVALID_ARGUMENT,
                "{escaping}"
            );
            assert_eq!(
                n5_group_create(c, p.as_ptr()),
                N5_ERR_INVALID_ARGUMENT,
                "{escaping}"
            );
            assert!(
                message().contains("above the container root"),
                "{}",
                message()
            );
        }
        let inside = CString::new("a/../b/./c/..").unwrap();
        assert_eq!(n5_group_create(c, inside.as_ptr()), N5_OK, "{}", message());
        n5_container_free(c);
        // Above the bucket in the location itself.
        let escaping = format!("{}/../../../..", place.location);
        let (code, _) = open(&escaping, N5_MODE_CREATE, &options).unwrap_err();
        assert_eq!(code, N5_ERR_INVALID_ARGUMENT);
        // Nothing was written outside the container's prefix.
        let (scheme, rest) = place.location.split_once("://").unwrap();
        let (bucket, prefix) = rest.split_once('/').unwrap();
        let opts = Options::from_json(&options.to_string()).unwrap();
        let root = n5::storage::open(
            &Location::parse(&format!("{scheme}://{bucket}")).unwrap(),
            &opts.storage,
        )
        .unwrap();
        // The bucket's top level holds the tests' own prefixes only (markers
        // show as directories there), and the container's prefix only what
        // was created inside.
        let top = root.list("").unwrap().unwrap();
        for name in top.dirs.iter().chain(&top.files) {
            assert!(name.contains('-'), "written outside {prefix}: {name}");
        }
        let (test_dir, _) = prefix.split_once('/').unwrap();
        assert_eq!(root.list(test_dir).unwrap().unwrap().dirs, ["c.n5"]);
        assert_eq!(root.list(prefix).unwrap().unwrap().dirs, ["b"]);
        let c = Container::open_with(&place.location, Mode::Read, opts).unwrap();
        assert_eq!(c.list("").unwrap(), ["b"]);
    }
}
