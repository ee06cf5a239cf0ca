//! Reads every container of the peer-written Zarr corpus
//! (`../shared/corpus-zarr`: zarr-python 3 writing v3 and v2, tensorstore's
//! zarr3 and zarr drivers, z5py) and compares it with the manifest: the
//! format each container opens as, every group's and array's existence and
//! kind, every group's user attributes, and the root's children.

mod common;

use std::path::PathBuf;

use n5::{Container, Mode};
use serde_json::Value;

fn corpus_zarr_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus-zarr")
}

fn manifest() -> Value {
    let path = corpus_zarr_dir().join("manifest.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap()
}

/// The container `name` of the corpus, opened for reading as the manifest
/// says (with its prefix where the suffix would pick the wrong format).
fn open(m: &Value, name: &str) -> Container {
    let prefix = m["containers"][name]["open_prefix"].as_str().unwrap();
    let path = corpus_zarr_dir().join(name);
    let location = format!("{prefix}{}", path.display());
    Container::open(&location, Mode::Read).unwrap_or_else(|e| panic!("{location}: {e}"))
}

#[test]
fn every_container_opens_in_its_format_with_its_hierarchy() {
    let m = manifest();
    for (name, c) in m["containers"].as_object().unwrap() {
        let container = open(&m, name);
        let want = match c["zarr_format"].as_u64().unwrap() {
            3 => "zarr3",
            _ => "zarr2",
        };
        assert_eq!(container.format().name(), want, "{name}");
        let children: Vec<String> = c["root_children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            container.list("").unwrap(),
            children,
            "{name}: root children"
        );
    }
    for g in m["groups"].as_array().unwrap() {
        let (name, path) = (
            g["container"].as_str().unwrap(),
            g["path"].as_str().unwrap(),
        );
        let container = open(&m, name);
        assert!(container.exists(path).unwrap(), "{name}/{path}");
        assert!(!container.dataset_exists(path).unwrap(), "{name}/{path}");
        let want = match &g["attributes"] {
            Value::Null => Value::Object(Default::default()),
            a => a.clone(),
        };
        assert_eq!(container.attributes(path).unwrap(), want, "{name}/{path}");
    }
    for a in m["arrays"].as_array().unwrap() {
        let (name, path) = (
            a["container"].as_str().unwrap(),
            a["path"].as_str().unwrap(),
        );
        let container = open(&m, name);
        assert!(container.exists(path).unwrap(), "{name}/{path}");
        assert!(container.dataset_exists(path).unwrap(), "{name}/{path}");
        assert_eq!(
            container.list(path).unwrap(),
            Vec::<String>::new(),
            "{name}/{path}"
        );
        // The directories of an array's chunks are no nodes.
        for key in a["keys"].as_array().unwrap() {
            let key = key.as_str().unwrap();
            if let Some((dir, _)) = key.rsplit_once('/') {
                let inner = format!("{path}/{dir}");
                assert!(!container.exists(&inner).unwrap(), "{name}/{inner}");
            }
        }
        let want = match &a["attributes"] {
            Value::Null => Value::Object(Default::default()),
            at => at.clone(),
        };
        assert_eq!(container.attributes(path).unwrap(), want, "{name}/{path}");
    }
}

/// Groups and user attributes written in each Zarr format land in that
/// format's own documents (zarr.json with node_type and attributes; .zgroup
/// and .zattrs), read back through the same API, and removing a group
/// removes its documents.
#[test]
fn groups_and_attributes_written_in_each_format() {
    let scratch = common::Scratch::new("zarr-groups");
    for (format, group_doc, attrs_doc) in [
        ("zarr3", "zarr.json", "zarr.json"),
        ("zarr2", ".zgroup", ".zattrs"),
    ] {
        let root = scratch.join(&format!("{format}.zarr"));
        let options = n5::Options::from_json(&format!(r#"{{"format": "{format}"}}"#)).unwrap();
        let c = Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap();
        assert_eq!(c.format().name(), format);
        assert!(
            root.join(group_doc).is_file(),
            "{format}: the root is a group"
        );
        c.create_group("a/b").unwrap();
        for g in ["a", "a/b"] {
            assert!(root.join(g).join(group_doc).is_file(), "{format}: {g}");
        }
        c.set_attribute("a", "x/y", serde_json::json!([1, 2.5]))
            .unwrap();
        c.set_attribute("a", "name", serde_json::json!("ä"))
            .unwrap();
        let want = serde_json::json!({"x": {"y": [1, 2.5]}, "name": "ä"});
        assert_eq!(c.attributes("a").unwrap(), want, "{format}");
        let doc: Value =
            serde_json::from_slice(&std::fs::read(root.join("a").join(attrs_doc)).unwrap())
                .unwrap();
        if format == "zarr3" {
            assert_eq!(doc["node_type"], "group");
            assert_eq!(doc["zarr_format"], 3);
            assert_eq!(doc["attributes"], want);
        } else {
            assert_eq!(doc, want);
        }
        assert_eq!(c.remove_attribute("a", "name").unwrap(), Some("ä".into()));
        assert_eq!(c.list("").unwrap(), vec!["a"]);
        assert_eq!(c.deep_list("").unwrap(), vec!["a", "a/b"]);
        assert!(c.exists("a/b").unwrap() && !c.exists("a/c").unwrap());
        assert!(!c.dataset_exists("a").unwrap());
        // Reopened without saying the format: its documents tell it.
        let again = Container::open(&root, Mode::Read).unwrap();
        assert_eq!(again.format().name(), format);
        assert_eq!(again.attributes("a").unwrap()["x"]["y"][1], 2.5);
        assert!(c.remove("a").unwrap());
        assert!(!root.join("a").exists());
        assert_eq!(c.list("").unwrap(), Vec::<String>::new());
    }
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

/// Every array of the corpus reads back to the manifest's checksum, whole
/// through a region read and block by block through the block API (inner
/// chunks of shards through the shard index), with its shapes in N5
/// order.
#[test]
fn every_array_reads_back_exactly() {
    let m = manifest();
    let mut checked = 0;
    for a in m["arrays"].as_array().unwrap() {
        let (name, path) = (
            a["container"].as_str().unwrap(),
            a["path"].as_str().unwrap(),
        );
        let what = format!("{name}/{path}");
        let container = open(&m, name);
        let d = container
            .open_dataset(path)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let shape = u64s(&a["shape"]);
        let chunk = u64s(&a["chunk_shape"]);
        let attrs = d.attributes();
        assert_eq!(attrs.dimensions, reversed(&shape), "{what}");
        let block: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
        assert_eq!(block, reversed(&chunk), "{what}");
        let shard = match &a["shard_shape"] {
            Value::Null => chunk.clone(),
            s => u64s(s),
        };
        assert_eq!(d.shard_shape(), reversed(&shard), "{what}");
        assert_eq!(
            attrs.data_type.name(),
            a["dtype"].as_str().unwrap(),
            "{what}"
        );
        assert_eq!(
            d.metadata().unwrap(),
            a["metadata"],
            "{what}: the metadata document"
        );

        // The whole array, as a region.
        let dims = attrs.dimensions.clone();
        let elem = attrs.data_type.size();
        let n: u64 = dims.iter().product();
        let mut whole = vec![0u8; n as usize * elem];
        d.read_region(&vec![0; dims.len()], &dims, &mut whole)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let want = a["array_sha256"].as_str().unwrap();
        assert_eq!(common::sha256(&whole), want, "{what}: region read");

        // Block by block.
        let grid: Vec<u64> = dims
            .iter()
            .zip(&block)
            .map(|(&d, &b)| d.div_ceil(b))
            .collect();
        let blocks: u64 = grid.iter().product();
        let mut assembled = vec![0u8; whole.len()];
        for k in 0..blocks {
            let mut rest = k;
            let pos: Vec<u64> = grid
                .iter()
                .map(|&g| {
                    let p = rest % g;
                    rest /= g;
                    p
                })
                .collect();
            let bshape = d.block_shape(&pos).unwrap();
            let mut buf = vec![0u8; bshape.iter().product::<u64>() as usize * elem];
            let found = d
                .read_block_into(&pos, &mut buf)
                .unwrap_or_else(|e| panic!("{what} block {pos:?}: {e}"));
            assert_eq!(d.block_exists(&pos).unwrap(), found, "{what} block {pos:?}");
            // Place it (N5 order, dimension 0 fastest).
            let offset: Vec<u64> = pos.iter().zip(&block).map(|(p, b)| p * b).collect();
            let rows: u64 = bshape[1..].iter().product();
            for r in 0..rows {
                let mut rem = r;
                let mut src = 0u64;
                let mut dst = offset[0];
                let (mut sstride, mut dstride) = (bshape[0], dims[0]);
                for dd in 1..dims.len() {
                    let i = rem % bshape[dd];
                    rem /= bshape[dd];
                    src += i * sstride;
                    dst += (offset[dd] + i) * dstride;
                    sstride *= bshape[dd];
                    dstride *= dims[dd];
                }
                let len = bshape[0] as usize * elem;
                let (s, t) = (src as usize * elem, dst as usize * elem);
                assembled[t..t + len].copy_from_slice(&buf[s..s + len]);
            }
        }
        assert_eq!(common::sha256(&assembled), want, "{what}: block reads");
        checked += 1;
    }
    assert_eq!(checked, m["arrays"].as_array().unwrap().len());
}
