//! `n5 ls` and `n5 tree`: the groups and datasets below a path, with each
//! dataset's data type, shape, block size and compression, as a table, a
//! tree, or JSON. Links of hdmf-zarr (NWB) containers show as
//! `name -> path` (same container) or `name -> source:path`, dangling ones
//! saying what is missing, and are never descended into. Listing needs a
//! store that lists (a directory, S3, GCS): over plain HTTP(S) only a
//! dataset's own entry can be shown.

use std::collections::HashMap;

use clap::Args;
use n5::format::Format;
use n5::links::{LinkEntry, Missing};
use n5::{Container, Mode};
use serde_json::{json, Map, Value};

use crate::cmd::common::{can_list_nodes, dataset_json, node, Node};
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::{join, Location};
use crate::output::{compression, dims, table, Out};
use crate::Global;

/// Arguments of `n5 ls`.
#[derive(Args, Debug)]
pub struct LsArgs {
    /// Container, group or dataset.
    pub path: String,
    /// List everything below, not only the children.
    #[arg(short, long)]
    pub recursive: bool,
    /// Print a JSON array of {path, type, dataType, dimensions, blockSize, compression,
    /// dtype, reference} (links: {name, type: "link", source, path, target, error}).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `n5 tree`.
#[derive(Args, Debug)]
pub struct TreeArgs {
    /// Container or group.
    pub path: String,
    /// Print the tree as nested JSON objects with "children".
    #[arg(long)]
    pub json: bool,
}

/// The links of the groups a listing meets, read once per group: which of
/// its members are links (rather than nodes of the same name).
struct Links<'a> {
    c: &'a Container,
    /// Per group path: its links by name.
    groups: HashMap<String, HashMap<String, LinkEntry>>,
}

impl<'a> Links<'a> {
    fn new(c: &'a Container) -> Links<'a> {
        Links {
            c,
            groups: HashMap::new(),
        }
    }

    /// The link that `name` in the group at `group` is, `None` for a node
    /// (a node wins over a link of its name) and in formats without links.
    fn get(&mut self, group: &str, name: &str) -> CliResult<Option<LinkEntry>> {
        if !matches!(self.c.format(), Format::Zarr2 | Format::Zarr3) {
            return Ok(None);
        }
        let c = self.c;
        let links = match self.groups.entry(group.to_string()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut by_name = HashMap::new();
                for entry in c.links(group).at(group)? {
                    by_name.entry(entry.link.name.clone()).or_insert(entry);
                }
                e.insert(by_name)
            }
        };
        if !links.contains_key(name) {
            return Ok(None);
        }
        let full = join(group, name);
        c.link(&full).at(&full)
    }
}

/// Where a link leads, as listings show it: its path, after `source:` for
/// another container.
fn link_target(e: &LinkEntry) -> String {
    if e.link.source == "." {
        e.link.path.clone()
    } else {
        format!("{}:{}", e.link.source, e.link.path)
    }
}

/// What follows a link's name in text listings: ` -> target`, and why it
/// leads nowhere when it does.
fn link_suffix(e: &LinkEntry) -> String {
    let note = match (&e.target, e.missing) {
        (Ok(_), _) => String::new(),
        (Err(_), Some(Missing::Container)) => "  (dangling: container missing)".into(),
        (Err(_), Some(Missing::Object)) => "  (dangling: no object at path)".into(),
        (Err(err), None) => format!("  (broken: {})", err.message()),
    };
    format!(" -> {}{note}", link_target(e))
}

/// A link as a JSON entry: `name`, `"type": "link"`, its `source` and
/// `path`, `target` (`{"location", "path", "kind"}` or null) and `error`
/// (null when it resolves), as `n5_links_list` gives them.
fn link_json(name: &str, e: &LinkEntry) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("type".into(), json!("link"));
    let listed = e.to_json();
    for key in ["source", "path", "target", "error", "status"] {
        match listed.get(key) {
            Some(v) => m.insert(key.into(), v.clone()),
            None if key == "error" => m.insert(key.into(), Value::Null),
            None => None,
        };
    }
    Value::Object(m)
}

/// Lines of a table whose rows are nodes (`name` and cells) or links (the
/// name only, its ` -> target` appended after the columns are aligned, so
/// that no link widens them).
fn table_with_links(rows: &[(Vec<String>, Option<String>)]) -> Vec<String> {
    let cells: Vec<Vec<String>> = rows.iter().map(|(r, _)| r.clone()).collect();
    table(&cells)
        .into_iter()
        .zip(rows)
        .map(|(line, (_, suffix))| match suffix {
            Some(s) => format!("{line}{s}"),
            None => line,
        })
        .collect()
}

/// Open the container of `loc` for reading and check that `loc` exists.
pub fn open_existing(loc: &Location, g: &Global) -> CliResult<Container> {
    let c = loc.open(Mode::Read, g.threads.max(1))?;
    if !c.exists(&loc.inner).at(&loc.arg)? {
        return Err(CliError::new(&loc.arg, "no such group or dataset"));
    }
    Ok(c)
}

/// The error for listing the group at `loc` on a store that cannot list.
pub fn cannot_list(loc: &Location) -> CliError {
    CliError::new(
        &loc.arg,
        "plain HTTP(S) cannot list groups; name a dataset (n5 info URL/DATASET, n5 cat ...), \
         or open S3 and Google Cloud Storage data through s3:// or gs://",
    )
}

/// The element type of the dataset at `path` as `n5_dataset_dtype_json`
/// describes it (`None` for other nodes, and when it cannot be read).
fn dtype_of(c: &Container, path: &str, n: &Node) -> Option<Value> {
    match n {
        Node::Dataset(_) => c.open_dataset(path).ok()?.dtype_json().ok(),
        _ => None,
    }
}

/// Whether a dataset's type description says that it holds object
/// references (every element, or fields of a struct).
pub fn is_reference(dtype: Option<&Value>) -> bool {
    dtype.is_some_and(|d| {
        d.get("reference") == Some(&json!(true)) || d.get("reference_fields").is_some()
    })
}

/// One listed entry as JSON: `path`, `type` and the dataset's metadata (or
/// its `error`), with a dataset's `dtype` (`n5_dataset_dtype_json`) and
/// `"reference": true` when it holds object references.
fn entry_json(path: &str, n: &Node, dtype: Option<&Value>) -> Value {
    let mut m = Map::new();
    m.insert("path".into(), json!(path));
    match n {
        Node::Group => {
            m.insert("type".into(), json!("group"));
        }
        Node::Dataset(a) => {
            m.insert("type".into(), json!("dataset"));
            m.extend(dataset_json(a));
            if let Some(d) = dtype {
                m.insert("dtype".into(), d.clone());
            }
            if is_reference(dtype) {
                m.insert("reference".into(), json!(true));
            }
        }
        Node::Unsupported(e) => {
            m.insert("type".into(), json!("unsupported"));
            m.insert("error".into(), json!(e));
        }
        Node::Broken(e) => {
            m.insert("type".into(), json!("unreadable"));
            m.insert("error".into(), json!(e));
        }
    }
    Value::Object(m)
}

/// The text cells describing a node after its name: a dataset's type
/// with its parameters (`fixed_utf32[512]`, `struct(...)`), followed by
/// `references` for datasets of object references.
fn cells(n: &Node, dtype: Option<&Value>) -> Vec<String> {
    match n {
        Node::Group => vec!["group".into()],
        Node::Dataset(a) => vec![
            if is_reference(dtype) {
                format!("{} references", a.data_type)
            } else {
                a.data_type.to_string()
            },
            dims(&a.dimensions),
            format!("block {}", dims(&a.block_size)),
            compression(&a.compression),
        ],
        // The reason last, so that it widens no column of the datasets.
        Node::Unsupported(e) => vec![
            "unsupported".into(),
            String::new(),
            String::new(),
            e.clone(),
        ],
        Node::Broken(e) => vec!["unreadable".into(), e.clone()],
    }
}

/// One listed member: a node with its type description, or a link.
type Listed = Result<(Node, Option<Value>), LinkEntry>;

/// `n5 ls [-r] PATH`.
pub fn ls(a: &LsArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = open_existing(&loc, g)?;
    let here = node(&c, &loc.inner);
    let mut links = Links::new(&c);
    let entries: Vec<(String, Listed)> = match here {
        Node::Group if !can_list_nodes(&c) => return Err(cannot_list(&loc)),
        Node::Group => {
            let names = if a.recursive {
                c.deep_list(&loc.inner).at(&loc.arg)?
            } else {
                c.list(&loc.inner).at(&loc.arg)?
            };
            let mut entries = Vec::with_capacity(names.len());
            for name in names {
                let full = join(&loc.inner, &name);
                let (parent, last) = full.rsplit_once('/').unwrap_or(("", &full));
                let entry = match links.get(parent, last)? {
                    Some(link) => Err(link),
                    None => {
                        let n = node(&c, &full);
                        let d = dtype_of(&c, &full, &n);
                        Ok((n, d))
                    }
                };
                entries.push((name, entry));
            }
            entries
        }
        other => {
            let name = loc.inner.rsplit('/').next().unwrap_or("").to_string();
            let d = dtype_of(&c, &loc.inner, &other);
            vec![(
                if name.is_empty() { ".".into() } else { name },
                Ok((other, d)),
            )]
        }
    };
    let mut out = Out::new();
    if a.json {
        let list: Vec<Value> = entries
            .iter()
            .map(|(p, n)| match n {
                Ok((n, d)) => entry_json(p, n, d.as_ref()),
                Err(link) => link_json(p, link),
            })
            .collect();
        out.json(&Value::Array(list))?;
    } else {
        let rows: Vec<(Vec<String>, Option<String>)> = entries
            .iter()
            .map(|(p, n)| match n {
                Ok((n, d)) => {
                    let mut row = vec![match n {
                        Node::Group => format!("{p}/"),
                        _ => p.clone(),
                    }];
                    row.extend(cells(n, d.as_ref()));
                    (row, None)
                }
                Err(link) => (vec![p.clone()], Some(link_suffix(link))),
            })
            .collect();
        for line in table_with_links(&rows) {
            out.line(&line)?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// The tree below `path` as nested JSON; links are leaves.
fn tree_json(links: &mut Links, path: &str, name: &str) -> CliResult<Value> {
    let c = links.c;
    let n = node(c, path);
    let mut v = entry_json(path, &n, dtype_of(c, path, &n).as_ref());
    v["name"] = json!(name);
    if matches!(n, Node::Group) {
        let mut children = Vec::new();
        for child in c.list(path).at(path)? {
            match links.get(path, &child)? {
                Some(link) => children.push(link_json(&child, &link)),
                None => children.push(tree_json(links, &join(path, &child), &child)?),
            }
        }
        v["children"] = Value::Array(children);
    }
    Ok(v)
}

/// The tree below `path` as text lines, each child drawn under `indent`;
/// links are leaves.
fn tree_lines(
    links: &mut Links,
    path: &str,
    indent: &str,
    rows: &mut Vec<(Vec<String>, Option<String>)>,
) -> CliResult<()> {
    let c = links.c;
    let children = c.list(path).at(path)?;
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let full = join(path, child);
        let branch = if last { "└── " } else { "├── " };
        let name = format!("{indent}{branch}{child}");
        if let Some(link) = links.get(path, child)? {
            rows.push((vec![name], Some(link_suffix(&link))));
            continue;
        }
        let n = node(c, &full);
        let mut row = vec![name];
        if !matches!(n, Node::Group) {
            row.extend(cells(&n, dtype_of(c, &full, &n).as_ref()));
        }
        rows.push((row, None));
        if matches!(n, Node::Group) {
            let next = format!("{indent}{}", if last { "    " } else { "│   " });
            tree_lines(links, &full, &next, rows)?;
        }
    }
    Ok(())
}

/// `n5 tree PATH`.
pub fn tree(a: &TreeArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = open_existing(&loc, g)?;
    let name = a.path.trim_end_matches('/').to_string();
    let mut out = Out::new();
    if a.json {
        if !can_list_nodes(&c) && matches!(node(&c, &loc.inner), Node::Group) {
            return Err(cannot_list(&loc));
        }
        let v = tree_json(&mut Links::new(&c), &loc.inner, &name)?;
        out.json(&v)?;
    } else {
        let n = node(&c, &loc.inner);
        match &n {
            Node::Group if !can_list_nodes(&c) => return Err(cannot_list(&loc)),
            Node::Group => {
                out.line(&name)?;
                let mut rows = Vec::new();
                tree_lines(&mut Links::new(&c), &loc.inner, "", &mut rows)?;
                for line in table_with_links(&rows) {
                    out.line(&line)?;
                }
            }
            n => {
                let d = dtype_of(&c, &loc.inner, n);
                out.line(&format!("{name}  {}", cells(n, d.as_ref()).join("  ")))?
            }
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}
