//! Links and object references of hdmf-zarr (NWB) containers, as the API
//! offers them: a group's links with their targets ([`Container::links`]),
//! the node a path leads to through links ([`Container::resolve_link`]),
//! new links ([`Container::create_link`]) and object references
//! ([`Container::resolve_reference`]). This file also owns the containers
//! that external links name: opened read-only with the linking container's
//! options (and so its credentials), kept on its handle, and alive as long
//! as a dataset opened through them. The stored form and the resolution
//! rules are the format layer's (`format::links`); where a relative
//! container reference leads is the storage layer's
//! ([`crate::storage::Location::resolve_relative`]).

use std::sync::PoisonError;

use serde_json::{json, Map, Value};

use crate::container::{Container, Mode};
use crate::error::{Error, ErrorKind, Result};
use crate::format::links::{self, Found, Place, Space, Walk};
use crate::format::node::NodeKind;
use crate::format::tree::Tree;
use crate::path::{self, display};

pub use crate::format::links::{Link, Missing};

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    /// A group (or a container's root).
    Group,
    /// A dataset (a Zarr array).
    Dataset,
}

impl NodeType {
    /// `"group"` or `"dataset"`.
    pub const fn name(self) -> &'static str {
        match self {
            NodeType::Group => "group",
            NodeType::Dataset => "dataset",
        }
    }

    fn of(kind: NodeKind) -> NodeType {
        match kind {
            NodeKind::Group => NodeType::Group,
            NodeKind::Array => NodeType::Dataset,
        }
    }
}

/// The node a path, a link or an object reference leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The container it is in: [`Container::location`] for the container
    /// itself, else the location an external link's `source` led to.
    pub location: String,
    /// Its absolute, normalised path there (`/` for the root, no trailing
    /// `/`).
    pub path: String,
    /// Whether it is a group or a dataset.
    pub node_type: NodeType,
    /// How many links were followed to reach it (0 for a plain node).
    pub hops: usize,
}

impl Target {
    /// `{"location", "path", "kind"}`, with `"hops"` when `hops` is set.
    pub fn to_json(&self, hops: bool) -> Value {
        let mut m = Map::new();
        m.insert("location".into(), json!(self.location));
        m.insert("path".into(), json!(self.path));
        m.insert("kind".into(), json!(self.node_type.name()));
        if hops {
            m.insert("hops".into(), json!(self.hops));
        }
        Value::Object(m)
    }
}

/// A link of a group and where it leads.
#[derive(Clone, Debug)]
pub struct LinkEntry {
    /// The link as stored.
    pub link: Link,
    /// The node it leads to (further links followed), or why it leads
    /// nowhere ([`ErrorKind::DanglingLink`], [`ErrorKind::LinkCycle`], ...).
    pub target: std::result::Result<Target, Error>,
    /// For a dangling link, which part of its target is missing.
    pub missing: Option<Missing>,
}

impl LinkEntry {
    /// `{"name", "source", "path", "target": {"location", "path", "kind"}
    /// | null}`, plus `"error"` (the message) and `"status"` (the
    /// `N5_ERR_*` name) when the target does not resolve.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.link.name));
        m.insert("source".into(), json!(self.link.source));
        m.insert("path".into(), json!(self.link.path));
        match &self.target {
            Ok(t) => {
                m.insert("target".into(), t.to_json(false));
            }
            Err(e) => {
                m.insert("target".into(), Value::Null);
                m.insert("error".into(), json!(e.message()));
                m.insert("status".into(), json!(e.kind().status_name()));
            }
        }
        Value::Object(m)
    }
}

/// The containers a resolution starting at `root` visits; those external
/// links open are kept on `root`.
struct Links<'a> {
    root: &'a Container,
}

/// A container's location with its dot segments removed, to tell two
/// spellings of one place apart from two places.
fn normal_location(c: &Container) -> Option<String> {
    let parsed = c.inner.parsed.as_ref()?;
    Some(
        parsed
            .resolve_relative(".", false)
            .map_or_else(|_| parsed.display.clone(), |l| l.display),
    )
}

impl Space for Links<'_> {
    type C = Container;

    fn tree<'a>(&self, c: &'a Container) -> &'a dyn Tree {
        c.tree()
    }

    fn location(&self, c: &Container) -> String {
        c.location().to_string()
    }

    /// The container at the location `source` names relative to `from`:
    /// the root or `from` itself when the location is theirs, else one an
    /// earlier call opened, else the one opened now (read-only, with the
    /// root's options), kept on the root's handle. `Err(location)` when
    /// nothing is there: no directory or object, or (where the store
    /// cannot list) no root document.
    fn open(
        &self,
        from: &Container,
        source: &str,
        from_parent: bool,
    ) -> Result<std::result::Result<Container, String>> {
        let base = from.inner.parsed.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Unsupported,
                format!(
                    "'{}' was opened in a store, not at a location, so the container \
                     reference '{source}' has nothing to be relative to",
                    from.location()
                ),
            )
        })?;
        let location = base.resolve_relative(source, from_parent)?;
        let key = location.display.clone();
        for known in [self.root, from] {
            if normal_location(known).as_deref() == Some(&key) {
                return Ok(Ok(known.clone()));
            }
        }
        let linked = || {
            self.root
                .inner
                .linked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(c) = linked().get(&key) {
            return Ok(Ok(c.clone()));
        }
        let options = self.root.options().clone();
        let opened = match Container::open_parsed(location, Mode::Read, options, Some(self.root)) {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Err(key)),
            Err(e) => return Err(e),
        };
        if !opened.tree().root_present()? {
            return Ok(Err(key));
        }
        Ok(Ok(linked().entry(key).or_insert(opened).clone()))
    }
}

/// The [`Target`] of a resolution that found `found` after `hops` links.
fn target_of(found: &Found<Container>, hops: usize) -> Target {
    Target {
        location: found.container.location().to_string(),
        path: format!("/{}", found.path),
        node_type: NodeType::of(found.kind),
        hops,
    }
}

/// Check the name of a new link: not empty, `.` or `..`, no `/` or NUL.
fn check_link_name(name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(Error::invalid_argument(format!(
            "'{}' cannot name a link (a link name is not empty, '.' or '..' and holds no '/')",
            name.escape_default()
        )));
    }
    Ok(())
}

impl Container {
    /// Where the normalised path `p` leads: the node there, else (where
    /// links are followed) the node its links lead to, else where a node
    /// would go.
    pub(crate) fn locate(&self, p: &str) -> Result<Place<Container>> {
        let space = Links { root: self };
        links::resolve(&space, self, p, self.follows_links(), &mut Walk::new())
    }

    /// The group or dataset at `path`, links followed whatever the options
    /// say; [`ErrorKind::NotFound`] when there is none.
    fn resolve_found(&self, path: &str, walk: &mut Walk) -> Result<Found<Container>> {
        let p = path::normalize(path)?;
        match links::resolve(&Links { root: self }, self, &p, true, walk)? {
            Place::Found(found) => Ok(found),
            Place::Missing { .. } => Err(Error::new(
                ErrorKind::NotFound,
                format!("no group or dataset at '{}'", display(&p)),
            )),
        }
    }

    /// The links of the group at `path` (itself resolved through links), in
    /// stored order, each with the node it leads to (further links
    /// followed) or why it leads nowhere. `[]` for a group without links,
    /// for a dataset, and in formats without links (N5, HDF5). A malformed
    /// list is [`ErrorKind::InvalidMetadata`]; a missing group
    /// [`ErrorKind::NotFound`].
    pub fn links(&self, path: &str) -> Result<Vec<LinkEntry>> {
        let group = self.resolve_found(path, &mut Walk::new())?;
        let stored = links::links_of(group.container.tree(), &group.path)?;
        Ok(stored
            .into_iter()
            .map(|link| self.entry(&group, link))
            .collect())
    }

    /// The link that the last segment of `path` is, with where it leads;
    /// `None` when that segment is a node (a node wins over a link of its
    /// name) or nothing. The groups on the way are resolved through links.
    pub fn link(&self, path: &str) -> Result<Option<LinkEntry>> {
        let p = path::normalize(path)?;
        let Some((parent, name)) = p.rsplit_once('/').or((!p.is_empty()).then_some(("", &p)))
        else {
            return Ok(None);
        };
        let group = match self.resolve_found(parent, &mut Walk::new()) {
            Ok(found) if found.kind == NodeKind::Group => found,
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let tree = group.container.tree();
        if tree.kind(&path::join(&group.path, name))?.is_some() {
            return Ok(None);
        }
        let stored = links::links_of(tree, &group.path)?;
        Ok(stored
            .into_iter()
            .find(|l| l.name == name)
            .map(|link| self.entry(&group, link)))
    }

    /// `link`, held by `group`, with where it leads.
    fn entry(&self, group: &Found<Container>, link: Link) -> LinkEntry {
        let space = Links { root: self };
        let mut walk = Walk::new();
        let target = links::follow_link(&space, &group.container, &group.path, &link, &mut walk)
            .map(|found| target_of(&found, walk.hops()));
        let missing = target.is_err().then(|| walk.missing()).flatten();
        LinkEntry {
            link,
            target,
            missing,
        }
    }

    /// The node at `path`, following links in every segment whatever
    /// [`crate::Options::follow_links`] says: its container's location,
    /// its path, its type, and how many links were followed (0 for a
    /// plain node). [`ErrorKind::NotFound`], [`ErrorKind::DanglingLink`]
    /// or [`ErrorKind::LinkCycle`] when it leads nowhere. In formats
    /// without links, the node itself.
    pub fn resolve_link(&self, path: &str) -> Result<Target> {
        let mut walk = Walk::new();
        let found = self.resolve_found(path, &mut walk)?;
        Ok(target_of(&found, walk.hops()))
    }

    /// Add the link `name` to the group at `group` (resolved through
    /// links; it must be a group of this container), in the stored form of
    /// the container's format (Zarr v3 `_LINKS`, Zarr v2 `zarr_link`,
    /// appended to the list the group has), in one atomic update of its
    /// attributes. `source` is `"."` or a container reference relative to
    /// this container; `target` is the path in that container (a missing
    /// leading `/` is added). The target must exist
    /// ([`ErrorKind::DanglingLink`], nothing written); the entry names the
    /// final node (its container relative to this one, its own path), as
    /// hdmf-zarr writes links.
    ///
    /// Errors: [`ErrorKind::Unsupported`] in formats without links (N5,
    /// HDF5) and for a final node no relative reference reaches;
    /// [`ErrorKind::InvalidArgument`] for a name that is empty, `.`, `..`
    /// or holds `/`, and for a dataset at `group`;
    /// [`ErrorKind::AlreadyExists`] when `name` is a member or a link of
    /// the group; [`ErrorKind::ReadOnly`] on a read-only container and for
    /// a group behind an external link.
    pub fn create_link(&self, group: &str, name: &str, source: &str, target: &str) -> Result<()> {
        if !self.tree().has_links() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{} containers have no links (links are hdmf-zarr's, in Zarr v2 and v3)",
                    self.format().name()
                ),
            ));
        }
        self.check_writable()?;
        check_link_name(name)?;
        let target = format!("/{}", path::normalize(target)?);
        let here = self.resolve_found(group, &mut Walk::new())?;
        let shown = format!("/{}", here.path);
        if here.kind != NodeKind::Group {
            return Err(Error::invalid_argument(format!(
                "'{shown}' is a dataset; links are members of groups"
            )));
        }
        self.writable_through(&here.container, group)?;
        let tree = here.container.tree();
        let member = path::join(&here.path, name);
        let exists = tree.kind(&member)?.is_some()
            || links::links_of(tree, &here.path)?
                .iter()
                .any(|l| l.name == name);
        if exists {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("group '{shown}' already has a member named '{name}'"),
            ));
        }
        let asked = Link {
            name: name.to_string(),
            source: source.to_string(),
            path: target,
        };
        let space = Links { root: self };
        let found = links::follow_link(&space, self, &here.path, &asked, &mut Walk::new())?;
        let source = if found.container.same(self) {
            ".".to_string()
        } else {
            let (Some(from), Some(to)) = (&self.inner.parsed, &found.container.inner.parsed) else {
                return Err(Error::new(
                    ErrorKind::Internal,
                    "a linked container without a location",
                ));
            };
            from.relative_reference(to).ok_or_else(|| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "the target of link '{}' is in '{}', which no reference relative to \
                         '{}' reaches",
                        display(&member),
                        to.display,
                        from.display
                    ),
                )
            })?
        };
        let link = Link {
            name: name.to_string(),
            source,
            path: format!("/{}", found.path),
        };
        links::add_link(tree, &here.path, &link)
    }

    /// The node the object reference `reference`, held by the node at
    /// `owner` (resolved through links), names, in any form hdmf-zarr
    /// stores: `{"_REFERENCE": {"source", "path"}}`, `{"zarr_dtype":
    /// "object", "value": {...}}`, a path string (or the JSON text of an
    /// object with a `path`), or an object with `source` and `path`. Its
    /// `source` is relative to the container the owner is in; links in its
    /// path are followed. [`ErrorKind::InvalidArgument`] for a value that
    /// is no reference; [`ErrorKind::DanglingLink`] when the target or its
    /// container is missing; [`ErrorKind::NotFound`] for a missing owner.
    pub fn resolve_reference(&self, owner: &str, reference: &Value) -> Result<Target> {
        let (source, target) = links::reference_target(reference)?;
        let here = self.resolve_found(owner, &mut Walk::new())?;
        let what = format!(
            "the reference (source '{source}', path '{target}') held by '/{}'",
            here.path
        );
        let mut walk = Walk::new();
        let space = Links { root: self };
        let found = links::follow(&space, &here.container, &source, &target, &what, &mut walk)?;
        Ok(target_of(&found, walk.hops()))
    }
}
