//! Containers and groups: opening a container at a location (a path, or
//! an `s3://`, `gs://` or `https://` URL) in one of three modes with its
//! options, the group hierarchy (create, exists, list, deep list, remove)
//! and attributes (whole documents, merges, and single values by N5
//! attribute path), with atomic updates that writers on many machines can
//! make at once. Which format a location holds, what a path holds and
//! where its documents are is the format layer's (`format::open`,
//! `format::tree`); this file checks arguments and modes and delegates.
//! Every path is resolved through hdmf-zarr links where the container has
//! them (`crate::links`, `format::links`): a path that is no node is tried
//! through the links of its groups before it counts as missing.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::attrpath;
use crate::error::{Error, ErrorKind, Result};
use crate::format::links::{self, Found, Place};
use crate::format::node::{as_object_mut, NodeKind};
use crate::format::open::{open_in_store, open_tree, OpenTree};
use crate::format::tree::Tree;
use crate::format::{Format, FormatOptions};
use crate::parallel::Pool;
use crate::path::{self, display};
use crate::storage::cache::CachedStore;
use crate::storage::{Location, StorageOptions, Store};

pub use crate::format::tree::{parse_version, MAX_MAJOR_VERSION, N5_FORMAT_VERSION};

/// The name of the per-group attributes file.
pub const ATTRIBUTES_FILE: &str = "attributes.json";

/// How a container is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Read only: nothing is ever created, locked or written; every write is
    /// an [`ErrorKind::ReadOnly`] error. The root must exist.
    Read,
    /// Read and write an existing container. Writes the root version
    /// `"4.0.0"` when an N5 root has none.
    ReadWrite,
    /// Read and write, creating the root directory and its attributes.json
    /// when missing (an HDF5 file: the file, with its missing parent
    /// directories). An existing container is opened as it is, never
    /// truncated.
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
    /// keeps sparse volumes small (missing blocks read as zeros). In an
    /// HDF5 file, which cannot free a chunk, `false` leaves a chunk that is
    /// not allocated so when a block of the fill value is written to it.
    pub write_empty_blocks: bool,
    /// Where the bytes go: requests in flight, the block cache, and the
    /// settings and credentials of S3, GCS and HTTP locations.
    pub storage: StorageOptions,
    /// The format of a container that [`Mode::Create`] makes (`"format"`:
    /// `"n5"`, `"zarr2"`, `"zarr3"` or `"hdf5"`); a prefix on the location
    /// takes precedence, and without either the name's suffix decides
    /// (`.zarr`: Zarr v3, `.h5`: HDF5), else N5. Existing containers keep
    /// their own format (an existing file is HDF5 when it has the HDF5
    /// signature).
    pub format: Option<crate::format::Format>,
    /// The options of particular formats, each under the format's name
    /// (`"hdf5": {"default_block_size": [64, 64, 64, 1, 1]}`: see
    /// [`crate::format::hdf5::Hdf5Options`]).
    pub format_options: FormatOptions,
    /// Whether paths are resolved through hdmf-zarr links (`true`, the
    /// default): a path segment that is no node but a link of its group
    /// leads to the link's target. `false` makes links neither listed nor
    /// found; [`Container::links`] and [`Container::resolve_link`] work
    /// either way.
    pub follow_links: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: crate::parallel::cores(),
            write_empty_blocks: true,
            storage: StorageOptions::default(),
            format: None,
            format_options: FormatOptions::default(),
            follow_links: true,
        }
    }
}

impl Options {
    /// Parse options from a JSON object such as
    /// `{"threads": 4, "write_empty_blocks": false, "io_concurrency": 32,
    /// "s3": {"endpoint": "http://127.0.0.1:8333"}}` (every key is described
    /// with [`Options`], [`StorageOptions`] and [`FormatOptions`]). Unknown keys are an error
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
                "follow_links" => {
                    options.follow_links = v.as_bool().ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "options: follow_links must be true or false, not {}",
                            crate::storage::options::shown_value(v)
                        ))
                    })?
                }
                "format" => {
                    let name = v.as_str().ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "options: format must be \"n5\", \"zarr2\", \"zarr3\" or \"hdf5\", not {}",
                            crate::storage::options::shown_value(v)
                        ))
                    })?;
                    options.format = Some(
                        crate::format::Format::from_name(name).map_err(|e| e.context("options"))?,
                    );
                }
                other => {
                    if !options.storage.parse_key(other, v)?
                        && !options.format_options.parse_key(other, v)?
                    {
                        return Err(Error::invalid_argument(format!(
                            "options: unknown key '{other}' (known: threads, write_empty_blocks, \
                             follow_links, format, io_concurrency, cache_bytes, s3, gcs, http, \
                             retry, {})",
                            FormatOptions::KEYS
                        )));
                    }
                }
            }
        }
        Ok(options)
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    /// The container's hierarchy in the format layer.
    pub(crate) tree: Arc<dyn Tree>,
    pub(crate) location: String,
    /// The parsed location; `None` for a container opened in a store.
    pub(crate) parsed: Option<Location>,
    pub(crate) mode: Mode,
    pub(crate) options: Options,
    /// Shared with the containers its links open.
    pub(crate) pool: Arc<Pool>,
    /// The containers external links named, opened read-only, by location.
    pub(crate) linked: Mutex<HashMap<String, Container>>,
    /// Whether the container was opened to follow a link.
    pub(crate) via_link: bool,
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
    /// [`Location`]. A local HDF5 file (`/data/vol.h5`) is a container too
    /// (with the cargo feature `hdf5`). Fails when the root does not exist
    /// (unless `mode` is [`Mode::Create`]), when it is not a directory (or
    /// an HDF5 file), when its root attributes are not valid JSON, or when
    /// its `"n5"` version has a major version above 4. A missing version is
    /// accepted.
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
        Container::open_parsed(parsed, mode, options, None)
    }

    /// Open the container at the parsed `parsed`; one that a link of
    /// another container opens shares that container's thread pool
    /// (`linked_from`).
    pub(crate) fn open_parsed(
        parsed: Location,
        mode: Mode,
        options: Options,
        linked_from: Option<&Container>,
    ) -> Result<Container> {
        let how = Container::how(&parsed.display, mode, &options);
        let tree = open_tree(&parsed, &how, || {
            let store = crate::storage::open(&parsed, &options.storage)?;
            Container::prepare_store(store, &parsed.display, mode, &options)
        })?;
        let pool = match linked_from {
            Some(c) => c.inner.pool.clone(),
            None => Arc::new(Pool::new(options.threads)),
        };
        Ok(Container {
            inner: Arc::new(Inner {
                tree,
                location: parsed.display.clone(),
                parsed: Some(parsed),
                mode,
                pool,
                options,
                linked: Mutex::new(HashMap::new()),
                via_link: linked_from.is_some(),
            }),
        })
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
        let location = location.into();
        let store = Container::prepare_store(store, &location, mode, &options)?;
        let tree = open_in_store(store, None, &Container::how(&location, mode, &options))?;
        Ok(Container::with_tree(tree, location, mode, options))
    }

    /// How a container at `location` is opened in `mode` with `options`.
    fn how<'a>(location: &'a str, mode: Mode, options: &'a Options) -> OpenTree<'a> {
        OpenTree {
            location,
            writable: mode != Mode::Read,
            create: mode == Mode::Create,
            new_format: options.format,
            write_empty: options.write_empty_blocks,
            options: &options.format_options,
        }
    }

    /// `store` checked for `mode` (a write mode needs a writable store) and
    /// with the block cache the options ask for.
    fn prepare_store(
        store: Arc<dyn Store>,
        location: &str,
        mode: Mode,
        options: &Options,
    ) -> Result<Arc<dyn Store>> {
        if mode != Mode::Read && !store.capabilities().writable {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!("'{location}' can only be read (open it with the read mode)"),
            ));
        }
        Ok(if options.storage.cache_bytes > 0 {
            Arc::new(CachedStore::new(
                store,
                options.storage.cache_bytes,
                |key: &str| !crate::format::node::is_metadata_key(key),
            ))
        } else {
            store
        })
    }

    /// The container whose hierarchy is `tree`, opened in a store (no
    /// location of its own to resolve external links against).
    fn with_tree(tree: Arc<dyn Tree>, location: String, mode: Mode, options: Options) -> Self {
        Container {
            inner: Arc::new(Inner {
                tree,
                location,
                parsed: None,
                mode,
                pool: Arc::new(Pool::new(options.threads)),
                options,
                linked: Mutex::new(HashMap::new()),
                via_link: false,
            }),
        }
    }

    /// The container's location as given to [`Container::open`] (a path or
    /// a URL, credentials left out).
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// The container's format.
    pub fn format(&self) -> Format {
        self.inner.tree.format()
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

    /// The container's hierarchy in the format layer.
    pub(crate) fn tree(&self) -> &dyn Tree {
        &*self.inner.tree
    }

    /// The store holding the container's bytes (for a container that is
    /// one file, such as an HDF5 file, the file's directory, in which the
    /// file is one object).
    pub fn store(&self) -> &dyn Store {
        self.tree().store()
    }

    /// The root's `"n5"` version, if it has one (a non-string value is
    /// shown as its JSON text); `None` for Zarr containers.
    pub fn version(&self) -> Result<Option<String>> {
        self.tree().version()
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.inner.via_link {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!(
                    "container '{}' is the target of an external link, which is only read",
                    self.inner.location
                ),
            ));
        }
        if self.inner.mode == Mode::Read {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!("container '{}' is open read-only", self.inner.location),
            ));
        }
        Ok(())
    }

    /// Whether `other` is this very container (not another handle opened
    /// at the same place).
    pub(crate) fn same(&self, other: &Container) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether paths are resolved through links here: the options ask
    /// for it and the format has links.
    pub(crate) fn follows_links(&self) -> bool {
        self.inner.options.follow_links && self.tree().has_links()
    }

    /// Check that a write at `path`, which resolved into `target`, stays in
    /// this container: through an external link it is
    /// [`ErrorKind::ReadOnly`].
    pub(crate) fn writable_through(&self, target: &Container, path: &str) -> Result<()> {
        if self.same(target) {
            return self.check_writable();
        }
        Err(Error::new(
            ErrorKind::ReadOnly,
            format!(
                "'{}' leads through an external link into '{}', which links only read",
                display(path.trim_start_matches('/')),
                target.location()
            ),
        ))
    }

    /// The node at the normalised `p`, links followed as the options say;
    /// [`ErrorKind::NotFound`] when there is none.
    fn node_at(&self, p: &str) -> Result<Found<Container>> {
        match self.locate(p)? {
            Place::Found(found) => Ok(found),
            Place::Missing { .. } => Err(Error::new(
                ErrorKind::NotFound,
                format!("no group or dataset at '{}'", display(p)),
            )),
        }
    }

    /// Where a new node at `path` goes: the normalised path, or the path
    /// it leads to through links of this container. A link there is
    /// [`ErrorKind::AlreadyExists`]; a path through an external link is
    /// [`ErrorKind::ReadOnly`].
    pub(crate) fn place_for_new(&self, path: &str) -> Result<(Container, String)> {
        let p = path::normalize(path)?;
        if !self.follows_links() {
            return Ok((self.clone(), p));
        }
        let (container, target) = match self.locate(&p)? {
            Place::Found(found) if found.link => {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("'{}' is a link in its group", display(&p)),
                ))
            }
            Place::Found(found) => (found.container, found.path),
            Place::Missing { container, path } => (container, path),
        };
        self.writable_through(&container, &p)?;
        Ok((container, target))
    }

    /// The existing group or dataset at `path` whose attributes a write
    /// changes: the normalised path, or the node a link of this container
    /// leads to.
    fn node_to_write(&self, path: &str) -> Result<(Container, String)> {
        let p = path::normalize(path)?;
        if !self.follows_links() {
            self.require_group(&p)?;
            return Ok((self.clone(), p));
        }
        if self.tree().node_exists(&p)? {
            return Ok((self.clone(), p));
        }
        let found = self.node_at(&p)?;
        self.writable_through(&found.container, &p)?;
        Ok((found.container, found.path))
    }

    /// The user attributes of the node at the normalised `path` (N5: its
    /// whole attributes.json; Zarr v3: the `attributes` of its zarr.json;
    /// Zarr v2: its .zattrs), `None` when the document does not exist.
    fn read_attributes_file(&self, path: &str) -> Result<Option<Value>> {
        self.tree().read_attributes(path)
    }

    /// Read-modify-write the user attributes of the normalised `path`
    /// atomically with respect to every other writer, also in other
    /// processes and on other machines (see [`crate::storage::Store::update`]:
    /// a directory lock on the file system, conditional writes on object
    /// stores, where `f` runs again when another writer got in between).
    /// The document is replaced atomically, and only when `f` changed it or
    /// there was none.
    fn update_attributes<T>(
        &self,
        path: &str,
        mut f: impl FnMut(&mut Value) -> Result<T>,
    ) -> Result<T> {
        self.check_writable()?;
        let mut result = None;
        self.tree().update_attributes(path, &mut |doc| {
            result = Some(f(doc)?);
            Ok(())
        })?;
        result.ok_or_else(|| Error::new(ErrorKind::Internal, "an attribute update did not run"))
    }

    fn require_group(&self, path: &str) -> Result<()> {
        if self.tree().node_exists(path)? {
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
        self.tree().can_list()
    }

    /// Whether a group or dataset exists at `path` (through links: whether
    /// the link's target does; `false` for a dangling link).
    pub fn exists(&self, path: &str) -> Result<bool> {
        let p = path::normalize(path)?;
        let direct = self.tree().node_exists(&p)?;
        if direct || !self.follows_links() {
            return Ok(direct);
        }
        match self.locate(&p) {
            Ok(place) => Ok(matches!(place, Place::Found(_))),
            Err(e) if e.kind() == ErrorKind::DanglingLink => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether a dataset exists at `path` (a group whose attributes describe
    /// a dataset; through links, the target; `false` for a dangling link).
    pub fn dataset_exists(&self, path: &str) -> Result<bool> {
        let p = path::normalize(path)?;
        let direct = self.tree().is_array(&p)?;
        if direct || !self.follows_links() {
            return Ok(direct);
        }
        match self.locate(&p) {
            Ok(Place::Found(found)) => Ok(found.kind == NodeKind::Array),
            Ok(Place::Missing { .. }) => Ok(false),
            Err(e) if e.kind() == ErrorKind::DanglingLink => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Create the group at `path` and every missing parent. Existing groups
    /// are left as they are; a link at `path` is
    /// [`ErrorKind::AlreadyExists`], and a path through a link of this
    /// container creates the group below the link's target.
    pub fn create_group(&self, path: &str) -> Result<()> {
        self.check_writable()?;
        let (c, p) = self.place_for_new(path)?;
        c.tree().create_group(&p)
    }

    /// The child groups and datasets of the group at `path`, sorted, with
    /// the names of its links (which are members too) where links are
    /// followed. A dataset has no children (its block directories are not
    /// listed).
    pub fn list(&self, path: &str) -> Result<Vec<String>> {
        let p = path::normalize(path)?;
        self.require_listing()?;
        let found = self.node_at(&p)?;
        let c = &found.container;
        c.require_listing()?;
        if found.kind == NodeKind::Array {
            return Ok(Vec::new());
        }
        let mut names = c.tree().children(&found.path)?;
        if self.follows_links() {
            names.extend(self.link_names(c, &found.path, &names)?);
            names.sort();
        }
        Ok(names)
    }

    /// The names of the links of the group at `p` of `c` that are not
    /// among `nodes` (a node wins over a link of its name), in stored order.
    fn link_names(&self, c: &Container, p: &str, nodes: &[String]) -> Result<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        for link in links::links_of(c.tree(), p)? {
            if !nodes.contains(&link.name) && !names.contains(&link.name) {
                names.push(link.name);
            }
        }
        Ok(names)
    }

    /// Every group and dataset below `path`, as paths relative to it,
    /// depth first in sorted order; the walk does not descend into
    /// datasets, nor into links, which are listed as entries where links
    /// are followed.
    pub fn deep_list(&self, path: &str) -> Result<Vec<String>> {
        let p = path::normalize(path)?;
        self.require_listing()?;
        let found = self.node_at(&p)?;
        found.container.require_listing()?;
        let mut out = Vec::new();
        if found.kind != NodeKind::Array {
            self.deep_list_into(&found.container, &found.path, "", &mut out)?;
        }
        Ok(out)
    }

    fn deep_list_into(
        &self,
        c: &Container,
        base: &str,
        rel: &str,
        out: &mut Vec<String>,
    ) -> Result<()> {
        let here = path::join(base, rel);
        let nodes = c.tree().children(&here)?;
        let mut children: Vec<(String, bool)> = nodes.iter().map(|n| (n.clone(), true)).collect();
        if self.follows_links() {
            let links = self.link_names(c, &here, &nodes)?;
            children.extend(links.into_iter().map(|n| (n, false)));
            children.sort();
        }
        for (child, node) in children {
            let child_rel = path::join(rel, &child);
            out.push(child_rel.clone());
            if node && !c.tree().is_array(&path::join(base, &child_rel))? {
                self.deep_list_into(c, base, &child_rel, out)?;
            }
        }
        Ok(())
    }

    /// Remove the group or dataset at `path` with everything below it, or,
    /// when the last segment of `path` is a link, the link (never its
    /// target). Returns whether anything was there. Removing the root is
    /// an error; through an external link, [`ErrorKind::ReadOnly`].
    pub fn remove(&self, path: &str) -> Result<bool> {
        self.check_writable()?;
        let p = path::normalize(path)?;
        if p.is_empty() {
            return Err(Error::invalid_argument(
                "refusing to remove the container root",
            ));
        }
        if self.tree().node_exists(&p)? {
            return self.tree().remove(&p);
        }
        if !self.follows_links() {
            // Nothing there, or a file that is not a group or dataset
            // (exists() says no): there is no group to remove.
            return Ok(false);
        }
        let (parent, name) = p.rsplit_once('/').unwrap_or(("", &p));
        let group = match self.locate(parent)? {
            Place::Found(found) if found.kind == NodeKind::Group => found,
            _ => return Ok(false),
        };
        let (c, child) = (&group.container, path::join(&group.path, name));
        if c.tree().node_exists(&child)? {
            self.writable_through(c, &p)?;
            return c.tree().remove(&child);
        }
        if !links::links_of(c.tree(), &group.path)?
            .iter()
            .any(|l| l.name == name)
        {
            return Ok(false);
        }
        self.writable_through(c, &p)?;
        links::remove_link(c.tree(), &group.path, name)
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
        self.tree().remove_stale_temporaries(older_than)
    }

    /// The whole attributes document of the group or dataset at `path`
    /// (`{}` when it has no attributes.json). Where the store cannot list
    /// (plain HTTP), a group without attributes.json cannot be told from
    /// no group, and both give `{}`.
    pub fn attributes(&self, path: &str) -> Result<Value> {
        Ok(self.attributes_at(path)?.0)
    }

    /// The attributes document of the node at `path` (see
    /// [`Container::attributes`]), with the container and path it was read
    /// at (a link's target).
    fn attributes_at(&self, path: &str) -> Result<(Value, Container, String)> {
        let p = path::normalize(path)?;
        if let Some(doc) = self.read_attributes_file(&p)? {
            return Ok((doc, self.clone(), p));
        }
        if self.follows_links() {
            match self.locate(&p)? {
                Place::Found(found) => {
                    let doc = found
                        .container
                        .read_attributes_file(&found.path)?
                        .unwrap_or_else(|| Value::Object(Map::new()));
                    return Ok((doc, found.container, found.path));
                }
                Place::Missing { container, .. } if container.store().capabilities().list => {
                    self.require_group(&p)?;
                }
                Place::Missing { .. } => {}
            }
        } else if self.store().capabilities().list {
            self.require_group(&p)?;
        }
        Ok((Value::Object(Map::new()), self.clone(), p))
    }

    /// Merge `attributes` into the document at `path`: each top-level key
    /// replaces the stored value (JSON null is stored as null). The group must
    /// exist. A document that is not an object is replaced by one.
    pub fn set_attributes(&self, path: &str, attributes: &Map<String, Value>) -> Result<()> {
        self.check_writable()?;
        let (c, p) = self.node_to_write(path)?;
        c.update_attributes(&p, |doc| {
            let map = as_object_mut(doc);
            for (k, v) in attributes {
                map.insert(k.clone(), v.clone());
            }
            Ok(())
        })
    }

    /// Read-modify-write the attributes document at `path` atomically with
    /// respect to every other writer, in this and other processes and on
    /// other machines (a lock on the file system, conditional writes on
    /// object stores, where `f` runs again when another writer got in
    /// between). The document is replaced only when `f` changed it. The
    /// node must exist.
    pub fn modify_attributes(
        &self,
        path: &str,
        f: &mut dyn FnMut(&mut Map<String, Value>) -> Result<()>,
    ) -> Result<()> {
        self.check_writable()?;
        let (c, p) = self.node_to_write(path)?;
        c.update_attributes(&p, |doc| f(as_object_mut(doc)))
    }

    /// The value at the N5 attribute path `key` (`a/b[2]`) in the document
    /// at `path`, `None` when absent.
    pub fn get_attribute(&self, path: &str, key: &str) -> Result<Option<Value>> {
        let (doc, c, p) = self.attributes_at(path)?;
        let found = attrpath::get(&doc, key)?.cloned();
        if found.is_none() {
            // A top-level key the attributes leave out may be stored in a
            // form JSON has none of: say so rather than "absent".
            if let Some(attrpath::Token::Key(top)) = attrpath::parse(key)?.first() {
                if doc.get(top).is_none() {
                    c.tree().check_left_out(&p, top)?;
                }
            }
        }
        Ok(found)
    }

    /// Set the value at the N5 attribute path `key`, creating intermediate
    /// objects and arrays. The group must exist.
    pub fn set_attribute(&self, path: &str, key: &str, value: Value) -> Result<()> {
        self.check_writable()?;
        let (c, p) = self.node_to_write(path)?;
        attrpath::parse(key)?;
        c.update_attributes(&p, |doc| attrpath::set(doc, key, value.clone()))
    }

    /// Remove the value at the N5 attribute path `key` and return it
    /// (`None` when it was absent; array elements after it shift down).
    pub fn remove_attribute(&self, path: &str, key: &str) -> Result<Option<Value>> {
        self.check_writable()?;
        let (c, p) = self.node_to_write(path)?;
        attrpath::parse(key)?;
        if c.read_attributes_file(&p)?.is_none() {
            return Ok(None);
        }
        c.update_attributes(&p, |doc| attrpath::remove(doc, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let o = Options::from_json(r#"{"format": "hdf5", "hdf5": {"default_block_size": [8]}}"#)
            .unwrap();
        assert_eq!(o.format, Some(crate::format::Format::Hdf5));
        assert_eq!(o.format_options.hdf5.default_block_size, vec![8]);
        assert!(Options::from_json(r#"{"hdf5": {"chunks": [8]}}"#).is_err());
        assert!(Options::from_json(r#"{"format": "h5"}"#).is_err());
        assert!(Options::from_json(r#"{"format": 3}"#).is_err());
        assert!(Options::default().follow_links);
        assert!(
            !Options::from_json(r#"{"follow_links": false}"#)
                .unwrap()
                .follow_links
        );
        assert!(Options::from_json(r#"{"follow_links": 0}"#).is_err());
        assert_eq!(Mode::from_code(2), Some(Mode::Create));
        assert_eq!(Mode::from_code(3), None);
    }
}
