//! Peer interoperability: libn5 writes a container covering every numeric
//! data type, every compression, ranks 1 to 5, edge cases of the block grid,
//! sparse datasets and rich group attributes; then the peer N5
//! implementations (tensorstore, z5py, zarr 2 `N5Store` and `N5FSStore`) read
//! it back through `tests/peers/read_with_peers.py` and compare every array
//! bit for bit and every attribute document with what was written.
//!
//! The peers live in a Python venv that `./tests/run.sh` creates; it points
//! `N5_PEER_PYTHON` at the venv's interpreter. Without that variable this test
//! prints a notice and passes, so a plain `cargo test` works offline.
//!
//! The same catalogue (its main compressions) goes to S3 (SeaweedFS) and GCS
//! (fake-gcs-server), where tensorstore's `s3` and `gcs` kvstores with its
//! n5 driver read it; and tensorstore writes every dtype with its codecs
//! there (`tests/peers/write_with_tensorstore.py`), which libn5 reads back.
//!
//! Developer knobs:
//! * `N5_PEERS_KEEP=DIR`: write the container and the spec into DIR (created,
//!   emptied first) and keep them, instead of a scratch directory.
//! * `N5_PEERS_ONLY=raw,gzip,...`: only datasets whose compression key (see
//!   `compressions()`) is listed, plus the groups.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::places::{object_stores, Kind, Place};
use common::Scratch;
use n5::{Compression, Container, DataType, DatasetAttributes, Mode};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------- test data

/// The value of element `l` (N5 linear index, dimension 0 fastest) of an
/// array of `n` elements, as the bits of the element (low `8 * size` bits).
///
/// The first elements are the type's extremes: integers 0, 1, max, min (or
/// max-1), -1; floats NaN, +inf, -inf, -0.0, the smallest subnormal, max,
/// -max, the smallest normal, a NaN with a payload and a negative NaN. After
/// them, runs of 64 elements alternate between a smooth, compressible pattern
/// and a hashed, incompressible one (which of the two comes first depends on
/// `seed`), so that every codec takes both its compressed and its stored path.
fn element_bits(t: DataType, l: u64, n: u64, seed: u64) -> u64 {
    let smooth = ((l / 64) + seed).is_multiple_of(2);
    let hash = (l ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    match t {
        DataType::F32 => {
            let special = [
                f32::NAN.to_bits(),
                f32::INFINITY.to_bits(),
                f32::NEG_INFINITY.to_bits(),
                (-0.0f32).to_bits(),
                1,
                f32::MAX.to_bits(),
                (-f32::MAX).to_bits(),
                f32::MIN_POSITIVE.to_bits(),
                0x7fc0_1234,
                0xffc0_0000,
            ];
            if (l as usize) < special.len() {
                return special[l as usize] as u64;
            }
            let v = if smooth {
                (l as f32 - n as f32 / 2.0) * 0.375
            } else {
                f32::from_bits(((hash >> 40) as u32 & 0x3fff_ffff) | 0x3000_0000)
                    * if hash & 1 == 0 { 1.0 } else { -1.0 }
            };
            v.to_bits() as u64
        }
        DataType::F64 => {
            let special = [
                f64::NAN.to_bits(),
                f64::INFINITY.to_bits(),
                f64::NEG_INFINITY.to_bits(),
                (-0.0f64).to_bits(),
                1,
                f64::MAX.to_bits(),
                (-f64::MAX).to_bits(),
                f64::MIN_POSITIVE.to_bits(),
                0x7ff8_0000_dead_beef,
                0xfff8_0000_0000_0000,
            ];
            if (l as usize) < special.len() {
                return special[l as usize];
            }
            if smooth {
                ((l as f64 - n as f64 / 2.0) * 0.375).to_bits()
            } else {
                // A finite double with hashed mantissa and exponent.
                (hash & 0x8000_ffff_ffff_ffff) | ((0x300 + (hash >> 48) % 0x200) << 52)
            }
        }
        _ => {
            let bits = 8 * t.size() as u32;
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            let signed = matches!(
                t,
                DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64
            );
            let max = if signed { mask >> 1 } else { mask };
            let min_or = if signed { (mask >> 1) + 1 } else { mask - 1 };
            let special = [0, 1, max, min_or, mask];
            if (l as usize) < special.len() {
                return special[l as usize];
            }
            if smooth {
                (l / 5) % 37
            } else {
                hash & mask
            }
        }
    }
}

/// An array of `n` elements of type `t`, as bytes in native order.
fn array(t: DataType, n: u64, seed: u64) -> Vec<u8> {
    let size = t.size();
    let mut out = Vec::with_capacity(n as usize * size);
    for l in 0..n {
        let le = element_bits(t.clone(), l, n, seed).to_le_bytes();
        let start = out.len();
        out.extend_from_slice(&le[..size]);
        if cfg!(target_endian = "big") {
            out[start..].reverse();
        }
    }
    out
}

/// Native-order elements of `elem` bytes to little-endian.
fn to_le(native: &[u8], elem: usize) -> Vec<u8> {
    let mut out = native.to_vec();
    if cfg!(target_endian = "big") {
        for e in out.chunks_exact_mut(elem) {
            e.reverse();
        }
    }
    out
}

/// Call `f` with every index of a box of `shape` (dimension 0 fastest).
fn for_each_index(shape: &[u64], mut f: impl FnMut(&[u64])) {
    if shape.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; shape.len()];
    loop {
        f(&idx);
        let mut d = 0;
        loop {
            if d == shape.len() {
                return;
            }
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
            d += 1;
        }
    }
}

fn linear(idx: &[u64], shape: &[u64]) -> usize {
    let mut l = 0u64;
    for d in (0..shape.len()).rev() {
        l = l * shape[d] + idx[d];
    }
    l as usize
}

/// Copy the box at `off` of `shape` out of `full` (dims `dims`).
fn extract(full: &[u8], dims: &[u64], off: &[u64], shape: &[u64], elem: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(shape.iter().product::<u64>() as usize * elem);
    for_each_index(shape, |i| {
        let g: Vec<u64> = i.iter().zip(off).map(|(a, b)| a + b).collect();
        let s = linear(&g, dims) * elem;
        out.extend_from_slice(&full[s..s + elem]);
    });
    out
}

/// Copy `data` (a box of `shape`) into `full` (dims `dims`) at `off`.
fn insert(full: &mut [u8], dims: &[u64], off: &[u64], shape: &[u64], data: &[u8], elem: usize) {
    let mut k = 0;
    for_each_index(shape, |i| {
        let g: Vec<u64> = i.iter().zip(off).map(|(a, b)| a + b).collect();
        let s = linear(&g, dims) * elem;
        full[s..s + elem].copy_from_slice(&data[k..k + elem]);
        k += elem;
    });
}

// ------------------------------------------------------------- the catalogue

/// Compressions by key: every one libn5 writes that a peer may read.
fn compressions() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = [
        ("raw", r#"{"type":"raw"}"#),
        ("gzip", r#"{"type":"gzip"}"#),
        ("gzip-lm1", r#"{"type":"gzip","level":-1}"#),
        ("zlib", r#"{"type":"gzip","useZlib":true}"#),
        ("bzip2", r#"{"type":"bzip2"}"#),
        ("xz", r#"{"type":"xz"}"#),
    ]
    .iter()
    .map(|(k, j)| (k.to_string(), j.to_string()))
    .collect();
    for cname in ["lz4", "blosclz", "zstd", "zlib", "lz4hc"] {
        for shuffle in 0..3 {
            v.push((
                format!("blosc-{cname}-s{shuffle}"),
                format!(r#"{{"type":"blosc","cname":"{cname}","clevel":5,"shuffle":{shuffle}}}"#),
            ));
        }
    }
    v.push(("zstd".into(), r#"{"type":"zstd","level":3}"#.into()));
    v
}

/// Further codec parameters, written for a few types only.
const CODEC_PARAMS: &[(&str, &str)] = &[
    ("gzip-l1", r#"{"type":"gzip","level":1}"#),
    ("gzip-l9", r#"{"type":"gzip","level":9}"#),
    ("zlib-l1", r#"{"type":"gzip","level":1,"useZlib":true}"#),
    ("bzip2-b1", r#"{"type":"bzip2","blockSize":1}"#),
    ("xz-p0", r#"{"type":"xz","preset":0}"#),
    ("xz-p9", r#"{"type":"xz","preset":9}"#),
    (
        "blosc-clevel0",
        r#"{"type":"blosc","cname":"lz4","clevel":0,"shuffle":1}"#,
    ),
    (
        "blosc-clevel9-bs256",
        r#"{"type":"blosc","cname":"zstd","clevel":9,"shuffle":2,"blocksize":256}"#,
    ),
    ("zstd-l1", r#"{"type":"zstd","level":1}"#),
    ("zstd-l19", r#"{"type":"zstd","level":19}"#),
    ("zstd-lm5", r#"{"type":"zstd","level":-5}"#),
];

/// How a dataset's data gets into the container.
enum Fill {
    /// One `write_region` over the whole array.
    Whole,
    /// `write_block` for every block of the grid.
    Blocks,
    /// `write_block` for the listed grid positions only; the rest stays unwritten.
    SomeBlocks(Vec<Vec<u64>>),
    /// A sequence of `write_region` calls of (offset, shape), each with fresh
    /// data, later ones overwriting earlier ones (read-modify-write of
    /// partially covered blocks).
    Regions(Vec<(Vec<u64>, Vec<u64>)>),
}

struct Ds {
    path: String,
    /// The compression key (for N5_PEERS_ONLY and the peers' support table).
    comp_key: String,
    comp_json: String,
    dtype: DataType,
    dims: Vec<u64>,
    block: Vec<u32>,
    fill: Fill,
    attributes: Option<Value>,
}

fn ds(
    path: impl Into<String>,
    comp: (&str, &str),
    dtype: DataType,
    dims: &[u64],
    block: &[u32],
    fill: Fill,
) -> Ds {
    Ds {
        path: path.into(),
        comp_key: comp.0.to_string(),
        comp_json: comp.1.to_string(),
        dtype,
        dims: dims.to_vec(),
        block: block.to_vec(),
        fill,
        attributes: None,
    }
}

const RAW: (&str, &str) = ("raw", r#"{"type":"raw"}"#);
const GZIP: (&str, &str) = ("gzip", r#"{"type":"gzip"}"#);
const BLOSC: (&str, &str) = (
    "blosc-zstd-s1",
    r#"{"type":"blosc","cname":"zstd","clevel":5,"shuffle":1}"#,
);
const ZSTD: (&str, &str) = ("zstd", r#"{"type":"zstd","level":3}"#);
const BZIP2: (&str, &str) = ("bzip2", r#"{"type":"bzip2"}"#);
const XZ: (&str, &str) = ("xz", r#"{"type":"xz"}"#);

fn catalogue() -> Vec<Ds> {
    let mut v = Vec::new();
    // Every numeric type x every compression, with truncated edge blocks.
    for (key, json) in compressions() {
        for t in DataType::NUMERIC {
            v.push(ds(
                format!("dtype/{key}/{t}"),
                (&key, &json),
                t,
                &[13, 11, 7],
                &[5, 4, 3],
                Fill::Whole,
            ));
        }
    }
    // Further codec parameters on a few types.
    for (key, json) in CODEC_PARAMS {
        for t in [DataType::I8, DataType::U16, DataType::F64] {
            v.push(ds(
                format!("codec/{key}/{t}"),
                (key, json),
                t,
                &[67, 45],
                &[16, 16],
                Fill::Whole,
            ));
        }
    }
    // Ranks 1 to 5, dimensions not multiples of the block size.
    use DataType::*;
    v.push(ds("rank/1d", GZIP, I16, &[1000], &[64], Fill::Blocks));
    v.push(ds("rank/2d", RAW, U32, &[19, 23], &[4, 5], Fill::Blocks));
    v.push(ds(
        "rank/3d",
        ZSTD,
        F32,
        &[9, 8, 7],
        &[4, 3, 2],
        Fill::Whole,
    ));
    v.push(ds(
        "rank/4d",
        BZIP2,
        I64,
        &[7, 6, 5, 4],
        &[3, 3, 2, 2],
        Fill::Blocks,
    ));
    v.push(ds(
        "rank/5d",
        BLOSC,
        U8,
        &[5, 4, 3, 4, 3],
        &[2, 2, 2, 3, 2],
        Fill::Whole,
    ));
    v.push(ds(
        "rank/5d_xz",
        XZ,
        F64,
        &[3, 5, 2, 3, 4],
        &[2, 3, 2, 2, 3],
        Fill::Blocks,
    ));
    // Grid edge cases.
    v.push(ds(
        "grid/block_larger_than_array",
        GZIP,
        I16,
        &[5, 3],
        &[8, 8],
        Fill::Whole,
    ));
    v.push(ds(
        "grid/block_larger_than_array_3d",
        BLOSC,
        F32,
        &[3, 7, 2],
        &[4, 64, 5],
        Fill::Blocks,
    ));
    v.push(ds(
        "grid/exact_multiple",
        RAW,
        U16,
        &[12, 8],
        &[4, 4],
        Fill::Whole,
    ));
    v.push(ds(
        "grid/unit_extents",
        GZIP,
        U64,
        &[1, 6, 1],
        &[1, 4, 1],
        Fill::Whole,
    ));
    v.push(ds(
        "grid/unit_block",
        RAW,
        I32,
        &[4, 5, 3],
        &[1, 5, 2],
        Fill::Blocks,
    ));
    v.push(ds("grid/one_element", ZSTD, F64, &[1], &[1], Fill::Whole));
    v.push(ds(
        "grid/long_thin",
        BLOSC,
        U16,
        &[4099, 2],
        &[512, 1],
        Fill::Whole,
    ));
    v.push(ds(
        "grid/multi_block_2d",
        GZIP,
        F32,
        &[300, 200],
        &[64, 64],
        Fill::Whole,
    ));
    // Sparse: only some blocks written; the rest must read as 0.
    v.push(ds(
        "sparse/2d",
        GZIP,
        U16,
        &[40, 30],
        &[8, 8],
        Fill::SomeBlocks(vec![vec![0, 0], vec![4, 3], vec![2, 1], vec![4, 0]]),
    ));
    v.push(ds(
        "sparse/3d",
        BLOSC,
        F64,
        &[20, 18, 10],
        &[6, 6, 4],
        Fill::SomeBlocks(vec![vec![3, 2, 2], vec![0, 1, 0], vec![1, 0, 2]]),
    ));
    v.push(ds(
        "sparse/empty",
        RAW,
        I32,
        &[10, 10],
        &[4, 4],
        Fill::SomeBlocks(vec![]),
    ));
    v.push(ds(
        "sparse/regions",
        ZSTD,
        I16,
        &[30, 20, 10],
        &[7, 6, 4],
        Fill::Regions(vec![
            (vec![3, 2, 1], vec![10, 9, 5]),
            (vec![20, 14, 6], vec![10, 6, 4]),
            (vec![8, 0, 0], vec![5, 20, 3]),
            (vec![0, 5, 3], vec![30, 3, 2]),
        ]),
    ));
    v.push(ds(
        "sparse/overwrite",
        RAW,
        U8,
        &[17, 9],
        &[4, 4],
        Fill::Regions(vec![
            (vec![0, 0], vec![17, 9]),
            (vec![1, 1], vec![6, 6]),
            (vec![4, 4], vec![4, 4]),
            (vec![16, 8], vec![1, 1]),
        ]),
    ));
    // Java's LZ4Block framing: only Java reads it.
    for (key, json) in [
        ("lz4", r#"{"type":"lz4"}"#),
        ("lz4-b64", r#"{"type":"lz4","blockSize":64}"#),
    ] {
        for t in [U16, F64] {
            v.push(ds(
                format!("lz4/{key}/{t}"),
                (key, json),
                t,
                &[67, 45],
                &[16, 16],
                Fill::Whole,
            ));
        }
    }
    // A dataset with user attributes next to the dataset keys, including the
    // axes / units / resolution members tensorstore interprets.
    let mut meta = ds(
        "meta/with_extras",
        RAW,
        U8,
        &[16, 12, 5],
        &[8, 8, 5],
        Fill::Whole,
    );
    meta.attributes = Some(parse(
        r#"{
        "axes": ["x", "y", "z"],
        "units": ["nm", "nm", "um"],
        "resolution": [4.0, 4.0, 40.0],
        "pixelResolution": {"dimensions": [4.0, 4.0, 40.0], "unit": "nm"},
        "downsamplingFactors": [1, 1, 1],
        "description": "Zellkern · 細胞核 · 🧫"
    }"#,
    ));
    v.push(meta);
    v
}

/// Group attributes: numbers at the edges of what JSON libraries keep exactly.
fn groups() -> Vec<(&'static str, Value)> {
    vec![
        (
            "",
            parse(r#"{"title": "libn5 peer interoperability container", "written_by": "libn5"}"#),
        ),
        (
            "groups",
            parse(
                r#"{
            "description": "nested groups with rich JSON attributes",
            "int": 42,
            "negative": -7,
            "int64_max": 9223372036854775807,
            "int64_min": -9223372036854775808,
            "uint64_max": 18446744073709551615,
            "beyond_double_precision": 9007199254740993,
            "pi": 3.141592653589793,
            "smallest_subnormal": 5e-324,
            "largest_double": 1.797e308,
            "max_double": 1.7976931348623157e308,
            "small_exponent": 1e-07,
            "negative_zero": -0.0,
            "float_integral": 2.0,
            "true": true,
            "false": false,
            "null": null,
            "string": "plain",
            "unicode": "Grüße, 日本語, emoji 🧪, עברית",
            "escapes": "quote \" backslash \\ tab \t newline \n",
            "control_chars": "\u0001\u001f",
            "empty_string": "",
            "empty_object": {},
            "empty_array": [],
            "int_array": [1, 2, 3, -4],
            "float_array": [0.5, -1.25, 1e300],
            "mixed_array": [1, "two", 3.5, null, true, {"k": "v"}, [1, [2, [3]]]],
            "nested": {"level1": {"level2": {"level3": {"value": "deep", "list": [{"a": 1}, {"b": [2, 3]}]}}}},
            "ключ_unicode_key": "unicode key",
            "key with spaces": 1,
            "key.with.dots": 2,
            "key/with/slash": 3
        }"#,
            ),
        ),
        ("groups/a", parse(r#"{"level": 1, "name": "a"}"#)),
        (
            "groups/a/b",
            parse(r#"{"level": 2, "name": "b", "list": [[1, 2], [3, 4]]}"#),
        ),
        (
            "groups/a/b/c",
            parse(
                r#"{"level": 3, "name": "c", "nested": {"x": {"y": {"z": [1.5, {"w": null}]}}}}"#,
            ),
        ),
    ]
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON in the test: {e}\n{text}"))
}

// ------------------------------------------------------------------ writing

/// Write one dataset; returns the expected whole array (native order).
fn write_dataset(c: &Container, d: &Ds, seed: u64) -> Vec<u8> {
    let compression = Compression::from_json(&parse(&d.comp_json))
        .unwrap_or_else(|e| panic!("{}: libn5 rejects compression {}: {e}", d.path, d.comp_json));
    let attrs = DatasetAttributes::new(
        d.dims.clone(),
        d.block.clone(),
        d.dtype.clone(),
        compression,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", d.path));
    let dataset = c
        .create_dataset(&d.path, attrs)
        .unwrap_or_else(|e| panic!("{}: {e}", d.path));
    if let Some(Value::Object(extra)) = &d.attributes {
        c.set_attributes(&d.path, extra).unwrap();
    }
    let elem = d.dtype.size();
    let n: u64 = d.dims.iter().product();
    let full = array(d.dtype.clone(), n, seed);
    let zeros = vec![0u64; d.dims.len()];
    let grid: Vec<u64> = d
        .dims
        .iter()
        .zip(&d.block)
        .map(|(&a, &b)| a.div_ceil(b as u64))
        .collect();
    let block_box = |g: &[u64]| -> (Vec<u64>, Vec<u64>) {
        let off: Vec<u64> = g
            .iter()
            .zip(&d.block)
            .map(|(&g, &b)| g * b as u64)
            .collect();
        let shape: Vec<u64> = off
            .iter()
            .zip(&d.dims)
            .zip(&d.block)
            .map(|((&o, &n), &b)| (n - o).min(b as u64))
            .collect();
        (off, shape)
    };
    let fail = |e: n5::Error| -> ! { panic!("{}: {e}", d.path) };
    match &d.fill {
        Fill::Whole => {
            dataset
                .write_region(&zeros, &d.dims, &full)
                .unwrap_or_else(|e| fail(e));
            full
        }
        Fill::Blocks => {
            for_each_index(&grid, |g| {
                let (off, shape) = block_box(g);
                let data = extract(&full, &d.dims, &off, &shape, elem);
                dataset
                    .write_block(g, &shape, &data)
                    .unwrap_or_else(|e| fail(e));
            });
            full
        }
        Fill::SomeBlocks(list) => {
            let mut expected = vec![0u8; full.len()];
            for g in list {
                let (off, shape) = block_box(g);
                let data = extract(&full, &d.dims, &off, &shape, elem);
                dataset
                    .write_block(g, &shape, &data)
                    .unwrap_or_else(|e| fail(e));
                insert(&mut expected, &d.dims, &off, &shape, &data, elem);
            }
            expected
        }
        Fill::Regions(list) => {
            let mut expected = vec![0u8; full.len()];
            for (i, (off, shape)) in list.iter().enumerate() {
                let m: u64 = shape.iter().product();
                let data = array(d.dtype.clone(), m, seed * 31 + i as u64 + 1);
                dataset
                    .write_region(off, shape, &data)
                    .unwrap_or_else(|e| fail(e));
                insert(&mut expected, &d.dims, off, shape, &data, elem);
            }
            expected
        }
    }
}

/// A sub-region that crosses block boundaries (and is not empty).
fn sub_region(dims: &[u64], block: &[u32]) -> (Vec<u64>, Vec<u64>) {
    let off: Vec<u64> = dims
        .iter()
        .zip(block)
        .map(|(&n, &b)| {
            if n > 1 {
                (b as u64 / 2 + 1).min(n - 1)
            } else {
                0
            }
        })
        .collect();
    let shape: Vec<u64> = dims
        .iter()
        .zip(&off)
        .map(|(&n, &o)| ((n - o) * 2 / 3).max(1))
        .collect();
    (off, shape)
}

/// Write the container and the spec; returns the spec's path.
fn write_all(dir: &Path, only: Option<&[String]>) -> (PathBuf, PathBuf) {
    let root = dir.join("libn5.n5");
    let c = Container::open(&root, Mode::Create).unwrap();
    let spec = write_catalogue(&c, dir, only);
    (root, spec)
}

/// Write the catalogue (or the datasets whose compression key is in
/// `only`) and the groups into `c`, the expected data and the spec into
/// `dir`; returns the spec's path.
fn write_catalogue(c: &Container, dir: &Path, only: Option<&[String]>) -> PathBuf {
    let data_dir = dir.join("expected");
    std::fs::create_dir_all(&data_dir).unwrap();

    let mut datasets = Vec::new();
    for (i, d) in catalogue().into_iter().enumerate() {
        if let Some(only) = only {
            if !only.contains(&d.comp_key) {
                continue;
            }
        }
        let expected = write_dataset(c, &d, i as u64 + 1);
        let file = format!("{}.bin", d.path.replace('/', "__"));
        std::fs::write(data_dir.join(&file), to_le(&expected, d.dtype.size())).unwrap();
        let (off, shape) = sub_region(&d.dims, &d.block);
        let mut entry = json!({
            "path": d.path,
            "dtype": d.dtype.name(),
            "dims": d.dims,
            "blockSize": d.block,
            "compressionKey": d.comp_key,
            "compression": parse(&d.comp_json),
            "data": format!("expected/{file}"),
            "region": {"offset": off, "shape": shape},
        });
        if let Some(a) = &d.attributes {
            entry["attributes"] = a.clone();
        }
        datasets.push(entry);
    }

    let mut group_entries = Vec::new();
    for (path, attrs) in groups() {
        c.create_group(path).unwrap();
        let map: &Map<String, Value> = attrs.as_object().unwrap();
        c.set_attributes(path, map)
            .unwrap_or_else(|e| panic!("group '{path}': {e}"));
        group_entries.push(json!({"path": path, "attributes": attrs}));
    }

    let spec = json!({
        "writer": format!("libn5 {}", env!("CARGO_PKG_VERSION")),
        "datasets": datasets,
        "groups": group_entries,
    });
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    spec_path
}

// --------------------------------------------------------------------- test

#[test]
fn peers_read_what_libn5_writes() {
    let Some(python) = std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty()) else {
        // Straight to stderr, past the harness's capture, so that a plain
        // `cargo test` shows the notice.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "peers: skipped: N5_PEER_PYTHON is not set; run ./tests/run.sh to check libn5's output \
             with tensorstore, z5py and zarr 2"
        );
        return;
    };
    let only: Option<Vec<String>> = std::env::var("N5_PEERS_ONLY")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(|k| k.trim().to_string()).collect());

    let scratch;
    let dir: PathBuf = match std::env::var_os("N5_PEERS_KEEP").filter(|p| !p.is_empty()) {
        Some(keep) => {
            let keep = PathBuf::from(keep);
            let _ = std::fs::remove_dir_all(&keep);
            std::fs::create_dir_all(&keep).unwrap();
            keep
        }
        None => {
            scratch = Scratch::new("peers");
            scratch.path().to_path_buf()
        }
    };
    let (root, spec) = write_all(&dir, only.as_deref());

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/read_with_peers.py");
    let output = Command::new(&python)
        .arg(&script)
        .arg(&root)
        .arg(&spec)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} {}: {e}",
                python.to_string_lossy(),
                script.display()
            )
        });
    // Written straight to stderr (not through the test harness's capture), so
    // the matrix shows in every ./tests/run.sh log.
    {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(&output.stdout);
        let _ = err.write_all(&output.stderr);
    }
    assert!(
        output.status.success(),
        "the peers could not read what libn5 wrote ({}); see the failures listed above",
        output.status
    );
}

// ------------------------------------------------------ on object stores

/// The peers' Python, or `None` after saying why the test does nothing.
fn peer_python() -> Option<std::ffi::OsString> {
    let python = std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty());
    if python.is_none() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "peers: skipped: N5_PEER_PYTHON is not set; run ./tests/run.sh"
        );
    }
    python
}

/// tensorstore's kvstore spec for `place` (whose location is
/// `s3://bucket/path` or `gs://bucket/path`), and the environment its
/// Python process needs to reach the test server.
fn tensorstore_kvstore(place: &Place) -> (Value, Vec<(&'static str, String)>) {
    let (scheme, rest) = place.location.split_once("://").unwrap();
    let (bucket, path) = rest.split_once('/').unwrap();
    match (scheme, place.kind) {
        ("s3", Kind::S3) => {
            let s3 = n5_testkit::s3_signed().unwrap();
            let c = s3.credentials().unwrap();
            (
                json!({"driver": "s3", "bucket": bucket, "path": path, "endpoint": s3.endpoint(),
                       "aws_region": s3.region(), "aws_credentials": {"type": "environment"}}),
                vec![
                    ("AWS_ACCESS_KEY_ID", c.access_key_id.clone()),
                    ("AWS_SECRET_ACCESS_KEY", c.secret_access_key.clone()),
                ],
            )
        }
        _ => (
            json!({"driver": "gcs", "bucket": bucket, "path": path}),
            vec![
                (
                    "TENSORSTORE_GCS_HTTP_URL",
                    n5_testkit::gcs().unwrap().endpoint(),
                ),
                // No credentials to look for: a fixed token, and no
                // metadata server (a closed loopback port).
                ("GOOGLE_AUTH_TOKEN_FOR_TESTING", "test-token".into()),
                ("GCE_METADATA_ROOT", "127.0.0.1:9".into()),
            ],
        ),
    }
}

/// Run a peer script with the environment of `place`'s server.
fn run_python(
    python: &std::ffi::OsStr,
    place: &Place,
    args: &[&std::ffi::OsStr],
) -> std::process::Output {
    let (_, env) = tensorstore_kvstore(place);
    let mut command = Command::new(python);
    command
        .args(args)
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS");
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output().unwrap();
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(&output.stdout);
    let _ = err.write_all(&output.stderr);
    output
}

#[test]
fn tensorstore_reads_what_libn5_writes_to_object_stores() {
    let Some(python) = peer_python() else {
        return;
    };
    let only: Vec<String> = [
        "raw",
        "gzip",
        "zlib",
        "bzip2",
        "xz",
        "blosc-lz4-s1",
        "blosc-zstd-s2",
        "zstd",
    ]
    .map(String::from)
    .to_vec();
    for place in object_stores("peers") {
        let scratch = Scratch::new("peers-remote");
        let c = place.open(Mode::Create).unwrap();
        let spec = write_catalogue(&c, scratch.path(), Some(&only));
        let (kvstore, _) = tensorstore_kvstore(&place);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/read_with_peers.py");
        let kv = kvstore.to_string();
        let out = run_python(
            &python,
            &place,
            &[
                script.as_os_str(),
                "--kvstore".as_ref(),
                kv.as_ref(),
                spec.as_os_str(),
            ],
        );
        assert!(
            out.status.success(),
            "{:?}: tensorstore could not read what libn5 wrote to {} (see above)",
            place.kind,
            place.location
        );
    }
}

#[test]
fn libn5_reads_what_tensorstore_writes_to_object_stores() {
    let Some(python) = peer_python() else {
        return;
    };
    for place in object_stores("from-tensorstore") {
        let scratch = Scratch::new("tensorstore-remote");
        let (kvstore, _) = tensorstore_kvstore(&place);
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/write_with_tensorstore.py");
        let spec_path = scratch.join("spec.json");
        let seed = std::process::id().to_string();
        let kv = kvstore.to_string();
        let out = run_python(
            &python,
            &place,
            &[
                script.as_os_str(),
                kv.as_ref(),
                spec_path.as_os_str(),
                seed.as_ref(),
            ],
        );
        assert!(
            out.status.success(),
            "{:?}: tensorstore could not write",
            place.kind
        );
        let spec: Value = serde_json::from_slice(&std::fs::read(&spec_path).unwrap()).unwrap();
        // tensorstore writes no root attributes.json and no directory markers.
        let c = place.open(Mode::Read).unwrap();
        assert_eq!(c.version().unwrap(), None);
        let listed = c.list("ts").unwrap();
        for d in spec["datasets"].as_array().unwrap() {
            let path = d["path"].as_str().unwrap();
            assert!(
                listed.contains(&path[3..].to_string()),
                "{path} not in {listed:?}"
            );
            let ds = c.open_dataset(path).unwrap();
            let dims: Vec<u64> = d["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            assert_eq!(ds.attributes().dimensions, dims, "{path}");
            let mut out = vec![0u8; dims.iter().product::<u64>() as usize * ds.data_type().size()];
            ds.read_region(&vec![0; dims.len()], &dims, &mut out)
                .unwrap();
            if cfg!(target_endian = "big") {
                n5::block::swap_to_from_be(&mut out, ds.data_type().size());
            }
            assert_eq!(
                common::sha256(&out),
                d["sha256"].as_str().unwrap(),
                "{:?}: {path} differs from what tensorstore wrote",
                place.kind
            );
        }
        eprintln!(
            "{:?}: libn5 read all {} datasets tensorstore wrote",
            place.kind,
            spec["datasets"].as_array().unwrap().len()
        );
    }
}
