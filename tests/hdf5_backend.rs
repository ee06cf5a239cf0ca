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
            let (p, z) = (cs(path), cs(compression));
            let d = n5_dataset_create(
                self.0,
                p.as_ptr(),
                dims.len(),
                dims.as_ptr(),
                block.as_ptr(),
                dtype.code(),
                z.as_ptr(),
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
                 "layout": d["layout"], "filters": filters}});
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
    let Some(python) = common::peer_python("files_h5py_wrote_read_as_h5py_reads_them") else {
        return;
    };
    let dir = Scratch::new("hdf5-read");
    let manifest = make_files(&python, dir.path());
    let mut rng = Rng(0x5eed_1234);
    let mut bad = Vec::new();
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
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
