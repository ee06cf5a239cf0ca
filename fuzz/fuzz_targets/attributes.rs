//! Attribute paths and documents: the input is a path (up to the first NUL)
//! and a JSON document (the rest). The path is normalised as a group path
//! and used as an N5 attribute path to get, set and remove inside the
//! document, as the attribute functions do. Every input must give a value
//! or an error, and a value set must read back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use n5::{attrpath, path};
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let (key, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(key) = std::str::from_utf8(key) else {
        return;
    };
    let _ = path::normalize(key);
    let mut doc: Value = serde_json::from_slice(rest).unwrap_or_else(|_| json!({}));
    let _ = attrpath::get(&doc, key);
    let value = json!({"fuzz": [1, 2.5, "x"]});
    if attrpath::set(&mut doc, key, value.clone()).is_ok() {
        let got = attrpath::get(&doc, key).expect("a path that was set reads");
        assert_eq!(got, Some(&value), "set then get of {key:?}");
        let _ = attrpath::remove(&mut doc, key);
    }
});
