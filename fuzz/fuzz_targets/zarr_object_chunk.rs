//! String, bytes, legacy object and struct chunks (nwb.md §1, §3) read
//! through the public API the way a user does: the input's bytes stored as
//! the first chunk of a small array in a store in memory, then the whole
//! array read as JSON (`read_region_json`), as bytes (`read_region_bytes`,
//! strings and bytes) or in its binary layout (`read_region`, structs), and
//! a region that leaves out the first element.
//!
//! The first byte picks the format (bit 0: Zarr v2, else v3) and the kind
//! (bits 1-3): vlen-utf8 strings, vlen-bytes, a pickled `|O` array, a json2
//! `|O` array, a struct (int32, 2 UTF-32 code units, bool), a legacy
//! compound with a pickled reference field; v3 has the first two and the
//! struct (the legacy kinds fall back on those). The second byte is the
//! number of elements of the chunk (1 to 16), which is the array's shape
//! too, with a chunk of the whole or of half of it. No compressor: the
//! codecs have codec_frames and block_decode. Every input must give data or
//! an error of the kinds bad chunk data has (`Codec`, `UnsafePickle`), never
//! a panic, in memory bounded by its size; a successful read gives as many
//! elements as asked for.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use n5::storage::{MemoryStore, Store};
use n5::{Container, ErrorKind, Mode, Options};
use serde_json::{json, Value};

/// The element kinds.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Utf8,
    Bytes,
    Pickle,
    Json2,
    Struct,
    Compound,
}

/// The metadata document of a one-dimensional array of `n` elements in
/// chunks of `chunk`.
fn document(v2: bool, kind: Kind, n: u64, chunk: u64) -> Value {
    if v2 {
        let (dtype, filters, fill) = match kind {
            Kind::Utf8 => (json!("|O"), json!([{"id": "vlen-utf8"}]), json!(null)),
            Kind::Bytes => (json!("|O"), json!([{"id": "vlen-bytes"}]), json!(null)),
            Kind::Pickle => (
                json!("|O"),
                json!([{"id": "pickle", "protocol": 5}]),
                json!(0),
            ),
            Kind::Json2 => (json!("|O"), json!([{"id": "json2"}]), json!(0)),
            Kind::Struct => (
                json!([["a", "<i4"], ["b", "<U2"], ["c", "|b1"]]),
                json!(null),
                json!(null),
            ),
            Kind::Compound => (
                json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]]),
                json!([{"id": "pickle", "protocol": 5}]),
                json!("gAVLAC4="),
            ),
        };
        return json!({"zarr_format": 2, "shape": [n], "chunks": [chunk], "dtype": dtype,
            "compressor": null, "fill_value": fill, "filters": filters, "order": "C"});
    }
    let (data_type, fill, codec) = match kind {
        Kind::Utf8 | Kind::Pickle => (json!("string"), json!(""), json!({"name": "vlen-utf8"})),
        Kind::Bytes | Kind::Json2 => (json!("bytes"), json!(""), json!({"name": "vlen-bytes"})),
        Kind::Struct | Kind::Compound => (
            json!({"name": "struct", "configuration": {"fields": [
                {"name": "a", "data_type": "int32"},
                {"name": "b", "data_type": {"name": "fixed_length_utf32",
                                            "configuration": {"length_bytes": 8}}},
                {"name": "c", "data_type": "bool"}]}}),
            json!({"a": 0, "b": "", "c": false}),
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
        ),
    };
    json!({"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": [codec]})
}

/// An error of bad chunk data.
fn bad_data<T>(r: n5::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert!(
                matches!(e.kind(), ErrorKind::Codec | ErrorKind::UnsafePickle),
                "{e:?}"
            );
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [selector, count, chunk @ ..] = data else {
        return;
    };
    let v2 = selector & 1 == 1;
    let kind = match (selector >> 1) % 6 {
        0 => Kind::Utf8,
        1 => Kind::Bytes,
        2 => Kind::Pickle,
        3 => Kind::Json2,
        4 => Kind::Struct,
        _ => Kind::Compound,
    };
    let n = u64::from(count % 16) + 1;
    // A chunk of the whole array, or of half of it (the input is then the
    // first chunk; the others are missing and read as the fill value).
    let chunk_len = if selector & 0x10 != 0 {
        n.div_ceil(2)
    } else {
        n
    };
    let doc = document(v2, kind, n, chunk_len);
    let store = Arc::new(MemoryStore::new());
    let name = if v2 { ".zarray" } else { "zarr.json" };
    store
        .put(name, &[doc.to_string().as_bytes()])
        .expect("memory store");
    let c = Container::open_store(store.clone(), "fuzz", Mode::Read, Options::default())
        .expect("the document is valid");
    let d = c.open_dataset("").expect("the document is valid");
    store
        .put(&d.block_key(&[0]), &[chunk])
        .expect("memory store");

    for (offset, len) in [(0, n), (1, n - 1)] {
        if let Some(text) = bad_data(d.read_region_json(&[offset], &[len])) {
            let values: Value = serde_json::from_str(&text).expect("the JSON is valid");
            assert_eq!(values.as_array().expect("an array").len() as u64, len);
        }
        if d.element_size() > 0 {
            let mut buf = vec![0u8; len as usize * d.element_size()];
            bad_data(d.read_region(&[offset], &[len], &mut buf));
        } else if matches!(
            d.dtype_json().unwrap()["object_codec"].as_str(),
            Some("vlen-utf8" | "vlen-bytes")
        ) {
            if let Some((bytes, lengths)) = bad_data(d.read_region_bytes(&[offset], &[len])) {
                assert_eq!(lengths.len() as u64, len);
                assert_eq!(lengths.iter().sum::<u64>(), bytes.len() as u64);
            }
        }
    }
});
