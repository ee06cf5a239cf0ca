//! Containers and groups: opening a container at a location (a path, or
//! an `s3://`, `gs://` or `https://` URL) in one of three modes, the root
//! version rules, the group hierarchy (create, exists, list, deep list,
//! remove) and attributes (whole documents, merges, and single values by N5
//! attribute path), with atomic updates that writers on many machines can
//! make at once, in any of the three formats (N5, Zarr v2, Zarr v3; where
//! each keeps a node's documents is `format::node`'s). Everything goes
//! through the container's [`Store`].

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::attrpath;
use crate::dataset::Dataset;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::ZarrArray;
use crate::format::consolidated;
pub(crate) use crate::format::node::as_object_mut;
use crate::format::node::{self, NodeKind};
use crate::format::Format;
use crate::metadata::{self, DatasetAttributes};
use crate::parallel::Pool;
use crate::path::{self, display};
use crate::storage::cache::CachedStore;
use crate::storage::{Location, StorageOptions, Store};

/// The N5 format version this library writes.
pub const N5_FORMAT_VERSION: &str = "4.0.0";

/// The highest major format version this library reads.
pub const MAX_MAJOR_VERSION: u64 = 4;

/// The name of the per-group attributes file.
pub const ATTRIBUTES_FILE: &str = "attributes.json";

/// How a container is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Read only: nothing is ever created, locked or written; every write is
    /// an [`ErrorKind::ReadOnly`] error. The root must exist.
    Read,
    /// Read and write an existing container. Writes the root version
    /// `"4.0.0"` when the root has none.
    ReadWrite,
    /// Read and write, creating the root directory and its attributes.json
    /// when missing. An existing container is opened as it is.
    Create,
}

impl Mode {
    /// The C API's `n5_mode` code.
    pub const fn code(self) -> i32 {
        match self {
            Mode::Read => 0,
            Mode::ReadWrite => 1,
            Mode::Create => 2,
        }
    }

    /// The mode with C code `code`.
    pub fn from_code(code: i32) -> Option<Mode> {
        [Mode::Read, Mode::ReadWrite, Mode::Create]
            .into_iter()
            .find(|m| m.code() == code)
    }
}

/// Options of an open container (the C API's `options_json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Threads for multi-block work (region reads and writes): the calling
    /// thread plus `threads - 1` helpers shared by all calls on the
    /// container; 1 means the calling thread only. Default: one per core.
    pub threads: usize,
    /// Whether blocks that are entirely zero (the fill value) are stored.
    /// `true` (the default, as in Java) stores them like any other; `false`
    /// skips them and deletes a stored block that becomes all zeros, which
    /// keeps sparse volumes small (missing blocks read as zeros).
    pub write_empty_blocks: bool,
    /// Where the bytes go: requests in flight, the block cache, and the
    /// settings and credentials of S3, GCS and HTTP locations.
    pub storage: StorageOptions,
    /// The format of a container that [`Mode::Create`] makes (`"format"`:
    /// `"n5"`, `"zarr2"` or `"zarr3"`); a prefix on the location takes
    /// precedence, and without either the name's suffix decides (`.zarr`:
    /// Zarr v3), else N5. Existing containers keep their own format.
    pub format: Option<crate::format::Format>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            write_empty_blocks: true,
            storage: StorageOptions::default(),
            format: None,
        }
    }
}

impl Options {
    /// Parse options from a JSON object such as
    /// `{"threads": 4, "write_empty_blocks": false, "io_concurrency": 32,
    /// "s3": {"endpoint": "http://127.0.0.1:8333"}}` (every key is described
    /// with [`Options`] and [`StorageOptions`]). Unknown keys are an error
    /// so that typos do not pass silently; values of secrets never appear
    /// in an error.
    pub fn from_json(text: &str) -> Result<Options> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Json, format!("options: {e}")))?;
        let map = value
            .as_object()
            .ok_or_else(|| Error::new(ErrorKind::Json, "options must be a JSON object"))?;
        let mut options = Options::default();
        for (key, v) in map {
            match key.as_str() {
                "threads" => {
                    options.threads = match v.as_u64() {
                        Some(0) => Options::default().threads,
                        Some(n) if n <= 1024 => n as usize,
                        _ => {
                            return Err(Error::invalid_argument(format!(
                        "options: threads must be an integer from 0 (all cores) to 1024, not {}",
                        crate::storage::options::shown_value(v)
                    )))
                        }
                    }
                }
                "write_empty_blocks" => {
                    options.write_empty_blocks = v.as_bool().ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "options: write_empty_blocks must be true or false, not {}",
                            crate::storage::options::shown_value(v)
                        ))
                    })?
                }
                "format" => {
                    let name = v.as_str().ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "options: format must be \"n5\", \"zarr2\" or \"zarr3\", not {}",
                            crate::storage::options::shown_value(v)
                        ))
                    })?;
                    options.format = Some(
                        crate::format::Format::from_name(name).map_err(|e| e.context("options"))?,
                    );
                }
                other => {
                    if !options.storage.parse_key(other, v)? {
                        return Err(Error::invalid_argument(format!(
                            "options: unknown key '{other}' (known: threads, write_empty_blocks, \
                             format, io_concurrency, cache_bytes, s3, gcs, http, retry)"
                        )));
                    }
                }
            }
        }
        Ok(options)
    }
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

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) location: String,
    pub(crate) mode: Mode,
    pub(crate) options: Options,
    pub(crate) pool: Pool,
    /// What the container's bytes mean.
    pub(crate) format: crate::format::Format,
    /// The nodes a Zarr root's consolidated metadata names, read on the
    /// first listing a store that cannot list needs.
    pub(crate) consolidated: OnceLock<Option<Arc<BTreeSet<String>>>>,
}

/// An open N5 container. Cheap to clone; clones share the same root.
/// `Send + Sync`: every method may be called from any thread.
#[derive(Clone, Debug)]
pub struct Container {
    pub(crate) inner: Arc<Inner>,
}

impl Container {
    /// Open the container at `location` in `mode` with default options.
    pub fn open(location: impl AsRef<Path>, mode: Mode) -> Result<Container> {
        Container::open_with(location, mode, Options::default())
    }

    /// Open the container at `location` in `mode` with `options`.
    ///
    /// `location` is a path or a URL: `/data/vol.n5`, `file:///data/vol.n5`,
    /// `s3://bucket/prefix`, `gs://bucket/prefix`, the `https://` forms of
    /// S3 and GCS, or any other `http(s)://` URL (read-only); see
    /// [`Location`]. Fails when the root does not exist (unless `mode` is
    /// [`Mode::Create`]), when it is not a directory, when its root
    /// attributes are not valid JSON, or when its `"n5"` version has a major
    /// version above 4. A missing version is accepted.
    pub fn open_with(
        location: impl AsRef<Path>,
        mode: Mode,
        options: Options,
    ) -> Result<Container> {
        let location = location.as_ref();
        let parsed = match location.to_str() {
            Some(text) => Location::parse(text)?,
            // Not UTF-8: a local path, used as it is.
            None => Location {
                format: None,
                backend: crate::storage::location::Backend::File(location.to_path_buf()),
                display: location.display().to_string(),
            },
        };
        let store = crate::storage::open(&parsed, &options.storage)?;
        Container::open_store_as(store, parsed.display, mode, options, parsed.format)
    }

    /// Open the container held by `store` (any [`Store`], such as a
    /// [`crate::storage::MemoryStore`]) in `mode` with `options`;
    /// `location` names it in messages.
    pub fn open_store(
        store: Arc<dyn Store>,
        location: impl Into<String>,
        mode: Mode,
        options: Options,
    ) -> Result<Container> {
        Container::open_store_as(store, location, mode, options, None)
    }

    /// [`Container::open_store`] with the format the location's prefix
    /// names, if any.
    fn open_store_as(
        store: Arc<dyn Store>,
        location: impl Into<String>,
        mode: Mode,
        options: Options,
        hint: Option<crate::storage::location::FormatHint>,
    ) -> Result<Container> {
        let location = location.into();
        let caps = store.capabilities();
        if mode != Mode::Read && !caps.writable {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!("'{location}' can only be read (open it with the read mode)"),
            ));
        }
        let store: Arc<dyn Store> = if options.storage.cache_bytes > 0 {
            Arc::new(CachedStore::new(
                store,
                options.storage.cache_bytes,
                |key: &str| !node::is_metadata_key(key),
            ))
        } else {
            store
        };
        if mode == Mode::Create && !store.is_dir("")? {
            if store.exists("")? {
                return Err(Error::invalid_argument(format!(
                    "'{location}' is not a directory"
                )));
            }
            store.create_dir("")?;
        }
        // The root's attributes.json, read once: an N5 root with a version
        // needs no other request to tell its format.
        let root_bytes = store.get(ATTRIBUTES_FILE)?;
        if root_bytes.is_none() && mode != Mode::Create && caps.list && !store.is_dir("")? {
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
            .map(|b| node::parse_json(&b, ATTRIBUTES_FILE, &*store))
            .transpose()?;
        use crate::format::Format;
        use crate::storage::location::FormatHint;
        let versioned_n5 = root.as_ref().is_some_and(|r| r.get("n5").is_some());
        let format = match hint {
            Some(FormatHint::N5) => Format::N5,
            None if versioned_n5 => Format::N5,
            _ => match crate::format::root_marker(&*store)? {
                None if mode == Mode::Create => {
                    crate::format::for_new(hint, options.format, &location)
                }
                _ => crate::format::detect(&*store, hint, &location)?,
            },
        };
        let container = Container {
            inner: Arc::new(Inner {
                store,
                location,
                mode,
                pool: Pool::new(options.threads),
                options,
                format,
                consolidated: OnceLock::new(),
            }),
        };
        if format != Format::N5 {
            if mode != Mode::Read {
                format.mark_group(container.store(), "")?;
            }
        } else if let Some(version) = version_of(root.as_ref()) {
            let (major, _, _) = parse_version(&version);
            if major > MAX_MAJOR_VERSION {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "container '{}' has N5 version {version}; this library reads versions up to {MAX_MAJOR_VERSION}.x",
                        container.inner.location
                    ),
                ));
            }
        } else if mode != Mode::Read {
            container.update_attributes("", |doc| {
                let map = as_object_mut(doc);
                if !map.contains_key("n5") {
                    map.insert("n5".into(), Value::from(N5_FORMAT_VERSION));
                }
                Ok(())
            })?;
        }
        Ok(container)
    }

    /// The container's location as given to [`Container::open`] (a path or
    /// a URL, credentials left out).
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// The container's format.
    pub fn format(&self) -> crate::format::Format {
        self.inner.format
    }

    /// The mode the container was opened in.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The options the container was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// The store holding the container's bytes.
    pub fn store(&self) -> &dyn Store {
        &*self.inner.store
    }

    /// The root's `"n5"` version, if it has one (a non-string value is
    /// shown as its JSON text); `None` for Zarr containers.
    pub fn version(&self) -> Result<Option<String>> {
        if self.inner.format != Format::N5 {
            return Ok(None);
        }
        Ok(version_of(self.read_attributes_file("")?.as_ref()))
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.inner.mode == Mode::Read {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!("container '{}' is open read-only", self.inner.location),
            ));
        }
        Ok(())
    }

    /// The user attributes of the node at the normalised `path` (N5: its
    /// whole attributes.json; Zarr v3: the `attributes` of its zarr.json;
    /// Zarr v2: its .zattrs), `None` when the document does not exist.
    pub(crate) fn read_attributes_file(&self, path: &str) -> Result<Option<Value>> {
        self.inner.format.user_attributes(self.store(), path)
    }

    /// Read-modify-write the attributes.json of the normalised `path`
    /// atomically with respect to every other writer, also in other
    /// processes and on other machines (see [`Store::update`]: a directory
    /// lock on the file system, conditional writes on object stores, where
    /// `f` runs again when another writer got in between). The file is
    /// replaced atomically, and only when `f` changed the document or there
    /// was none.
    pub(crate) fn update_attributes<T>(
        &self,
        path: &str,
        mut f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        self.check_writable()?;
        self.inner
            .format
            .update_user_attributes(self.store(), path, &mut f)
    }

    /// Whether a group or dataset exists at the normalised `p`: the root
    /// always does (it opened). Elsewhere in N5, a directory (on object
    /// stores, a marker or any object below it), or where the store cannot
    /// list (plain HTTP), an attributes.json. In Zarr, a node document, or
    /// where the store can list, a directory that is not inside an array
    /// (an implicit group, as tensorstore leaves them).
    fn node_exists(&self, p: &str) -> Result<bool> {
        if p.is_empty() {
            return Ok(true);
        }
        let (format, store) = (self.inner.format, self.store());
        let listable = store.capabilities().list;
        match format {
            Format::N5 if listable => store.is_dir(p),
            Format::N5 => store.exists(&format.attributes_key(p)),
            _ => Ok(format.node_kind(store, p)?.is_some()
                || (listable && store.is_dir(p)? && format.array_above(store, p)?.is_none())),
        }
    }

    fn require_group(&self, path: &str) -> Result<()> {
        if self.node_exists(path)? {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::NotFound,
                format!("no group or dataset at '{}'", display(path)),
            ))
        }
    }

    fn require_listing(&self) -> Result<()> {
        if self.can_list_nodes()? {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "'{}': a plain HTTP(S) server cannot list groups (open the data through s3:// or gs:// to list it)",
                    self.inner.location
                ),
            ))
        }
    }

    /// Whether [`Container::list`] and [`Container::deep_list`] work here:
    /// the store lists, or (on a store that cannot, like plain HTTP) a Zarr
    /// root holds consolidated metadata that names the nodes.
    pub fn can_list_nodes(&self) -> Result<bool> {
        Ok(self.store().capabilities().list || self.consolidated()?.is_some())
    }

    /// The nodes the root's consolidated metadata names (Zarr), read once.
    fn consolidated(&self) -> Result<Option<Arc<BTreeSet<String>>>> {
        if let Some(known) = self.inner.consolidated.get() {
            return Ok(known.clone());
        }
        let nodes = consolidated::nodes(self.format(), self.store())?.map(Arc::new);
        Ok(self.inner.consolidated.get_or_init(|| nodes).clone())
    }

    /// The children of the group `p`: the store's listing, or where the
    /// store cannot list, the names the consolidated metadata gives.
    fn children(&self, p: &str) -> Result<Vec<String>> {
        if !self.store().capabilities().list {
            if let Some(nodes) = self.consolidated()? {
                return Ok(consolidated::children(&nodes, p));
            }
        }
        Ok(self.store().list(p)?.unwrap_or_default().dirs)
    }

    /// Whether a group or dataset exists at `path`.
    pub fn exists(&self, path: &str) -> Result<bool> {
        let p = path::normalize(path)?;
        self.node_exists(&p)
    }

    /// Whether a dataset exists at `path` (a group whose attributes describe
    /// a dataset).
    pub fn dataset_exists(&self, path: &str) -> Result<bool> {
        let p = path::normalize(path)?;
        Ok(self.inner.format.node_kind(self.store(), &p)? == Some(NodeKind::Array))
    }

    /// Create the group at `path` and every missing parent. Existing groups
    /// are left as they are.
    pub fn create_group(&self, path: &str) -> Result<()> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        let (format, store) = (self.inner.format, self.store());
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
        if let Some(array) = format.array_above(store, &p)? {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "'{}' is inside the array '{}', not in a group",
                    display(&p),
                    display(&array)
                ),
            ));
        }
        store.create_dir(&p)?;
        // Zarr marks every group on the way down with its own document.
        let mut prefix = String::new();
        for component in p.split('/').filter(|c| !c.is_empty()) {
            prefix = path::join(&prefix, component);
            format.mark_group(store, &prefix)?;
        }
        Ok(())
    }

    /// The child groups and datasets of the group at `path`, sorted. A
    /// dataset has no children (its block directories are not listed).
    pub fn list(&self, path: &str) -> Result<Vec<String>> {
        let p = path::normalize(path)?;
        self.require_listing()?;
        self.require_group(&p)?;
        if self.dataset_exists(&p)? {
            return Ok(Vec::new());
        }
        self.children(&p)
    }

    /// Every group and dataset below `path`, as paths relative to it,
    /// depth first in sorted order; the walk does not descend into datasets.
    pub fn deep_list(&self, path: &str) -> Result<Vec<String>> {
        let p = path::normalize(path)?;
        self.require_listing()?;
        self.require_group(&p)?;
        let mut out = Vec::new();
        if !self.dataset_exists(&p)? {
            self.deep_list_into(&p, "", &mut out)?;
        }
        Ok(out)
    }

    fn deep_list_into(&self, base: &str, rel: &str, out: &mut Vec<String>) -> Result<()> {
        let here = path::join(base, rel);
        for child in self.children(&here)? {
            let child_rel = path::join(rel, &child);
            out.push(child_rel.clone());
            if !self.dataset_exists(&path::join(base, &child_rel))? {
                self.deep_list_into(base, &child_rel, out)?;
            }
        }
        Ok(())
    }

    /// Remove the group or dataset at `path` with everything below it.
    /// Returns whether anything was there. Removing the root is an error.
    pub fn remove(&self, path: &str) -> Result<bool> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        if p.is_empty() {
            return Err(Error::invalid_argument(
                "refusing to remove the container root",
            ));
        }
        if !self.node_exists(&p)? {
            // Nothing there, or a file that is not a group or dataset
            // (exists() says no): there is no group to remove.
            return Ok(false);
        }
        self.store().delete_dir(&p)
    }

    /// Delete the temporary files (`.n5tmp.*`) that writers killed in the
    /// middle of a write left anywhere in the container, if they were last
    /// modified at least `older_than` ago. Readers and listings ignore
    /// them, so this only reclaims space; give an age longer than any write
    /// takes (an hour, say) while other processes may be writing, since a
    /// write in progress has a temporary too. Symlinks are neither followed
    /// nor removed, so datasets reached through a symlink are not cleaned. Returns the number of files removed and their total
    /// size in bytes. [`ErrorKind::ReadOnly`] through a read-only handle.
    pub fn remove_stale_temporaries(&self, older_than: std::time::Duration) -> Result<(u64, u64)> {
        self.check_writable()?;
        self.store().remove_stale_temporaries(older_than)
    }

    /// The whole attributes document of the group or dataset at `path`
    /// (`{}` when it has no attributes.json). Where the store cannot list
    /// (plain HTTP), a group without attributes.json cannot be told from
    /// no group, and both give `{}`.
    pub fn attributes(&self, path: &str) -> Result<Value> {
        let p = path::normalize(path)?;
        if let Some(doc) = self.read_attributes_file(&p)? {
            return Ok(doc);
        }
        if self.store().capabilities().list {
            self.require_group(&p)?;
        }
        Ok(Value::Object(Map::new()))
    }

    /// Merge `attributes` into the document at `path`: each top-level key
    /// replaces the stored value (JSON null is stored as null). The group must
    /// exist. A document that is not an object is replaced by one.
    pub fn set_attributes(&self, path: &str, attributes: &Map<String, Value>) -> Result<()> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        self.require_group(&p)?;
        self.update_attributes(&p, |doc| {
            let map = as_object_mut(doc);
            for (k, v) in attributes {
                map.insert(k.clone(), v.clone());
            }
            Ok(())
        })
    }

    /// The value at the N5 attribute path `key` (`a/b[2]`) in the document
    /// at `path`, `None` when absent.
    pub fn get_attribute(&self, path: &str, key: &str) -> Result<Option<Value>> {
        let doc = self.attributes(path)?;
        Ok(attrpath::get(&doc, key)?.cloned())
    }

    /// Set the value at the N5 attribute path `key`, creating intermediate
    /// objects and arrays. The group must exist.
    pub fn set_attribute(&self, path: &str, key: &str, value: Value) -> Result<()> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        self.require_group(&p)?;
        attrpath::parse(key)?;
        self.update_attributes(&p, |doc| attrpath::set(doc, key, value.clone()))
    }

    /// Remove the value at the N5 attribute path `key` and return it
    /// (`None` when it was absent; array elements after it shift down).
    pub fn remove_attribute(&self, path: &str, key: &str) -> Result<Option<Value>> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        self.require_group(&p)?;
        attrpath::parse(key)?;
        if self.read_attributes_file(&p)?.is_none() {
            return Ok(None);
        }
        self.update_attributes(&p, |doc| attrpath::remove(doc, key))
    }

    /// Create a dataset at `path` (and its parent groups). User attributes
    /// already on a group at `path` are kept; a dataset already there is an
    /// [`ErrorKind::AlreadyExists`] error.
    pub fn create_dataset(&self, path: &str, attributes: DatasetAttributes) -> Result<Dataset> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        let format = self.inner.format;
        if format != Format::N5 {
            let doc = ZarrArray::document_for(format, &attributes)?;
            return self.create_zarr_array(&p, doc);
        }
        self.create_group(&p)?;
        let members = attributes.to_json();
        self.update_attributes(&p, |doc| {
            if metadata::is_dataset(doc) {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("a dataset already exists at '{}'", display(&p)),
                ));
            }
            let map = as_object_mut(doc);
            for (k, v) in &members {
                map.insert(k.clone(), v.clone());
            }
            map.remove("compressionType");
            Ok(())
        })?;
        Ok(Dataset::new(self.clone(), p, attributes))
    }

    /// The metadata document [`Container::create_dataset`] writes for
    /// `attributes` in a container of `format`: the N5 dataset members, a
    /// Zarr v2 .zarray, or a Zarr v3 zarr.json array document (fill value
    /// 0, no sharding, the N5 compression mapped to the format's codec;
    /// shapes in the format's own order). A compression with no codec in
    /// the format is an [`ErrorKind::Unsupported`] error naming it, so a
    /// caller can check a whole plan before writing anything, and build
    /// on the document (sharding, fill value) for
    /// [`Container::create_dataset_json`].
    pub fn dataset_document(format: Format, attributes: &DatasetAttributes) -> Result<Value> {
        match format {
            Format::N5 => Ok(Value::Object(attributes.to_json())),
            _ => ZarrArray::document_for(format, attributes),
        }
    }

    /// Create a dataset at `path` (and its parent groups) from the format's
    /// own metadata document: a zarr.json array document for Zarr v3
    /// (`zarr_format` and `node_type` may be left out; sharding and every
    /// codec of the format allowed), a .zarray document for Zarr v2, the
    /// dataset attributes (`dimensions`, `blockSize`, `dataType`,
    /// `compression`) for N5. Shapes are in the document's own order. The
    /// document is checked whole before anything is written; user
    /// attributes of a group already at `path` are kept.
    pub fn create_dataset_json(&self, path: &str, document: &Value) -> Result<Dataset> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        let format = self.inner.format;
        let mut doc = document.clone();
        let map = doc.as_object_mut().ok_or_else(|| {
            Error::invalid_metadata(format!(
                "the metadata of a new dataset must be a JSON object, not {document}"
            ))
        })?;
        match format {
            Format::N5 => {
                let attributes = DatasetAttributes::from_json(document)?;
                return self.create_dataset(&p, attributes);
            }
            Format::Zarr3 => {
                map.entry("zarr_format").or_insert(Value::from(3));
                map.entry("node_type").or_insert(Value::from("array"));
            }
            Format::Zarr2 => {
                map.entry("zarr_format").or_insert(Value::from(2));
            }
        }
        self.create_zarr_array(&p, doc)
    }

    /// Write the Zarr array document `doc` at the normalised `p`, after
    /// checking it, with the parents as groups; a group at `p` becomes the
    /// array and keeps its user attributes, an array there is an error.
    fn create_zarr_array(&self, p: &str, doc: Value) -> Result<Dataset> {
        let format = self.inner.format;
        let store = self.store();
        ZarrArray::from_document(format, doc.clone())
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
                let key = path::join(p, node::ZARR_JSON);
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
                    serde_json::to_vec_pretty(&new)
                        .map(Some)
                        .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
                })?;
            }
            _ => {
                let key = path::join(p, node::ZARRAY);
                let bytes = serde_json::to_vec_pretty(&doc)
                    .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
                if !store.put_if(&key, &bytes, &crate::storage::Precondition::Absent)? {
                    return Err(exists());
                }
                // A group here becomes the array (its .zattrs stay).
                store.delete(&path::join(p, node::ZGROUP))?;
            }
        }
        let array = ZarrArray::from_document(format, written)?;
        Dataset::new_zarr(self.clone(), p.to_string(), array)
    }

    /// Open the dataset at `path`, reading its metadata once.
    pub fn open_dataset(&self, path: &str) -> Result<Dataset> {
        let p = path::normalize(path)?;
        let format = self.inner.format;
        if format != Format::N5 {
            return match format.node_kind(self.store(), &p)? {
                Some(NodeKind::Array) => {
                    let array = ZarrArray::open(format, self.store(), &p)
                        .map_err(|e| e.context(format!("dataset '{}'", display(&p))))?;
                    Dataset::new_zarr(self.clone(), p, array)
                }
                Some(NodeKind::Group) => Err(Error::new(
                    ErrorKind::NotFound,
                    format!("'{}' is a group, not a dataset", display(&p)),
                )),
                None => Err(Error::new(
                    ErrorKind::NotFound,
                    format!("no dataset at '{}'", display(&p)),
                )),
            };
        }
        let doc = self.read_attributes_file(&p)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no dataset at '{}'", display(&p)),
            )
        })?;
        if !metadata::is_dataset(&doc) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("'{}' is a group, not a dataset", display(&p)),
            ));
        }
        let attributes = DatasetAttributes::from_json(&doc)
            .map_err(|e| e.context(format!("dataset '{}'", display(&p))))?;
        Ok(Dataset::new(self.clone(), p, attributes))
    }
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

    #[test]
    fn options_json() {
        assert_eq!(Options::from_json(r#"{"threads": 3}"#).unwrap().threads, 3);
        assert_eq!(Options::from_json("{}").unwrap(), Options::default());
        assert!(Options::from_json(r#"{"thread": 3}"#).is_err());
        assert!(Options::from_json(r#"{"threads": -1}"#).is_err());
        assert!(Options::from_json("[").is_err());
        let o = Options::from_json(r#"{"write_empty_blocks": false, "threads": 1}"#).unwrap();
        assert!(!o.write_empty_blocks && o.threads == 1);
        assert!(Options::default().write_empty_blocks);
        assert!(Options::from_json(r#"{"write_empty_blocks": 0}"#).is_err());
        let o = Options::from_json(r#"{"format": "zarr2"}"#).unwrap();
        assert_eq!(o.format, Some(crate::format::Format::Zarr2));
        assert!(Options::from_json(r#"{"format": "hdf5"}"#).is_err());
        assert!(Options::from_json(r#"{"format": 3}"#).is_err());
        assert_eq!(Mode::from_code(2), Some(Mode::Create));
        assert_eq!(Mode::from_code(3), None);
    }
}
