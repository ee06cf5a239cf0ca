//! `n5 info`: a dataset's metadata, block grid, blocks stored and expected,
//! bytes stored and compression ratio, how its edge blocks are stored
//! (truncated or padded), its user attributes, and with `--stats` the
//! minimum, maximum and mean of its elements, read in parallel. Where the
//! store cannot list (plain HTTP(S)), the block statistics are left out
//! with a note, unless `--stats` reads every grid position anyway.
//!
//! A Zarr array is described in its format's terms: format, shape and chunk
//! (inner chunk) shape in N5 order and in the format's own C order, shard
//! shape, data type, codec chain or compressor, fill value, dimension
//! names, chunk key encoding, the native metadata document (`--json`),
//! and chunks and shards stored; a Zarr group by its document, children
//! and attributes. An HDF5 dataset is described as HDF5 states it (shape,
//! maximum shape, layout, chunks, filters, fill value, C order beside N5
//! order) with its allocated chunks and the bytes they take; an HDF5
//! group by its children and attributes.

use clap::Args;
use n5::{BlockMode, Container, DataType, Dataset, Mode};
use serde_json::{json, Value};

use crate::cmd::common::{
    blocks_of, blocks_to_visit, can_list, count_json, count_text, dataset_json, grid_count, node,
    open_dataset, read_shard_slabs, read_slabs, shard_grid, stored_blocks, stored_shards,
    stored_size, user_attributes, workers, Blocks, Node, Shard,
};
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::{join, Location};
use crate::output::{compression, count as count_of, dims, progress, size, Out};
use crate::{work, zarr, Global};

/// What info says when the store cannot list and `--stats` was not given.
const NO_LISTING: &str = "plain HTTP(S) cannot list: block statistics need a listable store \
     (s3://, gs://, a local path), or --stats, which reads every grid position";

/// Arguments of `n5 info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The dataset (CONTAINER/PATH/TO/DATASET), or a Zarr group.
    pub path: String,
    /// Also read every stored block and report min, max and mean (missing
    /// blocks count as zeros, NaNs are counted apart).
    #[arg(long)]
    pub stats: bool,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// How one stored edge block is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Edge {
    /// Not an edge block, or not a mode-0 block.
    Inner,
    /// Header size = the remaining extent (Java, z5py, rust-n5, libn5).
    Truncated,
    /// Header size = the full blockSize (tensorstore, zarr).
    Padded,
    /// Any other size.
    Other,
}

/// Running statistics of elements.
#[derive(Clone, Copy, Debug)]
struct Stats {
    count: u64,
    nan: u64,
    sum: f64,
    min_i: i128,
    max_i: i128,
    min_f: f64,
    max_f: f64,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            count: 0,
            nan: 0,
            sum: 0.0,
            min_i: i128::MAX,
            max_i: i128::MIN,
            min_f: f64::INFINITY,
            max_f: f64::NEG_INFINITY,
        }
    }

    fn merge(&mut self, o: &Stats) {
        self.count += o.count;
        self.nan += o.nan;
        self.sum += o.sum;
        self.min_i = self.min_i.min(o.min_i);
        self.max_i = self.max_i.max(o.max_i);
        self.min_f = self.min_f.min(o.min_f);
        self.max_f = self.max_f.max(o.max_f);
    }

    /// `n` zeros (elements of blocks that are not stored).
    fn zeros(n: u64) -> Stats {
        let mut s = Stats::new();
        if n > 0 {
            s.count = n;
            s.min_i = 0;
            s.max_i = 0;
            s.min_f = 0.0;
            s.max_f = 0.0;
        }
        s
    }

    /// `n` elements of the value `one` (native order; the fill value of
    /// chunks that are not stored).
    fn repeated(t: DataType, one: &[u8], n: u64) -> Stats {
        let mut s = Stats::of(t, one);
        if n == 0 {
            return Stats::new();
        }
        s.count *= n;
        s.nan *= n;
        s.sum *= n as f64;
        s
    }

    /// The statistics of the native-order elements of `t` in `data`.
    fn of(t: DataType, data: &[u8]) -> Stats {
        let mut s = Stats::new();
        macro_rules! ints {
            ($ty:ty) => {{
                let mut sum: i128 = 0;
                for c in data.chunks_exact(std::mem::size_of::<$ty>()) {
                    let mut b = [0u8; std::mem::size_of::<$ty>()];
                    b.copy_from_slice(c);
                    let v = <$ty>::from_ne_bytes(b) as i128;
                    s.min_i = s.min_i.min(v);
                    s.max_i = s.max_i.max(v);
                    sum += v;
                    s.count += 1;
                }
                s.sum = sum as f64;
            }};
        }
        macro_rules! floats {
            ($ty:ty) => {{
                for c in data.chunks_exact(std::mem::size_of::<$ty>()) {
                    let mut b = [0u8; std::mem::size_of::<$ty>()];
                    b.copy_from_slice(c);
                    let v = <$ty>::from_ne_bytes(b) as f64;
                    s.count += 1;
                    if v.is_nan() {
                        s.nan += 1;
                        continue;
                    }
                    s.min_f = s.min_f.min(v);
                    s.max_f = s.max_f.max(v);
                    s.sum += v;
                }
            }};
        }
        match t {
            DataType::U8 => ints!(u8),
            DataType::U16 => ints!(u16),
            DataType::U32 => ints!(u32),
            DataType::U64 => ints!(u64),
            DataType::I8 => ints!(i8),
            DataType::I16 => ints!(i16),
            DataType::I32 => ints!(i32),
            DataType::I64 => ints!(i64),
            DataType::F32 => floats!(f32),
            DataType::F64 => floats!(f64),
            // Statistics are of the numeric types (checked before).
            _ => {}
        }
        s
    }

    fn to_json(self, t: DataType) -> Value {
        let float = matches!(t, DataType::F32 | DataType::F64);
        let number = |f: f64| {
            if f.is_finite() {
                json!(f)
            } else {
                json!(f.to_string())
            }
        };
        let int = |i: i128| match (i64::try_from(i), u64::try_from(i)) {
            (Ok(v), _) => json!(v),
            (_, Ok(v)) => json!(v),
            _ => json!(i.to_string()),
        };
        let values = self.count - self.nan;
        let (min, max) = if values == 0 {
            (Value::Null, Value::Null)
        } else if float {
            (number(self.min_f), number(self.max_f))
        } else {
            (int(self.min_i), int(self.max_i))
        };
        let mean = if values == 0 {
            Value::Null
        } else {
            number(self.sum / values as f64)
        };
        let mut v = json!({"min": min, "max": max, "mean": mean, "count": self.count});
        if float {
            v["nan"] = json!(self.nan);
        }
        v
    }
}

/// What info learns from one stored block inside the grid.
struct BlockInfo {
    file_bytes: u64,
    nominal_bytes: u64,
    nominal_elements: u64,
    edge: Edge,
    stats: Option<Stats>,
}

/// What info learns from the block at `pos` of `ds`, `None` when it is not
/// stored (probing a store that cannot list).
fn block_info(
    loc: &Location,
    ds: &Dataset,
    pos: &[u64],
    with_stats: bool,
) -> CliResult<Option<BlockInfo>> {
    let attrs = ds.attributes();
    let file = || loc.describe(ds.container().store(), &ds.block_key(pos));
    let Some(file_bytes) = stored_size(ds, pos).at(file())? else {
        return Ok(None);
    };
    let shape = ds.block_shape(pos).at(file())?;
    let nominal_elements: u64 = shape.iter().product();
    let full = shape
        .iter()
        .zip(&attrs.block_size)
        .all(|(&s, &b)| s == b as u64);
    let edge = if full {
        Edge::Inner
    } else {
        match ds.block_header(pos).at(file())? {
            Some(h) if h.mode != BlockMode::Object => {
                if h.size.iter().zip(&shape).all(|(&s, &n)| s as u64 == n) {
                    Edge::Truncated
                } else if h.size == attrs.block_size {
                    Edge::Padded
                } else {
                    Edge::Other
                }
            }
            _ => Edge::Inner,
        }
    };
    let stats = if with_stats {
        let mut buf = vec![0u8; nominal_elements as usize * attrs.data_type.size()];
        ds.read_block_into(pos, &mut buf).at(file())?;
        Some(Stats::of(attrs.data_type.clone(), &buf))
    } else {
        None
    };
    Ok(Some(BlockInfo {
        file_bytes,
        nominal_bytes: nominal_elements * attrs.data_type.size() as u64,
        nominal_elements,
        edge,
        stats,
    }))
}

/// `n5 info PATH/DATASET`.
pub fn info(a: &InfoArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = loc.open(Mode::Read, 1)?;
    let threads = workers(g, &c);
    let hdf5 = c.format() == n5::format::Format::Hdf5;
    if c.format() != n5::format::Format::N5
        && matches!(node(&c, &loc.inner), Node::Group)
        && c.exists(&loc.inner).at(&loc.arg)?
    {
        if hdf5 {
            return hdf5_group_info(a, &loc, &c);
        }
        return zarr_group_info(a, &loc, &c);
    }
    let ds = open_dataset(&c, &loc)?;
    if a.stats && !ds.data_type().is_numeric() {
        return Err(CliError::usage(
            &loc.arg,
            format!(
                "--stats needs one of the ten numeric types, not {} (n5 cat shows the elements)",
                ds.data_type()
            ),
        ));
    }
    if hdf5 {
        return hdf5_info(a, &loc, &ds);
    }
    if c.format() != n5::format::Format::N5 {
        return zarr_info(a, g, &loc, &ds);
    }
    let attrs = ds.attributes();
    let types = TypeInfo::of(&ds, &loc.arg)?;
    let doc = c.attributes(&loc.inner).at(&loc.arg)?;
    let grid = attrs.grid_shape();
    let expected_json = count_json(grid_count(&grid));
    let expected = count_text(grid_count(&grid));
    // Without a listing and without --stats, there is nothing to visit.
    let visit = if can_list(&c) || a.stats {
        Some(blocks_to_visit(&ds, &loc.arg)?)
    } else {
        None
    };
    let listed = visit.is_some();
    let (visit, outside, probed) = match visit {
        Some(Blocks::Listed(inside, outside)) => (inside, Some(outside), false),
        Some(Blocks::Probe(all)) => (all, None, true),
        None => (Vec::new(), None, false),
    };
    let bar = progress(visit.len() as u64, "info", g.quiet || !(a.stats || probed));
    let infos: Vec<BlockInfo> = work::map(&visit, threads, |pos| {
        let r = block_info(&loc, &ds, pos, a.stats);
        bar.inc(1);
        r
    })?
    .into_iter()
    .flatten()
    .collect();
    bar.finish_and_clear();
    let outside_sizes = work::map(outside.as_deref().unwrap_or(&[]), threads, |p| {
        Ok::<_, CliError>(stored_size(&ds, p).ok().flatten().unwrap_or(0))
    })?;
    let outside_bytes: u64 = outside_sizes.iter().sum();
    let outside_count = outside.as_ref().map(Vec::len);
    let stored_count = infos.len();
    let stored_bytes: u64 = infos.iter().map(|i| i.file_bytes).sum::<u64>();
    let logical: u64 = infos.iter().map(|i| i.nominal_bytes).sum();
    // Strings and objects have no fixed element count per block: no ratio.
    let numeric = attrs.data_type.is_numeric();
    let ratio = (numeric && stored_bytes > 0).then(|| logical as f64 / stored_bytes as f64);
    let count = |e: Edge| infos.iter().filter(|i| i.edge == e).count();
    let (truncated, padded, other) = (
        count(Edge::Truncated),
        count(Edge::Padded),
        count(Edge::Other),
    );
    let has_edges = attrs
        .dimensions
        .iter()
        .zip(&attrs.block_size)
        .any(|(&d, &b)| d % b as u64 != 0);
    let edge_style = match (has_edges, truncated, padded, other) {
        (false, ..) => "none (dimensions are multiples of blockSize)",
        (true, 0, 0, 0) => "unknown (no edge block stored)",
        (true, _, 0, 0) => "truncated",
        (true, 0, _, 0) => "padded",
        _ => "mixed",
    };
    let stats = a.stats.then(|| {
        let mut s = Stats::new();
        for i in &infos {
            if let Some(b) = &i.stats {
                s.merge(b);
            }
        }
        let total = grid_count(&attrs.dimensions).unwrap_or(u64::MAX);
        let covered: u64 = infos.iter().map(|i| i.nominal_elements).sum();
        s.merge(&Stats::zeros(total.saturating_sub(covered)));
        s.to_json(attrs.data_type.clone())
    });
    let user = user_attributes(&doc);

    let mut out = Out::new();
    if a.json {
        let mut v = json!({
            "path": loc.inner,
            "container": loc.root,
        });
        for (k, val) in dataset_json(&attrs) {
            v[k] = val;
        }
        types.add_json(&mut v);
        v["gridShape"] = json!(grid);
        if listed {
            v["blocks"] = json!({"expected": expected_json, "stored": stored_count, "outsideGrid": outside_count});
            v["bytesStored"] = json!(stored_bytes + outside_bytes);
            v["bytesUncompressed"] = json!(numeric.then_some(logical));
            v["compressionRatio"] = json!(ratio);
            v["edgeBlocks"] = json!(edge_style);
            v["edgeBlockCounts"] =
                json!({"truncated": truncated, "padded": padded, "other": other});
        } else {
            v["blocks"] = json!({"expected": expected_json, "stored": null, "outsideGrid": null});
            for k in [
                "bytesStored",
                "bytesUncompressed",
                "compressionRatio",
                "edgeBlocks",
                "edgeBlockCounts",
            ] {
                v[k] = Value::Null;
            }
            v["note"] = json!(NO_LISTING);
        }
        if probed {
            v["note"] = json!("plain HTTP(S) cannot list: every grid position was probed; blocks outside the grid are not known");
        }
        v["attributes"] = Value::Object(user);
        if let Some(s) = stats {
            v["stats"] = s;
        }
        out.json(&v)?;
    } else {
        let mut rows: Vec<(String, String)> = vec![
            (
                "dataset".into(),
                format!("{} in {}", n5_display(&loc.inner), loc.root),
            ),
            ("dataType".into(), attrs.data_type.to_string()),
            ("dimensions".into(), dims(&attrs.dimensions)),
            ("blockSize".into(), dims(&attrs.block_size)),
            ("compression".into(), compression(&attrs.compression)),
            (
                "grid".into(),
                format!("{} ({expected} blocks)", dims(&grid)),
            ),
        ];
        rows.splice(2..2, types.rows());
        if !listed {
            rows.push(("blocks".into(), format!("not known: {NO_LISTING}")));
        } else {
            rows.push((
                "blocks".into(),
                format!(
                    "{stored_count} of {expected} stored{}",
                    match outside_count {
                        Some(0) => String::new(),
                        Some(n) => format!(", and {n} outside the grid"),
                        None => " (probed: plain HTTP(S) cannot list)".into(),
                    }
                ),
            ));
            rows.push((
                "stored".into(),
                match ratio {
                    Some(r) => format!(
                        "{} ({} uncompressed, ratio {r:.2})",
                        size(stored_bytes + outside_bytes),
                        size(logical)
                    ),
                    None => size(stored_bytes + outside_bytes),
                },
            ));
            rows.push((
                "edge blocks".into(),
                if truncated + padded + other > 0 {
                    format!("{edge_style} ({truncated} truncated, {padded} padded, {other} other)")
                } else {
                    edge_style.to_string()
                },
            ));
        }
        if !user.is_empty() {
            rows.push((
                "attributes".into(),
                n5::jsontext::to_string(&Value::Object(user)).unwrap_or_default(),
            ));
        }
        print_rows(&mut out, rows, stats.as_ref())?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// What info says about the element type of `ds`: `n5_dataset_dtype_json`
/// (`dtype`), the element size (0: variable), the fill value as the
/// element's JSON (`n5_region_read_json`'s form; a string's text; for
/// variable-length bytes, what the metadata stores), and which parts hold
/// object references.
struct TypeInfo {
    dtype: Value,
    size: usize,
    fill: Value,
    reference: bool,
    reference_fields: Vec<String>,
}

impl TypeInfo {
    fn of(ds: &Dataset, arg: &str) -> CliResult<TypeInfo> {
        let t = ds.data_type();
        let dtype = ds.dtype_json().at(arg)?;
        let fill = ds.fill_value();
        let fill = match &t {
            DataType::String => json!(String::from_utf8_lossy(&fill)),
            t if t.has_layout() => t.element_json(&fill).unwrap_or(Value::Null),
            _ => ds
                .metadata()
                .ok()
                .and_then(|d| d.get("fill_value").cloned())
                .unwrap_or(Value::Null),
        };
        let reference_fields: Vec<String> = dtype
            .get("reference_fields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        Ok(TypeInfo {
            reference: dtype.get("reference") == Some(&json!(true)),
            size: ds.element_size(),
            dtype,
            fill,
            reference_fields,
        })
    }

    /// The members `--json` adds: `dtype`, `elementSize`, `fillValue`,
    /// `reference`, and `referenceFields` for structs with reference fields.
    fn add_json(&self, v: &mut Value) {
        v["dtype"] = self.dtype.clone();
        v["elementSize"] = json!(self.size);
        v["fillValue"] = self.fill.clone();
        v["reference"] = json!(self.reference || !self.reference_fields.is_empty());
        if !self.reference_fields.is_empty() {
            v["referenceFields"] = json!(self.reference_fields);
        }
    }

    /// The text rows: element size and references (after the data type).
    fn rows(&self) -> Vec<(String, String)> {
        let mut rows = vec![(
            "element size".into(),
            match self.size {
                0 => "variable (no binary layout: read as strings, bytes or JSON)".into(),
                n => format!("{n} bytes"),
            },
        )];
        if self.reference {
            rows.push((
                "references".into(),
                "every element is an object reference (n5 cat shows them normalised)".into(),
            ));
        } else if !self.reference_fields.is_empty() {
            rows.push((
                "references".into(),
                format!(
                    "the fields {} are object references",
                    self.reference_fields.join(", ")
                ),
            ));
        }
        rows
    }
}

fn n5_display(p: &str) -> &str {
    if p.is_empty() {
        "/"
    } else {
        p
    }
}

/// `n5 info` of a Zarr group: its format, its own document (zarr.json or
/// .zgroup; none for an implicit group), its children and its user
/// attributes.
fn zarr_group_info(a: &InfoArgs, loc: &Location, c: &Container) -> CliResult<u8> {
    let format = c.format();
    let name = if format == n5::format::Format::Zarr3 {
        "zarr.json"
    } else {
        ".zgroup"
    };
    let key = join(&loc.inner, name);
    let document: Value = match c.store().get(&key).at(&loc.arg)? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| CliError::new(loc.describe(c.store(), &key), e))?,
        None => Value::Null,
    };
    let attributes = c.attributes(&loc.inner).at(&loc.arg)?;
    let links = c.links(&loc.inner).at(&loc.arg)?;
    let children = if crate::cmd::common::can_list_nodes(c) {
        let (mut groups, mut arrays) = (0usize, 0usize);
        for child in c.list(&loc.inner).at(&loc.arg)? {
            match node(c, &join(&loc.inner, &child)) {
                Node::Dataset(_) => arrays += 1,
                _ => groups += 1,
            }
        }
        Some((groups, arrays))
    } else {
        None
    };
    let mut out = Out::new();
    if a.json {
        out.json(&json!({
            "path": loc.inner,
            "container": loc.root,
            "format": format.name(),
            "nodeType": "group",
            "metadata": document,
            "children": children.map(|(g, a)| json!({"groups": g, "arrays": a})),
            "links": links.iter().map(|l| l.to_json()).collect::<Vec<Value>>(),
            "attributes": attributes,
        }))?;
        out.flush()?;
        return Ok(EXIT_OK);
    }
    let mut rows: Vec<(String, String)> = vec![
        (
            "group".into(),
            format!("{} in {}", n5_display(&loc.inner), loc.root),
        ),
        ("format".into(), format.name().into()),
        (
            "document".into(),
            if document.is_null() {
                format!("none (an implicit group: no {name})")
            } else {
                name.to_string()
            },
        ),
        (
            "children".into(),
            match children {
                Some((g, a)) => format!("{}, {}", count_of(g, "group"), count_of(a, "array")),
                None => "not known (plain HTTP(S) cannot list)".into(),
            },
        ),
    ];
    if !links.is_empty() {
        rows.push(("links".into(), count_of(links.len(), "link")));
    }
    for l in &links {
        let stored = if l.link.source == "." {
            l.link.path.clone()
        } else {
            format!("{}:{}", l.link.source, l.link.path)
        };
        let target = match &l.target {
            Ok(t) if t.location == c.location() => format!("{} {}", t.node_type.name(), t.path),
            Ok(t) => format!("{} {} in {}", t.node_type.name(), t.path, t.location),
            Err(e) => format!("dangling: {}", e.message()),
        };
        rows.push((
            format!("  {}", l.link.name),
            format!("-> {stored}  ({target})"),
        ));
    }
    if attributes.as_object().is_some_and(|m| !m.is_empty()) {
        rows.push(("attributes".into(), attributes.to_string()));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in rows {
        out.line(&format!("{k:<width$}  {v}"))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// `n5 info` of an HDF5 group: its children (groups, datasets, datasets
/// the N5 API does not open) and its attributes.
fn hdf5_group_info(a: &InfoArgs, loc: &Location, c: &Container) -> CliResult<u8> {
    let attributes = c.attributes(&loc.inner).at(&loc.arg)?;
    let (mut groups, mut datasets, mut unsupported) = (0usize, 0usize, 0usize);
    for child in c.list(&loc.inner).at(&loc.arg)? {
        match node(c, &join(&loc.inner, &child)) {
            Node::Dataset(_) => datasets += 1,
            Node::Unsupported(_) => unsupported += 1,
            _ => groups += 1,
        }
    }
    let mut out = Out::new();
    if a.json {
        out.json(&json!({
            "path": loc.inner,
            "container": loc.root,
            "format": "hdf5",
            "nodeType": "group",
            "children": {"groups": groups, "datasets": datasets, "unsupported": unsupported},
            "attributes": attributes,
        }))?;
        out.flush()?;
        return Ok(EXIT_OK);
    }
    let mut children = format!(
        "{}, {}",
        count_of(groups, "group"),
        count_of(datasets, "dataset")
    );
    if unsupported > 0 {
        children.push_str(&format!(
            ", and {} the N5 API does not open",
            count_of(unsupported, "dataset")
        ));
    }
    let mut rows: Vec<(String, String)> = vec![
        (
            "group".into(),
            format!("{} in {}", n5_display(&loc.inner), loc.root),
        ),
        ("format".into(), "hdf5".into()),
        ("children".into(), children),
    ];
    if attributes.as_object().is_some_and(|m| !m.is_empty()) {
        rows.push(("attributes".into(), attributes.to_string()));
    }
    print_rows(&mut out, rows, None)?;
    out.flush()?;
    Ok(EXIT_OK)
}

/// A filter of an HDF5 dataset's pipeline as one line: `name(cd_values)`.
fn filter_line(f: &Value) -> String {
    let name = match f["name"].as_str() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => format!("filter {}", f["id"]),
    };
    match f["cd_values"].as_array() {
        Some(cd) if !cd.is_empty() => {
            let values: Vec<String> = cd.iter().map(Value::to_string).collect();
            format!("{name}({})", values.join(", "))
        }
        _ => name,
    }
}

/// `n5 info` of an HDF5 dataset `ds` at `loc`: its metadata as HDF5 states
/// it and in N5's terms, the chunks allocated, user attributes, and with
/// `--stats` the elements' statistics (read through regions; chunks not
/// allocated read as the fill value).
fn hdf5_info(a: &InfoArgs, loc: &Location, ds: &Dataset) -> CliResult<u8> {
    let c = ds.container();
    let attrs = ds.attributes();
    let doc = ds.metadata().at(&loc.arg)?;
    let h5 = &doc["hdf5"];
    let user = user_attributes(&c.attributes(&loc.inner).at(&loc.arg)?);
    let block: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
    let grid = attrs.grid_shape();
    let (stored, _) = stored_blocks(ds, &loc.arg)?;
    let fill = zarr::fill_json(
        n5::format::Format::Hdf5,
        attrs.data_type.clone(),
        &ds.fill_value(),
    );
    let filters: Vec<String> = h5["filters"]
        .as_array()
        .map(|f| f.iter().map(filter_line).collect())
        .unwrap_or_default();
    let c_order = |v: &[u64]| v.iter().rev().copied().collect::<Vec<u64>>();
    // The bytes the data take in the file, and what they hold: whole
    // chunks for each allocated chunk (HDF5 stores edge chunks whole),
    // else the whole dataset once its storage is allocated.
    let chunked = h5["chunks"].is_array();
    let bytes_stored = h5["storage_size"].as_u64().unwrap_or(0);
    let elem = attrs.data_type.size() as u64;
    let bytes_uncompressed = if chunked {
        (stored.len() as u64)
            .saturating_mul(block.iter().product::<u64>())
            .saturating_mul(elem)
    } else if bytes_stored > 0 {
        attrs
            .dimensions
            .iter()
            .product::<u64>()
            .saturating_mul(elem)
    } else {
        0
    };
    let ratio = (bytes_stored > 0).then(|| bytes_uncompressed as f64 / bytes_stored as f64);
    let stats = if a.stats {
        let mut s = Stats::new();
        let zero = vec![0u64; attrs.ndim()];
        read_slabs(ds, &zero, &attrs.dimensions, |_, slab| {
            s.merge(&Stats::of(attrs.data_type.clone(), slab));
            true
        })
        .at(&loc.arg)?;
        Some(s.to_json(attrs.data_type.clone()))
    } else {
        None
    };
    let mut out = Out::new();
    if a.json {
        let mut v = json!({
            "path": loc.inner,
            "container": loc.root,
            "format": "hdf5",
            "dataType": attrs.data_type.name(),
            "dimensions": attrs.dimensions,
            "blockSize": block,
            "shape": h5["shape"],
            "maxShape": h5["maxshape"],
            "chunkShape": h5["chunks"],
            "layout": h5["layout"],
            "filters": h5["filters"],
            "compression": attrs.compression.to_json(),
            "fillValue": fill,
            "gridShape": grid,
            "blocks": {"expected": count_json(grid_count(&grid)), "stored": stored.len()},
            "bytesStored": bytes_stored,
            "bytesUncompressed": bytes_uncompressed,
            "compressionRatio": ratio,
            "metadata": doc,
            "attributes": user,
        });
        TypeInfo::of(ds, &loc.arg)?.add_json(&mut v);
        v["fillValue"] = fill;
        if let Some(s) = stats {
            v["stats"] = s;
        }
        out.json(&v)?;
        out.flush()?;
        return Ok(EXIT_OK);
    }
    let shape = |v: &Value| {
        v.as_array().map_or_else(String::new, |items| {
            let parts: Vec<String> = items
                .iter()
                .map(|x| x.as_u64().map_or("unlimited".into(), |n| n.to_string()))
                .collect();
            format!("[{}]", parts.join(", "))
        })
    };
    let mut rows: Vec<(String, String)> = vec![
        (
            "dataset".into(),
            format!("{} in {}", n5_display(&loc.inner), loc.root),
        ),
        ("format".into(), "hdf5".into()),
        ("dataType".into(), attrs.data_type.name().into()),
        (
            "dimensions".into(),
            format!(
                "{} (N5 order; shape {} in C order, at most {})",
                dims(&attrs.dimensions),
                dims(&c_order(&attrs.dimensions)),
                shape(&h5["maxshape"])
            ),
        ),
        (
            "blockSize".into(),
            if chunked {
                format!(
                    "{} (N5 order; chunk shape {} in C order)",
                    dims(&block),
                    shape(&h5["chunks"])
                )
            } else {
                format!(
                    "{} (N5 order; the dataset is {}, not chunked: blocks from hdf5.default_block_size)",
                    dims(&block),
                    h5["layout"].as_str().unwrap_or("?")
                )
            },
        ),
        (
            "filters".into(),
            if filters.is_empty() {
                "none".into()
            } else {
                filters.join(" | ")
            },
        ),
        ("compression".into(), compression(&attrs.compression)),
        ("fill value".into(), fill.to_string()),
        (
            "grid".into(),
            format!("{} ({} blocks)", dims(&grid), count_text(grid_count(&grid))),
        ),
        (
            "blocks".into(),
            format!(
                "{} of {} stored ({})",
                stored.len(),
                count_text(grid_count(&grid)),
                if chunked {
                    "allocated chunks"
                } else {
                    "all, where the dataset's storage is allocated"
                }
            ),
        ),
        (
            "stored".into(),
            match ratio {
                Some(r) => format!(
                    "{} ({} uncompressed, ratio {r:.2})",
                    size(bytes_stored),
                    size(bytes_uncompressed)
                ),
                None => size(bytes_stored),
            },
        ),
    ];
    if !user.is_empty() {
        rows.push((
            "attributes".into(),
            n5::jsontext::to_string(&Value::Object(user)).unwrap_or_default(),
        ));
    }
    print_rows(&mut out, rows, stats.as_ref())?;
    out.flush()?;
    Ok(EXIT_OK)
}

/// The number of elements of the region of `shard` in `ds` (clipped at
/// the array's end) and their statistics.
fn region_stats(ds: &Dataset, shard: &Shard) -> n5::Result<(u64, Stats)> {
    let t = ds.data_type();
    let mut stats = Stats::new();
    let n = read_shard_slabs(ds, shard, |slab| stats.merge(&Stats::of(t.clone(), slab)))?;
    Ok((n, stats))
}

/// `n5 info` of a Zarr array `ds` at `loc`: its metadata in the format's
/// terms, the chunks (inner chunks) and shards stored, bytes stored and
/// the compression ratio, user attributes, and with `--stats` the
/// elements' statistics (chunks not stored count as the fill value).
fn zarr_info(a: &InfoArgs, g: &Global, loc: &Location, ds: &Dataset) -> CliResult<u8> {
    let c = ds.container();
    let format = c.format();
    let threads = workers(g, c);
    let attrs = ds.attributes();
    let doc = ds.metadata().at(&loc.arg)?;
    let user = c.attributes(&loc.inner).at(&loc.arg)?;
    let shard = ds.shard_shape();
    let block: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
    let sharded = shard != block;
    let grid = attrs.grid_shape();
    let sgrid = shard_grid(ds);
    let expected_json = count_json(grid_count(&grid));
    let expected = count_text(grid_count(&grid));
    let expected_shards_json = count_json(grid_count(&sgrid));
    let expected_shards = count_text(grid_count(&sgrid));
    let c_order = |v: &[u64]| v.iter().rev().copied().collect::<Vec<u64>>();
    let fill = ds.fill_value();
    let types = TypeInfo::of(ds, &loc.arg)?;
    let fill_value = types.fill.clone();
    let dimension_names = doc.get("dimension_names").cloned().unwrap_or(Value::Null);
    let codecs = zarr::codecs_line(format, &doc);
    let keys = zarr::key_encoding_line(format, &doc);

    // The shards (chunks) stored, and the blocks (inner chunks) in them:
    // from the listing and each shard's index, or probed one by one where
    // the store cannot list.
    let listed = can_list(c) || a.stats;
    let shards = if listed {
        stored_shards(ds, &loc.arg)?
    } else {
        Vec::new()
    };
    let blocks: Vec<Vec<u64>> = if !listed {
        Vec::new()
    } else if can_list(c) {
        stored_blocks(ds, &loc.arg)?.0
    } else {
        work::map(&shards, threads, |shard| {
            let mut found = Vec::new();
            for pos in blocks_of(ds, shard) {
                if ds
                    .block_exists(&pos)
                    .at(loc.describe(c.store(), &shard.key))?
                {
                    found.push(pos);
                }
            }
            Ok::<_, CliError>(found)
        })?
        .concat()
    };
    let stored_blocks_n = blocks.len() as u64;
    let elements: u64 = blocks
        .iter()
        .map(|p| {
            attrs
                .block_shape(p)
                .map_or(0, |s| s.iter().product::<u64>())
        })
        .sum();
    let bar = progress(
        shards.len() as u64,
        "info",
        g.quiet || (!a.stats && can_list(c)),
    );
    // Per stored shard: its bytes, and with --stats the elements of its
    // region (inner chunks not stored read as the fill value) and their
    // statistics.
    type ShardInfo = (u64, u64, Option<Stats>);
    let per_shard: Vec<Option<ShardInfo>> = work::map(&shards, threads, |shard| {
        let file = || loc.describe(c.store(), &shard.key);
        let Some(bytes) = c.store().size(&shard.key).at(file())? else {
            bar.inc(1);
            return Ok::<_, CliError>(None);
        };
        let (region, stats) = if a.stats {
            let (n, s) = region_stats(ds, shard).at(file())?;
            (n, Some(s))
        } else {
            (0, None)
        };
        bar.inc(1);
        Ok(Some((bytes, region, stats)))
    })?;
    bar.finish_and_clear();
    let per_shard: Vec<ShardInfo> = per_shard.into_iter().flatten().collect();
    let stored_shards_n = per_shard.len();
    let stored_bytes: u64 = per_shard.iter().map(|s| s.0).sum();
    let stored_blocks = stored_blocks_n;
    let covered: u64 = per_shard.iter().map(|s| s.1).sum();
    let logical = elements * attrs.data_type.size() as u64;
    let ratio = (stored_bytes > 0).then(|| logical as f64 / stored_bytes as f64);
    let stats = a.stats.then(|| {
        let mut s = Stats::new();
        for i in &per_shard {
            if let Some(b) = &i.2 {
                s.merge(b);
            }
        }
        let total = grid_count(&attrs.dimensions).unwrap_or(u64::MAX);
        s.merge(&Stats::repeated(
            attrs.data_type.clone(),
            &fill,
            total.saturating_sub(covered),
        ));
        s.to_json(attrs.data_type.clone())
    });

    let mut out = Out::new();
    if a.json {
        let mut v = json!({
            "path": loc.inner,
            "container": loc.root,
            "format": format.name(),
            "dataType": attrs.data_type.name(),
            "dimensions": attrs.dimensions,
            "blockSize": block,
            "shardShape": shard,
            "sharded": sharded,
            "shape": c_order(&attrs.dimensions),
            "chunkShape": c_order(&block),
            "shardShapeC": if sharded { json!(c_order(&shard)) } else { Value::Null },
            "codecs": codecs,
            "compression": zarr::compression_of(format, &doc).to_json(),
            "fillValue": fill_value,
            "dimensionNames": dimension_names,
            "chunkKeyEncoding": keys,
            "gridShape": grid,
            "shardGridShape": sgrid,
            "metadata": doc,
        });
        types.add_json(&mut v);
        if listed {
            v["blocks"] = json!({"expected": expected_json, "stored": stored_blocks});
            v["shards"] = json!({"expected": expected_shards_json, "stored": stored_shards_n});
            v["bytesStored"] = json!(stored_bytes);
            v["bytesUncompressed"] = json!(logical);
            v["compressionRatio"] = json!(ratio);
        } else {
            v["blocks"] = json!({"expected": expected_json, "stored": null});
            v["shards"] = json!({"expected": expected_shards_json, "stored": null});
            for k in ["bytesStored", "bytesUncompressed", "compressionRatio"] {
                v[k] = Value::Null;
            }
            v["note"] = json!(NO_LISTING);
        }
        v["attributes"] = user;
        if let Some(s) = stats {
            v["stats"] = s;
        }
        out.json(&v)?;
        out.flush()?;
        return Ok(EXIT_OK);
    }
    let unit = if sharded { "inner chunks" } else { "chunks" };
    let mut rows: Vec<(String, String)> = vec![
        (
            "dataset".into(),
            format!("{} in {}", n5_display(&loc.inner), loc.root),
        ),
        ("format".into(), format.name().into()),
        ("dataType".into(), attrs.data_type.to_string()),
        (
            "dimensions".into(),
            format!(
                "{} (N5 order; shape {} in C order)",
                dims(&attrs.dimensions),
                dims(&c_order(&attrs.dimensions))
            ),
        ),
        (
            "blockSize".into(),
            format!(
                "{} (N5 order; {} {} in C order)",
                dims(&block),
                if sharded {
                    "inner chunk shape"
                } else {
                    "chunk shape"
                },
                dims(&c_order(&block))
            ),
        ),
    ];
    rows.splice(3..3, types.rows());
    if sharded {
        rows.push((
            "shardShape".into(),
            format!(
                "{} (N5 order; {} in C order)",
                dims(&shard),
                dims(&c_order(&shard))
            ),
        ));
    }
    rows.push(("codecs".into(), codecs));
    rows.push(("fill value".into(), fill_value.to_string()));
    if !dimension_names.is_null() {
        rows.push(("dimension names".into(), dimension_names.to_string()));
    }
    rows.push(("chunk keys".into(), keys));
    rows.push((
        "grid".into(),
        format!("{} ({expected} {unit})", dims(&grid)),
    ));
    if sharded {
        rows.push((
            "shard grid".into(),
            format!("{} ({expected_shards} shards)", dims(&sgrid)),
        ));
    }
    if !listed {
        rows.push(("blocks".into(), format!("not known: {NO_LISTING}")));
    } else {
        rows.push((
            "blocks".into(),
            format!("{stored_blocks} of {expected} {unit} stored"),
        ));
        if sharded {
            rows.push((
                "shards".into(),
                format!("{stored_shards_n} of {expected_shards} stored"),
            ));
        }
        rows.push((
            "stored".into(),
            match ratio {
                Some(r) => format!(
                    "{} ({} uncompressed, ratio {r:.2})",
                    size(stored_bytes),
                    size(logical)
                ),
                None => size(stored_bytes),
            },
        ));
    }
    if user.as_object().is_some_and(|m| !m.is_empty()) {
        rows.push(("attributes".into(), user.to_string()));
    }
    print_rows(&mut out, rows, stats.as_ref())?;
    out.flush()?;
    Ok(EXIT_OK)
}

/// Print `rows` (name, value) as an aligned table, after them the value
/// statistics `stats` when given.
fn print_rows(
    out: &mut Out,
    mut rows: Vec<(String, String)>,
    stats: Option<&Value>,
) -> CliResult<()> {
    if let Some(s) = stats {
        let text = |k: &str| match &s[k] {
            Value::String(t) => t.clone(),
            v => v.to_string(),
        };
        rows.push(("min".into(), text("min")));
        rows.push(("max".into(), text("max")));
        rows.push(("mean".into(), text("mean")));
        if let Some(n) = s.get("nan") {
            rows.push(("NaNs".into(), n.to_string()));
        }
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in rows {
        out.line(&format!("{k:<width$}  {v}"))?;
    }
    Ok(())
}
