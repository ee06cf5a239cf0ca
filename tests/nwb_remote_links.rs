//! External links of hdmf-zarr containers followed where the containers
//! are not files: the hdmf-zarr corpus (`shared/corpus-hdmf`) uploaded
//! byte for byte to S3 (SeaweedFS) below a prefix, and served over plain
//! HTTP (nginx). Through the C API, every link of the manifest lists and
//! resolves to the sibling container at the same prefix or URL directory
//! (as on disk, where hdmf-zarr itself resolves remote external links
//! inside the linking container and fails), numeric datasets read through
//! links to the manifest's hashes, and a `source` whose `..` climbs above
//! the bucket or the host's root is `N5_ERR_INVALID_ARGUMENT`; a missing
//! sibling is `N5_ERR_DANGLING_LINK`; writers creating links in one group
//! at once on S3 lose none.
//!
//! The servers are started by the tests (n5-testkit) on 127.0.0.1 and
//! stopped with the process; without their binaries a test says so and
//! passes, unless `N5_REQUIRE_SERVERS=1`.

mod common;

use common::capi::{Failure, C};
use common::object_store::upload_dir;
use common::places::s3_bucket;
use common::{copy_dir, hdmf_corpus_dir, sha256, Scratch};
use n5::ffi::{N5_ERR_DANGLING_LINK, N5_ERR_INVALID_ARGUMENT, N5_MODE_CREATE, N5_MODE_READ};
use n5::storage::{open, Location};
use n5::Options;
use n5_testkit::server_or_skip;
use serde_json::{json, Value};

const CONTAINERS: [&str; 6] = [
    "nwb-links.nwb.zarr",
    "nwb-links-v2.nwb.zarr",
    "nwb-external.nwb.zarr",
    "nwb-external-target.nwb.zarr",
    "nwb-external-v2.nwb.zarr",
    "nwb-external-target-v2.nwb.zarr",
];

#[track_caller]
fn fails<T: std::fmt::Debug>(r: Result<T, Failure>, status: i32, needle: &str) {
    match r {
        Ok(v) => panic!("expected status {status}, got {v:?}"),
        Err((s, m)) => {
            assert_eq!(s, status, "{m}");
            assert!(m.contains(needle), "{m:?} does not mention {needle:?}");
        }
    }
}

/// Every link of the manifest through the containers at `base` (a URL
/// ending with `/`): listed and resolved to the sibling at `base`, and
/// numeric datasets read through links to their hashes. Returns how many
/// links were checked.
fn check_links(base: &str, options: &str, manifest: &Value) -> usize {
    let mut checked = 0;
    for name in CONTAINERS {
        let cm = &manifest["containers"][name];
        let c = C::open(&format!("{base}{name}"), N5_MODE_READ, options).unwrap();
        for l in cm["links"].as_array().unwrap() {
            let group = l["group"].as_str().unwrap();
            let resolved = &l["resolved"];
            let location = format!("{base}{}", resolved["container"].as_str().unwrap());
            let kind = if resolved["kind"] == "array" {
                "dataset"
            } else {
                "group"
            };
            let target = json!({"location": location, "path": resolved["path"], "kind": kind});
            let listed = c.links(group).unwrap();
            let entry = listed
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == l["name"])
                .unwrap_or_else(|| panic!("{name}{group}: {listed}"));
            assert_eq!(entry["target"], target, "{name}{group}");
            let path = format!("{group}/{}", l["name"].as_str().unwrap());
            let r = c.resolve(&path).unwrap();
            assert_eq!(r["location"], target["location"], "{name}{path}");
            assert_eq!(r["path"], target["path"], "{name}{path}");
            // Listing works here (S3 lists; over HTTP the consolidated
            // metadata names the nodes) and has the link.
            let members = c.list(group).unwrap();
            assert!(members.contains(&l["name"].as_str().unwrap().to_string()));
            if resolved["array_kind"] == "numeric" {
                let d = c.open_dataset(&path).unwrap();
                assert_eq!(
                    sha256(&d.read_all().unwrap()),
                    resolved["sha256"].as_str().unwrap(),
                    "{name}{path}"
                );
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn external_links_follow_to_the_sibling_on_s3() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let creds = s3.credentials().unwrap();
    let options = json!({"s3": {"endpoint": s3.endpoint(), "region": s3.region(),
        "access_key_id": creds.access_key_id, "secret_access_key": creds.secret_access_key}})
    .to_string();
    let bucket = s3_bucket().unwrap();
    let opts = Options::from_json(&options).unwrap();
    let store = open(
        &Location::parse(&format!("s3://{bucket}")).unwrap(),
        &opts.storage,
    )
    .unwrap();
    let prefix = format!("hdmf-{}/corpus", std::process::id());
    for name in CONTAINERS {
        upload_dir(&*store, &format!("{prefix}/{name}"), &corpus.join(name));
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap();
    let base = format!("s3://{bucket}/{prefix}/");
    assert_eq!(check_links(&base, &options, &manifest), 22);

    // A sibling that is not there.
    let linking = format!("{base}alone.nwb.zarr");
    let c = C::open(&linking, N5_MODE_CREATE, &options).unwrap();
    c.create_group("g").unwrap();
    c.set_attributes(
        "g",
        &json!({"_LINKS": [
            {"source": "../missing.nwb.zarr", "path": "/x", "name": "gone"},
            {"source": "../../../../x.nwb.zarr", "path": "/x", "name": "up"},
            {"source": "../nwb-external-target.nwb.zarr", "path": "/acquisition/raw",
             "name": "raw"}]}),
    )
    .unwrap();
    fails(
        c.resolve("g/gone"),
        N5_ERR_DANGLING_LINK,
        "container is missing",
    );
    assert!(!c.exists("g/gone").unwrap());
    // `..` above the bucket: refused, never clamped.
    fails(
        c.resolve("g/up"),
        N5_ERR_INVALID_ARGUMENT,
        "climbs above its bucket",
    );
    let r = c.resolve("g/raw/data").unwrap();
    assert_eq!(r["location"], format!("{base}nwb-external-target.nwb.zarr"));
    // Writers with handles of their own (as on as many machines) creating
    // links in one group at once: conditional updates lose none.
    std::thread::scope(|scope| {
        for i in 0..6 {
            let (linking, options) = (&linking, &options);
            scope.spawn(move || {
                let w = C::open(linking, n5::ffi::N5_MODE_READ_WRITE, options).unwrap();
                let source = "../nwb-external-target.nwb.zarr";
                w.create_link("g", &format!("c{i}"), source, "/acquisition/raw")
                    .unwrap();
            });
        }
    });
    let names: Vec<String> = c.links("g").unwrap().as_array().unwrap()[3..]
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["c0", "c1", "c2", "c3", "c4", "c5"], "{names:?}");
    assert!(store
        .delete_dir(&format!("hdmf-{}", std::process::id()))
        .unwrap());
}

#[test]
fn external_links_follow_to_the_sibling_over_http() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let site = server_or_skip!(n5_testkit::http(&corpus));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(check_links(site.url(), "{}", &manifest), 22);

    // A linking container alone in its directory, with links to nothing
    // and above the host's root.
    let scratch = Scratch::new("http-links");
    let dir = std::fs::canonicalize(scratch.path()).unwrap();
    copy_dir(
        &corpus.join("nwb-external.nwb.zarr"),
        &dir.join("nwb-external.nwb.zarr"),
    );
    let path = dir.join("nwb-external.nwb.zarr");
    let w = C::open(path.to_str().unwrap(), n5::ffi::N5_MODE_READ_WRITE, "{}").unwrap();
    w.set_attributes(
        "acquisition/local",
        &json!({"_LINKS": [
            {"source": "../nwb-external-target.nwb.zarr", "path": "/acquisition/raw/timestamps",
             "name": "timestamps"},
            {"source": "../../../x.nwb.zarr", "path": "/", "name": "up"}]}),
    )
    .unwrap();
    drop(w);
    let alone = server_or_skip!(n5_testkit::http(&dir));
    let c = C::open(&alone.url_for("nwb-external.nwb.zarr"), N5_MODE_READ, "{}").unwrap();
    fails(
        c.resolve("acquisition/derived/data"),
        N5_ERR_DANGLING_LINK,
        "container is missing",
    );
    assert!(!c.exists("acquisition/derived/data").unwrap());
    let listed = c.links("acquisition/local").unwrap();
    assert_eq!(listed[0]["status"], "N5_ERR_DANGLING_LINK", "{listed}");
    assert_eq!(listed[1]["status"], "N5_ERR_INVALID_ARGUMENT", "{listed}");
    fails(
        c.resolve("acquisition/local/up"),
        N5_ERR_INVALID_ARGUMENT,
        "climbs above the host's root",
    );
}
