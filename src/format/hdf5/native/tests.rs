//! Tests of the libhdf5 layer with real files: files h5py writes
//! (tests/peers/hdf5_backend.py `make`: the n5-hdf5 layout and third-party
//! files) read through this layer equal to h5py; files this layer creates
//! read back by h5py and dumped by h5dump as the design says (the script's
//! `check`); attribute keys moving between native attributes and
//! `N5_JSON_ROOT`; chunks decoded in Rust equal to `H5Dread`; hostile files
//! give errors, not crashes.
//!
//! The peers' Python is `N5_PEER_PYTHON` (h5py, hdf5plugin); without it the
//! tests that need it say so and pass, unless `N5_REQUIRE_PEERS=1` (set by
//! tests/run.sh), which makes them fail. h5dump comes from PATH.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Map, Value};

use super::dataset::{Element, Layout, NewDataset};
use super::{File, ObjectKind};
use crate::codec::Compression;
use crate::dtype::DataType;
use crate::error::ErrorKind;
use crate::format::hdf5::filters::ByteOrder;

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "n5-hdf5-native-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The peers' Python, or `None` (the test is skipped) when it is not set
/// and not required.
fn python(test: &str) -> Option<PathBuf> {
    match std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            assert!(
                std::env::var("N5_REQUIRE_PEERS").as_deref() != Ok("1"),
                "N5_REQUIRE_PEERS=1 but N5_PEER_PYTHON is not set: {test} needs h5py"
            );
            eprintln!("{test}: skipped: N5_PEER_PYTHON is not set; run ./tests/run.sh");
            None
        }
    }
}

/// The script that writes and checks the files.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/hdf5_backend.py")
}

/// Runs the script's `make` into `dir`; the manifest.
fn make_files(python: &Path, dir: &Path) -> Value {
    let out = Command::new(python)
        .arg(script())
        .arg("make")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} make failed ({}; h5py and hdf5plugin come from tests/peers/requirements.txt):\n{}",
        script().display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the manifest is JSON")
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in 0..n (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// The box at `offset` of `shape` out of the C-order array `data` of shape
/// `dims` with `elem`-byte elements.
fn cut(data: &[u8], dims: &[u64], offset: &[u64], shape: &[u64], elem: usize) -> Vec<u8> {
    let n = dims.len();
    let count: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(count as usize * elem);
    if count == 0 {
        return out;
    }
    let row = shape[n - 1] as usize * elem;
    let rows: u64 = shape[..n - 1].iter().product();
    for r in 0..rows {
        let mut rest = r;
        let mut index = 0u64;
        let mut stride = 1u64;
        let mut starts = vec![0u64; n];
        for d in (0..n - 1).rev() {
            starts[d] = offset[d] + rest % shape[d];
            rest /= shape[d];
        }
        starts[n - 1] = offset[n - 1];
        for d in (0..n).rev() {
            index += starts[d] * stride;
            stride *= dims[d];
        }
        let s = index as usize * elem;
        out.extend_from_slice(&data[s..s + row]);
    }
    out
}

/// Native-order bytes as little-endian.
fn to_le(mut bytes: Vec<u8>, elem: usize) -> Vec<u8> {
    if cfg!(target_endian = "big") {
        for e in bytes.chunks_exact_mut(elem) {
            e.reverse();
        }
    }
    bytes
}

/// JSON equality for the manifest's expectations: numbers written with a
/// fraction or exponent must come back so (and equal as float64), integers
/// as integers (exactly); an expected string `"=TEXT"` is a number whose
/// text must be exactly TEXT (kept by arbitrary precision).
fn json_eq(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(g), Value::String(w)) if w.starts_with('=') => g.to_string() == w[1..],
        (Value::Number(g), Value::Number(w)) => {
            let (gt, wt) = (g.to_string(), w.to_string());
            let float = |t: &str| t.contains(['.', 'e', 'E']);
            if float(&gt) != float(&wt) {
                return false;
            }
            if float(&wt) {
                gt.parse::<f64>().ok().map(f64::to_bits) == wt.parse::<f64>().ok().map(f64::to_bits)
            } else {
                gt.parse::<i128>().ok() == wt.parse::<i128>().ok()
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(g), Value::Object(w)) => {
            g.len() == w.len()
                && w.iter()
                    .all(|(k, v)| g.get(k).is_some_and(|x| json_eq(x, v)))
        }
        _ => got == want,
    }
}

/// The N5 type and byte order of a numpy dtype string ("<u2", "|i1", ">f8").
fn numpy_type(s: &str) -> (DataType, Option<ByteOrder>) {
    let order = match &s[..1] {
        "<" => Some(ByteOrder::Little),
        ">" => Some(ByteOrder::Big),
        _ => None,
    };
    let t = match &s[1..] {
        "u1" => DataType::U8,
        "u2" => DataType::U16,
        "u4" => DataType::U32,
        "u8" => DataType::U64,
        "i1" => DataType::I8,
        "i2" => DataType::I16,
        "i4" => DataType::I32,
        "i8" => DataType::I64,
        "f4" => DataType::F32,
        "f8" => DataType::F64,
        other => panic!("numpy type {other}"),
    };
    (t, order)
}

/// One element of `v` (a manifest fill value) as native-order bytes.
fn element_bytes(v: &Value, t: DataType) -> Vec<u8> {
    match t {
        DataType::U8 => vec![v.as_u64().unwrap() as u8],
        DataType::I8 => (v.as_i64().unwrap() as i8).to_ne_bytes().to_vec(),
        DataType::U16 => (v.as_u64().unwrap() as u16).to_ne_bytes().to_vec(),
        DataType::I16 => (v.as_i64().unwrap() as i16).to_ne_bytes().to_vec(),
        DataType::U32 => (v.as_u64().unwrap() as u32).to_ne_bytes().to_vec(),
        DataType::I32 => (v.as_i64().unwrap() as i32).to_ne_bytes().to_vec(),
        DataType::U64 => v.as_u64().unwrap().to_ne_bytes().to_vec(),
        DataType::I64 => v.as_i64().unwrap().to_ne_bytes().to_vec(),
        DataType::F32 => (v.as_f64().unwrap() as f32).to_ne_bytes().to_vec(),
        DataType::F64 => v.as_f64().unwrap().to_ne_bytes().to_vec(),
        _ => unreachable!(),
    }
}

/// Checks one dataset the manifest describes; the mismatches.
fn check_dataset(file: &File, d: &Value, rng: &mut Rng) -> Vec<String> {
    let path = d["path"].as_str().unwrap();
    let mut bad = Vec::new();
    let mut fail = |m: String| bad.push(format!("{path}: {m}"));
    if file.kind(path).unwrap() != ObjectKind::Dataset {
        fail("not a dataset".into());
        return bad;
    }
    let ds = match file.open_dataset(path) {
        Ok(ds) => ds,
        Err(e) => {
            fail(format!("open: {e}"));
            return bad;
        }
    };
    let desc = ds.description().clone();
    let layout = match desc.layout {
        Layout::Chunked => "chunked",
        Layout::Contiguous => "contiguous",
        Layout::Compact => "compact",
        Layout::Virtual => "virtual",
    };
    if layout != d["layout"] || desc.layout.name() != layout {
        fail(format!("layout {layout}, h5py says {}", d["layout"]));
    }
    let filters: Vec<Value> = desc
        .filters
        .iter()
        .map(|f| json!({"id": f.id, "flags": f.flags, "cd_values": f.cd_values, "name": f.name}))
        .collect();
    if Value::Array(filters.clone()) != d["filters"] {
        fail(format!("filters {filters:?}, h5py says {}", d["filters"]));
    }
    if let Some(words) = d["unsupported"].as_str() {
        match ds.data_type() {
            Err(e) if e.kind() == ErrorKind::Unsupported && e.message().contains(words) => {}
            other => fail(format!(
                "data type {other:?}, expected unsupported '{words}'"
            )),
        }
        return bad;
    }
    let (want_type, want_order) = numpy_type(d["dtype"].as_str().unwrap());
    match &desc.element {
        Element::Numeric {
            data_type, order, ..
        } => {
            if *data_type != want_type || want_order.is_some_and(|o| o != *order) {
                fail(format!(
                    "type {data_type:?} {order:?}, h5py says {}",
                    d["dtype"]
                ));
            }
        }
        Element::Unsupported(w) => fail(format!("unsupported: {w}")),
    }
    let shape = u64s(&d["shape"]);
    if desc.shape != shape {
        fail(format!("shape {:?}, h5py says {shape:?}", desc.shape));
    }
    let max: Vec<Option<u64>> = d["maxshape"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::as_u64)
        .collect();
    if desc.max_shape != max {
        fail(format!("max shape {:?}, h5py says {max:?}", desc.max_shape));
    }
    let chunks = d["chunks"].as_array().map(|_| u64s(&d["chunks"]));
    if desc.chunk != chunks {
        fail(format!("chunks {:?}, h5py says {chunks:?}", desc.chunk));
    }
    let elem = want_type.size();
    let fill = element_bytes(&d["fillvalue"], want_type);
    if desc.fill_value != fill {
        fail(format!(
            "fill value {:?}, h5py says {}",
            desc.fill_value, d["fillvalue"]
        ));
    }
    // The reported compression: deflate alone (beside shuffle and
    // fletcher32) is gzip with useZlib; anything else raw.
    let ids: Vec<i64> = d["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_i64().unwrap())
        .filter(|&i| i != 2 && i != 3)
        .collect();
    let want_compression = if ids == [1] {
        let level = d["filters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == 1)
            .unwrap()["cd_values"][0]
            .as_i64()
            .unwrap();
        json!({"type": "gzip", "level": level, "useZlib": true})
    } else {
        json!({"type": "raw"})
    };
    if desc.compression().to_json() != want_compression {
        fail(format!(
            "compression {:?}, expected {want_compression}",
            desc.compression()
        ));
    }
    let all_known = d["filters"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| [1, 2, 3, 32015, 32001].contains(&f["id"].as_i64().unwrap()));
    let decoder = desc.chunk_decoder();
    if decoder.is_some() != (layout == "chunked" && all_known) {
        fail(format!("chunk decoder {}", decoder.is_some()));
    }

    // The whole dataset, and random boxes, equal to h5py. libhdf5 reads
    // datasets with plugin filters (zstd, blosc) only where it finds the
    // plugins; without them the read says which filter is missing.
    let plugin = d["filters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"].as_i64().unwrap() >= 256);
    let expected = std::fs::read(d["bin"].as_str().unwrap()).unwrap();
    let total: u64 = shape.iter().product();
    let mut whole = vec![0u8; total as usize * elem];
    match ds.read(&vec![0; shape.len()], &shape, &mut whole) {
        Ok(()) if to_le(whole.clone(), elem) == expected => {}
        Ok(()) => fail("the whole dataset differs from h5py's".into()),
        Err(e)
            if plugin && e.kind() == ErrorKind::Unsupported && e.message().contains("plugin") => {}
        Err(e) => fail(format!("read: {e}")),
    }
    for _ in 0..12 {
        let offset: Vec<u64> = shape.iter().map(|&s| rng.below(s.max(1))).collect();
        let bshape: Vec<u64> = shape
            .iter()
            .zip(&offset)
            .map(|(&s, &o)| if s == 0 { 0 } else { 1 + rng.below(s - o) })
            .collect();
        let n: u64 = bshape.iter().product();
        let mut buf = vec![0u8; n as usize * elem];
        match ds.read(&offset, &bshape, &mut buf) {
            Ok(()) if to_le(buf, elem) == cut(&expected, &shape, &offset, &bshape, elem) => {}
            Ok(()) => fail(format!("box at {offset:?} of {bshape:?} differs")),
            Err(e) if plugin && e.kind() == ErrorKind::Unsupported => {}
            Err(e) => fail(format!("box at {offset:?} of {bshape:?}: {e}")),
        }
    }

    // Storage and chunks: what is allocated, where, and the chunks decoded
    // in Rust equal to H5Dread.
    let listed: Vec<&Value> = d["chunk_list"].as_array().unwrap().iter().collect();
    let Some(chunk) = desc.chunk.clone() else {
        let allocated = ds.storage_allocated().unwrap();
        let unwritten = path.contains("unwritten");
        if allocated == unwritten {
            fail(format!("storage allocated: {allocated}"));
        }
        return bad;
    };
    let mut want_positions: Vec<Vec<u64>> = listed
        .iter()
        .map(|c| {
            u64s(&c["offset"])
                .iter()
                .zip(&chunk)
                .map(|(o, c)| o / c)
                .collect()
        })
        .collect();
    want_positions.sort();
    match ds.allocated_chunks() {
        Ok(got) if got == want_positions => {}
        Ok(got) => fail(format!(
            "allocated chunks {got:?}, h5py says {want_positions:?}"
        )),
        Err(e) => fail(format!("allocated chunks: {e}")),
    }
    for c in &listed {
        let pos: Vec<u64> = u64s(&c["offset"])
            .iter()
            .zip(&chunk)
            .map(|(o, c)| o / c)
            .collect();
        let location = match ds.chunk_location(&pos) {
            Ok(Some(l)) => l,
            other => {
                fail(format!("chunk {pos:?}: location {other:?}"));
                continue;
            }
        };
        let want = (
            c["addr"].as_u64().unwrap(),
            c["size"].as_u64().unwrap(),
            c["filter_mask"].as_u64().unwrap() as u32,
        );
        if (location.offset, location.size, location.filter_mask) != want {
            fail(format!(
                "chunk {pos:?}: at {location:?}, h5py says (offset, size, mask) {want:?}"
            ));
        }
        if !ds.chunk_allocated(&pos).unwrap() {
            fail(format!("chunk {pos:?} not allocated"));
        }
        let Some(decoder) = &decoder else { continue };
        let stored = ds.read_stored_chunk(&pos, &location).unwrap();
        let mut decoded = vec![0u8; decoder.chunk_bytes()];
        if let Err(e) = decoder.decode(&stored, location.filter_mask, &pos, &mut decoded) {
            fail(format!("chunk {pos:?}: decode: {e}"));
            continue;
        }
        // The part inside the dataset, against h5py's data and H5Dread.
        let offset: Vec<u64> = pos.iter().zip(&chunk).map(|(p, c)| p * c).collect();
        let inside: Vec<u64> = offset
            .iter()
            .zip(&chunk)
            .zip(&shape)
            .map(|((o, c), s)| (*c).min(s - o))
            .collect();
        let zero = vec![0u64; chunk.len()];
        let decoded_inside = to_le(cut(&decoded, &chunk, &zero, &inside, elem), elem);
        if decoded_inside != cut(&expected, &shape, &offset, &inside, elem) {
            fail(format!(
                "chunk {pos:?}: decoded in Rust, differs from h5py's data"
            ));
        }
        let mut via_hdf5 = vec![0u8; decoded_inside.len()];
        match ds.read(&offset, &inside, &mut via_hdf5) {
            Ok(()) if to_le(via_hdf5, elem) == decoded_inside => {}
            Ok(()) => fail(format!(
                "chunk {pos:?}: decoded in Rust, differs from H5Dread"
            )),
            Err(e) if plugin && e.kind() == ErrorKind::Unsupported => {}
            Err(e) => fail(format!("chunk {pos:?}: H5Dread: {e}")),
        }
    }
    // Chunks never written: no location, read as the fill value.
    let grid = desc.grid().unwrap();
    let cells: u64 = grid.iter().product();
    for i in 0..cells.min(400) {
        let mut rest = i;
        let mut pos = vec![0u64; grid.len()];
        for k in (0..grid.len()).rev() {
            pos[k] = rest % grid[k];
            rest /= grid[k];
        }
        if want_positions.contains(&pos) {
            continue;
        }
        if !matches!(ds.chunk_location(&pos), Ok(None)) || ds.chunk_allocated(&pos).unwrap() {
            fail(format!("chunk {pos:?} should not be allocated"));
        }
        let offset: Vec<u64> = pos.iter().zip(&chunk).map(|(p, c)| p * c).collect();
        let inside: Vec<u64> = offset
            .iter()
            .zip(&chunk)
            .zip(&shape)
            .map(|((o, c), s)| (*c).min(s - o))
            .collect();
        let n: u64 = inside.iter().product();
        let mut buf = vec![0u8; n as usize * elem];
        if plugin {
            continue;
        }
        ds.read(&offset, &inside, &mut buf).unwrap();
        if buf != fill.repeat(n as usize) {
            fail(format!(
                "unwritten chunk {pos:?} does not read as the fill value"
            ));
        }
    }
    bad
}

/// Checks one file of the manifest, opened through `file`.
fn check_file(file: &File, f: &Value, rng: &mut Rng) -> Vec<String> {
    let name = f["path"].as_str().unwrap();
    let mut bad = Vec::new();
    let version = file.version().unwrap();
    if json!(version) != f["version"] {
        bad.push(format!(
            "{name}: version {version:?}, h5py says {}",
            f["version"]
        ));
    }
    if file.userblock() != f["userblock"].as_u64().unwrap() {
        bad.push(format!("{name}: user block {}", file.userblock()));
    }
    for g in f["groups"].as_array().unwrap() {
        let path = g["path"].as_str().unwrap();
        if let Some(list) = g.get("list") {
            match file.list(path) {
                Ok(got) if json!(got) == *list => {}
                other => bad.push(format!("{name}{path}: list {other:?}, expected {list}")),
            }
        }
        match file.attributes(path) {
            Ok(got) => {
                let got = Value::Object(got);
                if !json_eq(&got, &g["attributes"]) {
                    bad.push(format!(
                        "{name}{path}: attributes {got}, expected {}",
                        g["attributes"]
                    ));
                }
            }
            Err(e) => bad.push(format!("{name}{path}: attributes: {e}")),
        }
        for (key, want) in g["attributes"].as_object().unwrap() {
            match file.attribute(path, key) {
                Ok(v) if json_eq(&v, want) => {}
                other => bad.push(format!("{name}{path}: attribute {key}: {other:?}")),
            }
        }
        for key in g["left_out"].as_array().unwrap() {
            let key = key.as_str().unwrap();
            match file.attribute(path, key) {
                Err(e) if e.kind() == ErrorKind::Unsupported => {}
                other => bad.push(format!("{name}{path}: left-out attribute {key}: {other:?}")),
            }
        }
    }
    for d in f["datasets"].as_array().unwrap() {
        for m in check_dataset(file, d, rng) {
            bad.push(format!("{name}{m}"));
        }
        let path = d["path"].as_str().unwrap();
        match file.attributes(path) {
            Ok(got) if json_eq(&Value::Object(got.clone()), &d["attributes"]) => {}
            other => bad.push(format!("{name}{path}: attributes {other:?}")),
        }
    }
    bad
}

#[test]
fn files_h5py_wrote_read_as_h5py_reads_them() {
    let Some(python) = python("files_h5py_wrote_read_as_h5py_reads_them") else {
        return;
    };
    let dir = Scratch::new("h5py-files");
    let manifest = make_files(&python, &dir.0);
    eprintln!(
        "h5py {} (HDF5 {}), hdf5plugin {}",
        manifest["h5py"], manifest["hdf5"], manifest["hdf5plugin"]
    );
    let mut rng = Rng(0x5eed_4df5);
    let mut bad = Vec::new();
    let mut datasets = 0;
    for f in manifest["files"].as_array().unwrap() {
        let path = Path::new(f["path"].as_str().unwrap());
        datasets += f["datasets"].as_array().unwrap().len();
        let before = std::fs::read(path).unwrap();
        match File::open(path, false) {
            Ok(file) => bad.extend(check_file(&file, f, &mut rng)),
            Err(e) => bad.push(format!("{}: open: {e}", path.display())),
        }
        // Opened for writing as it is (never truncated), the same.
        match File::create(path) {
            Ok(file) => {
                assert!(file.writable());
                bad.extend(check_file(&file, f, &mut rng));
            }
            Err(e) => bad.push(format!("{}: open for writing: {e}", path.display())),
        }
        let after = std::fs::read(path).unwrap();
        assert!(after.len() >= before.len(), "{} shrank", path.display());
    }
    // Cyclic object headers, dense links and attributes whose name index
    // counts more than it holds, and every file cut short, read in a child
    // process: errors (or, for a cycle libhdf5 notices, a good read), never
    // a crash or a hang.
    let mut damaged: Vec<(String, PathBuf)> = manifest["damaged"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["what"].as_str().unwrap().to_string(),
                PathBuf::from(d["path"].as_str().unwrap()),
            )
        })
        .collect();
    let made_damaged = damaged.len();
    let cut_dir = dir.join("cut");
    std::fs::create_dir_all(&cut_dir).unwrap();
    for f in manifest["files"].as_array().unwrap() {
        let path = Path::new(f["path"].as_str().unwrap());
        let bytes = std::fs::read(path).unwrap();
        for frac in [1, 3, 7, 15] {
            let at = bytes.len() * frac / 16;
            let p = cut_dir.join(format!(
                "{}-{at}.h5",
                path.file_stem().unwrap().to_string_lossy()
            ));
            std::fs::write(&p, &bytes[..at]).unwrap();
            damaged.push((format!("{} cut at {at}", path.display()), p));
        }
    }
    let errors = read_in_a_child(&damaged);
    let self_loop = dir.join("cyclic_self.h5");
    assert!(
        errors.contains(&self_loop),
        "{}: no error",
        self_loop.display()
    );
    let cut_errors = errors.iter().filter(|p| p.starts_with(&cut_dir)).count();
    assert_eq!(
        cut_errors,
        damaged.len() - made_damaged,
        "every file cut short is an error"
    );

    // What kinds links lead to.
    let file = File::open(&dir.join("n5_layout.h5"), false).unwrap();
    for (path, kind) in [
        ("", ObjectKind::Group),
        ("/links/soft_to_uint8", ObjectKind::Dataset),
        ("links/soft_to_group", ObjectKind::Group),
        ("links/hard_to_raw/int8", ObjectKind::Dataset),
        ("links/dangling", ObjectKind::Other),
        ("links/external", ObjectKind::Other),
        ("links/named_type", ObjectKind::Other),
        ("links/nothing", ObjectKind::None),
        ("volumes/raw/uint8/below_a_dataset", ObjectKind::None),
        ("./volumes/", ObjectKind::Group),
    ] {
        assert_eq!(file.kind(path).unwrap(), kind, "{path}");
    }
    let e = file.list("links/nothing").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e = file.open_dataset("volumes").err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e = file.kind("a/../b").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = file.attribute("attrs", "no_such_key").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e = file.create_groups("x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
    assert!(
        bad.is_empty(),
        "{} mismatches with h5py:\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!(
        "{datasets} datasets in {} files read as h5py reads them",
        manifest["files"].as_array().unwrap().len()
    );
}

/// The bytes of `n` elements of `t` (native order), varied.
fn values(t: DataType, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(n * t.size());
    for i in 0..n {
        let r = rng.next();
        match t {
            DataType::F32 => {
                out.extend_from_slice(&((r % 10_000) as f32 / 7.0 - 700.0).to_ne_bytes())
            }
            DataType::F64 => {
                out.extend_from_slice(&((r % 1_000_000) as f64 / 3.0 - 1e5).to_ne_bytes())
            }
            _ => {
                // Low entropy in part of the array, so that deflate has
                // something to do.
                let v = if i % 3 == 0 { 0 } else { r };
                out.extend_from_slice(&v.to_ne_bytes()[..t.size()]);
            }
        }
    }
    out
}

#[test]
fn files_created_here_read_back_in_h5py_and_h5dump() {
    let Some(python) = python("files_created_here_read_back_in_h5py_and_h5dump") else {
        return;
    };
    let h5dump = which("h5dump");
    if h5dump.is_none() {
        assert!(
            std::env::var("N5_REQUIRE_PEERS").as_deref() != Ok("1"),
            "N5_REQUIRE_PEERS=1 but h5dump is not on PATH (Debian: hdf5-tools)"
        );
        eprintln!("h5dump is not on PATH: the files are checked with h5py only");
    }
    let dir = Scratch::new("created");
    let path = dir.join("new/parents/created.h5");
    let mut spec_datasets = Map::new();
    let mut spec_groups = Map::new();
    {
        let file = File::create(&path).unwrap();
        assert!(path.is_file());
        assert_eq!(file.version().unwrap(), None);
        file.create_groups("a/b/c").unwrap();
        file.create_groups("/a/b").unwrap();
        assert_eq!(file.kind("a/b/c").unwrap(), ObjectKind::Group);
        assert_eq!(file.list("").unwrap(), vec!["a"]);

        let comps = [
            ("raw", Compression::Raw, None::<u32>),
            (
                "gzip3",
                Compression::Gzip {
                    level: 3,
                    use_zlib: false,
                },
                Some(3),
            ),
            (
                "gzipdefault",
                Compression::Gzip {
                    level: -1,
                    use_zlib: true,
                },
                Some(6),
            ),
        ];
        for (i, t) in DataType::NUMERIC.into_iter().enumerate() {
            for (j, (cname, compression, level)) in comps.iter().enumerate() {
                let ds_path = format!("data/{}/{cname}", t.name());
                // Shapes not a multiple of the chunk; one chunk larger than
                // its dimension (clamped).
                let shape = [13u64, 17, 5 + i as u64];
                let ds = file
                    .create_dataset(
                        &ds_path,
                        &NewDataset {
                            shape: &shape,
                            chunk: &[4, 8, 64],
                            data_type: t.clone(),
                            compression,
                        },
                    )
                    .unwrap_or_else(|e| panic!("{ds_path}: {e}"));
                let chunk = [4u64, 8, shape[2]];
                let d = ds.description();
                assert_eq!(d.chunk.as_deref(), Some(&chunk[..]), "{ds_path}");
                assert_eq!(d.shape, shape);
                assert_eq!(d.max_shape, shape.map(Some));
                assert_eq!(ds.data_type().unwrap(), t.clone());
                let elem = t.size();
                let n = (shape.iter().product::<u64>()) as usize;
                let mut whole = vec![0u8; n * elem];
                // Everything but the chunks of the last row of the first
                // dimension, written in two boxes; one chunk, for gzip
                // datasets, written whole with H5Dwrite_chunk.
                let data = values(t.clone(), n, (i * 10 + j) as u64);
                let first = [0u64, 0, 0];
                let upper = [8u64, 17, shape[2]];
                let part = cut(&data, &shape, &first, &upper, elem);
                ds.write(&first, &upper, &part).unwrap();
                let lo = [8u64, 0, 0];
                let mid = [4u64, 8, shape[2]];
                let box2 = cut(&data, &shape, &lo, &mid, elem);
                ds.write(&lo, &mid, &box2).unwrap();
                for (o, s) in [(first, upper), (lo, mid)] {
                    let b = cut(&data, &shape, &o, &s, elem);
                    paste(&mut whole, &shape, &o, &s, elem, &b);
                }
                assert_eq!(ds.path(), format!("/{ds_path}"));
                if let Some(encoder) = d.chunk_encoder().filter(|_| level.is_some()) {
                    assert_eq!(encoder.chunk_bytes(), 4 * 8 * shape[2] as usize * elem);
                    let pos = [2u64, 1, 0];
                    let o = [8u64, 8, 0];
                    let s = [4u64, 8, shape[2]];
                    let b = cut(&data, &shape, &o, &s, elem);
                    let stored = encoder.encode(&b, &pos).unwrap();
                    ds.write_encoded_chunks(&[(pos.to_vec(), stored)]).unwrap();
                    paste(&mut whole, &shape, &o, &s, elem, &b);
                }
                let mut back = vec![0u8; whole.len()];
                ds.read(&[0, 0, 0], &shape, &mut back).unwrap();
                assert!(back == whole, "{ds_path}: read back");
                let bin = dir.join(&format!("{}-{cname}.bin", t.name()));
                std::fs::write(&bin, to_le(whole, elem)).unwrap();
                let absent: Vec<Vec<u64>> = if level.is_some() && d.chunk_encoder().is_some() {
                    vec![vec![3, 0, 0]]
                } else {
                    vec![vec![3, 0, 0], vec![3, 1, 0]]
                };
                for a in &absent {
                    assert!(!ds.chunk_allocated(a).unwrap(), "{ds_path} {a:?}");
                }
                let dtype = format!(
                    "{}{}{}",
                    if elem == 1 { "|" } else { "<" },
                    match t {
                        DataType::F32 | DataType::F64 => "f",
                        DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64 => "i",
                        _ => "u",
                    },
                    elem
                );
                spec_datasets.insert(
                    format!("/{ds_path}"),
                    json!({
                        "dtype": dtype, "shape": shape, "maxshape": shape, "chunks": chunk,
                        "shuffle": level.is_some() && elem > 1, "deflate": level,
                        "bin": bin, "absent_chunks": absent,
                    }),
                );
            }
        }
        // Refused: other codecs, non-numeric types, existing things.
        for (c, name) in [
            (Compression::Zstd { level: 3 }, "zstd"),
            (Compression::Bzip2 { block_size: 9 }, "bzip2"),
            (
                Compression::Blosc {
                    cname: "lz4".into(),
                    clevel: 5,
                    shuffle: 1,
                    blocksize: 0,
                },
                "blosc",
            ),
            (Compression::Xz { preset: 6 }, "xz"),
            (Compression::Lz4 { block_size: 65536 }, "lz4"),
        ] {
            let e = file
                .create_dataset(
                    "refused",
                    &NewDataset {
                        shape: &[4],
                        chunk: &[4],
                        data_type: DataType::U8,
                        compression: &c,
                    },
                )
                .err()
                .unwrap();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(e.message().contains(name), "{e}");
        }
        let raw = Compression::Raw;
        let new = |shape: &'static [u64], t| NewDataset {
            shape,
            chunk: shape,
            data_type: t,
            compression: &raw,
        };
        let e = file
            .create_dataset("s", &new(&[4], DataType::String))
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        for existing in ["data/uint8/raw", "a", "a/b", ""] {
            let e = file
                .create_dataset(existing, &new(&[4], DataType::U8))
                .err()
                .unwrap();
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::AlreadyExists | ErrorKind::InvalidArgument
                ),
                "{existing}: {e}"
            );
        }
        let e = file
            .create_dataset("data/uint8/raw/inside", &new(&[4], DataType::U8))
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
        let e = file.create_groups("data/uint8/raw/g").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");

        // Attributes: the design's example, keys changing place, one that
        // leaves N5_JSON_ROOT empty (deleted), and on a dataset.
        let example: Map<String, Value> = serde_json::from_str(
            r#"{"resolution":[4.0,4.0,40.0],"unit":"nm","downsampled":true,"count":3,
                "scales":{"s0":1},"offset":[0,1.5]}"#,
        )
        .unwrap();
        file.set_attributes("a", &example).unwrap();
        let read = file.attributes("a").unwrap();
        assert!(json_eq(
            &Value::Object(read),
            &Value::Object(example.clone())
        ));
        spec_groups.insert(
            "/a".into(),
            json!({
                "attributes": {
                    "resolution": {"kind": "float64", "shape": [3], "value": [4.0, 4.0, 40.0]},
                    "unit": {"kind": "string", "shape": [], "value": "nm"},
                    "downsampled": {"kind": "bool", "shape": [], "value": true},
                    "count": {"kind": "int64", "shape": [], "value": 3},
                },
                "json_root": {"scales": {"s0": 1}, "offset": [0, 1.5]},
            }),
        );
        let first: Map<String, Value> = serde_json::from_str(
            r#"{"k":{"x":1},"m":5,"big":123456789012345678901234567890,
                "u":18446744073709551615,"flags":[true,false],"names":["x","y"],
                "mixed":[1,2.5],"nothing":null,"empty":[],"nested":[[1,2],[3]],
                "N5_JSON_ROOT":"a key with the root's name","":"empty key"}"#,
        )
        .unwrap();
        file.set_attributes("a/b", &first).unwrap();
        let second: Map<String, Value> =
            serde_json::from_str(
                r#"{"k":7,"m":{"y":[1,2],"p":0.1000000000000000000001},"lossy":0.1000000000000000000001}"#,
            )
            .unwrap();
        file.set_attributes("a/b", &second).unwrap();
        let mut expected = first.clone();
        for (k, v) in &second {
            expected.insert(k.clone(), v.clone());
        }
        let got = file.attributes("a/b").unwrap();
        assert!(
            json_eq(
                &Value::Object(got.clone()),
                &Value::Object(expected.clone())
            ),
            "{}",
            Value::Object(got)
        );
        // Digits beyond float64 are kept inside N5_JSON_ROOT, lost in a
        // native float64.
        assert_eq!(
            file.attribute("a/b", "m").unwrap().to_string(),
            r#"{"y":[1,2],"p":0.1000000000000000000001}"#
        );
        assert_eq!(file.attribute("a/b", "lossy").unwrap().to_string(), "0.1");
        assert_eq!(
            file.attribute("a/b", "big").unwrap().to_string(),
            "123456789012345678901234567890"
        );
        file.remove_attribute("a/b", "flags").unwrap();
        file.remove_attribute("a/b", "mixed").unwrap();
        let e = file.remove_attribute("a/b", "flags").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        spec_groups.insert(
            "/a/b".into(),
            json!({
                "attributes": {
                    "k": {"kind": "int64", "shape": [], "value": 7},
                    "u": {"kind": "uint64", "shape": [], "value": u64::MAX},
                    "names": {"kind": "string", "shape": [2], "value": ["x", "y"]},
                    "lossy": {"kind": "float64", "shape": [], "value": 0.1},
                },
                "json_root": serde_json::from_str::<Value>(
                    r#"{"m":{"y":[1,2],"p":0.1000000000000000000001},
                        "big":123456789012345678901234567890,"nothing":null,
                        "empty":[],"nested":[[1,2],[3]],
                        "N5_JSON_ROOT":"a key with the root's name","":"empty key"}"#
                ).unwrap(),
                "absent": ["flags", "mixed", "m"],
            }),
        );
        file.set_attributes("a/b/c", &serde_json::from_str(r#"{"o":{"z":1}}"#).unwrap())
            .unwrap();
        file.set_attributes("a/b/c", &serde_json::from_str(r#"{"o":1.5}"#).unwrap())
            .unwrap();
        spec_groups.insert(
            "/a/b/c".into(),
            json!({
                "attributes": {"o": {"kind": "float64", "shape": [], "value": 1.5}},
                "json_root": null,
            }),
        );
        file.set_attributes(
            "data/int16/raw",
            &serde_json::from_str(r#"{"axes":["z","y","x"],"offset":{"x":2}}"#).unwrap(),
        )
        .unwrap();
        spec_groups.insert(
            "/data/int16/raw".into(),
            json!({
                "attributes": {"axes": {"kind": "string", "shape": [3], "value": ["z", "y", "x"]}},
                "json_root": {"offset": {"x": 2}},
            }),
        );
        // An empty group becomes a dataset and keeps its attributes (native
        // ones and N5_JSON_ROOT).
        file.create_groups("conv").unwrap();
        file.set_attributes(
            "conv",
            &serde_json::from_str(r#"{"keep":"yes","nested":{"a":[1]},"flag":false}"#).unwrap(),
        )
        .unwrap();
        let conv = file
            .create_dataset(
                "conv",
                &NewDataset {
                    shape: &[3, 4],
                    chunk: &[2, 2],
                    data_type: DataType::F32,
                    compression: &Compression::Raw,
                },
            )
            .unwrap();
        assert_eq!(file.kind("conv").unwrap(), ObjectKind::Dataset);
        assert_eq!(
            Value::Object(file.attributes("conv").unwrap()),
            json!({"nested": {"a": [1]}, "flag": false, "keep": "yes"})
        );
        assert_eq!(file.list("").unwrap(), vec!["a", "conv", "data"]);
        spec_groups.insert(
            "/conv".into(),
            json!({
                "attributes": {
                    "keep": {"kind": "string", "shape": [], "value": "yes"},
                    "flag": {"kind": "bool", "shape": [], "value": false},
                },
                "json_root": {"nested": {"a": [1]}},
            }),
        );
        let bin = dir.join("conv.bin");
        std::fs::write(&bin, vec![0u8; 3 * 4 * 4]).unwrap();
        spec_datasets.insert(
            "/conv".into(),
            json!({
                "dtype": "<f4", "shape": [3, 4], "maxshape": [3, 4], "chunks": [2, 2],
                "shuffle": false, "deflate": null, "bin": bin, "absent_chunks": [[0, 0], [1, 1]],
            }),
        );
        drop(conv);
        // Resizing within the maximum dimensions, and beyond.
        let mut ds = file.open_dataset("data/uint16/raw").unwrap();
        let e = ds.set_extent(&[14, 17, 6]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.message().contains("[13, 17, 6]"), "{e}");
        // An unlinked group is gone.
        file.create_groups("gone/deeper").unwrap();
        file.unlink("gone").unwrap();
        assert_eq!(file.kind("gone").unwrap(), ObjectKind::None);
        assert_eq!(file.unlink("gone").unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(
            file.unlink("/").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    let spec = json!({
        "file": path,
        "h5dump": h5dump,
        "groups": spec_groups,
        "datasets": spec_datasets,
    });
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    let out = Command::new(&python)
        .arg(script())
        .arg("check")
        .arg(&spec_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py and h5dump disagree with what was written ({}):\n{}{}",
        spec_path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Reopened read-only, the same through this layer.
    let file = File::open(&path, false).unwrap();
    let ds = file.open_dataset("data/float64/gzip3").unwrap();
    assert_eq!(
        ds.description().compression().to_json(),
        json!({"type": "gzip", "level": 3, "useZlib": true})
    );
    assert!(ds.description().chunk_decoder().is_some());
    let e = ds.write(&[0, 0, 0], &[1, 1, 1], &[0u8; 8]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
}

/// Pastes `b`, the box at `offset` of `shape`, into the C-order array
/// `whole` of shape `dims`.
fn paste(whole: &mut [u8], dims: &[u64], offset: &[u64], shape: &[u64], elem: usize, b: &[u8]) {
    let n = dims.len();
    let row = shape[n - 1] as usize * elem;
    let rows: u64 = shape[..n - 1].iter().product();
    for r in 0..rows {
        let mut rest = r;
        let mut starts = vec![0u64; n];
        for d in (0..n - 1).rev() {
            starts[d] = offset[d] + rest % shape[d];
            rest /= shape[d];
        }
        starts[n - 1] = offset[n - 1];
        let mut index = 0u64;
        let mut stride = 1u64;
        for d in (0..n).rev() {
            index += starts[d] * stride;
            stride *= dims[d];
        }
        let s = index as usize * elem;
        whole[s..s + row].copy_from_slice(&b[r as usize * row..(r as usize + 1) * row]);
    }
}

/// The program `name` on PATH.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

#[test]
fn opening_creating_and_refusing_files() {
    let dir = Scratch::new("open");
    // Missing, a directory, not HDF5.
    let e = File::open(&dir.join("missing.h5"), false).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let e = File::open(&dir.0, false).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let text = dir.join("text.h5");
    std::fs::write(&text, b"just some text, more than eight bytes").unwrap();
    for e in [
        File::open(&text, false).err().unwrap(),
        File::open(&text, true).err().unwrap(),
        File::create(&text).err().unwrap(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{e}");
        assert!(e.message().contains("not an HDF5 file"), "{e}");
    }
    assert_eq!(
        std::fs::read(&text).unwrap(),
        b"just some text, more than eight bytes"
    );
    // Created with its parents; opened again as it is.
    let path = dir.join("x/y/z.h5");
    {
        let f = File::create(&path).unwrap();
        f.create_groups("g").unwrap();
        f.set_attributes("g", &serde_json::from_str(r#"{"a":1}"#).unwrap())
            .unwrap();
    }
    {
        let f = File::create(&path).unwrap();
        assert_eq!(f.list("").unwrap(), vec!["g"]);
        assert_eq!(f.attribute("g", "a").unwrap(), json!(1));
    }
    let f = File::open(&path, false).unwrap();
    assert!(!f.writable());
    // libhdf5 opens no file for writing that this process has open
    // read-only; reading one open for writing is allowed.
    let e = File::create(&path).err().unwrap();
    assert!(e.message().contains("z.h5"), "{e}");
    {
        let other = dir.join("other.h5");
        let w = File::create(&other).unwrap();
        let r = File::open(&other, false).unwrap();
        w.create_groups("new").unwrap();
        assert_eq!(r.kind("new").unwrap(), ObjectKind::Group);
    }
    assert_eq!(f.userblock(), 0);
    for e in [
        f.set_attributes("g", &Map::new()).unwrap_err(),
        f.remove_attribute("g", "a").unwrap_err(),
        f.unlink("g").unwrap_err(),
        f.create_groups("h").unwrap_err(),
        f.create_dataset(
            "d",
            &NewDataset {
                shape: &[1],
                chunk: &[1],
                data_type: DataType::U8,
                compression: &Compression::Raw,
            },
        )
        .err()
        .unwrap(),
    ] {
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
        assert!(e.message().contains("z.h5"), "{e}");
    }
    assert_eq!(f.path(), path.as_path());
    // A process started while the file is open does not inherit libhdf5's
    // descriptor (nor, with it, its lock on the file).
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let inherited: Vec<PathBuf> = std::fs::read_dir(format!("/proc/{}/fd", child.id()))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.ends_with("z.h5"))
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(inherited.is_empty(), "the child holds {inherited:?}");
    // The superblock of a file this layer created: version 2 (libver 1.8
    // low bound), not 0 (earliest) and not 3 (1.10 low bound).
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89HDF\r\n\x1a\n");
    assert_eq!(bytes[8], 2, "superblock version");
}

#[test]
fn attribute_edge_cases() {
    let dir = Scratch::new("attrs");
    let f = File::create(&dir.join("a.h5")).unwrap();
    f.create_groups("g").unwrap();
    // A key set natively, then as a member, then natively again: in one
    // place each time.
    for (value, native) in [
        (json!(1), true),
        (json!({"x": 1}), false),
        (json!("s"), true),
        (json!([1, "mixed"]), false),
        (json!([1.5, 2.5]), true),
    ] {
        let mut m = Map::new();
        m.insert("key".into(), value.clone());
        f.set_attributes("g", &m).unwrap();
        assert_eq!(f.attribute("g", "key").unwrap(), value);
        assert_eq!(
            Value::Object(f.attributes("g").unwrap()),
            json!({"key": value})
        );
        let root = f.inner().resolve("g").unwrap();
        let super::Resolved::Group(g) = root else {
            panic!()
        };
        let root_attr =
            super::attrs::read_string_attribute(f.inner(), g.id(), "/g", "N5_JSON_ROOT").unwrap();
        assert_eq!(root_attr.is_some(), !native, "{value}");
    }
    // N5_JSON_ROOT that is not an object, or not JSON.
    for bad in ["[1,2]", "not json", "3"] {
        let g = match f.inner().resolve("g").unwrap() {
            super::Resolved::Group(g) => g,
            _ => panic!(),
        };
        let name = super::cstring("N5_JSON_ROOT", "name").unwrap();
        super::attrs::write_string_for_tests(g.id(), &name, bad);
        let e = f.attributes("g").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Json, "{bad}: {e}");
        let e = f.set_attributes("g", &Map::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Json, "{bad}: {e}");
    }
}

#[test]
fn partial_edge_chunks_stored_unfiltered_decode_as_libhdf5_reads_them() {
    use super::sys;
    let dir = Scratch::new("edge");
    let path = dir.join("edge.h5");
    let f = File::create(&path).unwrap();
    // A dataset with shuffle + deflate and the layout flag "don't filter
    // partial edge chunks", made through libhdf5 directly (h5py cannot set
    // it), written through H5Dwrite.
    let shape = [10u64, 7];
    let chunk = [4u64, 4];
    super::locked(|| unsafe {
        // SAFETY: plain libhdf5 calls on ids made here, closed below.
        let dcpl = sys::h5p::H5Pcreate(*hdf5_metno::globals::H5P_DATASET_CREATE);
        assert!(sys::h5p::H5Pset_chunk(dcpl, 2, chunk.as_ptr()) >= 0);
        assert!(sys::h5p::H5Pset_shuffle(dcpl) >= 0);
        assert!(sys::h5p::H5Pset_deflate(dcpl, 5) >= 0);
        assert!(
            sys::h5p::H5Pset_chunk_opts(dcpl, sys::h5d::H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) >= 0
        );
        let space = sys::h5s::H5Screate_simple(2, shape.as_ptr(), std::ptr::null());
        let ds = sys::h5d::H5Dcreate2(
            f.inner().id(),
            c"edge".as_ptr(),
            *hdf5_metno::globals::H5T_STD_I32BE,
            space,
            sys::h5p::H5P_DEFAULT,
            dcpl,
            sys::h5p::H5P_DEFAULT,
        );
        assert!(ds >= 0);
        let data: Vec<i32> = (0..70).map(|i| i * 1000 - 7).collect();
        assert!(
            sys::h5d::H5Dwrite(
                ds,
                *hdf5_metno::globals::H5T_NATIVE_INT32,
                sys::h5s::H5S_ALL,
                sys::h5s::H5S_ALL,
                sys::h5p::H5P_DEFAULT,
                data.as_ptr().cast(),
            ) >= 0
        );
        sys::h5d::H5Dclose(ds);
        sys::h5s::H5Sclose(space);
        sys::h5p::H5Pclose(dcpl);
    });
    f.flush().unwrap();
    let ds = f.open_dataset("edge").unwrap();
    let d = ds.description();
    assert!(d.partial_edge_chunks_unfiltered);
    let decoder = d.chunk_decoder().unwrap();
    let encoder = d.chunk_encoder().unwrap();
    let mut partial_raw = 0;
    for pos in ds.allocated_chunks().unwrap() {
        let loc = ds.chunk_location(&pos).unwrap().unwrap();
        let stored = ds.read_stored_chunk(&pos, &loc).unwrap();
        let partial = pos[0] == 2 || pos[1] == 1;
        if partial {
            // Stored raw: the whole chunk, big-endian.
            assert_eq!(stored.len(), 4 * 4 * 4, "{pos:?}");
            partial_raw += 1;
        }
        let mut out = vec![0u8; decoder.chunk_bytes()];
        decoder
            .decode(&stored, loc.filter_mask, &pos, &mut out)
            .unwrap();
        let offset = [pos[0] * 4, pos[1] * 4];
        let inside = [4.min(10 - offset[0]), 4.min(7 - offset[1])];
        let mut via = vec![0u8; (inside[0] * inside[1] * 4) as usize];
        ds.read(&offset, &inside, &mut via).unwrap();
        assert_eq!(cut(&out, &chunk, &[0, 0], &inside, 4), via, "{pos:?}");
        // Re-encoded, the same stored bytes for raw partial chunks.
        if partial {
            assert_eq!(encoder.encode(&out, &pos).unwrap(), stored, "{pos:?}");
        }
    }
    assert_eq!(partial_raw, 4);
}

/// Variants of a valid file: truncated at many lengths, single bytes
/// flipped in the metadata, and a chunk pointer moved past the end.
fn hostile_variants(valid: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for cut_at in [0usize, 7, 8, 40, 48, 100, 200, 400, 800, 1200, 2000, 3000] {
        if cut_at < valid.len() {
            out.push((format!("truncated at {cut_at}"), valid[..cut_at].to_vec()));
        }
    }
    for frac in 1..8 {
        let at = valid.len() * frac / 8;
        out.push((format!("truncated at {at}"), valid[..at].to_vec()));
    }
    // Flip bytes across the first 2 KiB (superblock, root group, object
    // headers) and a few beyond.
    let mut rng = Rng(0xbad_f11e);
    for _ in 0..160 {
        let limit = valid.len().min(2048) as u64;
        let at = rng.below(limit) as usize;
        let mut v = valid.to_vec();
        v[at] ^= 1 << rng.below(8);
        out.push((format!("bit flipped at {at}"), v));
    }
    for _ in 0..40 {
        let at = rng.below(valid.len() as u64) as usize;
        let mut v = valid.to_vec();
        v[at] = v[at].wrapping_add(1 + rng.below(255) as u8);
        out.push((format!("byte changed at {at}"), v));
    }
    out
}

/// Does everything a reader does with `path`, returning the first error.
fn exercise(path: &Path) -> crate::error::Result<()> {
    let f = File::open(path, false)?;
    let _ = f.version()?;
    let mut stack = vec![String::new()];
    let mut visited = 0;
    while let Some(p) = stack.pop() {
        visited += 1;
        if visited > 200 {
            break;
        }
        let _ = f.attributes(&p)?;
        match f.kind(&p)? {
            ObjectKind::Group => {
                for name in f.list(&p)? {
                    stack.push(format!("{p}/{name}"));
                }
            }
            ObjectKind::Dataset => {
                let ds = f.open_dataset(&p)?;
                let d = ds.description().clone();
                let Ok(t) = ds.data_type() else { continue };
                let n: u64 = d.shape.iter().product();
                if n.saturating_mul(t.size() as u64) <= 1 << 24 {
                    let mut buf = vec![0u8; (n as usize) * t.size()];
                    ds.read(&vec![0; d.shape.len()], &d.shape, &mut buf)?;
                }
                if let Some(decoder) = d.chunk_decoder() {
                    for pos in ds.allocated_chunks()?.into_iter().take(64) {
                        if let Some(loc) = ds.chunk_location(&pos)? {
                            let stored = ds.read_stored_chunk(&pos, &loc)?;
                            let mut out = vec![0u8; decoder.chunk_bytes()];
                            decoder.decode(&stored, loc.filter_mask, &pos, &mut out)?;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The child half of `hostile_files_give_errors_not_crashes`: reads the
/// files named in `N5_HDF5_HOSTILE` (one per line) and prints one line per
/// file, so the parent sees which one a crash happened in.
#[test]
fn hostile_child() {
    let Ok(list) = std::env::var("N5_HDF5_HOSTILE") else {
        return;
    };
    for line in list.lines() {
        println!("START {line}");
        let r = exercise(Path::new(line));
        match r {
            Ok(()) => println!("OK {line}"),
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        ErrorKind::InvalidMetadata
                            | ErrorKind::Codec
                            | ErrorKind::Io
                            | ErrorKind::Unsupported
                            | ErrorKind::Json
                            | ErrorKind::NotFound
                    ),
                    "{line}: {e:?}"
                );
                assert!(
                    e.message().contains(line) || e.message().contains(".h5"),
                    "{e}"
                );
                println!("ERR {line}: {e}");
            }
        }
    }
}

#[test]
fn hostile_files_give_errors_not_crashes() {
    let dir = Scratch::new("hostile");
    // A valid file with groups, attributes and chunked datasets (raw and
    // deflate), made here.
    let valid_path = dir.join("valid.h5");
    {
        let f = File::create(&valid_path).unwrap();
        f.create_groups("g/h").unwrap();
        f.set_attributes(
            "g",
            &serde_json::from_str(r#"{"a":[1,2,3],"s":"text","o":{"x":[1.5]}}"#).unwrap(),
        )
        .unwrap();
        for (name, c) in [
            ("raw", Compression::Raw),
            (
                "gzip",
                Compression::Gzip {
                    level: 6,
                    use_zlib: true,
                },
            ),
        ] {
            let ds = f
                .create_dataset(
                    &format!("g/{name}"),
                    &NewDataset {
                        shape: &[20, 30],
                        chunk: &[8, 8],
                        data_type: DataType::U16,
                        compression: &c,
                    },
                )
                .unwrap();
            ds.write(&[0, 0], &[20, 30], &values(DataType::U16, 600, 3))
                .unwrap();
        }
    }
    let valid = std::fs::read(&valid_path).unwrap();
    exercise(&valid_path).unwrap();
    let variants = hostile_variants(&valid);
    let mut files = Vec::new();
    for (i, (what, bytes)) in variants.iter().enumerate() {
        let p = dir.join(&format!("v{i}.h5"));
        std::fs::write(&p, bytes).unwrap();
        files.push((what.clone(), p));
    }
    let errors = read_in_a_child(&files);
    eprintln!(
        "{} damaged files: {} errors, {} read without one",
        files.len(),
        errors.len(),
        files.len() - errors.len()
    );
    assert!(
        errors.len() > files.len() / 4,
        "too few damaged files were noticed"
    );
}

/// Reads each of `files` (description, path) as a reader would
/// ([`exercise`]) in a child process, so that a crash or a hang in libhdf5
/// fails the test naming the file instead of ending or stopping the test
/// run; the paths whose reading ended in an error (each of a kind for
/// damaged input, naming the file: the child checks that).
fn read_in_a_child(files: &[(String, PathBuf)]) -> Vec<PathBuf> {
    let names: Vec<String> = files.iter().map(|(_, p)| p.display().to_string()).collect();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "format::hdf5::native::tests::hostile_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("N5_HDF5_HOSTILE", names.join("\n"))
        // glibc fills what malloc returns with this byte: libhdf5 using
        // memory it never initialised then fails the same way every run.
        .env("MALLOC_PERTURB_", "165")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read the pipes while the child runs, so that it never blocks on them.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            text
        })
    };
    let stdout_reader = drain(Box::new(child.stdout.take().unwrap()));
    let stderr_reader = drain(Box::new(child.stderr.take().unwrap()));
    let started_at = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started_at.elapsed() > std::time::Duration::from_secs(300) {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stdout = String::from_utf8_lossy(&stdout_reader.join().unwrap()).into_owned();
    let stderr = stderr_reader.join().unwrap();
    // The harness prints "test ... " before the child's first line.
    let marked = |mark: &str| -> Vec<String> {
        stdout
            .lines()
            .filter_map(|l| l.find(mark).map(|i| l[i + mark.len()..].to_string()))
            .collect()
    };
    let started = marked("START ");
    let last = started.last().cloned();
    assert!(
        status.is_some_and(|s| s.success()) && started.len() == files.len(),
        "the child stopped ({}) after {} of {} files; the last: {:?} ({}):\n{}",
        status.map_or("killed after 300 s: a hang".to_string(), |s| s.to_string()),
        started.len(),
        files.len(),
        last,
        last.as_ref()
            .and_then(|l| names.iter().position(|n| n == l))
            .map_or("?".to_string(), |i| files[i].0.clone()),
        String::from_utf8_lossy(&stderr)
    );
    marked("ERR ")
        .iter()
        .map(|l| PathBuf::from(l.split(": ").next().unwrap()))
        .collect()
}

#[test]
fn threads_share_files_and_datasets() {
    let dir = Scratch::new("threads");
    let path = dir.join("t.h5");
    let f = File::create(&path).unwrap();
    let data = values(DataType::I32, 64 * 64, 9);
    {
        let ds = f
            .create_dataset(
                "d",
                &NewDataset {
                    shape: &[64, 64],
                    chunk: &[16, 16],
                    data_type: DataType::I32,
                    compression: &Compression::Gzip {
                        level: 1,
                        use_zlib: true,
                    },
                },
            )
            .unwrap();
        ds.write(&[0, 0], &[64, 64], &data).unwrap();
    }
    let ds = std::sync::Arc::new(f.open_dataset("d").unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let ds = ds.clone();
            let f = f.clone();
            let data = data.clone();
            std::thread::spawn(move || {
                let decoder = ds.description().chunk_decoder().unwrap();
                for round in 0..20u64 {
                    let pos = [(t + round) % 4, round % 4];
                    let loc = ds.chunk_location(&pos).unwrap().unwrap();
                    let stored = ds.read_stored_chunk(&pos, &loc).unwrap();
                    let mut out = vec![0u8; decoder.chunk_bytes()];
                    decoder
                        .decode(&stored, loc.filter_mask, &pos, &mut out)
                        .unwrap();
                    let offset = [pos[0] * 16, pos[1] * 16];
                    assert_eq!(out, cut(&data, &[64, 64], &offset, &[16, 16], 4));
                    let mut buf = vec![0u8; 16 * 16 * 4];
                    ds.read(&offset, &[16, 16], &mut buf).unwrap();
                    assert_eq!(buf, out);
                    assert_eq!(f.list("").unwrap(), vec!["d"]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
