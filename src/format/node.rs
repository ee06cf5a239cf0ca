//! Where each format keeps a node's metadata and user attributes, and what
//! makes a path a group or an array: N5's attributes.json (user attributes
//! and dataset metadata in one document), Zarr v3's zarr.json (`node_type`,
//! user attributes in its `attributes` member) and Zarr v2's .zgroup,
//! .zarray and .zattrs. The container asks this file which node a path
//! holds, reads and merges user attributes through it, and marks new
//! groups with it; it works on any [`Store`].

use serde_json::{json, Map, Value};

use super::Format;
use crate::error::{Error, ErrorKind, Result};
use crate::path;
use crate::storage::{Precondition, Store};

/// The N5 node document.
pub(crate) const N5_ATTRIBUTES: &str = "attributes.json";
/// The Zarr v3 node document.
pub(crate) const ZARR_JSON: &str = "zarr.json";
/// The Zarr v2 group marker, array metadata and user attributes.
pub(crate) const ZGROUP: &str = ".zgroup";
pub(crate) const ZARRAY: &str = ".zarray";
/// The Zarr v2 consolidated metadata document at the root.
pub(crate) const ZMETADATA: &str = ".zmetadata";
pub(crate) const ZATTRS: &str = ".zattrs";

/// What a path holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// A group (or an N5 node without dataset metadata).
    Group,
    /// An array (an N5 dataset).
    Array,
}

/// Whether the last component of `key` is a metadata document of any
/// format, consolidated ones included (never a chunk, so never kept by the
/// block cache).
pub(crate) fn is_metadata_key(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    matches!(name, N5_ATTRIBUTES | ZARR_JSON | ZGROUP | ZARRAY | ZATTRS) || name == ZMETADATA
}

/// Parse a metadata document read from `key`; an error names it.
pub(crate) fn parse_json(bytes: &[u8], key: &str, store: &dyn Store) -> Result<Value> {
    crate::jsontext::parse(bytes).map_err(|e| {
        Error::new(
            ErrorKind::Json,
            format!("{} is not valid JSON: {e}", store.describe(key)),
        )
    })
}

/// The document as an object, replacing a non-object document by `{}`.
pub(crate) fn as_object_mut(doc: &mut Value) -> &mut Map<String, Value> {
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    match doc {
        Value::Object(map) => map,
        _ => unreachable!("replaced by an object above"),
    }
}

/// The error of asking where an HDF5 file keeps a node's documents in a
/// store: nowhere (libhdf5 reads and writes the file; its hierarchy is
/// `hdf5::tree`'s).
fn not_in_a_store() -> Error {
    Error::new(
        ErrorKind::Internal,
        "an HDF5 file keeps no node documents in a store",
    )
}

impl Format {
    /// The key of the document that holds the user attributes of the node
    /// at the normalised `path`.
    pub(crate) fn attributes_key(self, path: &str) -> Result<String> {
        Ok(path::join(
            path,
            match self {
                Format::N5 => N5_ATTRIBUTES,
                Format::Zarr3 => ZARR_JSON,
                Format::Zarr2 => ZATTRS,
                Format::Hdf5 => return Err(not_in_a_store()),
            },
        ))
    }

    /// The parsed document at `key`, `None` when there is none.
    fn read_doc(store: &dyn Store, key: &str) -> Result<Option<Value>> {
        store
            .get(key)?
            .map(|b| parse_json(&b, key, store))
            .transpose()
    }

    /// The user attributes of the node at `path` (for N5 the whole
    /// attributes.json, dataset metadata included, as the N5 API shows it),
    /// `None` when the document that holds them does not exist.
    pub(crate) fn user_attributes(self, store: &dyn Store, path: &str) -> Result<Option<Value>> {
        let key = self.attributes_key(path)?;
        let Some(doc) = Format::read_doc(store, &key)? else {
            return Ok(None);
        };
        Ok(Some(if self == Format::Zarr3 {
            match doc.get("attributes") {
                Some(a) => a.clone(),
                None => Value::Object(Map::new()),
            }
        } else {
            doc
        }))
    }

    /// Read-modify-write the user attributes of the node at `path`
    /// atomically with respect to every other writer ([`Store::update`]);
    /// the document is replaced only when `f` changed it or there was
    /// none. A Zarr v3 node without zarr.json becomes a group.
    pub(crate) fn update_user_attributes<T>(
        self,
        store: &dyn Store,
        path: &str,
        f: &mut dyn FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        let key = self.attributes_key(path)?;
        let mut result = None;
        store.update(&key, &mut |current| {
            let mut doc = match current {
                Some(bytes) => parse_json(bytes, &key, store)?,
                None => match self {
                    Format::Zarr3 => group_document(self),
                    _ => Value::Object(Map::new()),
                },
            };
            let before = doc.clone();
            let target = match self {
                Format::Zarr3 => as_object_mut(&mut doc)
                    .entry("attributes")
                    .or_insert_with(|| Value::Object(Map::new())),
                _ => &mut doc,
            };
            result = Some(f(target)?);
            if doc == before && current.is_some() {
                return Ok(None);
            }
            crate::jsontext::to_vec(&doc)
                .map(Some)
                .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
        })?;
        result.ok_or_else(|| Error::new(ErrorKind::Internal, "an attribute update did not run"))
    }

    /// What the node at `path` is by its own documents, `None` when it has
    /// none (an N5 directory without attributes.json, an implicit Zarr
    /// group, or nothing). An N5 attributes.json that is not valid JSON
    /// makes a group, as for the other N5 implementations.
    pub(crate) fn node_kind(self, store: &dyn Store, path: &str) -> Result<Option<NodeKind>> {
        match self {
            Format::N5 => Ok(match Format::read_doc(store, &self.attributes_key(path)?) {
                Ok(Some(doc)) if crate::format::n5::metadata::is_dataset(&doc) => {
                    Some(NodeKind::Array)
                }
                Ok(Some(_)) => Some(NodeKind::Group),
                Ok(None) => None,
                Err(e) if e.kind() == ErrorKind::Json => Some(NodeKind::Group),
                Err(e) => return Err(e),
            }),
            Format::Zarr3 => {
                let key = path::join(path, ZARR_JSON);
                let Some(doc) = Format::read_doc(store, &key)? else {
                    return Ok(None);
                };
                match doc.get("node_type").and_then(Value::as_str) {
                    Some("array") => Ok(Some(NodeKind::Array)),
                    Some("group") => Ok(Some(NodeKind::Group)),
                    other => Err(Error::invalid_metadata(format!(
                        "{}: node_type is {}, not \"group\" or \"array\"",
                        store.describe(&key),
                        other.map_or("missing".to_string(), |s| format!("'{s}'"))
                    ))),
                }
            }
            Format::Zarr2 => {
                if store.exists(&path::join(path, ZARRAY))? {
                    Ok(Some(NodeKind::Array))
                } else if store.exists(&path::join(path, ZGROUP))?
                    || store.exists(&path::join(path, ZATTRS))?
                {
                    Ok(Some(NodeKind::Group))
                } else {
                    Ok(None)
                }
            }
            Format::Hdf5 => Err(not_in_a_store()),
        }
    }

    /// The nearest proper ancestor of `path` that is an array, if any: the
    /// directories of a Zarr array's chunks are no nodes. Always `None` for
    /// N5, whose block directories hold no attributes.json.
    pub(crate) fn array_above(self, store: &dyn Store, path: &str) -> Result<Option<String>> {
        if self == Format::N5 {
            return Ok(None);
        }
        let mut prefix = String::new();
        let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        for component in parts.iter().take(parts.len().saturating_sub(1)) {
            prefix = path::join(&prefix, component);
            if self.node_kind(store, &prefix)? == Some(NodeKind::Array) {
                return Ok(Some(prefix));
            }
        }
        // The root is an array too when the container is a single array.
        if !path.is_empty() && self.node_kind(store, "")? == Some(NodeKind::Array) {
            return Ok(Some(String::new()));
        }
        Ok(None)
    }

    /// Mark the node at `path` as a group, unless it already is a node:
    /// nothing for N5 (a directory is a group), zarr.json for Zarr v3,
    /// .zgroup for Zarr v2, each written only when absent.
    pub(crate) fn mark_group(self, store: &dyn Store, path: &str) -> Result<()> {
        let (key, doc) = match self {
            Format::N5 => return Ok(()),
            Format::Hdf5 => return Err(not_in_a_store()),
            Format::Zarr3 => (path::join(path, ZARR_JSON), group_document(self)),
            Format::Zarr2 => {
                if store.exists(&path::join(path, ZARRAY))? {
                    return Ok(());
                }
                (path::join(path, ZGROUP), group_document(self))
            }
        };
        let bytes = crate::jsontext::to_vec_pretty(&doc)
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
        // false: another writer, or an earlier call, made it first.
        store.put_if(&key, &bytes, &Precondition::Absent)?;
        Ok(())
    }
}

/// The document of a new group of `format` (Zarr only).
fn group_document(format: Format) -> Value {
    match format {
        Format::Zarr2 => json!({ "zarr_format": 2 }),
        _ => json!({ "zarr_format": 3, "node_type": "group", "attributes": {} }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStore;

    #[test]
    fn kinds_attributes_and_groups_per_format() {
        let s = MemoryStore::new();
        s.put(
            "a/zarr.json",
            &[br#"{"zarr_format":3,"node_type":"array","attributes":{"x":1}}"#],
        )
        .unwrap();
        s.put(
            "g/zarr.json",
            &[br#"{"zarr_format":3,"node_type":"group"}"#],
        )
        .unwrap();
        s.put("a/c/0/0", &[b"chunk"]).unwrap();
        let f = Format::Zarr3;
        assert_eq!(f.node_kind(&s, "a").unwrap(), Some(NodeKind::Array));
        assert_eq!(f.node_kind(&s, "g").unwrap(), Some(NodeKind::Group));
        assert_eq!(f.node_kind(&s, "a/c").unwrap(), None);
        assert_eq!(f.array_above(&s, "a/c/0").unwrap().as_deref(), Some("a"));
        assert_eq!(f.array_above(&s, "g/h").unwrap(), None);
        assert_eq!(f.user_attributes(&s, "a").unwrap(), Some(json!({"x": 1})));
        assert_eq!(f.user_attributes(&s, "g").unwrap(), Some(json!({})));
        f.update_user_attributes(&s, "a", &mut |d| {
            as_object_mut(d).insert("y".into(), json!(2));
            Ok(())
        })
        .unwrap();
        let doc: Value = serde_json::from_slice(&s.get("a/zarr.json").unwrap().unwrap()).unwrap();
        assert_eq!(doc["node_type"], "array", "the array's metadata stays");
        assert_eq!(doc["attributes"], json!({"x": 1, "y": 2}));
        f.mark_group(&s, "n").unwrap();
        f.mark_group(&s, "a").unwrap();
        assert_eq!(f.node_kind(&s, "n").unwrap(), Some(NodeKind::Group));
        assert_eq!(f.node_kind(&s, "a").unwrap(), Some(NodeKind::Array));
        s.put("bad/zarr.json", &[br#"{"zarr_format":3,"node_type":"x"}"#])
            .unwrap();
        let e = f.node_kind(&s, "bad").unwrap_err();
        assert!(e.message().contains("bad/zarr.json"), "{e}");

        let f = Format::Zarr2;
        s.put("v/.zarray", &[b"{}"]).unwrap();
        s.put("v/.zattrs", &[br#"{"k":"v"}"#]).unwrap();
        assert_eq!(f.node_kind(&s, "v").unwrap(), Some(NodeKind::Array));
        assert_eq!(f.user_attributes(&s, "v").unwrap(), Some(json!({"k": "v"})));
        f.mark_group(&s, "v").unwrap();
        assert!(!s.exists("v/.zgroup").unwrap(), "an array stays an array");
        f.mark_group(&s, "w").unwrap();
        assert_eq!(f.node_kind(&s, "w").unwrap(), Some(NodeKind::Group));
        assert_eq!(f.user_attributes(&s, "w").unwrap(), None);

        assert!(is_metadata_key("a/b/.zarray") && is_metadata_key("zarr.json"));
        assert!(is_metadata_key(".zmetadata"));
        assert!(!is_metadata_key("a/c/0/0") && !is_metadata_key("a/zarr.json.tmp"));
    }
}
