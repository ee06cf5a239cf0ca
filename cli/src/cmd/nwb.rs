//! What `n5 cp` does with hdmf-zarr (NWB) containers (nwb.md §5): links
//! copied as links (their targets inside the copied tree moved to the
//! copy, others kept, with their container reference rewritten relative to
//! the destination), and the legacy Zarr v2 convention (hdmf-zarr ≤ 0.13)
//! turned into the current Zarr v3 one: reference attributes, `zarr_dtype`
//! as `_DTYPE`, pickled or JSON reference datasets as `string` paths,
//! reference compounds as structs with fixed UTF-32 fields, and shape-`[1]`
//! scalars as 0-d arrays.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use n5::dtype::StructType;
use n5::format::Format;
use n5::links::LinkEntry;
use n5::{Container, DataType, Dataset};
use serde_json::{json, Map, Value};

use crate::error::{At, CliError, CliResult};
use crate::location::{join, Location};

/// The least number of characters hdmf-zarr gives a reference field of a
/// compound (`COMPOUND_DTYPE_MIN_STRING_LENGTH`).
pub const MIN_REFERENCE_CHARS: usize = 512;

/// A link the copy makes: in the destination group of the copied link, a
/// link of the same name to `path` in the container `source` names
/// (relative to the destination container; `"."` for itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewLink {
    /// The container reference, relative to the destination container.
    pub source: String,
    /// The absolute path of the target there.
    pub path: String,
}

/// `p` made absolute (against the current directory) with `.` and `..`
/// removed lexically, as the library resolves container references.
fn absolute(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// A container location as the library parses it, local paths made
/// absolute so that two spellings of one place compare equal.
fn parsed(location: &str) -> Option<n5::storage::Location> {
    let l = n5::storage::Location::parse(location).ok()?;
    match &l.backend {
        n5::storage::location::Backend::File(p) => {
            n5::storage::Location::parse(&absolute(p).to_string_lossy()).ok()
        }
        _ => Some(l),
    }
}

/// The reference relative to the destination container `dloc` that leads
/// to the container at `target` (a location as the library gives it),
/// `None` when no relative reference reaches it.
fn relative_source(dloc: &Location, target: &str) -> Option<String> {
    let from = parsed(&dloc.root)?;
    let to = parsed(target)?;
    from.relative_reference(&to)
}

/// The link the copy of the link `entry` (at `rel` below the copied source
/// `sloc` of the container `src`) makes at the destination `dloc`: a
/// target inside the copied tree becomes the copy of it; any other keeps
/// its node, its container named relative to the destination. A link that
/// leads nowhere, one whose target no relative reference reaches, and any
/// link into a format without links, are errors naming it (`sarg`).
pub fn plan_link(
    entry: &LinkEntry,
    src: &Container,
    sloc: &Location,
    dloc: &Location,
    format: Format,
    sarg: &str,
) -> CliResult<NewLink> {
    if !matches!(format, Format::Zarr2 | Format::Zarr3) {
        return Err(CliError::new(
            sarg,
            format!(
                "is a link, and {} containers have no links (links are hdmf-zarr's, in Zarr v2 and v3)",
                format.name()
            ),
        ));
    }
    let target = entry.target.as_ref().map_err(|e| {
        CliError::new(
            sarg,
            format!(
                "is a link that leads nowhere, which cannot be copied: {}",
                e.message()
            ),
        )
    })?;
    let root = format!("/{}", sloc.inner.trim_matches('/'));
    let inside = if root == "/" {
        Some(target.path.trim_start_matches('/'))
    } else if target.path == root {
        Some("")
    } else {
        target.path.strip_prefix(&format!("{root}/"))
    };
    if target.location == src.location() {
        if let Some(rel) = inside {
            return Ok(NewLink {
                source: ".".into(),
                path: format!("/{}", join(&dloc.inner, rel)),
            });
        }
    }
    let source = relative_source(dloc, &target.location).ok_or_else(|| {
        CliError::new(
            sarg,
            format!(
                "is a link to {} in '{}', which no container reference relative to the destination '{}' reaches (another backend, bucket or host)",
                target.path, target.location, dloc.root
            ),
        )
    })?;
    Ok(NewLink {
        source,
        path: target.path.clone(),
    })
}

/// Where the copied attributes of a group keep its links (written again
/// with `Container::create_link`, in the destination's own form).
pub const LINK_KEYS: [&str; 2] = ["_LINKS", "zarr_link"];

/// The names hdmf-zarr ≤ 0.13 gave text datasets in `zarr_dtype`.
const TEXT_NAMES: [&str; 6] = ["str", "text", "utf", "utf8", "utf-8", "ascii"];

/// Turn the legacy reference attributes among `attributes` (`{"zarr_dtype":
/// "object", "value": {"source", "path", ...}}`) into the current form
/// (`{"_REFERENCE": {"source", "path"}}`), and a dataset's `zarr_dtype`
/// (of the destination type `t`) into `_DTYPE`: `"object"` becomes
/// `"object_reference"`, text names `"str"`, `"scalar"` the element's type
/// name, numeric names are kept, and a compound's field list goes (the
/// struct type says it; `_REFERENCE_FIELDS` names the references).
pub fn convert_attributes(attributes: &mut Map<String, Value>, t: Option<&DataType>) {
    for v in attributes.values_mut() {
        let legacy = v.get("zarr_dtype").and_then(Value::as_str) == Some("object");
        if let (true, Some(value)) = (legacy, v.get("value").and_then(Value::as_object)) {
            let source = value.get("source").cloned().unwrap_or_else(|| json!("."));
            let path = value.get("path").cloned().unwrap_or(Value::Null);
            *v = json!({"_REFERENCE": {"source": source, "path": path}});
        }
    }
    let Some(zarr_dtype) = attributes.remove("zarr_dtype") else {
        return;
    };
    let name = match (&zarr_dtype, t) {
        (Value::String(s), _) if s == "object" => "object_reference".to_string(),
        (Value::String(s), _) if TEXT_NAMES.contains(&s.as_str()) => "str".to_string(),
        // Legacy text stored as bytes, converted to a `string` array.
        (Value::String(s), Some(DataType::String)) if s == "bytes" => "str".to_string(),
        (Value::String(s), Some(t)) if s == "scalar" => match t {
            DataType::String => "str".to_string(),
            DataType::Object => "bytes".to_string(),
            t => t.name().to_string(),
        },
        (Value::String(s), _) => s.clone(),
        _ => return,
    };
    attributes.insert("_DTYPE".into(), json!(name));
}

/// What the copy writes into a converted dataset, whole.
#[derive(Clone, Debug)]
pub enum Content {
    /// Strings, N5 order.
    Strings(Vec<String>),
    /// Elements of a binary layout, native order.
    Layout(Vec<u8>),
    /// Variable-length elements: their bytes and lengths.
    Bytes(Vec<u8>, Vec<u64>),
}

/// A legacy dataset's conversion: the new type and shape and its content.
#[derive(Clone, Debug)]
pub struct Legacy {
    /// The element type of the copy.
    pub data_type: DataType,
    /// Its dimensions (N5 order; `[]` for a scalar).
    pub dimensions: Vec<u64>,
    /// Its fill value (one native element; a string's UTF-8).
    pub fill: Vec<u8>,
    /// Reference fields of a struct (the `_REFERENCE_FIELDS` attribute).
    pub reference_fields: Vec<String>,
    /// The elements.
    pub content: Content,
}

/// The path of the normalised reference `v` (element `i` of `arg`), which
/// must be in the same container (`source` `"."`); `""` for none.
fn reference_path(v: &Value, i: usize, arg: &str) -> CliResult<String> {
    match v {
        Value::Null => Ok(String::new()),
        Value::Object(o) => {
            let source = o.get("source").and_then(Value::as_str).unwrap_or(".");
            if source != "." {
                return Err(CliError::new(
                    arg,
                    format!(
                        "element {i} is a reference into another container ('{source}'), which the current convention's reference datasets cannot hold"
                    ),
                ));
            }
            Ok(o.get("path")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string())
        }
        other => Err(CliError::new(
            arg,
            format!("element {i} ({other}) is not an object reference"),
        )),
    }
}

/// One element of the numeric type `t` from its JSON (`n5_region_read_json`
/// form), native order; `None` for other types or values.
fn encode_number(t: &DataType, v: &Value) -> Option<Vec<u8>> {
    let float = || match v {
        Value::String(s) if s == "NaN" => Some(f64::NAN),
        Value::String(s) if s == "Infinity" => Some(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Some(f64::NEG_INFINITY),
        v => v.as_f64(),
    };
    Some(match t {
        DataType::U8 => u8::try_from(v.as_u64()?).ok()?.to_ne_bytes().to_vec(),
        DataType::U16 => u16::try_from(v.as_u64()?).ok()?.to_ne_bytes().to_vec(),
        DataType::U32 => u32::try_from(v.as_u64()?).ok()?.to_ne_bytes().to_vec(),
        DataType::U64 => v.as_u64()?.to_ne_bytes().to_vec(),
        DataType::I8 => i8::try_from(v.as_i64()?).ok()?.to_ne_bytes().to_vec(),
        DataType::I16 => i16::try_from(v.as_i64()?).ok()?.to_ne_bytes().to_vec(),
        DataType::I32 => i32::try_from(v.as_i64()?).ok()?.to_ne_bytes().to_vec(),
        DataType::I64 => v.as_i64()?.to_ne_bytes().to_vec(),
        DataType::F32 => (float()? as f32).to_ne_bytes().to_vec(),
        DataType::F64 => float()?.to_ne_bytes().to_vec(),
        DataType::Bool => vec![u8::from(v.as_bool()?)],
        _ => return None,
    })
}

/// `s` as `chars` UTF-32 code units, NUL-padded, native order.
fn utf32(s: &str, chars: usize) -> Vec<u8> {
    let mut out: Vec<u8> = s.chars().flat_map(|c| (c as u32).to_ne_bytes()).collect();
    out.resize(chars * 4, 0);
    out
}

/// The conversion of the dataset `ds` of a legacy (Zarr v2) hdmf-zarr
/// container into the current Zarr v3 convention, when it needs one
/// (`None` otherwise): a reference dataset becomes `string` paths, pickled
/// or JSON strings (`json2`, `pickle`) and UTF-8 bytes of an hdmf-zarr
/// dataset (its dates) a `string` array, a
/// compound with reference fields a struct whose reference fields are
/// fixed UTF-32 strings of at least [`MIN_REFERENCE_CHARS`] characters, a
/// `zarr_dtype: "scalar"` dataset of shape `[1]` a 0-d array. The elements
/// are read here, before anything is written; a reference into another
/// container is an error.
pub fn legacy_dataset(ds: &Dataset, attributes: &Value, arg: &str) -> CliResult<Option<Legacy>> {
    let dtype = ds.dtype_json().at(arg)?;
    let t = ds.data_type();
    let attrs = ds.attributes();
    let dims = attrs.dimensions.clone();
    let zero = vec![0u64; dims.len()];
    let whole = dtype.get("reference") == Some(&json!(true));
    let fields: Vec<String> = dtype
        .get("reference_fields")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let scalar =
        attributes.get("zarr_dtype").and_then(Value::as_str) == Some("scalar") && dims == [1];
    let read_json = || -> CliResult<Vec<Value>> {
        let text = ds.read_region_json(&zero, &dims).at(arg)?;
        serde_json::from_str(&text).map_err(|e| CliError::new(arg, e))
    };
    if whole {
        let values = read_json()?;
        let paths = values
            .iter()
            .enumerate()
            .map(|(i, v)| reference_path(v, i, arg))
            .collect::<CliResult<Vec<String>>>()?;
        return Ok(Some(Legacy {
            data_type: DataType::String,
            dimensions: if scalar { Vec::new() } else { dims },
            fill: Vec::new(),
            reference_fields: Vec::new(),
            content: Content::Strings(paths),
        }));
    }
    let codec = dtype.get("object_codec").and_then(Value::as_str);
    if matches!(codec, Some("pickle" | "json2")) && !matches!(t, DataType::Struct(_)) {
        // Pickled or JSON objects (the cached specifications are JSON
        // text so): strings become a `string` array.
        let strings = read_json()?
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s),
                Value::Null => Ok(String::new()),
                other => Err(CliError::new(
                    arg,
                    format!(
                        "element {i} ({other}) is a {} object other than a string, which no Zarr v3 type holds",
                        codec.unwrap_or("pickled")
                    ),
                )),
            })
            .collect::<CliResult<Vec<String>>>()?;
        return Ok(Some(Legacy {
            data_type: DataType::String,
            dimensions: if scalar { Vec::new() } else { dims },
            fill: Vec::new(),
            reference_fields: Vec::new(),
            content: Content::Strings(strings),
        }));
    }
    if t == DataType::Object
        && codec == Some("vlen-bytes")
        && attributes.get("zarr_dtype").is_some()
    {
        // hdmf-zarr ≤ 0.13 stored text such as dates as bytes; the current
        // convention (and hdmf-zarr's reader) has `string` for it. Bytes
        // that are not all UTF-8 stay bytes.
        let (data, lengths) = ds.read_region_bytes(&zero, &dims).at(arg)?;
        if std::str::from_utf8(&data).is_ok() {
            return Ok(Some(Legacy {
                data_type: DataType::String,
                dimensions: if scalar { Vec::new() } else { dims },
                fill: Vec::new(),
                reference_fields: Vec::new(),
                content: Content::Bytes(data, lengths),
            }));
        }
    }
    if let (DataType::Struct(s), false) = (&t, fields.is_empty()) {
        let rows = read_json()?;
        // Each reference field holds the longest of its paths.
        let mut paths: Vec<Vec<String>> = Vec::with_capacity(rows.len());
        let mut longest = MIN_REFERENCE_CHARS;
        for (i, row) in rows.iter().enumerate() {
            let mut these = Vec::new();
            for f in &fields {
                let p = reference_path(row.get(f).unwrap_or(&Value::Null), i, arg)?;
                longest = longest.max(p.chars().count());
                these.push(p);
            }
            paths.push(these);
        }
        let chars = u32::try_from(longest).map_err(|_| CliError::new(arg, "a path is too long"))?;
        let mut new_fields = Vec::new();
        for f in s.fields() {
            let ft = if fields.contains(&f.name) {
                DataType::FixedUtf32 { chars }
            } else if f.data_type.is_numeric() || f.data_type == DataType::Bool {
                f.data_type.clone()
            } else {
                return Err(CliError::new(
                    arg,
                    format!(
                        "the field '{}' ({}) of this legacy compound has no conversion (numeric, bool and reference fields do)",
                        f.name, f.data_type
                    ),
                ));
            };
            new_fields.push((f.name.clone(), ft));
        }
        let st = StructType::new(new_fields).at(arg)?;
        let mut data = Vec::with_capacity(rows.len() * st.size());
        for (i, row) in rows.iter().enumerate() {
            let mut k = 0;
            for f in st.fields() {
                if let DataType::FixedUtf32 { chars } = f.data_type {
                    data.extend(utf32(&paths[i][k], chars as usize));
                    k += 1;
                    continue;
                }
                let v = row.get(&f.name).unwrap_or(&Value::Null);
                let e = encode_number(&f.data_type, v).ok_or_else(|| {
                    CliError::new(
                        arg,
                        format!(
                            "element {i}: field '{}' holds {v}, not a {}",
                            f.name, f.data_type
                        ),
                    )
                })?;
                data.extend(e);
            }
        }
        let new = DataType::Struct(Arc::new(st));
        return Ok(Some(Legacy {
            fill: vec![0u8; new.size()],
            data_type: new,
            dimensions: if scalar { Vec::new() } else { dims },
            reference_fields: fields,
            content: Content::Layout(data),
        }));
    }
    if !scalar {
        return Ok(None);
    }
    let content = if t.has_layout() {
        let mut buf = vec![0u8; t.size()];
        ds.read_region(&[0], &[1], &mut buf).at(arg)?;
        Content::Layout(buf)
    } else {
        let (data, lengths) = ds.read_region_bytes(&[0], &[1]).at(arg)?;
        Content::Bytes(data, lengths)
    };
    Ok(Some(Legacy {
        data_type: t,
        dimensions: Vec::new(),
        fill: ds.fill_value(),
        reference_fields: Vec::new(),
        content,
    }))
}

/// Write the converted content into the new dataset `ds` (whole).
pub fn write_legacy(ds: &Dataset, content: &Content) -> n5::Result<()> {
    let dims = ds.attributes().dimensions.clone();
    let zero = vec![0u64; dims.len()];
    match content {
        Content::Strings(s) => ds.write_region_strings(&zero, &dims, s),
        Content::Layout(b) => ds.write_region(&zero, &dims, b),
        Content::Bytes(b, l) => ds.write_region_bytes(&zero, &dims, b, l),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_attributes_become_current() {
        let mut m: Map<String, Value> = serde_json::from_value(json!({
            "table": {"zarr_dtype": "object", "value": {"source": ".", "path": "/x",
                      "object_id": "a", "source_object_id": "b"}},
            "zarr_dtype": "object",
            "plain": 3
        }))
        .unwrap();
        convert_attributes(&mut m, Some(&DataType::String));
        assert_eq!(
            Value::Object(m),
            json!({"table": {"_REFERENCE": {"source": ".", "path": "/x"}},
                   "_DTYPE": "object_reference", "plain": 3})
        );
        for (given, t, want) in [
            ("scalar", DataType::F64, "float64"),
            ("scalar", DataType::String, "str"),
            ("text", DataType::String, "str"),
            ("int16", DataType::I16, "int16"),
        ] {
            let mut m = Map::new();
            m.insert("zarr_dtype".into(), json!(given));
            convert_attributes(&mut m, Some(&t));
            assert_eq!(m["_DTYPE"], json!(want), "{given}");
        }
        let mut m = Map::new();
        m.insert(
            "zarr_dtype".into(),
            json!([{"name": "a", "dtype": "object"}]),
        );
        convert_attributes(&mut m, None);
        assert!(m.is_empty());
    }

    #[test]
    fn numbers_and_strings_encode_natively() {
        assert_eq!(
            encode_number(&DataType::I32, &json!(-2)),
            Some((-2i32).to_ne_bytes().to_vec())
        );
        assert_eq!(encode_number(&DataType::U8, &json!(300)), None);
        assert!(f64::from_ne_bytes(
            encode_number(&DataType::F64, &json!("NaN"))
                .unwrap()
                .try_into()
                .unwrap()
        )
        .is_nan());
        assert_eq!(utf32("é", 2).len(), 8);
        assert_eq!(&utf32("é", 2)[..4], &0xe9u32.to_ne_bytes());
    }
}
