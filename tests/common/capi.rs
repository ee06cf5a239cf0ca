//! The C API as a C program uses it, for the tests of links and
//! references: containers and datasets as handles freed on drop, each call's
//! status and, on failure, the thread's last error message; text outputs
//! read with a size query first, as the header's convention says.

use std::ffi::{c_char, CString};

use n5::ffi::container::*;
use n5::ffi::dataset::*;
use n5::ffi::links::*;
use n5::ffi::region::*;
use n5::ffi::{n5_container, n5_dataset, n5_status, N5_ERR_BUFFER_TOO_SMALL, N5_OK};
use serde_json::Value;

/// A failed call: its status and message.
pub type Failure = (n5_status, String);

/// The result of a call.
pub type Res<T> = Result<T, Failure>;

/// The message of the calling thread's last failed call.
pub fn message() -> String {
    // SAFETY: the library returns a NUL-terminated string it owns, valid
    // until the thread's next call.
    unsafe { std::ffi::CStr::from_ptr(n5::ffi::status::n5_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// `status` as a result.
pub fn ok(status: n5_status) -> Res<()> {
    if status == N5_OK {
        Ok(())
    } else {
        Err((status, message()))
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A text output: a size query, then the call with a buffer of that size
/// plus the NUL; a buffer one byte short is refused with the length kept.
pub fn text(call: impl Fn(*mut c_char, usize, *mut usize) -> n5_status) -> Res<String> {
    let mut len = 0usize;
    ok(call(std::ptr::null_mut(), 0, &mut len))?;
    if len > 0 {
        let mut short = vec![0u8; len];
        let mut got = 0usize;
        assert_eq!(
            call(short.as_mut_ptr().cast(), len, &mut got),
            N5_ERR_BUFFER_TOO_SMALL
        );
        assert_eq!(got, len);
    }
    let mut buf = vec![0u8; len + 1];
    let mut got = 0usize;
    ok(call(buf.as_mut_ptr().cast(), len + 1, &mut got))?;
    assert_eq!(got, len);
    assert_eq!(buf[len], 0, "the text ends with a NUL");
    Ok(String::from_utf8(buf[..len].to_vec()).unwrap())
}

/// A JSON text output.
pub fn json(call: impl Fn(*mut c_char, usize, *mut usize) -> n5_status) -> Res<Value> {
    let t = text(call)?;
    Ok(serde_json::from_str(&t).unwrap_or_else(|e| panic!("not JSON ({e}): {t}")))
}

/// An open container handle.
#[derive(Debug)]
pub struct C(pub *mut n5_container);

// SAFETY: container handles may be used from any thread (the header's
// thread-safety rules); the tests use each from one at a time.
unsafe impl Send for C {}

impl Drop for C {
    fn drop(&mut self) {
        n5_container_free(self.0);
    }
}

impl C {
    /// `n5_container_open(location, mode, options_json)`.
    pub fn open(location: &str, mode: i32, options: &str) -> Res<C> {
        let (l, o) = (cstr(location), cstr(options));
        let c = n5_container_open(l.as_ptr(), mode, o.as_ptr());
        if c.is_null() {
            Err((n5::ffi::status::n5_last_error_code(), message()))
        } else {
            Ok(C(c))
        }
    }

    /// `n5_container_root`.
    pub fn root(&self) -> String {
        text(|b, n, l| n5_container_root(self.0, b, n, l)).unwrap()
    }

    /// `n5_links_list`.
    pub fn links(&self, group: &str) -> Res<Value> {
        let g = cstr(group);
        json(|b, n, l| n5_links_list(self.0, g.as_ptr(), b, n, l))
    }

    /// `n5_link_resolve`.
    pub fn resolve(&self, path: &str) -> Res<Value> {
        let p = cstr(path);
        json(|b, n, l| n5_link_resolve(self.0, p.as_ptr(), b, n, l))
    }

    /// `n5_link_create`.
    pub fn create_link(&self, group: &str, name: &str, source: &str, target: &str) -> Res<()> {
        let (g, n, s, t) = (cstr(group), cstr(name), cstr(source), cstr(target));
        ok(n5_link_create(
            self.0,
            g.as_ptr(),
            n.as_ptr(),
            s.as_ptr(),
            t.as_ptr(),
        ))
    }

    /// `n5_reference_resolve`.
    pub fn reference(&self, owner: &str, reference: &str) -> Res<Value> {
        let (o, r) = (cstr(owner), cstr(reference));
        json(|b, n, l| n5_reference_resolve(self.0, o.as_ptr(), r.as_ptr(), b, n, l))
    }

    /// `n5_list`.
    pub fn list(&self, path: &str) -> Res<Vec<String>> {
        let p = cstr(path);
        let v = json(|b, n, l| n5_list(self.0, p.as_ptr(), b, n, l))?;
        Ok(serde_json::from_value(v).unwrap())
    }

    /// `n5_list_recursive`.
    pub fn list_recursive(&self, path: &str) -> Res<Vec<String>> {
        let p = cstr(path);
        let v = json(|b, n, l| n5_list_recursive(self.0, p.as_ptr(), b, n, l))?;
        Ok(serde_json::from_value(v).unwrap())
    }

    /// `n5_exists`.
    pub fn exists(&self, path: &str) -> Res<bool> {
        let p = cstr(path);
        let mut out = -1;
        ok(n5_exists(self.0, p.as_ptr(), &mut out))?;
        Ok(out == 1)
    }

    /// `n5_dataset_exists`.
    pub fn dataset_exists(&self, path: &str) -> Res<bool> {
        let p = cstr(path);
        let mut out = -1;
        ok(n5_dataset_exists(self.0, p.as_ptr(), &mut out))?;
        Ok(out == 1)
    }

    /// `n5_attributes_get`.
    pub fn attributes(&self, path: &str) -> Res<Value> {
        let p = cstr(path);
        json(|b, n, l| n5_attributes_get(self.0, p.as_ptr(), b, n, l))
    }

    /// `n5_attribute_get`.
    pub fn attribute(&self, path: &str, key: &str) -> Res<Value> {
        let (p, k) = (cstr(path), cstr(key));
        json(|b, n, l| n5_attribute_get(self.0, p.as_ptr(), k.as_ptr(), b, n, l))
    }

    /// `n5_attributes_set`.
    pub fn set_attributes(&self, path: &str, json: &Value) -> Res<()> {
        let (p, j) = (cstr(path), cstr(&json.to_string()));
        ok(n5_attributes_set(self.0, p.as_ptr(), j.as_ptr()))
    }

    /// `n5_attribute_set` of one key (a JSON value).
    pub fn set_attribute(&self, path: &str, key: &str, value: &Value) -> Res<()> {
        let (p, k, v) = (cstr(path), cstr(key), cstr(&value.to_string()));
        ok(n5_attribute_set(self.0, p.as_ptr(), k.as_ptr(), v.as_ptr()))
    }

    /// `n5_dataset_create_json` from the format's own metadata document.
    pub fn create_dataset_json(&self, path: &str, metadata: &Value) -> Res<D> {
        let (p, m) = (cstr(path), cstr(&metadata.to_string()));
        let d = n5_dataset_create_json(self.0, p.as_ptr(), m.as_ptr());
        if d.is_null() {
            Err((n5::ffi::status::n5_last_error_code(), message()))
        } else {
            Ok(D(d))
        }
    }

    /// `n5_group_create`.
    pub fn create_group(&self, path: &str) -> Res<()> {
        let p = cstr(path);
        ok(n5_group_create(self.0, p.as_ptr()))
    }

    /// `n5_remove`.
    pub fn remove(&self, path: &str) -> Res<()> {
        let p = cstr(path);
        ok(n5_remove(self.0, p.as_ptr()))
    }

    /// `n5_dataset_open`.
    pub fn open_dataset(&self, path: &str) -> Res<D> {
        let p = cstr(path);
        let d = n5_dataset_open(self.0, p.as_ptr());
        if d.is_null() {
            Err((n5::ffi::status::n5_last_error_code(), message()))
        } else {
            Ok(D(d))
        }
    }

    /// `n5_dataset_create` of a small float64 dataset with raw blocks.
    pub fn create_dataset(&self, path: &str, dims: &[u64]) -> Res<D> {
        let p = cstr(path);
        let d = n5_dataset_create(
            self.0,
            p.as_ptr(),
            dims.len(),
            dims.as_ptr(),
            dims.as_ptr(),
            n5::ffi::N5_DTYPE_FLOAT64,
            std::ptr::null(),
        );
        if d.is_null() {
            Err((n5::ffi::status::n5_last_error_code(), message()))
        } else {
            Ok(D(d))
        }
    }
}

/// An open dataset handle.
#[derive(Debug)]
pub struct D(pub *mut n5_dataset);

impl Drop for D {
    fn drop(&mut self) {
        n5_dataset_free(self.0);
    }
}

impl D {
    /// `n5_dataset_path`.
    pub fn path(&self) -> String {
        text(|b, n, l| n5_dataset_path(self.0, b, n, l)).unwrap()
    }

    /// The dataset's dtype and dimensions.
    pub fn shape(&self) -> (i32, Vec<u64>) {
        let (mut ndim, mut dtype) = (0usize, 0);
        ok(n5_dataset_ndim(self.0, &mut ndim)).unwrap();
        ok(n5_dataset_dtype(self.0, &mut dtype)).unwrap();
        let mut dims = vec![0u64; ndim];
        ok(n5_dataset_dimensions(self.0, ndim, dims.as_mut_ptr())).unwrap();
        (dtype, dims)
    }

    /// `n5_dataset_metadata`: the format's own document.
    pub fn metadata(&self) -> Value {
        json(|b, n, l| n5_dataset_metadata(self.0, b, n, l)).unwrap()
    }

    /// `n5_dataset_dtype_json`.
    pub fn dtype_json(&self) -> Value {
        json(|b, n, l| n5_dataset_dtype_json(self.0, b, n, l)).unwrap()
    }

    /// `n5_dataset_element_size`.
    pub fn element_size(&self) -> usize {
        let mut size = usize::MAX;
        ok(n5_dataset_element_size(self.0, &mut size)).unwrap();
        size
    }

    /// `n5_region_read_json` of the whole dataset.
    pub fn read_json(&self) -> Res<Value> {
        let (_, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        json(|b, n, l| {
            n5_region_read_json(self.0, dims.len(), offset.as_ptr(), dims.as_ptr(), b, n, l)
        })
    }

    /// `n5_region_read_strings` of the whole dataset, unpacked.
    pub fn read_strings(&self) -> Res<Vec<String>> {
        let (_, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        let (o, s) = (offset.as_ptr(), dims.as_ptr());
        let mut len = 0usize;
        ok(n5_region_read_strings(
            self.0,
            dims.len(),
            o,
            s,
            std::ptr::null_mut(),
            0,
            &mut len,
        ))?;
        let mut buf = vec![0u8; len];
        let mut got = 0usize;
        ok(n5_region_read_strings(
            self.0,
            dims.len(),
            o,
            s,
            buf.as_mut_ptr().cast(),
            len,
            &mut got,
        ))?;
        assert_eq!(got, len);
        let mut out: Vec<String> = buf
            .split(|&b| b == 0)
            .map(|s| String::from_utf8(s.to_vec()).unwrap())
            .collect();
        // Each string ends with a NUL: the piece after the last is empty.
        assert_eq!(out.pop().as_deref(), Some(""));
        Ok(out)
    }

    /// `n5_region_write_strings` of the whole dataset.
    pub fn write_strings(&self, strings: &[String]) -> Res<()> {
        let (_, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        let mut packed = Vec::new();
        for s in strings {
            packed.extend_from_slice(s.as_bytes());
            packed.push(0);
        }
        ok(n5_region_write_strings(
            self.0,
            dims.len(),
            offset.as_ptr(),
            dims.as_ptr(),
            packed.as_ptr().cast(),
            packed.len(),
        ))
    }

    /// `n5_region_read_bytes` of the whole dataset: the bytes and lengths.
    pub fn read_bytes(&self) -> Res<(Vec<u8>, Vec<u64>)> {
        let (_, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        let count = dims.iter().product::<u64>() as usize;
        let mut lengths = vec![0u64; count];
        let mut len = 0usize;
        ok(n5_region_read_bytes(
            self.0,
            dims.len(),
            offset.as_ptr(),
            dims.as_ptr(),
            std::ptr::null_mut(),
            0,
            &mut len,
            lengths.as_mut_ptr(),
            count,
        ))?;
        let mut buf = vec![0u8; len];
        ok(n5_region_read_bytes(
            self.0,
            dims.len(),
            offset.as_ptr(),
            dims.as_ptr(),
            buf.as_mut_ptr().cast(),
            len,
            &mut len,
            lengths.as_mut_ptr(),
            count,
        ))?;
        Ok((buf, lengths))
    }

    /// `n5_region_write_bytes` of the whole dataset.
    pub fn write_bytes(&self, data: &[u8], lengths: &[u64]) -> Res<()> {
        let (_, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        ok(n5_region_write_bytes(
            self.0,
            dims.len(),
            offset.as_ptr(),
            dims.as_ptr(),
            data.as_ptr().cast(),
            data.len(),
            lengths.as_ptr(),
            lengths.len(),
        ))
    }

    /// The whole dataset, `n5_region_read` (native byte order).
    pub fn read_all(&self) -> Res<Vec<u8>> {
        let (dtype, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        let len = dims.iter().product::<u64>() as usize * self.element_size();
        let mut buf = vec![0u8; len];
        ok(n5_region_read(
            self.0,
            dims.len(),
            offset.as_ptr(),
            dims.as_ptr(),
            dtype,
            buf.as_mut_ptr().cast(),
            len,
        ))?;
        Ok(buf)
    }

    /// `n5_region_write` of the whole dataset.
    pub fn write_all(&self, data: &[u8]) -> Res<()> {
        let (dtype, dims) = self.shape();
        let offset = vec![0u64; dims.len()];
        ok(n5_region_write(
            self.0,
            dims.len(),
            offset.as_ptr(),
            dims.as_ptr(),
            dtype,
            data.as_ptr().cast(),
            data.len(),
        ))
    }
}
