//! `n5 cp`: copy a dataset or a group tree (groups, attributes, datasets)
//! into another place or container, optionally with another compression or
//! block size (re-chunking), and between formats (N5, Zarr v2, Zarr v3,
//! sharded with `--shard`, and local HDF5 files), in parallel. Between N5 datasets of one block
//! grid, block by block (varlength, string and object blocks too);
//! otherwise by regions of the destination's shards (chunks, blocks), each
//! read whole from the source and written once. Resumable: a block or
//! shard whose decoded content is already at the destination is not
//! written again. Source and destination may be any location kind (a local
//! path, s3://, gs://; https:// as a source only); from a store that cannot
//! list (plain HTTP(S)), every grid position is visited.

use std::collections::BTreeSet;

use clap::Args;
use n5::format::Format;
use n5::{Compression, Container, DataType, Dataset, DatasetAttributes, Mode};
use serde_json::{json, Map, Value};

use crate::cmd::common::{
    blocks_to_visit, can_list, count_text, distinct, grid_count, grid_iter, grid_positions,
    in_grid, node, read_slabs, shard_grid, shard_region, stored_blocks, stored_shards, unit_index,
    workers, Blocks, Node, DATASET_KEYS, MAX_PROBED,
};
use crate::cmd::ls::cannot_list;
use crate::cmd::nwb::{
    convert_attributes, legacy_dataset, plan_link, write_legacy, Legacy, NewLink, LINK_KEYS,
};
use crate::cmd::pyramid::{parse_part, pyramid_format, run_build, PyramidArgs};
use crate::cmd::target::{
    check_document, check_hdf5_shards, check_shard_format, checked_shard, create_dataset,
    destination_format, same_document, MadeArgs, HDF5_SHARDS,
};
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::{join, Location};
use crate::output::{count as count_of, progress, Out};
use crate::zarr::{new_document, NewArray};
use crate::{spec, work, Global};

/// Whether two locations are the same container: the same directory for
/// local paths (after resolving links), the same normalised root for URLs.
fn same_container(a: &Location, b: &Location) -> bool {
    match (&a.local, &b.local) {
        (Some(x), Some(y)) => std::fs::canonicalize(x)
            .ok()
            .is_some_and(|s| std::fs::canonicalize(y).ok().is_some_and(|d| d == s)),
        (None, None) => a.normalized_root().is_some() && a.normalized_root() == b.normalized_root(),
        _ => false,
    }
}

/// Arguments of `n5 cp`.
#[derive(Args, Debug)]
pub struct CpArgs {
    /// The dataset or group to copy.
    pub src: String,
    /// Where the copy goes (the new dataset or group itself, created with its
    /// parents and its container when missing).
    pub dst: String,
    /// New compression for every dataset (gzip, zstd:19, raw, JSON...).
    #[arg(long, short, value_name = "SPEC")]
    pub compression: Option<String>,
    /// New block size for every dataset, N5 order (re-chunks the data;
    /// all-zero blocks are then not stored); the inner chunk shape with
    /// --shard.
    #[arg(long, short, value_name = "LIST")]
    pub block_size: Option<String>,
    /// --format and --shard.
    #[command(flatten)]
    pub made: MadeArgs,
    /// Build a multiscale pyramid of the source dataset at DST (`n5
    /// pyramid SRC DST` with these options; --format may also be bdv).
    #[arg(long)]
    pub pyramid: bool,
    /// The pyramid's options (with --pyramid), and --part.
    #[command(flatten)]
    pub pyr: PyramidArgs,
}

/// One block's content as stored, decoded, for comparing and writing.
#[derive(Clone, Debug, PartialEq)]
enum Content {
    /// No block is stored.
    Missing,
    /// A numeric block, at its nominal shape, native order.
    Numeric(Vec<u8>),
    /// A varlength (mode 1) numeric block: header shape and elements.
    Varlength(Vec<u64>, Vec<u8>),
    /// A `string` block: header shape and strings.
    Strings(Vec<u64>, Vec<String>),
    /// An `object` block's bytes.
    Object(Vec<u8>),
}

/// Read the block at `pos` of `ds` as [`Content`].
fn read_content(ds: &Dataset, pos: &[u64]) -> n5::Result<Content> {
    match ds.data_type() {
        DataType::String => Ok(match ds.read_string_block(pos)? {
            None => Content::Missing,
            Some((shape, s)) => Content::Strings(shape.iter().map(|&x| x as u64).collect(), s),
        }),
        DataType::Object => Ok(match ds.read_object_block(pos)? {
            None => Content::Missing,
            Some(b) => Content::Object(b),
        }),
        _ => {
            let Some(block) = ds.read_block(pos)? else {
                return Ok(Content::Missing);
            };
            let shape = ds.block_shape(pos)?;
            let size: Vec<u64> = block.header.size.iter().map(|&x| x as u64).collect();
            if block.header.mode == n5::BlockMode::Varlength {
                Ok(Content::Varlength(size, block.data))
            } else if size == shape {
                Ok(Content::Numeric(block.data))
            } else {
                let n: u64 = shape.iter().product();
                let mut buf = vec![0u8; n as usize * ds.data_type().size()];
                ds.read_block_into(pos, &mut buf)?;
                Ok(Content::Numeric(buf))
            }
        }
    }
}

/// Write `content` as the block at `pos` of `ds` (deleting it for Missing).
fn write_content(ds: &Dataset, pos: &[u64], content: &Content) -> n5::Result<()> {
    match content {
        Content::Missing => ds.delete_block(pos).map(|_| ()),
        Content::Numeric(d) => ds.write_block(pos, &ds.block_shape(pos)?, d),
        Content::Varlength(shape, d) => ds.write_varlength_block(pos, shape, d),
        Content::Strings(shape, s) => ds.write_string_block(pos, shape, s),
        Content::Object(b) => ds.write_object_block(pos, b),
    }
}

/// One dataset to copy.
struct Plan {
    src: Dataset,
    dst: Dataset,
    /// The source dataset as messages name it.
    sarg: String,
    /// Whether the copy goes by regions of the destination's shards (or
    /// chunks, or blocks) rather than block by block: between formats, or
    /// when the block grids differ.
    by_region: bool,
    /// Whether the elements have no binary layout (strings, bytes), so
    /// that regions go as bytes with lengths.
    variable: bool,
}

/// What one block job did.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Done {
    Copied,
    Skipped,
    Removed,
    /// Neither side has the block (a probed grid position).
    Absent,
}

/// Where a block or unit copy failed: reading the source, or writing the
/// destination.
enum Failed {
    /// Reading the source failed.
    Source(n5::Error),
    /// Writing (or comparing with) the destination failed.
    Destination(n5::Error),
}

/// Copy (or check) the block at `pos` of both grids of `plan`.
fn copy_block(plan: &Plan, pos: &[u64]) -> Result<Done, Failed> {
    let want = read_content(&plan.src, pos).map_err(Failed::Source)?;
    // A destination block that cannot be read is simply rewritten.
    let have = read_content(&plan.dst, pos).ok();
    if have.as_ref() == Some(&want) {
        return Ok(if want == Content::Missing {
            Done::Absent
        } else {
            Done::Skipped
        });
    }
    write_content(&plan.dst, pos, &want).map_err(Failed::Destination)?;
    Ok(if want == Content::Missing {
        Done::Removed
    } else {
        Done::Copied
    })
}

/// Copy (or check) the shard (chunk, block) at `pos` of the grid of the
/// destination's shards: the region is read from the source (chunks that
/// are not stored read as the source's fill value), compared with what the
/// destination holds, and written in one region write when it differs
/// (which writes each shard once; units equal to the fill value are then
/// not stored).
fn copy_unit(plan: &Plan, pos: &[u64]) -> Result<Done, Failed> {
    if plan.variable {
        return copy_unit_bytes(plan, pos);
    }
    let (offset, shape) = shard_region(&plan.dst, pos);
    let elem = plan.dst.data_type().size();
    let n: u64 = shape.iter().product();
    let mut want = vec![0u8; n as usize * elem];
    plan.src
        .read_region(&offset, &shape, &mut want)
        .map_err(|e| {
            Failed::Source(e.context(format!(
                "reading the region at {offset:?} of shape {shape:?}"
            )))
        })?;
    let fill = plan.dst.fill_value();
    let empty = want.chunks_exact(elem).all(|e| e == fill.as_slice());
    if holds(&plan.dst, &offset, &shape, &want) {
        return Ok(if empty { Done::Absent } else { Done::Skipped });
    }
    plan.dst
        .write_region(&offset, &shape, &want)
        .map_err(Failed::Destination)?;
    Ok(if empty { Done::Removed } else { Done::Copied })
}

/// [`copy_unit`] for elements of variable length (strings, bytes): the
/// region goes as the elements' bytes and lengths.
fn copy_unit_bytes(plan: &Plan, pos: &[u64]) -> Result<Done, Failed> {
    let (offset, shape) = shard_region(&plan.dst, pos);
    let want = plan.src.read_region_bytes(&offset, &shape).map_err(|e| {
        Failed::Source(e.context(format!(
            "reading the region at {offset:?} of shape {shape:?}"
        )))
    })?;
    let fill = plan.dst.fill_value();
    let mut at = 0usize;
    let empty = want.1.iter().all(|&n| {
        let e = &want.0[at..at + n as usize];
        at += n as usize;
        e == fill.as_slice()
    });
    if plan.dst.read_region_bytes(&offset, &shape).ok().as_ref() == Some(&want) {
        return Ok(if empty { Done::Absent } else { Done::Skipped });
    }
    plan.dst
        .write_region_bytes(&offset, &shape, &want.0, &want.1)
        .map_err(Failed::Destination)?;
    Ok(if empty { Done::Removed } else { Done::Copied })
}

/// Whether the region at `offset` of `shape` of `ds` reads as `want`,
/// read in slabs (see [`read_slabs`]); a region that cannot be read does
/// not.
fn holds(ds: &Dataset, offset: &[u64], shape: &[u64], want: &[u8]) -> bool {
    let mut same = true;
    let read = read_slabs(ds, offset, shape, |at, slab| {
        same = want.get(at..at + slab.len()) == Some(slab);
        same
    });
    read.is_ok() && same
}

/// The most units (shards, chunks) of one dataset that a region copy
/// visits: their positions are held in memory.
const MAX_UNITS: u64 = 1 << 24;

/// Check that a copy that visits every position of the destination's
/// `grid` (of units, or of blocks) can hold them: at most [`MAX_UNITS`]
/// where the source lists (its fill value is not the destination's), at
/// most [`MAX_PROBED`] where it cannot (plain HTTP(S)); else an error
/// about the source `sarg` that says why.
fn check_visits(grid: &[u64], listable: bool, sarg: &str) -> CliResult<()> {
    let n = grid_count(grid);
    let limit = if listable { MAX_UNITS } else { MAX_PROBED };
    if n.is_some_and(|n| n <= limit) {
        return Ok(());
    }
    let why = if listable {
        "the source's fill value is not the destination's, so every chunk (shard) of the destination is written"
    } else {
        "plain HTTP(S) cannot list the source's chunks, so every chunk (shard) of the destination is visited"
    };
    Err(CliError::new(
        sarg,
        format!(
            "{why}, and its grid {grid:?} has {} of them, more than {limit} (give a larger --shard or -b{})",
            count_text(n),
            if listable {
                ""
            } else {
                ", or copy from s3://, gs:// or a local copy"
            }
        ),
    ))
}

/// The units (shard-grid positions of the destination) a region copy of
/// `plan` visits: where the source can list and fills chunks it does not
/// store with the destination's fill value, those that overlap a block
/// stored at the source or hold one at the destination (so that stale ones
/// are cleared); else every one.
fn units_to_visit(plan: &Plan, sarg: &str, darg: &str) -> CliResult<Vec<Vec<u64>>> {
    let grid = shard_grid(&plan.dst);
    if grid.is_empty() {
        // A 0-d array: its one chunk.
        return Ok(vec![Vec::new()]);
    }
    let listable = can_list(plan.src.container());
    let sparse = listable && plan.src.fill_value() == plan.dst.fill_value();
    if !sparse {
        check_visits(&grid, listable, sarg)?;
        return Ok(grid_positions(&grid));
    }
    let unit = plan.dst.shard_shape();
    let dims = plan.dst.attributes().dimensions.clone();
    let mut set: BTreeSet<Vec<u64>> = BTreeSet::new();
    let sblock: Vec<u64> = plan
        .src
        .attributes()
        .block_size
        .iter()
        .map(|&b| b as u64)
        .collect();
    let (stored, _) = stored_blocks(&plan.src, sarg)?;
    for p in stored {
        // The units the block at p covers: a box of the unit grid.
        let lo: Vec<u64> = (0..p.len()).map(|d| p[d] * sblock[d] / unit[d]).collect();
        let hi: Vec<u64> = (0..p.len())
            .map(|d| (((p[d] + 1) * sblock[d]).min(dims[d]) - 1) / unit[d])
            .collect();
        let extent: Vec<u64> = lo.iter().zip(&hi).map(|(&l, &h)| h - l + 1).collect();
        for k in grid_iter(&extent) {
            set.insert(k.iter().zip(&lo).map(|(&k, &l)| k + l).collect());
            if set.len() as u64 > MAX_UNITS {
                break;
            }
        }
        if set.len() as u64 > MAX_UNITS {
            return Err(CliError::new(
                sarg,
                format!(
                    "its stored blocks cover more than {MAX_UNITS} chunks (shards) of the destination, more than one copy visits (give a larger --shard or -b)"
                ),
            ));
        }
    }
    if plan.dst.container().format() == Format::N5 {
        let (there, _) = stored_blocks(&plan.dst, darg)?;
        set.extend(there);
    } else {
        set.extend(stored_shards(&plan.dst, darg)?.into_iter().map(|s| s.pos));
    }
    Ok(set.into_iter().filter(|p| in_grid(p, &grid)).collect())
}

/// The attributes of `doc` (the node's attributes as the source's
/// container gives them) that a copy carries over: all of them but, for a
/// dataset of an N5 or HDF5 source, the N5 dataset keys (its metadata
/// there, not user attributes), and but the `"n5"` version when the copy is the
/// destination's root (whose version the destination keeps) or the
/// source's N5 root goes to another format.
fn carried(doc: &Value, drop_version: bool, n5_dataset: bool) -> Map<String, Value> {
    doc.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !(drop_version && k.as_str() == "n5"))
                .filter(|(k, _)| !(n5_dataset && DATASET_KEYS.contains(&k.as_str())))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Where a format keeps dimension names (N5 order as given): Zarr v3 in
/// `dimension_names`, C order; N5 in the attribute `axes`, N5 order, as
/// neuroglancer and tensorstore read it; Zarr v2 in the attribute
/// `_ARRAY_DIMENSIONS`, C order, as xarray reads it.
fn names_attribute(format: Format) -> Option<&'static str> {
    match format {
        Format::N5 => Some("axes"),
        Format::Zarr2 => Some("_ARRAY_DIMENSIONS"),
        _ => None,
    }
}

/// The dimension names of the dataset `sp` of `src` (its attributes
/// `doc`, `ndim` dimensions) in N5 order, when a copy into `to` changes
/// the format and the source names every dimension, no two alike (an
/// empty name is none).
fn dimension_names(
    src: &Container,
    sp: &str,
    doc: &Value,
    ndim: usize,
    to: Format,
) -> n5::Result<Option<Vec<String>>> {
    let from = src.format();
    if from == to {
        return Ok(None);
    }
    let given = match names_attribute(from) {
        Some(key) => doc.get(key).cloned(),
        None => src
            .open_dataset(sp)?
            .metadata()?
            .get("dimension_names")
            .cloned(),
    };
    // An empty name is none, as null is.
    let names: Option<Vec<String>> = given.as_ref().and_then(Value::as_array).and_then(|a| {
        a.iter()
            .map(|v| v.as_str().filter(|n| !n.is_empty()).map(String::from))
            .collect()
    });
    let Some(mut names) = names.filter(|n| n.len() == ndim && distinct(n)) else {
        return Ok(None);
    };
    if from != Format::N5 {
        names.reverse();
    }
    Ok(Some(names))
}

/// Move dimension `names` (N5 order) from where the format `from` keeps
/// them among a dataset's carried `attributes` to where `to` does (Zarr
/// v3's are in its metadata). A user attribute already under the name
/// `to` gives them, holding something else, is an error naming it
/// (`darg`): the copy would lose one or the other.
fn rename_dimensions(
    attributes: &mut Map<String, Value>,
    names: &[String],
    from: Format,
    to: Format,
    darg: &str,
) -> CliResult<()> {
    if let Some(key) = names_attribute(from) {
        attributes.remove(key);
    }
    if let Some(key) = names_attribute(to) {
        let mut names = names.to_vec();
        if to != Format::N5 {
            names.reverse();
        }
        let names = json!(names);
        match attributes.get(key) {
            Some(there) if *there != names => {
                return Err(CliError::new(
                    darg,
                    format!(
                        "the user attribute '{key}' ({there}) would take the place of the dimension names the copy carries there ({names}); rename or remove it at the source"
                    ),
                ))
            }
            _ => {
                attributes.insert(key.into(), names);
            }
        }
    }
    Ok(())
}

/// Check that the user attributes of a node can go into N5 as they are,
/// before anything is written: a dataset's user attributes cannot use an
/// N5 dataset key (they share attributes.json with its metadata), and a
/// group's cannot hold all of `dimensions`, `blockSize` and `dataType`
/// (N5 readers would take the group for a dataset).
fn check_n5_attributes(
    attributes: &Map<String, Value>,
    dataset: bool,
    darg: &str,
) -> CliResult<()> {
    if dataset {
        if let Some(k) = DATASET_KEYS.iter().find(|k| attributes.contains_key(**k)) {
            return Err(CliError::new(
                darg,
                format!(
                    "the user attribute '{k}' cannot go into an N5 dataset, whose attributes.json holds its metadata under that key (rename or remove the attribute at the source)"
                ),
            ));
        }
    } else if ["dimensions", "blockSize", "dataType"]
        .iter()
        .all(|k| attributes.contains_key(*k))
    {
        return Err(CliError::new(
            darg,
            "this group's user attributes 'dimensions', 'blockSize' and 'dataType' would make it read as a dataset in N5 (rename or remove them at the source)",
        ));
    }
    Ok(())
}

/// What the copy of one node makes at the destination.
enum Make {
    /// A group.
    Group,
    /// A dataset: its N5 metadata, the format's document, whether it is
    /// copied by regions, and for a legacy hdmf-zarr dataset converted to
    /// the current convention, its new content (written whole).
    Dataset {
        attrs: DatasetAttributes,
        document: Value,
        by_region: bool,
        legacy: Option<Box<Legacy>>,
    },
    /// A link (hdmf-zarr), made after every node.
    Link(NewLink),
}

/// One node of the copy, planned before anything is written.
struct Planned {
    /// Its path below the copy's source (and destination).
    rel: String,
    /// What the copy makes of it.
    make: Make,
    /// The user attributes it carries.
    attributes: Map<String, Value>,
}

/// Check the values of `--block-size`: each at least 1 and at most
/// 2^32 - 1 (N5 block sizes are 32-bit).
fn checked_block_size(block: &[u64]) -> CliResult<()> {
    for (d, &b) in block.iter().enumerate() {
        if b == 0 || b > u64::from(u32::MAX) {
            return Err(CliError::usage(
                "--block-size",
                format!(
                    "{block:?}: dimension {d} is {b}, and a block size is at least 1 and at most {}",
                    u32::MAX
                ),
            ));
        }
    }
    Ok(())
}

/// The shard shape a copy without `--shard` keeps: a sharded Zarr v3
/// source's, into Zarr v3, when the block size `block` (N5 order) divides
/// it (else an error asking for `--shard`); `None` otherwise.
fn inherited_shard(
    src: &Container,
    sp: &str,
    sarg: &str,
    format: Format,
    block: &[u32],
) -> CliResult<Option<Vec<u64>>> {
    if format != Format::Zarr3 || src.format() != Format::Zarr3 {
        return Ok(None);
    }
    let shard = src.open_dataset(sp).at(sarg)?.shard_shape();
    if shard.iter().zip(block).all(|(&s, &b)| s == b as u64) {
        return Ok(None);
    }
    if shard.iter().zip(block).all(|(&s, &b)| s % b as u64 == 0) {
        return Ok(Some(shard));
    }
    Err(CliError::usage(
        sarg,
        format!(
            "its shard shape {shard:?} is not a multiple of the block size {block:?}; give --shard for the copy"
        ),
    ))
}

/// Check that no stored block of the N5 dataset `ds` is a varlength block
/// (mode 1), which a Zarr array cannot hold: their headers are read in
/// parallel, before anything is written.
fn check_no_varlength(ds: &Dataset, sarg: &str, format: Format, g: &Global) -> CliResult<()> {
    let blocks = match blocks_to_visit(ds, sarg)? {
        Blocks::Listed(inside, _) => inside,
        Blocks::Probe(all) => all,
    };
    let found = work::map(&blocks, workers(g, ds.container()), |pos| {
        match ds.block_header(pos).at(sarg)? {
            Some(h) if h.mode == n5::BlockMode::Varlength => Ok::<_, CliError>(Some(pos.clone())),
            _ => Ok(None),
        }
    })?;
    if let Some(pos) = found.into_iter().flatten().next() {
        return Err(CliError::new(
            sarg,
            format!(
                "block {pos:?} is a varlength block, which {} cannot store (Zarr arrays hold exactly one element per position; varlength, string and object blocks are N5's)",
                format.name()
            ),
        ));
    }
    Ok(())
}

/// Check what the container `dst` already holds where the copy of `nodes`
/// to `dloc` goes: nothing above the copy is a dataset; a group goes onto
/// nothing or a group; a dataset onto nothing, an empty group (no
/// children, no user attributes), or a dataset with the metadata the copy
/// makes (a copy resumed with the same options).
fn check_destination(dst: &Container, dloc: &Location, nodes: &[Planned]) -> CliResult<()> {
    let names: Vec<&str> = dloc.inner.split('/').filter(|s| !s.is_empty()).collect();
    for i in 0..names.len() {
        let above = names[..i].join("/");
        if dst.dataset_exists(&above).at(&dloc.arg)? {
            let what = if above.is_empty() {
                "the container's root".to_string()
            } else {
                format!("'{above}'")
            };
            return Err(CliError::new(
                &dloc.arg,
                format!("{what} is a dataset, and a copy cannot go inside a dataset"),
            ));
        }
    }
    for n in nodes {
        let dp = join(&dloc.inner, &n.rel);
        let darg = dloc.child(&n.rel).arg;
        if let Make::Link(link) = &n.make {
            let there = if matches!(dst.format(), Format::Zarr2 | Format::Zarr3) {
                dst.link(&dp).at(&darg)?
            } else {
                None
            };
            match there {
                Some(e) if e.link.source == link.source && e.link.path == link.path => continue,
                Some(e) => {
                    return Err(CliError::new(
                        &darg,
                        format!(
                            "a link to {}:{} is already there, and the copy makes one to {}:{} (remove it, or copy to another path)",
                            e.link.source, e.link.path, link.source, link.path
                        ),
                    ))
                }
                None if dst.exists(&dp).at(&darg)? => {
                    return Err(CliError::new(
                        &darg,
                        "a group or dataset is already there, and the copy makes a link here (remove it, or copy to another path)",
                    ))
                }
                None => continue,
            }
        }
        if !dst.exists(&dp).at(&darg)? {
            continue;
        }
        let dataset_there = dst.dataset_exists(&dp).at(&darg)?;
        match &n.make {
            Make::Group if dataset_there => {
                return Err(CliError::new(
                    &darg,
                    "a dataset is already there, and the copy makes a group here (remove it, or copy to another path)",
                ));
            }
            Make::Group | Make::Link(_) => {}
            Make::Dataset { .. } if !dataset_there => {
                let mut user = dst.attributes(&dp).at(&darg)?;
                if let Some(m) = user.as_object_mut() {
                    m.remove("n5");
                }
                let empty = user.as_object().is_none_or(|m| m.is_empty())
                    && dst.list(&dp).at(&darg)?.is_empty();
                if !empty {
                    return Err(CliError::new(
                        &darg,
                        "a group is already there, and the copy makes a dataset here (remove it, or copy to another path)",
                    ));
                }
            }
            Make::Dataset {
                attrs, document, ..
            } => {
                let existing = dst.open_dataset(&dp).at(&darg)?;
                let same = if matches!(dst.format(), Format::N5 | Format::Hdf5) {
                    *existing.attributes() == *attrs
                } else {
                    same_document(&existing.metadata().at(&darg)?, document)
                };
                if !same {
                    return Err(CliError::new(
                        &darg,
                        "a dataset with other metadata is already there (remove it, or copy with the same options to resume)",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// What a copy is asked to do to every dataset.
struct Request<'a> {
    /// The source container.
    src: &'a Container,
    /// The destination's format.
    format: Format,
    /// `-c`: the new compression.
    compression: Option<&'a Compression>,
    /// `-b`: the new block size (N5 order).
    block_size: Option<&'a [u64]>,
    /// `--shard`: the shard shape (N5 order).
    shard: Option<&'a [u64]>,
    /// `--hdf5-shards`.
    hdf5_shards: bool,
    /// The global options.
    g: &'a Global,
}

/// What the copy of the dataset `sp` of the source (`sa` its metadata;
/// `sarg` and `darg` name the source and destination in messages) makes,
/// every check of it done before anything is written.
#[allow(clippy::too_many_arguments)]
fn plan_dataset(
    r: &Request,
    sa: &DatasetAttributes,
    sp: &str,
    dp: &str,
    sarg: &str,
    darg: &str,
    names: Option<&[String]>,
    legacy: Option<Box<Legacy>>,
) -> CliResult<Make> {
    let block: Vec<u32> = match r.block_size {
        None => sa.block_size.clone(),
        // Each value is at most u32::MAX (see checked_block_size).
        Some(b) if b.len() == sa.ndim() => b.iter().map(|&x| x as u32).collect(),
        Some(b) => {
            return Err(CliError::usage(
                sarg,
                format!(
                    "--block-size has {} values but this dataset has {} dimensions",
                    b.len(),
                    sa.ndim()
                ),
            ))
        }
    };
    let zarr = |f: Format| matches!(f, Format::Zarr2 | Format::Zarr3);
    // Zarr arrays of every type go into Zarr; N5 has the numeric types
    // and string and object blocks of its own.
    let zarr_to_zarr = zarr(r.src.format()) && zarr(r.format);
    // N5's own string and object blocks go into N5 as they are; Zarr's
    // strings and bytes, and every Zarr-only type, do not.
    let code = sa.data_type.code();
    if r.format == Format::N5 && code > 10 && (code > 12 || r.src.format() != Format::N5) {
        return Err(CliError::new(
            sarg,
            format!(
                "{} datasets cannot go into n5 (its datasets hold the ten numeric types, and string and object blocks of its own)",
                sa.data_type
            ),
        ));
    }
    if r.format != Format::N5 && !sa.data_type.is_numeric() && !zarr_to_zarr {
        return Err(CliError::new(
            sarg,
            format!(
                "{} datasets cannot be stored in {} (its arrays are numeric; string, object and varlength blocks are N5's)",
                sa.data_type,
                r.format.name()
            ),
        ));
    }
    // HDF5 chunks are at most the dataset's dimensions: the library clamps
    // them so, and the copy plans with what it makes.
    let block: Vec<u32> = if r.format == Format::Hdf5 {
        block
            .iter()
            .zip(&sa.dimensions)
            .map(|(&b, &d)| u64::from(b).clamp(1, d.max(1)) as u32)
            .collect()
    } else {
        block
    };
    if r.format != Format::N5 && r.src.format() == Format::N5 {
        check_no_varlength(&r.src.open_dataset(sp).at(sarg)?, sarg, r.format, r.g)?;
    }
    let by_region =
        block != sa.block_size || r.src.format() != Format::N5 || r.format != Format::N5;
    if by_region && !sa.data_type.is_numeric() && !zarr_to_zarr {
        return Err(CliError::usage(
            sarg,
            format!("{} datasets cannot be re-chunked", sa.data_type),
        ));
    }
    let shard = match r.shard {
        Some(s) => Some(checked_shard(s, &block, sarg)?),
        None => inherited_shard(r.src, sp, sarg, r.format, &block)?,
    };
    let compression = match r.compression {
        Some(c) => c.clone(),
        // HDF5 files get raw or gzip (deflate) only: a source compressed
        // otherwise is written with gzip unless -c says what.
        None if r.format == Format::Hdf5
            && !matches!(sa.compression, Compression::Raw | Compression::Gzip { .. }) =>
        {
            Compression::from_json(&json!({"type": "gzip"})).at(darg)?
        }
        None => sa.compression.clone(),
    };
    let attrs = DatasetAttributes::new(
        sa.dimensions.clone(),
        block,
        sa.data_type.clone(),
        compression,
    )
    .map_err(|e| CliError::usage(darg, e.message()))?;
    // A Zarr source keeps its fill value and dimension names in Zarr; N5
    // has zeros.
    let source = (r.src.format() != Format::N5)
        .then(|| r.src.open_dataset(sp))
        .transpose()
        .at(sarg)?;
    let fill = match (&legacy, &source, r.format) {
        (Some(l), _, _) => l.fill.clone(),
        (None, Some(s), Format::Zarr2 | Format::Zarr3) => s.fill_value(),
        _ => vec![0u8; sa.data_type.size()],
    };
    // Zarr v3 to Zarr v3 keeps the names as they are (some may be null);
    // from another format they are the source's, in C order.
    let dimension_names = match (&source, r.format) {
        (Some(s), Format::Zarr3) if r.src.format() == Format::Zarr3 => {
            s.metadata().at(sarg)?.get("dimension_names").cloned()
        }
        (_, Format::Zarr3) => names.map(|n| json!(n.iter().rev().collect::<Vec<_>>())),
        _ => None,
    };
    // HDF5 shards when asked, or kept from a Zarr v3 source that has them,
    // for a sharded Zarr v3 destination.
    check_hdf5_shards(r.hdf5_shards, r.format, shard.is_some(), darg)?;
    let kept = match (&source, r.src.format()) {
        (Some(s), Format::Zarr3) => s.metadata().at(sarg)?.get(HDF5_SHARDS).is_some(),
        _ => false,
    };
    let hdf5_shards = (r.hdf5_shards || kept) && r.format == Format::Zarr3 && shard.is_some();
    let document = new_document(
        r.format,
        &attrs,
        &NewArray {
            shard: shard.as_deref(),
            fill: &fill,
            dimension_names,
            hdf5_shards,
        },
    )
    .map_err(|e| {
        // A compression HDF5 files do not hold is the command line's to
        // change.
        if r.format == Format::Hdf5 {
            CliError::usage(darg, e.message())
        } else {
            CliError::new(darg, e.message())
        }
    })?;
    if r.format != Format::N5 {
        check_document(r.format, dp, &document, darg)?;
    }
    // Copies that visit every unit of the grid: the positions must fit.
    let listable = can_list(r.src);
    let source_fill = match &source {
        Some(s) => s.fill_value(),
        None => vec![0u8; sa.data_type.size()],
    };
    if legacy.is_none() && (!listable || (by_region && source_fill != fill)) {
        let unit: Vec<u64> = match (&shard, by_region) {
            (Some(s), _) => s.clone(),
            (None, true) => attrs.block_size.iter().map(|&b| b as u64).collect(),
            (None, false) => sa.block_size.iter().map(|&b| b as u64).collect(),
        };
        let grid: Vec<u64> = sa
            .dimensions
            .iter()
            .zip(&unit)
            .map(|(&d, &u)| d.div_ceil(u))
            .collect();
        check_visits(&grid, listable, sarg)?;
    }
    Ok(Make::Dataset {
        attrs,
        document,
        by_region,
        legacy,
    })
}

/// The jobs of every dataset of a copy: `(plan, position)` of each block,
/// or of each unit of a region copy, it visits.
fn plan_jobs(plans: &[Plan], src: &Container) -> CliResult<Vec<(usize, Vec<u64>)>> {
    let mut jobs: Vec<(usize, Vec<u64>)> = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let sarg = plan.sarg.clone();
        if plan.by_region {
            let units = units_to_visit(plan, &sarg, plan.dst.path())?;
            jobs.extend(units.into_iter().map(|p| (i, p)));
        } else if !can_list(src) {
            // The source cannot list (plain HTTP(S)): probe its whole grid.
            if let Blocks::Probe(all) = blocks_to_visit(&plan.src, &sarg)? {
                jobs.extend(all.into_iter().map(|p| (i, p)));
            }
        } else {
            let (stored, _) = stored_blocks(&plan.src, &sarg)?;
            let (there, _) = stored_blocks(&plan.dst, plan.dst.path())?;
            let grid = plan.src.attributes().grid_shape();
            let mut all: Vec<Vec<u64>> = stored
                .into_iter()
                .chain(there)
                .filter(|p| in_grid(p, &grid))
                .collect();
            all.sort();
            all.dedup();
            jobs.extend(all.into_iter().map(|p| (i, p)));
        }
    }
    Ok(jobs)
}

/// `n5 cp SRC DST`.
pub fn cp(a: &CpArgs, g: &Global) -> CliResult<u8> {
    if a.pyramid {
        return cp_pyramid(a, g);
    }
    if let Some(flag) = a.pyr.pyramid_only_flag() {
        return Err(CliError::usage(flag, "needs --pyramid"));
    }
    let part = a.pyr.part.as_deref().map(parse_part).transpose()?;
    let compression: Option<Compression> = a
        .compression
        .as_deref()
        .map(spec::compression)
        .transpose()?;
    let block_size: Option<Vec<u64>> = a
        .block_size
        .as_deref()
        .map(|t| spec::list("--block-size", t))
        .transpose()?;
    let shard: Option<Vec<u64>> = a
        .made
        .shard
        .as_deref()
        .map(|t| spec::list("--shard", t))
        .transpose()?;
    if let Some(b) = &block_size {
        checked_block_size(b)?;
    }
    let sloc = Location::parse(&a.src, g)?;
    let dloc = Location::parse(&a.dst, g)?;
    let threads = work::threads(g.threads);
    // A copy inside one file (HDF5) opens it for writing first: libhdf5
    // opens a file this process holds read-only for reading only.
    let one_file = same_container(&sloc, &dloc) && sloc.local.as_ref().is_some_and(|p| p.is_file());
    let src = sloc.open(
        if one_file {
            Mode::ReadWrite
        } else {
            Mode::Read
        },
        threads,
    )?;
    if !src.exists(&sloc.inner).at(&sloc.arg)? {
        return Err(CliError::new(&sloc.arg, "no such group or dataset"));
    }
    if same_container(&sloc, &dloc)
        && (dloc.inner == sloc.inner
            || dloc.inner.starts_with(&format!("{}/", sloc.inner))
            || sloc.inner.is_empty())
    {
        return Err(CliError::usage(
            &dloc.arg,
            format!("cannot copy {} into itself", sloc.arg),
        ));
    }
    let format = destination_format(a.made.format.as_deref(), &dloc, src.format())?;
    check_shard_format(shard.is_some(), format, &dloc.arg)?;
    if format != Format::Zarr3 {
        check_hdf5_shards(a.made.hdf5_shards, format, false, &dloc.arg)?;
    }
    let mut rels = vec![String::new()];
    match node(&src, &sloc.inner) {
        Node::Broken(m) | Node::Unsupported(m) => return Err(CliError::new(&sloc.arg, m)),
        Node::Dataset(_) => {}
        Node::Group if !crate::cmd::common::can_list_nodes(&src) => return Err(cannot_list(&sloc)),
        Node::Group => rels.extend(src.deep_list(&sloc.inner).at(&sloc.arg)?),
    }

    // Everything the copy makes, checked before anything is written.
    let request = Request {
        src: &src,
        format,
        compression: compression.as_ref(),
        block_size: block_size.as_deref(),
        shard: shard.as_deref(),
        hdf5_shards: a.made.hdf5_shards,
        g,
    };
    let mut nodes: Vec<Planned> = Vec::new();
    let has_links = matches!(src.format(), Format::Zarr2 | Format::Zarr3);
    // A legacy hdmf-zarr (Zarr v2) source copied into Zarr v3 takes the
    // current convention.
    let legacy_to_v3 = src.format() == Format::Zarr2 && format == Format::Zarr3;
    let mut reference_fields: Option<Vec<String>> = None;
    for rel in &rels {
        let sp = join(&sloc.inner, rel);
        let dp = join(&dloc.inner, rel);
        let sarg = sloc.child(rel).arg;
        let darg = dloc.child(rel).arg;
        // A link (below the copied node) is copied as a link.
        if !rel.is_empty() && has_links {
            if let Some(entry) = src.link(&sp).at(&sarg)? {
                let link = plan_link(&entry, &src, &sloc, &dloc, format, &sarg)?;
                nodes.push(Planned {
                    rel: rel.clone(),
                    make: Make::Link(link),
                    attributes: Map::new(),
                });
                continue;
            }
        }
        let doc = src.attributes(&sp).at(&sarg)?;
        // A dataset's dimension names, when the copy changes the format.
        let mut names = None;
        let drop_version =
            dp.is_empty() || (src.format() == Format::N5 && sp.is_empty() && format != Format::N5);
        let mut new_type = None;
        let make = match node(&src, &sp) {
            Node::Broken(m) | Node::Unsupported(m) => return Err(CliError::new(&sarg, m)),
            Node::Group => Make::Group,
            Node::Dataset(mut sa) => {
                let sds = (src.format() != Format::N5)
                    .then(|| src.open_dataset(&sp))
                    .transpose()
                    .at(&sarg)?;
                let reference = sds
                    .as_ref()
                    .is_some_and(|d| crate::cmd::ls::is_reference(d.dtype_json().ok().as_ref()));
                if reference && format != Format::Zarr3 {
                    return Err(CliError::new(
                        &sarg,
                        format!(
                            "holds object references, which libn5 writes in the current hdmf-zarr convention only (Zarr v3), not into {}",
                            format.name()
                        ),
                    ));
                }
                let legacy = match &sds {
                    Some(d) if legacy_to_v3 => legacy_dataset(d, &doc, &sarg)?.map(Box::new),
                    _ => None,
                };
                let codec = sds
                    .as_ref()
                    .and_then(|d| d.dtype_json().ok())
                    .and_then(|d| {
                        d.get("object_codec")
                            .and_then(Value::as_str)
                            .map(String::from)
                    });
                if legacy.is_none() && matches!(codec.as_deref(), Some("pickle" | "json2")) {
                    return Err(CliError::new(
                        &sarg,
                        format!(
                            "holds {} objects, which are read only (copy it into Zarr v3, which converts hdmf-zarr's to the current convention)",
                            codec.unwrap_or_default()
                        ),
                    ));
                }
                if let Some(l) = &legacy {
                    sa.data_type = l.data_type.clone();
                    if l.dimensions.is_empty() {
                        sa.dimensions = Vec::new();
                        sa.block_size = Vec::new();
                    }
                }
                new_type = Some(sa.data_type.clone());
                names = dimension_names(&src, &sp, &doc, sa.ndim(), format).at(&sarg)?;
                let fields = legacy
                    .as_ref()
                    .map(|l| l.reference_fields.clone())
                    .unwrap_or_default();
                let make = plan_dataset(
                    &request,
                    &sa,
                    &sp,
                    &dp,
                    &sarg,
                    &darg,
                    names.as_deref(),
                    legacy,
                )?;
                if !fields.is_empty() {
                    reference_fields = Some(fields);
                }
                make
            }
        };
        let dataset = matches!(make, Make::Dataset { .. });
        if dataset && format == Format::Hdf5 && dp.is_empty() {
            return Err(CliError::usage(
                &darg,
                "an HDF5 file's root is a group: name the dataset inside the file (FILE.h5/NAME)",
            ));
        }
        let own_keys = matches!(src.format(), Format::N5 | Format::Hdf5);
        let mut attributes = carried(&doc, drop_version, dataset && own_keys);
        // Links are made again, in the destination's own form.
        for key in LINK_KEYS {
            attributes.remove(key);
        }
        if legacy_to_v3 {
            convert_attributes(&mut attributes, new_type.as_ref());
            if let Some(fields) = reference_fields.take() {
                attributes.insert("_REFERENCE_FIELDS".into(), json!(fields));
            }
        }
        if let Some(names) = &names {
            rename_dimensions(&mut attributes, names, src.format(), format, &darg)?;
        }
        if format == Format::N5 {
            check_n5_attributes(&attributes, dataset, &darg)?;
        }
        if format == Format::Hdf5 && dataset {
            // An HDF5 dataset's attributes show its metadata under the N5
            // dataset keys, which cannot be stored.
            check_n5_attributes(&attributes, true, &darg)?;
        }
        nodes.push(Planned {
            rel: rel.clone(),
            make,
            attributes,
        });
    }

    // What is already at the destination must be what the copy makes:
    // checked by reading it, before anything is written.
    if dloc.existing_format().is_some() {
        let there = dloc.open_for_copy(Mode::Read, threads, format, true)?;
        check_destination(&there, &dloc, &nodes)?;
    }
    let dst = dloc.open_for_copy(Mode::Create, threads, format, true)?;
    // Region writes leave out what equals the fill value.
    let sparse = dloc.open_for_copy(Mode::ReadWrite, threads, format, false)?;

    let mut plans: Vec<Plan> = Vec::new();
    // Datasets this copy made, removed again (metadata only, nothing is
    // written into them yet) when the copy cannot be planned, so that a
    // second try with other options does not find them in its way.
    let mut made: Vec<(String, String)> = Vec::new();
    // Legacy datasets converted and written whole.
    let mut converted = 0usize;
    for n in &nodes {
        let sp = join(&sloc.inner, &n.rel);
        let dp = join(&dloc.inner, &n.rel);
        let sarg = sloc.child(&n.rel).arg;
        let darg = dloc.child(&n.rel).arg;
        match &n.make {
            Make::Group => {
                dst.create_group(&dp).at(&darg)?;
            }
            Make::Link(_) => continue,
            Make::Dataset {
                legacy: Some(legacy),
                attrs,
                document,
                ..
            } => {
                if !dst.dataset_exists(&dp).at(&darg)? {
                    create_dataset(&dst, &dp, format, attrs, document).at(&darg)?;
                }
                let ds = dst.open_dataset(&dp).at(&darg)?;
                write_legacy(&ds, &legacy.content).at(&darg)?;
                converted += 1;
            }
            Make::Dataset {
                attrs,
                document,
                by_region,
                legacy: None,
            } => {
                if !dst.dataset_exists(&dp).at(&darg)?
                    && create_dataset(&dst, &dp, format, attrs, document).at(&darg)?
                {
                    made.push((dp.clone(), darg.clone()));
                }
                let on: &Container = if *by_region { &sparse } else { &dst };
                plans.push(Plan {
                    src: src.open_dataset(&sp).at(&sarg)?,
                    dst: on.open_dataset(&dp).at(&darg)?,
                    sarg: sarg.clone(),
                    by_region: *by_region,
                    variable: !attrs.data_type.has_layout(),
                });
            }
        }
        // In a copy in parts, part 0 writes the attributes (and links).
        if !n.attributes.is_empty() && part.is_none_or(|(i, _)| i == 0) {
            dst.set_attributes(&dp, &n.attributes).at(&darg)?;
        }
    }
    // Links, once every node they may lead to is there (one already at
    // the destination is the same link: check_destination said so).
    for n in nodes.iter().filter(|_| part.is_none_or(|(i, _)| i == 0)) {
        let Make::Link(link) = &n.make else {
            continue;
        };
        let dp = join(&dloc.inner, &n.rel);
        let darg = dloc.child(&n.rel).arg;
        if dst.link(&dp).at(&darg)?.is_some() {
            continue;
        }
        let (group, name) = dp.rsplit_once('/').unwrap_or(("", &dp));
        dst.create_link(group, name, &link.source, &link.path)
            .at(&darg)?;
    }

    let jobs = match plan_jobs(&plans, &src) {
        Ok(jobs) => jobs,
        Err(e) => {
            // The error that stopped the copy is the one to report; a
            // dataset that cannot be removed again stays (and one that
            // other parts may be writing into stays anyway).
            if part.is_none() {
                for (dp, _) in made.iter().rev() {
                    dst.remove(dp).ok();
                }
            }
            return Err(e);
        }
    };
    let jobs = match part {
        Some((i, n)) => parts_share(&plans, jobs, i, n),
        None => jobs,
    };
    // A region job holds up to three units' worth of memory: the unit read
    // from the source, its encoded bytes, and for a shard at the array's
    // end the library's buffer of the whole shard. Jobs run in parallel
    // while that stays under about 2 GiB (one job at a time past it).
    let unit_bytes = plans
        .iter()
        .filter(|p| p.by_region)
        .map(|p| p.dst.shard_shape().iter().product::<u64>() * p.dst.data_type().size() as u64)
        .max()
        .unwrap_or(0);
    let mut parallel = workers(g, &src).max(workers(g, &dst));
    if unit_bytes > 0 {
        parallel = parallel.min(((2u64 << 30) / (3 * unit_bytes)).max(1) as usize);
    }
    let bar = progress(jobs.len() as u64, "cp", g.quiet);
    let results = work::map(&jobs, parallel, |(i, pos)| {
        let plan = &plans[*i];
        let r = if plan.by_region {
            copy_unit(plan, pos)
        } else {
            copy_block(plan, pos)
        };
        let r = r.map_err(|failed| {
            let e = match failed {
                Failed::Source(e) if plan.by_region => {
                    return CliError::new(&plan.sarg, e.message());
                }
                Failed::Source(e) => {
                    return CliError::new(
                        sloc.describe(src.store(), &plan.src.block_key(pos)),
                        e.message(),
                    );
                }
                Failed::Destination(e) => e,
            };
            let first: Vec<u64> = if plan.by_region {
                let attrs = plan.dst.attributes();
                pos.iter()
                    .zip(plan.dst.shard_shape())
                    .zip(&attrs.block_size)
                    .map(|((&p, u), &b)| p * u / b as u64)
                    .collect()
            } else {
                pos.clone()
            };
            CliError::new(
                dloc.describe(dst.store(), &plan.dst.block_key(&first)),
                e.message(),
            )
        });
        bar.inc(1);
        r
    })?;
    bar.finish_and_clear();
    let count = |d: Done| results.iter().filter(|r| **r == d).count();
    let sharded = plans.iter().any(|p| {
        let block = &p.dst.attributes().block_size;
        p.dst
            .shard_shape()
            .iter()
            .zip(block)
            .any(|(&s, &b)| s != b as u64)
    });
    let noun = match (format, sharded) {
        (Format::N5, _) => "block",
        (_, true) => "shard",
        _ => "chunk",
    };
    let mut out = Out::new();
    if !g.quiet {
        out.line(&format!(
            "{} -> {}: {}{}, {} written, {} already identical, {} removed",
            sloc.arg,
            dloc.arg,
            part.map(|(i, n)| format!("part {i}/{n}: "))
                .unwrap_or_default(),
            count_of(plans.len() + converted, "dataset"),
            count_of(count(Done::Copied), noun),
            count(Done::Skipped),
            count(Done::Removed)
        ))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}

/// The jobs of part `i` of `n`: the units (shards, chunks or blocks) whose
/// number, counted dimension 0 fastest over the unit grid of every
/// dataset of the copy in listing order, is `i` mod `n`.
fn parts_share(
    plans: &[Plan],
    jobs: Vec<(usize, Vec<u64>)>,
    i: u64,
    n: u64,
) -> Vec<(usize, Vec<u64>)> {
    let grids: Vec<Vec<u64>> = plans
        .iter()
        .map(|p| {
            if p.by_region {
                shard_grid(&p.dst)
            } else {
                p.src.attributes().grid_shape()
            }
        })
        .collect();
    let mut bases = Vec::with_capacity(grids.len());
    let mut total = 0u64;
    for g in &grids {
        bases.push(total);
        total = total.wrapping_add(grid_count(g).unwrap_or(u64::MAX));
    }
    jobs.into_iter()
        .filter(|(d, pos)| bases[*d].wrapping_add(unit_index(pos, &grids[*d])) % n == i)
        .collect()
}

/// `n5 cp SRC DST --pyramid`: `n5 pyramid SRC DST` with the copy's
/// -c, -b, --shard and --format.
fn cp_pyramid(a: &CpArgs, g: &Global) -> CliResult<u8> {
    if a.made.hdf5_shards {
        return Err(CliError::usage(
            "--hdf5-shards",
            "does not go with --pyramid",
        ));
    }
    let sloc = Location::parse(&a.src, g)?;
    let dloc = Location::parse(&a.dst, g)?;
    let (dst_format, out) = pyramid_format(a.made.format.as_deref(), &dloc)?;
    let options = a.pyr.options(
        out,
        a.compression.as_deref(),
        a.block_size.as_deref(),
        a.made.shard.as_deref(),
        false,
        g.threads,
    )?;
    run_build(&sloc, &dloc, dst_format, &options, false, g)
}
