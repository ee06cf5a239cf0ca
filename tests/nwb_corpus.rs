//! The hdmf-zarr corpus (`../shared/corpus-hdmf`, NWB files written by
//! hdmf-zarr 0.14 as Zarr v3 and by hdmf-zarr 0.13 as Zarr v2) through the
//! Rust API: every array reads as the manifest says (numeric, bool and
//! struct arrays and 0-d scalars by the sha256 of their C-order bytes or
//! their decoded values; strings of vlen-utf8, vlen-bytes and json2 arrays
//! by value, the JSON text hashed as Python's `json.dumps` writes it), and
//! every reference dataset (v3 path strings, v2 pickles, compounds of both
//! generations) gives its elements' targets as normalised references.

mod common;

use std::path::PathBuf;

use common::sha256;
use n5::{Container, Mode};
use serde_json::{json, Value};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus-hdmf")
}

fn manifest() -> Value {
    serde_json::from_slice(&std::fs::read(corpus().join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn every_array_reads_as_the_manifest_says() {
    let m = manifest();
    let mut checked = 0;
    for (name, c) in m["containers"].as_object().unwrap() {
        let container = Container::open(corpus().join(name), Mode::Read).unwrap();
        let sums = &c["numeric_array_sha256"];
        for a in c["arrays"].as_array().unwrap() {
            let path = a["path"].as_str().unwrap();
            let d = container
                .open_dataset(path)
                .unwrap_or_else(|e| panic!("{name}{path}: {e}"));
            if d.element_size() == 0 {
                // Strings (vlen-utf8, vlen-bytes, json2): the JSON text is
                // what Python's json.dumps(values, ensure_ascii=False) gives.
                let attrs = d.attributes();
                let zeros = vec![0u64; attrs.ndim()];
                if d.data_type() == n5::DataType::Object && a["object_codec"] == "vlen-bytes" {
                    // Bytes (base64 in JSON) that hdmf-zarr wrote from text.
                    let (data, lengths) = d.read_region_bytes(&zeros, &attrs.dimensions).unwrap();
                    let mut at = 0;
                    let texts: Vec<Value> = lengths
                        .iter()
                        .map(|&l| {
                            let t = std::str::from_utf8(&data[at..at + l as usize]).unwrap();
                            at += l as usize;
                            json!(t)
                        })
                        .collect();
                    assert_eq!(Value::Array(texts), a["values"], "{name}{path}");
                    checked += 1;
                } else if let Some(want) = a.get("sha256_json_values").and_then(Value::as_str) {
                    let text = d
                        .read_region_json(&zeros, &attrs.dimensions)
                        .unwrap_or_else(|e| panic!("{name}{path}: {e}"));
                    assert_eq!(sha256(text.as_bytes()), want, "{name}{path}: {text:.200}");
                    checked += 1;
                }
                continue;
            }
            let attrs = d.attributes();
            let zeros = vec![0u64; attrs.ndim()];
            let mut buf =
                vec![0u8; attrs.dimensions.iter().product::<u64>() as usize * d.element_size()];
            d.read_region(&zeros, &attrs.dimensions, &mut buf)
                .unwrap_or_else(|e| panic!("{name}{path}: {e}"));
            if let Some(want) = sums.get(path).and_then(Value::as_str) {
                // The sums are of little-endian bytes: native on every
                // machine this is tested on; a big-endian one swaps first.
                if cfg!(target_endian = "big") {
                    d.data_type().swap_in_place(&mut buf);
                }
                assert_eq!(sha256(&buf), want, "{name}{path}");
                checked += 1;
            }
            if let Some(values) = a.get("values").filter(|v| !v.is_null()) {
                let text = d.read_region_json(&zeros, &attrs.dimensions).unwrap();
                let got: Value = serde_json::from_str(&text).unwrap();
                let want = if attrs.ndim() == 0 {
                    json!([values])
                } else {
                    values.clone()
                };
                assert_eq!(got, want, "{name}{path}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 50, "only {checked} arrays checked");
}

#[test]
fn every_reference_dataset_gives_its_targets_normalised() {
    let m = manifest();
    let mut elements = 0;
    for (name, c) in m["containers"].as_object().unwrap() {
        let container = Container::open(corpus().join(name), Mode::Read).unwrap();
        for r in c["reference_datasets"].as_array().unwrap() {
            let path = r["path"].as_str().unwrap();
            let d = container.open_dataset(path).unwrap();
            let attrs = d.attributes();
            let zeros = vec![0u64; attrs.ndim()];
            let text = d
                .read_region_json(&zeros, &attrs.dimensions)
                .unwrap_or_else(|e| panic!("{name}{path}: {e}"));
            let got: Value = serde_json::from_str(&text).unwrap();
            let got = got.as_array().unwrap();
            let want = r["elements"].as_array().unwrap();
            assert_eq!(got.len(), want.len(), "{name}{path}");
            for (g, w) in got.iter().zip(want) {
                // A compound row holds its references in fields.
                let pairs: Vec<(&Value, &Value)> = match w.get("references") {
                    Some(Value::Object(refs)) => {
                        for (field, v) in w["fields"].as_object().unwrap() {
                            assert_eq!(&g[field], v, "{name}{path}: {g}");
                        }
                        refs.iter().map(|(f, r)| (&g[f], r)).collect()
                    }
                    _ => vec![(g, w)],
                };
                for (g, w) in pairs {
                    assert_eq!(g["path"], w["path"], "{name}{path}: {g} vs {w}");
                    assert_eq!(g["source"], w["source"], "{name}{path}: {g} vs {w}");
                    if w["raw"].get("object_id").is_some() {
                        assert_eq!(g["object_id"], w["object_id"], "{name}{path}");
                    }
                    elements += 1;
                }
            }
        }
    }
    assert_eq!(elements, 20, "the manifest's reference elements");
}

#[test]
fn a_compound_of_references_gives_normalised_references() {
    let m = manifest();
    let c = &m["containers"]["nwb-links.nwb.zarr"];
    let entry = c["reference_datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/intervals/trials/timeseries")
        .unwrap();
    let container = Container::open(corpus().join("nwb-links.nwb.zarr"), Mode::Read).unwrap();
    let d = container
        .open_dataset("intervals/trials/timeseries")
        .unwrap();
    let dtype = d.dtype_json().unwrap();
    assert_eq!(dtype["name"], "struct");
    assert_eq!(dtype["size"], 2056);
    assert_eq!(dtype["reference_fields"], json!(["timeseries"]));
    assert_eq!(dtype["fields"][2]["type"]["length_bytes"], 2048);
    let rows: Value = serde_json::from_str(&d.read_region_json(&[0], &[3]).unwrap()).unwrap();
    let elements = entry["elements"].as_array().unwrap();
    assert_eq!(rows.as_array().unwrap().len(), elements.len());
    for (row, e) in rows.as_array().unwrap().iter().zip(elements) {
        let r = &e["references"]["timeseries"];
        assert_eq!(row["timeseries"]["path"], r["path"], "{row} vs {e}");
        assert_eq!(row["timeseries"]["source"], r["source"], "{row} vs {e}");
        assert_eq!(row["idx_start"], e["fields"]["idx_start"], "{row} vs {e}");
        assert_eq!(row["count"], e["fields"]["count"], "{row} vs {e}");
    }
}

#[test]
fn a_legacy_compound_without_its_chunk_reads_as_its_pickled_fill_value() {
    let dir = common::Scratch::new("nwb-corpus-fill");
    let src = corpus().join("nwb-links-v2.nwb.zarr/intervals/trials/timeseries");
    let dst = dir.join("c.zarr/t");
    std::fs::create_dir_all(&dst).unwrap();
    for f in [".zarray", ".zattrs"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    std::fs::write(dir.join("c.zarr/.zgroup"), br#"{"zarr_format": 2}"#).unwrap();
    let c = Container::open(dir.join("c.zarr"), Mode::Read).unwrap();
    let d = c.open_dataset("t").unwrap();
    assert_eq!(d.element_size(), 0);
    let rows: Value = serde_json::from_str(&d.read_region_json(&[0], &[3]).unwrap()).unwrap();
    let row = json!({"idx_start": 0, "count": 0, "timeseries": null});
    assert_eq!(rows, json!([row, row, row]));
}
