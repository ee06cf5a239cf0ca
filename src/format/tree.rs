//! The hierarchy of a container as the API sees it, whatever its format:
//! which paths are groups or arrays, listing, creating and removing
//! groups, user attributes, and creating and opening arrays ([`Tree`]).
//! [`StoreTree`] is the hierarchy of the formats kept in a [`Store`] (N5,
//! Zarr v2, Zarr v3; where each keeps a node's documents is `node`'s), and
//! [`open_store_tree`] opens one: the root's checks, the choice of the
//! format, and N5's version rules.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

use super::array::Array;
use super::n5::array::N5Array;
use super::node::{self, as_object_mut, NodeKind, N5_ATTRIBUTES, ZARRAY, ZARR_JSON, ZGROUP};
use super::zarr::ZarrArray;
use super::{consolidated, Format};
use crate::error::{Error, ErrorKind, Result};
use crate::format::n5::metadata::{self, DatasetAttributes};
use crate::path::{self, display};
use crate::storage::location::FormatHint;
use crate::storage::{Precondition, Store};

/// The N5 format version this library writes.
pub const N5_FORMAT_VERSION: &str = "4.0.0";

/// The highest major format version this library reads.
pub const MAX_MAJOR_VERSION: u64 = 4;

/// The hierarchy of one open container. Paths are normalised
/// (`crate::path::normalize`); the caller checks the container's mode.
pub(crate) trait Tree: Send + Sync + fmt::Debug {
    /// The container's format.
    fn format(&self) -> Format;

    /// The store holding the container's bytes.
    fn store(&self) -> &dyn Store;

    /// The container's format version, if it states one (N5's root `n5`).
    fn version(&self) -> Result<Option<String>>;

    /// Whether a group or an array is at `p` (the root always is).
    fn node_exists(&self, p: &str) -> Result<bool>;

    /// Whether an array is at `p`.
    fn is_array(&self, p: &str) -> Result<bool>;

    /// What is at `p`: a group, an array, or (`None`) no node. By default
    /// from [`Tree::node_exists`] and [`Tree::is_array`].
    fn kind(&self, p: &str) -> Result<Option<NodeKind>> {
        if !self.node_exists(p)? {
            return Ok(None);
        }
        Ok(Some(if self.is_array(p)? {
            NodeKind::Array
        } else {
            NodeKind::Group
        }))
    }

    /// Whether the format has hdmf-zarr links (group attributes naming
    /// other nodes, `super::links`); by default not.
    fn has_links(&self) -> bool {
        false
    }

    /// Whether a container is at the location the tree was opened at,
    /// where opening could not tell (a store that cannot list opens at any
    /// URL); by default, yes.
    fn root_present(&self) -> Result<bool> {
        Ok(true)
    }

    /// Whether [`Tree::children`] can answer.
    fn can_list(&self) -> Result<bool>;

    /// The names of the groups and arrays in the group `p`, sorted.
    fn children(&self, p: &str) -> Result<Vec<String>>;

    /// Create the group `p` and every missing parent; existing groups stay.
    fn create_group(&self, p: &str) -> Result<()>;

    /// Remove the node at `p` (not the root) with everything below it;
    /// whether anything was there.
    fn remove(&self, p: &str) -> Result<bool>;

    /// The user attributes of the node at `p`, `None` when it has none
    /// stored.
    fn read_attributes(&self, p: &str) -> Result<Option<Value>>;

    /// Change the user attributes of the node at `p` with `f`, atomically
    /// with respect to every other writer.
    fn update_attributes(&self, p: &str, f: &mut dyn FnMut(&mut Value) -> Result<()>)
        -> Result<()>;

    /// Create an array at `p` with `attributes` (N5 order; the format's
    /// nearest codec for the compression), with its parents as groups.
    fn create_array(&self, p: &str, attributes: DatasetAttributes) -> Result<Arc<dyn Array>>;

    /// Create an array at `p` from the format's own metadata document.
    fn create_array_json(&self, p: &str, document: &Value) -> Result<Arc<dyn Array>>;

    /// Open the array at `p`.
    fn open_array(&self, p: &str) -> Result<Arc<dyn Array>>;

    /// Check why the top-level attribute `key` of the node at `p`, which
    /// [`Tree::read_attributes`] leaves out, is not there: an
    /// [`ErrorKind::Unsupported`] error naming it when the format stores it
    /// in a form JSON has none of; `Ok` when it is simply absent (by
    /// default, always).
    fn check_left_out(&self, _p: &str, _key: &str) -> Result<()> {
        Ok(())
    }

    /// Delete the temporary files writers killed in the middle of a write
    /// left in the container, last modified at least `older_than` ago: the
    /// number of files removed and their bytes. By default the store's.
    fn remove_stale_temporaries(&self, older_than: std::time::Duration) -> Result<(u64, u64)> {
        self.store().remove_stale_temporaries(older_than)
    }
}

/// The metadata document an array of `format` with `attributes` gets: the
/// N5 dataset members (N5, and HDF5, whose datasets are created from
/// them), a Zarr v2 .zarray, or a Zarr v3 zarr.json array document (fill
/// value 0, no sharding, the N5 compression mapped to the format's codec;
/// shapes in the format's own order). A compression with no codec in the
/// format is an [`ErrorKind::Unsupported`] error naming it.
pub(crate) fn dataset_document(format: Format, attributes: &DatasetAttributes) -> Result<Value> {
    match format {
        Format::N5 => Ok(Value::Object(attributes.to_json())),
        Format::Hdf5 => {
            super::hdf5::check_compression(&attributes.compression)?;
            Ok(Value::Object(attributes.to_json()))
        }
        Format::Zarr2 | Format::Zarr3 => ZarrArray::document_for(format, attributes),
    }
}

/// `doc`, a Zarr v3 array document of chunks of `inner` (N5 order), made
/// `sharding_indexed` with shards of `shard` (N5 order): its codecs become
/// the inner chunks' codecs, the index `bytes` + `crc32c` at the end.
pub(crate) fn shard_document(doc: &mut Value, inner: &[u64], shard: &[u64]) {
    let inner: Vec<u64> = inner.iter().rev().copied().collect();
    let outer: Vec<u64> = shard.iter().rev().copied().collect();
    let codecs = doc["codecs"].take();
    doc["chunk_grid"] = json!({"name": "regular", "configuration": {"chunk_shape": outer}});
    doc["codecs"] = json!([{
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": inner,
            "codecs": codecs,
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"}
            ],
            "index_location": "end"
        }
    }]);
}

/// Whether an N5 dataset (or an HDF5 one, created from the same members)
/// can have `attributes`: at least one dimension, and one of N5's twelve
/// types ([`ErrorKind::Unsupported`] for the Zarr types).
pub(crate) fn check_n5_array(attributes: &DatasetAttributes) -> Result<()> {
    if attributes.dimensions.is_empty() {
        return Err(Error::invalid_argument(
            "ndim is 0; N5 and HDF5 datasets have 1 or more dimensions (Zarr arrays may have 0)",
        ));
    }
    let t = &attributes.data_type;
    if t.code() > crate::dtype::DataType::Object.code() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("N5 datasets have no type '{t}' (their types are the ten numeric ones, string and object)"),
        ));
    }
    Ok(())
}

/// The hierarchy of an N5, Zarr v2 or Zarr v3 container in a [`Store`].
#[derive(Debug)]
pub(crate) struct StoreTree {
    store: Arc<dyn Store>,
    format: Format,
    /// Whether arrays store blocks all of the fill value.
    write_empty: bool,
    /// The nodes a Zarr root's consolidated metadata names, read on the
    /// first listing a store that cannot list needs.
    consolidated: OnceLock<Option<Arc<BTreeSet<String>>>>,
}

/// How a container in a store is opened.
pub(crate) struct OpenStore<'a> {
    /// The location, for messages.
    pub location: &'a str,
    /// Whether the container may be written.
    pub writable: bool,
    /// Whether a missing root is created.
    pub create: bool,
    /// The format a location's prefix names.
    pub hint: Option<FormatHint>,
    /// The format a new container gets (options), else by the name.
    pub new_format: Option<Format>,
    /// Whether arrays store blocks all of the fill value.
    pub write_empty: bool,
}

/// Open the container of `store`: a missing root is created when asked
/// (else [`ErrorKind::NotFound`]), a root that is a file is an error, the
/// format is the prefix's, else what the root holds, else (for a new
/// container) the options' or the name's. An N5 root whose `n5` version has
/// a major version above [`MAX_MAJOR_VERSION`] is
/// [`ErrorKind::Unsupported`]; a writable N5 root without one gets
/// [`N5_FORMAT_VERSION`], a writable Zarr root its group document. A new
/// container the options or the name make HDF5 is refused: HDF5 files are
/// local files, never held by a store.
pub(crate) fn open_store_tree(store: Arc<dyn Store>, how: OpenStore) -> Result<StoreTree> {
    let location = how.location;
    let caps = store.capabilities();
    if how.create && !store.is_dir("")? {
        if store.exists("")? {
            return Err(Error::invalid_argument(format!(
                "'{location}' is not a directory"
            )));
        }
        store.create_dir("")?;
    }
    // The root's attributes.json, read once: an N5 root with a version
    // needs no other request to tell its format.
    let root_bytes = store.get(N5_ATTRIBUTES)?;
    if root_bytes.is_none() && !how.create && caps.list && !store.is_dir("")? {
        if store.exists("")? {
            return Err(Error::invalid_argument(format!(
                "'{location}' is not a directory"
            )));
        }
        return Err(Error::new(
            ErrorKind::NotFound,
            format!("no container at '{location}'"),
        ));
    }
    let root = root_bytes
        .map(|b| node::parse_json(&b, N5_ATTRIBUTES, &*store))
        .transpose()?;
    let versioned_n5 = root.as_ref().is_some_and(|r| r.get("n5").is_some());
    let format = match how.hint {
        Some(FormatHint::N5) => Format::N5,
        None if versioned_n5 => Format::N5,
        _ => match super::root_marker(&*store)? {
            None if how.create => super::for_new(how.hint, how.new_format, location),
            _ => super::detect(&*store, how.hint, location)?,
        },
    };
    if format == Format::Hdf5 {
        // Chosen for a new container by the options or the name: a store
        // holds no HDF5 file.
        if caps.remote {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("'{location}': HDF5 files are local only"),
            ));
        }
        return Err(Error::invalid_argument(format!(
            "'{location}' is a directory, not an HDF5 file (HDF5 containers are files)"
        )));
    }
    let tree = StoreTree {
        store,
        format,
        write_empty: how.write_empty,
        consolidated: OnceLock::new(),
    };
    if format != Format::N5 {
        if how.writable {
            format.mark_group(&*tree.store, "")?;
        }
    } else if let Some(version) = version_of(root.as_ref()) {
        let (major, _, _) = parse_version(&version);
        if major > MAX_MAJOR_VERSION {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "container '{location}' has N5 version {version}; this library reads versions up to {MAX_MAJOR_VERSION}.x"
                ),
            ));
        }
    } else if how.writable {
        tree.update_attributes("", &mut |doc| {
            let map = as_object_mut(doc);
            if !map.contains_key("n5") {
                map.insert("n5".into(), Value::from(N5_FORMAT_VERSION));
            }
            Ok(())
        })?;
    }
    Ok(tree)
}

/// Parse an N5 version string as Java does: `major[.minor[.patch]]` with any
/// suffix; anything unparseable is 0.0.0.
pub fn parse_version(version: &str) -> (u64, u64, u64) {
    let mut parts = [0u64; 3];
    for (i, piece) in version.splitn(3, '.').enumerate() {
        let digits: String = piece.chars().take_while(|c| c.is_ascii_digit()).collect();
        match digits.parse() {
            Ok(n) => parts[i] = n,
            Err(_) => {
                if i == 0 {
                    return (0, 0, 0);
                }
                break;
            }
        }
        if digits.len() != piece.len() {
            break;
        }
    }
    (parts[0], parts[1], parts[2])
}

/// The root's `"n5"` version in its attributes document (a non-string
/// value as its JSON text).
fn version_of(root: Option<&Value>) -> Option<String> {
    match root.and_then(|d| d.get("n5")) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

impl StoreTree {
    /// The nodes the root's consolidated metadata names (Zarr), read once.
    fn consolidated(&self) -> Result<Option<Arc<BTreeSet<String>>>> {
        if let Some(known) = self.consolidated.get() {
            return Ok(known.clone());
        }
        let nodes = consolidated::nodes(self.format, &*self.store)?.map(Arc::new);
        Ok(self.consolidated.get_or_init(|| nodes).clone())
    }

    /// Write the Zarr array document `doc` at `p`, after checking it, with
    /// the parents as groups; a group at `p` becomes the array and keeps
    /// its user attributes, an array there is an error.
    fn create_zarr_array(&self, p: &str, doc: Value) -> Result<Arc<dyn Array>> {
        let (format, store) = (self.format, &*self.store);
        ZarrArray::from_document(format, doc.clone(), self.store.clone(), p, self.write_empty)
            .map_err(|e| e.context(format!("the metadata of dataset '{}'", display(p))))?;
        if let Some((parent, _)) = p.rsplit_once('/') {
            self.create_group(parent)?;
        }
        if store.exists(p)? {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("'{}' is a file, not a group", display(p)),
            ));
        }
        store.create_dir(p)?;
        let exists = || {
            Error::new(
                ErrorKind::AlreadyExists,
                format!("a dataset already exists at '{}'", display(p)),
            )
        };
        let mut written = doc.clone();
        match format {
            Format::Zarr3 => {
                let key = path::join(p, ZARR_JSON);
                store.update(&key, &mut |current| {
                    let mut new = doc.clone();
                    if let Some(bytes) = current {
                        let old = node::parse_json(bytes, &key, store)?;
                        if old.get("node_type").and_then(Value::as_str) == Some("array") {
                            return Err(exists());
                        }
                        if let Some(attrs) = old.get("attributes").and_then(Value::as_object) {
                            let mine = as_object_mut(&mut new)
                                .entry("attributes")
                                .or_insert_with(|| Value::Object(Map::new()));
                            for (k, v) in attrs {
                                as_object_mut(mine).entry(k.clone()).or_insert(v.clone());
                            }
                        }
                    }
                    written = new.clone();
                    crate::jsontext::to_vec_pretty(&new)
                        .map(Some)
                        .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
                })?;
            }
            _ => {
                let key = path::join(p, ZARRAY);
                let bytes = crate::jsontext::to_vec_pretty(&doc)
                    .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
                if !store.put_if(&key, &bytes, &Precondition::Absent)? {
                    return Err(exists());
                }
                // A group here becomes the array (its .zattrs stay).
                store.delete(&path::join(p, ZGROUP))?;
            }
        }
        let array =
            ZarrArray::from_document(format, written, self.store.clone(), p, self.write_empty)?;
        consolidated::refresh(format, store, &[p.to_string()])?;
        Ok(Arc::new(array))
    }
}

impl Tree for StoreTree {
    fn format(&self) -> Format {
        self.format
    }

    fn store(&self) -> &dyn Store {
        &*self.store
    }

    fn version(&self) -> Result<Option<String>> {
        if self.format != Format::N5 {
            return Ok(None);
        }
        Ok(version_of(self.read_attributes("")?.as_ref()))
    }

    /// The root always exists (it opened). Elsewhere in N5, a directory (on
    /// object stores, a marker or any object below it), or where the store
    /// cannot list (plain HTTP), an attributes.json. In Zarr, a node
    /// document, or where the store can list, a directory that is not
    /// inside an array (an implicit group, as tensorstore leaves them).
    fn node_exists(&self, p: &str) -> Result<bool> {
        if p.is_empty() {
            return Ok(true);
        }
        let (format, store) = (self.format, &*self.store);
        let listable = store.capabilities().list;
        match format {
            Format::N5 if listable => store.is_dir(p),
            Format::N5 => store.exists(&format.attributes_key(p)?),
            _ => Ok(format.node_kind(store, p)?.is_some()
                || (listable && store.is_dir(p)? && format.array_above(store, p)?.is_none())),
        }
    }

    fn is_array(&self, p: &str) -> Result<bool> {
        Ok(self.format.node_kind(&*self.store, p)? == Some(NodeKind::Array))
    }

    /// Zarr: the node's own document, else (as [`Tree::node_exists`]) a
    /// directory outside any array is a group; N5 as by default.
    fn kind(&self, p: &str) -> Result<Option<NodeKind>> {
        let (format, store) = (self.format, &*self.store);
        if format == Format::N5 {
            if !self.node_exists(p)? {
                return Ok(None);
            }
            return Ok(format.node_kind(store, p)?.or(Some(NodeKind::Group)));
        }
        if let Some(kind) = format.node_kind(store, p)? {
            return Ok(Some(kind));
        }
        let implicit = p.is_empty()
            || (store.capabilities().list
                && store.is_dir(p)?
                && format.array_above(store, p)?.is_none());
        Ok(implicit.then_some(NodeKind::Group))
    }

    /// Zarr v2 and v3 containers have them.
    fn has_links(&self) -> bool {
        self.format != Format::N5
    }

    /// Where the store lists, opening found the root; elsewhere (plain
    /// HTTP) the root must hold a format's marker.
    fn root_present(&self) -> Result<bool> {
        Ok(self.store.capabilities().list || super::root_marker(&*self.store)?.is_some())
    }

    /// The store lists, or (on a store that cannot, like plain HTTP) a
    /// Zarr root holds consolidated metadata that names the nodes.
    fn can_list(&self) -> Result<bool> {
        Ok(self.store.capabilities().list || self.consolidated()?.is_some())
    }

    /// The store's listing, or where the store cannot list, the names the
    /// consolidated metadata gives.
    fn children(&self, p: &str) -> Result<Vec<String>> {
        if !self.store.capabilities().list {
            if let Some(nodes) = self.consolidated()? {
                return Ok(consolidated::children(&nodes, p));
            }
        }
        Ok(self.store.list(p)?.unwrap_or_default().dirs)
    }

    fn create_group(&self, p: &str) -> Result<()> {
        let (format, store) = (self.format, &*self.store);
        let mut prefix = String::new();
        for component in p.split('/').filter(|c| !c.is_empty()) {
            prefix = path::join(&prefix, component);
            if store.exists(&prefix)? {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("'{prefix}' is a file, not a group"),
                ));
            }
        }
        if let Some(array) = format.array_above(store, p)? {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "'{}' is inside the array '{}', not in a group",
                    display(p),
                    display(&array)
                ),
            ));
        }
        store.create_dir(p)?;
        // Zarr marks every group on the way down with its own document.
        let mut prefix = String::new();
        let mut marked = Vec::new();
        for component in p.split('/').filter(|c| !c.is_empty()) {
            prefix = path::join(&prefix, component);
            format.mark_group(store, &prefix)?;
            marked.push(prefix.clone());
        }
        consolidated::refresh(format, store, &marked)
    }

    fn remove(&self, p: &str) -> Result<bool> {
        let removed = self.store.delete_dir(p)?;
        if removed {
            consolidated::refresh(self.format, &*self.store, &[p.to_string()])?;
        }
        Ok(removed)
    }

    /// N5: the whole attributes.json; Zarr v3: the `attributes` of its
    /// zarr.json; Zarr v2: its .zattrs.
    fn read_attributes(&self, p: &str) -> Result<Option<Value>> {
        self.format.user_attributes(&*self.store, p)
    }

    /// Read-modify-write the document atomically with respect to every
    /// other writer, also in other processes and on other machines (see
    /// [`Store::update`]: a directory lock on the file system, conditional
    /// writes on object stores, where `f` runs again when another writer
    /// got in between). The document is replaced atomically, and only when
    /// `f` changed it or there was none.
    fn update_attributes(
        &self,
        p: &str,
        f: &mut dyn FnMut(&mut Value) -> Result<()>,
    ) -> Result<()> {
        self.format.update_user_attributes(&*self.store, p, f)?;
        consolidated::refresh(self.format, &*self.store, &[p.to_string()])
    }

    fn create_array(&self, p: &str, attributes: DatasetAttributes) -> Result<Arc<dyn Array>> {
        if self.format != Format::N5 {
            let doc = ZarrArray::document_for(self.format, &attributes)?;
            return self.create_zarr_array(p, doc);
        }
        check_n5_array(&attributes)?;
        self.create_group(p)?;
        let members = attributes.to_json();
        self.update_attributes(p, &mut |doc| {
            if metadata::is_dataset(doc) {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("a dataset already exists at '{}'", display(p)),
                ));
            }
            let map = as_object_mut(doc);
            for (k, v) in &members {
                map.insert(k.clone(), v.clone());
            }
            map.remove("compressionType");
            Ok(())
        })?;
        Ok(Arc::new(N5Array::new(
            self.store.clone(),
            p.to_string(),
            attributes,
            self.write_empty,
        )))
    }

    /// A zarr.json array document for Zarr v3 (`zarr_format` and
    /// `node_type` may be left out), a .zarray document for Zarr v2, the
    /// dataset attributes for N5; checked whole before anything is written.
    fn create_array_json(&self, p: &str, document: &Value) -> Result<Arc<dyn Array>> {
        let mut doc = document.clone();
        let map = doc.as_object_mut().ok_or_else(|| {
            Error::invalid_metadata(format!(
                "the metadata of a new dataset must be a JSON object, not {document}"
            ))
        })?;
        match self.format {
            Format::N5 => {
                let attributes = DatasetAttributes::from_json(document)?;
                return self.create_array(p, attributes);
            }
            Format::Zarr3 => {
                map.entry("zarr_format").or_insert(Value::from(3));
                map.entry("node_type").or_insert(Value::from("array"));
            }
            Format::Zarr2 => {
                map.entry("zarr_format").or_insert(Value::from(2));
            }
            Format::Hdf5 => {
                return Err(Error::new(
                    ErrorKind::Internal,
                    "a store holds no HDF5 file to create a dataset in",
                ))
            }
        }
        self.create_zarr_array(p, doc)
    }

    fn open_array(&self, p: &str) -> Result<Arc<dyn Array>> {
        let format = self.format;
        if format != Format::N5 {
            return match format.node_kind(&*self.store, p)? {
                Some(NodeKind::Array) => {
                    let array = ZarrArray::open(format, self.store.clone(), p, self.write_empty)
                        .map_err(|e| e.context(format!("dataset '{}'", display(p))))?;
                    Ok(Arc::new(array))
                }
                Some(NodeKind::Group) => Err(Error::new(
                    ErrorKind::NotFound,
                    format!("'{}' is a group, not a dataset", display(p)),
                )),
                None => Err(Error::new(
                    ErrorKind::NotFound,
                    format!("no dataset at '{}'", display(p)),
                )),
            };
        }
        let doc = self.read_attributes(p)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no dataset at '{}'", display(p)),
            )
        })?;
        if !metadata::is_dataset(&doc) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("'{}' is a group, not a dataset", display(p)),
            ));
        }
        let attributes = DatasetAttributes::from_json(&doc)
            .map_err(|e| e.context(format!("dataset '{}'", display(p))))?;
        Ok(Arc::new(N5Array::new(
            self.store.clone(),
            p.to_string(),
            attributes,
            self.write_empty,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_like_java() {
        assert_eq!(parse_version("4.0.0"), (4, 0, 0));
        assert_eq!(parse_version("2.1.3"), (2, 1, 3));
        assert_eq!(parse_version("5"), (5, 0, 0));
        assert_eq!(parse_version("1.5"), (1, 5, 0));
        assert_eq!(parse_version("3.1.3-SNAPSHOT"), (3, 1, 3));
        assert_eq!(parse_version("garbage"), (0, 0, 0));
        assert_eq!(parse_version(""), (0, 0, 0));
    }
}
