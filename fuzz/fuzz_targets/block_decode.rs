//! Block decoding: a block file of any bytes, decoded for a dataset whose
//! type, block shape and compression the first input byte picks, as a read
//! of a stored block does. Every input must give a block or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use n5::{block, Compression, DataType, DatasetAttributes};

/// The compressions peers write, one per selector value.
const COMPRESSIONS: &[&str] = &[
    r#"{"type":"raw"}"#,
    r#"{"type":"gzip"}"#,
    r#"{"type":"gzip","useZlib":true}"#,
    r#"{"type":"bzip2"}"#,
    r#"{"type":"xz"}"#,
    r#"{"type":"lz4"}"#,
    r#"{"type":"zstd"}"#,
    r#"{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1}"#,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let json: serde_json::Value =
        serde_json::from_str(COMPRESSIONS[selector as usize % COMPRESSIONS.len()]).unwrap();
    let compression = Compression::from_json(&json).unwrap();
    let (dtype, block) = match (selector / 8) % 4 {
        0 => (DataType::U8, vec![64, 64, 4]),
        1 => (DataType::U16, vec![32, 32, 8]),
        2 => (DataType::F64, vec![512]),
        _ => (DataType::U32, vec![16, 16]),
    };
    let dims = block.iter().map(|&b| u64::from(b) * 3 + 1).collect();
    let attrs = DatasetAttributes::new(dims, block, dtype, compression).unwrap();
    let _ = block::decode(bytes, &attrs);
});
