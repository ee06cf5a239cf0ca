//! Peers read the Zarr arrays libn5 writes: tensorstore (its zarr3 and zarr
//! drivers) reads every array and z5py every Zarr v2 one, through
//! `tests/peers/read_zarr_with_peers.py`, and each must give the array
//! libn5 reads back, by checksum. The arrays cover the ten numeric types,
//! ranks 1 to 5, edge chunks, fill values, parts never written, and in
//! Zarr v3 both endians, transpose, gzip, zstd, blosc, crc32c and sharding
//! (index at the start or the end); shapes and parameters are drawn at
//! random per run (the seed is printed; `N5_ZARR_PEERS_SEED` repeats one).
//!
//! Needs the peers' Python (`N5_PEER_PYTHON`, set by `./tests/run.sh`);
//! without it the test says so and passes.

mod common;

use std::process::Command;

use n5::{Container, Mode, Options};
use serde_json::{json, Value};

const TYPES: [(&str, &str, usize); 10] = [
    ("uint8", "u1", 1),
    ("uint16", "u2", 2),
    ("uint32", "u4", 4),
    ("uint64", "u8", 8),
    ("int8", "i1", 1),
    ("int16", "i2", 2),
    ("int32", "i4", 4),
    ("int64", "i8", 8),
    ("float32", "f4", 4),
    ("float64", "f8", 8),
];

struct Rand(u64);

impl Rand {
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m.max(1)
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// A random Zarr v3 document for `dtype`, C-order `shape`.
fn v3_document(r: &mut Rand, dtype: &str, size: usize, shape: &[u64]) -> Value {
    let n = shape.len();
    let inner: Vec<u64> = shape.iter().map(|&s| 1 + r.below(s + 1)).collect();
    let sharded = r.below(2) == 0;
    let endian = *r.pick(&["little", "big"]);
    let mut codecs = Vec::new();
    if r.below(4) == 0 && n > 1 {
        let mut order: Vec<usize> = (0..n).collect();
        order.rotate_left(1);
        codecs.push(json!({"name": "transpose", "configuration": {"order": order}}));
    }
    codecs.push(json!({"name": "bytes", "configuration": {"endian": endian}}));
    match r.below(4) {
        0 => {}
        1 => codecs.push(json!({"name": "gzip", "configuration": {"level": 1 + r.below(9)}})),
        2 => codecs.push(json!({"name": "zstd", "configuration": {"level": 1 + r.below(5), "checksum": r.below(2) == 0}})),
        _ => codecs.push(json!({"name": "blosc", "configuration": {
            "cname": r.pick(&["lz4", "zstd", "blosclz"]), "clevel": 1 + r.below(9),
            "shuffle": r.pick(&["noshuffle", "shuffle", "bitshuffle"]), "typesize": size, "blocksize": 0}})),
    }
    if r.below(3) == 0 {
        codecs.push(json!({"name": "crc32c"}));
    }
    let fill = if dtype.starts_with("float") {
        json!(*r.pick(&[0.0, -1.5, 2.25]))
    } else {
        json!(r.below(100))
    };
    let (grid, codecs) = if sharded {
        let per: Vec<u64> = (0..n).map(|_| 1 + r.below(3)).collect();
        let outer: Vec<u64> = inner.iter().zip(&per).map(|(i, p)| i * p).collect();
        let sharding = json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": r.pick(&["start", "end"])}});
        (outer, vec![sharding])
    } else {
        (inner, codecs)
    };
    json!({
        "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": r.pick(&["/", "."])}},
        "fill_value": fill, "codecs": codecs
    })
}

/// A random Zarr v2 document.
fn v2_document(r: &mut Rand, code: &str, shape: &[u64]) -> Value {
    let chunks: Vec<u64> = shape.iter().map(|&s| 1 + r.below(s + 1)).collect();
    let byte_order = if code.ends_with('1') {
        "|"
    } else {
        *r.pick(&["<", ">"])
    };
    let compressor = match r.below(5) {
        0 => Value::Null,
        1 => json!({"id": "gzip", "level": 1 + r.below(9)}),
        2 => json!({"id": "zlib", "level": 1 + r.below(9)}),
        3 => json!({"id": "zstd", "level": 1 + r.below(5)}),
        _ => {
            json!({"id": "blosc", "cname": r.pick(&["lz4", "zstd"]), "clevel": 5, "shuffle": r.below(3), "blocksize": 0})
        }
    };
    json!({
        "shape": shape, "chunks": chunks, "dtype": format!("{byte_order}{code}"),
        "compressor": compressor, "fill_value": r.below(50), "order": r.pick(&["C", "F"]),
        "filters": null, "dimension_separator": r.pick(&[".", "/"])
    })
}

#[test]
fn peers_read_the_zarr_arrays_libn5_writes() {
    let Some(python) = std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty()) else {
        eprintln!("zarr peers: skipped: N5_PEER_PYTHON is not set; run ./tests/run.sh");
        return;
    };
    let seed = std::env::var("N5_ZARR_PEERS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("zarr peers: seed {seed} (N5_ZARR_PEERS_SEED={seed} repeats this run)");
    let mut r = Rand(seed);
    let dir = common::Scratch::new("zarr-peers");
    let mut arrays = Vec::new();
    for format in [3, 2] {
        let root = dir.join(&format!("v{format}"));
        let options = Options::from_json(&format!(r#"{{"format": "zarr{format}"}}"#)).unwrap();
        let c = Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap();
        for (k, (dtype, code, size)) in TYPES.iter().enumerate() {
            for rep in 0..3 {
                let rank = 1 + ((k + rep) % 5);
                let shape: Vec<u64> = (0..rank)
                    .map(|_| 1 + r.below(if rank > 3 { 6 } else { 14 }))
                    .collect();
                let doc = if format == 3 {
                    v3_document(&mut r, dtype, *size, &shape)
                } else {
                    v2_document(&mut r, code, &shape)
                };
                let path = format!("{dtype}/a{rep}");
                let d = c
                    .create_dataset_json(&path, &doc)
                    .unwrap_or_else(|e| panic!("{path} {doc}: {e}"));
                // A random box of random data; the rest stays fill value.
                let dims = d.attributes().dimensions.clone();
                let offset: Vec<u64> = dims.iter().map(|&d| r.below(d)).collect();
                let extent: Vec<u64> = dims
                    .iter()
                    .zip(&offset)
                    .map(|(&d, &o)| 1 + r.below(d - o))
                    .collect();
                let n: u64 = extent.iter().product();
                let mut data = common::bytes(r.below(u64::MAX), n as usize * size);
                if dtype.starts_with("float") {
                    // Finite values, so that NaN payloads do not differ.
                    for e in data.chunks_exact_mut(*size) {
                        e[*size - 1] &= 0x3f;
                    }
                }
                d.write_region(&offset, &extent, &data).unwrap();
                let total: u64 = dims.iter().product();
                let mut whole = vec![0u8; total as usize * size];
                d.read_region(&vec![0; dims.len()], &dims, &mut whole)
                    .unwrap();
                arrays.push(json!({"path": path, "format": format, "sha256": common::sha256(&whole), "root": root}));
            }
        }
    }
    for format in [3, 2] {
        let root = dir.join(&format!("v{format}"));
        let list: Vec<&Value> = arrays.iter().filter(|a| a["format"] == format).collect();
        let spec = json!({"root": root, "arrays": list});
        let spec_path = dir.join(&format!("spec{format}.json"));
        std::fs::write(&spec_path, spec.to_string()).unwrap();
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/peers/read_zarr_with_peers.py");
        let out = Command::new(&python)
            .arg(script)
            .arg(&spec_path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        eprintln!("zarr v{format}: {}", text.lines().last().unwrap_or(""));
        assert!(
            out.status.success(),
            "seed {seed}: the peers disagree with libn5 on Zarr v{format}:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
