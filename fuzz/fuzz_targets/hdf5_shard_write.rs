//! The writer of shards that are HDF5 files too (`hdf5_shards`): the
//! input picks a Zarr v3 array (type, rank 1 to 3, shard and inner chunk
//! shapes, a shape that need not divide the shard, raw, zstd or blosc
//! inner chunks in either byte order, the index at either end with or
//! without its CRC-32C, the fill value) and gives its data; it is written
//! whole and then in part (shards read, merged and written back) through
//! the public API into memory, and must read back exactly, bit for bit.
//! Every shard stored must parse as HDF5 (`inspect_shard`: checksums,
//! addresses, the dataset clipped to the array) with the Fixed Array
//! pointing at exactly the inner chunks of the Zarr index; and a copy of a
//! shard with one byte changed must give an error or a parse, never a
//! panic. Arrays of at most 4096 elements.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use n5::format::hdf5::inspect_shard;
use n5::storage::{MemoryStore, Store};
use n5::{Container, DataType, Mode, Options};
use serde_json::{json, Value};

const TYPES: [DataType; 10] = [
    DataType::U8,
    DataType::U16,
    DataType::U32,
    DataType::U64,
    DataType::I8,
    DataType::I16,
    DataType::I32,
    DataType::I64,
    DataType::F32,
    DataType::F64,
];

/// The input read a byte at a time (zeros once it is used up).
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

/// The fill value of `dtype` the byte `b` picks, as zarr.json writes it.
fn fill(dtype: DataType, b: u8) -> Value {
    match dtype {
        DataType::F32 | DataType::F64 if b & 0x80 != 0 => json!("NaN"),
        DataType::F32 | DataType::F64 => json!(f64::from(b) - 64.5),
        DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64 => json!(i64::from(b) - 128),
        _ => json!(b),
    }
}

/// Copies the box `extent` (N5 order) of `src` (dims `extent`) to `at` of
/// `dst` (dims `dims`).
fn put(src: &[u8], dst: &mut [u8], dims: &[u64], at: &[u64], extent: &[u64], elem: usize) {
    let rows: u64 = extent[1..].iter().product();
    let row = extent[0] as usize * elem;
    for k in 0..rows {
        let (mut rest, mut d, mut stride) = (k, at[0], dims[0]);
        for dim in 1..extent.len() {
            d += (at[dim] + rest % extent[dim]) * stride;
            rest /= extent[dim];
            stride *= dims[dim];
        }
        let s = k as usize * row;
        let d = d as usize * elem;
        dst[d..d + row].copy_from_slice(&src[s..s + row]);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let dtype = TYPES[input.byte() as usize % 10].clone();
    let elem = dtype.size();
    let rank = 1 + input.byte() as usize % 3;
    let (mut shape, mut shard, mut inner) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rank {
        let b = input.byte();
        let c = 1 + u64::from(b % 4);
        let s = c * (1 + u64::from((b >> 2) % 4));
        inner.push(c);
        shard.push(s);
        shape.push(1 + u64::from(input.byte()) % (3 * s));
    }
    let n: u64 = shape.iter().product();
    if n > 4096 {
        return;
    }
    let flags = input.byte();
    let endian = if flags & 1 != 0 { "big" } else { "little" };
    let mut codecs = vec![json!({"name": "bytes", "configuration": {"endian": endian}})];
    match (flags >> 1) % 3 {
        0 => {}
        1 => codecs.push(json!({"name": "zstd", "configuration": {"level": 1, "checksum": flags & 8 != 0}})),
        _ => codecs.push(json!({"name": "blosc", "configuration": {
            "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": elem}})),
    }
    let start = flags & 16 != 0;
    let crc = flags & 32 != 0;
    let mut index = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    if crc {
        index.push(json!({"name": "crc32c"}));
    }
    let doc = json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype.name(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill(dtype, input.byte()),
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs, "index_codecs": index,
            "index_location": if start { "start" } else { "end" }}}],
        "hdf5_shards": {"must_understand": false},
    });
    let store = Arc::new(MemoryStore::new());
    let c = Container::open_store(
        store.clone(),
        "fuzz",
        Mode::Create,
        Options::from_json(r#"{"format": "zarr3", "threads": 1}"#).expect("options"),
    )
    .expect("a memory container");
    let d = c.create_dataset_json("a", &doc).expect("a valid array");
    // The data: the rest of the input, over and over (zeros without any).
    let rest = input.0;
    let mut model: Vec<u8> = (0..n as usize * elem)
        .map(|i| if rest.is_empty() { 0 } else { rest[i % rest.len()] })
        .collect();
    let dims: Vec<u64> = shape.iter().rev().copied().collect();
    d.write_region(&vec![0; rank], &dims, &model).expect("a whole write");
    // A part: the middle half of each dimension, of the fill value in
    // every other element's place (chunks of the fill value left out).
    let at: Vec<u64> = dims.iter().map(|&x| x / 4).collect();
    let extent: Vec<u64> = dims.iter().map(|&x| (x / 2).max(1)).collect();
    let count = extent.iter().product::<u64>() as usize;
    let fill_bytes = d.fill_value();
    let part: Vec<u8> = (0..count)
        .flat_map(|i| {
            if i % 2 == 0 || rest.is_empty() {
                fill_bytes.clone()
            } else {
                vec![rest[i % rest.len()]; elem]
            }
        })
        .collect();
    d.write_region(&at, &extent, &part).expect("a partial write");
    put(&part, &mut model, &dims, &at, &extent, elem);
    let mut back = vec![0u8; model.len()];
    d.read_region(&vec![0; rank], &dims, &mut back).expect("a read");
    assert!(back == model, "the array reads back otherwise");

    let per: Vec<u64> = shard.iter().zip(&inner).map(|(s, c)| s / c).collect();
    let chunks: u64 = per.iter().product();
    let index_len = 16 * chunks as usize + if crc { 4 } else { 0 };
    for key in store.list_keys("a").expect("a listing") {
        if key == "zarr.json" {
            continue;
        }
        let bytes = store.get(&format!("a/{key}")).expect("a get").expect("listed");
        let info = inspect_shard(&bytes).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(info.chunk, inner);
        assert_eq!(info.max_dims, shard);
        let zarr = if start {
            &bytes[..index_len]
        } else {
            &bytes[bytes.len() - index_len..]
        };
        let entries: Vec<Option<(u64, u64)>> = zarr[..16 * chunks as usize]
            .chunks_exact(16)
            .map(|e| {
                let off = u64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
                let len = u64::from_le_bytes(e[8..].try_into().expect("8 bytes"));
                (off != u64::MAX).then_some((off, len))
            })
            .collect();
        assert_eq!(info.chunks, entries, "{key}: the two indexes");
        assert!(entries.iter().any(Option::is_some), "{key}: no chunk");
        // One byte changed: an error or a parse, never a panic.
        let mut bad = bytes.clone();
        let at = data.len() % bad.len();
        bad[at] ^= 1 + data.first().copied().unwrap_or(0) % 255;
        let _ = inspect_shard(&bad);
    }
});
