//! zarr-python's consolidated metadata: the root zarr.json's
//! `consolidated_metadata` member (Zarr v3, `"kind": "inline"`) or the
//! root's `.zmetadata` (Zarr v2) holds the documents of every group and
//! array below the root. For listing where the store cannot list (plain
//! HTTP) only the names are used: each node's own documents stay the truth
//! for its kind, attributes and metadata, so a stale consolidation never
//! gives wrong data, at worst a listing of what was there when it was
//! written. Readers that read it first (hdmf-zarr) see libn5's writes
//! because every metadata write refreshes it ([`refresh`]) where a
//! container has one; none is ever added.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::node::{parse_json, ZARRAY, ZARR_JSON, ZATTRS, ZGROUP, ZMETADATA};
use super::Format;
use crate::error::{Error, ErrorKind, Result};
use crate::path;
use crate::storage::Store;

/// How the node names are taken from a consolidated document.
type NamesOf = fn(&Value) -> Option<Vec<String>>;

/// The paths of the nodes the root's consolidated metadata names (the root
/// left out), `None` when there is none; names that are not valid paths
/// are skipped.
pub(crate) fn nodes(format: Format, store: &dyn Store) -> Result<Option<BTreeSet<String>>> {
    let (key, names): (&str, NamesOf) = match format {
        Format::Zarr3 => (ZARR_JSON, v3_names),
        Format::Zarr2 => (ZMETADATA, v2_names),
        Format::N5 | Format::Hdf5 => return Ok(None),
    };
    let Some(bytes) = store.get(key)? else {
        return Ok(None);
    };
    let doc = parse_json(&bytes, key, store)?;
    let Some(names) = names(&doc) else {
        return Ok(None);
    };
    let mut out = BTreeSet::new();
    for name in names {
        let Ok(p) = path::normalize(&name) else {
            continue;
        };
        if p.is_empty() {
            continue;
        }
        // Every ancestor is a group, named or not.
        let mut at = p.as_str();
        out.insert(p.clone());
        while let Some((parent, _)) = at.rsplit_once('/') {
            out.insert(parent.to_string());
            at = parent;
        }
    }
    Ok(Some(out))
}

/// The keys of `consolidated_metadata.metadata` of a v3 root document.
fn v3_names(doc: &Value) -> Option<Vec<String>> {
    let meta = doc
        .get("consolidated_metadata")?
        .get("metadata")?
        .as_object()?;
    Some(meta.keys().cloned().collect())
}

/// The node paths of the keys of `metadata` of a `.zmetadata` document
/// (`a/b/.zarray` names `a/b`).
fn v2_names(doc: &Value) -> Option<Vec<String>> {
    let meta = doc.get("metadata")?.as_object()?;
    Some(
        meta.keys()
            .filter_map(|k| {
                let (dir, name) = k.rsplit_once('/').unwrap_or(("", k));
                matches!(name, ZARRAY | ZGROUP | ZATTRS).then(|| dir.to_string())
            })
            .collect(),
    )
}

/// The names of the children of `parent` among `nodes`, sorted.
pub(crate) fn children(nodes: &BTreeSet<String>, parent: &str) -> Vec<String> {
    nodes
        .iter()
        .filter_map(|p| {
            let rest = if parent.is_empty() {
                p.as_str()
            } else {
                p.strip_prefix(parent)?.strip_prefix('/')?
            };
            (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
        })
        .collect()
}

/// The document that holds a format's consolidated metadata.
fn consolidated_key(format: Format) -> Option<&'static str> {
    match format {
        Format::Zarr3 => Some(ZARR_JSON),
        Format::Zarr2 => Some(ZMETADATA),
        Format::N5 | Format::Hdf5 => None,
    }
}

/// The node documents of a consolidated document, `None` when it holds
/// none (a v3 root without `consolidated_metadata`).
fn entries_mut(format: Format, doc: &mut Value) -> Option<&mut Map<String, Value>> {
    match format {
        Format::Zarr3 => doc
            .get_mut("consolidated_metadata")?
            .get_mut("metadata")?
            .as_object_mut(),
        _ => doc.get_mut("metadata")?.as_object_mut(),
    }
}

/// Bring the root's consolidated metadata up to date with what the store
/// now holds for the nodes at `paths` (normalised): each one's entries
/// replaced by its documents, or, where it has none left (removed), its
/// entries and those of everything below it dropped. A container without
/// consolidated metadata is left as it is. The document is updated
/// conditionally ([`Store::update`]) and each node's documents are read
/// inside the update, so concurrent writers leave the state of the last.
pub(crate) fn refresh(format: Format, store: &dyn Store, paths: &[String]) -> Result<()> {
    let Some(key) = consolidated_key(format) else {
        return Ok(());
    };
    // Most containers have none: find out without taking a lock.
    let Some(bytes) = store.get(key)? else {
        return Ok(());
    };
    if entries_mut(format, &mut parse_json(&bytes, key, store)?).is_none() {
        return Ok(());
    }
    store.update(key, &mut |current| {
        let Some(bytes) = current else {
            return Ok(None);
        };
        let mut doc = parse_json(bytes, key, store)?;
        let Some(entries) = entries_mut(format, &mut doc) else {
            return Ok(None);
        };
        let before = entries.clone();
        for p in paths {
            match format {
                Format::Zarr3 => refresh_v3(store, entries, p)?,
                _ => refresh_v2(store, entries, p)?,
            }
        }
        if *entries == before {
            return Ok(None);
        }
        crate::jsontext::to_vec_pretty(&doc)
            .map(Some)
            .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
    })
}

/// Drop the entries of `p` and of everything below it (`p/...`).
fn drop_below(entries: &mut Map<String, Value>, p: &str) {
    let below = format!("{p}/");
    entries.retain(|k, _| k != p && !k.starts_with(&below));
}

/// A v3 entry is the node's zarr.json, keyed by its path; a group entry
/// keeps the nested `consolidated_metadata` zarr-python gave it. The root
/// is no entry (its document holds the consolidation).
fn refresh_v3(store: &dyn Store, entries: &mut Map<String, Value>, p: &str) -> Result<()> {
    if p.is_empty() {
        return Ok(());
    }
    let key = path::join(p, ZARR_JSON);
    let Some(bytes) = store.get(&key)? else {
        drop_below(entries, p);
        return Ok(());
    };
    let mut node = parse_json(&bytes, &key, store)?;
    let nested = entries
        .get(p)
        .and_then(|old| old.get("consolidated_metadata"))
        .cloned();
    if let (Some(nested), Some(map)) = (nested, node.as_object_mut()) {
        map.entry("consolidated_metadata").or_insert(nested);
    }
    entries.insert(p.to_string(), node);
    Ok(())
}

/// v2 entries are the node's .zgroup, .zarray and .zattrs, each keyed by
/// its own key.
fn refresh_v2(store: &dyn Store, entries: &mut Map<String, Value>, p: &str) -> Result<()> {
    let mut any = false;
    for name in [ZGROUP, ZARRAY, ZATTRS] {
        let key = path::join(p, name);
        match store.get(&key)? {
            Some(bytes) => {
                entries.insert(key.clone(), parse_json(&bytes, &key, store)?);
                any = true;
            }
            None => {
                entries.remove(&key);
            }
        }
    }
    if !any && !p.is_empty() {
        drop_below(entries, p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStore;
    use serde_json::json;

    #[test]
    fn both_formats_name_their_nodes_and_ancestors() {
        let store = MemoryStore::new();
        let v3 = json!({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {
            "kind": "inline", "must_understand": false,
            "metadata": {"a": {}, "a/b/c": {}, "x": {}, "../up": {}}}});
        store.put(ZARR_JSON, &[v3.to_string().as_bytes()]).unwrap();
        let got = nodes(Format::Zarr3, &store).unwrap().unwrap();
        let want: Vec<&str> = vec!["a", "a/b", "a/b/c", "x"];
        assert_eq!(got.iter().map(String::as_str).collect::<Vec<_>>(), want);
        assert_eq!(children(&got, ""), vec!["a", "x"]);
        assert_eq!(children(&got, "a"), vec!["b"]);
        assert!(children(&got, "a/b/c").is_empty());

        let v2 = json!({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {}, ".zattrs": {}, "g/.zgroup": {}, "g/arr/.zarray": {},
            "g/arr/.zattrs": {}, "h/0.0": {}}});
        store.put(ZMETADATA, &[v2.to_string().as_bytes()]).unwrap();
        let got = nodes(Format::Zarr2, &store).unwrap().unwrap();
        assert_eq!(
            got.iter().map(String::as_str).collect::<Vec<_>>(),
            vec!["g", "g/arr"]
        );
        // No consolidation: nothing known.
        assert!(nodes(Format::Zarr2, &MemoryStore::new()).unwrap().is_none());
        store
            .put(ZARR_JSON, &[br#"{"zarr_format": 3, "node_type": "group"}"#])
            .unwrap();
        assert!(nodes(Format::Zarr3, &store).unwrap().is_none());
        assert!(nodes(Format::N5, &store).unwrap().is_none());
    }

    #[test]
    fn refreshes_follow_writes_and_never_add_a_consolidation() {
        let store = MemoryStore::new();
        let put = |k: &str, v: Value| store.put(k, &[v.to_string().as_bytes()]).unwrap();
        // Without a consolidation nothing is written.
        put(ZARR_JSON, json!({"zarr_format": 3, "node_type": "group"}));
        put(
            "a/zarr.json",
            json!({"zarr_format": 3, "node_type": "group"}),
        );
        refresh(Format::Zarr3, &store, &["a".into()]).unwrap();
        let root: Value = serde_json::from_slice(&store.get(ZARR_JSON).unwrap().unwrap()).unwrap();
        assert!(root.get("consolidated_metadata").is_none());
        refresh(Format::Zarr2, &store, &["a".into()]).unwrap();
        assert!(!store.exists(ZMETADATA).unwrap());

        let nested = json!({"kind": "inline", "must_understand": false, "metadata": {}});
        put(
            ZARR_JSON,
            json!({"zarr_format": 3, "node_type": "group", "attributes": {"r": 1},
            "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {
                "a": {"zarr_format": 3, "node_type": "group", "consolidated_metadata": nested},
                "a/x": {"zarr_format": 3, "node_type": "array"},
                "a/x2": {}, "b": {}}}}),
        );
        put(
            "a/zarr.json",
            json!({"zarr_format": 3, "node_type": "group", "attributes": {"k": 2}}),
        );
        put(
            "c/zarr.json",
            json!({"zarr_format": 3, "node_type": "group"}),
        );
        let paths = ["a".to_string(), "b".to_string(), "c".to_string()];
        refresh(Format::Zarr3, &store, &paths).unwrap();
        let root: Value = serde_json::from_slice(&store.get(ZARR_JSON).unwrap().unwrap()).unwrap();
        let meta = &root["consolidated_metadata"]["metadata"];
        assert_eq!(meta["a"]["attributes"]["k"], 2);
        assert_eq!(meta["a"]["consolidated_metadata"], nested);
        assert_eq!(meta["a/x"]["node_type"], "array", "other entries stay");
        assert!(meta.get("b").is_none(), "a node without documents goes");
        assert_eq!(meta["c"]["node_type"], "group", "a new node comes");
        assert_eq!(root["attributes"]["r"], 1);
        store.delete("a/zarr.json").unwrap();
        refresh(Format::Zarr3, &store, &["a".into()]).unwrap();
        let root: Value = serde_json::from_slice(&store.get(ZARR_JSON).unwrap().unwrap()).unwrap();
        let names: Vec<&String> = root["consolidated_metadata"]["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(names, ["c"], "the removed group's subtree goes with it");

        put(
            ZMETADATA,
            json!({"zarr_consolidated_format": 1, "metadata": {
            ".zgroup": {"zarr_format": 2}, "g/.zgroup": {"zarr_format": 2},
            "g/.zattrs": {"old": 1}, "g/arr/.zarray": {}}}),
        );
        put(".zgroup", json!({"zarr_format": 2}));
        put(".zattrs", json!({"root": true}));
        put("g/.zgroup", json!({"zarr_format": 2}));
        refresh(Format::Zarr2, &store, &["".into(), "g".into()]).unwrap();
        let doc: Value = serde_json::from_slice(&store.get(ZMETADATA).unwrap().unwrap()).unwrap();
        assert_eq!(doc["metadata"][".zattrs"], json!({"root": true}));
        assert!(doc["metadata"].get("g/.zattrs").is_none());
        assert_eq!(doc["metadata"]["g/arr/.zarray"], json!({}));
        store.delete("g/.zgroup").unwrap();
        refresh(Format::Zarr2, &store, &["g".into()]).unwrap();
        let doc: Value = serde_json::from_slice(&store.get(ZMETADATA).unwrap().unwrap()).unwrap();
        let names: Vec<&String> = doc["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(names, [".zgroup", ".zattrs"]);
    }
}
