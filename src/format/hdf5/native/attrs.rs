//! Attributes of HDF5 groups and datasets as N5's JSON attributes, the
//! mapping of the design's B4.
//!
//! Reading: the JSON object in the string attribute `N5_JSON_ROOT` (if
//! any), overlaid by every other attribute: integers exactly, float32 and
//! float64 as the shortest decimal that reads back as the same value,
//! always with a fraction or exponent (NaN and ±inf as the strings `"NaN"`,
//! `"Infinity"`, `"-Infinity"`), enums of exactly FALSE = 0 and TRUE = 1 as
//! booleans, strings (fixed or variable length, ASCII or UTF-8, padding
//! removed) as strings, never parsed as JSON; arrays nested in C order; a
//! null dataspace as `null`. Compound, reference, opaque, other enum,
//! variable-length sequence and array types are left out (reading one by
//! name is [`ErrorKind::Unsupported`]).
//!
//! Writing, per top-level key: booleans as scalar enums (int8 base,
//! FALSE = 0, TRUE = 1), integers as int64 (uint64 above int64), numbers
//! with a fraction or exponent as float64, strings as variable-length UTF-8,
//! non-empty arrays of only one of booleans, int64 integers, floats or
//! strings as 1-D attributes of that kind; everything else is a member of
//! `N5_JSON_ROOT` (a compact JSON object in a scalar variable-length UTF-8
//! string, numbers kept exactly, deleted when empty). A key is stored in
//! one place: storing it natively removes it from `N5_JSON_ROOT`, and the
//! reverse.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};

use hdf5_metno::globals::{
    H5T_C_S1, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, H5T_NATIVE_FLOAT, H5T_NATIVE_INT64,
    H5T_NATIVE_INT8, H5T_NATIVE_UINT64, H5T_STD_I64LE, H5T_STD_U64LE,
};
use serde_json::{Map, Number, Value};

use super::sys;
use super::sys::h5::hsize_t;
use super::sys::h5i::hid_t;
use super::sys::h5p::H5P_DEFAULT;
use super::sys::h5s::H5S_class_t;
use super::sys::h5t::{H5T_class_t, H5T_cset_t, H5T_direction_t, H5T_sign_t, H5T_str_t};
use super::{
    absolute, check, check_id, check_tri, close, components, cstring, failed, locked,
    take_h5_string, File, FileInner, Hid, Resolved,
};
use crate::error::{Error, ErrorKind, Result};

/// The string attribute that holds the JSON attributes HDF5 attributes
/// cannot (n5-hdf5's name).
pub(crate) const JSON_ROOT: &str = "N5_JSON_ROOT";

/// One attribute, read.
enum Read {
    /// Its JSON value.
    Value(Value),
    /// Left out of the JSON attributes; says which HDF5 type it has.
    Unsupported(String),
}

/// The names of the attributes of the object `obj`, sorted by bytes
/// (libhdf5's name order). They are listed in the order libhdf5 stores
/// them, and sorted here: libhdf5 1.10 answers any other order of dense
/// attribute storage from a table it sizes by the name B-tree's record
/// count and fills by walking the tree, and sorts the empty entries it
/// never filled (a crash) when a damaged tree holds fewer records than it
/// counts.
fn attribute_names(obj: hid_t, context: &str) -> Result<Vec<CString>> {
    unsafe extern "C" fn collect(
        _location: hid_t,
        name: *const c_char,
        _info: *const sys::h5a::H5A_info_t,
        data: *mut c_void,
    ) -> sys::h5::herr_t {
        let result = std::panic::catch_unwind(|| {
            // SAFETY: `data` is the `Vec<CString>` passed to H5Aiterate2
            // below and `name` a NUL-terminated string libhdf5 owns for
            // the duration of the callback.
            unsafe {
                let names = &mut *data.cast::<Vec<CString>>();
                names.push(CStr::from_ptr(name).to_owned());
            }
        });
        if result.is_ok() {
            0
        } else {
            -1
        }
    }
    let mut names: Vec<CString> = Vec::new();
    let mut index: hsize_t = 0;
    // SAFETY: `obj` is an open object; the callback only pushes to `names`,
    // which outlives the call; under the lock.
    let ret = locked(|| unsafe {
        sys::h5a::H5Aiterate2(
            obj,
            sys::h5::H5_index_t::H5_INDEX_NAME,
            sys::h5::H5_iter_order_t::H5_ITER_NATIVE,
            &mut index,
            Some(collect),
            (&mut names as *mut Vec<CString>).cast(),
        )
    });
    check(
        ret,
        ErrorKind::InvalidMetadata,
        context,
        "listing the attributes",
    )?;
    names.sort_unstable();
    Ok(names)
}

/// A float as JSON: the shortest decimal that reads back as the same
/// value (Rust's `Debug` form, which always has a fraction or an
/// exponent), or the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float_json(shortest: String, value: f64) -> Value {
    if value.is_nan() {
        Value::String("NaN".into())
    } else if value.is_infinite() {
        Value::String(if value > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        match shortest.parse::<Number>() {
            Ok(n) => Value::Number(n),
            Err(_) => Value::String(shortest),
        }
    }
}

/// `values` (in C order) nested as arrays of the shape `dims`; a scalar
/// (no dims) is its one value.
fn nest(values: &mut std::vec::IntoIter<Value>, dims: &[u64]) -> Value {
    match dims.split_first() {
        None => values.next().unwrap_or(Value::Null),
        Some((&n, rest)) => Value::Array((0..n).map(|_| nest(values, rest)).collect()),
    }
}

/// Reads a string's bytes as text (invalid UTF-8 replaced).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Frees the variable-length data libhdf5 allocated in `buf` when it read
/// data of type `mem_type` and dataspace `space`.
///
/// # Safety
/// `buf` holds what a successful read of that type and space wrote.
unsafe fn reclaim(mem_type: hid_t, space: hid_t, buf: *mut c_void) {
    #[cfg(not(n5_hdf5_1_12))]
    // SAFETY: as the caller promises.
    unsafe {
        sys::h5d::H5Dvlen_reclaim(mem_type, space, H5P_DEFAULT, buf);
    }
    #[cfg(n5_hdf5_1_12)]
    // SAFETY: as the caller promises.
    unsafe {
        sys::h5t::H5Treclaim(mem_type, space, H5P_DEFAULT, buf);
    }
}

/// Reads the attribute `name` of the object `obj`. Call under the lock.
fn read_attribute(file: &FileInner, obj: hid_t, name: &CStr, context: &str) -> Result<Read> {
    let shown = text(name.to_bytes());
    let what = |w: &str| format!("{w} of attribute '{shown}'");
    let md = ErrorKind::InvalidMetadata;
    // SAFETY (every block below): `obj` is an open object and the ids used
    // are the open ones created here; buffers have the sizes computed from
    // the dataspace and type; all under the lock the caller holds.
    let attr = check_id(
        unsafe { sys::h5a::H5Aopen(obj, name.as_ptr(), H5P_DEFAULT) },
        close::attribute,
        md,
        context,
        &what("opening"),
    )?;
    let space = check_id(
        unsafe { sys::h5a::H5Aget_space(attr.id()) },
        close::space,
        md,
        context,
        &what("reading the dataspace"),
    )?;
    let ftype = check_id(
        unsafe { sys::h5a::H5Aget_type(attr.id()) },
        close::datatype,
        md,
        context,
        &what("reading the datatype"),
    )?;
    let dims: Vec<u64> = match unsafe { sys::h5s::H5Sget_simple_extent_type(space.id()) } {
        H5S_class_t::H5S_NULL => return Ok(Read::Value(Value::Null)),
        H5S_class_t::H5S_SCALAR => Vec::new(),
        H5S_class_t::H5S_SIMPLE => {
            let rank = unsafe { sys::h5s::H5Sget_simple_extent_ndims(space.id()) };
            if rank < 0 {
                return Err(failed(md, context, &what("reading the rank")));
            }
            let mut dims = vec![0 as hsize_t; rank as usize];
            let ret = unsafe {
                sys::h5s::H5Sget_simple_extent_dims(
                    space.id(),
                    dims.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            if ret < 0 {
                return Err(failed(md, context, &what("reading the dimensions")));
            }
            dims
        }
        _ => {
            return Err(Error::invalid_metadata(format!(
                "{context}: {}: not a valid dataspace",
                what("the dataspace")
            )))
        }
    };
    let count = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let class = unsafe { sys::h5t::H5Tget_class(ftype.id()) };
    let size = unsafe { sys::h5t::H5Tget_size(ftype.id()) } as u64;
    // The values are in the file: an attribute that claims more than the
    // file holds is damaged (and would make this allocate without bound).
    let in_file = file.size()?;
    // Variable-length elements are at least one byte in the file (their
    // in-memory size says nothing about it); fixed ones their size.
    // SAFETY: `ftype` is an open datatype; under the caller's lock.
    let variable = class == H5T_class_t::H5T_VLEN
        || (class == H5T_class_t::H5T_STRING
            && unsafe { sys::h5t::H5Tis_variable_str(ftype.id()) } > 0);
    let per_element = if variable { 1 } else { size.max(1) };
    let count = match count.and_then(|n| n.checked_mul(per_element).map(|b| (n, b))) {
        Some((n, bytes)) if bytes <= in_file => n as usize,
        _ => {
            return Err(Error::invalid_metadata(format!(
            "{context}: attribute '{shown}' claims {dims:?} elements of {size} bytes, more than \
                 the file's {in_file} bytes"
        )))
        }
    };
    let read = |mem_type: hid_t, buf: *mut c_void| {
        let ret = unsafe { sys::h5a::H5Aread(attr.id(), mem_type, buf) };
        check(ret, md, context, &what("reading the value"))
    };
    let values: Vec<Value> = match class {
        H5T_class_t::H5T_INTEGER => {
            if !matches!(size, 1 | 2 | 4 | 8) {
                return Ok(Read::Unsupported(format!("an integer of {size} bytes")));
            }
            if unsafe { sys::h5t::H5Tget_sign(ftype.id()) } == H5T_sign_t::H5T_SGN_NONE {
                let mut buf = vec![0u64; count];
                read(*H5T_NATIVE_UINT64, buf.as_mut_ptr().cast())?;
                buf.into_iter().map(Value::from).collect()
            } else {
                let mut buf = vec![0i64; count];
                read(*H5T_NATIVE_INT64, buf.as_mut_ptr().cast())?;
                buf.into_iter().map(Value::from).collect()
            }
        }
        H5T_class_t::H5T_FLOAT => match size {
            4 => {
                let mut buf = vec![0f32; count];
                read(*H5T_NATIVE_FLOAT, buf.as_mut_ptr().cast())?;
                buf.into_iter()
                    .map(|x| float_json(format!("{x:?}"), x as f64))
                    .collect()
            }
            8 => {
                let mut buf = vec![0f64; count];
                read(*H5T_NATIVE_DOUBLE, buf.as_mut_ptr().cast())?;
                buf.into_iter()
                    .map(|x| float_json(format!("{x:?}"), x))
                    .collect()
            }
            _ => return Ok(Read::Unsupported(format!("a float of {size} bytes"))),
        },
        H5T_class_t::H5T_ENUM => match read_bool_enum(&ftype, count, &read, context, &shown)? {
            Some(values) => values,
            None => {
                return Ok(Read::Unsupported(
                    "an enum other than FALSE = 0, TRUE = 1".into(),
                ))
            }
        },
        H5T_class_t::H5T_STRING => {
            let variable = check_tri(
                unsafe { sys::h5t::H5Tis_variable_str(ftype.id()) },
                md,
                context,
                &what("reading the string type"),
            )?;
            let cset = unsafe { sys::h5t::H5Tget_cset(ftype.id()) };
            if variable {
                let mem = check_id(
                    unsafe { sys::h5t::H5Tcopy(*H5T_C_S1) },
                    close::datatype,
                    ErrorKind::Internal,
                    context,
                    "copying a string type",
                )?;
                let ok = unsafe {
                    sys::h5t::H5Tset_size(mem.id(), sys::h5t::H5T_VARIABLE) >= 0
                        && sys::h5t::H5Tset_cset(mem.id(), cset) >= 0
                };
                if !ok {
                    return Err(failed(ErrorKind::Internal, context, "making a string type"));
                }
                let mut ptrs: Vec<*mut c_char> = vec![std::ptr::null_mut(); count];
                read(mem.id(), ptrs.as_mut_ptr().cast())?;
                let values = ptrs
                    .iter()
                    .map(|&p| {
                        if p.is_null() {
                            Value::String(String::new())
                        } else {
                            // SAFETY: libhdf5 wrote NUL-terminated strings.
                            Value::String(text(unsafe { CStr::from_ptr(p) }.to_bytes()))
                        }
                    })
                    .collect();
                // SAFETY: `ptrs` holds what the successful read wrote.
                unsafe { reclaim(mem.id(), space.id(), ptrs.as_mut_ptr().cast()) };
                values
            } else {
                let pad = unsafe { sys::h5t::H5Tget_strpad(ftype.id()) };
                let width = size as usize;
                let mut buf = vec![0u8; count * width];
                read(ftype.id(), buf.as_mut_ptr().cast())?;
                if width == 0 {
                    vec![Value::String(String::new()); count]
                } else {
                    buf.chunks_exact(width)
                        .map(|s| Value::String(text(unpad(s, pad))))
                        .collect()
                }
            }
        }
        H5T_class_t::H5T_COMPOUND => return Ok(Read::Unsupported("a compound type".into())),
        H5T_class_t::H5T_REFERENCE => return Ok(Read::Unsupported("a reference type".into())),
        H5T_class_t::H5T_OPAQUE => return Ok(Read::Unsupported("an opaque type".into())),
        H5T_class_t::H5T_VLEN => return Ok(Read::Unsupported("a variable-length sequence".into())),
        H5T_class_t::H5T_ARRAY => return Ok(Read::Unsupported("an array type".into())),
        H5T_class_t::H5T_BITFIELD => return Ok(Read::Unsupported("a bitfield type".into())),
        H5T_class_t::H5T_TIME => return Ok(Read::Unsupported("a time type".into())),
        #[allow(unreachable_patterns)]
        _ => return Ok(Read::Unsupported("a type of another class".into())),
    };
    Ok(Read::Value(nest(&mut values.into_iter(), &dims)))
}

/// A fixed-length string without its padding: up to the first NUL for
/// NUL-terminated strings, without trailing NULs for NUL-padded ones and
/// without trailing spaces (and NULs) for space-padded ones.
fn unpad(s: &[u8], pad: H5T_str_t) -> &[u8] {
    match pad {
        H5T_str_t::H5T_STR_NULLTERM => s.split(|&b| b == 0).next().unwrap_or(s),
        H5T_str_t::H5T_STR_SPACEPAD => {
            let end = s
                .iter()
                .rposition(|&b| b != b' ' && b != 0)
                .map_or(0, |i| i + 1);
            &s[..end]
        }
        _ => {
            let end = s.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            &s[..end]
        }
    }
}

/// The values of an enum attribute of the type `ftype` read as booleans, if
/// the enum is exactly FALSE = 0, TRUE = 1 (h5py's and JHDF5's bool) and
/// every value is one of them; `None` otherwise. Call under the lock.
fn read_bool_enum(
    ftype: &Hid,
    count: usize,
    read: &dyn Fn(hid_t, *mut c_void) -> Result<()>,
    context: &str,
    shown: &str,
) -> Result<Option<Vec<Value>>> {
    // SAFETY (every block below): `ftype` is an open enum type, the native
    // type made from it is closed by its Hid, and buffers have the native
    // type's size; under the caller's lock.
    if unsafe { sys::h5t::H5Tget_nmembers(ftype.id()) } != 2 {
        return Ok(None);
    }
    let mem = check_id(
        unsafe { sys::h5t::H5Tget_native_type(ftype.id(), H5T_direction_t::H5T_DIR_ASCEND) },
        close::datatype,
        ErrorKind::InvalidMetadata,
        context,
        &format!("reading the enum type of attribute '{shown}'"),
    )?;
    let width = unsafe { sys::h5t::H5Tget_size(mem.id()) };
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Ok(None);
    }
    let base = check_id(
        unsafe { sys::h5t::H5Tget_super(mem.id()) },
        close::datatype,
        ErrorKind::InvalidMetadata,
        context,
        &format!("reading the enum base of attribute '{shown}'"),
    )?;
    let signed = unsafe { sys::h5t::H5Tget_sign(base.id()) } != H5T_sign_t::H5T_SGN_NONE;
    // An integer of the native type's width, in native byte order.
    let as_int = |b: &[u8]| -> i128 {
        let v = match b.len() {
            1 => b[0] as u64,
            2 => u16::from_ne_bytes([b[0], b[1]]) as u64,
            4 => u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as u64,
            _ => u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        };
        sign_extend(v, b.len() * 8, signed)
    };
    let mut false_value = None;
    let mut true_value = None;
    for i in 0..2u32 {
        // SAFETY: member `i` exists; the name is freed by take_h5_string.
        let name = unsafe { take_h5_string(sys::h5t::H5Tget_member_name(mem.id(), i)) };
        let mut value = vec![0u8; width];
        let ret = unsafe { sys::h5t::H5Tget_member_value(mem.id(), i, value.as_mut_ptr().cast()) };
        check(
            ret,
            ErrorKind::InvalidMetadata,
            context,
            &format!("reading the enum members of attribute '{shown}'"),
        )?;
        match name.as_deref() {
            Some(b"FALSE") => false_value = Some(as_int(&value)),
            Some(b"TRUE") => true_value = Some(as_int(&value)),
            _ => return Ok(None),
        }
    }
    if false_value != Some(0) || true_value != Some(1) {
        return Ok(None);
    }
    let mut buf = vec![0u8; count * width];
    read(mem.id(), buf.as_mut_ptr().cast())?;
    let mut values = Vec::with_capacity(count);
    for v in buf.chunks_exact(width) {
        match as_int(v) {
            0 => values.push(Value::Bool(false)),
            1 => values.push(Value::Bool(true)),
            _ => return Ok(None),
        }
    }
    Ok(Some(values))
}

/// The `bits`-bit integer `v` as a number, sign-extended when `signed`.
fn sign_extend(v: u64, bits: usize, signed: bool) -> i128 {
    if bits == 64 {
        return if signed { v as i64 as i128 } else { v as i128 };
    }
    let v = v & ((1u64 << bits) - 1);
    if signed && v >> (bits - 1) == 1 {
        v as i128 - (1i128 << bits)
    } else {
        v as i128
    }
}

/// The string attribute `name` of `obj` (`object` names it in messages);
/// `None` when there is none or it is not a string.
pub(crate) fn read_string_attribute(
    file: &FileInner,
    obj: hid_t,
    object: &str,
    name: &str,
) -> Result<Option<String>> {
    let context = file.context(object);
    let cname = cstring(name, "attribute name")?;
    locked(|| {
        // SAFETY: `obj` is open, `cname` a C string.
        let exists = unsafe { sys::h5a::H5Aexists(obj, cname.as_ptr()) };
        if !check_tri(
            exists,
            ErrorKind::InvalidMetadata,
            &context,
            "looking up an attribute",
        )? {
            return Ok(None);
        }
        Ok(match read_attribute(file, obj, &cname, &context)? {
            Read::Value(Value::String(s)) => Some(s),
            _ => None,
        })
    })
}

/// The JSON object in `N5_JSON_ROOT` of `obj`, if it has one. One that is
/// not a string holding a JSON object is [`ErrorKind::Json`].
fn json_root(file: &FileInner, obj: hid_t, context: &str) -> Result<Option<Map<String, Value>>> {
    let cname = cstring(JSON_ROOT, "attribute name")?;
    locked(|| {
        // SAFETY: `obj` is open, `cname` a C string.
        let exists = unsafe { sys::h5a::H5Aexists(obj, cname.as_ptr()) };
        if !check_tri(
            exists,
            ErrorKind::InvalidMetadata,
            context,
            "looking up N5_JSON_ROOT",
        )? {
            return Ok(None);
        }
        let text = match read_attribute(file, obj, &cname, context)? {
            Read::Value(Value::String(s)) => s,
            _ => {
                return Err(Error::new(
                    ErrorKind::Json,
                    format!("{context}: attribute {JSON_ROOT} is not a string"),
                ))
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(Some(map)),
            Ok(other) => Err(Error::new(
                ErrorKind::Json,
                format!(
                    "{context}: attribute {JSON_ROOT} holds {}, not a JSON object",
                    kind_name(&other)
                ),
            )),
            Err(e) => Err(Error::new(
                ErrorKind::Json,
                format!("{context}: attribute {JSON_ROOT} is not JSON: {e}"),
            )),
        }
    })
}

/// "an array", "a string", ... for messages.
fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The elements of a JSON value stored as a native attribute.
#[derive(Debug, PartialEq)]
pub(crate) enum Native<'a> {
    /// Booleans: enum int8 {FALSE = 0, TRUE = 1}.
    Bool(Vec<bool>),
    /// int64.
    I64(Vec<i64>),
    /// uint64 (integers above int64, only as scalars).
    U64(Vec<u64>),
    /// float64.
    F64(Vec<f64>),
    /// Variable-length UTF-8 strings.
    Str(Vec<&'a str>),
}

/// A number's own text (kept exactly by `arbitrary_precision`) names an
/// integer: no fraction, no exponent.
fn is_integer_text(n: &Number) -> bool {
    !n.to_string().contains(['.', 'e', 'E'])
}

/// The float64 of a number written with a fraction or exponent, if it is
/// finite as a float64.
fn finite_float(n: &Number) -> Option<f64> {
    if is_integer_text(n) {
        return None;
    }
    n.to_string().parse::<f64>().ok().filter(|f| f.is_finite())
}

/// How the JSON value `v` is stored natively (with whether it is a scalar),
/// or `None` when it goes into `N5_JSON_ROOT`.
pub(crate) fn classify(v: &Value) -> Option<(Native<'_>, bool)> {
    let storable_str = |s: &str| !s.contains('\0');
    match v {
        Value::Bool(b) => Some((Native::Bool(vec![*b]), true)),
        Value::Number(n) if is_integer_text(n) => {
            if let Some(i) = n.as_i64() {
                Some((Native::I64(vec![i]), true))
            } else {
                n.as_u64().map(|u| (Native::U64(vec![u]), true))
            }
        }
        Value::Number(n) => finite_float(n).map(|f| (Native::F64(vec![f]), true)),
        Value::String(s) if storable_str(s) => Some((Native::Str(vec![s]), true)),
        Value::Array(items) if !items.is_empty() => {
            let native = match &items[0] {
                Value::Bool(_) => items
                    .iter()
                    .map(Value::as_bool)
                    .collect::<Option<Vec<_>>>()
                    .map(Native::Bool),
                Value::Number(n) if is_integer_text(n) => items
                    .iter()
                    .map(|v| match v {
                        Value::Number(n) if is_integer_text(n) => n.as_i64(),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .map(Native::I64),
                Value::Number(_) => items
                    .iter()
                    .map(|v| match v {
                        Value::Number(n) => finite_float(n),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .map(Native::F64),
                Value::String(_) => items
                    .iter()
                    .map(|v| v.as_str().filter(|s| storable_str(s)))
                    .collect::<Option<Vec<_>>>()
                    .map(Native::Str),
                _ => None,
            };
            native.map(|n| (n, false))
        }
        _ => None,
    }
}

/// Whether the key `key` may be a native attribute at all (not the JSON
/// root's own name, not empty, no NUL).
fn native_key(key: &str) -> bool {
    key != JSON_ROOT && !key.is_empty() && !key.contains('\0')
}

/// Deletes the attribute `name` of `obj` if there is one; whether there
/// was. Call under the lock.
fn delete_attribute(obj: hid_t, name: &CStr, context: &str) -> Result<bool> {
    // SAFETY: `obj` is open, `name` a C string; under the caller's lock.
    let exists = unsafe { sys::h5a::H5Aexists(obj, name.as_ptr()) };
    if !check_tri(
        exists,
        ErrorKind::InvalidMetadata,
        context,
        "looking up an attribute",
    )? {
        return Ok(false);
    }
    // SAFETY: as above.
    let ret = unsafe { sys::h5a::H5Adelete(obj, name.as_ptr()) };
    check(
        ret,
        ErrorKind::Io,
        context,
        &format!("deleting attribute '{}'", text(name.to_bytes())),
    )?;
    Ok(true)
}

/// A variable-length UTF-8 string type (closed with the Hid).
fn vlen_utf8(context: &str) -> Result<Hid> {
    // SAFETY: copying the predefined C string type and setting its size and
    // character set; under the lock.
    locked(|| unsafe {
        let t = check_id(
            sys::h5t::H5Tcopy(*H5T_C_S1),
            close::datatype,
            ErrorKind::Internal,
            context,
            "copying a string type",
        )?;
        if sys::h5t::H5Tset_size(t.id(), sys::h5t::H5T_VARIABLE) < 0
            || sys::h5t::H5Tset_cset(t.id(), H5T_cset_t::H5T_CSET_UTF8) < 0
        {
            return Err(failed(
                ErrorKind::Internal,
                context,
                "making a UTF-8 string type",
            ));
        }
        Ok(t)
    })
}

/// Writes `native` as the attribute `name` of `obj` (a scalar, or 1-D),
/// replacing any attribute of that name.
fn write_native(
    obj: hid_t,
    name: &CStr,
    native: &Native<'_>,
    scalar: bool,
    context: &str,
) -> Result<()> {
    let shown = text(name.to_bytes());
    let what = |w: &str| format!("{w} attribute '{shown}'");
    let len = match native {
        Native::Bool(v) => v.len(),
        Native::I64(v) => v.len(),
        Native::U64(v) => v.len(),
        Native::F64(v) => v.len(),
        Native::Str(v) => v.len(),
    };
    let strings: Vec<CString> = match native {
        Native::Str(v) => v
            .iter()
            .map(|s| cstring(s, "string"))
            .collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    locked(|| {
        delete_attribute(obj, name, context)?;
        // SAFETY (every block below): creating a dataspace and datatypes,
        // an attribute of them on the open object `obj`, and writing a
        // buffer of `len` elements of the memory type; under the lock.
        let space = if scalar {
            unsafe { sys::h5s::H5Screate(H5S_class_t::H5S_SCALAR) }
        } else {
            let dims = [len as hsize_t];
            unsafe { sys::h5s::H5Screate_simple(1, dims.as_ptr(), std::ptr::null()) }
        };
        let space = check_id(
            space,
            close::space,
            ErrorKind::Internal,
            context,
            "making a dataspace",
        )?;
        let owned_type: Option<Hid> = match native {
            Native::Bool(_) => {
                let t = check_id(
                    unsafe { sys::h5t::H5Tenum_create(*H5T_NATIVE_INT8) },
                    close::datatype,
                    ErrorKind::Internal,
                    context,
                    "making the boolean enum type",
                )?;
                let (f, tr) = (0i8, 1i8);
                let ok = unsafe {
                    sys::h5t::H5Tenum_insert(t.id(), c"FALSE".as_ptr(), (&f as *const i8).cast())
                        >= 0
                        && sys::h5t::H5Tenum_insert(
                            t.id(),
                            c"TRUE".as_ptr(),
                            (&tr as *const i8).cast(),
                        ) >= 0
                };
                if !ok {
                    return Err(failed(
                        ErrorKind::Internal,
                        context,
                        "making the boolean enum type",
                    ));
                }
                Some(t)
            }
            Native::Str(_) => Some(vlen_utf8(context)?),
            _ => None,
        };
        let own = owned_type.as_ref().map_or(-1, Hid::id);
        let bools: Vec<i8>;
        let ptrs: Vec<*const c_char>;
        let (file_type, mem_type, buf): (hid_t, hid_t, *const c_void) = match native {
            Native::Bool(v) => {
                bools = v.iter().map(|&b| b as i8).collect();
                (own, own, bools.as_ptr().cast())
            }
            Native::I64(v) => (*H5T_STD_I64LE, *H5T_NATIVE_INT64, v.as_ptr().cast()),
            Native::U64(v) => (*H5T_STD_U64LE, *H5T_NATIVE_UINT64, v.as_ptr().cast()),
            Native::F64(v) => (*H5T_IEEE_F64LE, *H5T_NATIVE_DOUBLE, v.as_ptr().cast()),
            Native::Str(_) => {
                ptrs = strings.iter().map(|s| s.as_ptr()).collect();
                (own, own, ptrs.as_ptr().cast())
            }
        };
        let attr = check_id(
            unsafe {
                sys::h5a::H5Acreate2(
                    obj,
                    name.as_ptr(),
                    file_type,
                    space.id(),
                    H5P_DEFAULT,
                    H5P_DEFAULT,
                )
            },
            close::attribute,
            ErrorKind::Io,
            context,
            &what("creating"),
        )?;
        let ret = unsafe { sys::h5a::H5Awrite(attr.id(), mem_type, buf) };
        check(ret, ErrorKind::Io, context, &what("writing"))
    })
}

/// Writes `map` as `N5_JSON_ROOT` of `obj` (compact JSON), or deletes the
/// attribute when `map` is empty.
fn write_json_root(obj: hid_t, map: &Map<String, Value>, context: &str) -> Result<()> {
    let name = cstring(JSON_ROOT, "attribute name")?;
    if map.is_empty() {
        return locked(|| delete_attribute(obj, &name, context).map(|_| ()));
    }
    let json = serde_json::to_string(map)
        .map_err(|e| Error::new(ErrorKind::Json, format!("{context}: {e}")))?;
    write_native(obj, &name, &Native::Str(vec![&json]), true, context)
}

impl File {
    /// The group or dataset at `path`, open, with its absolute path; else
    /// [`ErrorKind::NotFound`].
    fn object(&self, path: &str) -> Result<(Hid, String)> {
        let here = absolute(&components(path)?);
        match self.inner().resolve(path)? {
            Resolved::Group(h) | Resolved::Dataset(h) => Ok((h, here)),
            _ => Err(Error::new(
                ErrorKind::NotFound,
                format!("{}: no group or dataset there", self.inner().context(&here)),
            )),
        }
    }

    /// The JSON attributes of the group or dataset at `path`:
    /// `N5_JSON_ROOT`'s members overlaid by every native attribute that
    /// maps to JSON (the others are left out).
    pub(crate) fn attributes(&self, path: &str) -> Result<Map<String, Value>> {
        let (obj, here) = self.object(path)?;
        let context = self.inner().context(&here);
        let mut map = json_root(self.inner(), obj.id(), &context)?.unwrap_or_default();
        for name in attribute_names(obj.id(), &context)? {
            if name.as_bytes() == JSON_ROOT.as_bytes() {
                continue;
            }
            let read = locked(|| read_attribute(self.inner(), obj.id(), &name, &context))?;
            if let Read::Value(v) = read {
                map.insert(text(name.to_bytes()), v);
            }
        }
        Ok(map)
    }

    /// The JSON value of the top-level attribute `key` of the group or
    /// dataset at `path`: the native attribute of that name, else the
    /// member of `N5_JSON_ROOT`. A native attribute of a type that has no
    /// JSON form is [`ErrorKind::Unsupported`] naming it; none is
    /// [`ErrorKind::NotFound`].
    pub(crate) fn attribute(&self, path: &str, key: &str) -> Result<Value> {
        let (obj, here) = self.object(path)?;
        let context = self.inner().context(&here);
        if native_key(key) {
            let cname = cstring(key, "attribute name")?;
            let native = locked(|| {
                // SAFETY: `obj` is open, `cname` a C string.
                let exists = unsafe { sys::h5a::H5Aexists(obj.id(), cname.as_ptr()) };
                if check_tri(
                    exists,
                    ErrorKind::InvalidMetadata,
                    &context,
                    "looking up an attribute",
                )? {
                    read_attribute(self.inner(), obj.id(), &cname, &context).map(Some)
                } else {
                    Ok(None)
                }
            })?;
            match native {
                Some(Read::Value(v)) => return Ok(v),
                Some(Read::Unsupported(t)) => {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!("{context}: attribute '{key}' has {t}, which has no JSON form"),
                    ))
                }
                None => {}
            }
        }
        json_root(self.inner(), obj.id(), &context)?
            .and_then(|mut m| m.remove(key))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("{context}: no attribute '{key}'"),
                )
            })
    }

    /// Stores each top-level key of `values` on the group or dataset at
    /// `path` by the write mapping (natively, or as a member of
    /// `N5_JSON_ROOT`), each replacing the key's value wherever it was
    /// stored before; then flushes the file.
    pub(crate) fn set_attributes(&self, path: &str, values: &Map<String, Value>) -> Result<()> {
        let (obj, here) = self.object(path)?;
        self.inner().check_writable(&here)?;
        let context = self.inner().context(&here);
        let mut root = json_root(self.inner(), obj.id(), &context)?;
        let had_root = root.is_some();
        let mut root_map = root.take().unwrap_or_default();
        let mut root_changed = false;
        for (key, value) in values {
            let native = if native_key(key) {
                classify(value)
            } else {
                None
            };
            match native {
                Some((native, scalar)) => {
                    let cname = cstring(key, "attribute name")?;
                    write_native(obj.id(), &cname, &native, scalar, &context)?;
                    root_changed |= root_map.shift_remove(key).is_some();
                }
                None => {
                    if native_key(key) {
                        let cname = cstring(key, "attribute name")?;
                        locked(|| delete_attribute(obj.id(), &cname, &context))?;
                    }
                    root_map.insert(key.clone(), value.clone());
                    root_changed = true;
                }
            }
        }
        if root_changed && (had_root || !root_map.is_empty()) {
            write_json_root(obj.id(), &root_map, &context)?;
        }
        self.flush()
    }

    /// Removes the top-level attribute `key` of the group or dataset at
    /// `path`: the native attribute and the member of `N5_JSON_ROOT` (which
    /// is deleted when it becomes empty); then flushes the file. A key in
    /// neither place is [`ErrorKind::NotFound`].
    pub(crate) fn remove_attribute(&self, path: &str, key: &str) -> Result<()> {
        let (obj, here) = self.object(path)?;
        self.inner().check_writable(&here)?;
        let context = self.inner().context(&here);
        let mut removed = false;
        if native_key(key) {
            let cname = cstring(key, "attribute name")?;
            removed |= locked(|| delete_attribute(obj.id(), &cname, &context))?;
        }
        if let Some(mut map) = json_root(self.inner(), obj.id(), &context)? {
            if map.shift_remove(key).is_some() {
                write_json_root(obj.id(), &map, &context)?;
                removed = true;
            }
        }
        if !removed {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{context}: no attribute '{key}'"),
            ));
        }
        self.flush()
    }
}

/// Copies every attribute of `from` to `to` as it is (same name, type,
/// dataspace and value), for a group that becomes a dataset.
pub(crate) fn copy_attributes(from: hid_t, to: hid_t, context: &str) -> Result<()> {
    let names = attribute_names(from, context)?;
    for name in names {
        let shown = text(name.to_bytes());
        let what = |w: &str| format!("{w} attribute '{shown}'");
        locked(|| {
            // SAFETY (every block below): `from` and `to` are open objects;
            // the attribute's own type is the memory type, so the buffer
            // has its size times the number of elements; variable-length
            // data the read allocated is reclaimed after the write.
            let src = check_id(
                unsafe { sys::h5a::H5Aopen(from, name.as_ptr(), H5P_DEFAULT) },
                close::attribute,
                ErrorKind::InvalidMetadata,
                context,
                &what("opening"),
            )?;
            let space = check_id(
                unsafe { sys::h5a::H5Aget_space(src.id()) },
                close::space,
                ErrorKind::InvalidMetadata,
                context,
                &what("reading the dataspace of"),
            )?;
            let ftype = check_id(
                unsafe { sys::h5a::H5Aget_type(src.id()) },
                close::datatype,
                ErrorKind::InvalidMetadata,
                context,
                &what("reading the type of"),
            )?;
            let points = unsafe { sys::h5s::H5Sget_simple_extent_npoints(space.id()) };
            if points < 0 {
                return Err(failed(
                    ErrorKind::InvalidMetadata,
                    context,
                    &what("counting"),
                ));
            }
            let size = unsafe { sys::h5t::H5Tget_size(ftype.id()) };
            let bytes = (points as usize).checked_mul(size).ok_or_else(|| {
                Error::invalid_metadata(format!("{context}: {}: too large", what("copying")))
            })?;
            let mut buf = vec![0u8; bytes.max(1)];
            let ret = unsafe { sys::h5a::H5Aread(src.id(), ftype.id(), buf.as_mut_ptr().cast()) };
            check(ret, ErrorKind::InvalidMetadata, context, &what("reading"))?;
            let written = (|| {
                let dst = check_id(
                    unsafe {
                        sys::h5a::H5Acreate2(
                            to,
                            name.as_ptr(),
                            ftype.id(),
                            space.id(),
                            H5P_DEFAULT,
                            H5P_DEFAULT,
                        )
                    },
                    close::attribute,
                    ErrorKind::Io,
                    context,
                    &what("creating"),
                )?;
                let ret = unsafe { sys::h5a::H5Awrite(dst.id(), ftype.id(), buf.as_ptr().cast()) };
                check(ret, ErrorKind::Io, context, &what("writing"))
            })();
            // Frees what variable-length parts the read allocated (nothing
            // for types without any).
            // SAFETY: `buf` holds what the successful read wrote.
            unsafe { reclaim(ftype.id(), space.id(), buf.as_mut_ptr().cast()) };
            written
        })?;
    }
    Ok(())
}

/// Writes `value` as a scalar variable-length UTF-8 string attribute
/// `name` of `obj`, whatever the name (the tests store damaged
/// `N5_JSON_ROOT`s with it).
#[cfg(test)]
pub(crate) fn write_string_for_tests(obj: hid_t, name: &CStr, value: &str) {
    write_native(obj, name, &Native::Str(vec![value]), true, "test").unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_values_are_classified_as_the_write_mapping_says() {
        let native = |v: Value| classify(&v).map(|(n, s)| (format!("{n:?}"), s));
        assert_eq!(native(json!(true)), Some(("Bool([true])".into(), true)));
        assert_eq!(native(json!(-3)), Some(("I64([-3])".into(), true)));
        assert_eq!(
            native(json!(u64::MAX)),
            Some((format!("U64([{}])", u64::MAX), true))
        );
        assert_eq!(native(json!(2.5)), Some(("F64([2.5])".into(), true)));
        let text: Value = serde_json::from_str("[1e2, 0.5]").unwrap();
        assert_eq!(native(text), Some(("F64([100.0, 0.5])".into(), false)));
        assert_eq!(native(json!("nm")), Some(("Str([\"nm\"])".into(), true)));
        assert_eq!(native(json!([4, 5])), Some(("I64([4, 5])".into(), false)));
        assert_eq!(
            native(json!([true, false])),
            Some(("Bool([true, false])".into(), false))
        );
        assert_eq!(
            native(json!(["x", "y"])),
            Some(("Str([\"x\", \"y\"])".into(), false))
        );
        // Into N5_JSON_ROOT: objects, null, [], nested and mixed arrays,
        // integers beyond uint64, floats beyond float64, uint64 in arrays,
        // strings with NUL.
        for v in [
            json!({"a": 1}),
            Value::Null,
            json!([]),
            json!([[1], [2]]),
            json!([1, 2.5]),
            json!([1, "a"]),
            json!([true, 1]),
            serde_json::from_str("18446744073709551616").unwrap(),
            serde_json::from_str("1e400").unwrap(),
            json!([u64::MAX]),
            json!("a\0b"),
        ] {
            assert_eq!(native(v.clone()), None, "{v}");
        }
    }

    #[test]
    fn floats_are_shortest_with_a_fraction_or_exponent() {
        let f32s = |x: f32| float_json(format!("{x:?}"), x as f64).to_string();
        let f64s = |x: f64| float_json(format!("{x:?}"), x).to_string();
        assert_eq!(f32s(0.1), "0.1");
        assert_eq!(f32s(2.0), "2.0");
        assert_eq!(f32s(-0.0), "-0.0");
        // serde_json spells the exponent with a sign.
        assert_eq!(f32s(1e20), "1e+20");
        assert_eq!(f64s(0.1), "0.1");
        assert_eq!(f64s(1e300), "1e+300");
        assert_eq!(f64s(5e-324), "5e-324");
        assert_eq!(f64s(f64::NAN), "\"NaN\"");
        assert_eq!(f64s(f64::INFINITY), "\"Infinity\"");
        assert_eq!(f64s(f64::NEG_INFINITY), "\"-Infinity\"");
        // What comes out reads back as the same value.
        for x in [0.1f64, 1.0 / 3.0, 123456789.125, 1e-7, 6.02214076e23] {
            let v = f64s(x);
            assert_eq!(v.parse::<f64>().unwrap(), x, "{v}");
            assert!(v.contains(['.', 'e']), "{v}");
        }
    }

    #[test]
    fn fixed_strings_lose_their_padding() {
        assert_eq!(unpad(b"ab\0\0", H5T_str_t::H5T_STR_NULLPAD), b"ab");
        assert_eq!(unpad(b"ab\0c\0", H5T_str_t::H5T_STR_NULLTERM), b"ab");
        assert_eq!(unpad(b"ab  ", H5T_str_t::H5T_STR_SPACEPAD), b"ab");
        assert_eq!(unpad(b"    ", H5T_str_t::H5T_STR_SPACEPAD), b"");
        assert_eq!(unpad(b"abcd", H5T_str_t::H5T_STR_NULLTERM), b"abcd");
    }

    #[test]
    fn values_nest_in_c_order() {
        let values: Vec<Value> = (1..=6).map(Value::from).collect();
        assert_eq!(
            nest(&mut values.clone().into_iter(), &[2, 3]),
            json!([[1, 2, 3], [4, 5, 6]])
        );
        assert_eq!(nest(&mut values.clone().into_iter(), &[]), json!(1));
        assert_eq!(nest(&mut Vec::new().into_iter(), &[2, 0]), json!([[], []]));
        assert_eq!(nest(&mut Vec::new().into_iter(), &[0, 3]), json!([]));
    }

    #[test]
    fn enum_values_sign_extend() {
        assert_eq!(sign_extend(0xff, 8, true), -1);
        assert_eq!(sign_extend(0xff, 8, false), 255);
        assert_eq!(sign_extend(1, 16, true), 1);
        assert_eq!(sign_extend(u64::MAX, 64, true), -1);
        assert_eq!(sign_extend(u64::MAX, 64, false), u64::MAX as i128);
    }
}
