//! Block decoding: a block file of any bytes, decoded for a dataset whose
//! type, block shape and compression the first input byte picks, as a read
//! of a stored block does. Every input must give a block or an error.
#![no_main]

#[path = "../common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use n5::{block, DataType, DatasetAttributes};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let compression = common::compression(selector);
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
