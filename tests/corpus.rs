//! Reads every container of the peer corpus (`../shared/corpus`: written by
//! tensorstore, z5py, zarr 2, Java n5 and rust-n5) and compares each dataset
//! with the manifest: whole arrays by sha256, per-block datasets (varlength,
//! string, object) block by block, and every group's attributes.

mod common;

use n5::{Container, Mode};
use serde_json::Value;

use common::{corpus_dir, manifest, sha256, u64s};

/// JSON equality with numbers compared by value (the manifest was written by
/// another JSON library, which may spell `1.797e308` as `1.797e+308`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x.to_bits() == y.to_bits(),
                _ => x.to_string() == y.to_string(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Check one manifest dataset; returns a description of the mismatch, if any.
fn check_dataset(container: &Container, d: &Value) -> Result<(), String> {
    let path = d["path"].as_str().unwrap();
    let ds = container
        .open_dataset(path)
        .map_err(|e| format!("open: {e}"))?;
    let attrs = ds.attributes();
    if attrs.dimensions != u64s(&d["dimensions"]) {
        return Err(format!("dimensions {:?}", attrs.dimensions));
    }
    if d["semantics"] == "per-block" {
        for b in d["expected_blocks"].as_array().unwrap() {
            let grid = u64s(&b["grid"]);
            let block = ds
                .read_block(&grid)
                .map_err(|e| format!("block {grid:?}: {e}"))?
                .ok_or_else(|| format!("block {grid:?} missing"))?;
            if block.header.num_elements != b["numElements"].as_u64().unwrap() {
                return Err(format!(
                    "block {grid:?}: numElements {}",
                    block.header.num_elements
                ));
            }
            if !b["size"].is_null() {
                let size: Vec<u64> = block.header.size.iter().map(|&s| s as u64).collect();
                if size != u64s(&b["size"]) {
                    return Err(format!("block {grid:?}: size {size:?}"));
                }
            }
            let mut be = block.data.clone();
            n5::block::swap_to_from_be(&mut be, attrs.data_type.size());
            if sha256(&be) != b["payload_sha256"].as_str().unwrap() {
                return Err(format!("block {grid:?}: payload differs"));
            }
            if let Some(strings) = b.get("strings") {
                let (_, got) = ds
                    .read_string_block(&grid)
                    .map_err(|e| e.to_string())?
                    .unwrap();
                let want: Vec<&str> = strings
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap())
                    .collect();
                if got != want {
                    return Err(format!("block {grid:?}: strings {got:?} != {want:?}"));
                }
            }
        }
        return Ok(());
    }
    let nbytes = d["array_nbytes"].as_u64().unwrap() as usize;
    let mut buf = vec![0u8; nbytes];
    let zeros = vec![0u64; attrs.ndim()];
    ds.read_region(&zeros, &attrs.dimensions, &mut buf)
        .map_err(|e| format!("read: {e}"))?;
    if cfg!(target_endian = "big") {
        n5::block::swap_to_from_be(&mut buf, attrs.data_type.size());
    }
    let got = sha256(&buf);
    if got != d["array_sha256"].as_str().unwrap() {
        return Err(format!("array sha256 {got} differs"));
    }
    Ok(())
}

fn check_container(name: &str) {
    let m = manifest();
    let container = Container::open(corpus_dir().join(name), Mode::Read)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for d in m["datasets"].as_array().unwrap() {
        if d["container"] != name {
            continue;
        }
        checked += 1;
        if let Err(e) = check_dataset(&container, d) {
            failures.push(format!("{name}/{}: {e}", d["path"].as_str().unwrap()));
        }
    }
    for g in m["groups"].as_array().unwrap() {
        if g["container"] != name {
            continue;
        }
        checked += 1;
        let path = g["path"].as_str().unwrap();
        match container.attributes(path) {
            Err(e) => failures.push(format!("{name}/{path}: attributes: {e}")),
            Ok(got) => {
                let want = if g["attributes"].is_null() {
                    serde_json::json!({})
                } else {
                    g["attributes"].clone()
                };
                if !json_eq(&got, &want) {
                    failures.push(format!("{name}/{path}: attributes {got} != {want}"));
                }
            }
        }
    }
    assert!(checked > 0, "no manifest entries for {name}");
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{name}: all {checked} datasets and groups match the manifest");
}

#[test]
fn reads_tensorstore_container() {
    check_container("tensorstore.n5");
}

#[test]
fn reads_z5py_container() {
    check_container("z5py.n5");
}

#[test]
fn reads_zarr2_container() {
    check_container("zarr2.n5");
}

#[test]
fn reads_java_n5_container() {
    check_container("java-n5.n5");
}

#[test]
fn reads_rust_n5_container() {
    check_container("rust-n5.n5");
}

#[test]
fn root_versions_of_every_writer() {
    let m = manifest();
    for c in m["containers"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let container = Container::open(corpus_dir().join(name), Mode::Read).unwrap();
        let want = c["root_attributes"]
            .get("n5")
            .and_then(|v| v.as_str())
            .map(String::from);
        assert_eq!(container.version().unwrap(), want, "{name}");
    }
}
