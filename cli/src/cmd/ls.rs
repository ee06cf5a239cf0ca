//! `n5 ls` and `n5 tree`: the groups and datasets below a path, with each
//! dataset's data type, shape, block size and compression, as a table, a
//! tree, or JSON. Listing needs a store that lists (a directory, S3, GCS):
//! over plain HTTP(S) only a dataset's own entry can be shown.

use clap::Args;
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
    /// Print a JSON array of {path, type, dataType, dimensions, blockSize, compression}.
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

/// One listed entry as JSON: `path`, `type` and the dataset's metadata (or
/// its `error`).
fn entry_json(path: &str, n: &Node) -> Value {
    let mut m = Map::new();
    m.insert("path".into(), json!(path));
    match n {
        Node::Group => {
            m.insert("type".into(), json!("group"));
        }
        Node::Dataset(a) => {
            m.insert("type".into(), json!("dataset"));
            m.extend(dataset_json(a));
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

/// The text cells describing a node after its name.
fn cells(n: &Node) -> Vec<String> {
    match n {
        Node::Group => vec!["group".into()],
        Node::Dataset(a) => vec![
            a.data_type.name().into(),
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

/// `n5 ls [-r] PATH`.
pub fn ls(a: &LsArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = open_existing(&loc, g)?;
    let here = node(&c, &loc.inner);
    let entries: Vec<(String, Node)> = match here {
        Node::Group if !can_list_nodes(&c) => return Err(cannot_list(&loc)),
        Node::Group => {
            let names = if a.recursive {
                c.deep_list(&loc.inner).at(&loc.arg)?
            } else {
                c.list(&loc.inner).at(&loc.arg)?
            };
            names
                .into_iter()
                .map(|name| {
                    let n = node(&c, &join(&loc.inner, &name));
                    (name, n)
                })
                .collect()
        }
        other => {
            let name = loc.inner.rsplit('/').next().unwrap_or("").to_string();
            vec![(if name.is_empty() { ".".into() } else { name }, other)]
        }
    };
    let mut out = Out::new();
    if a.json {
        let list: Vec<Value> = entries.iter().map(|(p, n)| entry_json(p, n)).collect();
        out.json(&Value::Array(list))?;
    } else {
        let rows: Vec<Vec<String>> = entries
            .iter()
            .map(|(p, n)| {
                let mut row = vec![match n {
                    Node::Group => format!("{p}/"),
                    _ => p.clone(),
                }];
                row.extend(cells(n));
                row
            })
            .collect();
        for line in table(&rows) {
            out.line(&line)?;
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// The tree below `path` as nested JSON.
fn tree_json(c: &Container, path: &str, name: &str) -> CliResult<Value> {
    let n = node(c, path);
    let mut v = entry_json(path, &n);
    v["name"] = json!(name);
    if matches!(n, Node::Group) {
        let mut children = Vec::new();
        for child in c.list(path).at(path)? {
            children.push(tree_json(c, &join(path, &child), &child)?);
        }
        v["children"] = Value::Array(children);
    }
    Ok(v)
}

/// The tree below `path` as text lines, each child drawn under `indent`.
fn tree_lines(
    c: &Container,
    path: &str,
    indent: &str,
    rows: &mut Vec<Vec<String>>,
) -> CliResult<()> {
    let children = c.list(path).at(path)?;
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let full = join(path, child);
        let n = node(c, &full);
        let branch = if last { "└── " } else { "├── " };
        let mut row = vec![format!("{indent}{branch}{child}")];
        if !matches!(n, Node::Group) {
            row.extend(cells(&n));
        }
        rows.push(row);
        if matches!(n, Node::Group) {
            let next = format!("{indent}{}", if last { "    " } else { "│   " });
            tree_lines(c, &full, &next, rows)?;
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
        let v = tree_json(&c, &loc.inner, &name)?;
        out.json(&v)?;
    } else {
        let n = node(&c, &loc.inner);
        match &n {
            Node::Group if !can_list_nodes(&c) => return Err(cannot_list(&loc)),
            Node::Group => {
                out.line(&name)?;
                let mut rows = Vec::new();
                tree_lines(&c, &loc.inner, "", &mut rows)?;
                for line in table(&rows) {
                    out.line(&line)?;
                }
            }
            n => out.line(&format!("{name}  {}", cells(n).join("  ")))?,
        }
    }
    out.flush()?;
    Ok(EXIT_OK)
}
