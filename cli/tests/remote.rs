//! Every subcommand on locations that are not local paths, against real
//! servers on 127.0.0.1 from `n5-testkit` (SeaweedFS for `s3://`,
//! fake-gcs-server for `gs://`, nginx for `http://` and `https://`; the
//! tests print `skipped: ...` and pass when a server binary is missing,
//! unless `N5_REQUIRE_SERVERS=1`): import (N5, sharded Zarr v3, Zarr v2)
//! and cat round trips, cp between
//! a directory, S3 and GCS with recompression, ls/tree/info/attrs/clean,
//! verify finding a block corrupted in the bucket, reading over HTTP(S)
//! (and what HTTP cannot do), credentials that are refused, and the global
//! storage options. Each run of `n5` gets a clean environment: only the
//! credentials a test gives reach it.

mod common;

use common::{le_u16, run_env, Run, TempDir};
use n5_testkit::client::Request;
use n5_testkit::server_or_skip;
use serde_json::{json, Value};

/// 37 x 29 x 11 uint16 values with some structure, as little-endian bytes.
fn volume() -> Vec<u8> {
    let n = 37 * 29 * 11;
    let v: Vec<u16> = (0..n)
        .map(|i| ((i * 7919) % 65521) as u16 / ((i % 5) as u16 + 1))
        .collect();
    le_u16(&v)
}

/// The test volume written as a raw file in `t`; its path.
fn volume_file(t: &TempDir) -> String {
    let raw = t.path("volume.raw");
    std::fs::write(&raw, volume()).unwrap();
    raw
}

/// The import arguments of the test volume (raw file `raw`) into `dest`.
fn import_args<'a>(raw: &'a str, dest: &'a str) -> Vec<&'a str> {
    vec![
        "import", raw, dest, "--dtype", "uint16", "--shape", "37,29,11", "-b", "8,8,4",
    ]
}

/// How `n5` reaches one server: global arguments and environment.
struct Remote {
    /// Global arguments (such as `--endpoint URL`).
    args: Vec<String>,
    /// Environment variables (credentials).
    env: Vec<(String, String)>,
}

impl Remote {
    /// The signed SeaweedFS, reached with `--endpoint` and credentials in
    /// the environment.
    fn s3(server: &n5_testkit::S3Server) -> Remote {
        let c = server
            .credentials()
            .expect("the signed server has credentials");
        Remote {
            args: vec!["--endpoint".into(), server.endpoint()],
            env: vec![
                ("AWS_ACCESS_KEY_ID".into(), c.access_key_id.clone()),
                ("AWS_SECRET_ACCESS_KEY".into(), c.secret_access_key.clone()),
            ],
        }
    }

    /// fake-gcs-server, reached with `--endpoint` (no credentials).
    fn gcs(server: &n5_testkit::GcsServer) -> Remote {
        Remote {
            args: vec!["--endpoint".into(), server.endpoint()],
            env: Vec::new(),
        }
    }

    /// No server arguments (local paths, plain HTTP).
    fn none() -> Remote {
        Remote {
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Run `n5 GLOBAL... args...`.
    fn run(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = self.args.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        run_env(&all, &env, None)
    }

    /// Run and check that it succeeds.
    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(
            r.code,
            0,
            "n5 {:?} {args:?} failed with {}: {}{}",
            self.args,
            r.code,
            r.stderr,
            r.text()
        );
        r
    }

    /// Run, check that it succeeds, and parse its output as JSON.
    fn json(&self, args: &[&str]) -> Value {
        let r = self.ok(args);
        serde_json::from_slice(&r.stdout)
            .unwrap_or_else(|e| panic!("n5 {args:?} printed no JSON ({e}): {}", r.text()))
    }

    /// Run and check that it fails with `code` and one line `n5: ...`
    /// mentioning every needle.
    fn fails(&self, args: &[&str], code: i32, needles: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, code, "n5 {args:?}: {} {}", r.stderr, r.text());
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "n5 {args:?}: not one line: {:?}", r.stderr);
        assert!(lines[0].starts_with("n5: "), "{:?}", lines[0]);
        for n in needles {
            assert!(
                lines[0].contains(n),
                "n5 {args:?}: {:?} does not mention {n:?}",
                lines[0]
            );
        }
        r
    }
}

/// Import, cat (raw and .npy), info and ls on one object store URL.
fn round_trip(remote: &Remote, t: &TempDir, root: &str) {
    let raw = volume_file(t);
    let ds = format!("{root}/raw");
    remote.ok(&import_args(&raw, &ds));
    assert_eq!(remote.ok(&["cat", &ds]).stdout, volume());
    let region = remote.ok(&["cat", &ds, "--offset", "8,0,4", "--shape", "3,2,1"]);
    let all = volume();
    let mut want = Vec::new();
    for y in 0..2 {
        let at = ((4 * 29 + y) * 37 + 8) * 2;
        want.extend_from_slice(&all[at..at + 6]);
    }
    assert_eq!(region.stdout, want);
    let npy = t.path("v.npy");
    remote.ok(&["cat", &ds, "-o", &npy]);
    remote.ok(&["import", &npy, &format!("{root}/from_npy"), "-c", "zstd"]);
    assert_eq!(
        remote.ok(&["cat", &format!("{root}/from_npy")]).stdout,
        volume()
    );
    let info = remote.json(&["info", "--json", &ds]);
    assert_eq!(info["container"], json!(root));
    assert_eq!(info["path"], "raw");
    assert_eq!(info["blocks"]["stored"], json!(5 * 4 * 3));
    assert_eq!(info["edgeBlocks"], "truncated");
    assert!(info["bytesStored"].as_u64().unwrap() > 0, "{info}");
    let stats = remote.json(&["info", "--stats", "--json", &ds]);
    assert_eq!(stats["stats"]["count"], json!(37 * 29 * 11));
    let ls = remote.json(&["ls", "--json", root]);
    let names: Vec<&str> = ls
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["from_npy", "raw"]);
    // Into a sharded Zarr v3 array beside it, from the file and from the
    // .npy, each shard written whole.
    let zarr = root.replace("vol.n5", "vol.zarr");
    let sharded = format!("{zarr}/sharded");
    remote.ok(&[
        &import_args(&raw, &sharded)[..],
        &["--shard", "16,16,8", "-c", "zstd"],
    ]
    .concat());
    let v2 = format!("zarr2:{}/a", root.replace("vol.n5", "v2.zarr"));
    remote.ok(&["import", &npy, &v2, "-b", "8,8,4"]);
    for ds in [&sharded, &v2] {
        assert_eq!(remote.ok(&["cat", ds]).stdout, volume(), "{ds}");
    }
    let info = remote.json(&["info", "--json", &sharded]);
    assert_eq!(info["format"], "zarr3");
    assert_eq!(info["shardShape"], json!([16, 16, 8]));
}

#[test]
fn import_and_cat_round_trip_on_s3_and_gcs() {
    let t = TempDir::new("remote-roundtrip");
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("cli-roundtrip").unwrap();
    round_trip(&Remote::s3(s3), &t, &format!("s3://{bucket}/data/vol.n5"));
    let gcs = server_or_skip!(n5_testkit::gcs());
    let bucket = gcs.unique_bucket("cli-roundtrip").unwrap();
    round_trip(&Remote::gcs(gcs), &t, &format!("gs://{bucket}/data/vol.n5"));
}

#[test]
fn cp_from_a_directory_to_s3_to_gcs_and_back() {
    let t = TempDir::new("remote-cp");
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let gcs = server_or_skip!(n5_testkit::gcs());
    let s3_bucket = s3.unique_bucket("cli-cp").unwrap();
    let gcs_bucket = gcs.unique_bucket("cli-cp").unwrap();
    let local = Remote::none();
    let raw = volume_file(&t);
    let src = t.path("in.n5");
    local.ok(&import_args(&raw, &format!("{src}/g/raw")));
    local.ok(&["attrs", "set", &format!("{src}/g"), "unit", "\"nm\""]);

    // Local to S3, recompressed.
    let on_s3 = format!("s3://{s3_bucket}/copies/vol.n5");
    let to_s3 = Remote::s3(s3);
    let r = to_s3.ok(&["cp", &src, &on_s3, "-c", "zstd"]);
    assert!(r.text().contains("60 blocks written"), "{}", r.text());
    // Resuming writes nothing.
    let r = to_s3.ok(&["cp", &src, &on_s3, "-c", "zstd"]);
    assert!(
        r.text().contains("0 blocks written, 60 already identical"),
        "{}",
        r.text()
    );

    // S3 to GCS: two endpoints, so --options with both, credentials from
    // the environment.
    let on_gcs = format!("gs://{gcs_bucket}/vol.n5");
    let both = json!({"s3": {"endpoint": s3.endpoint()}, "gcs": {"endpoint": gcs.endpoint()}});
    let s3_to_gcs = Remote {
        args: vec!["--options".into(), both.to_string()],
        env: Remote::s3(s3).env,
    };
    s3_to_gcs.ok(&["cp", &on_s3, &on_gcs, "-c", "zstd"]);

    // GCS back to a directory, with the options in a file.
    let options = t.path("options.json");
    std::fs::write(
        &options,
        json!({"gcs": {"endpoint": gcs.endpoint()}}).to_string(),
    )
    .unwrap();
    let from_gcs = Remote {
        args: vec!["--options".into(), format!("@{options}")],
        env: Vec::new(),
    };
    let back = t.path("back.n5");
    from_gcs.ok(&["cp", &on_gcs, &back]);

    let want = volume();
    for (remote, root) in [(&to_s3, &on_s3), (&from_gcs, &on_gcs), (&local, &back)] {
        let ds = format!("{root}/g/raw");
        assert_eq!(remote.ok(&["cat", &ds]).stdout, want, "{ds}");
        let info = remote.json(&["info", "--json", &ds]);
        assert_eq!(info["compression"]["type"], "zstd", "{ds}");
        assert_eq!(info["blockSize"], json!([8, 8, 4]), "{ds}");
        let unit = remote.ok(&["attrs", "get", &format!("{root}/g"), "unit"]);
        assert_eq!(unit.text().trim(), "nm", "{root}");
    }
    // The library reads what the tool wrote, too.
    let c = n5::Container::open(&back, n5::Mode::Read).unwrap();
    let ds = c.open_dataset("g/raw").unwrap();
    let mut buf = vec![0u8; want.len()];
    ds.read_region(&[0, 0, 0], &[37, 29, 11], &mut buf).unwrap();
    assert_eq!(buf, want);

    // A copy into itself is refused, also for URLs written differently.
    to_s3.fails(
        &["cp", &format!("{on_s3}/g"), &format!("{on_s3}/./g/raw/x")],
        2,
        &["into itself"],
    );
}

#[test]
fn ls_tree_info_attrs_and_clean_on_s3() {
    let t = TempDir::new("remote-ls");
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("cli-ls").unwrap();
    let r = Remote::s3(s3);
    let raw = volume_file(&t);
    let root = format!("s3://{bucket}/vol.n5");
    r.ok(&import_args(&raw, &format!("{root}/raw/s0")));
    r.ok(&import_args(&raw, &format!("{root}/labels")));

    let ls = r.json(&["ls", "-r", "--json", &root]);
    assert_eq!(ls.as_array().unwrap().len(), 3, "{ls}");
    assert_eq!(ls[0]["path"], "labels");
    assert_eq!(ls[0]["type"], "dataset");
    assert_eq!(ls[1], json!({"path": "raw", "type": "group"}));
    assert_eq!(ls[2]["path"], "raw/s0");
    assert_eq!(ls[2]["dimensions"], json!([37, 29, 11]));
    let text = r.ok(&["ls", &format!("{root}/raw")]).text();
    assert!(text.starts_with("s0  uint16  [37, 29, 11]"), "{text}");

    let tree = r.ok(&["tree", &root]).text();
    assert!(tree.starts_with(&format!("{root}\n")), "{tree}");
    assert!(tree.contains("└── raw\n    └── s0  uint16"), "{tree}");
    let tree = r.json(&["tree", "--json", &root]);
    assert_eq!(tree["children"][1]["children"][0]["path"], "raw/s0");

    let info = r.ok(&["info", &format!("{root}/raw/s0")]).text();
    assert!(info.contains(&format!("raw/s0 in {root}")), "{info}");
    assert!(info.contains("60 of 60 stored"), "{info}");

    let group = format!("{root}/raw");
    r.ok(&["attrs", "set", &group, "scales", "[[1,1,1],[2,2,1]]"]);
    r.ok(&["attrs", "set", &group, "scales[1][2]", "2"]);
    assert_eq!(
        r.json(&["attrs", "get", "--json", &group, "scales"]),
        json!([[1, 1, 1], [2, 2, 2]])
    );
    r.ok(&["attrs", "rm", &group, "scales[0]"]);
    assert_eq!(
        r.json(&["attrs", "get", "--json", &group]),
        json!({"scales": [[2, 2, 2]]})
    );
    r.fails(&["attrs", "get", &group, "nothing"], 1, &["no attribute"]);
    r.fails(
        &["ls", &format!("{root}/missing")],
        1,
        &[&format!("{root}/missing"), "no such group or dataset"],
    );

    // A root without .n5 in its name is found from its attributes.json.
    let plain = format!("s3://{bucket}/plain");
    r.ok(&["cp", &root, &plain]);
    let info = r.json(&["info", "--json", &format!("{plain}/raw/s0")]);
    assert_eq!(info["container"], json!(plain));
    assert_eq!(info["path"], "raw/s0");
    assert_eq!(r.ok(&["cat", &format!("{plain}/labels")]).stdout, volume());

    // Object stores leave no temporaries: nothing to clean.
    let clean = r.ok(&["clean", &root]).text();
    assert!(clean.contains("nothing to clean"), "{clean}");
    assert_eq!(
        r.json(&["clean", "--json", &root]),
        json!({"removed": 0, "bytes": 0})
    );
    r.fails(
        &["clean", &format!("s3://{bucket}/absent.n5")],
        1,
        &[&format!("s3://{bucket}/absent.n5")],
    );
}

#[test]
fn verify_on_s3_finds_a_corrupted_block() {
    let t = TempDir::new("remote-verify");
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("cli-verify").unwrap();
    let r = Remote::s3(s3);
    let raw = volume_file(&t);
    let root = format!("s3://{bucket}/vol.n5");
    r.ok(&import_args(&raw, &format!("{root}/raw")));
    let good = r.ok(&["verify", &root]).text();
    assert!(good.contains("1 dataset, 60 blocks: ok"), "{good}");

    // Garbage in one block and a cut in another, written straight to the bucket.
    let put = |key: &str, body: Vec<u8>| {
        let resp = s3
            .send(Request::new("PUT", &format!("/{bucket}/vol.n5/{key}")).body(body))
            .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
    };
    put("raw/1/0/0", b"this is not an N5 block at all".to_vec());
    let get = s3
        .send(Request::new("GET", &format!("/{bucket}/vol.n5/raw/2/1/0")))
        .unwrap();
    assert_eq!(get.status, 200);
    put("raw/2/1/0", get.body[..get.body.len() / 2].to_vec());

    let bad = r.run(&["verify", &root]);
    assert_eq!(bad.code, 3, "{}{}", bad.stderr, bad.text());
    let text = bad.text();
    assert!(
        text.contains(&format!("s3://{bucket}/vol.n5/raw/1/0/0: ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("s3://{bucket}/vol.n5/raw/2/1/0: truncated")),
        "{text}"
    );
    assert!(text.contains("60 blocks: 2 bad"), "{text}");
    let v = r.json_code(&["verify", "--json", &format!("{root}/raw")], 3);
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["blocks"], json!(60));
    let grids: Vec<&Value> = v["bad"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["grid"])
        .collect();
    assert_eq!(grids, [&json!([1, 0, 0]), &json!([2, 1, 0])]);
}

impl Remote {
    /// Run, check the exit code, and parse the output as JSON.
    fn json_code(&self, args: &[&str], code: i32) -> Value {
        let r = self.run(args);
        assert_eq!(r.code, code, "n5 {args:?}: {} {}", r.stderr, r.text());
        serde_json::from_slice(&r.stdout).unwrap()
    }
}

#[test]
fn read_over_http_and_https() {
    let t = TempDir::new("remote-http");
    let local = Remote::none();
    let raw = volume_file(&t);
    let vol = t.path("site/vol.n5");
    local.ok(&import_args(&raw, &format!("{vol}/raw/s0")));
    local.ok(&[
        "attrs",
        "set",
        &format!("{vol}/raw/s0"),
        "note",
        "\"served\"",
    ]);

    let site = server_or_skip!(n5_testkit::http(&t.0.join("site")));
    let url = format!("{}vol.n5", site.url());
    let ds = format!("{url}/raw/s0");
    let want = volume();
    assert_eq!(local.ok(&["cat", &ds]).stdout, want);
    assert_eq!(
        local.ok(&["cat", &format!("n5:{ds}")]).stdout,
        want,
        "a format prefix"
    );

    // info without a listing: the metadata, and a note instead of block statistics.
    let info = local.json(&["info", "--json", &ds]);
    assert_eq!(info["container"], json!(url));
    assert_eq!(info["dimensions"], json!([37, 29, 11]));
    assert_eq!(info["blocks"]["expected"], json!(60));
    assert_eq!(info["blocks"]["stored"], Value::Null);
    assert!(
        info["note"].as_str().unwrap().contains("listable store"),
        "{info}"
    );
    assert_eq!(info["attributes"], json!({"note": "served"}));
    let text = local.ok(&["info", &ds]).text();
    assert!(
        text.contains("block statistics need a listable store"),
        "{text}"
    );
    // --stats reads every grid position anyway.
    let stats = local.json(&["info", "--stats", "--json", &ds]);
    assert_eq!(stats["blocks"]["stored"], json!(60));
    assert_eq!(stats["stats"]["count"], json!(37 * 29 * 11));

    // A dataset can be listed, verified and copied by probing its grid.
    let ls = local.ok(&["ls", &ds]).text();
    assert!(ls.starts_with("s0  uint16"), "{ls}");
    let v = local.ok(&["verify", &ds]).text();
    assert!(v.contains("60 blocks: ok"), "{v}");
    let copy = t.path("copy.n5");
    local.ok(&["cp", &ds, &format!("{copy}/s0")]);
    assert_eq!(local.ok(&["cat", &format!("{copy}/s0")]).stdout, want);

    // What plain HTTP cannot do.
    for args in [
        vec!["ls", url.as_str()],
        vec!["tree", url.as_str()],
        vec!["ls", "-r", url.as_str()],
    ] {
        local.fails(&args, 1, &[url.as_str(), "plain HTTP(S) cannot list"]);
    }
    local.fails(&["verify", &url], 1, &[url.as_str(), "cannot list"]);
    local.fails(
        &["attrs", "set", &ds, "x", "1"],
        1,
        &[ds.as_str(), "read-only"],
    );
    local.fails(&import_args(&raw, &format!("{url}/new")), 1, &["read-only"]);
    local.fails(
        &["cat", &format!("{url}/missing")],
        1,
        &[&format!("{url}/missing")],
    );

    // A Zarr v3 copy whose root holds consolidated metadata (as
    // zarr-python writes it) lists over plain HTTP too.
    let zarr = t.path("site/vol.zarr");
    local.ok(&["cp", &vol, &zarr, "--format", "zarr3"]);
    let root = t.0.join("site/vol.zarr/zarr.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&root).unwrap()).unwrap();
    let mut nodes = serde_json::Map::new();
    for node in ["raw", "raw/s0"] {
        let path = t.0.join("site/vol.zarr").join(node).join("zarr.json");
        nodes.insert(
            node.to_string(),
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap(),
        );
    }
    doc["consolidated_metadata"] =
        json!({"kind": "inline", "must_understand": false, "metadata": nodes});
    std::fs::write(&root, doc.to_string()).unwrap();
    let zurl = format!("{}vol.zarr", site.url());
    let tree = local.ok(&["tree", &zurl]).text();
    assert!(tree.contains("raw") && tree.contains("s0"), "{tree}");
    let listed = local.ok(&["ls", "-r", &zurl]).text();
    assert!(listed.contains("raw/s0"), "{listed}");
    let back = t.path("back.n5");
    local.ok(&["cp", &zurl, &back]);
    assert_eq!(local.ok(&["cat", &format!("{back}/raw/s0")]).stdout, want);

    // HTTPS: trusted with the test's CA, refused without it.
    let secure = server_or_skip!(n5_testkit::https(&t.0.join("site")));
    let ds = format!("{}vol.n5/raw/s0", secure.url());
    let ca = secure.ca_pem().unwrap().to_str().unwrap().to_string();
    let r = run_env(&["cat", &ds], &[("SSL_CERT_FILE", &ca)], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, want);
    local.fails(&["cat", &ds], 1, &[secure.url()]);
}

#[test]
fn refused_credentials_name_the_url_and_never_the_secret() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("cli-denied").unwrap();
    let secret = "WRONG-s3cr3t-Xy9z/AbCdEf";
    let url = format!("s3://{bucket}/vol.n5");
    let good = Remote::s3(s3);
    let t = TempDir::new("remote-denied");
    good.ok(&import_args(&volume_file(&t), &format!("{url}/x")));
    let mut wrong = Remote::s3(s3);
    wrong.env[1].1 = secret.into();
    let r = wrong.fails(&["ls", &url], 1, &[&url]);
    assert!(!r.stderr.contains(secret), "{}", r.stderr);
    // The same through --options.
    let c = s3.credentials().unwrap();
    let options = json!({"s3": {"endpoint": s3.endpoint(), "access_key_id": c.access_key_id,
                                "secret_access_key": secret}});
    let wrong = Remote {
        args: vec!["--options".into(), options.to_string()],
        env: Vec::new(),
    };
    for args in [
        vec!["attrs", "get", url.as_str()],
        vec!["cat", &format!("{url}/x")],
    ] {
        let r = wrong.run(&args);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains(&url), "{}", r.stderr);
        assert!(!r.stderr.contains(secret), "{}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
    // Anonymous requests to the signed server are refused too.
    let anonymous = Remote {
        args: vec!["--anonymous".into(), "--endpoint".into(), s3.endpoint()],
        env: Remote::s3(s3).env,
    };
    anonymous.fails(&["ls", &url], 1, &[&url]);
}

/// `s3://bucket/vol.n5/x` is a URL, never a local directory `s3:`.
#[test]
fn s3_urls_never_become_local_directories() {
    let t = TempDir::new("remote-s3-colon");
    let raw = volume_file(&t);
    let npy = t.path("v.npy");
    Remote::none().ok(&import_args(&raw, &t.path("v.n5/raw")));
    Remote::none().ok(&["cat", &t.path("v.n5/raw"), "-o", &npy]);
    // No server at this port: the import fails, naming the URL, and
    // leaves nothing on the disk.
    let port = n5_testkit::free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let args = [
        "--endpoint",
        &endpoint,
        "--options",
        r#"{"retry": {"max_attempts": 1}}"#,
        "import",
        &npy,
        "s3://bucket/vol.n5/x",
    ];
    let r = run_env(&args, &[], Some(&t.0));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("s3://bucket/vol.n5"), "{}", r.stderr);
    assert!(
        !t.0.join("s3:").exists(),
        "a local s3: directory was created"
    );

    // With the server: the data goes to the bucket, still nothing local.
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let bucket = s3.unique_bucket("cli-colon").unwrap();
    let remote = Remote::s3(s3);
    let dest = format!("s3://{bucket}/vol.n5/x");
    let mut all: Vec<&str> = remote.args.iter().map(String::as_str).collect();
    all.extend_from_slice(&["import", &npy, &dest]);
    let env: Vec<(&str, &str)> = remote
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = run_env(&all, &env, Some(&t.0));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !t.0.join("s3:").exists(),
        "a local s3: directory was created"
    );
    assert_eq!(remote.ok(&["cat", &dest]).stdout, volume());
    let listed = s3
        .send(Request::new(
            "GET",
            &format!("/{bucket}?list-type=2&prefix=vol.n5/x/"),
        ))
        .unwrap();
    assert!(
        listed.text().contains("vol.n5/x/attributes.json"),
        "{}",
        listed.text()
    );
}

/// The global storage options: parsed strictly, usage errors otherwise.
#[test]
fn global_storage_options_are_checked() {
    let t = TempDir::new("remote-options");
    let vol = t.path("vol.n5");
    let r = Remote::none();
    r.ok(&import_args(&volume_file(&t), &format!("{vol}/x")));
    r.fails(
        &["--options", r#"{"s3": {"endpont": "x"}}"#, "ls", &vol],
        2,
        &["--options", "s3.endpont"],
    );
    r.fails(&["--options", "{not json", "ls", &vol], 2, &["--options"]);
    let missing = t.path("missing.json");
    r.fails(
        &["--options", &format!("@{missing}"), "ls", &vol],
        2,
        &["missing.json", "cannot read"],
    );
    let secret = "s3cr3t-in-the-wrong-place";
    let bad = json!({"s3": {"secret_access_key": 5}, "cache_bytes": {"x": secret}}).to_string();
    let out = r.fails(&["--options", &bad, "ls", &vol], 2, &["--options"]);
    assert!(!out.stderr.contains(secret), "{}", out.stderr);
    r.fails(
        &["--io-concurrency", "100000", "ls", &vol],
        2,
        &["--io-concurrency"],
    );
    r.fails(
        &["--endpoint", "127.0.0.1:9", "ls", &vol],
        2,
        &["--endpoint"],
    );
    r.fails(&["ls", "ftp://host/vol.n5"], 2, &["ftp"]);
    let r2 = r.fails(
        &["ls", "https://user:pw-s3cret@host/vol.n5"],
        2,
        &["credentials"],
    );
    assert!(!r2.stderr.contains("pw-s3cret"), "{}", r2.stderr);
    // Accepted options change nothing for a local container.
    r.ok(&[
        "--options",
        r#"{"io_concurrency": 8, "threads": 2}"#,
        "--cache-bytes",
        "1000000",
        "--io-concurrency",
        "4",
        "--anonymous",
        "ls",
        &vol,
    ]);
}
