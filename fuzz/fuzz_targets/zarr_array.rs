//! Zarr arrays: any bytes as a zarr.json or .zarray document and as the
//! stored bytes of the array's first chunk or shard (hostile indexes,
//! codecs, sizes), opened and read through the public API the way a user
//! does: the whole array as a region, a region reading the first shard in
//! part, the first block, the block listing.
//! Every input must give data or an error, in bounded memory.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use n5::storage::{MemoryStore, Store};
use n5::{Container, Mode, Options};

/// The most elements the target reads (array, and chunk or shard).
const MAX_ELEMENTS: u64 = 1 << 16;

fn elements(shape: &[u64]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |a, &b| a.checked_mul(b))
        .filter(|&n| n <= MAX_ELEMENTS)
}

fuzz_target!(|data: &[u8]| {
    // Format byte, document length (2 bytes, little-endian), document, chunk.
    if data.len() < 3 {
        return;
    }
    let v2 = data[0] & 1 == 1;
    let len = u16::from_le_bytes([data[1], data[2]]) as usize;
    let Some((doc, chunk)) = data[3..].split_at_checked(len) else {
        return;
    };
    let store = Arc::new(MemoryStore::new());
    let name = if v2 { ".zarray" } else { "zarr.json" };
    store.put(name, &[doc]).expect("memory store");
    let Ok(c) = Container::open_store(store.clone(), "fuzz", Mode::Read, Options::default()) else {
        return;
    };
    let Ok(d) = c.open_dataset("") else {
        return;
    };
    let attrs = d.attributes();
    let (Some(n), Some(_)) = (elements(&attrs.dimensions), elements(&d.shard_shape())) else {
        return;
    };
    let zeros = vec![0u64; attrs.dimensions.len()];
    store
        .put(&d.block_key(&zeros), &[chunk])
        .expect("memory store");
    let elem = attrs.data_type.size();
    let mut out = vec![0u8; n as usize * elem];
    let _ = d.read_region(&zeros, &attrs.dimensions, &mut out);
    // A region that leaves out the first element of every dimension: the
    // shard read in part (its index, then the inner chunks it touches).
    if attrs.dimensions.iter().all(|&x| x > 1) {
        let ones = vec![1u64; zeros.len()];
        let shape: Vec<u64> = attrs.dimensions.iter().map(|x| x - 1).collect();
        let _ = d.read_region(
            &ones,
            &shape,
            &mut out[..elements(&shape).unwrap_or(0) as usize * elem],
        );
    }
    if let Ok(shape) = d.block_shape(&zeros) {
        if let Some(k) = elements(&shape) {
            let mut block = vec![0u8; k as usize * elem];
            let _ = d.read_block_into(&zeros, &mut block);
        }
    }
    let _ = d.list_blocks();
});
