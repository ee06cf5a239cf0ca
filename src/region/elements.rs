//! Regions as elements rather than bytes: `n5_region_read_json` (every
//! element of a region as JSON, in N5 order), the description of a
//! dataset's element type (`n5_dataset_dtype_json`), and the hdmf-zarr
//! reference markers that make a dataset's elements or fields object
//! references (nwb.md §3), which the JSON gives normalised.

use serde_json::{json, Map, Value};

use crate::dataset::Dataset;
use crate::dtype::json::{utf32_string, write_element};
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};

/// Which parts of a dataset hold object references (hdmf-zarr's markers in
/// its attributes).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct References {
    /// Every element is a reference (`_DTYPE: "object_reference"`, or
    /// `zarr_dtype: "object"`).
    pub whole: bool,
    /// The struct fields that are references (`_REFERENCE_FIELDS`, or the
    /// `"object"` entries of a `zarr_dtype` field list).
    pub fields: Vec<String>,
}

impl References {
    /// The markers in a dataset's user attributes.
    pub(crate) fn of(attributes: &Value) -> References {
        let mut r = References::default();
        match attributes.get("_DTYPE") {
            Some(Value::String(s)) if s == "object_reference" => r.whole = true,
            _ => {}
        }
        match attributes.get("zarr_dtype") {
            Some(Value::String(s)) if s == "object" => r.whole = true,
            Some(Value::Array(fields)) => {
                for f in fields {
                    if f.get("dtype").and_then(Value::as_str) == Some("object") {
                        if let Some(name) = f.get("name").and_then(Value::as_str) {
                            r.fields.push(name.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(Value::Array(names)) = attributes.get("_REFERENCE_FIELDS") {
            for n in names.iter().filter_map(Value::as_str) {
                if !r.fields.iter().any(|f| f == n) {
                    r.fields.push(n.to_string());
                }
            }
        }
        r
    }
}

/// A reference stored as text (a v3 element or a fixed-string field),
/// normalised: a plain path is `{"source": ".", "path": ...}`, a JSON
/// object with a `path` is itself (with `source` `"."` when it has none),
/// an empty string is `null`.
pub(crate) fn normalise_text_reference(s: &str) -> Value {
    if s.is_empty() {
        return Value::Null;
    }
    if s.starts_with('{') {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
            if o.get("path").is_some_and(Value::is_string) {
                return normalise_object_reference(&o);
            }
        }
    }
    json!({"source": ".", "path": s})
}

/// A reference stored as an object (`{"source", "path", "object_id",
/// "source_object_id"}`), normalised: `source` and `path` first, the two
/// ids when the object has them (as stored, null included).
pub(crate) fn normalise_object_reference(o: &Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert(
        "source".into(),
        o.get("source").cloned().unwrap_or_else(|| json!(".")),
    );
    m.insert("path".into(), o.get("path").cloned().unwrap_or(Value::Null));
    for key in ["object_id", "source_object_id"] {
        if let Some(v) = o.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

impl Dataset {
    /// Bytes per element of the binary layout (`n5_dataset_element_size`);
    /// 0 for elements of variable length.
    pub fn element_size(&self) -> usize {
        self.attributes().data_type.element_size()
    }

    /// The hdmf-zarr reference markers of the dataset.
    pub(crate) fn references(&self) -> Result<References> {
        Ok(References::of(&self.container().attributes(self.path())?))
    }

    /// The description of the element type (`n5_dataset_dtype_json`):
    /// [`DataType::describe`] with the stored byte order, plus `stored`
    /// (the format's own spelling), `object_codec`, and for hdmf-zarr
    /// reference datasets `reference: true` or `reference_fields`.
    pub fn dtype_json(&self) -> Result<Value> {
        let stored = self.array().stored_type();
        let t = self.data_type();
        let mut m = t.describe(stored.byte_order);
        m.insert("stored".into(), stored.stored);
        if let Some(codec) = stored.object_codec {
            m.insert("object_codec".into(), json!(codec));
        }
        let refs = self.references()?;
        if refs.whole {
            m.insert("reference".into(), json!(true));
        }
        if !refs.fields.is_empty() && matches!(t, DataType::Struct(_)) {
            m.insert("reference_fields".into(), json!(refs.fields));
        }
        Ok(Value::Object(m))
    }

    /// The elements of the region at `offset` of `shape` as one flat JSON
    /// array in N5 order (`n5_region_read_json`), each as nwb.md §1 says;
    /// reference fields of a struct normalised (§3).
    pub fn read_region_json(&self, offset: &[u64], shape: &[u64]) -> Result<String> {
        let attrs = self.attributes();
        let t = attrs.data_type.clone();
        if !t.has_layout() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "JSON of {t} elements of dataset '{}' is not supported yet",
                    crate::path::display(self.path())
                ),
            ));
        }
        attrs.check_rank(shape.len(), "shape")?;
        let size = t.size();
        let bytes = shape
            .iter()
            .try_fold(size as u64, |a, &s| a.checked_mul(s))
            .and_then(|b| usize::try_from(b).ok())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::invalid_argument(format!("a region of {shape:?} is too large"))
            })?;
        let mut buf = vec![0u8; bytes];
        self.read_region(offset, shape, &mut buf)?;
        let refs = self.references()?;
        let ref_fields: Vec<usize> = match &t {
            DataType::Struct(s) => s
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| refs.fields.contains(&f.name))
                .map(|(i, _)| i)
                .collect(),
            _ => Vec::new(),
        };
        let mut out = String::with_capacity(2 + buf.len() / size.max(1) * 4);
        out.push('[');
        for (i, e) in buf.chunks_exact(size.max(1)).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let written = if ref_fields.is_empty() {
                write_element(&mut out, &t, e)
            } else {
                write_struct_with_references(&mut out, &t, e, &ref_fields)
            };
            written.map_err(|err| {
                err.context(format!(
                    "element {i} of the region of dataset '{}'",
                    crate::path::display(self.path())
                ))
            })?;
        }
        out.push(']');
        Ok(out)
    }
}

/// A struct element whose fields at `ref_fields` are fixed strings holding
/// references, written with those normalised.
fn write_struct_with_references(
    out: &mut String,
    t: &DataType,
    e: &[u8],
    ref_fields: &[usize],
) -> Result<()> {
    let DataType::Struct(s) = t else {
        return write_element(out, t, e);
    };
    out.push('{');
    for (i, f) in s.fields().iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        crate::dtype::json::write_string(out, &f.name);
        out.push_str(": ");
        let part = &e[f.offset..f.offset + f.data_type.size()];
        if ref_fields.contains(&i) && matches!(f.data_type, DataType::FixedUtf32 { .. }) {
            let text = utf32_string(part)?;
            out.push_str(&normalise_text_reference(&text).to_string());
        } else {
            write_element(out, &f.data_type, part)?;
        }
    }
    out.push('}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_normalise_from_every_form() {
        assert_eq!(normalise_text_reference(""), Value::Null);
        assert_eq!(
            normalise_text_reference("/acquisition/ts_a"),
            json!({"source": ".", "path": "/acquisition/ts_a"})
        );
        assert_eq!(
            normalise_text_reference(r#"{"path": "/a", "source": "../b.zarr"}"#),
            json!({"source": "../b.zarr", "path": "/a"})
        );
        let o = json!({"object_id": null, "path": "/x", "source": ".", "extra": 1, "source_object_id": "id"});
        assert_eq!(
            normalise_object_reference(o.as_object().unwrap()),
            json!({"source": ".", "path": "/x", "object_id": null, "source_object_id": "id"})
        );
        let r = References::of(
            &json!({"zarr_dtype": [{"name": "idx", "dtype": "int32"}, {"name": "ts", "dtype": "object"}]}),
        );
        assert_eq!(r.fields, ["ts"]);
        assert!(!r.whole);
        assert!(References::of(&json!({"_DTYPE": "object_reference"})).whole);
        assert_eq!(
            References::of(&json!({"_REFERENCE_FIELDS": ["ts"]})).fields,
            ["ts"]
        );
    }
}
