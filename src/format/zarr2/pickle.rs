//! Legacy hdmf-zarr object chunks (Zarr v2 `|O` arrays, and compounds with
//! `|O` fields): a data-only reader of the pickles numcodecs' `pickle`
//! filter wrote ([`decode`], [`decode_object_chunk`], [`fill_value_json`]),
//! and the decoder of its `json2` filter ([`decode_json2_chunk`]). This
//! module owns the opcode subset, the globals and the shapes of their calls
//! that are allowed (shared/design/nwb.md §3), the bounds that keep hostile
//! input in memory and time proportional to its size, and the JSON form of
//! decoded elements.
//!
//! The reader imports and calls nothing. A pickle is a program for Python's
//! pickle machine; this one runs only the opcodes that build data (strings,
//! numbers, lists, tuples, dicts, the memo), and knows four globals, named
//! only through `STACK_GLOBAL`, by what hdmf-zarr's files do with them:
//!
//! * `numpy._core.multiarray._reconstruct` (or `numpy.core...`), called
//!   as `_reconstruct(numpy.ndarray, (0,), b'b')`, then `BUILD` with
//!   `(1, shape, dtype, is_fortran, [elements...])`: an array of objects;
//! * `numpy.dtype`, called as `dtype(code, False, True)` with a type code
//!   (`O8`, `V16`, `i4`, ...), then `BUILD` with numpy's 8-item state
//!   (version 3; field names and a dict of `(dtype, offset)` for records);
//! * `hdmf_zarr.utils.ZarrReference` (a `dict` subclass), made by
//!   `NEWOBJ(ZarrReference, ())` and filled by `SETITEMS` of strings to
//!   strings or `None`;
//! * `numpy.ndarray`, only as `_reconstruct`'s first argument.
//!
//! Anything else (another opcode, another global, an allowed one called in
//! another way, `APPENDS` or `SETITEMS` on something that is not a list or
//! dict, `BUILD` of anything but a fresh dtype or array) is
//! [`ErrorKind::UnsafePickle`], found before it would have run. Malformed,
//! truncated or oversized input is [`ErrorKind::Codec`]: at most
//! [`MAX_DEPTH`] open marks and nested containers, a memo of at most
//! [`MAX_MEMO`] entries, no length read from the input beyond the bytes
//! that remain (nothing is allocated from a length before that check), no
//! array holding more elements than the chunk, and a decoded value of at
//! most [`MAX_EXPANSION`] times the pickle's bytes plus 1 MiB (the memo lets
//! a short pickle name one value many times). The reader recurses only
//! while converting decoded values, at most [`MAX_DEPTH`] deep.
//!
//! Elements as JSON (what `n5_region_read_json` shows for `pickle` and
//! `json2` datasets): `None` null, booleans, integers (any size up to 128
//! bits) as integers, floats as the shortest decimal with a `.` or an
//! exponent and non-finite ones as the strings `"NaN"`, `"Infinity"`,
//! `"-Infinity"`, `str` as strings, `bytes` as base64 (RFC 4648, padded),
//! lists and tuples as arrays, dicts and `ZarrReference`s as objects in
//! their stored key order (`{"source", "path", "object_id",
//! "source_object_id"}` for hdmf-zarr's references), an array inside an
//! element as nested arrays of its shape, and each record of a compound as
//! an object of its fields in declared order.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::{Map, Number, Value};

use crate::error::{Error, ErrorKind, Result};

#[cfg(test)]
mod tests;

/// The most marks open at once, and the deepest nesting of containers
/// (arrays, lists, tuples, dicts, references, records) in a decoded value.
pub(crate) const MAX_DEPTH: usize = 64;

/// The most memo entries a pickle may make.
pub(crate) const MAX_MEMO: usize = 1 << 20;

/// A decoded value may hold at most this many times the pickle's bytes,
/// plus 1 MiB (strings and bytes counted by their length, every value
/// [`VALUE_COST`] more).
pub(crate) const MAX_EXPANSION: usize = 64;

/// What each decoded value counts towards the [`MAX_EXPANSION`] bound.
const VALUE_COST: usize = 32;

/// The most dimensions of a pickled array.
const MAX_RANK: usize = 32;

/// The highest pickle protocol (Python 3.8 and later write 5).
const MAX_PROTOCOL: u8 = 5;

/// A decoded pickle: data only; nothing is ever called or constructed
/// beyond these.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Pickled {
    /// `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer (`LONG1` reads up to 128 bits).
    Int(i128),
    /// A float.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `bytes` object.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Pickled>),
    /// A tuple (also each record of a compound's array).
    Tuple(Vec<Pickled>),
    /// A dict, its items in stored order (a later duplicate key wins when
    /// shown as JSON).
    Dict(Vec<(Pickled, Pickled)>),
    /// A numpy array of objects (`dtype` [`Dtype::Object`], or a record
    /// with an object field): its elements in C order.
    Array {
        /// The element type.
        dtype: Arc<Dtype>,
        /// The shape, C order.
        shape: Vec<u64>,
        /// `shape`'s product of elements: for records, tuples of their
        /// field values.
        items: Vec<Pickled>,
    },
    /// An `hdmf_zarr.utils.ZarrReference` (a dict of strings to strings or
    /// `None`), its keys in stored order.
    Reference(Vec<(String, Option<String>)>),
}

/// The type of a pickled numpy array, as its pickle states it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Dtype {
    /// `O8`: Python objects (`|O`).
    Object,
    /// Any other type without fields, as numpy's `dtype.str`: `<i4`,
    /// `|b1`, `>f8`, `<U10`, `|S4`, `|V8`.
    Scalar(String),
    /// A structured type (`V<size>` with fields).
    Record(Record),
}

/// The fields of a structured type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Record {
    /// The record's size in bytes (the `V<n>` of its pickle).
    pub size: u64,
    /// The fields in declared order.
    pub fields: Vec<Field>,
    /// Records nested in this one, itself included (1 for a flat record).
    depth: usize,
    /// Whether a field, or a field of a nested record, is an object.
    has_object: bool,
}

/// One field of a structured type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    /// Its name.
    pub name: String,
    /// Its type (shared when the pickle names one dtype several times).
    pub dtype: Arc<Dtype>,
    /// Its byte offset in the record.
    pub offset: u64,
}

impl Dtype {
    /// Whether elements of this type hold Python objects (which numpy
    /// pickles as a list of elements, not as raw bytes).
    pub(crate) fn has_object(&self) -> bool {
        match self {
            Dtype::Object => true,
            Dtype::Scalar(_) => false,
            Dtype::Record(r) => r.has_object,
        }
    }

    fn depth(&self) -> usize {
        match self {
            Dtype::Record(r) => r.depth,
            _ => 0,
        }
    }

    /// The type as a `.zarray` would write it (`|O`, `<i4`, a list of
    /// `[name, type]`), cut short after about 200 characters.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::new();
        self.describe_into(&mut s);
        s
    }

    fn describe_into(&self, s: &mut String) {
        const LIMIT: usize = 200;
        if s.len() > LIMIT {
            return;
        }
        match self {
            Dtype::Object => s.push_str("\"|O\""),
            Dtype::Scalar(code) => {
                s.push('"');
                s.push_str(code);
                s.push('"');
            }
            Dtype::Record(r) => {
                s.push('[');
                for (i, f) in r.fields.iter().enumerate() {
                    if s.len() > LIMIT {
                        s.push_str("...");
                        break;
                    }
                    if i > 0 {
                        s.push_str(", ");
                    }
                    s.push_str("[\"");
                    s.push_str(&printable(&f.name));
                    s.push_str("\", ");
                    f.dtype.describe_into(s);
                    s.push(']');
                }
                s.push(']');
            }
        }
    }

    /// Whether the type is the `.zarray` `dtype` value `zarray` (a numpy
    /// type string or a list of `[name, type]` fields; sub-array fields
    /// never match).
    pub(crate) fn matches(&self, zarray: &Value) -> bool {
        match (self, zarray) {
            (Dtype::Object, Value::String(s)) => s == "|O",
            (Dtype::Scalar(code), Value::String(s)) => code == s,
            (Dtype::Record(r), Value::Array(list)) => {
                r.fields.len() == list.len()
                    && r.fields.iter().zip(list).all(|(f, entry)| match entry {
                        Value::Array(pair) => match pair.as_slice() {
                            [Value::String(name), t] => *name == f.name && f.dtype.matches(t),
                            _ => false,
                        },
                        _ => false,
                    })
            }
            _ => false,
        }
    }
}

/// Decodes the pickle `bytes` (the chunk after its compressor, or a fill
/// value after base64) into data; `what` names it in messages
/// (`chunk 'a/b/0'`, `fill value of 'a/b'`).
pub(crate) fn decode(bytes: &[u8], what: &str) -> Result<Pickled> {
    let mut vm = Machine::new(bytes, what, None);
    let root = vm.run()?;
    let mut budget = Budget::for_input(bytes.len());
    vm.to_pickled(root, 0, &mut budget)
}

/// The elements of a numcodecs `pickle` chunk of an object array, in C
/// order, as JSON values (module documentation). `dtype` is the `.zarray`'s
/// `dtype` value: `"|O"`, whose elements may be any data, or a list of
/// fields with at least one `|O` field, whose elements are records and come
/// as objects of their fields in declared order, the `|O` fields as any
/// data, the others checked against their type. The pickle must hold one
/// numpy array of that type with `expected_elements` elements (its shape is
/// not checked: zarr-python reshapes it to the chunk's).
pub(crate) fn decode_object_chunk(
    bytes: &[u8],
    what: &str,
    dtype: &Value,
    expected_elements: usize,
) -> Result<Vec<Value>> {
    let mut vm = Machine::new(bytes, what, Some(expected_elements));
    let root = vm.run()?;
    let mut budget = Budget::for_input(bytes.len());
    let decoded = vm.to_pickled(root, 0, &mut budget)?;
    let Pickled::Array {
        dtype: found,
        items,
        ..
    } = decoded
    else {
        return Err(codec(
            what,
            format!(
                "the pickle holds {}, not a numpy array",
                decoded.kind_name()
            ),
        ));
    };
    if !found.matches(dtype) {
        return Err(codec(
            what,
            format!(
                "the pickled array is of type {}, the array's is {}",
                found.describe(),
                short(dtype)
            ),
        ));
    }
    if items.len() != expected_elements {
        return Err(codec(
            what,
            format!(
                "the pickled array has {} elements, the chunk {expected_elements}",
                items.len()
            ),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            typed_json(item, &found).map_err(|e| codec(what, format!("element {i}: {e}")))
        })
        .collect()
}

/// The elements of a numcodecs `json2` chunk (JSON text `[element, ...,
/// dtype, shape]`, elements nested as lists of the shape) in C order, as
/// JSON values: the same values as [`decode_object_chunk`] gives for the
/// same elements (the bare `NaN`, `Infinity`, `-Infinity` Python writes
/// become those strings), with the same `dtype` and `expected_elements`.
/// For a compound, each record is a list of its field values in the chunk
/// and an object of its fields here.
pub(crate) fn decode_json2_chunk(
    bytes: &[u8],
    what: &str,
    dtype: &Value,
    expected_elements: usize,
) -> Result<Vec<Value>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| codec(what, format!("the json2 chunk is not UTF-8 text: {e}")))?;
    let doc: Value = crate::jsontext::parse_as_names(text.as_bytes())
        .map_err(|e| codec(what, format!("the json2 chunk is not JSON: {e}")))?;
    let Value::Array(mut items) = doc else {
        return Err(codec(
            what,
            "the json2 chunk is not a list [elements..., dtype, shape]",
        ));
    };
    let (Some(Value::Array(shape)), Some(Value::String(stored))) = (items.pop(), items.pop())
    else {
        return Err(codec(
            what,
            "the json2 chunk does not end with its dtype and shape",
        ));
    };
    let fields = match dtype {
        Value::String(s) if s == "|O" => None,
        Value::Array(list) => Some(zarray_field_names(list).ok_or_else(|| {
            codec(
                what,
                format!("the array's dtype {} is not a list of fields", short(dtype)),
            )
        })?),
        _ => {
            return Err(codec(
                what,
                format!("the array's dtype {} has no objects", short(dtype)),
            ))
        }
    };
    // numcodecs writes the dtype of the chunk's array: `|O`, or `|V<n>`
    // for records.
    let stored_ok = match fields {
        None => stored == "|O",
        Some(_) => stored
            .strip_prefix("|V")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
    };
    if !stored_ok {
        return Err(codec(
            what,
            format!(
                "the json2 chunk's dtype is {:?}, the array's {}",
                printable(&stored),
                short(dtype)
            ),
        ));
    }
    let mut dims = Vec::with_capacity(shape.len().min(MAX_RANK));
    for d in &shape {
        match d.as_u64() {
            Some(n) if dims.len() < MAX_RANK => dims.push(n),
            _ => {
                return Err(codec(
                    what,
                    format!(
                        "the json2 chunk's shape {} is not a list of at most {MAX_RANK} sizes",
                        short(&Value::Array(shape.clone()))
                    ),
                ))
            }
        }
    }
    let count = dims
        .iter()
        .try_fold(1u64, |a, &b| a.checked_mul(b))
        .and_then(|n| usize::try_from(n).ok());
    if count != Some(expected_elements) {
        return Err(codec(
            what,
            format!(
                "the json2 chunk's shape {dims:?} does not hold the chunk's {expected_elements} elements"
            ),
        ));
    }
    let mut flat = Vec::with_capacity(expected_elements);
    if dims.is_empty() {
        // A 0-d array: numcodecs writes its one element alone.
        if items.len() != 1 {
            return Err(codec(
                what,
                format!(
                    "the json2 chunk of a 0-d array has {} elements",
                    items.len()
                ),
            ));
        }
        flat.append(&mut items);
    } else {
        flatten(items, &dims, &mut flat).map_err(|e| codec(what, e))?;
    }
    match fields {
        None => Ok(flat),
        Some(names) => flat
            .into_iter()
            .enumerate()
            .map(|(i, row)| match row {
                Value::Array(values) if values.len() == names.len() => {
                    Ok(Value::Object(names.iter().cloned().zip(values).collect()))
                }
                other => Err(codec(
                    what,
                    format!(
                        "element {i} is {}, not a list of the {} fields",
                        short(&other),
                        names.len()
                    ),
                )),
            })
            .collect(),
    }
}

/// The fill value of a Zarr v2 array of objects whose `.zarray` stores it
/// as a base64 pickle (`"gAVLAC4="`, the int 0, for hdmf-zarr's compounds),
/// as JSON in the form of its elements: for a compound, an object of its
/// fields, which numpy fills as `numpy.array(value, dtype)[()]` does (a
/// number or boolean in every field, or a tuple of one value per field);
/// for `|O`, the value itself.
pub(crate) fn fill_value_json(text: &str, what: &str, dtype: &Value) -> Result<Value> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| codec(what, format!("the fill value is not base64: {e}")))?;
    let value = decode(&bytes, what)?;
    match dtype {
        Value::Array(fields) => {
            record_fill(value, fields, 0).map_err(|e| codec(what, format!("the fill value {e}")))
        }
        _ => value.to_json().map_err(|e| codec(what, e)),
    }
}

impl Pickled {
    /// The value as JSON (module documentation); an array as nested arrays
    /// of its shape. Errors: a dict key that is not a string, an array
    /// whose elements do not fit its type.
    pub(crate) fn to_json(&self) -> std::result::Result<Value, String> {
        Ok(match self {
            Pickled::None => Value::Null,
            Pickled::Bool(b) => Value::Bool(*b),
            Pickled::Int(i) => int_json(*i),
            Pickled::Float(f) => float_json(*f),
            Pickled::Str(s) => Value::String(s.clone()),
            Pickled::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            Pickled::List(v) | Pickled::Tuple(v) => Value::Array(
                v.iter()
                    .map(Pickled::to_json)
                    .collect::<std::result::Result<_, _>>()?,
            ),
            Pickled::Dict(pairs) => {
                let mut map = Map::new();
                for (k, v) in pairs {
                    let Pickled::Str(k) = k else {
                        return Err(format!(
                            "a dict has a key that is {}, not a string",
                            k.kind_name()
                        ));
                    };
                    map.insert(k.clone(), v.to_json()?);
                }
                Value::Object(map)
            }
            Pickled::Reference(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
                    .collect(),
            ),
            Pickled::Array {
                dtype,
                shape,
                items,
            } => {
                let flat = items
                    .iter()
                    .map(|item| typed_json(item.clone(), dtype))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let mut it = flat.into_iter();
                nest(&mut it, shape)
            }
        })
    }

    /// What kind of value this is, for messages.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Pickled::None => "None",
            Pickled::Bool(_) => "a bool",
            Pickled::Int(_) => "an int",
            Pickled::Float(_) => "a float",
            Pickled::Str(_) => "a str",
            Pickled::Bytes(_) => "bytes",
            Pickled::List(_) => "a list",
            Pickled::Tuple(_) => "a tuple",
            Pickled::Dict(_) => "a dict",
            Pickled::Array { .. } => "a numpy array",
            Pickled::Reference(_) => "a ZarrReference",
        }
    }
}

/// `values` (C order) nested as arrays of the shape `dims`; a 0-d array is
/// its one value.
fn nest(values: &mut std::vec::IntoIter<Value>, dims: &[u64]) -> Value {
    match dims.split_first() {
        None => values.next().unwrap_or(Value::Null),
        Some((&n, rest)) => Value::Array(
            (0..n)
                .map_while(|_| (!values.as_slice().is_empty()).then(|| nest(values, rest)))
                .collect(),
        ),
    }
}

/// Appends the elements of `items`, nested as lists of the shape `dims`
/// (at least one dimension), to `out`.
fn flatten(
    items: Vec<Value>,
    dims: &[u64],
    out: &mut Vec<Value>,
) -> std::result::Result<(), String> {
    let Some((&n, rest)) = dims.split_first() else {
        return Err("internal: no dimension left".into());
    };
    if items.len() as u64 != n {
        return Err(format!(
            "a list of {} elements where the shape has {n}",
            items.len()
        ));
    }
    if rest.is_empty() {
        out.extend(items);
        return Ok(());
    }
    for item in items {
        match item {
            Value::Array(inner) => flatten(inner, rest, out)?,
            other => {
                return Err(format!(
                    "{} where the shape has a list of {}",
                    short(&other),
                    rest.first().copied().unwrap_or(0)
                ))
            }
        }
    }
    Ok(())
}

/// The field names of a `.zarray` structured dtype (`[[name, type], ...]`).
fn zarray_field_names(list: &[Value]) -> Option<Vec<String>> {
    list.iter()
        .map(|entry| match entry.as_array()?.as_slice() {
            [Value::String(name), _] => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// The fill value `value` of a compound with `.zarray` fields `fields`, as
/// numpy fills a record from it.
fn record_fill(
    value: Pickled,
    fields: &[Value],
    depth: usize,
) -> std::result::Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("has records nested over {MAX_DEPTH} deep"));
    }
    let mut map = Map::new();
    let per_field: Vec<Pickled> = match value {
        Pickled::Tuple(values) if values.len() == fields.len() => values,
        v @ (Pickled::Int(_) | Pickled::Bool(_) | Pickled::Float(_)) => {
            vec![v; fields.len()]
        }
        other => {
            return Err(format!(
                "is {}, which does not fill a record of {} fields",
                other.kind_name(),
                fields.len()
            ))
        }
    };
    for (entry, v) in fields.iter().zip(per_field) {
        let (name, t) = match entry.as_array().map(Vec::as_slice) {
            Some([Value::String(name), t]) => (name, t),
            _ => {
                return Err(format!(
                    "is for a dtype whose field {} is not [name, type]",
                    short(entry)
                ))
            }
        };
        let json = match t {
            Value::Array(inner) => record_fill(v, inner, depth + 1)?,
            Value::String(code) => cast_fill(v, code).ok_or_else(|| {
                format!(
                    "does not fill the field '{}' of type {code}",
                    printable(name)
                )
            })?,
            _ => {
                return Err(format!(
                    "is for a dtype whose field '{}' has no type",
                    printable(name)
                ))
            }
        };
        map.insert(name.clone(), json);
    }
    Ok(Value::Object(map))
}

/// A fill value `v` cast to the field type `code` as numpy casts it.
fn cast_fill(v: Pickled, code: &str) -> Option<Value> {
    let kind = code
        .trim_start_matches(['<', '>', '|', '='])
        .chars()
        .next()?;
    Some(match (kind, v) {
        ('O', v) => v.to_json().ok()?,
        ('b', Pickled::Bool(b)) => Value::Bool(b),
        ('b', Pickled::Int(i)) => Value::Bool(i != 0),
        ('i' | 'u', Pickled::Int(i)) => int_json(i),
        ('i' | 'u', Pickled::Bool(b)) => int_json(i128::from(b)),
        ('f', Pickled::Float(f)) => float_json(f),
        ('f', Pickled::Int(i)) => float_json(i as f64),
        ('f', Pickled::Bool(b)) => float_json(f64::from(u8::from(b))),
        _ => return None,
    })
}

/// An element of an array of `dtype` as JSON: records as objects of
/// their fields, checked against the field types.
fn typed_json(item: Pickled, dtype: &Dtype) -> std::result::Result<Value, String> {
    match dtype {
        Dtype::Object => item.to_json(),
        Dtype::Scalar(code) => scalar_json(item, code),
        Dtype::Record(r) => {
            let Pickled::Tuple(values) = item else {
                return Err(format!(
                    "{} where a record of {} fields belongs",
                    item.kind_name(),
                    r.fields.len()
                ));
            };
            if values.len() != r.fields.len() {
                return Err(format!(
                    "a record of {} values, the type has {} fields",
                    values.len(),
                    r.fields.len()
                ));
            }
            let mut map = Map::new();
            for (f, v) in r.fields.iter().zip(values) {
                let json = typed_json(v, &f.dtype)
                    .map_err(|e| format!("field '{}': {e}", printable(&f.name)))?;
                map.insert(f.name.clone(), json);
            }
            Ok(Value::Object(map))
        }
    }
}

/// A field value of numpy type `code` (`<i4`, `|b1`, ...) as JSON,
/// checked to be what numpy gives for that type.
fn scalar_json(item: Pickled, code: &str) -> std::result::Result<Value, String> {
    let rest = code.get(1..).unwrap_or("");
    let kind = rest.chars().next().unwrap_or(' ');
    let size: u32 = rest.get(1..).and_then(|n| n.parse().ok()).unwrap_or(0);
    let ok = match (&item, kind) {
        (Pickled::Bool(_), 'b') => true,
        (Pickled::Int(i), 'i') if (1..=8).contains(&size) => {
            let bound = 1i128 << (8 * size - 1);
            (-bound..bound).contains(i)
        }
        (Pickled::Int(i), 'u') if (1..=8).contains(&size) => (0..1i128 << (8 * size)).contains(i),
        (Pickled::Float(_), 'f') | (Pickled::Str(_), 'U') | (Pickled::Bytes(_), 'S' | 'V') => true,
        _ => false,
    };
    if ok {
        item.to_json()
    } else {
        Err(format!("{} where a {code} belongs", item.kind_name()))
    }
}

/// An integer as a JSON number, exactly.
fn int_json(i: i128) -> Value {
    if let Ok(v) = i64::try_from(i) {
        Value::from(v)
    } else if let Ok(v) = u64::try_from(i) {
        Value::from(v)
    } else {
        // The crate's serde_json keeps numbers as written
        // (arbitrary_precision).
        let text = i.to_string();
        text.parse::<Number>()
            .map_or(Value::String(text), Value::Number)
    }
}

/// A float as JSON: the shortest decimal that reads back as the same value
/// (Rust's `Debug` form, which always has a fraction or an exponent), or
/// the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float_json(f: f64) -> Value {
    if f.is_nan() {
        Value::String("NaN".into())
    } else if f.is_infinite() {
        Value::String(if f > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        let text = format!("{f:?}");
        text.parse::<Number>()
            .map_or(Value::String(text), Value::Number)
    }
}

/// A JSON value for a message: its text, cut short.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

/// A name from the input for a message: escaped and cut short.
fn printable(s: &str) -> String {
    let cut: String = s.chars().take(80).collect();
    let escaped: String = cut.escape_debug().collect();
    if cut.len() < s.len() {
        format!("{escaped}...")
    } else {
        escaped
    }
}

fn codec(what: &str, message: impl std::fmt::Display) -> Error {
    Error::codec(format!("{what}: {message}"))
}

fn unsafe_pickle(what: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::UnsafePickle,
        format!("{what}: {message}; nothing was run (the pickle reader reads data only)"),
    )
}

/// The opcodes, by their byte.
mod op {
    pub const MARK: u8 = b'(';
    pub const STOP: u8 = b'.';
    pub const BININT: u8 = b'J';
    pub const BININT1: u8 = b'K';
    pub const BININT2: u8 = b'M';
    pub const NONE: u8 = b'N';
    pub const REDUCE: u8 = b'R';
    pub const BINUNICODE: u8 = b'X';
    pub const APPEND: u8 = b'a';
    pub const BUILD: u8 = b'b';
    pub const EMPTY_DICT: u8 = b'}';
    pub const APPENDS: u8 = b'e';
    pub const BINGET: u8 = b'h';
    pub const LONG_BINGET: u8 = b'j';
    pub const EMPTY_LIST: u8 = b']';
    pub const SETITEM: u8 = b's';
    pub const TUPLE: u8 = b't';
    pub const EMPTY_TUPLE: u8 = b')';
    pub const SETITEMS: u8 = b'u';
    pub const BINFLOAT: u8 = b'G';
    pub const PROTO: u8 = 0x80;
    pub const NEWOBJ: u8 = 0x81;
    pub const TUPLE1: u8 = 0x85;
    pub const TUPLE2: u8 = 0x86;
    pub const TUPLE3: u8 = 0x87;
    pub const NEWTRUE: u8 = 0x88;
    pub const NEWFALSE: u8 = 0x89;
    pub const LONG1: u8 = 0x8a;
    pub const SHORT_BINBYTES: u8 = b'C';
    pub const SHORT_BINUNICODE: u8 = 0x8c;
    pub const STACK_GLOBAL: u8 = 0x93;
    pub const MEMOIZE: u8 = 0x94;
    pub const FRAME: u8 = 0x95;
}

/// The name of every opcode of pickle protocols 0 to 5, for messages.
fn opcode_name(code: u8) -> Option<&'static str> {
    Some(match code {
        b'(' => "MARK",
        b'.' => "STOP",
        b'0' => "POP",
        b'1' => "POP_MARK",
        b'2' => "DUP",
        b'F' => "FLOAT",
        b'I' => "INT",
        b'J' => "BININT",
        b'K' => "BININT1",
        b'L' => "LONG",
        b'M' => "BININT2",
        b'N' => "NONE",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        b'R' => "REDUCE",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'X' => "BINUNICODE",
        b'a' => "APPEND",
        b'b' => "BUILD",
        b'c' => "GLOBAL",
        b'd' => "DICT",
        b'}' => "EMPTY_DICT",
        b'e' => "APPENDS",
        b'g' => "GET",
        b'h' => "BINGET",
        b'i' => "INST",
        b'j' => "LONG_BINGET",
        b'l' => "LIST",
        b']' => "EMPTY_LIST",
        b'o' => "OBJ",
        b'p' => "PUT",
        b'q' => "BINPUT",
        b'r' => "LONG_BINPUT",
        b's' => "SETITEM",
        b't' => "TUPLE",
        b')' => "EMPTY_TUPLE",
        b'u' => "SETITEMS",
        b'G' => "BINFLOAT",
        0x80 => "PROTO",
        0x81 => "NEWOBJ",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x85 => "TUPLE1",
        0x86 => "TUPLE2",
        0x87 => "TUPLE3",
        0x88 => "NEWTRUE",
        0x89 => "NEWFALSE",
        0x8a => "LONG1",
        0x8b => "LONG4",
        b'B' => "BINBYTES",
        b'C' => "SHORT_BINBYTES",
        0x8c => "SHORT_BINUNICODE",
        0x8d => "BINUNICODE8",
        0x8e => "BINBYTES8",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x92 => "NEWOBJ_EX",
        0x93 => "STACK_GLOBAL",
        0x94 => "MEMOIZE",
        0x95 => "FRAME",
        0x96 => "BYTEARRAY8",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => return None,
    })
}

/// The name of opcode `code` for messages (`GLOBAL`, `0xff`).
fn name_of(code: u8) -> String {
    opcode_name(code).map_or_else(|| format!("0x{code:02x}"), str::to_owned)
}

/// The globals a pickle may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Global {
    /// `numpy._core.multiarray._reconstruct` (numpy 2) or
    /// `numpy.core.multiarray._reconstruct` (numpy 1).
    Reconstruct(&'static str),
    /// `numpy.ndarray`.
    Ndarray,
    /// `numpy.dtype`.
    Dtype,
    /// `hdmf_zarr.utils.ZarrReference`.
    ZarrReference,
}

impl Global {
    fn lookup(module: &str, name: &str) -> Option<Global> {
        Some(match (module, name) {
            ("numpy._core.multiarray", "_reconstruct") => {
                Global::Reconstruct("numpy._core.multiarray._reconstruct")
            }
            ("numpy.core.multiarray", "_reconstruct") => {
                Global::Reconstruct("numpy.core.multiarray._reconstruct")
            }
            ("numpy", "ndarray") => Global::Ndarray,
            ("numpy", "dtype") => Global::Dtype,
            ("hdmf_zarr.utils", "ZarrReference") => Global::ZarrReference,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Global::Reconstruct(name) => name,
            Global::Ndarray => "numpy.ndarray",
            Global::Dtype => "numpy.dtype",
            Global::ZarrReference => "hdmf_zarr.utils.ZarrReference",
        }
    }
}

/// A value the machine made. Containers hold the indices of their items
/// in [`Machine::nodes`], so that a value the memo names twice is one
/// value, as in Python, and changes to it (APPENDS, SETITEMS, BUILD) are
/// seen through every name.
#[derive(Debug)]
enum Node {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    /// A `ZarrReference`: keys are [`Node::Str`], values `Str` or `None`.
    Reference(Vec<(usize, usize)>),
    Global(Global),
    /// `numpy.dtype(code, False, True)`; its type once BUILD gave its
    /// state.
    Dtype {
        code: String,
        built: Option<Arc<Dtype>>,
    },
    /// `_reconstruct(numpy.ndarray, (0,), b'b')`; its state once BUILD
    /// gave it.
    Array(Option<Box<ArrayState>>),
}

#[derive(Debug)]
struct ArrayState {
    dtype: Arc<Dtype>,
    shape: Vec<u64>,
    /// The [`Node::List`] of its elements.
    items: usize,
}

impl Node {
    fn kind_name(&self) -> &'static str {
        match self {
            Node::None => "None",
            Node::Bool(_) => "a bool",
            Node::Int(_) => "an int",
            Node::Float(_) => "a float",
            Node::Str(_) => "a str",
            Node::Bytes(_) => "bytes",
            Node::List(_) => "a list",
            Node::Tuple(_) => "a tuple",
            Node::Dict(_) => "a dict",
            Node::Reference(_) => "a ZarrReference",
            Node::Global(_) => "a global",
            Node::Dtype { .. } => "a numpy.dtype",
            Node::Array(_) => "a numpy array",
        }
    }
}

/// The nodes every pickle has: `None`, `True`, `False`.
const NONE_NODE: usize = 0;
const TRUE_NODE: usize = 1;
const FALSE_NODE: usize = 2;

/// What is left of the bound on a decoded value's size.
struct Budget(usize);

impl Budget {
    fn for_input(len: usize) -> Budget {
        Budget(len.saturating_mul(MAX_EXPANSION).saturating_add(1 << 20))
    }
}

/// The pickle machine: a stack with marks, a memo, and the nodes made.
struct Machine<'a> {
    input: &'a [u8],
    pos: usize,
    what: &'a str,
    /// The most elements an array may hold (the chunk's), when known.
    max_elements: Option<usize>,
    nodes: Vec<Node>,
    stack: Vec<usize>,
    /// The stack's length at each open MARK.
    marks: Vec<usize>,
    memo: Vec<usize>,
}

impl<'a> Machine<'a> {
    fn new(input: &'a [u8], what: &'a str, max_elements: Option<usize>) -> Machine<'a> {
        Machine {
            input,
            pos: 0,
            what,
            max_elements,
            nodes: vec![Node::None, Node::Bool(true), Node::Bool(false)],
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Vec::new(),
        }
    }

    fn codec(&self, message: impl std::fmt::Display) -> Error {
        codec(self.what, message)
    }

    fn forbidden(&self, message: impl std::fmt::Display) -> Error {
        unsafe_pickle(self.what, message)
    }

    fn node(&self, i: usize) -> &Node {
        self.nodes.get(i).unwrap_or(&Node::None)
    }

    fn add(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn push_new(&mut self, node: Node) {
        let i = self.add(node);
        self.stack.push(i);
    }

    /// The next `n` bytes, the argument of the opcode at `at`.
    fn take(&mut self, n: usize, code: u8, at: usize) -> Result<&'a [u8]> {
        let remaining = self.input.len().saturating_sub(self.pos);
        if n > remaining {
            return Err(self.codec(format!(
                "the pickle is cut short: {} at byte {at} needs {n} bytes, {remaining} remain",
                name_of(code)
            )));
        }
        let bytes = self.input.get(self.pos..self.pos + n).unwrap_or_default();
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, code: u8, at: usize) -> Result<[u8; N]> {
        let bytes = self.take(N, code, at)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A length argument of `N` little-endian bytes.
    fn length<const N: usize>(&mut self, code: u8, at: usize) -> Result<usize> {
        let bytes: [u8; N] = self.array(code, at)?;
        let mut v = 0u64;
        for (i, b) in bytes.iter().enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        Ok(usize::try_from(v).unwrap_or(usize::MAX))
    }

    fn text(&mut self, n: usize, code: u8, at: usize) -> Result<String> {
        let bytes = self.take(n, code, at)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| self.codec(format!("{} at byte {at} is not UTF-8: {e}", name_of(code))))
    }

    /// The stack's floor: values below the last open MARK belong to it.
    fn fence(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self, code: u8, at: usize) -> Result<usize> {
        if self.stack.len() <= self.fence() {
            return Err(self.underflow(code, at));
        }
        self.stack.pop().ok_or_else(|| self.underflow(code, at))
    }

    fn top(&self, code: u8, at: usize) -> Result<usize> {
        if self.stack.len() <= self.fence() {
            return Err(self.underflow(code, at));
        }
        self.stack
            .last()
            .copied()
            .ok_or_else(|| self.underflow(code, at))
    }

    fn underflow(&self, code: u8, at: usize) -> Error {
        self.codec(format!(
            "{} at byte {at} finds too few values on the stack",
            name_of(code)
        ))
    }

    /// The values pushed since the last MARK, which is closed.
    fn pop_mark(&mut self, code: u8, at: usize) -> Result<Vec<usize>> {
        let Some(mark) = self.marks.pop() else {
            return Err(self.codec(format!("{} at byte {at} has no MARK", name_of(code))));
        };
        if mark > self.stack.len() {
            return Err(self.codec(format!(
                "{} at byte {at}: the stack is below its MARK",
                name_of(code)
            )));
        }
        Ok(self.stack.split_off(mark))
    }

    /// Runs the pickle to its STOP: the value it gives.
    fn run(&mut self) -> Result<usize> {
        loop {
            let at = self.pos;
            let Some(&code) = self.input.get(at) else {
                return Err(self.codec(format!(
                    "the pickle is cut short: it ends at byte {at} without STOP"
                )));
            };
            self.pos += 1;
            match code {
                op::PROTO => {
                    let [v] = self.array(code, at)?;
                    if v > MAX_PROTOCOL {
                        return Err(self.codec(format!("pickle protocol {v} is not supported")));
                    }
                }
                op::FRAME => {
                    let n = self.length::<8>(code, at)?;
                    let remaining = self.input.len().saturating_sub(self.pos);
                    if n > remaining {
                        return Err(self.codec(format!(
                            "the pickle is cut short: a FRAME of {n} bytes at byte {at}, {remaining} remain"
                        )));
                    }
                }
                op::STOP => {
                    let v = self.pop(code, at)?;
                    if !self.stack.is_empty() || !self.marks.is_empty() {
                        return Err(self.codec(format!(
                            "STOP at byte {at} leaves {} values and {} marks on the stack",
                            self.stack.len(),
                            self.marks.len()
                        )));
                    }
                    return Ok(v);
                }
                op::MARK => {
                    if self.marks.len() >= MAX_DEPTH {
                        return Err(self.codec(format!(
                            "MARK at byte {at}: more than {MAX_DEPTH} marks open"
                        )));
                    }
                    self.marks.push(self.stack.len());
                }
                op::NONE => self.stack.push(NONE_NODE),
                op::NEWTRUE => self.stack.push(TRUE_NODE),
                op::NEWFALSE => self.stack.push(FALSE_NODE),
                op::BININT1 => {
                    let [v] = self.array(code, at)?;
                    self.push_new(Node::Int(i128::from(v)));
                }
                op::BININT2 => {
                    let v = u16::from_le_bytes(self.array(code, at)?);
                    self.push_new(Node::Int(i128::from(v)));
                }
                op::BININT => {
                    let v = i32::from_le_bytes(self.array(code, at)?);
                    self.push_new(Node::Int(i128::from(v)));
                }
                op::LONG1 => {
                    let n = self.length::<1>(code, at)?;
                    let bytes = self.take(n, code, at)?;
                    if n > 16 {
                        return Err(self.codec(format!(
                            "LONG1 at byte {at}: an integer of {n} bytes, more than 128 bits"
                        )));
                    }
                    // Little-endian two's complement, sign-extended.
                    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
                    let mut wide = [if negative { 0xff } else { 0 }; 16];
                    wide.get_mut(..n).unwrap_or_default().copy_from_slice(bytes);
                    self.push_new(Node::Int(i128::from_le_bytes(wide)));
                }
                op::BINFLOAT => {
                    let v = f64::from_be_bytes(self.array(code, at)?);
                    self.push_new(Node::Float(v));
                }
                op::SHORT_BINUNICODE => {
                    let n = self.length::<1>(code, at)?;
                    let s = self.text(n, code, at)?;
                    self.push_new(Node::Str(s));
                }
                op::BINUNICODE => {
                    let n = self.length::<4>(code, at)?;
                    let s = self.text(n, code, at)?;
                    self.push_new(Node::Str(s));
                }
                op::SHORT_BINBYTES => {
                    let n = self.length::<1>(code, at)?;
                    let b = self.take(n, code, at)?.to_vec();
                    self.push_new(Node::Bytes(b));
                }
                op::EMPTY_LIST => self.push_new(Node::List(Vec::new())),
                op::EMPTY_TUPLE => self.push_new(Node::Tuple(Vec::new())),
                op::EMPTY_DICT => self.push_new(Node::Dict(Vec::new())),
                op::TUPLE => {
                    let items = self.pop_mark(code, at)?;
                    self.push_new(Node::Tuple(items));
                }
                op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                    let n = usize::from(code - op::TUPLE1) + 1;
                    let mut items = vec![0; n];
                    for slot in items.iter_mut().rev() {
                        *slot = self.pop(code, at)?;
                    }
                    self.push_new(Node::Tuple(items));
                }
                op::MEMOIZE => {
                    let v = self.top(code, at)?;
                    if self.memo.len() >= MAX_MEMO {
                        return Err(self.codec(format!(
                            "MEMOIZE at byte {at}: more than {MAX_MEMO} memo entries"
                        )));
                    }
                    self.memo.push(v);
                }
                op::BINGET | op::LONG_BINGET => {
                    let i = if code == op::BINGET {
                        self.length::<1>(code, at)?
                    } else {
                        self.length::<4>(code, at)?
                    };
                    let Some(&v) = self.memo.get(i) else {
                        return Err(self.codec(format!(
                            "{} at byte {at}: memo entry {i} was never set",
                            name_of(code)
                        )));
                    };
                    self.stack.push(v);
                }
                op::APPEND => {
                    let v = self.pop(code, at)?;
                    let list = self.top(code, at)?;
                    self.append(list, vec![v], code, at)?;
                }
                op::APPENDS => {
                    let items = self.pop_mark(code, at)?;
                    let list = self.top(code, at)?;
                    self.append(list, items, code, at)?;
                }
                op::SETITEM => {
                    let v = self.pop(code, at)?;
                    let k = self.pop(code, at)?;
                    let dict = self.top(code, at)?;
                    self.set_items(dict, vec![(k, v)], code, at)?;
                }
                op::SETITEMS => {
                    let items = self.pop_mark(code, at)?;
                    if items.len() % 2 != 0 {
                        return Err(self.codec(format!(
                            "SETITEMS at byte {at} has an odd number of values ({})",
                            items.len()
                        )));
                    }
                    let pairs = items.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                    let dict = self.top(code, at)?;
                    self.set_items(dict, pairs, code, at)?;
                }
                op::STACK_GLOBAL => {
                    let name = self.pop(code, at)?;
                    let module = self.pop(code, at)?;
                    let (Node::Str(module), Node::Str(name)) = (self.node(module), self.node(name))
                    else {
                        return Err(self.codec(format!(
                            "STACK_GLOBAL at byte {at} of values that are not strings"
                        )));
                    };
                    let Some(global) = Global::lookup(module, name) else {
                        return Err(self.forbidden(format!(
                            "STACK_GLOBAL at byte {at} names {}.{}, which is not allowed",
                            printable(module),
                            printable(name)
                        )));
                    };
                    self.push_new(Node::Global(global));
                }
                op::REDUCE => {
                    let args = self.pop(code, at)?;
                    let callable = self.pop(code, at)?;
                    let made = self.reduce(callable, args, at)?;
                    self.push_new(made);
                }
                op::NEWOBJ => {
                    let args = self.pop(code, at)?;
                    let class = self.pop(code, at)?;
                    let made = self.new_object(class, args, at)?;
                    self.push_new(made);
                }
                op::BUILD => {
                    let state = self.pop(code, at)?;
                    let target = self.top(code, at)?;
                    self.build(target, state, at)?;
                }
                other => {
                    return Err(self.forbidden(format!(
                        "opcode {} at byte {at} is not allowed",
                        name_of(other)
                    )))
                }
            }
        }
    }

    fn append(&mut self, list: usize, items: Vec<usize>, code: u8, at: usize) -> Result<()> {
        let kind = self.node(list).kind_name();
        match self.nodes.get_mut(list) {
            Some(Node::List(l)) => {
                l.extend(items);
                Ok(())
            }
            // Python would call the object's append or extend method.
            _ => Err(self.forbidden(format!(
                "{} at byte {at} to {kind}, not a list",
                name_of(code)
            ))),
        }
    }

    fn set_items(
        &mut self,
        dict: usize,
        pairs: Vec<(usize, usize)>,
        code: u8,
        at: usize,
    ) -> Result<()> {
        let kind = self.node(dict).kind_name();
        if matches!(self.node(dict), Node::Reference(_)) {
            for &(k, v) in &pairs {
                let key_ok = matches!(self.node(k), Node::Str(_));
                let value_ok = matches!(self.node(v), Node::Str(_) | Node::None);
                if !key_ok || !value_ok {
                    return Err(self.forbidden(format!(
                        "{} at byte {at} gives a ZarrReference {} for {}: only strings to strings or None are allowed",
                        name_of(code),
                        self.node(v).kind_name(),
                        self.node(k).kind_name()
                    )));
                }
            }
        }
        match self.nodes.get_mut(dict) {
            Some(Node::Dict(d) | Node::Reference(d)) => {
                d.extend(pairs);
                Ok(())
            }
            // Python would call the object's __setitem__.
            _ => Err(self.forbidden(format!(
                "{} at byte {at} on {kind}, not a dict",
                name_of(code)
            ))),
        }
    }

    /// REDUCE: `callable(*args)`, for the two calls allowed.
    fn reduce(&self, callable: usize, args: usize, at: usize) -> Result<Node> {
        let Node::Global(global) = *self.node(callable) else {
            return Err(self.forbidden(format!(
                "REDUCE at byte {at} calls {}, not an allowed global",
                self.node(callable).kind_name()
            )));
        };
        let args: &[usize] = match self.node(args) {
            Node::Tuple(items) => items,
            _ => &[],
        };
        match global {
            Global::Reconstruct(name) => {
                let shape_ok = |i: usize| match self.node(i) {
                    Node::Tuple(t) => {
                        matches!(t.as_slice(), [z] if matches!(self.node(*z), Node::Int(0)))
                    }
                    _ => false,
                };
                match args {
                    [cls, shape, code]
                        if matches!(self.node(*cls), Node::Global(Global::Ndarray))
                            && shape_ok(*shape)
                            && matches!(self.node(*code), Node::Bytes(b) if b == b"b") =>
                    {
                        Ok(Node::Array(None))
                    }
                    _ => Err(self.forbidden(format!(
                        "REDUCE at byte {at} calls {name} with arguments other than (numpy.ndarray, (0,), b'b')"
                    ))),
                }
            }
            Global::Dtype => match args {
                [code, align, copy]
                    if matches!(self.node(*align), Node::Bool(false))
                        && matches!(self.node(*copy), Node::Bool(true)) =>
                {
                    match self.node(*code) {
                        Node::Str(s) if dtype_code_allowed(s) => Ok(Node::Dtype {
                            code: s.clone(),
                            built: None,
                        }),
                        other => Err(self.forbidden(format!(
                            "REDUCE at byte {at} calls numpy.dtype of {}, not an allowed type code",
                            match other {
                                Node::Str(s) => format!("{:?}", printable(s)),
                                n => n.kind_name().to_owned(),
                            }
                        ))),
                    }
                }
                _ => Err(self.forbidden(format!(
                    "REDUCE at byte {at} calls numpy.dtype with arguments other than (code, False, True)"
                ))),
            },
            Global::Ndarray | Global::ZarrReference => Err(self.forbidden(format!(
                "REDUCE at byte {at} calls {}",
                global.name()
            ))),
        }
    }

    /// NEWOBJ: `cls.__new__(cls, *args)`, only for `ZarrReference()`.
    fn new_object(&self, class: usize, args: usize, at: usize) -> Result<Node> {
        match (self.node(class), self.node(args)) {
            (Node::Global(Global::ZarrReference), Node::Tuple(a)) if a.is_empty() => {
                Ok(Node::Reference(Vec::new()))
            }
            (Node::Global(Global::ZarrReference), _) => Err(self.forbidden(format!(
                "NEWOBJ at byte {at} makes a hdmf_zarr.utils.ZarrReference with arguments"
            ))),
            (Node::Global(g), _) => {
                Err(self.forbidden(format!("NEWOBJ at byte {at} makes a {}", g.name())))
            }
            (other, _) => Err(self.forbidden(format!(
                "NEWOBJ at byte {at} of {}, not an allowed class",
                other.kind_name()
            ))),
        }
    }

    /// BUILD: the state of a fresh dtype or array.
    fn build(&mut self, target: usize, state: usize, at: usize) -> Result<()> {
        match self.node(target) {
            Node::Dtype { code, built: None } => {
                let dtype = self.dtype_state(code, state, at)?;
                if let Some(Node::Dtype { built, .. }) = self.nodes.get_mut(target) {
                    *built = Some(Arc::new(dtype));
                }
                Ok(())
            }
            Node::Array(None) => {
                let array = self.array_state(state, at)?;
                if let Some(Node::Array(slot)) = self.nodes.get_mut(target) {
                    *slot = Some(Box::new(array));
                }
                Ok(())
            }
            // Python would call __setstate__ or set attributes.
            other => Err(self.forbidden(format!(
                "BUILD at byte {at} of {}{}",
                other.kind_name(),
                if matches!(other, Node::Dtype { .. } | Node::Array(_)) {
                    " that already has its state"
                } else {
                    ""
                }
            ))),
        }
    }

    /// A dtype's BUILD state: `(3, byteorder, None, names, fields, size,
    /// alignment, flags)`.
    fn dtype_state(&self, code: &str, state: usize, at: usize) -> Result<Dtype> {
        let bad = |why: &str| {
            self.forbidden(format!(
                "BUILD at byte {at} gives numpy.dtype('{}') a state {why}",
                printable(code)
            ))
        };
        let Node::Tuple(items) = self.node(state) else {
            return Err(bad("that is not a tuple"));
        };
        let [version, order, subarray, names, fields, size, align, flags] = items.as_slice() else {
            return Err(bad("that is not the 8 items of version 3"));
        };
        if !matches!(self.node(*version), Node::Int(3)) {
            return Err(bad("of another version than 3"));
        }
        let order = match self.node(*order) {
            Node::Str(s) if s == "=" => {
                if cfg!(target_endian = "little") {
                    '<'
                } else {
                    '>'
                }
            }
            Node::Str(s) if matches!(s.as_str(), "<" | ">" | "|") => {
                s.chars().next().unwrap_or('|')
            }
            _ => return Err(bad("with a byte order other than <, >, | or =")),
        };
        if !matches!(self.node(*subarray), Node::None) {
            return Err(bad("of a sub-array"));
        }
        for i in [size, align, flags] {
            if !matches!(self.node(*i), Node::Int(_)) {
                return Err(bad("whose size, alignment or flags are not integers"));
            }
        }
        let (kind, n) = code.split_at_checked(1).unwrap_or(("", ""));
        match (self.node(*names), self.node(*fields)) {
            (Node::None, Node::None) => Ok(match kind {
                "O" => Dtype::Object,
                "U" => {
                    // numpy states the size in bytes, its str in characters.
                    let bytes: u64 = n.parse().unwrap_or(0);
                    if !bytes.is_multiple_of(4) {
                        return Err(bad("of a str type whose size is not whole characters"));
                    }
                    Dtype::Scalar(format!("{order}U{}", bytes / 4))
                }
                _ => Dtype::Scalar(format!("{order}{code}")),
            }),
            (Node::Tuple(names), Node::Dict(pairs)) if kind == "V" => {
                let size: u64 = n.parse().unwrap_or(0);
                let record = self.record(size, names, pairs).map_err(|e| bad(&e))?;
                if record.depth > MAX_DEPTH {
                    // MARKs do not bound records built one inside another.
                    return Err(self.codec(format!(
                        "BUILD at byte {at}: records nested more than {MAX_DEPTH} deep"
                    )));
                }
                Ok(Dtype::Record(record))
            }
            _ => Err(bad(
                "with names and fields that are not a tuple and a dict of a V type",
            )),
        }
    }

    /// The record of a structured dtype: `names` in order, each with its
    /// `(dtype, offset)` in the fields dict `pairs`.
    fn record(
        &self,
        size: u64,
        names: &[usize],
        pairs: &[(usize, usize)],
    ) -> std::result::Result<Record, String> {
        let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(pairs.len());
        for &(k, v) in pairs {
            let Node::Str(k) = self.node(k) else {
                return Err("with a field key that is not a string".into());
            };
            by_name.insert(k, v);
        }
        if by_name.len() != names.len() {
            return Err("whose names and fields differ".into());
        }
        let mut fields = Vec::with_capacity(names.len());
        let (mut depth, mut has_object) = (1, false);
        for &name in names {
            let Node::Str(name) = self.node(name) else {
                return Err("with a field name that is not a string".into());
            };
            let Some(&entry) = by_name.get(name.as_str()) else {
                return Err(format!("without the field '{}'", printable(name)));
            };
            let (dtype, offset) = match self.node(entry) {
                Node::Tuple(t) => match t.as_slice() {
                    [d, o] => (*d, *o),
                    _ => {
                        return Err(format!(
                            "whose field '{}' is not (dtype, offset)",
                            printable(name)
                        ))
                    }
                },
                _ => {
                    return Err(format!(
                        "whose field '{}' is not (dtype, offset)",
                        printable(name)
                    ))
                }
            };
            let (
                Node::Dtype {
                    built: Some(dtype), ..
                },
                Node::Int(offset),
            ) = (self.node(dtype), self.node(offset))
            else {
                return Err(format!(
                    "whose field '{}' is not a built dtype and an integer offset",
                    printable(name)
                ));
            };
            let offset = u64::try_from(*offset)
                .ok()
                .filter(|&o| o < size.max(1))
                .ok_or_else(|| {
                    format!("whose field '{}' lies outside the record", printable(name))
                })?;
            depth = depth.max(dtype.depth() + 1);
            has_object |= dtype.has_object();
            fields.push(Field {
                name: name.clone(),
                dtype: Arc::clone(dtype),
                offset,
            });
        }
        Ok(Record {
            size,
            fields,
            depth,
            has_object,
        })
    }

    /// An array's BUILD state: `(1, shape, dtype, is_fortran, elements)`.
    fn array_state(&self, state: usize, at: usize) -> Result<ArrayState> {
        let bad = |why: &str| {
            self.forbidden(format!(
                "BUILD at byte {at} gives a numpy array a state {why}"
            ))
        };
        let Node::Tuple(items) = self.node(state) else {
            return Err(bad("that is not a tuple"));
        };
        let [version, shape, dtype, fortran, raw] = items.as_slice() else {
            return Err(bad("that is not the 5 items of version 1"));
        };
        if !matches!(self.node(*version), Node::Int(1)) {
            return Err(bad("of another version than 1"));
        }
        let Node::Tuple(dims) = self.node(*shape) else {
            return Err(bad("whose shape is not a tuple"));
        };
        if dims.len() > MAX_RANK {
            return Err(self.codec(format!(
                "BUILD at byte {at}: an array of {} dimensions, more than {MAX_RANK}",
                dims.len()
            )));
        }
        let mut shape = Vec::with_capacity(dims.len());
        for &d in dims {
            match self.node(d) {
                Node::Int(n) => shape.push(u64::try_from(*n).map_err(|_| {
                    self.codec(format!("BUILD at byte {at}: an array of shape with {n}"))
                })?),
                _ => return Err(bad("whose shape is not a tuple of integers")),
            }
        }
        let Node::Dtype {
            built: Some(dtype), ..
        } = self.node(*dtype)
        else {
            return Err(bad("whose dtype is not a built numpy.dtype"));
        };
        if !matches!(self.node(*fortran), Node::Bool(_)) {
            return Err(bad("whose order flag is not a bool"));
        }
        if !dtype.has_object() {
            return Err(bad(&format!(
                "of type {}, which holds no objects (its elements would be raw bytes)",
                dtype.describe()
            )));
        }
        let Node::List(elements) = self.node(*raw) else {
            return Err(bad("whose elements are not a list"));
        };
        let count = shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
        if let Some(max) = self.max_elements {
            if elements.len() > max {
                return Err(self.codec(format!(
                    "BUILD at byte {at}: an array of {} elements, the chunk holds {max}",
                    elements.len()
                )));
            }
        }
        if count != Some(elements.len() as u64) {
            return Err(self.codec(format!(
                "BUILD at byte {at}: an array of shape {shape:?} with {} elements",
                elements.len()
            )));
        }
        Ok(ArrayState {
            dtype: Arc::clone(dtype),
            shape,
            items: *raw,
        })
    }

    /// The value of node `i` as data, at most [`MAX_DEPTH`] containers
    /// deep and within `budget`.
    fn to_pickled(&self, i: usize, depth: usize, budget: &mut Budget) -> Result<Pickled> {
        let node = self.node(i);
        let extra = match node {
            Node::Str(s) => s.len(),
            Node::Bytes(b) => b.len(),
            _ => 0,
        };
        match budget.0.checked_sub(VALUE_COST + extra) {
            Some(left) => budget.0 = left,
            None => {
                return Err(self.codec(format!(
                    "the decoded value would be more than {MAX_EXPANSION} times the pickle's {} bytes plus 1 MiB",
                    self.input.len()
                )))
            }
        }
        let nested = |d: usize| -> Result<usize> {
            if d >= MAX_DEPTH {
                Err(self.codec(format!(
                    "the decoded value has containers nested more than {MAX_DEPTH} deep"
                )))
            } else {
                Ok(d + 1)
            }
        };
        Ok(match node {
            Node::None => Pickled::None,
            Node::Bool(b) => Pickled::Bool(*b),
            Node::Int(v) => Pickled::Int(*v),
            Node::Float(f) => Pickled::Float(*f),
            Node::Str(s) => Pickled::Str(s.clone()),
            Node::Bytes(b) => Pickled::Bytes(b.clone()),
            Node::List(items) => {
                let d = nested(depth)?;
                Pickled::List(self.all(items, d, budget)?)
            }
            Node::Tuple(items) => {
                let d = nested(depth)?;
                Pickled::Tuple(self.all(items, d, budget)?)
            }
            Node::Dict(pairs) => {
                let d = nested(depth)?;
                let mut out = Vec::with_capacity(pairs.len());
                for &(k, v) in pairs {
                    out.push((
                        self.to_pickled(k, d, budget)?,
                        self.to_pickled(v, d, budget)?,
                    ));
                }
                Pickled::Dict(out)
            }
            Node::Reference(pairs) => {
                nested(depth)?;
                let mut out = Vec::with_capacity(pairs.len());
                for &(k, v) in pairs {
                    let (Node::Str(k), v) = (self.node(k), self.node(v)) else {
                        continue; // checked by SETITEMS
                    };
                    let cost =
                        VALUE_COST * 2 + k.len() + if let Node::Str(s) = v { s.len() } else { 0 };
                    budget.0 = budget.0.checked_sub(cost).ok_or_else(|| {
                        self.codec(format!(
                            "the decoded value would be more than {MAX_EXPANSION} times the pickle's {} bytes plus 1 MiB",
                            self.input.len()
                        ))
                    })?;
                    let v = match v {
                        Node::Str(s) => Some(s.clone()),
                        _ => None,
                    };
                    out.push((k.clone(), v));
                }
                Pickled::Reference(out)
            }
            Node::Array(Some(state)) => {
                let d = nested(depth)?;
                let Node::List(items) = self.node(state.items) else {
                    return Err(self.codec("an array's elements are not a list"));
                };
                // The list may have grown since BUILD (through the memo).
                let count = state.shape.iter().try_fold(1u64, |a, &b| a.checked_mul(b));
                if count != Some(items.len() as u64) {
                    return Err(self.codec(format!(
                        "an array of shape {:?} has {} elements",
                        state.shape,
                        items.len()
                    )));
                }
                Pickled::Array {
                    dtype: Arc::clone(&state.dtype),
                    shape: state.shape.clone(),
                    items: self.all(items, d, budget)?,
                }
            }
            Node::Array(None) => {
                return Err(self.codec("a numpy array was never given its state (BUILD)"))
            }
            Node::Global(g) => {
                return Err(self.forbidden(format!(
                    "{} is used as a value, not called as allowed",
                    g.name()
                )))
            }
            Node::Dtype { code, .. } => {
                return Err(self.forbidden(format!(
                    "numpy.dtype('{}') is used as a value, not as an array's type",
                    printable(code)
                )))
            }
        })
    }

    fn all(&self, items: &[usize], depth: usize, budget: &mut Budget) -> Result<Vec<Pickled>> {
        items
            .iter()
            .map(|&i| self.to_pickled(i, depth, budget))
            .collect()
    }
}

/// Whether `code` is a type code numpy's dtype pickles name for the types
/// allowed: `O8`/`O4` (objects), `b1`, `i1`..`i8`, `u1`..`u8`, `f2`..`f8`,
/// `V<n>` (records and raw bytes), `S<n>`, `U<n>` (sizes in bytes).
fn dtype_code_allowed(code: &str) -> bool {
    let Some((kind, n)) = code.split_at_checked(1) else {
        return false;
    };
    let size = match n.parse::<u64>() {
        Ok(size) if !n.starts_with('+') && (n == "0" || !n.starts_with('0')) => size,
        _ => return false,
    };
    match kind {
        "O" => matches!(size, 4 | 8),
        "b" => size == 1,
        "i" | "u" => matches!(size, 1 | 2 | 4 | 8),
        "f" => matches!(size, 2 | 4 | 8),
        "V" | "S" | "U" => size <= 1 << 31,
        _ => false,
    }
}
