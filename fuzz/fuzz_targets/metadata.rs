//! Dataset metadata: any bytes as an attributes.json, parsed and read as a
//! dataset's attributes and compression the way opening a dataset does, and
//! written back. Every input must give attributes or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use n5::metadata::{is_dataset, DatasetAttributes};
use n5::Compression;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = is_dataset(&doc);
    if let Some(c) = doc.get("compression") {
        if let Ok(c) = Compression::from_json(c) {
            let _ = c.to_json();
        }
    }
    if let Ok(attrs) = DatasetAttributes::from_json(&doc) {
        // What a reader derives from valid metadata must not fail either.
        let _ = attrs.grid_shape();
        let _ = attrs.block_num_elements();
        let again = serde_json::Value::Object(attrs.to_json());
        DatasetAttributes::from_json(&again).expect("written metadata reads back");
    }
});
