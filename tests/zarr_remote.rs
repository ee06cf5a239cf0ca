//! The peer-written Zarr corpus (`../shared/corpus-zarr`) through S3 and
//! through the C API: the five containers uploaded byte for byte to
//! SeaweedFS without directory markers, as `aws s3 cp --recursive` leaves
//! them, open in their format and read back to the manifest's checksums
//! (every array, and every group's attributes) through the Rust API; and
//! through the C API, from S3 and from the local disk, as a C program
//! would: `n5_container_open` with the location and its options,
//! `n5_container_format`, `n5_dataset_open`, `n5_region_read` of the whole
//! array, `n5_dataset_metadata`, `n5_dataset_shard_shape`.
//!
//! The server is started by the test (n5-testkit); without SeaweedFS the
//! S3 test says so and passes, unless `N5_REQUIRE_SERVERS=1`.

mod common;

use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::Mutex;

use common::places::s3_bucket;
use n5::storage::Location;
use n5::{Container, Mode, Options};
use n5_testkit::server_or_skip;
use serde_json::Value;

fn corpus_zarr_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus-zarr")
}

fn manifest() -> Value {
    let text = std::fs::read(corpus_zarr_dir().join("manifest.json")).unwrap();
    serde_json::from_slice(&text).unwrap()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn reversed(v: &[u64]) -> Vec<u64> {
    v.iter().rev().copied().collect()
}

/// The Rust checks of the container `name` at `location`: its format,
/// every group's attributes, every array by checksum.
fn check_rust(location: &str, options: &Options, name: &str, m: &Value) {
    let c = Container::open_with(location, Mode::Read, options.clone())
        .unwrap_or_else(|e| panic!("{location}: {e}"));
    let want = if m["containers"][name]["zarr_format"] == 3 {
        "zarr3"
    } else {
        "zarr2"
    };
    assert_eq!(c.format().name(), want, "{location}");
    for g in m["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["container"] == name)
    {
        let path = g["path"].as_str().unwrap();
        let attrs = match &g["attributes"] {
            Value::Null => Value::Object(Default::default()),
            a => a.clone(),
        };
        assert_eq!(c.attributes(path).unwrap(), attrs, "{location}/{path}");
    }
    for a in m["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["container"] == name)
    {
        let path = a["path"].as_str().unwrap();
        let d = c
            .open_dataset(path)
            .unwrap_or_else(|e| panic!("{location}/{path}: {e}"));
        let dims = d.attributes().dimensions.clone();
        let n: u64 = dims.iter().product();
        let mut out = vec![0u8; n as usize * d.data_type().size()];
        d.read_region(&vec![0; dims.len()], &dims, &mut out)
            .unwrap_or_else(|e| panic!("{location}/{path}: {e}"));
        assert_eq!(common::sha256(&out), a["array_sha256"], "{location}/{path}");
    }
}

fn c_error() -> String {
    // SAFETY: n5_last_error_message returns a NUL-terminated string owned
    // by the library, valid until the thread's next call.
    unsafe { CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// The text a C function of the size-query convention gives.
fn c_text(f: impl Fn(*mut std::ffi::c_char, usize, *mut usize) -> i32) -> String {
    let mut len = 0usize;
    assert_eq!(
        f(std::ptr::null_mut(), 0, &mut len),
        n5::ffi::N5_OK,
        "{}",
        c_error()
    );
    let mut buf = vec![0u8; len + 1];
    assert_eq!(
        f(buf.as_mut_ptr().cast(), buf.len(), &mut len),
        n5::ffi::N5_OK
    );
    String::from_utf8(buf[..len].to_vec()).unwrap()
}

/// The C checks of the container `name` at `location`: its format, every
/// array's whole region by checksum, metadata document and shard shape.
/// Returns how many arrays were checked.
fn check_c(location: &str, options_json: &str, name: &str, m: &Value) -> usize {
    use n5::ffi::{container::*, dataset::*, region::*, status::n5_dtype_size};
    let loc = CString::new(location).unwrap();
    let opts = CString::new(options_json).unwrap();
    // The C functions are safe to call from Rust; every pointer passed
    // points at a live, NUL-terminated string or a buffer of the length
    // given with it, and each handle is freed once, after its last use.
    let c = n5_container_open(loc.as_ptr(), n5::ffi::N5_MODE_READ, opts.as_ptr());
    assert!(!c.is_null(), "n5_container_open({location}): {}", c_error());
    let want = if m["containers"][name]["zarr_format"] == 3 {
        "zarr3"
    } else {
        "zarr2"
    };
    assert_eq!(c_text(|b, n, l| n5_container_format(c, b, n, l)), want);
    let mut checked = 0;
    for a in m["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["container"] == name)
    {
        let path = a["path"].as_str().unwrap();
        let cpath = CString::new(path).unwrap();
        let d = n5_dataset_open(c, cpath.as_ptr());
        assert!(!d.is_null(), "{location}/{path}: {}", c_error());
        let (mut ndim, mut dtype) = (0usize, 0);
        assert_eq!(n5_dataset_ndim(d, &mut ndim), n5::ffi::N5_OK);
        assert_eq!(n5_dataset_dtype(d, &mut dtype), n5::ffi::N5_OK);
        let mut dims = vec![0u64; ndim];
        assert_eq!(
            n5_dataset_dimensions(d, ndim, dims.as_mut_ptr()),
            n5::ffi::N5_OK
        );
        assert_eq!(dims, reversed(&u64s(&a["shape"])), "{path}");
        let mut shard = vec![0u64; ndim];
        assert_eq!(
            n5_dataset_shard_shape(d, ndim, shard.as_mut_ptr()),
            n5::ffi::N5_OK
        );
        let want_shard = match &a["shard_shape"] {
            Value::Null => u64s(&a["chunk_shape"]),
            s => u64s(s),
        };
        assert_eq!(shard, reversed(&want_shard), "{path}");
        let offset = vec![0u64; ndim];
        let mut buf = vec![0u8; dims.iter().product::<u64>() as usize * n5_dtype_size(dtype)];
        let status = n5_region_read(
            d,
            ndim,
            offset.as_ptr(),
            dims.as_ptr(),
            dtype,
            buf.as_mut_ptr().cast(),
            buf.len(),
        );
        assert_eq!(status, n5::ffi::N5_OK, "{location}/{path}: {}", c_error());
        assert_eq!(common::sha256(&buf), a["array_sha256"], "{location}/{path}");
        let doc: Value =
            serde_json::from_str(&c_text(|b, n, l| n5_dataset_metadata(d, b, n, l))).unwrap();
        assert_eq!(doc, a["metadata"], "{location}/{path}");
        n5_dataset_free(d);
        checked += 1;
    }
    n5_container_free(c);
    checked
}

#[test]
fn the_zarr_corpus_reads_through_the_c_api() {
    let m = manifest();
    let mut n = 0;
    for name in m["containers"].as_object().unwrap().keys() {
        let prefix = m["containers"][name]["open_prefix"].as_str().unwrap();
        let location = format!("{prefix}{}", corpus_zarr_dir().join(name).display());
        n += check_c(&location, "{}", name, &m);
    }
    assert_eq!(n, m["arrays"].as_array().unwrap().len());
}

#[test]
fn the_zarr_corpus_reads_back_from_s3() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let cred = s3.credentials().unwrap();
    let options = serde_json::json!({"s3": {"endpoint": s3.endpoint(), "region": s3.region(),
        "access_key_id": cred.access_key_id, "secret_access_key": cred.secret_access_key}});
    let options_text = options.to_string();
    let opts = Options::from_json(&options_text).unwrap();
    let bucket_url = format!("s3://{}", s3_bucket().unwrap());
    let bucket = n5::storage::open(&Location::parse(&bucket_url).unwrap(), &opts.storage).unwrap();
    let m = manifest();
    let mut n = 0;
    for name in m["containers"].as_object().unwrap().keys() {
        // Upload, one object per file, 16 at a time; no directory markers.
        let dir = corpus_zarr_dir().join(name);
        let todo = Mutex::new(common::files(&dir));
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| loop {
                    let Some(rel) = todo.lock().unwrap().pop() else {
                        return;
                    };
                    let key = format!("corpus-zarr/{name}/{}", rel.to_str().unwrap());
                    bucket
                        .put(&key, &[&std::fs::read(dir.join(&rel)).unwrap()])
                        .unwrap();
                });
            }
        });
        let prefix = m["containers"][name]["open_prefix"].as_str().unwrap();
        let location = format!("{prefix}{bucket_url}/corpus-zarr/{name}");
        check_rust(&location, &opts, name, &m);
        n += check_c(&location, &options_text, name, &m);
    }
    assert_eq!(n, m["arrays"].as_array().unwrap().len());
    eprintln!("{bucket_url}/corpus-zarr: all {n} arrays match through Rust and C");
}
