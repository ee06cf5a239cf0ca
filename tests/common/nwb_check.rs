//! The checks of the hdmf-zarr corpus (`shared/corpus-hdmf`) that hold
//! wherever its containers are (on disk, on S3, over HTTP): every array
//! reads as the manifest says (numeric, bool and struct arrays and 0-d
//! scalars by the sha256 of their C-order bytes or their decoded values;
//! strings of vlen-utf8, vlen-bytes and json2 arrays by value, the JSON
//! text hashed as Python's `json.dumps` writes it), and every reference
//! dataset (v3 path strings, v2 pickles, compounds of both generations)
//! gives its elements' targets as normalised references.

use n5::Container;
use serde_json::{json, Value};

use super::sha256;

/// Check every array of the manifest entry `c` of the container `name`
/// through `container`; returns how many were compared with the manifest.
pub fn check_arrays(name: &str, c: &Value, container: &Container) -> usize {
    let mut checked = 0;
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
    checked
}

/// Check every reference dataset of the manifest entry `c` of the
/// container `name` through `container`; returns how many reference
/// elements were compared.
pub fn check_reference_datasets(name: &str, c: &Value, container: &Container) -> usize {
    let mut elements = 0;
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
    elements
}
