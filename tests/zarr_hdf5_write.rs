//! libn5 writes Zarr v3 shards that are HDF5 files too (hdf5.md A): arrays
//! with the `hdf5_shards` member written through the API, checked by the
//! peers.
//!
//! Random arrays (the seed is printed; `N5_HDF5_SHARDS_SEED` repeats a
//! run) cover the ten types, ranks 1 to 4, both byte orders, raw, zstd and
//! blosc inner chunks, the index at the start and the end, with and
//! without its CRC-32C, shapes that are no multiple of the shard with edge
//! shards smaller than one inner chunk, inner chunks and whole shards equal
//! to the fill value, non-zero and NaN fill values, a shard of more than
//! 1024 inner chunks, and an array whose plain shards (written before the
//! member was added, as zarr-python and tensorstore write them) libn5 then
//! writes to. Each is written whole, then in parts (read-modify-write of
//! shards), then again after the container is reopened (block writes,
//! block deletes, regions); libn5 reads back what a model of the writes
//! holds. Then `tests/peers/check_hdf5_shards.py` checks every shard file
//! with h5py (and hdf5plugin), h5repack and h5dump, and every array with
//! tensorstore, and `tests/peers/read_zarr_with_zarr3.py` reads every
//! array with zarr-python 3. Codecs HDF5 shards cannot hold are refused,
//! at creation and at every write to an existing array. Through the C API,
//! `n5_dataset_create_json` makes such an array and `n5_dataset_metadata`
//! gives the document with the member. On S3 (SeaweedFS) a smaller case
//! writes HDF5 shards that the same checks accept.
//!
//! Needs the peers' Pythons (`N5_PEER_PYTHON` with h5py, hdf5plugin and
//! tensorstore; `N5_ZARR3_PYTHON` with zarr-python 3) and Debian's
//! hdf5-tools (h5dump, h5repack); without them the checks that need them
//! say so and pass, unless `N5_REQUIRE_PEERS=1` (`./tests/run.sh`).

mod common;

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

use n5::format::hdf5::inspect_shard;
use n5::{Container, DataType, Dataset, ErrorKind, Mode, Options};
use serde_json::{json, Value};

struct Rand(u64);

impl Rand {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, m: u64) -> u64 {
        self.next() % m.max(1)
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// The seed of this run: `N5_HDF5_SHARDS_SEED`, else from the clock.
fn seed() -> u64 {
    let seed = std::env::var("N5_HDF5_SHARDS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("hdf5 shards: seed {seed} (N5_HDF5_SHARDS_SEED={seed} repeats this run)");
    seed
}

fn peers_required() -> bool {
    std::env::var("N5_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Says that `what` is skipped and why; panics instead when the peers are
/// required.
fn skip(what: &str, why: &str) {
    assert!(
        !peers_required(),
        "N5_REQUIRE_PEERS=1 but {what} cannot run: {why}"
    );
    eprintln!("hdf5 shards: skipped {what}: {why}");
}

/// The interpreter named by the environment variable `var`.
fn python(var: &str, what: &str) -> Option<PathBuf> {
    let p = std::env::var_os(var).filter(|p| !p.is_empty());
    if p.is_none() {
        skip(what, &format!("{var} is not set; run ./tests/run.sh"));
    }
    p.map(PathBuf::from)
}

/// Whether h5dump and h5repack run.
fn hdf5_tools() -> bool {
    let ok = ["h5dump", "h5repack"].iter().all(|t| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !ok {
        skip(
            "h5dump and h5repack",
            "they are not on PATH; run tests/setup.sh hdf5-tools",
        );
    }
    ok
}

/// The ten types: data type, numpy code (without byte order).
const TYPES: [(DataType, &str); 10] = [
    (DataType::U8, "u1"),
    (DataType::U16, "u2"),
    (DataType::U32, "u4"),
    (DataType::U64, "u8"),
    (DataType::I8, "i1"),
    (DataType::I16, "i2"),
    (DataType::I32, "i4"),
    (DataType::I64, "i8"),
    (DataType::F32, "f4"),
    (DataType::F64, "f8"),
];

/// One array to write.
#[derive(Clone, Debug)]
struct Case {
    path: String,
    dtype: DataType,
    code: &'static str,
    big_endian: bool,
    /// C order.
    shape: Vec<u64>,
    shard: Vec<u64>,
    inner: Vec<u64>,
    fill: Value,
    /// The inner compressor codec, if any.
    compressor: Option<Value>,
    /// The HDF5 filter it becomes: `{"id", "name", "cd"}`.
    filter: Value,
    start: bool,
    crc: bool,
    separator: &'static str,
    /// Written first without the member (plain shards), then with it.
    plain_first: bool,
}

impl Case {
    fn elem(&self) -> usize {
        self.dtype.size()
    }

    /// The N5-order dimensions.
    fn dims(&self) -> Vec<u64> {
        self.shape.iter().rev().copied().collect()
    }

    /// One element of the fill value, native order.
    fn fill_bytes(&self) -> Vec<u8> {
        let f = &self.fill;
        match &self.dtype {
            DataType::U8 => vec![f.as_u64().unwrap() as u8],
            DataType::U16 => (f.as_u64().unwrap() as u16).to_ne_bytes().to_vec(),
            DataType::U32 => (f.as_u64().unwrap() as u32).to_ne_bytes().to_vec(),
            DataType::U64 => f.as_u64().unwrap().to_ne_bytes().to_vec(),
            DataType::I8 => vec![f.as_i64().unwrap() as i8 as u8],
            DataType::I16 => (f.as_i64().unwrap() as i16).to_ne_bytes().to_vec(),
            DataType::I32 => (f.as_i64().unwrap() as i32).to_ne_bytes().to_vec(),
            DataType::I64 => f.as_i64().unwrap().to_ne_bytes().to_vec(),
            DataType::F32 => match f.as_f64() {
                Some(v) => (v as f32).to_ne_bytes().to_vec(),
                None => f32::NAN.to_ne_bytes().to_vec(),
            },
            DataType::F64 => match f.as_f64() {
                Some(v) => v.to_ne_bytes().to_vec(),
                None => f64::NAN.to_ne_bytes().to_vec(),
            },
            t => panic!("{t:?}"),
        }
    }

    /// The zarr.json document (with the member unless `plain`).
    fn document(&self, plain: bool) -> Value {
        let endian = if self.big_endian { "big" } else { "little" };
        let mut codecs = vec![json!({"name": "bytes", "configuration": {"endian": endian}})];
        codecs.extend(self.compressor.clone());
        let mut index = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
        if self.crc {
            index.push(json!({"name": "crc32c"}));
        }
        let mut doc = json!({
            "shape": self.shape, "data_type": self.dtype.name(),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.shard}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": self.separator}},
            "fill_value": self.fill,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": self.inner, "codecs": codecs, "index_codecs": index,
                "index_location": if self.start { "start" } else { "end" }}}],
            "attributes": {"case": self.path},
        });
        if !plain {
            doc["hdf5_shards"] = json!({"must_understand": false});
        }
        doc
    }

    /// What check_hdf5_shards.py needs of the array.
    fn spec(&self, bin: &Path) -> Value {
        let order = if self.big_endian && self.elem() > 1 {
            ">"
        } else {
            "<"
        };
        json!({
            "path": self.path, "dtype": format!("{order}{}", self.code),
            "shape": self.shape, "shard": self.shard, "inner": self.inner,
            "fill": if self.fill.is_string() { json!("NaN") } else { self.fill.clone() },
            "filter": self.filter, "index_location": if self.start { "start" } else { "end" },
            "crc32c": self.crc, "separator": self.separator, "bin": bin,
        })
    }
}

/// A random element of `dtype`, native order (floats: whole numbers over
/// 8, never NaN).
fn element(r: &mut Rand, dtype: DataType) -> Vec<u8> {
    let x = r.next();
    match dtype {
        DataType::F32 => (((x % 200_001) as f32 - 100_000.0) / 8.0)
            .to_ne_bytes()
            .to_vec(),
        DataType::F64 => (((x % 2_000_001) as f64 - 1_000_000.0) / 8.0)
            .to_ne_bytes()
            .to_vec(),
        // Small values now and then, so that codecs have work to do.
        t => {
            let v = if x & 1 == 0 { x >> 60 } else { x >> 3 };
            v.to_ne_bytes()[..t.size()].to_vec()
        }
    }
}

/// A random case of type number `i`: its coverage follows `i` (rank,
/// byte order, compressor, index place, CRC), its sizes and values `r`.
fn case(r: &mut Rand, i: usize) -> Case {
    let (dtype, code) = TYPES[i % 10].clone();
    let rank = 1 + i % 4;
    let elem = dtype.size() as u32;
    let inner: Vec<u64> = (0..rank)
        .map(|d| {
            if d == 0 {
                2 + r.below(2)
            } else {
                1 + r.below(3)
            }
        })
        .collect();
    let per: Vec<u64> = (0..rank).map(|_| 1 + r.below(3)).collect();
    let shard: Vec<u64> = inner.iter().zip(&per).map(|(c, p)| c * p).collect();
    // Dimension 0 ends in an edge shard smaller than one inner chunk (its
    // inner chunk is at least 2); the others end anywhere.
    let shape: Vec<u64> = (0..rank)
        .map(|d| {
            let whole = r.below(3);
            if d == 0 {
                (whole + 1) * shard[0] + 1
            } else {
                whole * shard[d] + 1 + r.below(shard[d])
            }
        })
        .collect();
    let fill = match dtype {
        DataType::F32 => json!("NaN"),
        DataType::F64 => json!(-2.5),
        DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64 => {
            json!(-(r.below(100) as i64))
        }
        _ if i.is_multiple_of(3) => json!(0),
        _ => json!(1 + r.below(100)),
    };
    let (compressor, filter) = match i % 3 {
        0 => (None, Value::Null),
        1 => {
            let level = 1 + r.below(5) as i64;
            (
                Some(
                    json!({"name": "zstd", "configuration": {"level": level, "checksum": r.below(2) == 0}}),
                ),
                json!({"id": 32015, "name": "zstd", "cd": [level]}),
            )
        }
        _ => {
            let (cname, number) = *r.pick(&[
                ("blosclz", 0),
                ("lz4", 1),
                ("lz4hc", 2),
                ("zlib", 4),
                ("zstd", 5),
            ]);
            let (shuffle, code) = *r.pick(&[("noshuffle", 0), ("shuffle", 1), ("bitshuffle", 2)]);
            let clevel = 1 + r.below(9);
            let bytes: u64 = inner.iter().product::<u64>() * elem as u64;
            (
                Some(json!({"name": "blosc", "configuration": {
                    "cname": cname, "clevel": clevel, "shuffle": shuffle,
                    "typesize": elem, "blocksize": 0}})),
                json!({"id": 32001, "name": "blosc",
                       "cd": [2, 2, elem, bytes, clevel, code, number]}),
            )
        }
    };
    Case {
        path: format!("a{i}_{}", dtype.name()),
        dtype,
        code,
        big_endian: i % 2 == 1,
        shape,
        shard,
        inner,
        fill,
        compressor,
        filter,
        start: (i / 2).is_multiple_of(2),
        crc: (i % 5).is_multiple_of(2),
        separator: if i.is_multiple_of(5) { "." } else { "/" },
        plain_first: false,
    }
}

/// The cases of a run: one per type, a shard of more than 1024 inner
/// chunks, and an array that had plain shards first.
fn cases(r: &mut Rand) -> Vec<Case> {
    let mut all: Vec<Case> = (0..10).map(|i| case(r, i)).collect();
    let mut many = case(r, 10);
    many.path = "many_inner_chunks".into();
    many.dtype = DataType::U16;
    many.code = "u2";
    many.fill = json!(3);
    many.inner = vec![1, 2];
    many.shard = vec![40, 60];
    many.shape = vec![41 + r.below(39), 61 + r.below(59)];
    many.start = r.below(2) == 0;
    many.compressor = None;
    many.filter = Value::Null;
    all.push(many);
    let mut plain = case(r, 11);
    plain.path = "plain_shards_first".into();
    plain.plain_first = true;
    all.push(plain);
    all
}

/// Copies the box `extent` (N5 order) at `src_at` of `src` (dims
/// `src_dims`) to `dst_at` of `dst` (dims `dst_dims`).
#[allow(clippy::too_many_arguments)]
fn copy_box(
    src: &[u8],
    src_dims: &[u64],
    src_at: &[u64],
    dst: &mut [u8],
    dst_dims: &[u64],
    dst_at: &[u64],
    extent: &[u64],
    elem: usize,
) {
    let n = extent.len();
    if extent.contains(&0) {
        return;
    }
    let rows: u64 = extent[1..].iter().product();
    let row = extent[0] as usize * elem;
    for k in 0..rows {
        let (mut rest, mut s, mut d, mut ss, mut ds) = (k, 0u64, 0u64, 1u64, 1u64);
        for dim in 0..n {
            let p = if dim == 0 {
                0
            } else {
                let p = rest % extent[dim];
                rest /= extent[dim];
                p
            };
            s += (src_at[dim] + p) * ss;
            d += (dst_at[dim] + p) * ds;
            ss *= src_dims[dim];
            ds *= dst_dims[dim];
        }
        let (s, d) = (s as usize * elem, d as usize * elem);
        dst[d..d + row].copy_from_slice(&src[s..s + row]);
    }
}

/// An array under test and the model of what it holds (native order, C
/// order of the shape).
struct Written {
    case: Case,
    model: Vec<u8>,
}

impl Written {
    fn new(case: Case) -> Written {
        let n: u64 = case.shape.iter().product();
        let fill = case.fill_bytes();
        Written {
            model: fill.repeat(n as usize),
            case,
        }
    }

    /// Random data for the box `shape` (N5 order): random elements, with
    /// runs of the fill value.
    fn data(&self, r: &mut Rand, shape: &[u64]) -> Vec<u8> {
        let n: u64 = shape.iter().product();
        let fill = self.case.fill_bytes();
        let run = 1 + r.below(24) as usize;
        let mut out = Vec::with_capacity(n as usize * self.case.elem());
        let mut filling = false;
        for k in 0..n as usize {
            if k % run == 0 {
                filling = r.below(3) == 0;
            }
            if filling {
                out.extend_from_slice(&fill);
            } else {
                out.extend(element(r, self.case.dtype.clone()));
            }
        }
        out
    }

    /// Writes `data` to the box at `offset` (N5 order) and to the model.
    fn region(&mut self, d: &Dataset, offset: &[u64], shape: &[u64], data: &[u8]) {
        d.write_region(offset, shape, data).unwrap_or_else(|e| {
            panic!(
                "{}: write_region({offset:?}, {shape:?}): {e}",
                self.case.path
            )
        });
        let dims = self.case.dims();
        let zero = vec![0; shape.len()];
        copy_box(
            data,
            shape,
            &zero,
            &mut self.model,
            &dims,
            offset,
            shape,
            self.case.elem(),
        );
    }

    /// A random box inside the array.
    fn random_box(&self, r: &mut Rand) -> (Vec<u64>, Vec<u64>) {
        let dims = self.case.dims();
        let offset: Vec<u64> = dims.iter().map(|&d| r.below(d)).collect();
        let shape: Vec<u64> = dims
            .iter()
            .zip(&offset)
            .map(|(&d, &o)| 1 + r.below(d - o))
            .collect();
        (offset, shape)
    }

    /// The first writes: the whole array, then parts of it (shards
    /// changed in part are read, merged and written back).
    fn first_writes(&mut self, r: &mut Rand, d: &Dataset) {
        let dims = self.case.dims();
        let mut whole = self.data(r, &dims);
        // Whole inner chunks and a whole shard of fill value.
        let fill = self.case.fill_bytes();
        let block: Vec<u64> = self.case.inner.iter().rev().copied().collect();
        for _ in 0..3 {
            let at: Vec<u64> = dims
                .iter()
                .zip(&block)
                .map(|(&d, &b)| r.below(d.div_ceil(b)) * b)
                .collect();
            let extent: Vec<u64> = at
                .iter()
                .zip(&block)
                .zip(&dims)
                .map(|((&a, &b), &d)| b.min(d - a))
                .collect();
            let n = extent.iter().product::<u64>() as usize;
            copy_box(
                &fill.repeat(n),
                &extent,
                &vec![0; extent.len()],
                &mut whole,
                &dims,
                &at,
                &extent,
                fill.len(),
            );
        }
        let shard: Vec<u64> = self.case.shard.iter().rev().copied().collect();
        let extent: Vec<u64> = shard.iter().zip(&dims).map(|(&s, &d)| s.min(d)).collect();
        let n = extent.iter().product::<u64>() as usize;
        let zero = vec![0; dims.len()];
        copy_box(
            &fill.repeat(n),
            &extent,
            &zero,
            &mut whole,
            &dims,
            &zero,
            &extent,
            fill.len(),
        );
        self.region(d, &zero, &dims, &whole);
        for _ in 0..3 {
            let (offset, shape) = self.random_box(r);
            let data = self.data(r, &shape);
            self.region(d, &offset, &shape, &data);
        }
    }

    /// Writes after the container is reopened: blocks (one of the fill
    /// value), a block delete, a region.
    fn later_writes(&mut self, r: &mut Rand, d: &Dataset) {
        let attrs = d.attributes();
        let grid = attrs.grid_shape();
        let dims = self.case.dims();
        let block: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
        for k in 0..4 {
            let pos: Vec<u64> = grid.iter().map(|&g| r.below(g)).collect();
            let shape = d.block_shape(&pos).unwrap();
            let data = if k == 0 {
                self.case
                    .fill_bytes()
                    .repeat(shape.iter().product::<u64>() as usize)
            } else {
                self.data(r, &shape)
            };
            d.write_block(&pos, &shape, &data)
                .unwrap_or_else(|e| panic!("{}: write_block({pos:?}): {e}", self.case.path));
            let at: Vec<u64> = pos.iter().zip(&block).map(|(p, b)| p * b).collect();
            copy_box(
                &data,
                &shape,
                &vec![0; shape.len()],
                &mut self.model,
                &dims,
                &at,
                &shape,
                self.case.elem(),
            );
        }
        let pos: Vec<u64> = grid.iter().map(|&g| r.below(g)).collect();
        d.delete_block(&pos).unwrap();
        let shape = d.block_shape(&pos).unwrap();
        let at: Vec<u64> = pos.iter().zip(&block).map(|(p, b)| p * b).collect();
        let fill = self
            .case
            .fill_bytes()
            .repeat(shape.iter().product::<u64>() as usize);
        copy_box(
            &fill,
            &shape,
            &vec![0; shape.len()],
            &mut self.model,
            &dims,
            &at,
            &shape,
            self.case.elem(),
        );
        let (offset, shape) = self.random_box(r);
        let data = self.data(r, &shape);
        self.region(d, &offset, &shape, &data);
    }

    /// libn5 reads back the model.
    fn check_read(&self, d: &Dataset) {
        let dims = self.case.dims();
        let mut back = vec![0u8; self.model.len()];
        d.read_region(&vec![0; dims.len()], &dims, &mut back)
            .unwrap();
        assert!(
            back == self.model,
            "{}: libn5 reads other data back",
            self.case.path
        );
    }

    /// The model as little-endian bytes.
    fn le(&self) -> Vec<u8> {
        let mut v = self.model.clone();
        if cfg!(target_endian = "big") {
            n5::block::swap_to_from_be(&mut v, self.case.elem());
        }
        v
    }
}

/// Writes every case into the container at `root` (local), checks what
/// libn5 reads, and gives the arrays written.
fn write_cases(r: &mut Rand, root: &Path, cases: Vec<Case>) -> Vec<Written> {
    let loc = root.to_str().unwrap();
    let zarr3 = || Options::from_json(r#"{"format": "zarr3"}"#).unwrap();
    let c = Container::open_with(loc, Mode::Create, zarr3()).unwrap();
    let mut written: Vec<Written> = cases.into_iter().map(Written::new).collect();
    for w in &mut written {
        let doc = w.case.document(w.case.plain_first);
        let d = c
            .create_dataset_json(&w.case.path, &doc)
            .unwrap_or_else(|e| panic!("{}: create_dataset_json({doc}): {e}", w.case.path));
        let meta = d.metadata().unwrap();
        assert_eq!(
            meta.get("hdf5_shards").is_some(),
            !w.case.plain_first,
            "{meta}"
        );
        w.first_writes(r, &d);
        if w.case.plain_first {
            // The member added as another writer adds it: the plain shards
            // stay, and each becomes an HDF5 file when libn5 writes to it.
            let key = root.join(&w.case.path).join("zarr.json");
            let mut doc: Value = serde_json::from_slice(&std::fs::read(&key).unwrap()).unwrap();
            doc["hdf5_shards"] = json!({"must_understand": false, "added": "later"});
            std::fs::write(&key, serde_json::to_vec(&doc).unwrap()).unwrap();
        }
    }
    drop(c);
    let c = Container::open_with(loc, Mode::ReadWrite, zarr3()).unwrap();
    for w in &mut written {
        let d = c.open_dataset(&w.case.path).unwrap();
        assert!(d.metadata().unwrap().get("hdf5_shards").is_some());
        w.later_writes(r, &d);
        if w.case.plain_first {
            // One element of every shard: each shard read, merged, written.
            let shard: Vec<u64> = w.case.shard.iter().rev().copied().collect();
            let grid: Vec<u64> = w
                .case
                .dims()
                .iter()
                .zip(&shard)
                .map(|(d, s)| d.div_ceil(*s))
                .collect();
            let count: u64 = grid.iter().product();
            for k in 0..count {
                let mut rest = k;
                let at: Vec<u64> = grid
                    .iter()
                    .zip(&shard)
                    .map(|(&g, &s)| {
                        let p = rest % g;
                        rest /= g;
                        p * s
                    })
                    .collect();
                let one = element(r, w.case.dtype.clone());
                w.region(&d, &at, &vec![1; at.len()], &one);
            }
        }
        w.check_read(&d);
    }
    written
}

/// Every shard file below `root` parses as an HDF5 shard file (libn5's own
/// reading of the structures); gives how many.
fn inspect_all(root: &Path, written: &[Written]) -> usize {
    let mut shards = 0;
    for w in written {
        let dir = root.join(&w.case.path);
        for rel in common::files(&dir) {
            if rel.file_name().is_some_and(|n| n == "zarr.json") {
                continue;
            }
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            let info = inspect_shard(&bytes)
                .unwrap_or_else(|e| panic!("{}/{}: {e}", w.case.path, rel.display()));
            assert_eq!(
                info.chunk,
                w.case.inner,
                "{}/{}",
                w.case.path,
                rel.display()
            );
            assert!(
                info.chunks.iter().any(Option::is_some),
                "{}/{}: a shard without chunks is stored",
                w.case.path,
                rel.display()
            );
            shards += 1;
        }
    }
    shards
}

/// The peers' checks of the arrays written below `root`.
fn peers_check(root: &Path, written: &[Written], scratch: &Path) {
    let mut arrays = Vec::new();
    let mut zarr3 = Vec::new();
    for w in written {
        let bin = scratch.join(format!("{}.bin", w.case.path));
        let le = w.le();
        std::fs::write(&bin, &le).unwrap();
        arrays.push(w.case.spec(&bin));
        zarr3.push(json!({
            "path": w.case.path, "format": 3, "sha256": common::sha256(&le),
            "shape": w.case.shape, "dtype": w.case.dtype.name(),
            "attributes": {"case": w.case.path},
        }));
    }
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers");
    if let Some(py) = python("N5_PEER_PYTHON", "h5py, hdf5plugin and tensorstore") {
        let tools = hdf5_tools();
        let spec = scratch.join("hdf5.json");
        let doc = json!({"root": root, "tools": tools, "arrays": arrays});
        std::fs::write(&spec, doc.to_string()).unwrap();
        let out = Command::new(&py)
            .arg(scripts.join("check_hdf5_shards.py"))
            .arg(&spec)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the peers find the HDF5 shards wrong ({}; h5py, hdf5plugin and tensorstore come from tests/peers/requirements.txt):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "hdf5 shards: h5py, hdf5plugin{}, tensorstore: {}",
            if tools { ", h5repack, h5dump" } else { "" },
            String::from_utf8_lossy(&out.stdout).trim()
        );
    }
    if let Some(py) = python("N5_ZARR3_PYTHON", "zarr-python 3") {
        let spec = scratch.join("zarr3.json");
        let doc = json!({"root": root, "attributes": {}, "arrays": zarr3});
        std::fs::write(&spec, doc.to_string()).unwrap();
        let out = Command::new(&py)
            .arg(scripts.join("read_zarr_with_zarr3.py"))
            .arg(&spec)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "zarr-python 3 reads the arrays otherwise:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn random_arrays_with_hdf5_shards_are_hdf5_files_the_peers_read() {
    let mut r = Rand(seed());
    let scratch = common::Scratch::new("hdf5-shards");
    let root = scratch.join("w.zarr");
    let cases = cases(&mut r);
    for c in &cases {
        eprintln!(
            "hdf5 shards: {}: {} shape {:?} shard {:?} inner {:?} {} {} index at the {}{}, fill {}",
            c.path,
            if c.big_endian {
                "big-endian"
            } else {
                "little-endian"
            },
            c.shape,
            c.shard,
            c.inner,
            c.compressor
                .as_ref()
                .map_or("raw".into(), |v| v["name"].to_string()),
            c.dtype.name(),
            if c.start { "start" } else { "end" },
            if c.crc { " with crc32c" } else { "" },
            c.fill
        );
    }
    let written = write_cases(&mut r, &root, cases);
    let shards = inspect_all(&root, &written);
    assert!(shards > 12, "only {shards} shards written");
    peers_check(&root, &written, scratch.path());
}

/// A document of uint8, C-order shape [10, 10] in shards of [4, 4], inner
/// chunks [2, 2], with the member and the given inner codecs, index codecs
/// and extra top-level codecs.
fn small(inner: Value, index: Value, after: Option<Value>) -> Value {
    let mut codecs = vec![json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "codecs": inner, "index_codecs": index}})];
    codecs.extend(after);
    json!({
        "zarr_format": 3, "node_type": "array", "shape": [10, 10], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs,
        "hdf5_shards": {"must_understand": false},
    })
}

fn le() -> Value {
    json!({"name": "bytes", "configuration": {"endian": "little"}})
}

#[test]
fn codecs_hdf5_cannot_hold_are_refused_at_creation_and_at_every_write() {
    let scratch = common::Scratch::new("hdf5-shards-refused");
    let loc = scratch.join("r.zarr");
    let c = Container::open_with(
        loc.to_str().unwrap(),
        Mode::Create,
        Options::from_json(r#"{"format": "zarr3"}"#).unwrap(),
    )
    .unwrap();
    let crc = json!({"name": "crc32c"});
    let refused = [
        (
            small(json!([le(), {"name": "gzip"}]), json!([le()]), None),
            "RFC 1952",
        ),
        (small(json!([le(), crc]), json!([le()]), None), "CRC32C"),
        (
            small(
                json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, le()]),
                json!([le()]),
                None,
            ),
            "transpose",
        ),
        (
            small(
                json!([le(), {"name": "zstd"}, {"name": "blosc", "configuration": {"typesize": 1}}]),
                json!([le()]),
                None,
            ),
            "one filter",
        ),
        (
            small(json!([le()]), json!([le()]), Some(crc.clone())),
            "the shard file must itself",
        ),
        (
            small(
                json!([le()]),
                json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
                None,
            ),
            "index codecs",
        ),
    ];
    for (i, (doc, says)) in refused.iter().enumerate() {
        let e = c
            .create_dataset_json(&format!("refused{i}"), doc)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{doc}: {e}");
        assert!(e.message().contains(says), "{doc}: {e}");
        assert!(
            !c.exists(&format!("refused{i}")).unwrap(),
            "nothing is made"
        );
    }
    // Not an object: invalid metadata.
    let mut doc = small(json!([le()]), json!([le()]), None);
    doc["hdf5_shards"] = json!("yes");
    let e = c.create_dataset_json("not_object", &doc).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{e}");

    // An existing array with the member and codecs it refuses (as another
    // writer may leave it): it opens and reads, every write is refused.
    // (Not two compressors: libn5 reads no chain of zstd and blosc.)
    for (i, (doc, says)) in refused
        .iter()
        .enumerate()
        .filter(|(_, (_, says))| *says != "one filter")
    {
        let mut plain = doc.clone();
        plain.as_object_mut().unwrap().remove("hdf5_shards");
        let path = format!("existing{i}");
        let d = c.create_dataset_json(&path, &plain).unwrap();
        d.write_region(&[0, 0], &[10, 10], &[5u8; 100]).unwrap();
        let key = loc.join(&path).join("zarr.json");
        std::fs::write(&key, serde_json::to_vec(doc).unwrap()).unwrap();
        let d = c.open_dataset(&path).unwrap();
        let mut back = vec![0u8; 100];
        d.read_region(&[0, 0], &[10, 10], &mut back).unwrap();
        assert_eq!(back, [5u8; 100]);
        let mut errors = vec![
            d.write_region(&[1, 1], &[2, 2], &[1u8; 4]).unwrap_err(),
            d.write_region(&[0, 0], &[10, 10], &[0u8; 100]).unwrap_err(),
            d.write_block(&[0, 0], &[2, 2], &[1u8; 4]).unwrap_err(),
        ];
        // Deleting an inner chunk rewrites its shard (an array whose
        // shards end in a CRC-32C is not one the library writes in parts).
        if !says.contains("must itself") {
            errors.push(d.delete_block(&[1, 1]).unwrap_err());
        }
        for e in errors {
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{path}: {e}");
            assert!(e.message().contains(says), "{path}: {e}");
        }
        d.read_region(&[0, 0], &[10, 10], &mut back).unwrap();
        assert_eq!(back, [5u8; 100], "{path}: a refused write changed nothing");
    }
}

fn c_error() -> String {
    // SAFETY: n5_last_error_message returns a NUL-terminated string owned by
    // the library, valid until the thread's next call.
    unsafe { CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_c_api_creates_arrays_with_hdf5_shards() {
    use n5::ffi::{
        container::*, dataset::*, region::n5_region_write, N5_DTYPE_UINT16,
        N5_ERR_INVALID_METADATA, N5_ERR_UNSUPPORTED, N5_MODE_CREATE, N5_OK,
    };
    let scratch = common::Scratch::new("hdf5-shards-c");
    let loc = scratch.join("c.zarr");
    let root = CString::new(loc.to_str().unwrap()).unwrap();
    let opts = CString::new(r#"{"format": "zarr3"}"#).unwrap();
    // Every pointer passed points at a live NUL-terminated string or at a
    // buffer of the length given with it; each handle is freed once.
    let c = n5_container_open(root.as_ptr(), N5_MODE_CREATE, opts.as_ptr());
    assert!(!c.is_null(), "{}", c_error());
    let doc = json!({
        "shape": [5, 7], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "fill_value": 9,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "big"}},
                       {"name": "zstd", "configuration": {"level": 3}}],
            "index_codecs": [le(), {"name": "crc32c"}], "index_location": "start"}}],
        "hdf5_shards": {"must_understand": false, "kept": [1, 2]}
    });
    let text = CString::new(doc.to_string()).unwrap();
    let path = CString::new("a").unwrap();
    let ds = n5_dataset_create_json(c, path.as_ptr(), text.as_ptr());
    assert!(!ds.is_null(), "n5_dataset_create_json: {}", c_error());
    let data: Vec<u16> = (0..35).collect();
    let status = n5_region_write(
        ds,
        2,
        [0u64, 0].as_ptr(),
        [7u64, 5].as_ptr(),
        N5_DTYPE_UINT16,
        data.as_ptr().cast(),
        70,
    );
    assert_eq!(status, N5_OK, "n5_region_write: {}", c_error());
    let mut len = 0usize;
    let mut buf = vec![0u8; 4096];
    let status = n5_dataset_metadata(ds, buf.as_mut_ptr().cast(), buf.len(), &mut len);
    assert_eq!(status, N5_OK, "{}", c_error());
    let meta: Value = serde_json::from_slice(&buf[..len]).unwrap();
    assert_eq!(
        meta["hdf5_shards"], doc["hdf5_shards"],
        "the member, as given"
    );
    n5_dataset_free(ds);
    // The four shards are HDF5 files with a user block of 512 bytes.
    for key in ["c/0/0", "c/0/1", "c/1/0", "c/1/1"] {
        let bytes = std::fs::read(loc.join("a").join(key)).unwrap();
        let info = inspect_shard(&bytes).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(info.user_block, 512, "{key}");
        assert_eq!(info.filters[0].0, n5::format::hdf5::ZSTD_FILTER, "{key}");
        assert_eq!(info.fill, Some(9u16.to_be_bytes().to_vec()), "{key}");
    }
    // Refused and invalid documents.
    for (member, codecs, status) in [
        (
            json!({"must_understand": false}),
            json!([{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [2, 2], "codecs": [le(), {"name": "gzip"}],
                "index_codecs": [le()]}}]),
            N5_ERR_UNSUPPORTED,
        ),
        (json!(false), doc["codecs"].clone(), N5_ERR_INVALID_METADATA),
    ] {
        let mut bad = doc.clone();
        bad["hdf5_shards"] = member;
        bad["codecs"] = codecs;
        let text = CString::new(bad.to_string()).unwrap();
        let path = CString::new("b").unwrap();
        let ds = n5_dataset_create_json(c, path.as_ptr(), text.as_ptr());
        assert!(ds.is_null());
        assert_eq!(
            n5::ffi::status::n5_last_error_code(),
            status,
            "{bad}: {}",
            c_error()
        );
    }
    n5_container_free(c);
}

#[test]
fn hdf5_shards_on_s3() {
    let Some(place) = common::places::place(common::places::Kind::S3, "hdf5-shards") else {
        return;
    };
    let options = place.options_with(r#"{"format": "zarr3"}"#);
    let c = Container::open_with(&place.location, Mode::Create, options.clone()).unwrap();
    let mut r = Rand(seed());
    let mut written = Vec::new();
    for i in [1usize, 6] {
        let mut case = case(&mut r, i);
        case.path = format!("s3_{i}");
        let mut w = Written::new(case);
        let d = c
            .create_dataset_json(&w.case.path, &w.case.document(false))
            .unwrap();
        w.first_writes(&mut r, &d);
        written.push(w);
    }
    drop(c);
    let c = Container::open_with(&place.location, Mode::ReadWrite, options).unwrap();
    // The objects as they are in the bucket, mirrored to a directory for
    // the peers.
    let scratch = common::Scratch::new("hdf5-shards-s3");
    let root = scratch.join("mirror.zarr");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("zarr.json"),
        br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#,
    )
    .unwrap();
    for w in &mut written {
        let d = c.open_dataset(&w.case.path).unwrap();
        w.later_writes(&mut r, &d);
        w.check_read(&d);
        let store = c.store();
        for key in store.list_keys(&w.case.path).unwrap() {
            let bytes = store
                .get(&format!("{}/{key}", w.case.path))
                .unwrap()
                .unwrap();
            if key != "zarr.json" {
                inspect_shard(&bytes).unwrap_or_else(|e| panic!("s3 {}/{key}: {e}", w.case.path));
            }
            let local = root.join(&w.case.path).join(&key);
            std::fs::create_dir_all(local.parent().unwrap()).unwrap();
            std::fs::write(local, bytes).unwrap();
        }
    }
    peers_check(&root, &written, scratch.path());
}
