//! What several fuzz targets share: the compressions peers write, picked by
//! an input's selector byte (block_decode, codec_frames; seeds.py writes
//! seeds in this order).

use n5::Compression;

/// The compressions, one per selector value.
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

/// The compression `selector` picks (modulo the number of compressions).
pub fn compression(selector: u8) -> Compression {
    let json = COMPRESSIONS[selector as usize % COMPRESSIONS.len()];
    Compression::from_json(&serde_json::from_str(json).unwrap()).unwrap()
}
