//! hdmf-zarr links and object references, as the format stores them, and
//! path resolution through links.
//!
//! A link is a member of a group that is another node, possibly in another
//! container. It is stored in the group's user attributes as a list of
//! `{"name", "source", "path"}` objects: `_LINKS` (the current convention,
//! Zarr v3, keys written source, path, name) or `zarr_link` (the legacy
//! one, Zarr v2, keys sorted); either key is read on either format. `source`
//! is `"."` (this container) or a container reference relative to the
//! linking container; `path` is absolute in the target container.
//!
//! Resolution ([`resolve`]): each segment of a path is the node of that
//! name, else the parent group's link of that name, followed to its target
//! (the target's own path resolved the same way), at most [`MAX_HOPS`]
//! links per call; a target met again while it is being resolved is a
//! cycle. Where a `source` leads and opening the container there is the
//! caller's ([`Space`]): this layer knows no location.
//!
//! Object references ([`reference_target`]) are read in every form
//! hdmf-zarr writes: the v3 attribute `{"_REFERENCE": {...}}`, the v2
//! attribute `{"zarr_dtype": "object", "value": {...}}`, a v3 element (a
//! path, or the JSON text of an object with a path), and an object with
//! `source` and `path` (a v2 element).

use serde_json::{Map, Value};

use super::node::NodeKind;
use super::tree::Tree;
use super::Format;
use crate::error::{Error, ErrorKind, Result};
use crate::path::{self, display};

/// The group attribute holding links in the current convention (Zarr v3).
pub(crate) const LINKS_V3: &str = "_LINKS";
/// The group attribute holding links in the legacy convention (Zarr v2).
pub(crate) const LINKS_V2: &str = "zarr_link";
/// The most links one resolution follows.
pub(crate) const MAX_HOPS: usize = 40;

/// A link as a group stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The member name the link has in its group.
    pub name: String,
    /// `"."` for the linking container itself, else a reference to another
    /// container relative to it (`"../other.nwb.zarr"`).
    pub source: String,
    /// The target's absolute path in the target container.
    pub path: String,
}

/// Which part of a dangling link's or reference's target is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// No container at the location `source` names.
    Container,
    /// The container is there; nothing is at `path` in it.
    Object,
}

/// How a path is shown in link messages: absolute.
fn absolute(p: &str) -> String {
    format!("/{p}")
}

/// The links stored in the user attributes `attributes` of the group at
/// `group`: `_LINKS` then `zarr_link`, each in stored order. A list that is
/// not a list of objects with string `name`, `source` and `path` is an
/// [`ErrorKind::InvalidMetadata`] error naming the group.
pub(crate) fn stored_links(attributes: &Value, group: &str) -> Result<Vec<Link>> {
    let mut out = Vec::new();
    for key in [LINKS_V3, LINKS_V2] {
        let Some(list) = attributes.get(key) else {
            continue;
        };
        let bad = |what: String| {
            Error::invalid_metadata(format!(
                "the links of group '{}' ({key}): {what}",
                display(group)
            ))
        };
        let entries = list
            .as_array()
            .ok_or_else(|| bad(format!("{list} is not a list")))?;
        for (i, entry) in entries.iter().enumerate() {
            let field = |name: &str| -> Result<String> {
                entry
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("entry {i} has no string '{name}': {entry}")))
            };
            out.push(Link {
                name: field("name")?,
                source: field("source")?,
                path: field("path")?,
            });
        }
    }
    Ok(out)
}

/// The links the group at `p` of `tree` holds (`[]` for an array, and in
/// formats without links).
pub(crate) fn links_of(tree: &dyn Tree, p: &str) -> Result<Vec<Link>> {
    if !tree.has_links() || tree.kind(p)? != Some(NodeKind::Group) {
        return Ok(Vec::new());
    }
    read_links(tree, p)
}

/// The links stored on the node at `p`, whatever it is.
fn read_links(tree: &dyn Tree, p: &str) -> Result<Vec<Link>> {
    match tree.read_attributes(p)? {
        Some(attributes) => stored_links(&attributes, p),
        None => Ok(Vec::new()),
    }
}

/// The stored entry of `link` in `format`'s convention: v3 keys in the
/// order source, path, name; v2 keys sorted.
fn entry(format: Format, link: &Link) -> Value {
    let mut m = Map::new();
    let fields = [
        ("source", &link.source),
        ("path", &link.path),
        ("name", &link.name),
    ];
    let order: [usize; 3] = if format == Format::Zarr3 {
        [0, 1, 2]
    } else {
        [2, 1, 0]
    };
    for i in order {
        m.insert(fields[i].0.into(), Value::from(fields[i].1.as_str()));
    }
    Value::Object(m)
}

/// Append `link` to the links of the group at `group` (the attribute of the
/// tree's format: `_LINKS` for Zarr v3, `zarr_link` for Zarr v2), in one
/// atomic update of its attributes; a link of that name already stored
/// (under either key) is [`ErrorKind::AlreadyExists`].
pub(crate) fn add_link(tree: &dyn Tree, group: &str, link: &Link) -> Result<()> {
    let format = tree.format();
    let key = if format == Format::Zarr3 {
        LINKS_V3
    } else {
        LINKS_V2
    };
    tree.update_attributes(group, &mut |doc| {
        if stored_links(doc, group)?
            .iter()
            .any(|l| l.name == link.name)
        {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!(
                    "group '{}' already has a link named '{}'",
                    display(group),
                    link.name
                ),
            ));
        }
        let map = super::node::as_object_mut(doc);
        let list = map.entry(key).or_insert_with(|| Value::Array(Vec::new()));
        match list.as_array_mut() {
            Some(items) => items.push(entry(format, link)),
            None => {
                return Err(Error::invalid_metadata(format!(
                    "the links of group '{}' ({key}) are not a list",
                    display(group)
                )))
            }
        }
        Ok(())
    })
}

/// Remove the link `name` from the group at `group` (under either key);
/// whether there was one. The target is left alone.
pub(crate) fn remove_link(tree: &dyn Tree, group: &str, name: &str) -> Result<bool> {
    let mut removed = false;
    tree.update_attributes(group, &mut |doc| {
        stored_links(doc, group)?;
        removed = false;
        let map = super::node::as_object_mut(doc);
        for key in [LINKS_V3, LINKS_V2] {
            if let Some(Value::Array(items)) = map.get_mut(key) {
                let before = items.len();
                items.retain(|e| e.get("name").and_then(Value::as_str) != Some(name));
                removed |= items.len() != before;
            }
        }
        Ok(())
    })?;
    Ok(removed)
}

/// The containers a resolution visits, as the caller has them: their
/// trees, their locations, and opening the one a `source` names.
pub(crate) trait Space {
    /// A container.
    type C: Clone;

    /// The hierarchy of `c`.
    fn tree<'a>(&self, c: &'a Self::C) -> &'a dyn Tree;

    /// Where `c` is, as results name it.
    fn location(&self, c: &Self::C) -> String;

    /// The container `source` names relative to `from` (with `from_parent`,
    /// relative to the directory holding `from` instead), or the location
    /// tried when no container is there.
    fn open(
        &self,
        from: &Self::C,
        source: &str,
        from_parent: bool,
    ) -> Result<std::result::Result<Self::C, String>>;
}

/// A node a path resolved to.
#[derive(Clone, Debug)]
pub(crate) struct Found<C> {
    /// The container it is in.
    pub container: C,
    /// Its normalised path there.
    pub path: String,
    /// What it is.
    pub kind: NodeKind,
    /// Whether the path's last segment was a link (not a node).
    pub link: bool,
}

/// Where a path resolved to.
#[derive(Clone, Debug)]
pub(crate) enum Place<C> {
    /// A node.
    Found(Found<C>),
    /// Nothing: the path `path` of `container` (the links on the way
    /// followed) is where a node would go.
    Missing {
        /// The container the path ends in.
        container: C,
        /// The path there.
        path: String,
    },
}

/// The state of one resolution: links followed, the targets being
/// resolved (to find cycles), and what was missing when a link dangled.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    hops: usize,
    stack: Vec<(String, String)>,
    met: Vec<String>,
    missing: Option<Missing>,
}

impl Walk {
    /// A resolution that has followed nothing yet.
    pub(crate) fn new() -> Walk {
        Walk::default()
    }

    /// How many links were followed.
    pub(crate) fn hops(&self) -> usize {
        self.hops
    }

    /// What was missing when a link or reference dangled.
    pub(crate) fn missing(&self) -> Option<Missing> {
        self.missing
    }

    /// The links met, for messages.
    fn met(&self) -> String {
        self.met.join(", then ")
    }
}

/// Resolve the normalised path `p` of `c`: the node there, else (with
/// `follow`, in a format with links) the node reached through links, else
/// where a node would go. A link whose target is missing is
/// [`ErrorKind::DanglingLink`]; a cycle or more than [`MAX_HOPS`] links is
/// [`ErrorKind::LinkCycle`].
pub(crate) fn resolve<S: Space>(
    space: &S,
    c: &S::C,
    p: &str,
    follow: bool,
    walk: &mut Walk,
) -> Result<Place<S::C>> {
    let (mut c, mut p) = (c.clone(), p.to_string());
    // Every turn after the first follows at least one link, and a walk
    // follows at most MAX_HOPS.
    for _ in 0..=MAX_HOPS + 1 {
        let tree = space.tree(&c);
        if let Some(kind) = tree.kind(&p)? {
            return Ok(Place::Found(Found {
                container: c,
                path: p,
                kind,
                link: false,
            }));
        }
        if !follow || !tree.has_links() {
            return Ok(Place::Missing {
                container: c,
                path: p,
            });
        }
        // The deepest group above `p` (the root always is one); the
        // segment below it is no node, so it may be a link.
        let segments: Vec<&str> = p.split('/').collect();
        let mut anchor = None;
        for i in (0..segments.len()).rev() {
            let prefix = segments[..i].join("/");
            match tree.kind(&prefix)? {
                Some(NodeKind::Group) => {
                    anchor = Some((prefix, i));
                    break;
                }
                Some(NodeKind::Array) => {
                    return Ok(Place::Missing {
                        container: c,
                        path: p,
                    })
                }
                None => {}
            }
        }
        let Some((group, i)) = anchor else {
            return Ok(Place::Missing {
                container: c,
                path: p,
            });
        };
        let links = read_links(tree, &group)?;
        let Some(link) = links.iter().find(|l| l.name == segments[i]) else {
            return Ok(Place::Missing {
                container: c,
                path: p,
            });
        };
        let target = follow_link(space, &c, &group, link, walk)?;
        let rest = segments[i + 1..].join("/");
        if rest.is_empty() {
            return Ok(Place::Found(Found {
                link: true,
                ..target
            }));
        }
        c = target.container;
        p = path::join(&target.path, &rest);
    }
    Err(Error::new(
        ErrorKind::LinkCycle,
        format!("more than {MAX_HOPS} links in one path: {}", walk.met()),
    ))
}

/// How a link is named in messages.
fn describe(group: &str, link: &Link) -> String {
    format!(
        "link '{}' (source '{}', path '{}')",
        absolute(&path::join(group, &link.name)),
        link.source,
        link.path
    )
}

/// Follow `link`, held by the group `group` of `c`, to the node it names
/// (further links followed).
pub(crate) fn follow_link<S: Space>(
    space: &S,
    c: &S::C,
    group: &str,
    link: &Link,
    walk: &mut Walk,
) -> Result<Found<S::C>> {
    let what = describe(group, link);
    walk.met.push(what.clone());
    walk.hops += 1;
    if walk.hops > MAX_HOPS {
        return Err(Error::new(
            ErrorKind::LinkCycle,
            format!(
                "more than {MAX_HOPS} links followed in one call: {}",
                walk.met()
            ),
        ));
    }
    follow(space, c, &link.source, &link.path, &what, walk)
}

/// The node that `source` and `path` name from `c` (a link's or a
/// reference's target, `what` in messages), links on the way followed.
pub(crate) fn follow<S: Space>(
    space: &S,
    c: &S::C,
    source: &str,
    target: &str,
    what: &str,
    walk: &mut Walk,
) -> Result<Found<S::C>> {
    let p = path::normalize(target).map_err(|e| {
        Error::new(
            e.kind(),
            format!("{what}: the path is not valid: {}", e.message()),
        )
    })?;
    let container = if source == "." {
        c.clone()
    } else {
        match open_source(space, c, source).map_err(|e| e.context(what))? {
            Ok(container) => container,
            Err(location) => {
                walk.missing = Some(Missing::Container);
                return Err(Error::new(
                    ErrorKind::DanglingLink,
                    format!("{what}: the container is missing (nothing at '{location}')"),
                ));
            }
        }
    };
    let key = (space.location(&container), p.clone());
    if walk.stack.contains(&key) {
        return Err(Error::new(
            ErrorKind::LinkCycle,
            format!("a link cycle: {}", walk.met()),
        ));
    }
    walk.stack.push(key);
    let place = resolve(space, &container, &p, true, walk);
    walk.stack.pop();
    match place? {
        Place::Found(found) => Ok(found),
        Place::Missing { .. } => {
            walk.missing = Some(Missing::Object);
            Err(Error::new(
                ErrorKind::DanglingLink,
                format!(
                    "{what}: no object at path '{}' in '{}'",
                    absolute(&p),
                    space.location(&container)
                ),
            ))
        }
    }
}

/// The container `source` names from `c`: relative to `c` itself, else
/// (when nothing is there) relative to the directory holding `c`, the form
/// hdmf-zarr 0.10.0 wrote; the first location tried when neither has one.
fn open_source<S: Space>(
    space: &S,
    c: &S::C,
    source: &str,
) -> Result<std::result::Result<S::C, String>> {
    let first = match space.open(c, source, false)? {
        Ok(container) => return Ok(Ok(container)),
        Err(location) => location,
    };
    match space.open(c, source, true) {
        Ok(Ok(container)) => Ok(Ok(container)),
        Ok(Err(_)) => Ok(Err(first)),
        // The parent-relative form climbing above a root is no container.
        Err(e) if e.kind() == ErrorKind::InvalidArgument => Ok(Err(first)),
        Err(e) => Err(e),
    }
}

/// The `(source, path)` an object reference names, in any stored form:
/// `{"_REFERENCE": {"source", "path"}}` (v3 attribute), `{"zarr_dtype":
/// "object", "value": {...}}` (v2 attribute), an object with `source` and
/// `path` (a v2 element, or a normalised one), or a string (a v3 element:
/// an absolute path in this container, or the JSON text of an object with a
/// `path`). `source` defaults to `"."`. Anything else is
/// [`ErrorKind::InvalidArgument`].
pub(crate) fn reference_target(value: &Value) -> Result<(String, String)> {
    let not = || {
        let text = value.to_string();
        let shown: String = text.chars().take(200).collect();
        Error::invalid_argument(format!("{shown} is not an object reference"))
    };
    let object = match value {
        Value::String(s) => {
            if let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                if inner.get("path").is_some() {
                    return reference_target(&inner);
                }
            }
            if s.is_empty() {
                return Err(Error::invalid_argument(
                    "an empty string is no object reference (it is the fill value: none)",
                ));
            }
            return Ok((".".to_string(), s.clone()));
        }
        Value::Object(map) => map,
        _ => return Err(not()),
    };
    if let Some(inner) = object.get("_REFERENCE") {
        return match inner {
            Value::Object(_) => reference_target(inner).map_err(|_| not()),
            _ => Err(not()),
        };
    }
    if object.get("zarr_dtype").and_then(Value::as_str) == Some("object") {
        if let Some(inner) = object.get("value") {
            return match inner {
                Value::Object(_) => reference_target(inner).map_err(|_| not()),
                _ => Err(not()),
            };
        }
    }
    let path = object
        .get("path")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .ok_or_else(not)?;
    let source = match object.get("source") {
        None => ".",
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(_) => return Err(not()),
    };
    Ok((source.to_string(), path.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_stored_forms_read_on_either_key_and_bad_lists_are_named() {
        let attrs = json!({
            "_LINKS": [{"source": ".", "path": "/a/b", "name": "x", "extra": 1}],
            "zarr_link": [{"name": "y", "path": "/c", "source": "../o.zarr"}],
            "other": 1
        });
        let links = stored_links(&attrs, "g").unwrap();
        assert_eq!(
            links,
            [
                Link {
                    name: "x".into(),
                    source: ".".into(),
                    path: "/a/b".into()
                },
                Link {
                    name: "y".into(),
                    source: "../o.zarr".into(),
                    path: "/c".into()
                }
            ]
        );
        assert!(stored_links(&json!({}), "g").unwrap().is_empty());
        for bad in [
            json!({"_LINKS": {"name": "x"}}),
            json!({"_LINKS": [1]}),
            json!({"zarr_link": [{"name": "x", "source": "."}]}),
            json!({"zarr_link": [{"name": 3, "source": ".", "path": "/a"}]}),
        ] {
            let e = stored_links(&bad, "grp/sub").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{bad}");
            assert!(e.message().contains("grp/sub"), "{e}");
        }
        let link = Link {
            name: "n".into(),
            source: ".".into(),
            path: "/p".into(),
        };
        assert_eq!(
            entry(Format::Zarr3, &link).to_string(),
            r#"{"source":".","path":"/p","name":"n"}"#
        );
        assert_eq!(
            entry(Format::Zarr2, &link).to_string(),
            r#"{"name":"n","path":"/p","source":"."}"#
        );
    }

    #[test]
    fn every_reference_form() {
        let want = |s: &str, p: &str| Ok((s.to_string(), p.to_string()));
        for (value, expected) in [
            (
                json!({"_REFERENCE": {"source": ".", "path": "/a/b"}}),
                want(".", "/a/b"),
            ),
            (
                json!({"zarr_dtype": "object", "value": {"object_id": "x", "path": "/t",
                       "source": "../o.zarr", "source_object_id": null}}),
                want("../o.zarr", "/t"),
            ),
            (json!("/acquisition/ts_a"), want(".", "/acquisition/ts_a")),
            (
                json!(r#"{"source": "../x.zarr", "path": "/p"}"#),
                want("../x.zarr", "/p"),
            ),
            (json!({"source": ".", "path": "/q"}), want(".", "/q")),
            (json!({"path": "/q"}), want(".", "/q")),
        ] {
            assert_eq!(reference_target(&value), expected, "{value}");
        }
        for bad in [
            json!(""),
            json!(null),
            json!(3),
            json!([]),
            json!({"name": "x"}),
            json!({"path": 1}),
            json!({"path": "/a", "source": 2}),
            json!({"_REFERENCE": "x"}),
            json!({"zarr_dtype": "object", "value": 5}),
        ] {
            let e = reference_target(&bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
    }
}
