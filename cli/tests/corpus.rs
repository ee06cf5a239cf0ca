//! Every subcommand against the peer-written corpus in `../shared/corpus`:
//! listings and info agree with the manifest, `cat` gives each array's
//! sha256, `verify` finds nothing wrong, `attrs get` reads what the peers
//! wrote, and `cp` copies whole containers exactly.

mod common;

use std::collections::BTreeMap;

use common::{corpus, fails, json, manifest, ok, run, TempDir};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const CONTAINERS: [&str; 5] = [
    "tensorstore.n5",
    "z5py.n5",
    "zarr2.n5",
    "java-n5.n5",
    "rust-n5.n5",
];

fn datasets_of<'a>(m: &'a Value, container: &str) -> Vec<&'a Value> {
    m["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["container"] == container)
        .collect()
}

#[test]
fn ls_and_tree_list_every_dataset_with_its_metadata() {
    let Some(c) = corpus() else { return };
    let m = manifest(&c);
    for name in CONTAINERS {
        let root = c.join(name).to_string_lossy().into_owned();
        let listed = json(&["ls", "-r", "--json", &root]);
        let by_path: BTreeMap<String, &Value> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["path"].as_str().unwrap().to_string(), e))
            .collect();
        let expected = datasets_of(&m, name);
        let datasets = by_path.values().filter(|e| e["type"] == "dataset").count();
        assert_eq!(datasets, expected.len(), "{name}: datasets listed");
        for d in expected {
            let path = d["path"].as_str().unwrap();
            let e = by_path
                .get(path)
                .unwrap_or_else(|| panic!("{name}: {path} not listed"));
            assert_eq!(e["type"], "dataset", "{name}/{path}");
            assert_eq!(e["dataType"], d["dataType"], "{name}/{path}");
            assert_eq!(e["dimensions"], d["dimensions"], "{name}/{path}");
            assert_eq!(e["blockSize"], d["blockSize"], "{name}/{path}");
            assert_eq!(
                e["compression"]["type"], d["compression"]["type"],
                "{name}/{path}"
            );
        }
        // The text listing has one line per entry; the tree one per node
        // plus its root line.
        let text = ok(&["ls", "-r", &root]).text();
        assert_eq!(text.lines().count(), by_path.len(), "{name}: ls -r lines");
        let tree = ok(&["tree", &root]).text();
        assert_eq!(
            tree.lines().count(),
            by_path.len() + 1,
            "{name}: tree lines"
        );
        assert!(tree.contains("└── "), "{name}: {tree}");
        // The JSON tree holds the same datasets.
        fn count(v: &Value) -> usize {
            let own = usize::from(v["type"] == "dataset");
            own + v["children"]
                .as_array()
                .map(|c| c.iter().map(count).sum())
                .unwrap_or(0)
        }
        assert_eq!(
            count(&json(&["tree", "--json", &root])),
            datasets,
            "{name}: tree --json"
        );
    }
}

#[test]
fn info_agrees_with_the_manifest() {
    let Some(c) = corpus() else { return };
    let m = manifest(&c);
    for d in m["datasets"].as_array().unwrap() {
        let name = d["container"].as_str().unwrap();
        let path = d["path"].as_str().unwrap();
        let arg = c.join(name).join(path).to_string_lossy().into_owned();
        let info = json(&["info", "--json", &arg]);
        let what = format!("{name}/{path}");
        assert_eq!(info["path"], path, "{what}");
        assert_eq!(info["dataType"], d["dataType"], "{what}");
        assert_eq!(info["gridShape"], d["grid_shape"], "{what}");
        let blocks = d["blocks"].as_array().unwrap();
        assert_eq!(info["blocks"]["stored"], json!(blocks.len()), "{what}");
        let grid: u64 = d["grid_shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_u64().unwrap())
            .product();
        assert_eq!(info["blocks"]["expected"], json!(grid), "{what}");
        let bytes: u64 = blocks
            .iter()
            .map(|b| b["file_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(info["bytesStored"], json!(bytes), "{what}");
        match d["end_blocks"].as_str().unwrap() {
            "truncated" => assert_eq!(info["edgeBlocks"], "truncated", "{what}"),
            "padded" => assert_eq!(info["edgeBlocks"], "padded", "{what}"),
            _ => assert_eq!(info["edgeBlockCounts"]["padded"], 0, "{what}"),
        }
    }
    // The text form names the same facts.
    let arg = c.join("tensorstore.n5/compression/gzip/uint16");
    let text = ok(&["info", arg.to_str().unwrap()]).text();
    assert!(text.contains("padded"), "{text}");
    assert!(text.contains("15 of 15 stored"), "{text}");
}

#[test]
fn cat_gives_every_array_of_the_manifest() {
    let Some(c) = corpus() else { return };
    let m = manifest(&c);
    let mut checked = 0;
    for d in m["datasets"].as_array().unwrap() {
        if d["semantics"] != "array" {
            continue;
        }
        let arg = c
            .join(d["container"].as_str().unwrap())
            .join(d["path"].as_str().unwrap());
        let r = ok(&["cat", arg.to_str().unwrap()]);
        assert_eq!(
            r.stdout.len() as u64,
            d["array_nbytes"].as_u64().unwrap(),
            "{arg:?}"
        );
        let sha = format!("{:x}", Sha256::digest(&r.stdout));
        assert_eq!(sha, d["array_sha256"].as_str().unwrap(), "{arg:?}");
        checked += 1;
    }
    assert!(checked > 300, "only {checked} arrays checked");
}

#[test]
fn cat_npy_and_regions() {
    let Some(c) = corpus() else { return };
    let arg = c.join("java-n5.n5/dtype/uint16");
    let arg = arg.to_str().unwrap();
    let whole = ok(&["cat", arg]).stdout;
    // [13, 11, 7] elements; the region at (1, 2, 3) of shape (4, 5, 2).
    let region = ok(&["cat", arg, "--offset", "1,2,3", "--shape", "4,5,2"]).stdout;
    let mut expected = Vec::new();
    for z in 3..5 {
        for y in 2..7 {
            for x in 1..5 {
                let i = 2 * (x + 13 * (y + 11 * z));
                expected.extend_from_slice(&whole[i..i + 2]);
            }
        }
    }
    assert_eq!(region, expected);
    // The same region as .npy: a header, then the same bytes.
    let npy = ok(&[
        "cat", arg, "--offset", "1,2,3", "--shape", "4,5,2", "-f", "npy",
    ])
    .stdout;
    assert_eq!(&npy[..6], b"\x93NUMPY");
    let header_len = 10 + u16::from_le_bytes([npy[8], npy[9]]) as usize;
    assert_eq!(header_len % 64, 0);
    let header = String::from_utf8_lossy(&npy[10..header_len]);
    assert!(header.contains("'descr': '<u2'"), "{header}");
    assert!(header.contains("'shape': (2, 5, 4)"), "{header}");
    assert_eq!(&npy[header_len..], &expected[..]);
    // A region outside the dataset is a usage error naming it.
    fails(
        &["cat", arg, "--offset", "10,0,0", "--shape", "4,1,1"],
        2,
        arg,
    );
    // Strings have no array.
    let s = c.join("java-n5.n5/string/raw");
    fails(&["cat", s.to_str().unwrap()], 1, "string");
}

#[test]
fn info_stats_match_the_data() {
    let Some(c) = corpus() else { return };
    for (path, size) in [
        ("java-n5.n5/dtype_gzip/uint16", 2),
        ("tensorstore.n5/compression/zstd/uint16", 2),
        ("java-n5.n5/sparse/2d", 2),
        ("zarr2.n5/dtype/uint8", 1),
    ] {
        let arg = c.join(path);
        let arg = arg.to_str().unwrap();
        let bytes = ok(&["cat", arg]).stdout;
        let values: Vec<u64> = bytes
            .chunks_exact(size)
            .map(|b| {
                if size == 2 {
                    u16::from_le_bytes([b[0], b[1]]) as u64
                } else {
                    b[0] as u64
                }
            })
            .collect();
        let info = json(&["info", "--stats", "--json", "--threads", "2", arg]);
        let s = &info["stats"];
        assert_eq!(s["min"], json!(values.iter().min().unwrap()), "{path}");
        assert_eq!(s["max"], json!(values.iter().max().unwrap()), "{path}");
        assert_eq!(s["count"], json!(values.len()), "{path}");
        let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
        assert!(
            (s["mean"].as_f64().unwrap() - mean).abs() < 1e-9 * mean.max(1.0),
            "{path}"
        );
    }
    // Floats: NaN is counted apart, infinities show as text.
    let arg = c.join("java-n5.n5/dtype/float32");
    let info = json(&["info", "--stats", "--json", arg.to_str().unwrap()]);
    assert_eq!(info["stats"]["nan"], 1);
    assert_eq!(info["stats"]["min"], "-inf");
    assert_eq!(info["stats"]["max"], "inf");
}

#[test]
fn verify_finds_every_corpus_container_sound() {
    let Some(c) = corpus() else { return };
    let m = manifest(&c);
    for name in CONTAINERS {
        let root = c.join(name);
        let v = json(&["verify", "--json", root.to_str().unwrap()]);
        assert_eq!(v["ok"], true, "{name}: {v}");
        let blocks: usize = datasets_of(&m, name)
            .iter()
            .map(|d| d["blocks"].as_array().unwrap().len())
            .sum();
        assert_eq!(v["blocks"], json!(blocks), "{name}");
        assert_eq!(v["datasets"], json!(datasets_of(&m, name).len()), "{name}");
        let text = ok(&["verify", root.to_str().unwrap()]).text();
        assert!(text.trim_end().ends_with(": ok"), "{text}");
    }
}

#[test]
fn attrs_get_reads_what_the_peers_wrote() {
    let Some(c) = corpus() else { return };
    let m = manifest(&c);
    for g in m["groups"].as_array().unwrap() {
        if g["attributes"].is_null() {
            continue;
        }
        let arg = c
            .join(g["container"].as_str().unwrap())
            .join(g["path"].as_str().unwrap());
        let doc = json(&["attrs", "get", "--json", arg.to_str().unwrap()]);
        assert_eq!(doc, g["attributes"], "{arg:?}");
    }
    let ap = c.join("java-n5.n5/attrpaths");
    let ap = ap.to_str().unwrap();
    assert_eq!(
        ok(&["attrs", "get", ap, "obj/list[1]/name"]).text(),
        "second\n"
    );
    assert_eq!(
        json(&["attrs", "get", "--json", ap, "matrix[1][2]"]),
        json!(5)
    );
    assert_eq!(
        json(&["attrs", "get", "--json", ap, "arr"]),
        json!([0, 0, 0, 7])
    );
    assert_eq!(
        ok(&["attrs", "get", ap, r"escaped\/slash"]).text(),
        "key contains a slash\n"
    );
    assert_eq!(
        json(&["attrs", "get", "--json", ap, "uint64_max"]),
        json!(18446744073709551615u64)
    );
    fails(&["attrs", "get", ap, "no/such[3]"], 1, ap);
    // The corpus is read-only to us: nothing above wrote to it.
    let r = run(&["attrs", "get", "--json", ap]);
    assert_eq!(r.code, 0);
}

#[test]
fn cp_copies_whole_peer_containers_exactly() {
    let Some(c) = corpus() else { return };
    let m = manifest(&c);
    let t = TempDir::new("cp-corpus");
    for name in ["java-n5.n5", "zarr2.n5"] {
        let src = c.join(name);
        let src = src.to_str().unwrap();
        let dst = t.path(name);
        let first = ok(&["cp", "--threads", "2", src, &dst]).text();
        assert!(first.contains(" 0 already identical"), "{first}");
        // Every array reads back with the manifest's checksum.
        for d in datasets_of(&m, name) {
            let path = d["path"].as_str().unwrap();
            let arg = format!("{dst}/{path}");
            if d["semantics"] == "array" {
                let sha = format!("{:x}", Sha256::digest(ok(&["cat", &arg]).stdout));
                assert_eq!(sha, d["array_sha256"].as_str().unwrap(), "{arg}");
            }
        }
        let v = json(&["verify", "--json", &dst]);
        assert_eq!(v["ok"], true, "{v}");
        // Attributes of groups came along.
        assert_eq!(
            json(&["attrs", "get", "--json", &format!("{dst}/groups")]),
            json(&["attrs", "get", "--json", &format!("{src}/groups")]),
        );
        // A second copy finds everything in place.
        let second = ok(&["cp", src, &dst]).text();
        assert!(
            second.contains(": 0 blocks written") || second.contains(", 0 blocks written"),
            "{second}"
        );
        assert!(second.contains("0 removed"), "{second}");
    }
    // Per-block data (strings, varlength) is copied block for block: raw
    // blocks come out byte for byte as Java wrote them.
    for ds in ["string/raw", "varlength/int32_raw"] {
        let src_ds = c.join("java-n5.n5").join(ds);
        let d = datasets_of(&m, "java-n5.n5")
            .into_iter()
            .find(|d| d["path"] == ds)
            .unwrap();
        for b in d["blocks"].as_array().unwrap() {
            let key: Vec<String> = b["grid"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g.to_string())
                .collect();
            let key = key.join("/");
            let a = std::fs::read(src_ds.join(&key)).unwrap();
            let b = std::fs::read(format!("{}/{ds}/{key}", t.path("java-n5.n5"))).unwrap();
            assert_eq!(a, b, "{ds}/{key}");
        }
    }
}
