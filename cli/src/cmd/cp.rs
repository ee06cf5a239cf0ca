//! `n5 cp`: copy a dataset or a group tree (groups, attributes, datasets)
//! into another place or container, optionally with another compression or
//! block size (re-chunking), block by block in parallel. Resumable: a block
//! whose decoded content is already at the destination is not written again.
//! Source and destination may be any location kind (a local path, s3://,
//! gs://; https:// as a source only); from a store that cannot list (plain
//! HTTP(S)), a dataset's grid positions are probed one by one.

use clap::Args;
use n5::{Compression, DataType, Dataset, DatasetAttributes, Mode};
use serde_json::{Map, Value};

use crate::cmd::common::{
    blocks_to_visit, can_list, grid_positions, in_grid, node, stored_blocks, workers, Blocks, Node,
    DATASET_KEYS,
};
use crate::cmd::ls::cannot_list;
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::{join, Location};
use crate::output::{count as count_of, progress, Out};
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
    /// all-zero blocks are then not stored).
    #[arg(long, short, value_name = "LIST")]
    pub block_size: Option<String>,
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
    /// Whether the block grids differ (a re-chunking copy).
    rechunk: bool,
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

/// Copy (or check) one block: the `pos` of `plan.dst`'s grid for a
/// re-chunking copy, of both grids otherwise.
fn copy_block(plan: &Plan, pos: &[u64]) -> n5::Result<Done> {
    let want = if plan.rechunk {
        let dattrs = plan.dst.attributes();
        let shape = plan.dst.block_shape(pos)?;
        let offset: Vec<u64> = pos
            .iter()
            .zip(&dattrs.block_size)
            .map(|(&p, &b)| p * b as u64)
            .collect();
        let n: u64 = shape.iter().product();
        let mut buf = vec![0u8; n as usize * dattrs.data_type.size()];
        plan.src.read_region(&offset, &shape, &mut buf)?;
        if buf.iter().all(|&b| b == 0) {
            Content::Missing
        } else {
            Content::Numeric(buf)
        }
    } else {
        read_content(&plan.src, pos)?
    };
    // A destination block that cannot be read is simply rewritten.
    let have = read_content(&plan.dst, pos).ok();
    if have.as_ref() == Some(&want) {
        return Ok(if want == Content::Missing {
            Done::Absent
        } else {
            Done::Skipped
        });
    }
    write_content(&plan.dst, pos, &want)?;
    Ok(if want == Content::Missing {
        Done::Removed
    } else {
        Done::Copied
    })
}

/// The attributes of `doc` that a copy carries over: all but the N5
/// dataset keys, and but the `"n5"` version when the copy is the
/// destination's root (whose version the destination keeps).
fn carried(doc: &Value, to_root: bool) -> Map<String, Value> {
    doc.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !(to_root && k.as_str() == "n5"))
                .filter(|(k, _)| !DATASET_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `n5 cp SRC DST`.
pub fn cp(a: &CpArgs, g: &Global) -> CliResult<u8> {
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
    let sloc = Location::parse(&a.src, g)?;
    let dloc = Location::parse(&a.dst, g)?;
    let src = sloc.open_n5(Mode::Read, 1, "cp")?;
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
    let mut rels = vec![String::new()];
    match node(&src, &sloc.inner) {
        Node::Broken(m) => return Err(CliError::new(&sloc.arg, m)),
        Node::Dataset(_) => {}
        Node::Group if !can_list(&src) => return Err(cannot_list(&sloc)),
        Node::Group => rels.extend(src.deep_list(&sloc.inner).at(&sloc.arg)?),
    }
    let dst = dloc.open_n5(Mode::Create, 1, "cp")?;

    let mut plans: Vec<Plan> = Vec::new();
    for rel in &rels {
        let sp = join(&sloc.inner, rel);
        let dp = join(&dloc.inner, rel);
        let sarg = sloc.child(rel).arg;
        let darg = dloc.child(rel).arg;
        let doc = src.attributes(&sp).at(&sarg)?;
        match node(&src, &sp) {
            Node::Broken(m) => return Err(CliError::new(&sarg, m)),
            Node::Group => {
                dst.create_group(&dp).at(&darg)?;
            }
            Node::Dataset(sa) => {
                let block: Vec<u32> = match &block_size {
                    None => sa.block_size.clone(),
                    Some(b) if b.len() == sa.ndim() => b
                        .iter()
                        .map(|&x| u32::try_from(x).unwrap_or(u32::MAX))
                        .collect(),
                    Some(b) => {
                        return Err(CliError::usage(
                            &sarg,
                            format!(
                                "--block-size has {} values but this dataset has {} dimensions",
                                b.len(),
                                sa.ndim()
                            ),
                        ))
                    }
                };
                let rechunk = block != sa.block_size;
                if rechunk && !sa.data_type.is_numeric() {
                    return Err(CliError::usage(
                        &sarg,
                        format!("{} datasets cannot be re-chunked", sa.data_type),
                    ));
                }
                let want = DatasetAttributes::new(
                    sa.dimensions.clone(),
                    block,
                    sa.data_type,
                    compression
                        .clone()
                        .unwrap_or_else(|| sa.compression.clone()),
                )
                .map_err(|e| CliError::usage(&darg, e.message()))?;
                let dds = if dst.dataset_exists(&dp).at(&darg)? {
                    let existing = dst.open_dataset(&dp).at(&darg)?;
                    if *existing.attributes() != want {
                        return Err(CliError::new(
                            &darg,
                            "a dataset with other metadata is already there (remove it, or copy with the same options to resume)",
                        ));
                    }
                    existing
                } else {
                    dst.create_dataset(&dp, want).at(&darg)?
                };
                plans.push(Plan {
                    src: src.open_dataset(&sp).at(&sarg)?,
                    dst: dds,
                    rechunk,
                });
            }
        }
        let attrs = carried(&doc, dp.is_empty());
        if !attrs.is_empty() {
            dst.set_attributes(&dp, &attrs).at(&darg)?;
        }
    }

    // The block jobs of every dataset.
    let mut jobs: Vec<(usize, Vec<u64>)> = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let sarg = plan.src.path().to_string();
        if plan.rechunk {
            for pos in grid_positions(&plan.dst.attributes().grid_shape()) {
                jobs.push((i, pos));
            }
        } else if !can_list(&src) {
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
    let bar = progress(jobs.len() as u64, "cp", g.quiet);
    let results = work::map(&jobs, workers(g, &src).max(workers(g, &dst)), |(i, pos)| {
        let plan = &plans[*i];
        let r = copy_block(plan, pos).map_err(|e| {
            CliError::new(
                dloc.describe(dst.store(), &plan.dst.block_key(pos)),
                e.message(),
            )
        });
        bar.inc(1);
        r
    })?;
    bar.finish_and_clear();
    let count = |d: Done| results.iter().filter(|r| **r == d).count();
    let mut out = Out::new();
    if !g.quiet {
        out.line(&format!(
            "{} -> {}: {}, {} written, {} already identical, {} removed",
            sloc.arg,
            dloc.arg,
            count_of(plans.len(), "dataset"),
            count_of(count(Done::Copied), "block"),
            count(Done::Skipped),
            count(Done::Removed)
        ))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}
