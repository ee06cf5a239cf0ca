//! The hdmf-zarr corpus (`../shared/corpus-hdmf`, NWB files written by
//! hdmf-zarr 0.14 as Zarr v3 and by hdmf-zarr 0.13 as Zarr v2) on disk
//! through the Rust API (the checks in tests/common/nwb_check.rs, which
//! tests/nwb_remote_corpus.rs makes on S3 and over HTTP): every array reads
//! as the manifest says (numeric, bool and
//! struct arrays and 0-d scalars by the sha256 of their C-order bytes or
//! their decoded values; strings of vlen-utf8, vlen-bytes and json2 arrays
//! by value, the JSON text hashed as Python's `json.dumps` writes it), and
//! every reference dataset (v3 path strings, v2 pickles, compounds of both
//! generations) gives its elements' targets as normalised references.

mod common;

use std::path::Path;

use common::hdmf_corpus_dir;
use common::nwb_check::{check_arrays, check_reference_datasets};
use n5::{Container, Mode};
use serde_json::{json, Value};

fn manifest(corpus: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn every_array_reads_as_the_manifest_says() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    let mut checked = 0;
    for (name, c) in m["containers"].as_object().unwrap() {
        let container = Container::open(corpus.join(name), Mode::Read).unwrap();
        checked += check_arrays(name, c, &container);
    }
    assert!(checked >= 50, "only {checked} arrays checked");
}

#[test]
fn every_reference_dataset_gives_its_targets_normalised() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    let mut elements = 0;
    for (name, c) in m["containers"].as_object().unwrap() {
        let container = Container::open(corpus.join(name), Mode::Read).unwrap();
        elements += check_reference_datasets(name, c, &container);
    }
    assert_eq!(elements, 20, "the manifest's reference elements");
}

#[test]
fn a_compound_of_references_gives_normalised_references() {
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let m = manifest(&corpus);
    let c = &m["containers"]["nwb-links.nwb.zarr"];
    let entry = c["reference_datasets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/intervals/trials/timeseries")
        .unwrap();
    let container = Container::open(corpus.join("nwb-links.nwb.zarr"), Mode::Read).unwrap();
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
    let Some(corpus) = hdmf_corpus_dir() else {
        return;
    };
    let dir = common::Scratch::new("nwb-corpus-fill");
    let src = corpus.join("nwb-links-v2.nwb.zarr/intervals/trials/timeseries");
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
