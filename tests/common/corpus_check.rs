//! Checks of a corpus container against the manifest (`../shared/corpus`):
//! whole arrays by sha256, per-block datasets (varlength, string, object)
//! block by block, and every group's attributes, through any container
//! handle, so the same checks run on the local disk and through every
//! storage backend.

use n5::Container;
use serde_json::Value;

use super::{manifest, sha256, u64s};

/// JSON equality with numbers compared by value (the manifest was written by
/// another JSON library, which may spell `1.797e308` as `1.797e+308`).
pub fn json_eq(a: &Value, b: &Value) -> bool {
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
pub fn check_dataset(container: &Container, d: &Value) -> Result<(), String> {
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

/// Check every dataset and group of the corpus container `name` against
/// the manifest, read through `container` (wherever it is); panics listing
/// every mismatch.
pub fn check_against_manifest(container: &Container, name: &str) {
    let m = manifest();
    let mut failures = Vec::new();
    let mut checked = 0;
    for d in m["datasets"].as_array().unwrap() {
        if d["container"] != name {
            continue;
        }
        checked += 1;
        if let Err(e) = check_dataset(container, d) {
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

/// The calling thread's last error message of the C API.
fn c_error() -> String {
    // SAFETY: n5_last_error_message returns a NUL-terminated string owned
    // by the library, valid until the thread's next call.
    unsafe { std::ffi::CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Check every whole-array dataset and every group of the corpus container
/// `name` against the manifest through the C API, as a C program would:
/// `n5_container_open(location, N5_MODE_READ, options_json)`, then
/// `n5_dataset_open`, `n5_region_read` of the whole array and
/// `n5_attributes_get`. Returns how many entries were checked; panics
/// listing every mismatch.
pub fn check_through_c_api(location: &str, options_json: &str, name: &str) -> usize {
    use n5::ffi::{
        container::*, dataset::*, region::*, status::n5_dtype_size, N5_MODE_READ, N5_OK,
    };
    use std::ffi::CString;
    let m = manifest();
    let loc = CString::new(location).unwrap();
    let opts = CString::new(options_json).unwrap();
    // The C functions are safe to call from Rust; every pointer passed
    // points at a live, NUL-terminated string or a buffer of the length
    // given with it, and each handle is freed once, after its last use.
    {
        let c = n5_container_open(loc.as_ptr(), N5_MODE_READ, opts.as_ptr());
        assert!(!c.is_null(), "n5_container_open({location}): {}", c_error());
        let (mut checked, mut failures) = (0, Vec::new());
        for d in m["datasets"].as_array().unwrap() {
            if d["container"] != name || d["semantics"] == "per-block" {
                continue;
            }
            checked += 1;
            let path = d["path"].as_str().unwrap();
            let cpath = CString::new(path).unwrap();
            let ds = n5_dataset_open(c, cpath.as_ptr());
            if ds.is_null() {
                failures.push(format!("{path}: n5_dataset_open: {}", c_error()));
                continue;
            }
            let mut ndim = 0usize;
            let mut dtype = 0;
            assert_eq!(n5_dataset_ndim(ds, &mut ndim), N5_OK);
            assert_eq!(n5_dataset_dtype(ds, &mut dtype), N5_OK);
            let mut dims = vec![0u64; ndim];
            assert_eq!(n5_dataset_dimensions(ds, ndim, dims.as_mut_ptr()), N5_OK);
            let offset = vec![0u64; ndim];
            let len = dims.iter().product::<u64>() as usize * n5_dtype_size(dtype);
            let mut buf = vec![0u8; len];
            let status = n5_region_read(
                ds,
                ndim,
                offset.as_ptr(),
                dims.as_ptr(),
                dtype,
                buf.as_mut_ptr().cast(),
                len,
            );
            if status != N5_OK {
                failures.push(format!("{path}: n5_region_read: {}", c_error()));
            } else {
                if cfg!(target_endian = "big") {
                    n5::block::swap_to_from_be(&mut buf, n5_dtype_size(dtype));
                }
                if sha256(&buf) != d["array_sha256"].as_str().unwrap() {
                    failures.push(format!("{path}: the array's sha256 differs"));
                }
            }
            n5_dataset_free(ds);
        }
        for g in m["groups"].as_array().unwrap() {
            if g["container"] != name {
                continue;
            }
            checked += 1;
            let path = g["path"].as_str().unwrap();
            let cpath = CString::new(path).unwrap();
            let mut len = 0usize;
            let status = n5_attributes_get(c, cpath.as_ptr(), std::ptr::null_mut(), 0, &mut len);
            if status != N5_OK {
                failures.push(format!("{path}: n5_attributes_get: {}", c_error()));
                continue;
            }
            let mut text = vec![0u8; len + 1];
            let status = n5_attributes_get(
                c,
                cpath.as_ptr(),
                text.as_mut_ptr().cast(),
                len + 1,
                &mut len,
            );
            assert_eq!(status, N5_OK, "{}", c_error());
            let got: Value = serde_json::from_slice(&text[..len]).unwrap();
            let want = if g["attributes"].is_null() {
                serde_json::json!({})
            } else {
                g["attributes"].clone()
            };
            if !json_eq(&got, &want) {
                failures.push(format!("{path}: attributes {got} != {want}"));
            }
        }
        n5_container_free(c);
        assert!(
            failures.is_empty(),
            "{name} through the C API at {location}: {} of {checked} checks failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
        checked
    }
}
