//! `n5 cp`, `n5 info` and `n5 verify` across N5, Zarr v2 and Zarr v3 with
//! the real binary: round trips N5 → Zarr v3 sharded → Zarr v2 → N5 (and
//! unsharded) giving identical arrays and user attributes for several data
//! types and ranks, edge chunks and shards that do not divide the array;
//! the same chain with its Zarr copies on S3 (SeaweedFS from `n5-testkit`
//! on 127.0.0.1), and a sharded copy on GCS (fake-gcs-server); the peer
//! Zarr corpus to N5 and back reproducing the manifest's checksums; info
//! and verify on Zarr (a damaged inner chunk or shard index named);
//! resuming a copy after a shard was deleted or damaged, or after copies
//! killed in the middle; and the errors that stop a copy before it writes
//! anything.

mod common;

use std::path::{Path, PathBuf};

use common::{fails, json, ok, run_env, Run, TempDir};
use n5::{Container, DataType, Mode};
use n5_testkit::server_or_skip;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// One dataset of the test source: path, type, dimensions and block size
/// (N5 order).
struct Spec {
    path: &'static str,
    dtype: DataType,
    dims: &'static [u64],
    block: &'static [u32],
}

/// The datasets of the test source, grouped by rank (`r1`..`r4`).
const SPECS: &[Spec] = &[
    Spec {
        path: "r1/i64",
        dtype: DataType::I64,
        dims: &[1000],
        block: &[64],
    },
    Spec {
        path: "r2/u16",
        dtype: DataType::U16,
        dims: &[100, 70],
        block: &[16, 16],
    },
    Spec {
        path: "r2/f64",
        dtype: DataType::F64,
        dims: &[33, 65],
        block: &[16, 16],
    },
    Spec {
        path: "r3/u8",
        dtype: DataType::U8,
        dims: &[50, 30, 20],
        block: &[8, 8, 8],
    },
    Spec {
        path: "r3/f32",
        dtype: DataType::F32,
        dims: &[41, 17, 9],
        block: &[8, 8, 8],
    },
    Spec {
        path: "r3/i32",
        dtype: DataType::I32,
        dims: &[20, 20, 20],
        block: &[10, 10, 5],
    },
    Spec {
        path: "r4/u32",
        dtype: DataType::U32,
        dims: &[7, 6, 5, 4],
        block: &[4, 4, 4, 4],
    },
];

/// The sharded copy of each rank group: group, `--shard`, `-b` (N5 order).
/// No shard shape divides its arrays.
const SHARDING: &[(&str, &str, &str)] = &[
    ("r1", "256", "64"),
    ("r2", "48,32", "16,16"),
    ("r3", "24,16,16", "8,8,8"),
    ("r4", "8,4,4,4", "4,4,2,2"),
];

/// `n` elements of `t` with some structure, native byte order.
fn values(t: DataType, n: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(n as usize * t.size());
    for i in 0..n {
        let k = ((i * 7919) % 10007) as i64 - 5000;
        match t {
            DataType::U8 => out.push((k & 0xff) as u8),
            DataType::U16 => out.extend_from_slice(&((k * 13) as u16).to_ne_bytes()),
            DataType::U32 => out.extend_from_slice(&((k * 100_003) as u32).to_ne_bytes()),
            DataType::I32 => out.extend_from_slice(&((k * 77) as i32).to_ne_bytes()),
            DataType::I64 => out.extend_from_slice(&(k * 1_000_000_007).to_ne_bytes()),
            DataType::F32 => out.extend_from_slice(&(k as f32 / 7.0).to_ne_bytes()),
            DataType::F64 => out.extend_from_slice(&(k as f64 / 3.0).to_ne_bytes()),
            _ => unreachable!("numeric types only"),
        }
    }
    out
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// The N5 test source at `root`: every dataset of [`SPECS`] written whole,
/// then one block of each deleted (a missing block), with user attributes
/// on the root, a group and a dataset.
fn make_source(root: &str) {
    let c = Container::open(root, Mode::Create).unwrap();
    for s in SPECS {
        let attrs = n5::DatasetAttributes::new(
            s.dims.to_vec(),
            s.block.to_vec(),
            s.dtype.clone(),
            n5::Compression::Gzip {
                level: 6,
                use_zlib: false,
            },
        )
        .unwrap();
        let ds = c.create_dataset(s.path, attrs).unwrap();
        let n: u64 = s.dims.iter().product();
        let zeros = vec![0u64; s.dims.len()];
        ds.write_region(&zeros, s.dims, &values(s.dtype.clone(), n))
            .unwrap();
        let mut second = zeros.clone();
        second[0] = 1;
        assert!(ds.delete_block(&second).unwrap(), "{}", s.path);
    }
    c.set_attributes("", &obj(json!({"title": "zarr round trip", "scale": 1.5})))
        .unwrap();
    c.set_attributes(
        "r2",
        &obj(json!({"unit": "nm", "axes": ["x", "y"], "big": 18446744073709551615u64})),
    )
    .unwrap();
    c.set_attributes(
        "r2/u16",
        &obj(json!({"resolution": [4, 4], "nested": {"a": [1, 2.25, null]}, "axes": ["x", "y"]})),
    )
    .unwrap();
}

/// The whole array of the dataset `path` of `c` (N5-order region read).
fn whole(c: &Container, path: &str) -> (DataType, Vec<u64>, Vec<u8>) {
    let ds = c.open_dataset(path).unwrap();
    let a = ds.attributes();
    let n: u64 = a.dimensions.iter().product();
    let mut buf = vec![0u8; n as usize * a.data_type.size()];
    ds.read_region(&vec![0; a.ndim()], &a.dimensions, &mut buf)
        .unwrap();
    (a.data_type.clone(), a.dimensions.clone(), buf)
}

/// The user attributes of the node `path` of `c`: its attributes but, in
/// N5, the version of the root and the dataset keys of a dataset (its
/// metadata there). A Zarr node's attributes are all user attributes, but
/// a dataset's dimension names, which N5 has as `axes`, Zarr v3 as
/// `dimension_names` and Zarr v2 as `_ARRAY_DIMENSIONS` (both C order),
/// are given as `axes`.
fn user(c: &Container, path: &str) -> Map<String, Value> {
    let mut m = obj(c.attributes(path).unwrap());
    if c.dataset_exists(path).unwrap() {
        let names = match c.format() {
            n5::format::Format::Zarr3 => c
                .open_dataset(path)
                .unwrap()
                .metadata()
                .unwrap()
                .get("dimension_names")
                .cloned(),
            n5::format::Format::Zarr2 => m.remove("_ARRAY_DIMENSIONS"),
            _ => None,
        };
        if let Some(Value::Array(mut n)) = names {
            n.reverse();
            m.insert("axes".into(), Value::Array(n));
        }
    }
    if c.format() == n5::format::Format::N5 {
        if path.is_empty() {
            m.remove("n5");
        }
        if c.dataset_exists(path).unwrap() {
            for k in ["dimensions", "blockSize", "dataType", "compression"] {
                m.remove(k);
            }
        }
    }
    m
}

/// Check that the datasets of [`SPECS`] and the user attributes of `nodes`
/// are the same in the containers at `a` and `b`.
fn same_tree(a: &str, b: &str, nodes: &[&str]) {
    let ca = Container::open(a, Mode::Read).unwrap();
    let cb = Container::open(b, Mode::Read).unwrap();
    for s in SPECS {
        assert!(whole(&ca, s.path) == whole(&cb, s.path), "{b}/{}", s.path);
    }
    for n in nodes {
        assert_eq!(user(&ca, n), user(&cb, n), "{b}/{n}");
    }
}

/// Every node with user attributes in the test source but the root.
const NODES: &[&str] = &["r2", "r2/u16", "r3", "r1/i64"];

#[test]
fn n5_to_sharded_zarr3_to_zarr2_to_n5_is_exact() {
    let t = TempDir::new("zarr-chain");
    let src = t.path("src.n5");
    make_source(&src);
    let z3 = t.path("sharded.zarr");
    for (group, shard, block) in SHARDING {
        let r = ok(&[
            "cp",
            &format!("{src}/{group}"),
            &format!("{z3}/{group}"),
            "--format",
            "zarr3",
            "--shard",
            shard,
            "-b",
            block,
            "-c",
            "zstd",
        ]);
        assert!(r.text().contains("shards written"), "{}", r.text());
    }
    let c3 = Container::open(&z3, Mode::Read).unwrap();
    assert_eq!(c3.format(), n5::format::Format::Zarr3);
    let ds = c3.open_dataset("r2/u16").unwrap();
    assert_eq!(ds.shard_shape(), vec![48, 32]);
    assert_eq!(ds.attributes().block_size, vec![16, 16]);
    let doc = ds.metadata().unwrap();
    assert_eq!(doc["codecs"][0]["name"], "sharding_indexed", "{doc}");
    assert_eq!(
        doc["chunk_grid"]["configuration"]["chunk_shape"],
        json!([32, 48])
    );
    assert_eq!(
        c3.open_dataset("r3/i32").unwrap().attributes().block_size,
        vec![8, 8, 8],
        "re-chunked into the inner chunks"
    );
    ok(&["verify", &z3]);

    // Zarr v3 to Zarr v3 keeps the shards.
    let z3b = t.path("again.zarr");
    let r = ok(&["cp", &z3, &z3b]);
    assert!(r.text().contains("shards written"), "{}", r.text());
    let again = Container::open(&z3b, Mode::Read).unwrap();
    assert_eq!(
        again.open_dataset("r2/u16").unwrap().shard_shape(),
        vec![48, 32]
    );
    same_tree(&src, &z3b, NODES);

    let z2 = t.path("v2.zarr");
    ok(&["cp", &z3, &z2, "--format", "zarr2"]);
    let c2 = Container::open(&z2, Mode::Read).unwrap();
    assert_eq!(c2.format(), n5::format::Format::Zarr2);
    let back = t.path("back.n5");
    ok(&["cp", &z2, &back]);
    let cb = Container::open(&back, Mode::Read).unwrap();
    assert_eq!(cb.format(), n5::format::Format::N5);
    for copy in [&z3, &z2, &back] {
        same_tree(&src, copy, NODES);
    }
    // The dimension names went along, where each format keeps them.
    let names = c3.open_dataset("r2/u16").unwrap().metadata().unwrap();
    assert_eq!(names["dimension_names"], json!(["y", "x"]), "{names}");
    assert!(c3.attributes("r2/u16").unwrap().get("axes").is_none());
    assert_eq!(
        c2.attributes("r2/u16").unwrap()["_ARRAY_DIMENSIONS"],
        json!(["y", "x"])
    );
    assert_eq!(cb.attributes("r2/u16").unwrap()["axes"], json!(["x", "y"]));
    // The compression carried through the chain: zstd.
    let info = json(&["info", "--json", &format!("{back}/r2/u16")]);
    assert_eq!(info["compression"]["type"], "zstd", "{info}");

    // Unsharded, whole containers, root attributes included.
    let u3 = t.path("u3.zarr");
    ok(&["cp", &src, &u3, "-c", "gzip"]);
    let u2 = t.path("u2");
    ok(&["cp", &u3, &format!("zarr2:{u2}")]);
    let back2 = t.path("back2");
    ok(&["cp", &format!("zarr2:{u2}"), &format!("n5:{back2}")]);
    let mut all = NODES.to_vec();
    all.push("");
    for copy in [u3.clone(), format!("zarr2:{u2}"), format!("n5:{back2}")] {
        same_tree(&src, &copy, &all);
    }
}

/// How `n5` reaches an object store: `--endpoint` and credentials (the
/// signed SeaweedFS, or fake-gcs-server without any).
struct S3 {
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl S3 {
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

    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, 0, "n5 {args:?}: {}{}", r.stderr, r.text());
        r
    }
}

#[test]
fn the_chain_through_s3_and_gcs() {
    let t = TempDir::new("zarr-s3");
    let server = server_or_skip!(n5_testkit::s3_signed());
    let bucket = server.unique_bucket("cli-zarr").unwrap();
    let c = server.credentials().expect("credentials");
    let s3 = S3 {
        args: vec!["--endpoint".into(), server.endpoint()],
        env: vec![
            ("AWS_ACCESS_KEY_ID".into(), c.access_key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY".into(), c.secret_access_key.clone()),
        ],
    };
    let src = t.path("src.n5");
    make_source(&src);
    let z3 = format!("s3://{bucket}/data/sharded.zarr");
    for (group, shard, block) in SHARDING {
        s3.ok(&[
            "cp",
            &format!("{src}/{group}"),
            &format!("{z3}/{group}"),
            "--shard",
            shard,
            "-b",
            block,
            "-c",
            "zstd",
        ]);
    }
    // Resuming on S3 writes nothing.
    let r = s3.ok(&[
        "cp",
        &format!("{src}/r3"),
        &format!("{z3}/r3"),
        "--shard",
        "24,16,16",
        "-b",
        "8,8,8",
        "-c",
        "zstd",
    ]);
    assert!(r.text().contains(" 0 shards written"), "{}", r.text());
    let info: Value =
        serde_json::from_slice(&s3.ok(&["info", "--json", &format!("{z3}/r3/u8")]).stdout).unwrap();
    assert_eq!(info["format"], "zarr3");
    assert_eq!(info["shardShape"], json!([24, 16, 16]));
    assert_eq!(info["shards"]["expected"], json!(3 * 2 * 2));
    let verify = s3.ok(&["verify", &z3]).text();
    assert!(verify.contains(": ok"), "{verify}");
    let z2 = format!("zarr2:s3://{bucket}/data/v2");
    s3.ok(&["cp", &z3, &z2]);
    let back = t.path("back.n5");
    s3.ok(&["cp", &z2, &back]);
    same_tree(&src, &back, NODES);
    // The arrays on S3 read as the source does, through the tool.
    let local = Container::open(&src, Mode::Read).unwrap();
    for copy in [&z3, &z2] {
        let got = s3.ok(&["cat", &format!("{copy}/r2/f64")]).stdout;
        assert!(got == whole(&local, "r2/f64").2, "{copy}");
    }

    // Google Cloud Storage (fake-gcs-server) too: sharded there and back.
    let gcs_server = server_or_skip!(n5_testkit::gcs());
    let gcs_bucket = gcs_server.unique_bucket("cli-zarr").unwrap();
    let gcs = S3 {
        args: vec!["--endpoint".into(), gcs_server.endpoint()],
        env: Vec::new(),
    };
    let on_gcs = format!("gs://{gcs_bucket}/sharded.zarr");
    for (group, shard, block) in SHARDING {
        gcs.ok(&[
            "cp",
            &format!("{src}/{group}"),
            &format!("{on_gcs}/{group}"),
            "--shard",
            shard,
            "-b",
            block,
        ]);
    }
    let back = t.path("from-gcs.n5");
    gcs.ok(&["cp", &on_gcs, &back]);
    same_tree(&src, &back, NODES);
}

/// The peer Zarr corpus beside the repository (see [`common::shared`]).
fn corpus_zarr() -> Option<PathBuf> {
    common::shared("corpus-zarr", "Zarr corpus")
}

/// sha256 of the whole array `path` of the container at `root` (C-order
/// bytes = the N5-order region read).
fn array_sha256(root: &str, path: &str) -> String {
    let c = Container::open(root, Mode::Read).unwrap();
    let (_, _, bytes) = whole(&c, path);
    format!("{:x}", Sha256::digest(&bytes))
}

#[test]
fn the_zarr_corpus_to_n5_and_back_keeps_every_array() {
    let Some(corpus) = corpus_zarr() else { return };
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap();
    let t = TempDir::new("zarr-corpus");
    let mut checked = 0;
    for (name, info) in manifest["containers"].as_object().unwrap() {
        let prefix = info["open_prefix"].as_str().unwrap_or("");
        let source = format!("{prefix}{}", corpus.join(name).display());
        let version = info["zarr_format"].as_u64().unwrap();
        let as_n5 = format!("n5:{}", t.path(&format!("{name}.n5")));
        ok(&["cp", &source, &as_n5]);
        let again = format!("zarr{version}:{}", t.path(&format!("again-{name}")));
        ok(&["cp", &as_n5, &again]);
        for a in manifest["arrays"].as_array().unwrap() {
            if a["container"] != json!(name) {
                continue;
            }
            let path = a["path"].as_str().unwrap();
            let want = a["array_sha256"].as_str().unwrap();
            for copy in [&as_n5, &again] {
                assert_eq!(array_sha256(copy, path), want, "{copy}/{path}");
            }
            // User attributes carried both ways, and the dimension names
            // (as `user` gives them: N5's `axes`).
            let mut attrs = a["attributes"].as_object().cloned().unwrap_or_default();
            if let Some(names) = a["metadata"]["dimension_names"].as_array() {
                if names.iter().all(Value::is_string) {
                    attrs.insert("axes".into(), json!(names.iter().rev().collect::<Vec<_>>()));
                }
            }
            for copy in [&as_n5, &again] {
                let c = Container::open(copy, Mode::Read).unwrap();
                assert_eq!(user(&c, path), attrs, "{copy}/{path}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, manifest["arrays"].as_array().unwrap().len());

    // Zarr v3 to Zarr v3 directly keeps fill values and dimension names;
    // into Zarr v2 the fill value stays too.
    let ts = corpus.join("tensorstore-zarr3.zarr");
    for (array, fill, names) in [
        ("fill_nan", json!("NaN"), Value::Null),
        ("unsharded_gzip_fill", json!(-1), Value::Null),
        ("with_attributes", json!(0), json!(["z", "y", "x"])),
    ] {
        let source = format!("{}/{array}", ts.display());
        for (dest, v3) in [
            (t.path(&format!("direct.zarr/{array}")), true),
            (format!("zarr2:{}/{array}", t.path("direct2")), false),
        ] {
            ok(&["cp", &source, &dest]);
            let info = json(&["info", "--json", &dest]);
            assert_eq!(info["fillValue"], fill, "{dest}");
            if v3 {
                assert_eq!(info["dimensionNames"], names, "{dest}");
            }
            let want = manifest["arrays"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["container"] == "tensorstore-zarr3.zarr" && a["path"] == array)
                .unwrap()["array_sha256"]
                .clone();
            let (root, path) = dest.rsplit_once('/').unwrap();
            assert_eq!(json!(array_sha256(root, path)), want, "{dest}");
        }
    }
}

/// The offset and size of each inner chunk of the shard file `bytes`
/// (index at the end: 16 bytes per inner chunk, then the crc32c).
fn shard_index(bytes: &[u8], inner: usize) -> Vec<(u64, u64)> {
    let start = bytes.len() - 4 - 16 * inner;
    (0..inner)
        .map(|i| {
            let at = start + 16 * i;
            let word = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
            (word(at), word(at + 8))
        })
        .collect()
}

#[test]
fn info_and_verify_describe_zarr_and_name_damaged_inner_chunks() {
    let t = TempDir::new("zarr-info");
    let src = t.path("src.n5");
    make_source(&src);
    let z = t.path("v.zarr");
    ok(&[
        "cp",
        &format!("{src}/r2/u16"),
        &format!("{z}/a"),
        "--shard",
        "48,32",
        "-c",
        "zstd",
    ]);
    let info = json(&["info", "--json", &format!("{z}/a")]);
    assert_eq!(info["format"], "zarr3");
    assert_eq!(info["dimensions"], json!([100, 70]));
    assert_eq!(info["shape"], json!([70, 100]));
    assert_eq!(info["blockSize"], json!([16, 16]));
    assert_eq!(info["shardShape"], json!([48, 32]));
    assert_eq!(info["shardShapeC"], json!([32, 48]));
    assert_eq!(info["fillValue"], json!(0));
    assert_eq!(info["shards"], json!({"expected": 9, "stored": 9}));
    // 7 x 5 inner chunks, one missing in the source.
    assert_eq!(info["blocks"], json!({"expected": 35, "stored": 34}));
    assert!(
        info["codecs"]
            .as_str()
            .unwrap()
            .starts_with("sharding_indexed(")
            && info["codecs"].as_str().unwrap().contains("zstd"),
        "{info}"
    );
    assert_eq!(info["chunkKeyEncoding"], "default (separator \"/\")");
    assert_eq!(info["attributes"]["resolution"], json!([4, 4]));
    assert_eq!(info["metadata"]["node_type"], "array");
    // --stats reads the shards: the same as the source's.
    let zs = json(&["info", "--stats", "--json", &format!("{z}/a")]);
    let ns = json(&["info", "--stats", "--json", &format!("{src}/r2/u16")]);
    assert_eq!(zs["stats"], ns["stats"]);
    assert_eq!(zs["stats"]["count"], json!(100 * 70));
    let text = ok(&["info", &format!("{z}/a")]).text();
    // Columns as wide as the longest label.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "format zarr3",
        "shardShape [48, 32] (N5 order; [32, 48] in C order)",
        "dimension names [\"y\",\"x\"]",
        "34 of 35 inner chunks stored",
        "9 of 9 stored",
    ] {
        assert!(words.contains(needle), "{needle:?} in {text}");
    }
    // A Zarr group: its document, children and attributes.
    let group = json(&["info", "--json", &z]);
    assert_eq!(group["nodeType"], "group");
    assert_eq!(group["format"], "zarr3");
    assert_eq!(group["metadata"]["node_type"], "group");
    assert_eq!(group["children"], json!({"groups": 0, "arrays": 1}));
    // A Zarr v2 array with a fill value that is not zero, from the corpus.
    if let Some(corpus) = corpus_zarr() {
        let arr = corpus.join("zarr-python3-v2.zarr/fill");
        let first = std::fs::read_dir(&arr)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.contains("nan"))
            .expect("a NaN fill array");
        let info = json(&["info", "--json", &format!("{}/{first}", arr.display())]);
        assert_eq!(info["format"], "zarr2");
        assert_eq!(info["fillValue"], "NaN");
        assert!(
            info["chunkKeyEncoding"]
                .as_str()
                .unwrap()
                .starts_with("v2 (dimension_separator "),
            "{info}"
        );
    }

    let r = ok(&["verify", &z]);
    assert!(
        r.text().contains("1 dataset, 34 blocks: ok"),
        "{}",
        r.text()
    );
    // Damage the first inner chunk of shard c/0/0 (C order [0, 0]).
    let shard = Path::new(&z).join("a/c/0/0");
    let mut bytes = std::fs::read(&shard).unwrap();
    let (offset, size) = shard_index(&bytes, 6)[0];
    assert!(size > 8);
    for b in &mut bytes[offset as usize..offset as usize + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&shard, &bytes).unwrap();
    let r = common::run(&["verify", &z]);
    assert_eq!(r.code, 3, "{}", r.text());
    let text = r.text();
    assert!(
        text.contains(&format!("{}: corrupt:", shard.display()))
            && text.contains("inner chunk [0, 0]")
            && text.contains("1 bad"),
        "{text}"
    );
    let v = json_code(&["verify", "--json", &z], 3);
    assert_eq!(v["bad"][0]["grid"], json!([0, 0]));
    assert_eq!(v["bad"][0]["dataset"], "a");
    // A damaged index: one problem for the whole shard.
    let other = Path::new(&z).join("a/c/1/0");
    let mut bytes = std::fs::read(&other).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    std::fs::write(&other, &bytes).unwrap();
    let text = common::run(&["verify", &z]).text();
    assert!(
        text.contains(&format!("{}: corrupt: every inner chunk", other.display()))
            && text.contains("2 bad"),
        "{text}"
    );
}

/// Run `n5 args...`, check its exit code and parse its output as JSON.
fn json_code(args: &[&str], code: i32) -> Value {
    let r = common::run(args);
    assert_eq!(r.code, code, "{}", r.stderr);
    serde_json::from_slice(&r.stdout).unwrap()
}

/// The modification times of the files below `dir`, by path.
fn mtimes(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(mtimes(&p));
        } else {
            out.push((p.clone(), e.metadata().unwrap().modified().unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_copy_resumes_and_rewrites_only_the_shards_that_are_wrong() {
    let t = TempDir::new("zarr-resume");
    let src = t.path("src.n5");
    make_source(&src);
    let z = t.path("v.zarr");
    let args = [
        "cp",
        &format!("{src}/r3"),
        &format!("{z}/r3"),
        "--shard",
        "24,16,16",
        "-b",
        "8,8,8",
    ];
    let r = ok(&args);
    // u8 3 x 2 x 2 shards, f32 2 x 2 x 1, i32 1 x 2 x 2.
    assert!(r.text().contains("20 shards written"), "{}", r.text());
    let r = ok(&args);
    assert!(
        r.text().contains("0 shards written, 20 already identical"),
        "{}",
        r.text()
    );
    let dir = Path::new(&z).join("r3/u8/c");
    let gone = dir.join("0/0/1");
    let damaged = dir.join("1/1/0");
    std::fs::remove_file(&gone).unwrap();
    let mut bytes = std::fs::read(&damaged).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    bytes[n - 1] ^= 0xff;
    std::fs::write(&damaged, &bytes).unwrap();
    let before = mtimes(Path::new(&z));
    std::thread::sleep(std::time::Duration::from_millis(20));
    let r = ok(&args);
    assert!(
        r.text().contains("2 shards written, 18 already identical"),
        "{}",
        r.text()
    );
    let after = mtimes(Path::new(&z));
    let changed: Vec<&PathBuf> = after
        .iter()
        .filter(|(p, m)| !before.iter().any(|(q, n)| q == p && n == m))
        .map(|(p, _)| p)
        .collect();
    let mut expected = vec![&gone, &damaged];
    expected.sort();
    assert_eq!(changed, expected, "only the two wrong shards are written");
    let c = Container::open(&z, Mode::Read).unwrap();
    let s = Container::open(&src, Mode::Read).unwrap();
    for p in ["r3/u8", "r3/f32", "r3/i32"] {
        assert!(whole(&c, p).2 == whole(&s, p).2, "{p}");
    }
    ok(&["verify", &z]);
}

/// The number of shard files below `dir` (the `c/` directory of an
/// array), temporary files left out.
fn shard_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                shard_files(&p)
            } else {
                usize::from(
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit()),
                )
            }
        })
        .sum()
}

#[test]
fn a_killed_copy_completes_when_run_again() {
    let t = TempDir::new("zarr-killed");
    let src = t.path("big.n5");
    let c = Container::open(&src, Mode::Create).unwrap();
    let dims = [256u64, 192, 96];
    let attrs = n5::DatasetAttributes::new(
        dims.to_vec(),
        vec![32, 32, 32],
        DataType::U16,
        n5::Compression::Raw,
    )
    .unwrap();
    let ds = c.create_dataset("v", attrs).unwrap();
    let n: u64 = dims.iter().product();
    let data = values(DataType::U16, n);
    ds.write_region(&[0, 0, 0], &dims, &data).unwrap();
    let dst = t.path("big.zarr");
    let args = [
        "cp",
        src.as_str(),
        dst.as_str(),
        "--shard",
        "64,64,64",
        "-b",
        "16,16,16",
        "-c",
        "gzip",
        "--threads",
        "2",
    ];
    // Kill copies until one is killed in the middle: some shards written,
    // not all. Each attempt resumes what the one before left; one killed
    // too late (every shard there) starts again from nothing, and the
    // delays close in on the copy's duration (bounded in attempts and time).
    let shards_dir = Path::new(&dst).join("v/c");
    let (mut early, mut late) = (0u64, None::<u64>);
    let mut delay = 40u64;
    let mut killed_with = None;
    let start = std::time::Instant::now();
    for _ in 0..20 {
        if start.elapsed() > std::time::Duration::from_secs(120) {
            break;
        }
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_n5"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = child.kill();
        child.wait().unwrap();
        let there = shard_files(&shards_dir);
        if there > 0 && there < 24 {
            killed_with = Some(there);
            break;
        }
        if there == 0 {
            early = delay;
        } else {
            late = Some(delay);
            std::fs::remove_dir_all(&dst).unwrap();
        }
        delay = match late {
            Some(l) => (early + l) / 2,
            None => delay * 2,
        };
    }
    let Some(there) = killed_with else {
        panic!("no copy was killed in the middle (last delay {delay} ms, too early at {early} ms, too late at {late:?} ms)");
    };
    let r = ok(&args);
    // 4 x 3 x 2 shards in all: those the killed copy left (each written
    // whole, or not at all) are not written again.
    let text = r.text();
    let written: usize = text
        .split(", ")
        .find_map(|p| p.strip_suffix(" shards written"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(written, 24 - there, "{there} there: {text}");
    assert!(
        text.contains(&format!("{} already identical", 24 - written)),
        "{text}"
    );
    let z = Container::open(&dst, Mode::Read).unwrap();
    assert!(whole(&z, "v").2 == data);
    ok(&["verify", &dst]);
}

#[test]
fn impossible_copies_fail_before_writing_anything() {
    let t = TempDir::new("zarr-errors");
    let src = t.path("src.n5");
    make_source(&src);
    let ds = format!("{src}/r2/u16");
    let n5_dst = t.path("out.n5");
    fails(&["cp", &ds, &n5_dst, "--shard", "32,32"], 2, "--shard");
    let r = fails(
        &[
            "cp",
            &ds,
            &t.path("out.zarr"),
            "--format",
            "zarr2",
            "--shard",
            "32,32",
        ],
        2,
        "zarr2",
    );
    assert!(r.stderr.contains("sharded Zarr v3"), "{}", r.stderr);
    let r = fails(
        &["cp", &ds, &t.path("out.zarr"), "--shard", "40,32"],
        2,
        "--shard",
    );
    assert!(
        r.stderr.contains("not a multiple of the block size"),
        "{}",
        r.stderr
    );
    fails(&["cp", &ds, &t.path("out.zarr"), "-c", "bzip2"], 1, "bzip2");
    fails(&["cp", &ds, &t.path("out.zarr"), "-c", "lz4"], 1, "lz4");
    fails(
        &[
            "cp",
            &ds,
            &format!("zarr2:{}", t.path("x")),
            "--format",
            "zarr3",
        ],
        2,
        "contradicts",
    );
    fails(
        &["cp", &ds, &t.path("out.zarr"), "--format", "hdf4"],
        2,
        "hdf4",
    );
    // An HDF5 file's root is a group: a dataset goes inside it.
    fails(
        &["cp", &ds, &t.path("out.zarr"), "--format", "hdf5"],
        2,
        "inside the file",
    );
    // String data has no Zarr counterpart: named, nothing written.
    let c = Container::open(&src, Mode::ReadWrite).unwrap();
    let attrs =
        n5::DatasetAttributes::new(vec![4], vec![2], DataType::String, n5::Compression::Raw)
            .unwrap();
    let strings = c.create_dataset("text", attrs).unwrap();
    strings.write_string_block(&[0], &[2], &["a", "b"]).unwrap();
    fails(&["cp", &src, &t.path("all.zarr")], 1, "text");
    for name in ["out.n5", "out.zarr", "x", "all.zarr"] {
        assert!(!Path::new(&t.path(name)).exists(), "{name} was written");
    }
    // A varlength block has no Zarr counterpart either: the copy names it.
    let attrs =
        n5::DatasetAttributes::new(vec![4], vec![2], DataType::U16, n5::Compression::Raw).unwrap();
    let vl = c.create_dataset("vl", attrs).unwrap();
    vl.write_varlength_block(&[1], &[2], &[1, 0, 2, 0, 3, 0])
        .unwrap();
    let r = fails(
        &["cp", &format!("{src}/vl"), &t.path("vl.zarr")],
        1,
        "varlength",
    );
    assert!(r.stderr.contains("vl: block [1]"), "{}", r.stderr);
    assert!(!Path::new(&t.path("vl.zarr")).exists());
}

#[test]
fn info_and_cp_count_grids_beyond_2_to_the_64() {
    let t = TempDir::new("zarr-huge");
    let src = t.path("huge.n5");
    let c = Container::open(&src, Mode::Create).unwrap();
    let attrs = n5::DatasetAttributes::new(
        vec![1 << 40, 1 << 40],
        vec![1, 1],
        DataType::U8,
        n5::Compression::Raw,
    )
    .unwrap();
    let ds = c.create_dataset("v", attrs).unwrap();
    ds.write_block(&[5, 7], &[1, 1], &[9]).unwrap();
    let path = format!("{src}/v");
    let info = json(&["info", "--json", &path]);
    assert_eq!(info["blocks"]["expected"], "at least 2^64", "{info}");
    assert_eq!(info["blocks"]["stored"], 1, "{info}");
    assert!(ok(&["info", &path]).text().contains("at least 2^64 blocks"));
    // A sparse copy visits the one stored block only, into Zarr v3
    // sharded and unsharded.
    let z = t.path("huge.zarr");
    ok(&["cp", &path, &format!("{z}/plain")]);
    ok(&["cp", &path, &format!("{z}/sharded"), "--shard", "2,2"]);
    for a in ["plain", "sharded"] {
        let info = json(&["info", "--json", &format!("{z}/{a}")]);
        assert_eq!(info["blocks"]["expected"], "at least 2^64", "{info}");
        assert_eq!(info["shards"]["stored"], 1, "{info}");
        let text = ok(&["info", &format!("{z}/{a}")]).text();
        assert!(text.contains("at least 2^64"), "{text}");
    }
    let zc = Container::open(&z, Mode::Read).unwrap();
    let mut one = [0u8];
    zc.open_dataset("sharded")
        .unwrap()
        .read_region(&[5, 7], &[1, 1], &mut one)
        .unwrap();
    assert_eq!(one, [9]);
    // A fill value that N5 does not have: every chunk would be written,
    // refused before anything is.
    let filled = t.path("filled.zarr");
    let zf = Container::open(format!("zarr3:{filled}"), Mode::Create).unwrap();
    zf.create_dataset_json(
        "f",
        &json!({
            "shape": [1u64 << 40, 1u64 << 40],
            "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
            "chunk_key_encoding": {"name": "default"},
            "fill_value": 7,
            "codecs": [{"name": "bytes"}],
        }),
    )
    .unwrap();
    let out = t.path("filled.n5");
    let r = fails(&["cp", &format!("{filled}/f"), &out], 1, "at least 2^64");
    assert!(r.stderr.contains("filled.zarr/f: "), "{}", r.stderr);
    assert!(!Path::new(&out).exists());
}

/// The format of the container at `root`.
fn format_of(root: &str) -> n5::format::Format {
    Container::open(root, Mode::Read).unwrap().format()
}

#[test]
fn a_zarr_prefix_on_a_new_destination_means_some_zarr() {
    let t = TempDir::new("zarr-prefix");
    let src = t.path("src.n5");
    make_source(&src);
    let ds = format!("{src}/r2/u16");
    let local = Container::open(&src, Mode::Read).unwrap();
    // Without --format: Zarr v3, as the library creates it (the path has
    // no .zarr component: the whole of it is the root, here an array).
    let v3 = t.path("newz");
    ok(&["cp", &ds, &format!("zarr:{v3}")]);
    assert_eq!(format_of(&format!("zarr3:{v3}")), n5::format::Format::Zarr3);
    let c = Container::open(format!("zarr:{v3}"), Mode::Read).unwrap();
    assert!(whole(&c, "") == whole(&local, "r2/u16"));
    // --format zarr2 and zarr3 decide.
    for (name, f, want) in [
        ("two", "zarr2", n5::format::Format::Zarr2),
        ("three", "zarr3", n5::format::Format::Zarr3),
    ] {
        let dst = format!("zarr:{}", t.path(name));
        let r = ok(&["cp", &ds, &dst, "--format", f]);
        assert!(r.text().contains("chunks written"), "{}", r.text());
        let c = Container::open(&dst, Mode::Read).unwrap();
        assert_eq!(c.format(), want, "{name}");
        assert!(whole(&c, "") == whole(&local, "r2/u16"), "{name}");
        // Run again, without --format: the container there decides.
        let r = ok(&["cp", &ds, &dst]);
        assert!(r.text().contains(" 0 chunks written"), "{}", r.text());
    }
    assert!(Path::new(&t.path("two")).join(".zarray").exists());
    assert!(!Path::new(&t.path("two")).join("zarr.json").exists());
    // N5 contradicts zarr:, and nothing is written.
    let none = t.path("none");
    fails(
        &["cp", &ds, &format!("zarr:{none}"), "--format", "n5"],
        2,
        "contradicts",
    );
    assert!(!Path::new(&none).exists());
}

#[test]
fn an_oversized_shard_or_block_size_is_refused_before_writing() {
    let t = TempDir::new("zarr-sizes");
    let src = t.path("src.n5");
    make_source(&src);
    let ds = format!("{src}/r2/u16");
    // 65536 x 32768 uint16: 4 GiB decoded, more than a shard may hold.
    let dst = t.path("big.zarr");
    let r = fails(
        &["cp", &ds, &dst, "--shard", "65536,32768", "-b", "16,16"],
        1,
        "more than 2 GiB",
    );
    assert!(r.stderr.contains("big.zarr"), "{}", r.stderr);
    assert!(!Path::new(&dst).exists());
    // Zero and 33-bit block sizes, and a zero shard extent.
    for (args, needle) in [
        (vec!["-b", "0,16"], "--block-size"),
        (vec!["-b", "5000000000,16"], "--block-size"),
        (vec!["--shard", "0,32", "-b", "16,16"], "--shard"),
    ] {
        let mut all = vec!["cp", ds.as_str(), dst.as_str()];
        all.extend(args);
        fails(&all, 2, needle);
        assert!(!Path::new(&dst).exists(), "{all:?}");
    }
}

/// A new Zarr v3 container at `root` (a path) with an array `a` of
/// `shape` (N5 order) and a group `g`.
fn zarr3_with_array(root: &str, shape: &[u64], block: &[u32]) -> Container {
    let c = Container::open(format!("zarr3:{root}"), Mode::Create).unwrap();
    let attrs = n5::DatasetAttributes::new(
        shape.to_vec(),
        block.to_vec(),
        DataType::U8,
        n5::Compression::Raw,
    )
    .unwrap();
    c.create_dataset("a", attrs).unwrap();
    c.create_group("g").unwrap();
    c
}

#[test]
fn user_attributes_named_like_n5_dataset_keys_are_kept_or_refused() {
    let t = TempDir::new("zarr-keys");
    let z = t.path("src.zarr");
    let c = zarr3_with_array(&z, &[4, 4], &[2, 2]);
    let array_attrs = obj(json!({"dimensions": "xyz", "compression": "custom", "unit": "nm"}));
    let group_attrs = obj(json!({"blockSize": [3], "dataType": "label"}));
    c.set_attributes("a", &array_attrs).unwrap();
    c.set_attributes("g", &group_attrs).unwrap();
    // Zarr to Zarr: every attribute goes.
    let z2 = format!("zarr2:{}", t.path("v2"));
    ok(&["cp", &z, &z2]);
    let c2 = Container::open(&z2, Mode::Read).unwrap();
    assert_eq!(user(&c2, "a"), array_attrs);
    assert_eq!(user(&c2, "g"), group_attrs);
    // Into N5, the array's 'dimensions' would be its metadata: refused,
    // nothing written.
    let n5_dst = t.path("out.n5");
    let r = fails(&["cp", &z, &n5_dst], 1, "'dimensions'");
    assert!(r.stderr.contains("out.n5/a:"), "{}", r.stderr);
    assert!(!Path::new(&n5_dst).exists());
    // A group keeps them in N5 while it cannot read as a dataset...
    ok(&["cp", &format!("{z}/g"), &format!("{n5_dst}/g")]);
    let cn = Container::open(&n5_dst, Mode::Read).unwrap();
    assert_eq!(user(&cn, "g"), group_attrs);
    assert!(!cn.dataset_exists("g").unwrap());
    // ... and back to Zarr they stay (an N5 group's keys are its user
    // attributes).
    let z3 = t.path("back.zarr");
    ok(&["cp", &format!("{n5_dst}/g"), &format!("{z3}/g")]);
    let c3 = Container::open(&z3, Mode::Read).unwrap();
    assert_eq!(user(&c3, "g"), group_attrs);
    // ... but not with dimensions, blockSize and dataType together.
    c.set_attributes("g", &obj(json!({"dimensions": [2]})))
        .unwrap();
    let other = t.path("other.n5");
    fails(&["cp", &format!("{z}/g"), &other], 1, "read as a dataset");
    assert!(!Path::new(&other).exists());
}

/// Dimension names move between formats only when every dimension has
/// one, no two alike; a user attribute where they would go, holding
/// something else, stops the copy before anything is written.
#[test]
fn dimension_names_that_cannot_move_stay_or_are_refused() {
    let t = TempDir::new("zarr-names");
    let n5_src = t.path("src.n5");
    let c = Container::open(&n5_src, Mode::Create).unwrap();
    let attrs = n5::DatasetAttributes::new(
        vec![4, 3, 2],
        vec![2, 2, 2],
        DataType::U8,
        n5::Compression::Raw,
    )
    .unwrap();
    for (path, user) in [
        ("dup", json!({"axes": ["x", "x", "z"]})),
        ("empty", json!({"axes": ["x", "", "z"]})),
        ("short", json!({"axes": ["x", "y"]})),
        (
            "both",
            json!({"axes": ["x", "y", "z"], "_ARRAY_DIMENSIONS": ["s", "r", "q"]}),
        ),
        (
            "same",
            json!({"axes": ["x", "y", "z"], "_ARRAY_DIMENSIONS": ["z", "y", "x"]}),
        ),
    ] {
        c.create_dataset(path, attrs.clone()).unwrap();
        c.set_attributes(path, &obj(user)).unwrap();
    }
    // Not every dimension named, no two alike: carried as an attribute.
    let z3 = t.path("out.zarr");
    for path in ["dup", "empty", "short"] {
        ok(&["cp", &format!("{n5_src}/{path}"), &format!("{z3}/{path}")]);
        let out = Container::open(&z3, Mode::Read).unwrap();
        let doc = out.open_dataset(path).unwrap().metadata().unwrap();
        assert!(doc.get("dimension_names").is_none(), "{doc}");
        assert_eq!(
            out.attributes(path).unwrap()["axes"],
            c.attributes(path).unwrap()["axes"]
        );
    }
    // Into Zarr v2, _ARRAY_DIMENSIONS holding other names is refused...
    let z2 = format!("zarr2:{}", t.path("v2"));
    fails(
        &["cp", &format!("{n5_src}/both"), &format!("{z2}/both")],
        1,
        "'_ARRAY_DIMENSIONS'",
    );
    assert!(!Path::new(&t.path("v2")).exists());
    // ... and holding the same ones is no conflict.
    ok(&["cp", &format!("{n5_src}/same"), &format!("{z2}/same")]);
    let c2 = Container::open(&z2, Mode::Read).unwrap();
    assert_eq!(
        obj(c2.attributes("same").unwrap()),
        obj(json!({"_ARRAY_DIMENSIONS": ["z", "y", "x"]}))
    );
    // A Zarr v3 array named z, y, x with a user attribute axes of other
    // names cannot go into N5, where axes holds the names.
    let named = t.path("named.zarr");
    let cz = Container::open(format!("zarr3:{named}"), Mode::Create).unwrap();
    let mut doc = Container::dataset_document(n5::format::Format::Zarr3, &attrs).unwrap();
    doc["dimension_names"] = json!(["z", "y", "x"]);
    cz.create_dataset_json("a", &doc).unwrap();
    cz.set_attributes("a", &obj(json!({"axes": ["p", "q", "r"]})))
        .unwrap();
    let out = t.path("named.n5");
    fails(
        &["cp", &format!("{named}/a"), &format!("{out}/a")],
        1,
        "'axes'",
    );
    assert!(!Path::new(&out).exists());
    cz.set_attributes("a", &obj(json!({"axes": ["x", "y", "z"]})))
        .unwrap();
    ok(&["cp", &format!("{named}/a"), &format!("{out}/a")]);
    let cn = Container::open(&out, Mode::Read).unwrap();
    assert_eq!(cn.attributes("a").unwrap()["axes"], json!(["x", "y", "z"]));
}

#[test]
fn a_copy_onto_a_node_of_the_other_kind_is_refused_before_writing() {
    let t = TempDir::new("zarr-kinds");
    let src = t.path("src.n5");
    make_source(&src);
    for dst in [t.path("dst.zarr"), t.path("dst.n5")] {
        // An array "a" and a group "g" with a child.
        ok(&["cp", &format!("{src}/r2/u16"), &format!("{dst}/a")]);
        ok(&["cp", &format!("{src}/r1"), &format!("{dst}/g")]);
        let before = mtimes(Path::new(&dst));
        // A group onto the array.
        let r = fails(
            &["cp", &format!("{src}/r2"), &format!("{dst}/a")],
            1,
            "a dataset is already there",
        );
        assert!(r.stderr.contains(&format!("{dst}/a:")), "{}", r.stderr);
        // An array onto the group.
        let r = fails(
            &["cp", &format!("{src}/r2/f64"), &format!("{dst}/g")],
            1,
            "a group is already there",
        );
        assert!(r.stderr.contains(&format!("{dst}/g:")), "{}", r.stderr);
        // Anything inside the array.
        fails(
            &["cp", &format!("{src}/r2/f64"), &format!("{dst}/a/x")],
            1,
            "'a' is a dataset",
        );
        assert_eq!(mtimes(Path::new(&dst)), before, "{dst} was written");
        // A whole tree whose group "r2" is an array at the destination.
        let tree = format!("{dst}/t");
        ok(&["cp", &format!("{src}/r2/u16"), &format!("{tree}/r2")]);
        let before_tree = mtimes(Path::new(&dst));
        fails(&["cp", &src, &tree], 1, "a dataset is already there");
        assert_eq!(mtimes(Path::new(&dst)), before_tree, "{dst} was written");
        let c = Container::open(&dst, Mode::Read).unwrap();
        assert!(c.dataset_exists("a").unwrap());
        assert!(!c.dataset_exists("g").unwrap());
        assert!(c.dataset_exists("g/i64").unwrap());
    }
}

#[test]
fn a_damaged_source_block_is_named_at_the_source() {
    let t = TempDir::new("zarr-damaged-source");
    let src = t.path("src.n5");
    make_source(&src);
    // Garble the compressed data of block [0, 0] of r2/u16.
    let block = Path::new(&src).join("r2/u16/0/0");
    let mut bytes = std::fs::read(&block).unwrap();
    let n = bytes.len();
    for b in &mut bytes[n / 2..] {
        *b = 0xff;
    }
    std::fs::write(&block, &bytes).unwrap();
    // Block by block (N5 to N5) and by regions (into Zarr).
    for (dst, named) in [
        (t.path("out.n5"), block.display().to_string()),
        (t.path("out.zarr"), format!("{src}/r2/u16")),
    ] {
        let r = common::run(&["cp", &format!("{src}/r2/u16"), &dst]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(
            r.stderr.starts_with(&format!("n5: {named}: ")),
            "{dst}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains(&dst), "{}", r.stderr);
    }
}
