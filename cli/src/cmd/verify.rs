//! `n5 verify`: decode every stored block of every dataset below a path, in
//! parallel, and report each one that is corrupt (does not decode),
//! truncated (the file ends early) or mis-sized (its header's shape fits
//! neither the block's extent nor the padded blockSize), and each dataset
//! whose metadata cannot be read. Exit code 3 when anything is bad.
//! Blocks are read through the container's store, so this works on every
//! location kind; where the store cannot list (plain HTTP(S)), a dataset's
//! grid positions are probed one by one, and a group cannot be walked.
//! In a Zarr container every stored chunk is decoded, and in a sharded
//! array every inner chunk of every stored shard; a damaged one is named
//! by its shard's key and its position in the shard.

use std::collections::HashMap;

use clap::Args;
use n5::{block, BlockHeader, BlockMode, Compression, DatasetAttributes, Mode};
use serde_json::{json, Value};

use crate::cmd::common::{
    blocks_of, blocks_to_visit, can_list, node, read_shard_slabs, stored_shards, workers, Blocks,
    Node, Shard,
};
use crate::error::{At, CliError, CliResult, EXIT_BAD_BLOCKS, EXIT_OK};
use crate::location::{join, Location};
use crate::output::{count, progress, Out};
use crate::{work, Global};

/// Arguments of `n5 verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Container, group or dataset.
    pub path: String,
    /// Print one JSON object: {ok, datasets, blocks, outsideGrid, bad: [{path, dataset, grid, kind, message}]}.
    #[arg(long)]
    pub json: bool,
}

/// One bad block or dataset.
#[derive(Clone, Debug)]
struct Problem {
    /// The block file or URL (or the dataset's).
    path: String,
    /// The dataset's path in the container.
    dataset: String,
    /// The block's grid position, if a block.
    grid: Option<Vec<u64>>,
    /// `corrupt`, `truncated`, `mis-sized` or `metadata`.
    kind: &'static str,
    /// What is wrong.
    message: String,
    /// The library's message alone (without where in a shard), to tell
    /// a shard whose every inner chunk fails the same way.
    cause: String,
}

impl Problem {
    fn to_json(&self) -> Value {
        json!({
            "path": self.path,
            "dataset": self.dataset,
            "grid": self.grid,
            "kind": self.kind,
            "message": self.message,
        })
    }
}

/// Whether a decoder's message says that its input ended early; `nbytes`
/// is the block's decoded size.
fn looks_truncated(message: &str, nbytes: usize) -> bool {
    let m = message.to_ascii_lowercase();
    // blosc: "the frame header claims N compressed bytes, the payload has
    // M"; a frame is at most 32 bytes larger than its data, so a larger
    // claim is a corrupt header, not a cut file.
    let number_after = |key: &str| -> Option<u64> {
        let rest = &m[m.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    if let (Some(claimed), Some(has)) = (number_after("claims"), number_after("payload has")) {
        return has < claimed && claimed <= nbytes as u64 + 32;
    }
    [
        "too short",
        "truncated",
        "unexpected end",
        "end of",
        "eof",
        "incomplete",
        "ended early",
        "ends before",
        "but the header announces",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// Check one block file's bytes against the dataset; `Err((kind, message))`
/// when it is bad.
pub fn check_block(
    bytes: &[u8],
    attrs: &DatasetAttributes,
    pos: &[u64],
) -> Result<(), (&'static str, String)> {
    let (header, header_len) = BlockHeader::parse(bytes).map_err(|e| {
        let kind = if looks_truncated(e.message(), 0) {
            "truncated"
        } else {
            "corrupt"
        };
        (kind, e.message().to_string())
    })?;
    let nbytes = header
        .check_in_file(attrs, bytes.len())
        .map_err(|e| ("mis-sized", e.message().to_string()))?;
    if header.mode == BlockMode::Default {
        let nominal = attrs
            .block_shape(pos)
            .map_err(|e| ("mis-sized", e.message().to_string()))?;
        let exact = header
            .size
            .iter()
            .zip(&nominal)
            .all(|(&s, &n)| s as u64 == n);
        if !exact && header.size != attrs.block_size {
            return Err((
                "mis-sized",
                format!(
                    "header shape {:?} is neither the block's extent {nominal:?} nor the blockSize {:?}",
                    header.size, attrs.block_size
                ),
            ));
        }
    }
    let payload = bytes.len() - header_len;
    if attrs.compression == Compression::Raw && payload != nbytes {
        let kind = if payload < nbytes {
            "truncated"
        } else {
            "mis-sized"
        };
        return Err((
            kind,
            format!("raw payload has {payload} bytes but the header announces {nbytes}"),
        ));
    }
    block::decode(bytes, attrs).map_err(|e| {
        let kind = if looks_truncated(e.message(), nbytes) {
            "truncated"
        } else {
            "corrupt"
        };
        (kind, e.message().to_string())
    })?;
    Ok(())
}

/// Decode the block (chunk, or inner chunk of a sharded array) at `pos` of
/// the Zarr array `ds`, which lies in `shard`: whether it is stored, or
/// `Err((kind, where, message))` when it does not decode, `where` naming
/// the chunk (or the inner chunk's position in its shard, C order, as Zarr
/// numbers it).
fn check_zarr_block(
    ds: &n5::Dataset,
    shard: &Shard,
    pos: &[u64],
) -> Result<bool, (&'static str, String, String)> {
    let attrs = ds.attributes();
    let shape = attrs
        .block_shape(pos)
        .map_err(|e| ("corrupt", "block".to_string(), e.message().to_string()))?;
    let n: u64 = shape.iter().product();
    let mut buf = vec![0u8; n as usize * attrs.data_type.size()];
    let sharded = ds
        .shard_shape()
        .iter()
        .zip(&attrs.block_size)
        .any(|(&s, &b)| s != b as u64);
    let within = if sharded {
        let per: Vec<u64> = ds
            .shard_shape()
            .iter()
            .zip(&attrs.block_size)
            .map(|(&s, &b)| s / b as u64)
            .collect();
        let inner: Vec<u64> = pos
            .iter()
            .zip(&shard.pos)
            .zip(&per)
            .map(|((&p, &s), &n)| p - s * n)
            .rev()
            .collect();
        format!("inner chunk {inner:?} of the shard (C order)")
    } else {
        let c_order: Vec<u64> = pos.iter().rev().copied().collect();
        format!("chunk {c_order:?} (C order)")
    };
    ds.read_block_into(pos, &mut buf).map_err(|e| {
        let kind = if looks_truncated(e.message(), buf.len()) {
            "truncated"
        } else {
            "corrupt"
        };
        (kind, within, e.message().to_string())
    })
}

/// Check the stored shard (or chunk) `shard` of the Zarr array `ds`:
/// the blocks (inner chunks) stored in it and its problems. `known` are
/// the blocks its index lists (`None` when the index could not be read
/// while listing, or the store cannot list). The shard is first read
/// whole (one index read); only when that fails, or nothing is known of
/// it, is each block checked alone, to name the damaged ones. When every
/// block fails the same way (a damaged shard index), that is one problem
/// of the shard.
fn check_zarr_shard(
    loc: &Location,
    ds: &n5::Dataset,
    shard: &Shard,
    known: Option<&[Vec<u64>]>,
) -> (usize, Vec<Problem>) {
    if let Some(known) = known {
        if read_shard_slabs(ds, shard, |_| {}).is_ok() {
            return (known.len(), Vec::new());
        }
    }
    let path = loc.describe(ds.container().store(), &shard.key);
    let candidates = match known {
        Some(k) if !k.is_empty() => k.to_vec(),
        _ => blocks_of(ds, shard),
    };
    let mut blocks = 0;
    let mut problems: Vec<Problem> = Vec::new();
    for pos in &candidates {
        match check_zarr_block(ds, shard, pos) {
            Ok(found) => blocks += usize::from(found),
            Err((kind, within, cause)) => {
                blocks += 1;
                // The library's message names the inner chunk when it
                // knows it.
                let message = if cause.contains("chunk") {
                    cause.clone()
                } else {
                    format!("{within}: {cause}")
                };
                problems.push(Problem {
                    path: path.clone(),
                    dataset: ds.path().to_string(),
                    grid: Some(pos.clone()),
                    kind,
                    message,
                    cause,
                });
            }
        }
    }
    let same = problems.iter().all(|p| p.cause == problems[0].cause);
    if problems.len() > 1 && problems.len() == candidates.len() && same {
        let first = &problems[0];
        let one = Problem {
            path: first.path.clone(),
            dataset: first.dataset.clone(),
            grid: None,
            kind: first.kind,
            message: format!(
                "every inner chunk of the shard ({}) fails: {}",
                problems.len(),
                first.cause
            ),
            cause: first.cause.clone(),
        };
        return (blocks, vec![one]);
    }
    (blocks, problems)
}

/// `n5 verify PATH`.
pub fn verify(a: &VerifyArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = loc.open(Mode::Read, 1)?;
    let zarr = c.format() != n5::format::Format::N5;
    if !c.exists(&loc.inner).at(&loc.arg)? {
        return Err(CliError::new(&loc.arg, "no such group or dataset"));
    }
    let mut problems: Vec<Problem> = Vec::new();
    let mut paths = vec![loc.inner.clone()];
    if matches!(node(&c, &loc.inner), Node::Group) {
        if !can_list(&c) {
            return Err(CliError::new(
                &loc.arg,
                "plain HTTP(S) cannot list the datasets of a group; verify each dataset by its path, \
                 or read the data through s3://, gs:// or a local copy",
            ));
        }
        paths.extend(
            c.deep_list(&loc.inner)
                .at(&loc.arg)?
                .into_iter()
                .map(|p| join(&loc.inner, &p)),
        );
    }
    // Every stored block of every dataset: (dataset index, grid position).
    let mut datasets = Vec::new();
    let mut jobs: Vec<(usize, Vec<u64>)> = Vec::new();
    // In a Zarr container: (dataset index, stored shard, the blocks its
    // index lists).
    type ShardJob = (usize, Shard, Option<Vec<Vec<u64>>>);
    let mut shard_jobs: Vec<ShardJob> = Vec::new();
    let mut outside = 0usize;
    for p in paths {
        match node(&c, &p) {
            // Groups, and datasets the N5 API does not open: nothing to decode.
            Node::Group | Node::Unsupported(_) => {}
            Node::Broken(m) => problems.push(Problem {
                path: loc.describe(
                    c.store(),
                    &join(&p, if zarr { "" } else { "attributes.json" }),
                ),
                dataset: p.clone(),
                grid: None,
                kind: "metadata",
                cause: m.clone(),
                message: m,
            }),
            Node::Dataset(_) if zarr => {
                let arg = loc.child(p[loc.inner.len()..].trim_start_matches('/')).arg;
                let ds = c.open_dataset(&p).at(&arg)?;
                // The blocks each shard's index lists (one read per shard),
                // unless an index cannot be read: then block by block.
                let listed: Option<HashMap<Vec<u64>, Vec<Vec<u64>>>> = if can_list(&c) {
                    ds.list_blocks().ok().map(|all| {
                        let unit = ds.shard_shape();
                        let block = ds.attributes().block_size.clone();
                        let mut by_shard: HashMap<Vec<u64>, Vec<Vec<u64>>> = HashMap::new();
                        for pos in all {
                            let s: Vec<u64> = pos
                                .iter()
                                .zip(&block)
                                .zip(&unit)
                                .map(|((&p, &b), &u)| p * b as u64 / u)
                                .collect();
                            by_shard.entry(s).or_default().push(pos);
                        }
                        by_shard
                    })
                } else {
                    None
                };
                match stored_shards(&ds, &arg) {
                    Ok(stored) => {
                        for shard in stored {
                            let known = listed
                                .as_ref()
                                .map(|l| l.get(&shard.pos).cloned().unwrap_or_default());
                            shard_jobs.push((datasets.len(), shard, known));
                        }
                    }
                    Err(e) => problems.push(Problem {
                        path: loc.describe(c.store(), &p),
                        dataset: p.clone(),
                        grid: None,
                        kind: "corrupt",
                        message: format!("cannot list its chunks: {}", e.message),
                        cause: e.message,
                    }),
                }
                datasets.push(ds);
            }
            Node::Dataset(_) => {
                let ds = c.open_dataset(&p).at(&p)?;
                let arg = loc.child(p[loc.inner.len()..].trim_start_matches('/')).arg;
                if !can_list(&c) {
                    // Every grid position, probed; a missing block is no problem.
                    if let Blocks::Probe(all) = blocks_to_visit(&ds, &arg)? {
                        jobs.extend(all.into_iter().map(|b| (datasets.len(), b)));
                    }
                } else {
                    match blocks_to_visit(&ds, &arg) {
                        Ok(Blocks::Listed(inside, out)) => {
                            outside += out.len();
                            jobs.extend(inside.into_iter().map(|b| (datasets.len(), b)));
                        }
                        Ok(Blocks::Probe(_)) => {}
                        Err(e) => problems.push(Problem {
                            path: loc.describe(c.store(), &p),
                            dataset: p.clone(),
                            grid: None,
                            kind: "corrupt",
                            message: format!("cannot list its blocks: {}", e.message),
                            cause: e.message,
                        }),
                    }
                }
                datasets.push(ds);
            }
        }
    }
    let bar = progress((jobs.len() + shard_jobs.len()) as u64, "verify", g.quiet);
    // (block read, its problem): a probed block that is not stored is neither.
    let found: Result<Vec<(bool, Option<Problem>)>, CliError> =
        work::map(&jobs, workers(g, &c), |(i, pos)| {
            let ds = &datasets[*i];
            let key = ds.block_key(pos);
            let problem = |kind, message: String| {
                Some(Problem {
                    path: loc.describe(c.store(), &key),
                    dataset: ds.path().to_string(),
                    grid: Some(pos.clone()),
                    kind,
                    cause: message.clone(),
                    message,
                })
            };
            let r = match c.store().get(&key) {
                Err(e) => (
                    true,
                    problem("corrupt", format!("cannot read: {}", e.message())),
                ),
                // Listed but gone since (or not stored, when probing).
                Ok(None) => (false, None),
                Ok(Some(bytes)) => match check_block(&bytes, &ds.attributes(), pos) {
                    Ok(()) => (true, None),
                    Err((kind, message)) => (true, problem(kind, message)),
                },
            };
            bar.inc(1);
            Ok(r)
        });
    let found = found?;
    let checked = work::map(&shard_jobs, workers(g, &c), |(i, shard, known)| {
        let r = check_zarr_shard(&loc, &datasets[*i], shard, known.as_deref());
        bar.inc(1);
        Ok::<_, CliError>(r)
    })?;
    bar.finish_and_clear();
    let mut blocks = found.iter().filter(|(read, _)| *read).count();
    problems.extend(found.into_iter().filter_map(|(_, p)| p));
    for (n, found) in checked {
        blocks += n;
        problems.extend(found);
    }

    let ok = problems.is_empty();
    let mut out = Out::new();
    if a.json {
        out.json(&json!({
            "ok": ok,
            "datasets": datasets.len(),
            "blocks": blocks,
            "outsideGrid": outside,
            "bad": problems.iter().map(Problem::to_json).collect::<Vec<_>>(),
        }))?;
    } else {
        for p in &problems {
            out.line(&format!("{}: {}: {}", p.path, p.kind, p.message))?;
        }
        let outside_note = if outside > 0 {
            format!(" ({outside} stored outside the grid, not checked)")
        } else {
            String::new()
        };
        out.line(&format!(
            "{}: {}, {}{outside_note}: {}",
            loc.arg,
            count(datasets.len(), "dataset"),
            count(blocks, "block"),
            if ok {
                "ok".to_string()
            } else {
                format!("{} bad", problems.len())
            }
        ))?;
    }
    out.flush()?;
    Ok(if ok { EXIT_OK } else { EXIT_BAD_BLOCKS })
}
