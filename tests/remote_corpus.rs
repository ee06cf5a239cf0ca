//! The peer-written corpus (`../shared/corpus`) through every network
//! backend: uploaded byte for byte to S3 (SeaweedFS) and to Google Cloud
//! Storage (fake-gcs-server) without directory markers, as `aws s3 cp
//! --recursive` and `gsutil cp -r` leave it, and served over HTTP and HTTPS
//! by nginx. Every dataset and every group's attributes of the five
//! containers read back to the manifest's hashes through the Rust API, and
//! through the C API (`n5_container_open` with the location and its
//! options JSON, `n5_region_read`, `n5_attributes_get`).
//!
//! The servers are started by the tests (n5-testkit); without their
//! binaries a test says so and passes, unless `N5_REQUIRE_SERVERS=1`.

mod common;

use std::sync::Mutex;

use common::corpus_check::{check_against_manifest, check_through_c_api};
use common::corpus_dir;
use common::places::{gcs_bucket, s3_bucket};
use n5::storage::{open, Location, Store};
use n5::{Container, Mode, Options};
use n5_testkit::server_or_skip;

const CONTAINERS: [&str; 5] = [
    "tensorstore.n5",
    "z5py.n5",
    "zarr2.n5",
    "java-n5.n5",
    "rust-n5.n5",
];

/// Upload the corpus container `name` below `prefix` of `store`, one object
/// per file, 16 at a time; no directory markers.
fn upload(store: &dyn Store, prefix: &str, name: &str) {
    let dir = corpus_dir().join(name);
    let todo = Mutex::new(common::files(&dir));
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| loop {
                let Some(rel) = todo.lock().unwrap().pop() else {
                    return;
                };
                let key = format!("{prefix}/{name}/{}", rel.to_str().unwrap());
                let bytes = std::fs::read(dir.join(&rel)).unwrap();
                store.put(&key, &[&bytes]).unwrap();
            });
        }
    });
}

/// Upload the corpus to `bucket_url` (`s3://b` or `gs://b`) and check every
/// container through the Rust and the C API.
fn check_bucket(bucket_url: &str, options: serde_json::Value) {
    let options_text = options.to_string();
    let opts = Options::from_json(&options_text).unwrap();
    let bucket = open(&Location::parse(bucket_url).unwrap(), &opts.storage).unwrap();
    for name in CONTAINERS {
        upload(&*bucket, "corpus", name);
        let location = format!("{bucket_url}/corpus/{name}");
        let c = Container::open_with(&location, Mode::Read, opts.clone()).unwrap();
        check_against_manifest(&c, name);
        let n = check_through_c_api(&location, &options_text, name);
        eprintln!(
            "{location}: the manifest's {n} whole arrays and groups also match through the C API"
        );
    }
}

#[test]
fn the_corpus_reads_back_from_s3() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let c = s3.credentials().unwrap();
    check_bucket(
        &format!("s3://{}", s3_bucket().unwrap()),
        serde_json::json!({"s3": {"endpoint": s3.endpoint(), "region": s3.region(),
            "access_key_id": c.access_key_id, "secret_access_key": c.secret_access_key}}),
    );
}

#[test]
fn the_corpus_reads_back_from_gcs() {
    let gcs = server_or_skip!(n5_testkit::gcs());
    check_bucket(
        &format!("gs://{}", gcs_bucket().unwrap()),
        serde_json::json!({"gcs": {"endpoint": gcs.endpoint()}}),
    );
}

#[test]
fn the_corpus_reads_back_over_http() {
    let site = server_or_skip!(n5_testkit::http(&corpus_dir()));
    for name in CONTAINERS {
        let location = site.url_for(name);
        let c = Container::open(&location, Mode::Read).unwrap();
        check_against_manifest(&c, name);
        check_through_c_api(&location, "{}", name);
    }
}

/// Over HTTPS with a CA made for the test: trusted through `SSL_CERT_FILE`
/// the corpus reads back; without it the server is refused with a message
/// that says how to trust it. Each case runs in a child process, since
/// `SSL_CERT_FILE` is read from the environment.
#[test]
fn the_corpus_reads_back_over_https_with_a_trusted_ca_only() {
    const VAR: &str = "N5_TEST_HTTPS_CASE";
    if let Ok(case) = std::env::var(VAR) {
        let (mode, location) = case.split_once(' ').unwrap();
        match mode {
            "trusted" => {
                let c = Container::open(location, Mode::Read).unwrap();
                check_against_manifest(&c, "java-n5.n5");
            }
            _ => {
                let e = Container::open(location, Mode::Read).unwrap_err();
                assert_eq!(e.kind(), n5::ErrorKind::Network, "{e}");
                assert!(e.message().contains("SSL_CERT_FILE"), "{e}");
                assert!(e.message().contains(location), "{e}");
            }
        }
        return;
    }
    let site = server_or_skip!(n5_testkit::https(&corpus_dir()));
    let location = site.url_for("java-n5.n5");
    for (mode, ca) in [
        ("trusted", Some(site.ca_pem().unwrap())),
        ("untrusted", None),
    ] {
        let mut child = common::child_test(
            "the_corpus_reads_back_over_https_with_a_trusted_ca_only",
            VAR,
            &format!("{mode} {location}"),
        );
        child.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
        if let Some(ca) = ca {
            child.env("SSL_CERT_FILE", ca);
        }
        let out = child.output().unwrap();
        assert!(
            out.status.success(),
            "{mode}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
