//! The hdmf-zarr corpus (`shared/corpus-hdmf`) where it is not files: every
//! container uploaded byte for byte to S3 (SeaweedFS) below a prefix, and
//! served over plain HTTP (nginx) from its directory. Through the Rust API,
//! every array reads as the manifest says and every reference dataset gives
//! its elements' targets normalised (the checks of tests/nwb_corpus.rs, in
//! tests/common/nwb_check.rs), exactly as many of each as on disk.
//!
//! The servers are started by the tests (n5-testkit) on 127.0.0.1 and
//! stopped with the process; without their binaries a test says so and
//! passes, unless `N5_REQUIRE_SERVERS=1`.

mod common;

use std::path::Path;

use common::hdmf_corpus_dir;
use common::nwb_check::{check_arrays, check_reference_datasets};
use common::object_store::upload_dir;
use common::places::s3_bucket;
use n5::storage::{open, Location};
use n5::{Container, Mode, Options};
use n5_testkit::server_or_skip;
use serde_json::{json, Value};

fn manifest(corpus: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap()
}

/// The arrays and reference elements checked in every container of the
/// manifest, each opened at `base` + its name with `options`; per
/// container, so that a backend that loses one shows where.
fn check_all(manifest: &Value, base: &str, options: &Options) -> Vec<(String, usize, usize)> {
    manifest["containers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, c)| {
            let location = format!("{base}{name}");
            let container = Container::open_with(&location, Mode::Read, options.clone())
                .unwrap_or_else(|e| panic!("{location}: {e}"));
            (
                name.clone(),
                check_arrays(name, c, &container),
                check_reference_datasets(name, c, &container),
            )
        })
        .collect()
}

/// What the same checks give on disk.
fn on_disk(corpus: &Path, manifest: &Value) -> Vec<(String, usize, usize)> {
    let base = format!("{}/", corpus.to_str().unwrap());
    let counts = check_all(manifest, &base, &Options::default());
    let arrays: usize = counts.iter().map(|c| c.1).sum();
    let elements: usize = counts.iter().map(|c| c.2).sum();
    assert!(arrays >= 50 && elements == 20, "{counts:?}");
    counts
}

#[test]
fn the_corpus_reads_as_its_manifest_says_on_s3() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let creds = s3.credentials().unwrap();
    let options = json!({"s3": {"endpoint": s3.endpoint(), "region": s3.region(),
        "access_key_id": creds.access_key_id, "secret_access_key": creds.secret_access_key}})
    .to_string();
    let options = Options::from_json(&options).unwrap();
    let bucket = s3_bucket().unwrap();
    let store = open(
        &Location::parse(&format!("s3://{bucket}")).unwrap(),
        &options.storage,
    )
    .unwrap();
    let top = format!("hdmf-corpus-{}", std::process::id());
    let m = manifest(&corpus);
    for name in m["containers"].as_object().unwrap().keys() {
        upload_dir(&*store, &format!("{top}/{name}"), &corpus.join(name));
    }
    let counts = check_all(&m, &format!("s3://{bucket}/{top}/"), &options);
    assert!(store.delete_dir(&top).unwrap());
    assert_eq!(counts, on_disk(&corpus, &m));
}

#[test]
fn the_corpus_reads_as_its_manifest_says_over_http() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let site = server_or_skip!(n5_testkit::http(&corpus));
    let m = manifest(&corpus);
    let counts = check_all(&m, site.url(), &Options::default());
    assert_eq!(counts, on_disk(&corpus, &m));
}
