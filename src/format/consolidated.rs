//! zarr-python's consolidated metadata, for listing where the store cannot
//! list (plain HTTP): the root zarr.json's `consolidated_metadata` member
//! (Zarr v3, `"kind": "inline"`) or the root's `.zmetadata` (Zarr v2) names
//! every group and array below the root. Only the names are used: each
//! node's own documents stay the truth for its kind, attributes and
//! metadata, so a stale consolidation never gives wrong data, at worst a
//! listing of what was there when it was written.

use std::collections::BTreeSet;

use serde_json::Value;

use super::node::{parse_json, ZARRAY, ZARR_JSON, ZATTRS, ZGROUP};
use super::Format;
use crate::error::Result;
use crate::path;
use crate::storage::Store;

/// The v2 consolidated document at the root.
pub(crate) const ZMETADATA: &str = ".zmetadata";

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
}
