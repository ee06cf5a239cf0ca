//! Shards of Zarr v3 arrays: any bytes as the one stored shard of an array
//! whose layout a selector byte picks (index at the end or the start, with
//! or without its CRC-32C; inner chunks raw, zstd or with their own
//! CRC-32C; nested sharding), read through the public API as a user does:
//! the whole shard (one request), a region covering it in part (the index,
//! then coalesced ranges of the inner chunks it touches), every block (an
//! inner chunk through the index) and the block listing. Every input must
//! give data or an error, in bounded memory.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use n5::storage::{MemoryStore, Store};
use n5::{Container, Mode, Options};
use serde_json::{json, Value};

/// The layouts, one per selector value: uint16 of C-order shape 8×12 in
/// one shard of 8×12 (4×4 inner chunks of 2×3, or nested 4×6 of 2×3).
fn layout(selector: u8) -> Value {
    let le = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let crc = json!({"name": "crc32c"});
    let zstd = json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}});
    let end = if selector & 1 == 0 { "end" } else { "start" };
    let index = if selector & 2 == 0 {
        json!([le, crc])
    } else {
        json!([le])
    };
    let inner = match (selector >> 2) % 4 {
        0 => json!([le]),
        1 => json!([le, zstd]),
        2 => json!([le, crc]),
        _ => json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 3], "codecs": [le], "index_codecs": index,
            "index_location": end}}]),
    };
    let chunk = if (selector >> 2) % 4 == 3 {
        [4, 6]
    } else {
        [2, 3]
    };
    json!({
        "zarr_format": 3, "node_type": "array",
        "shape": [8, 12], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 12]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 7,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": chunk, "codecs": inner, "index_codecs": index,
            "index_location": end}}]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, shard)) = data.split_first() else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let doc = layout(selector).to_string();
    store
        .put("zarr.json", &[doc.as_bytes()])
        .expect("memory store");
    store.put("c/0/0", &[shard]).expect("memory store");
    let c = Container::open_store(store, "fuzz", Mode::Read, Options::default())
        .expect("a valid layout opens");
    let d = c.open_dataset("").expect("a valid layout opens");
    // N5 order: 12 × 8; blocks of 3 × 2 (inner chunks).
    let mut whole = vec![0u8; 12 * 8 * 2];
    let _ = d.read_region(&[0, 0], &[12, 8], &mut whole);
    let mut part = vec![0u8; 7 * 5 * 2];
    let _ = d.read_region(&[1, 2], &[7, 5], &mut part);
    let mut block = vec![0u8; 3 * 2 * 2];
    for x in 0..4 {
        for y in 0..4 {
            let _ = d.read_block_into(&[x, y], &mut block);
        }
    }
    let _ = d.list_blocks();
});
