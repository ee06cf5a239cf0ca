//! HDF5 files as containers through the N5 API (docs/design hdf5.md, part
//! B), with real files, through the C API as a C program calls it and
//! through the Rust API:
//!
//! * files h5py writes (tests/peers/hdf5_backend.py `make`: the n5-hdf5
//!   layout and third-party layouts, from BigDataViewer to scale-offset,
//!   fletcher32, fill values, compact and virtual datasets, user blocks,
//!   every chunk index, strings and compound types) are found by suffix,
//!   prefix, option and signature, and list, describe and read (whole,
//!   random regions, blocks) as h5py reads them;
//! * files libn5 creates (groups, raw and gzip datasets of the ten types,
//!   simple and nested attributes, keys changing place, blocks of smaller
//!   shapes, deletes, resizes) read back in h5py as B3 and B4 say, with no
//!   `n5` attribute, and h5dump 1.10.8 dumps them (the script's `check`);
//! * region reads of chunked datasets whose filters Rust decodes never call
//!   `H5Dread`, on two threads;
//! * modes, options and the errors of locations, types, compressions and
//!   resizes the contract refuses;
//! * damaged files (truncated, cyclic object headers, a chunk outside the
//!   file) give errors, not crashes (read in a child process).
//!
//! The peers' Python is `N5_PEER_PYTHON` (tests/common); h5dump comes from
//! PATH.
#![cfg(feature = "hdf5")]

mod common;

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

use n5::ffi::{n5_container, n5_dataset, n5_status, N5_OK};
use n5::{Container, DataType, Mode, Options};
use serde_json::{json, Map, Value};

use common::Scratch;

/// The C API as a C program uses it: each call's status and, on failure,
/// the thread's last error message.
mod capi {
    use super::*;
    use n5::ffi::block::*;
    use n5::ffi::container::*;
    use n5::ffi::dataset::*;
    use n5::ffi::region::*;

    /// A failed call: its status and message.
    pub type Failure = (n5_status, String);

    /// The message of the calling thread's last failed call.
    pub fn message() -> String {
        // SAFETY: the library returns a NUL-terminated string it owns,
        // valid until the thread's next call.
        unsafe { std::ffi::CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    /// `status` as a result.
    pub fn ok(status: n5_status) -> Result<(), Failure> {
        if status == N5_OK {
            Ok(())
        } else {
            Err((status, message()))
        }
    }

    fn cs(s: &str) -> CString {
        CString::new(s).unwrap()
    }

    /// A text output: a size query, then the text.
    fn text(call: impl Fn(*mut c_char, usize, *mut usize) -> n5_status) -> Result<String, Failure> {
        let mut len = 0usize;
        ok(call(std::ptr::null_mut(), 0, &mut len))?;
        let mut buf = vec![0u8; len + 1];
        ok(call(buf.as_mut_ptr().cast(), buf.len(), &mut len))?;
        buf.truncate(len);
        Ok(String::from_utf8(buf).unwrap())
    }

    fn json(call: impl Fn(*mut c_char, usize, *mut usize) -> n5_status) -> Result<Value, Failure> {
        text(call).map(|t| serde_json::from_str(&t).unwrap())
    }

    /// An open container, freed when dropped.
    pub struct C(pub *mut n5_container);

    impl Drop for C {
        fn drop(&mut self) {
            n5_container_free(self.0);
        }
    }

    /// An open dataset, freed when dropped.
    pub struct D(pub *mut n5_dataset);

    impl Drop for D {
        fn drop(&mut self) {
            n5_dataset_free(self.0);
        }
    }

    impl C {
        pub fn open(root: &str, mode: i32, options: &str) -> Result<C, Failure> {
            let (r, o) = (cs(root), cs(options));
            let c = n5_container_open(r.as_ptr(), mode, o.as_ptr());
            if c.is_null() {
                Err((n5::ffi::status::n5_last_error_code(), message()))
            } else {
                Ok(C(c))
            }
        }

        pub fn format(&self) -> String {
            text(|b, n, l| n5_container_format(self.0, b, n, l)).unwrap()
        }

        pub fn version(&self) -> String {
            text(|b, n, l| n5_container_version(self.0, b, n, l)).unwrap()
        }

        pub fn list(&self, path: &str) -> Result<Value, Failure> {
            let p = cs(path);
            json(|b, n, l| n5_list(self.0, p.as_ptr(), b, n, l))
        }

        pub fn attributes(&self, path: &str) -> Result<Value, Failure> {
            let p = cs(path);
            json(|b, n, l| n5_attributes_get(self.0, p.as_ptr(), b, n, l))
        }

        pub fn attribute(&self, path: &str, key: &str) -> Result<Value, Failure> {
            let (p, k) = (cs(path), cs(key));
            json(|b, n, l| n5_attribute_get(self.0, p.as_ptr(), k.as_ptr(), b, n, l))
        }

        pub fn set_attributes(&self, path: &str, doc: &str) -> Result<(), Failure> {
            let (p, d) = (cs(path), cs(doc));
            ok(n5_attributes_set(self.0, p.as_ptr(), d.as_ptr()))
        }

        pub fn set_attribute(&self, path: &str, key: &str, value: &str) -> Result<(), Failure> {
            let (p, k, v) = (cs(path), cs(key), cs(value));
            ok(n5_attribute_set(self.0, p.as_ptr(), k.as_ptr(), v.as_ptr()))
        }

        pub fn remove_attribute(&self, path: &str, key: &str) -> Result<(), Failure> {
            let (p, k) = (cs(path), cs(key));
            ok(n5_attribute_remove(self.0, p.as_ptr(), k.as_ptr()))
        }

        pub fn exists(&self, path: &str) -> bool {
            let p = cs(path);
            let mut e = -1;
            ok(n5_exists(self.0, p.as_ptr(), &mut e)).unwrap();
            e == 1
        }

        pub fn dataset_exists(&self, path: &str) -> bool {
            let p = cs(path);
            let mut e = -1;
            ok(n5_dataset_exists(self.0, p.as_ptr(), &mut e)).unwrap();
            e == 1
        }

        pub fn create_group(&self, path: &str) -> Result<(), Failure> {
            let p = cs(path);
            ok(n5_group_create(self.0, p.as_ptr()))
        }

        pub fn remove(&self, path: &str) -> Result<(), Failure> {
            let p = cs(path);
            ok(n5_remove(self.0, p.as_ptr()))
        }

        pub fn open_dataset(&self, path: &str) -> Result<D, Failure> {
            let p = cs(path);
            let d = n5_dataset_open(self.0, p.as_ptr());
            if d.is_null() {
                Err((n5::ffi::status::n5_last_error_code(), message()))
            } else {
                Ok(D(d))
            }
        }

        pub fn create_dataset(
            &self,
            path: &str,
            dims: &[u64],
            block: &[u64],
            dtype: DataType,
            compression: &str,
        ) -> Result<D, Failure> {
            // An empty compression is NULL (raw).
            let (p, z) = (cs(path), cs(compression));
            let z = if compression.is_empty() {
                std::ptr::null()
            } else {
                z.as_ptr()
            };
            let d = n5_dataset_create(
                self.0,
                p.as_ptr(),
                dims.len(),
                dims.as_ptr(),
                block.as_ptr(),
                dtype.code(),
                z,
            );
            if d.is_null() {
                Err((n5::ffi::status::n5_last_error_code(), message()))
            } else {
                Ok(D(d))
            }
        }

        pub fn create_dataset_json(&self, path: &str, doc: &str) -> Result<D, Failure> {
            let (p, j) = (cs(path), cs(doc));
            let d = n5_dataset_create_json(self.0, p.as_ptr(), j.as_ptr());
            if d.is_null() {
                Err((n5::ffi::status::n5_last_error_code(), message()))
            } else {
                Ok(D(d))
            }
        }
    }

    impl D {
        pub fn ndim(&self) -> usize {
            let mut n = 0;
            ok(n5_dataset_ndim(self.0, &mut n)).unwrap();
            n
        }

        fn dims_of(
            &self,
            f: extern "C" fn(*const n5_dataset, usize, *mut u64) -> n5_status,
        ) -> Vec<u64> {
            let n = self.ndim();
            let mut out = vec![0u64; n];
            ok(f(self.0, n, out.as_mut_ptr())).unwrap();
            out
        }

        pub fn dims(&self) -> Vec<u64> {
            self.dims_of(n5_dataset_dimensions)
        }

        pub fn block_size(&self) -> Vec<u64> {
            self.dims_of(n5_dataset_block_size)
        }

        pub fn shard_shape(&self) -> Vec<u64> {
            self.dims_of(n5_dataset_shard_shape)
        }

        pub fn dtype(&self) -> DataType {
            let mut t = 0;
            ok(n5_dataset_dtype(self.0, &mut t)).unwrap();
            DataType::from_code(t).unwrap()
        }

        pub fn compression(&self) -> Value {
            json(|b, n, l| n5_dataset_compression(self.0, b, n, l)).unwrap()
        }

        pub fn metadata(&self) -> Value {
            json(|b, n, l| n5_dataset_metadata(self.0, b, n, l)).unwrap()
        }

        pub fn block_list(&self) -> Value {
            json(|b, n, l| n5_block_list(self.0, b, n, l)).unwrap()
        }

        pub fn read(&self, offset: &[u64], shape: &[u64]) -> Result<Vec<u8>, Failure> {
            let t = self.dtype();
            let n: u64 = shape.iter().product();
            let mut buf = vec![0u8; n as usize * t.size()];
            ok(n5_region_read(
                self.0,
                offset.len(),
                offset.as_ptr(),
                shape.as_ptr(),
                t.code(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            ))?;
            Ok(buf)
        }

        pub fn write(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<(), Failure> {
            ok(n5_region_write(
                self.0,
                offset.len(),
                offset.as_ptr(),
                shape.as_ptr(),
                self.dtype().code(),
                data.as_ptr().cast(),
                data.len(),
            ))
        }

        /// The block's data, nominal shape and whether it is stored.
        pub fn read_block(&self, pos: &[u64]) -> Result<(Vec<u8>, Vec<u64>, bool), Failure> {
            let t = self.dtype();
            let mut shape = vec![0u64; pos.len()];
            ok(n5_block_shape(
                self.0,
                pos.len(),
                pos.as_ptr(),
                shape.as_mut_ptr(),
            ))?;
            let n: u64 = shape.iter().product();
            let mut buf = vec![0xa5u8; n as usize * t.size()];
            let (mut out_shape, mut found) = (vec![0u64; pos.len()], -1);
            ok(n5_block_read(
                self.0,
                pos.len(),
                pos.as_ptr(),
                t.code(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                out_shape.as_mut_ptr(),
                &mut found,
            ))?;
            assert_eq!(out_shape, shape);
            Ok((buf, shape, found == 1))
        }

        pub fn write_block(&self, pos: &[u64], shape: &[u64], data: &[u8]) -> Result<(), Failure> {
            ok(n5_block_write(
                self.0,
                pos.len(),
                pos.as_ptr(),
                shape.as_ptr(),
                self.dtype().code(),
                data.as_ptr().cast(),
                data.len(),
            ))
        }

        pub fn delete_block(&self, pos: &[u64]) -> Result<(), Failure> {
            ok(n5_block_delete(self.0, pos.len(), pos.as_ptr()))
        }

        pub fn block_exists(&self, pos: &[u64]) -> bool {
            let mut e = -1;
            ok(n5_block_exists(self.0, pos.len(), pos.as_ptr(), &mut e)).unwrap();
            e == 1
        }

        /// Mode, shape and element count of a stored block; `None` if not.
        pub fn block_info(&self, pos: &[u64]) -> Option<(i32, Vec<u64>, u64)> {
            let (mut mode, mut shape, mut n, mut found) = (-1, vec![0u64; pos.len()], 0u64, -1);
            ok(n5_block_info(
                self.0,
                pos.len(),
                pos.as_ptr(),
                &mut mode,
                shape.as_mut_ptr(),
                &mut n,
                &mut found,
            ))
            .unwrap();
            (found == 1).then_some((mode, shape, n))
        }

        pub fn set_dims(&self, dims: &[u64]) -> Result<(), Failure> {
            ok(n5_dataset_set_dimensions(self.0, dims.len(), dims.as_ptr()))
        }
    }
}

use capi::{C, D};

/// Taken by every test of this file, so that they run one at a time:
/// libhdf5 opens files without close-on-exec (the libhdf5 layer sets it
/// right after), so a test starting a process (Python, a child test) while
/// another opens a file could hand the child the file's lock for the
/// child's life, and a later open of that file would find it locked.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const READ: i32 = n5::ffi::N5_MODE_READ;
const READ_WRITE: i32 = n5::ffi::N5_MODE_READ_WRITE;
const CREATE: i32 = n5::ffi::N5_MODE_CREATE;

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
        "{} make failed ({}):\n{}",
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

    /// A random box inside `dims`: (offset, shape), no extent 0 unless a
    /// dimension is.
    fn region(&mut self, dims: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let offset: Vec<u64> = dims.iter().map(|&d| self.below(d.max(1))).collect();
        let shape = dims
            .iter()
            .zip(&offset)
            .map(|(&d, &o)| if d == 0 { 0 } else { 1 + self.below(d - o) })
            .collect();
        (offset, shape)
    }
}

fn u64s(v: &Value) -> Vec<u64> {
    common::u64s(v)
}

fn reversed(v: &Value) -> Vec<u64> {
    let mut v = u64s(v);
    v.reverse();
    v
}

/// The box at `offset` of `shape` (N5 order) of the array `data` whose N5
/// dimensions are `dims` (dimension 0 fastest), `elem`-byte elements.
fn cut(data: &[u8], dims: &[u64], offset: &[u64], shape: &[u64], elem: usize) -> Vec<u8> {
    let n = dims.len();
    let count: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(count as usize * elem);
    if count == 0 {
        return out;
    }
    let rows: u64 = shape[1..].iter().product();
    for r in 0..rows {
        let mut rest = r;
        let mut src = offset[0];
        let mut stride = dims[0];
        for d in 1..n {
            let p = rest % shape[d];
            rest /= shape[d];
            src += (offset[d] + p) * stride;
            stride *= dims[d];
        }
        let s = src as usize * elem;
        out.extend_from_slice(&data[s..s + shape[0] as usize * elem]);
    }
    out
}

/// Write `part` (of `shape`, N5 order) into `whole` (of `dims`) at `offset`.
fn paste(whole: &mut [u8], dims: &[u64], offset: &[u64], shape: &[u64], part: &[u8], elem: usize) {
    let n = dims.len();
    let rows: u64 = shape[1..].iter().product();
    let row = shape[0] as usize * elem;
    if row == 0 {
        return;
    }
    for r in 0..rows {
        let mut rest = r;
        let mut dst = offset[0];
        let mut stride = dims[0];
        for d in 1..n {
            let p = rest % shape[d];
            rest /= shape[d];
            dst += (offset[d] + p) * stride;
            stride *= dims[d];
        }
        let d = dst as usize * elem;
        whole[d..d + row].copy_from_slice(&part[r as usize * row..(r as usize + 1) * row]);
    }
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
/// text must be exactly TEXT.
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

/// The N5 type of a numpy dtype string ("<u2", "|i1", ">f8").
fn numpy_type(s: &str) -> DataType {
    DataType::from_name(match &s[1..] {
        "u1" => "uint8",
        "u2" => "uint16",
        "u4" => "uint32",
        "u8" => "uint64",
        "i1" => "int8",
        "i2" => "int16",
        "i4" => "int32",
        "i8" => "int64",
        "f4" => "float32",
        "f8" => "float64",
        other => panic!("numpy type {other}"),
    })
    .unwrap()
}

/// The numpy dtype string of little-endian elements of `t`.
fn numpy_name(t: DataType) -> String {
    let (kind, size) = match t {
        DataType::F32 | DataType::F64 => ('f', t.size()),
        DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64 => ('i', t.size()),
        _ => ('u', t.size()),
    };
    format!("{}{kind}{size}", if size == 1 { '|' } else { '<' })
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
        other => panic!("no fill value of {other}"),
    }
}

/// The compression the contract reports for the filters h5py lists.
fn reported_compression(filters: &Value) -> Value {
    let rest: Vec<&Value> = filters
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] != 2 && f["id"] != 3)
        .collect();
    match rest.as_slice() {
        [f] if f["id"] == 1 => {
            json!({"type": "gzip", "level": f["cd_values"][0], "useZlib": true})
        }
        _ => json!({"type": "raw"}),
    }
}

/// Every check of one dataset of the manifest through the C API; the
/// mismatches.
fn check_dataset(c: &C, d: &Value, rng: &mut Rng) -> Vec<String> {
    let path = d["path"].as_str().unwrap();
    let mut bad = Vec::new();
    let mut fail = |m: String| bad.push(format!("{path}: {m}"));
    if !c.exists(path) || !c.dataset_exists(path) {
        fail("not a dataset through n5_exists / n5_dataset_exists".into());
    }
    if let Some(words) = d["unsupported"].as_str() {
        match c.open_dataset(path) {
            Err((s, m)) if s == n5::ffi::N5_ERR_UNSUPPORTED && m.contains(words) => {}
            Err(e) => fail(format!("open: {e:?}, expected unsupported '{words}'")),
            Ok(_) => fail(format!("opened, expected unsupported '{words}'")),
        }
        if c.list(path).ok() != Some(json!([])) {
            fail("n5_list of a dataset is not []".into());
        }
        return bad;
    }
    let ds = match c.open_dataset(path) {
        Ok(ds) => ds,
        Err(e) => {
            fail(format!("open: {e:?}"));
            return bad;
        }
    };
    let shape = u64s(&d["shape"]);
    let dims = reversed(&d["shape"]);
    let t = numpy_type(d["dtype"].as_str().unwrap());
    let elem = t.size();
    if ds.dims() != dims {
        fail(format!("dimensions {:?}, expected {dims:?}", ds.dims()));
    }
    if ds.dtype() != t {
        fail(format!("type {:?}, h5py says {}", ds.dtype(), d["dtype"]));
    }
    // Chunks reversed; the others N5Factory's default block size, not
    // clamped, the whole dimension beyond it.
    let block: Vec<u64> = match d["chunks"].as_array() {
        Some(_) => reversed(&d["chunks"]),
        None => dims
            .iter()
            .enumerate()
            .map(|(i, &dim)| [64, 64, 64, 1, 1].get(i).copied().unwrap_or(dim.max(1)))
            .collect(),
    };
    if ds.block_size() != block || ds.shard_shape() != block {
        fail(format!(
            "block size {:?} shard shape {:?}, expected {block:?}",
            ds.block_size(),
            ds.shard_shape()
        ));
    }
    let compression = reported_compression(&d["filters"]);
    if ds.compression() != compression {
        fail(format!(
            "compression {}, expected {compression}",
            ds.compression()
        ));
    }
    let meta = ds.metadata();
    let filters: Vec<Value> = d["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| json!({"id": f["id"], "name": f["name"], "cd_values": f["cd_values"]}))
        .collect();
    let want_meta = json!({
        "dimensions": dims, "blockSize": block, "dataType": t.name(), "compression": compression,
        "hdf5": {"shape": shape, "maxshape": d["maxshape"], "chunks": d["chunks"],
                 "layout": d["layout"], "filters": filters,
                 "storage_size": d["storage_size"]}});
    if meta != want_meta {
        fail(format!("metadata {meta}, expected {want_meta}"));
    }
    let mut want_attrs = d["attributes"].as_object().unwrap().clone();
    for k in ["dimensions", "blockSize", "dataType", "compression"] {
        want_attrs.insert(k.into(), want_meta[k].clone());
    }
    match c.attributes(path) {
        Ok(got) if json_eq(&got, &Value::Object(want_attrs.clone())) => {}
        other => fail(format!("attributes {other:?}, expected {want_attrs:?}")),
    }
    if c.list(path).ok() != Some(json!([])) {
        fail("n5_list of a dataset is not []".into());
    }

    // The whole dataset and random regions, equal to h5py.
    let expected = std::fs::read(d["bin"].as_str().unwrap()).unwrap();
    let zero = vec![0u64; dims.len()];
    match ds.read(&zero, &dims) {
        Ok(got) if to_le(got.clone(), elem) == expected => {}
        Ok(_) => fail("the whole dataset differs from h5py's".into()),
        Err(e) => fail(format!("whole read: {e:?}")),
    }
    for _ in 0..10 {
        let (offset, rshape) = rng.region(&dims);
        match ds.read(&offset, &rshape) {
            Ok(got)
                if to_le(got.clone(), elem) == cut(&expected, &dims, &offset, &rshape, elem) => {}
            Ok(_) => fail(format!("region at {offset:?} of {rshape:?} differs")),
            Err(e) => fail(format!("region at {offset:?} of {rshape:?}: {e:?}")),
        }
    }

    // Blocks: present where a chunk is allocated (contiguous and compact:
    // where the storage is), else the fill value.
    let fill = element_bytes(&d["fillvalue"], t);
    let grid: Vec<u64> = dims
        .iter()
        .zip(&block)
        .map(|(d, b)| d.div_ceil(*b))
        .collect();
    let mut present: Vec<Vec<u64>> = match d["chunks"].as_array() {
        Some(_) => d["chunk_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ch| {
                let mut p: Vec<u64> = u64s(&ch["offset"])
                    .iter()
                    .zip(u64s(&d["chunks"]))
                    .map(|(o, c)| o / c)
                    .collect();
                p.reverse();
                p
            })
            .collect(),
        None if path.contains("unwritten") => Vec::new(),
        None => {
            let total: u64 = grid.iter().product();
            (0..total)
                .map(|mut i| {
                    let mut p = vec![0u64; grid.len()];
                    for k in (0..grid.len()).rev() {
                        p[k] = i % grid[k];
                        i /= grid[k];
                    }
                    p
                })
                .collect()
        }
    };
    present.sort();
    if ds.block_list() != json!(present) {
        fail(format!(
            "block list {}, expected {present:?}",
            ds.block_list()
        ));
    }
    let total: u64 = grid.iter().product();
    for i in 0..total.min(60) {
        let mut rest = i;
        let pos: Vec<u64> = grid
            .iter()
            .map(|&g| {
                let p = rest % g;
                rest /= g;
                p
            })
            .collect();
        let stored = present.contains(&pos);
        if ds.block_exists(&pos) != stored {
            fail(format!("block {pos:?}: n5_block_exists says {}", !stored));
        }
        match ds.read_block(&pos) {
            Ok((data, bshape, found)) => {
                let offset: Vec<u64> = pos.iter().zip(&block).map(|(p, b)| p * b).collect();
                if found != stored {
                    fail(format!("block {pos:?}: found {found}"));
                }
                if to_le(data.clone(), elem) != cut(&expected, &dims, &offset, &bshape, elem) {
                    fail(format!("block {pos:?} differs from h5py's data"));
                }
                if !found && !data.chunks_exact(elem).all(|e| e == fill) {
                    fail(format!("absent block {pos:?} is not the fill value"));
                }
                let info = ds.block_info(&pos);
                let n: u64 = bshape.iter().product();
                if info != stored.then(|| (0, bshape.clone(), n)) {
                    fail(format!("block {pos:?}: n5_block_info {info:?}"));
                }
            }
            Err(e) => fail(format!("block {pos:?}: {e:?}")),
        }
    }
    bad
}

/// Every check of one file of the manifest, opened as `root`.
fn check_file(root: &str, f: &Value, rng: &mut Rng) -> Vec<String> {
    let mut bad = Vec::new();
    let c = match C::open(root, READ, r#"{"threads": 2}"#) {
        Ok(c) => c,
        Err(e) => return vec![format!("{root}: open: {e:?}")],
    };
    if c.format() != "hdf5" {
        bad.push(format!("{root}: format {}", c.format()));
    }
    let version = f["version"].as_str().unwrap_or("");
    if c.version() != version {
        bad.push(format!(
            "{root}: version {:?}, expected {version:?}",
            c.version()
        ));
    }
    for g in f["groups"].as_array().unwrap() {
        let path = g["path"].as_str().unwrap();
        if !c.exists(path) {
            bad.push(format!("{root}{path}: not there"));
        }
        if c.dataset_exists(path) {
            // A dataset the script lists (through a link): no children.
            if c.list(path).ok() != Some(json!([])) {
                bad.push(format!("{root}{path}: a dataset with children"));
            }
            continue;
        }
        if let Some(list) = g.get("list") {
            match c.list(path) {
                Ok(got) if got == *list => {}
                other => bad.push(format!("{root}{path}: list {other:?}, expected {list}")),
            }
        }
        match c.attributes(path) {
            Ok(got) if json_eq(&got, &g["attributes"]) => {}
            other => bad.push(format!(
                "{root}{path}: attributes {other:?}, expected {}",
                g["attributes"]
            )),
        }
        for key in g["left_out"].as_array().unwrap() {
            let key = key.as_str().unwrap();
            match c.attribute(path, key) {
                Err((s, m)) if s == n5::ffi::N5_ERR_UNSUPPORTED && m.contains(key) => {}
                other => bad.push(format!("{root}{path}: left-out attribute {key}: {other:?}")),
            }
        }
    }
    for d in f["datasets"].as_array().unwrap() {
        for m in check_dataset(&c, d, rng) {
            bad.push(format!("{root}{m}"));
        }
    }
    bad
}

/// The same data through the Rust API: listing and random regions of
/// every dataset the N5 API opens, on two threads.
fn check_rust_api(root: &str, f: &Value, rng: &mut Rng) -> Vec<String> {
    let mut bad = Vec::new();
    let options = Options {
        threads: 2,
        ..Options::default()
    };
    let c = Container::open_with(root, Mode::Read, options).unwrap();
    assert_eq!(c.format(), n5::format::Format::Hdf5);
    for d in f["datasets"].as_array().unwrap() {
        if d.get("unsupported").is_some() {
            continue;
        }
        let path = d["path"].as_str().unwrap();
        let ds = c.open_dataset(path).unwrap();
        let dims = reversed(&d["shape"]);
        let elem = ds.data_type().size();
        let expected = std::fs::read(d["bin"].as_str().unwrap()).unwrap();
        // Chunks inside one file are no units of their own to copy.
        let mut buf = Vec::new();
        match ds.read_stored_unit(&vec![0; dims.len()], &mut buf) {
            Err(e) if e.kind() == n5::ErrorKind::Unsupported || dims.contains(&0) => {}
            other => bad.push(format!("{root}{path}: stored unit: {other:?}")),
        }
        assert!(!ds.same_encoding(&ds), "{root}{path}");
        for _ in 0..5 {
            let (offset, shape) = rng.region(&dims);
            let n: u64 = shape.iter().product();
            let mut out = vec![0u8; n as usize * elem];
            match ds.read_region(&offset, &shape, &mut out) {
                Ok(()) if to_le(out, elem) == cut(&expected, &dims, &offset, &shape, elem) => {}
                other => bad.push(format!(
                    "{root}{path}: Rust region {offset:?} {shape:?}: {other:?}"
                )),
            }
        }
    }
    bad
}

#[test]
fn files_h5py_wrote_read_as_h5py_reads_them() {
    let _serial = serial();
    let Some(python) = common::peer_python("files_h5py_wrote_read_as_h5py_reads_them") else {
        return;
    };
    let dir = Scratch::new("hdf5-read");
    let manifest = make_files(&python, dir.path());
    let mut rng = Rng(0x5eed_1234);
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in manifest["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        // Found by its suffix.
        bad.extend(check_file(path, f, &mut rng));
        bad.extend(check_rust_api(path, f, &mut rng));
        // Found by its signature (no suffix), by the prefixes and by the
        // option: the same answers.
        let copy = dir.join(&format!(
            "{}.bin",
            Path::new(path).file_stem().unwrap().to_string_lossy()
        ));
        std::fs::copy(path, &copy).unwrap();
        let copy = copy.display().to_string();
        for root in [
            copy.clone(),
            format!("h5:{copy}"),
            format!("hdf5:file://{copy}"),
        ] {
            match C::open(&root, READ, "{}") {
                Ok(c) if c.format() == "hdf5" && c.list("").is_ok() => {}
                Ok(c) => bad.push(format!("{root}: format {}", c.format())),
                Err(e) => bad.push(format!("{root}: {e:?}")),
            }
        }
        match C::open(&copy, READ, r#"{"format": "hdf5"}"#) {
            Ok(c) if c.format() == "hdf5" => {}
            other => bad.push(format!("{copy} with format hdf5: {:?}", other.err())),
        }
        if path.ends_with("userblock512.h5") {
            bad.extend(check_file(&copy, f, &mut rng));
        }
        // The block size of datasets that are not chunked from the
        // options: entry i where above 0, else the whole dimension.
        if path.ends_with("thirdparty.h5") {
            let c = C::open(path, READ, r#"{"hdf5": {"default_block_size": [3, 0]}}"#).unwrap();
            let ds = c.open_dataset("compact").unwrap();
            assert_eq!((ds.dims(), ds.block_size()), (vec![5, 4], vec![3, 4]));
            let whole = ds.read(&[0, 0], &[5, 4]).unwrap();
            let (block, shape, found) = ds.read_block(&[1, 0]).unwrap();
            assert!(found && shape == [2, 4]);
            assert_eq!(block, cut(&whole, &[5, 4], &[3, 0], &[2, 4], 2));
        }
        checked += f["datasets"].as_array().unwrap().len();
    }
    assert!(checked >= 40, "only {checked} datasets in the manifest");
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// `n` elements of `t` (native order): floats exactly representable,
/// integers over the whole range with zeros in part of the array.
fn values(t: DataType, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(n * t.size());
    for i in 0..n {
        let r = rng.next();
        match t {
            DataType::F32 => {
                out.extend_from_slice(&((r % 10_000) as f32 / 8.0 - 600.0).to_ne_bytes())
            }
            DataType::F64 => {
                out.extend_from_slice(&((r % 1_000_000) as f64 / 4.0 - 1e5).to_ne_bytes())
            }
            _ => {
                let v = if i % 3 == 0 { 0 } else { r };
                out.extend_from_slice(&v.to_ne_bytes()[..t.size()]);
            }
        }
    }
    out
}

/// The program `name` on PATH.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

const TEN: [DataType; 10] = [
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

/// What a dataset libn5 writes should hold: its dimensions, block size,
/// type, compression and data (N5 order, native), for the check with h5py
/// and for reading back.
struct Model {
    path: String,
    dims: Vec<u64>,
    block: Vec<u64>,
    max: Vec<u64>,
    t: DataType,
    deflate: Option<u64>,
    data: Vec<u8>,
    /// Blocks (N5 order) never allocated.
    absent: Vec<Vec<u64>>,
}

impl Model {
    /// The spec entry of the script's `check`, with the data written to
    /// `bin`.
    fn spec(&self, bin: &Path) -> Value {
        std::fs::write(bin, to_le(self.data.clone(), self.t.size())).unwrap();
        let rev = |v: &[u64]| v.iter().rev().copied().collect::<Vec<u64>>();
        let chunks: Vec<u64> = self
            .block
            .iter()
            .zip(&self.max)
            .map(|(&b, &d)| b.clamp(1, d.max(1)))
            .collect();
        json!({
            "dtype": numpy_name(self.t.clone()),
            "shape": rev(&self.dims),
            "maxshape": rev(&self.max),
            "chunks": rev(&chunks),
            "shuffle": self.deflate.is_some() && self.t.size() > 1,
            "deflate": self.deflate,
            "bin": bin.display().to_string(),
            "absent_chunks": self.absent.iter().map(|p| rev(p)).collect::<Vec<_>>(),
        })
    }

    /// The dataset read back whole equals the model.
    fn check(&self, c: &C) -> Result<(), String> {
        let ds = c
            .open_dataset(&self.path)
            .map_err(|e| format!("{}: {e:?}", self.path))?;
        if ds.dims() != self.dims {
            return Err(format!("{}: dimensions {:?}", self.path, ds.dims()));
        }
        let got = ds.read(&vec![0; self.dims.len()], &self.dims).unwrap();
        if got != self.data {
            return Err(format!("{}: data differ from what was written", self.path));
        }
        for pos in &self.absent {
            if ds.block_exists(pos) {
                return Err(format!("{}: block {pos:?} is stored", self.path));
            }
        }
        Ok(())
    }
}

/// Write `data` at `offset` of `shape` through `ds` and into `m`.
fn write_region(ds: &D, m: &mut Model, offset: &[u64], shape: &[u64], data: &[u8]) {
    ds.write(offset, shape, data).unwrap();
    paste(&mut m.data, &m.dims, offset, shape, data, m.t.size());
}

#[test]
fn files_libn5_creates_read_back_in_h5py_and_h5dump() {
    let _serial = serial();
    let Some(python) = common::peer_python("files_libn5_creates_read_back_in_h5py_and_h5dump")
    else {
        return;
    };
    let dir = Scratch::new("hdf5-create");
    // Missing parent directories are made.
    let file = dir.join("new/sub/created.h5");
    let root = file.display().to_string();
    let mut models: Vec<Model> = Vec::new();
    let mut groups = Map::new();
    {
        let c = C::open(&root, CREATE, r#"{"threads": 2}"#).unwrap();
        assert_eq!(c.format(), "hdf5");
        assert_eq!(c.version(), "");

        // Groups along a path; existing ones stay.
        c.create_group("a/b/c").unwrap();
        c.create_group("a/b").unwrap();
        assert_eq!(c.list("").unwrap(), json!(["a"]));
        assert_eq!(c.list("/a").unwrap(), json!(["b"]));
        assert!(c.exists("a/b/c") && !c.dataset_exists("a/b/c"));
        c.create_group("gone/x").unwrap();
        c.remove("gone").unwrap();
        assert!(!c.exists("gone") && !c.exists("gone/x"));
        assert_eq!(
            c.remove("").unwrap_err().0,
            n5::ffi::N5_ERR_INVALID_ARGUMENT
        );

        // The contract's example, then keys that change place.
        let example = r#"{"resolution":[4.0,4.0,40.0],"unit":"nm","downsampled":true,
            "count":3,"scales":{"s0":1},"offset":[0,1.5]}"#;
        c.set_attributes("a", example).unwrap();
        let got = c.attributes("a").unwrap();
        assert!(
            json_eq(&got, &serde_json::from_str(example).unwrap()),
            "{got}"
        );
        c.set_attributes("a", r#"{"count":{"x":1},"scales":5}"#)
            .unwrap();
        c.set_attribute("a", "nested/deep", "3").unwrap();
        c.remove_attribute("a", "unit").unwrap();
        c.set_attribute("a", "resolution[1]", "8.5").unwrap();
        let want = json!({"resolution": [4.0, 8.5, 40.0], "downsampled": true, "count": {"x": 1},
            "scales": 5, "offset": [0, 1.5], "nested": {"deep": 3}});
        let got = c.attributes("a").unwrap();
        assert!(json_eq(&got, &want), "{got}");
        assert_eq!(c.attribute("a", "nested/deep").unwrap(), json!(3));
        assert_eq!(
            c.attribute("a", "unit").unwrap_err().0,
            n5::ffi::N5_ERR_NOT_FOUND
        );
        groups.insert(
            "/a".into(),
            json!({"attributes": {
                "resolution": {"kind": "float64", "shape": [3], "value": [4.0, 8.5, 40.0]},
                "downsampled": {"kind": "bool", "shape": [], "value": true},
                "scales": {"kind": "int64", "shape": [], "value": 5}},
                "json_root": {"offset": [0, 1.5], "count": {"x": 1}, "nested": {"deep": 3}},
                "absent": ["unit", "count", "offset", "nested"]}),
        );
        let kinds = r#"{"big": 18446744073709551615, "neg": -5, "strs": ["x", "y\u00e9"],
            "bools": [true, false], "ints": [1, 2, 3], "floats": [0.5, 2.0], "text": "\u00b5m",
            "huge": 123456789012345678901234567890, "nul": null, "empty": [], "mixed": [1, 2.5]}"#;
        c.set_attributes("a/b", kinds).unwrap();
        let got = c.attributes("a/b").unwrap();
        assert!(
            json_eq(&got, &serde_json::from_str(kinds).unwrap()),
            "{got}"
        );
        groups.insert(
            "/a/b".into(),
            json!({"attributes": {
                "big": {"kind": "uint64", "shape": [], "value": 18446744073709551615u64},
                "neg": {"kind": "int64", "shape": [], "value": -5},
                "strs": {"kind": "string", "shape": [2], "value": ["x", "y\u{e9}"]},
                "bools": {"kind": "bool", "shape": [2], "value": [true, false]},
                "ints": {"kind": "int64", "shape": [3], "value": [1, 2, 3]},
                "floats": {"kind": "float64", "shape": [2], "value": [0.5, 2.0]},
                "text": {"kind": "string", "shape": [], "value": "\u{b5}m"}},
                "json_root": serde_json::from_str::<Value>(
                    r#"{"huge": 123456789012345678901234567890, "nul": null, "empty": [], "mixed": [1, 2.5]}"#
                ).unwrap(),
                "absent": []}),
        );
        c.set_attributes("", r#"{"name": "root"}"#).unwrap();
        groups.insert(
            "/".into(),
            json!({"attributes": {"name": {"kind": "string", "shape": [], "value": "root"}},
                   "json_root": null, "absent": ["n5"]}),
        );

        // The ten types, raw and gzip, written by regions and blocks.
        for (i, t) in TEN.iter().cloned().enumerate() {
            for (kind, dims, block, compression, deflate) in [
                (
                    "raw",
                    vec![13u64, 7, 5],
                    vec![4u64, 3, 2],
                    r#"{"type":"raw"}"#,
                    None,
                ),
                (
                    "gzip",
                    vec![21, 10],
                    vec![8, 4],
                    r#"{"type":"gzip","level":5}"#,
                    Some(5),
                ),
            ] {
                let path = format!("{kind}/{}", t.name());
                let ds = c
                    .create_dataset(&path, &dims, &block, t.clone(), compression)
                    .unwrap();
                assert_eq!(ds.block_size(), block);
                assert_eq!(ds.compression()["type"], kind);
                let n: u64 = dims.iter().product();
                let mut m = Model {
                    path,
                    max: dims.clone(),
                    dims: dims.clone(),
                    block: block.clone(),
                    t: t.clone(),
                    deflate,
                    data: vec![0u8; n as usize * t.size()],
                    absent: Vec::new(),
                };
                let zero = vec![0u64; dims.len()];
                write_region(
                    &ds,
                    &mut m,
                    &zero,
                    &dims,
                    &values(t.clone(), n as usize, i as u64),
                );
                let (offset, shape) = Rng(i as u64 + 7).region(&dims);
                let k: u64 = shape.iter().product();
                write_region(
                    &ds,
                    &mut m,
                    &offset,
                    &shape,
                    &values(t.clone(), k as usize, 99),
                );
                // A block of a smaller shape: the fill value over the rest.
                let pos = vec![1u64; dims.len()];
                let nominal: Vec<u64> = block.clone();
                let small: Vec<u64> = nominal.iter().map(|&b| b - 1).collect();
                let s: u64 = small.iter().product();
                let data = values(t.clone(), s as usize, 5);
                ds.write_block(&pos, &small, &data).unwrap();
                let start: Vec<u64> = pos.iter().zip(&block).map(|(p, b)| p * b).collect();
                let nb: u64 = nominal.iter().product();
                paste(
                    &mut m.data,
                    &dims,
                    &start,
                    &nominal,
                    &vec![0u8; nb as usize * t.size()],
                    t.size(),
                );
                paste(&mut m.data, &dims, &start, &small, &data, t.size());
                assert_eq!(ds.block_info(&pos), Some((0, nominal.clone(), nb)));
                // A deleted block reads as the fill value and stays.
                let first = vec![0u64; dims.len()];
                ds.delete_block(&first).unwrap();
                assert!(ds.block_exists(&first));
                paste(
                    &mut m.data,
                    &dims,
                    &zero,
                    &block,
                    &vec![0u8; nb as usize * t.size()],
                    t.size(),
                );
                let (got, _, found) = ds.read_block(&first).unwrap();
                assert!(found && got.iter().all(|&b| b == 0), "{}", m.path);
                models.push(m);
            }
        }

        // A shrinking resize; growing beyond the maximum is refused.
        {
            let m = models.iter_mut().find(|m| m.path == "raw/uint16").unwrap();
            let ds = c.open_dataset(&m.path).unwrap();
            let err = ds.set_dims(&[14, 7, 5]).unwrap_err();
            assert_eq!(err.0, n5::ffi::N5_ERR_UNSUPPORTED, "{err:?}");
            assert!(err.1.contains("maximum") && err.1.contains("13"), "{err:?}");
            ds.set_dims(&[10, 7, 4]).unwrap();
            assert_eq!(ds.dims(), vec![10, 7, 4]);
            let zero = [0u64; 3];
            m.data = cut(&m.data, &m.dims, &zero, &[10, 7, 4], 2);
            m.dims = vec![10, 7, 4];
            assert_eq!(ds.read(&zero, &m.dims).unwrap(), m.data);
        }

        // Chunks never written stay unallocated; gzip level -1 is 6.
        let ds = c
            .create_dataset(
                "sparse",
                &[40, 30],
                &[10, 10],
                DataType::U16,
                r#"{"type":"gzip","level":-1}"#,
            )
            .unwrap();
        let data = values(DataType::U16, 100, 3);
        ds.write(&[10, 20], &[10, 10], &data).unwrap();
        let mut m = Model {
            path: "sparse".into(),
            dims: vec![40, 30],
            block: vec![10, 10],
            max: vec![40, 30],
            t: DataType::U16,
            deflate: Some(6),
            data: vec![0u8; 40 * 30 * 2],
            absent: vec![vec![0, 0], vec![3, 2], vec![2, 1]],
        };
        paste(&mut m.data, &[40, 30], &[10, 20], &[10, 10], &data, 2);
        assert_eq!(ds.block_list(), json!([[1, 2]]));
        models.push(m);

        // An empty group becomes the dataset and keeps its attributes; a
        // dataset or a group with members at the path is refused.
        c.create_group("g/ds").unwrap();
        c.set_attributes("g/ds", r#"{"keep": 1}"#).unwrap();
        let ds = c
            .create_dataset("g/ds", &[6, 4], &[3, 8], DataType::U8, "")
            .unwrap();
        assert_eq!(
            ds.block_size(),
            vec![3, 4],
            "the chunk is clamped to the dimension"
        );
        let attrs = c.attributes("g/ds").unwrap();
        assert_eq!(attrs["keep"], json!(1));
        assert_eq!(attrs["dimensions"], json!([6, 4]));
        assert_eq!(attrs["compression"], json!({"type": "raw"}));
        groups.insert(
            "/g/ds".into(),
            json!({"attributes": {"keep": {"kind": "int64", "shape": [], "value": 1}},
                   "json_root": null, "absent": ["dimensions", "blockSize", "dataType", "compression"]}),
        );
        models.push(Model {
            path: "g/ds".into(),
            dims: vec![6, 4],
            block: vec![3, 4],
            max: vec![6, 4],
            t: DataType::U8,
            deflate: None,
            data: vec![0u8; 24],
            absent: vec![vec![0, 0], vec![1, 0]],
        });
        for (path, status) in [
            ("g/ds", n5::ffi::N5_ERR_ALREADY_EXISTS),
            ("a", n5::ffi::N5_ERR_ALREADY_EXISTS),
        ] {
            let e = c
                .create_dataset(path, &[4], &[2], DataType::U8, r#"{"type":"raw"}"#)
                .err()
                .unwrap();
            assert_eq!(e.0, status, "{path}: {e:?}");
        }
        for codec in ["zstd", "blosc", "bzip2", "xz", "lz4"] {
            let e = c
                .create_dataset(
                    "refused",
                    &[4],
                    &[2],
                    DataType::U8,
                    &format!(r#"{{"type":"{codec}"}}"#),
                )
                .err()
                .unwrap();
            assert_eq!(e.0, n5::ffi::N5_ERR_UNSUPPORTED, "{codec}: {e:?}");
            assert!(e.1.contains(codec), "{codec}: {e:?}");
        }
        let e = c
            .create_dataset_json(
                "refused",
                r#"{"dimensions":[4],"blockSize":[2],"dataType":"uint8","codecs":[]}"#,
            )
            .err()
            .unwrap();
        assert_eq!(e.0, n5::ffi::N5_ERR_UNSUPPORTED, "{e:?}");
        assert!(!c.exists("refused"));
        // The dataset document works too.
        let ds = c
            .create_dataset_json(
                "json",
                r#"{"dimensions":[5,3],"blockSize":[2,2],"dataType":"int32","compression":{"type":"gzip","level":1}}"#,
            )
            .unwrap();
        let data = values(DataType::I32, 15, 11);
        ds.write(&[0, 0], &[5, 3], &data).unwrap();
        models.push(Model {
            path: "json".into(),
            dims: vec![5, 3],
            block: vec![2, 2],
            max: vec![5, 3],
            t: DataType::I32,
            deflate: Some(1),
            data,
            absent: Vec::new(),
        });

        // The synthesized keys: equal values are accepted, others refused,
        // and none is stored.
        c.set_attributes(
            "json",
            r#"{"dataType": "int32", "dimensions": [5, 3], "x": 1}"#,
        )
        .unwrap();
        for doc in [r#"{"dataType": "int8"}"#, r#"{"blockSize": [1, 1]}"#] {
            let e = c.set_attributes("json", doc).unwrap_err();
            assert_eq!(e.0, n5::ffi::N5_ERR_UNSUPPORTED, "{doc}: {e:?}");
        }
        let e = c.remove_attribute("json", "compression").unwrap_err();
        assert_eq!(e.0, n5::ffi::N5_ERR_UNSUPPORTED, "{e:?}");
        groups.insert(
            "/json".into(),
            json!({"attributes": {"x": {"kind": "int64", "shape": [], "value": 1}},
                   "json_root": null, "absent": ["dimensions", "blockSize", "dataType", "compression"]}),
        );
    }
    {
        // Blocks all of the fill value leave unallocated chunks so when
        // write_empty_blocks is off.
        let c = C::open(&root, READ_WRITE, r#"{"write_empty_blocks": false}"#).unwrap();
        let ds = c.open_dataset("sparse").unwrap();
        ds.write(&[0, 0], &[20, 10], &vec![0u8; 20 * 10 * 2])
            .unwrap();
        ds.write_block(&[2, 0], &[10, 10], &[0u8; 200]).unwrap();
        assert_eq!(ds.block_list(), json!([[1, 2]]));
        let m = models.iter_mut().find(|m| m.path == "sparse").unwrap();
        m.absent.push(vec![1, 0]);
        let data = values(DataType::U16, 50, 21);
        ds.write(&[0, 25], &[10, 5], &data).unwrap();
        paste(&mut m.data, &[40, 30], &[0, 25], &[10, 5], &data, 2);
        assert_eq!(ds.block_list(), json!([[0, 2], [1, 2]]));
        // Read-only handles refuse every write.
        drop(ds);
        drop(c);
        let c = C::open(&root, READ, "{}").unwrap();
        let ds = c.open_dataset("sparse").unwrap();
        let read_only = n5::ffi::N5_ERR_READ_ONLY;
        assert_eq!(c.create_group("x").unwrap_err().0, read_only);
        assert_eq!(c.set_attributes("", r#"{"x":1}"#).unwrap_err().0, read_only);
        assert_eq!(
            ds.write(&[0, 0], &[1, 1], &[0, 0]).unwrap_err().0,
            read_only
        );
        assert_eq!(ds.delete_block(&[1, 2]).unwrap_err().0, read_only);
        assert_eq!(ds.set_dims(&[4, 4]).unwrap_err().0, read_only);
    }

    // h5py and h5dump read the file as the contract says.
    let mut datasets = Map::new();
    for (i, m) in models.iter().enumerate() {
        datasets.insert(
            format!("/{}", m.path),
            m.spec(&dir.join(&format!("{i}.bin"))),
        );
    }
    let spec = json!({
        "file": root,
        "h5dump": which("h5dump").map(|p| p.display().to_string()),
        "groups": groups,
        "datasets": datasets,
    });
    assert!(
        spec["h5dump"].is_string(),
        "h5dump (hdf5-tools) is not on PATH"
    );
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let out = Command::new(&python)
        .arg(script())
        .arg("check")
        .arg(&spec_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py and h5dump disagree with what libn5 wrote:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And libn5 reads back what it wrote.
    let c = C::open(&root, READ, r#"{"threads": 2}"#).unwrap();
    for m in &models {
        m.check(&c).unwrap();
    }
}

/// The datasets of `dir`'s files (written by `make`) read in the child of
/// `region_reads_of_decoded_chunks_never_call_h5dread`: (file, dataset,
/// whether its chunks are decoded in Rust).
const READ_PATHS: [(&str, &str, bool); 6] = [
    ("n5_layout.h5", "links/hard_to_raw/uint8", true),
    ("n5_layout.h5", "links/hard_to_raw/float64", true),
    ("bdv.h5", "t00000/s00/0/cells", true),
    ("thirdparty.h5", "fletcher_gzip", true),
    ("libn5.h5", "gzip", true),
    ("thirdparty.h5", "scaleoffset_int", false),
];

/// The child's part: region reads on two threads, counting `H5Dread`
/// calls (a process-wide count, so nothing else runs in the child).
fn reads_in_this_process(dir: &Path) {
    for (file, path, in_rust) in READ_PATHS {
        let root = dir.join(file).display().to_string();
        let c = C::open(&root, READ, r#"{"threads": 2}"#).unwrap();
        let ds = c.open_dataset(path).unwrap();
        let dims = ds.dims();
        let block = ds.block_size();
        let before = n5::format::hdf5::library_reads();
        let whole = ds.read(&vec![0; dims.len()], &dims).unwrap();
        // A region across blocks, and one block alone.
        let offset: Vec<u64> = block.iter().map(|b| b / 2).collect();
        let shape: Vec<u64> = dims.iter().zip(&offset).map(|(d, o)| d - o).collect();
        let part = ds.read(&offset, &shape).unwrap();
        assert_eq!(
            part,
            cut(&whole, &dims, &offset, &shape, ds.dtype().size()),
            "{file}/{path}"
        );
        let one = ds.read(&vec![0; dims.len()], &block).unwrap();
        assert_eq!(
            one.len(),
            block.iter().product::<u64>() as usize * ds.dtype().size()
        );
        let calls = n5::format::hdf5::library_reads() - before;
        if in_rust {
            assert_eq!(
                calls, 0,
                "{file}/{path}: region reads called H5Dread {calls} times"
            );
        } else {
            assert!(
                calls >= 3,
                "{file}/{path}: {calls} H5Dread calls, expected one per read"
            );
        }
        println!("{file}/{path}: {calls} H5Dread calls");
    }
}

#[test]
fn region_reads_of_decoded_chunks_never_call_h5dread() {
    let _serial = serial();
    const VAR: &str = "N5_HDF5_READS_DIR";
    if let Ok(dir) = std::env::var(VAR) {
        reads_in_this_process(Path::new(&dir));
        return;
    }
    let Some(python) = common::peer_python("region_reads_of_decoded_chunks_never_call_h5dread")
    else {
        return;
    };
    let dir = Scratch::new("hdf5-reads");
    make_files(&python, dir.path());
    {
        // A gzip dataset libn5 wrote (shuffle and deflate).
        let c = C::open(&dir.join("libn5.h5").display().to_string(), CREATE, "{}").unwrap();
        let ds = c
            .create_dataset(
                "gzip",
                &[70, 50, 9],
                &[16, 16, 4],
                DataType::U16,
                r#"{"type":"gzip"}"#,
            )
            .unwrap();
        ds.write(
            &[0, 0, 0],
            &[70, 50, 9],
            &values(DataType::U16, 70 * 50 * 9, 4),
        )
        .unwrap();
    }
    let out = common::child_test(
        "region_reads_of_decoded_chunks_never_call_h5dread",
        VAR,
        &dir.path().display().to_string(),
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("scaleoffset_int"),
        "the child failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Does what a reader does with the file at `root` through the C API: the
/// hierarchy, attributes, every dataset's metadata, whole data and blocks.
/// The first failure.
fn exercise(root: &str) -> Result<(), capi::Failure> {
    let c = C::open(root, READ, r#"{"threads": 2}"#)?;
    let _ = c.version();
    let mut stack = vec![String::new()];
    let mut visited = 0;
    while let Some(p) = stack.pop() {
        visited += 1;
        if visited > 200 {
            break;
        }
        c.attributes(&p)?;
        if !c.dataset_exists(&p) {
            for name in c.list(&p)?.as_array().unwrap() {
                stack.push(format!("{p}/{}", name.as_str().unwrap()));
            }
            continue;
        }
        let ds = match c.open_dataset(&p) {
            Err((s, _)) if s == n5::ffi::N5_ERR_UNSUPPORTED => continue,
            other => other?,
        };
        let _ = ds.metadata();
        let dims = ds.dims();
        let n: u64 = dims.iter().product();
        if n.saturating_mul(ds.dtype().size() as u64) <= 1 << 24 {
            ds.read(&vec![0; dims.len()], &dims)?;
        }
        let _ = ds.block_list();
        ds.read_block(&vec![0; dims.len()])?;
    }
    Ok(())
}

/// The child's part of `damaged_files_give_errors_not_crashes`: reads each
/// file named in the variable (one per line), printing a line before and
/// after, so the parent sees which one a crash happened in.
fn read_damaged(list: &str) {
    for line in list.lines() {
        println!("START {line}");
        match exercise(line) {
            Ok(()) => println!("OK {line}"),
            Err((status, message)) => {
                assert!(
                    [
                        n5::ffi::N5_ERR_INVALID_METADATA,
                        n5::ffi::N5_ERR_CODEC,
                        n5::ffi::N5_ERR_IO,
                        n5::ffi::N5_ERR_UNSUPPORTED,
                        n5::ffi::N5_ERR_NOT_FOUND,
                        n5::ffi::N5_ERR_JSON,
                    ]
                    .contains(&status),
                    "{line}: status {status}: {message}"
                );
                let name = Path::new(line).file_name().unwrap().to_string_lossy();
                assert!(
                    message.contains(&*name),
                    "{line}: the message names no file: {message}"
                );
                println!("ERR {status} {line}: {message}");
            }
        }
    }
}

/// The position of `needle` in `hay`, which holds it once.
fn find_once(hay: &[u8], needle: &[u8]) -> usize {
    let at: Vec<usize> = hay
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "{needle:?} found {} times", at.len());
    at[0]
}

#[test]
fn damaged_files_give_errors_not_crashes() {
    let _serial = serial();
    const VAR: &str = "N5_HDF5_DAMAGED";
    if let Ok(list) = std::env::var(VAR) {
        read_damaged(&list);
        return;
    }
    let dir = Scratch::new("hdf5-damaged");
    // A valid file libn5 writes: groups, attributes, a raw and a gzip
    // dataset.
    let valid = dir.join("valid.h5");
    let pattern: Vec<u8> = (0..16u8).map(|i| i * 13 + 7).collect();
    {
        let c = C::open(&valid.display().to_string(), CREATE, "{}").unwrap();
        c.create_group("g/h").unwrap();
        c.set_attributes("g", r#"{"a":[1,2,3],"s":"text","o":{"x":[1.5]}}"#)
            .unwrap();
        let raw = c
            .create_dataset("g/raw", &[64], &[16], DataType::U8, "")
            .unwrap();
        let mut data = values(DataType::U8, 64, 8);
        data[..16].copy_from_slice(&pattern);
        raw.write(&[0], &[64], &data).unwrap();
        let gzip = c
            .create_dataset(
                "g/gzip",
                &[30, 20],
                &[8, 8],
                DataType::U16,
                r#"{"type":"gzip"}"#,
            )
            .unwrap();
        gzip.write(&[0, 0], &[30, 20], &values(DataType::U16, 600, 3))
            .unwrap();
    }
    assert_eq!(exercise(&valid.display().to_string()), Ok(()));
    let bytes = std::fs::read(&valid).unwrap();
    // (file, the status reading it must end in, if one is certain)
    let mut files: Vec<(PathBuf, Option<n5_status>)> = Vec::new();
    let add = |files: &mut Vec<(PathBuf, Option<n5_status>)>,
               name: &str,
               content: &[u8],
               status: Option<n5_status>| {
        let p = dir.join(name);
        std::fs::write(&p, content).unwrap();
        files.push((p, status));
    };
    for cut_at in [
        0usize,
        8,
        40,
        100,
        400,
        1000,
        2000,
        bytes.len() / 2,
        bytes.len() - 100,
    ] {
        add(
            &mut files,
            &format!("cut{cut_at}.h5"),
            &bytes[..cut_at],
            None,
        );
    }
    // The first chunk of the raw dataset said to be far beyond the file's
    // end: its address in the chunk index changed.
    let chunk = find_once(&bytes, &pattern) as u64;
    let entry = find_once(&bytes, &chunk.to_le_bytes());
    let mut outside = bytes.clone();
    outside[entry..entry + 8].copy_from_slice(&(chunk + (1 << 40)).to_le_bytes());
    add(
        &mut files,
        "outside.h5",
        &outside,
        Some(n5::ffi::N5_ERR_INVALID_METADATA),
    );
    // Cyclic object headers and dense links and attributes whose name
    // index counts more than it holds (from the script), and damaged chunks
    // whose checksum or deflate stream fails.
    if let Some(python) = common::peer_python("damaged_files_give_errors_not_crashes") {
        let made = dir.join("made");
        let manifest = make_files(&python, &made);
        for d in manifest["damaged"].as_array().unwrap() {
            files.push((PathBuf::from(d["path"].as_str().unwrap()), None));
        }
        let thirdparty = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with("thirdparty.h5"))
            .unwrap();
        let original = std::fs::read(thirdparty["path"].as_str().unwrap()).unwrap();
        for name in ["fletcher", "fill"] {
            let d = thirdparty["datasets"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["path"] == format!("/{name}"))
                .unwrap();
            let first = &d["chunk_list"][0];
            let at =
                (first["addr"].as_u64().unwrap() + first["size"].as_u64().unwrap() / 2) as usize;
            let mut damaged = original.clone();
            damaged[at] ^= 0x5a;
            add(
                &mut files,
                &format!("chunk_{name}.h5"),
                &damaged,
                Some(n5::ffi::N5_ERR_CODEC),
            );
        }
    }
    let names: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
    let out = common::child_test(
        "damaged_files_give_errors_not_crashes",
        VAR,
        &names.join("\n"),
    )
    .arg("--test-threads=1")
    // glibc fills what malloc returns with this byte: libhdf5 using memory
    // it never initialised then fails the same way every run.
    .env("MALLOC_PERTURB_", "165")
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let started = stdout.lines().filter(|l| l.contains("START ")).count();
    assert!(
        out.status.success() && started == files.len(),
        "the child stopped ({}) after {started} of {} files:\n{stdout}{}",
        out.status,
        files.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
    let mut errors = 0;
    for (path, status) in &files {
        let shown = path.display().to_string();
        let line = stdout
            .lines()
            .find(|l| {
                (l.starts_with("OK ") || l.starts_with("ERR ")) && l.contains(&format!(" {shown}"))
            })
            .unwrap_or_else(|| panic!("no outcome for {shown}:\n{stdout}"));
        errors += line.starts_with("ERR ") as usize;
        if let Some(status) = status {
            assert!(
                line.starts_with(&format!("ERR {status} ")),
                "{shown}: expected status {status}: {line}"
            );
        }
    }
    assert!(
        errors * 2 > files.len(),
        "too few damaged files were noticed:\n{stdout}"
    );
}

#[test]
fn locations_modes_and_options() {
    let _serial = serial();
    let dir = Scratch::new("hdf5-open");
    let at = |name: &str| dir.join(name).display().to_string();
    // Created with missing parents, found again by the signature whatever
    // the name; an existing file opened as it is, never truncated.
    for (root, options) in [
        (at("x/y/new.h5"), "{}"),
        (at("plain"), r#"{"format": "hdf5"}"#),
        (format!("h5:{}", at("vol.bin")), "{}"),
        (format!("hdf5:file://{}", at("url.data")), "{}"),
    ] {
        let c = C::open(&root, CREATE, options).unwrap_or_else(|e| panic!("{root}: {e:?}"));
        assert_eq!(c.format(), "hdf5", "{root}");
        c.set_attributes("", r#"{"k": 1}"#).unwrap();
        drop(c);
        let plain = root
            .trim_start_matches("h5:")
            .trim_start_matches("hdf5:file://");
        for mode in [READ, READ_WRITE, CREATE] {
            let c = C::open(plain, mode, "{}").unwrap_or_else(|e| panic!("{plain}: {e:?}"));
            assert_eq!(c.format(), "hdf5");
            assert_eq!(c.attribute("", "k").unwrap(), json!(1), "{plain}");
        }
    }
    // A root `n5` attribute of any version is never a reason to refuse.
    C::open(&at("plain"), READ_WRITE, "{}")
        .unwrap()
        .set_attributes("", r#"{"n5": "9.1.0"}"#)
        .unwrap();
    assert_eq!(
        C::open(&at("plain"), READ, "{}").unwrap().version(),
        "9.1.0"
    );

    let status = |root: &str, mode: i32, options: &str| -> capi::Failure {
        match C::open(root, mode, options) {
            Ok(c) => panic!("{root}: opened as {}", c.format()),
            Err(e) => e,
        }
    };
    // Missing files.
    for mode in [READ, READ_WRITE] {
        let e = status(&at("missing.h5"), mode, "{}");
        assert_eq!(e.0, n5::ffi::N5_ERR_NOT_FOUND, "{e:?}");
    }
    // Regular files without the signature chosen as HDF5.
    std::fs::write(dir.join("notes.h5"), b"not an HDF5 file at all").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not an HDF5 file at all").unwrap();
    for (root, options) in [
        (at("notes.h5"), "{}"),
        (format!("h5:{}", at("notes.txt")), "{}"),
        (at("notes.txt"), r#"{"format": "hdf5"}"#),
    ] {
        for mode in [READ, READ_WRITE, CREATE] {
            let e = status(&root, mode, options);
            assert_eq!(e.0, n5::ffi::N5_ERR_INVALID_METADATA, "{root}: {e:?}");
            assert!(e.1.contains("not an HDF5 file"), "{e:?}");
        }
    }
    assert_eq!(
        std::fs::read(dir.join("notes.h5")).unwrap(),
        b"not an HDF5 file at all"
    );
    // Remote locations chosen as HDF5, before any request.
    for root in [
        "s3://bucket/data.h5",
        "h5:gs://bucket/data",
        "hdf5:https://example.org/v.bin",
    ] {
        let e = status(root, READ, "{}");
        assert_eq!(e.0, n5::ffi::N5_ERR_UNSUPPORTED, "{root}: {e:?}");
        assert!(e.1.contains("HDF5 files are local only"), "{e:?}");
    }
    // Directories decide by their markers, whatever their name.
    let n5dir = dir.join("dir.h5");
    std::fs::create_dir_all(&n5dir).unwrap();
    std::fs::write(n5dir.join("attributes.json"), br#"{"n5": "4.0.0"}"#).unwrap();
    assert_eq!(
        C::open(&at("dir.h5"), READ, r#"{"format": "hdf5"}"#)
            .unwrap()
            .format(),
        "n5"
    );
    std::fs::create_dir_all(dir.join("empty.h5")).unwrap();
    let e = status(&at("empty.h5"), CREATE, "{}");
    assert_eq!(e.0, n5::ffi::N5_ERR_INVALID_ARGUMENT, "{e:?}");
    // Options: the hdf5 section is checked, other unknown keys stay errors.
    for options in [
        r#"{"hdf5": {"chunks": [1]}}"#,
        r#"{"hdf5": {"default_block_size": [-1]}}"#,
        r#"{"hdf5": []}"#,
        r#"{"hdf": {}}"#,
    ] {
        let e = status(&at("x/y/new.h5"), READ, options);
        assert_eq!(e.0, n5::ffi::N5_ERR_INVALID_ARGUMENT, "{options}: {e:?}");
    }
    C::open(&at("x/y/new.h5"), READ, r#"{"hdf5": {"default_block_size": [8]}, "io_concurrency": 2, "write_empty_blocks": false}"#).unwrap();

    // No temporaries: the file's directory is left alone.
    let stale = dir.join("x/y/.n5tmp.other");
    std::fs::write(&stale, b"x").unwrap();
    let c = C::open(&at("x/y/new.h5"), READ_WRITE, "{}").unwrap();
    let (mut removed, mut bytes) = (9u64, 9u64);
    capi::ok(n5::ffi::container::n5_container_remove_stale_temporaries(
        c.0,
        0,
        &mut removed,
        &mut bytes,
    ))
    .unwrap();
    assert_eq!((removed, bytes), (0, 0));
    assert!(stale.exists());

    // N5's own blocks do not exist in HDF5; deep listings work as for N5.
    c.create_group("deep/er").unwrap();
    let ds = c
        .create_dataset("deep/er/d", &[4, 4], &[2, 2], DataType::U8, "")
        .unwrap();
    let e = capi::ok(n5::ffi::block::n5_block_write_varlength(
        ds.0,
        2,
        [0u64, 0].as_ptr(),
        [2u64, 2].as_ptr(),
        DataType::U8.code(),
        [0u8; 3].as_ptr().cast(),
        3,
    ))
    .unwrap_err();
    assert_eq!(e.0, n5::ffi::N5_ERR_UNSUPPORTED, "{e:?}");
    let mut len = 0usize;
    capi::ok(n5::ffi::container::n5_list_recursive(
        c.0,
        c"deep".as_ptr(),
        std::ptr::null_mut(),
        0,
        &mut len,
    ))
    .unwrap();
    let mut buf = vec![0u8; len + 1];
    capi::ok(n5::ffi::container::n5_list_recursive(
        c.0,
        c"deep".as_ptr(),
        buf.as_mut_ptr().cast(),
        buf.len(),
        &mut len,
    ))
    .unwrap();
    assert_eq!(&buf[..len], br#"["er","er/d"]"#);
    drop(ds);
    drop(c);

    // The Rust API: the same through Container.
    let c = Container::open(at("x/y/new.h5"), Mode::Read).unwrap();
    assert_eq!(c.format(), n5::format::Format::Hdf5);
    assert_eq!(c.format().name(), "hdf5");
    assert_eq!(c.get_attribute("", "k").unwrap(), Some(json!(1)));
    assert_eq!(
        c.create_group("g").unwrap_err().kind(),
        n5::ErrorKind::ReadOnly
    );
    // libhdf5 opens a file this process holds read-only for reading only.
    let e = Container::open(at("x/y/new.h5"), Mode::ReadWrite).unwrap_err();
    assert!(e.message().contains("read-only"), "{e}");
    drop(c);
    let c = Container::open(at("x/y/new.h5"), Mode::ReadWrite).unwrap();
    let strings =
        n5::DatasetAttributes::new(vec![4], vec![2], DataType::String, n5::Compression::Raw)
            .unwrap();
    let e = c.create_dataset("s", strings).unwrap_err();
    assert_eq!(e.kind(), n5::ErrorKind::Unsupported, "{e}");
}
