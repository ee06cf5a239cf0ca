//! Zarr interoperability with the peers, both ways.
//!
//! Peers read the Zarr arrays libn5 writes: tensorstore (its zarr3 and zarr
//! drivers) reads every array and z5py every Zarr v2 one, through
//! `tests/peers/read_zarr_with_peers.py`, and zarr-python 3 reads every
//! array, v3 and v2, through `tests/peers/read_zarr_with_zarr3.py`; each must
//! give the array libn5 reads back, by checksum. The arrays cover the ten
//! numeric types, ranks 1 to 5, edge chunks, fill values, parts never
//! written, and in Zarr v3 both endians, transpose, gzip, zstd, blosc, crc32c
//! and sharding (index at the start or the end); shapes and parameters are
//! drawn at random per run (the seed is printed; `N5_ZARR_PEERS_SEED`
//! repeats one).
//!
//! libn5 reads the Zarr arrays zarr-python 3 writes: with the same seed,
//! `tests/peers/write_with_zarr3.py` writes Zarr v3 (sharded with `shards=`,
//! sharded through an explicit `ShardingCodec` with the index at the start
//! or the end, unsharded) and Zarr v2 arrays of every numeric type with
//! random codecs, fill values, `dimension_names`, group and array attributes,
//! and consolidated metadata, and a manifest; every array read whole through
//! libn5 must match the manifest's sha256 of its C-order bytes, its shape,
//! chunk and shard shapes (reversed, N5 order), type, attributes and
//! dimension names.
//!
//! The interpreters: `N5_PEER_PYTHON` (tensorstore, z5py; `.venv`, set by
//! `./tests/run.sh`) and `N5_ZARR3_PYTHON` (zarr-python 3; default
//! `.venv-zarr3/bin/python` in the repository, made by
//! `tests/setup.sh zarr3py`). Without one, the checks that need it say so and
//! pass, unless `N5_REQUIRE_PEERS=1` (set by `./tests/run.sh`, which installs
//! both), when that is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::corpus_check::json_eq;
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

/// Whether a missing peer interpreter is a failure (`N5_REQUIRE_PEERS=1`).
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
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "zarr peers: skipped {what}: {why}");
}

/// The interpreter of `.venv` (tensorstore, z5py): `N5_PEER_PYTHON`.
fn peer_python() -> Option<PathBuf> {
    let python = std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty());
    if python.is_none() {
        skip(
            "tensorstore and z5py",
            "N5_PEER_PYTHON is not set; run ./tests/run.sh",
        );
    }
    python.map(PathBuf::from)
}

/// The interpreter of `.venv-zarr3` (zarr-python 3): `N5_ZARR3_PYTHON`, else
/// `.venv-zarr3/bin/python` in the repository when it is there.
fn zarr3_python() -> Option<PathBuf> {
    let python = match std::env::var_os("N5_ZARR3_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-zarr3/bin/python"),
    };
    if python.is_file() || std::env::var_os("N5_ZARR3_PYTHON").is_some_and(|p| !p.is_empty()) {
        return Some(python);
    }
    skip(
        "zarr-python 3",
        &format!(
            "N5_ZARR3_PYTHON is not set and {} is missing; run tests/setup.sh zarr3py",
            python.display()
        ),
    );
    None
}

/// The seed of this run of `test`: `N5_ZARR_PEERS_SEED`, else drawn from
/// the clock.
fn seed(test: &str) -> u64 {
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
    eprintln!("zarr peers: {test}: seed {seed} (N5_ZARR_PEERS_SEED={seed} repeats this run)");
    seed
}

/// Runs `tests/peers/SCRIPT` with `python` and `args`; returns its stdout,
/// or panics with what it printed when it fails.
fn run_script(python: &Path, script: &str, args: &[&Path], context: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script);
    let out = Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{context}:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn peers_read_the_zarr_arrays_libn5_writes() {
    let python = peer_python();
    let zarr3 = zarr3_python();
    if python.is_none() && zarr3.is_none() {
        return;
    }
    let seed = seed("libn5 writes, the peers read");
    let mut r = Rand(seed);
    let dir = common::Scratch::new("zarr-peers");
    let root_attributes = json!({"title": "written by libn5", "seed": seed.to_string(), "n": [1, 2.5, null, {"a": "b"}]});
    let mut arrays = Vec::new();
    for format in [3, 2] {
        let root = dir.join(&format!("v{format}"));
        let options = Options::from_json(&format!(r#"{{"format": "zarr{format}"}}"#)).unwrap();
        let c = Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap();
        c.set_attributes("", root_attributes.as_object().unwrap())
            .unwrap();
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
                let attributes = json!({"rank": rank, "rep": rep, "dtype": dtype, "offset": offset, "unit": "µm"});
                c.set_attributes(&path, attributes.as_object().unwrap())
                    .unwrap();
                let shape: Vec<u64> = dims.iter().rev().copied().collect();
                let total: u64 = dims.iter().product();
                let mut whole = vec![0u8; total as usize * size];
                d.read_region(&vec![0; dims.len()], &dims, &mut whole)
                    .unwrap();
                if cfg!(target_endian = "big") {
                    n5::block::swap_to_from_be(&mut whole, *size);
                }
                arrays.push(
                    json!({"path": path, "format": format, "sha256": common::sha256(&whole),
                    "root": root, "shape": shape, "dtype": dtype, "attributes": attributes}),
                );
            }
        }
    }
    for format in [3, 2] {
        let root = dir.join(&format!("v{format}"));
        let list: Vec<&Value> = arrays.iter().filter(|a| a["format"] == format).collect();
        let spec = json!({"root": root, "attributes": root_attributes, "arrays": list});
        let spec_path = dir.join(&format!("spec{format}.json"));
        std::fs::write(&spec_path, spec.to_string()).unwrap();
        let peers = [
            (&python, "read_zarr_with_peers.py", "tensorstore, z5py"),
            (&zarr3, "read_zarr_with_zarr3.py", "zarr-python 3"),
        ];
        for (python, script, who) in peers {
            let Some(python) = python else { continue };
            let text = run_script(
                python,
                script,
                &[&spec_path],
                &format!("seed {seed}: {who} disagree with libn5 on Zarr v{format}"),
            );
            eprintln!("zarr v{format}: {}", text.lines().last().unwrap_or(""));
        }
    }
}

/// A manifest list of C-order shape as the N5-order dimensions libn5 gives.
fn reversed(v: &Value) -> Vec<u64> {
    let mut v = common::u64s(v);
    v.reverse();
    v
}

/// Checks one array of the manifest zarr-python 3 wrote; returns what
/// differs.
fn check_zarr3_array(c: &Container, a: &Value) -> Result<(), String> {
    let path = a["path"].as_str().unwrap();
    let d = c.open_dataset(path).map_err(|e| format!("open: {e}"))?;
    let attrs = d.attributes();
    let mut wrong = Vec::new();
    if attrs.dimensions != reversed(&a["shape"]) {
        wrong.push(format!("dimensions {:?}", attrs.dimensions));
    }
    let block: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
    if block != reversed(&a["chunks"]) {
        wrong.push(format!("block size {block:?}"));
    }
    let shards = if a["shards"].is_null() {
        &a["chunks"]
    } else {
        &a["shards"]
    };
    if d.shard_shape() != reversed(shards) {
        wrong.push(format!("shard shape {:?}", d.shard_shape()));
    }
    if attrs.data_type.to_string() != a["dtype"].as_str().unwrap() {
        wrong.push(format!("data type {}", attrs.data_type));
    }
    let size = attrs.data_type.size();
    let total: u64 = attrs.dimensions.iter().product();
    let mut whole = vec![0u8; total as usize * size];
    match d.read_region(&vec![0; attrs.ndim()], &attrs.dimensions, &mut whole) {
        Ok(()) => {
            if cfg!(target_endian = "big") {
                n5::block::swap_to_from_be(&mut whole, size);
            }
            let got = common::sha256(&whole);
            if got != a["sha256"].as_str().unwrap() {
                wrong.push(format!(
                    "sha256 {got}, zarr-python {}",
                    a["sha256"].as_str().unwrap()
                ));
            }
        }
        Err(e) => wrong.push(format!("read: {e}")),
    }
    match c.attributes(path) {
        Ok(got) if json_eq(&got, &a["attributes"]) => {}
        Ok(got) => wrong.push(format!("attributes {got}")),
        Err(e) => wrong.push(format!("attributes: {e}")),
    }
    let meta = d.metadata().map_err(|e| format!("metadata: {e}"))?;
    if a["format"] == 3 && meta["dimension_names"] != a["dimension_names"] {
        wrong.push(format!("dimension_names {}", meta["dimension_names"]));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

#[test]
fn libn5_reads_the_zarr_arrays_zarr_python_3_writes() {
    let Some(python) = zarr3_python() else {
        return;
    };
    let seed = seed("zarr-python 3 writes, libn5 reads");
    let dir = common::Scratch::new("zarr-python-3");
    let text = run_script(
        &python,
        "write_with_zarr3.py",
        &[dir.path(), Path::new(&seed.to_string())],
        &format!("seed {seed}: zarr-python 3 could not write the arrays"),
    );
    eprintln!("{}", text.trim_end());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    let (mut arrays, mut groups) = (0, 0);
    for name in ["v3", "v2"] {
        let root = dir.join(name);
        let c = Container::open(&root, Mode::Read).unwrap();
        let want = if name == "v3" { "zarr3" } else { "zarr2" };
        assert_eq!(c.format().name(), want, "format of {}", root.display());
        for g in manifest["groups"].as_array().unwrap() {
            if g["container"] != name {
                continue;
            }
            let path = g["path"].as_str().unwrap();
            groups += 1;
            match c.attributes(path) {
                Ok(got) if json_eq(&got, &g["attributes"]) => {}
                Ok(got) => failures.push(format!("{name} group '{path}': attributes {got}")),
                Err(e) => failures.push(format!("{name} group '{path}': {e}")),
            }
        }
        for a in manifest["arrays"].as_array().unwrap() {
            if a["container"] != name {
                continue;
            }
            arrays += 1;
            if let Err(e) = check_zarr3_array(&c, a) {
                failures.push(format!("{name} {}: {e}", a["path"].as_str().unwrap()));
            }
        }
        let listed = c.list("nested").unwrap();
        for child in ["deeper", "uint8", "float64"] {
            if !listed.iter().any(|l| l == child) {
                failures.push(format!("{name} list('nested') = {listed:?} lacks {child}"));
            }
        }
    }
    // Over plain HTTP, which cannot list, the consolidated metadata
    // zarr-python wrote lists the same tree, and the arrays read the same.
    if let Some(site) = n5_testkit::or_skip(n5_testkit::http(dir.path())) {
        for name in ["v3", "v2"] {
            let local = Container::open(dir.join(name), Mode::Read).unwrap();
            let remote =
                Container::open_with(site.url_for(name), Mode::Read, n5::Options::default())
                    .unwrap();
            assert_eq!(remote.format(), local.format(), "{name} over HTTP");
            let tree = local.deep_list("").unwrap();
            assert_eq!(remote.deep_list("").unwrap(), tree, "{name} over HTTP");
            assert_eq!(
                remote.list("nested").unwrap(),
                local.list("nested").unwrap(),
                "{name} over HTTP"
            );
            for a in manifest["arrays"].as_array().unwrap() {
                if a["container"] == name {
                    if let Err(e) = check_zarr3_array(&remote, a) {
                        failures.push(format!("{name} over HTTP {}: {e}", a["path"]));
                    }
                }
            }
            eprintln!("{name} over HTTP: {} nodes listed", tree.len());
        }
    }
    eprintln!(
        "zarr-python {}: libn5 read {arrays} arrays and {groups} groups",
        manifest["zarr"].as_str().unwrap_or("?")
    );
    assert!(arrays >= 60 && groups >= 6, "the manifest is short");
    assert!(
        failures.is_empty(),
        "seed {seed}: libn5 misreads what zarr-python {} wrote:\n{}",
        manifest["zarr"].as_str().unwrap_or("?"),
        failures.join("\n")
    );
}
