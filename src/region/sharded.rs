//! Region reads of sharded Zarr v3 arrays that fetch only what the region
//! needs: over a network, a shard the region covers whole is one request
//! for the whole object; of a shard it covers in part (and on a local
//! disk, of every shard), the index is read with one range request (a
//! suffix when it is at the end) and then only the inner chunks the region
//! touches, neighbours coalesced into one range ([`shard::coalesce`]).
//! Indexes and inner chunks are fetched by the I/O threads
//! (`io_concurrency` in flight) and decoded by the container's threads, as
//! for any region read; over a network, by the I/O thread that received
//! them, in the order they arrive.

use crate::codec::Compression;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::format::array::ZarrArray;
use crate::format::zarr3::shard::{self, Entry, Run, ShardLayout};
use crate::metadata::DatasetAttributes;
use crate::path;
use crate::pipeline::{with_fetch_ranges, Early, Fetched, Scratch, IO_BUDGET};
use crate::storage::{ByteRange, Version};

use super::{prepare_output, Grid, Planes};

/// One piece of work of a sharded read.
enum Job {
    /// A shard the region covers whole, fetched and decoded whole.
    Whole(usize),
    /// Inner chunks of one shard, fetched as one range.
    Run(usize, Run),
    /// An inner chunk that is not stored (or whose shard is not): the fill
    /// value.
    Fill(usize),
}

impl Dataset {
    /// [`Dataset::read_region`] of a sharded Zarr v3 array whose shards
    /// have `layout` (see the module's description). Entries of an index
    /// are checked as [`ShardLayout::decode_index`] does, and an inner
    /// chunk whose range comes back short (beyond the shard's end) is an
    /// error naming the shard and the inner chunk.
    pub(super) fn read_region_sharded(
        &self,
        z: &ZarrArray,
        layout: &ShardLayout,
        offset: &[u64],
        shape: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        let shard_attrs = z.outer_attributes()?;
        let elem = shard_attrs.data_type.size();
        let n = shard_attrs.ndim();
        let shards = Grid::new(&shard_attrs, offset, shape)?;
        // The grid of the shards' inner chunks (nested shards are decoded
        // whole), N5 order.
        let chunk_shape: Vec<u64> = layout.inner.shape.iter().rev().copied().collect();
        let chunk_attrs = DatasetAttributes::new(
            shard_attrs.dimensions.clone(),
            chunk_shape.iter().map(|&c| c as u32).collect(),
            shard_attrs.data_type,
            Compression::Raw,
        )?;
        let chunks = Grid::new(&chunk_attrs, offset, shape)?;
        let shard_shape = z.shard_shape();
        let store = self.container().store();
        let io = self.io_concurrency();
        let keys: Vec<String> = (0..shards.total)
            .map(|i| path::join(self.path(), &z.outer_key(&shards.grid_pos(i))))
            .collect();
        let what = |s: usize| {
            format!(
                "{} of dataset '{}'",
                store.describe(&keys[s]),
                path::display(self.path())
            )
        };
        // Over a network, a shard the region covers whole is one request.
        // On a local disk it is read like a shard covered in part: its
        // index, then its inner chunks in ranges of at most
        // `COALESCE_MAX`, so that decoding starts after the first few MiB
        // rather than a whole shard, the threads share every shard's work,
        // and the budget of bytes held ahead keeps several reads on the
        // disk (a whole shard can be most of the budget).
        let remote = store.capabilities().remote;
        let mut whole = Vec::with_capacity(shards.total);
        for i in 0..shards.total {
            let o = shards.overlap(i)?;
            whole.push(remote && o.extent == o.block_shape);
        }

        // The indexes of the shards read in part (`None`: no such shard).
        let partial: Vec<usize> = (0..shards.total).filter(|&i| !whole[i]).collect();
        let index_keys: Vec<Option<String>> =
            partial.iter().map(|&i| Some(keys[i].clone())).collect();
        let index_ranges = vec![Some(layout.index_request()); partial.len()];
        let mut indexes: Vec<Option<Vec<Option<Entry>>>> = vec![None; shards.total];
        let mut versions: Vec<Option<Version>> = vec![None; shards.total];
        with_fetch_ranges(
            store,
            &index_keys,
            &index_ranges,
            io,
            layout.index_bytes(),
            None,
            |fetch| {
                for (j, &i) in partial.iter().enumerate() {
                    if let Fetched::Bytes(bytes) = fetch.take(j)? {
                        // A suffix read does not tell the shard's length;
                        // each entry is checked by what its range returns.
                        indexes[i] = Some(layout.decode_index(&bytes, u64::MAX, &what(i))?);
                        versions[i] = fetch.version(j);
                    }
                }
                Ok(())
            },
        )?;

        // The inner chunks each partly read shard must give, and those
        // that read as the fill value.
        let mut wanted: Vec<Vec<(usize, Entry)>> = vec![Vec::new(); shards.total];
        let mut jobs: Vec<Job> = Vec::new();
        for c in 0..chunks.total {
            let pos = chunks.grid_pos(c);
            let shard_pos: Vec<u64> = (0..n)
                .map(|d| pos[d] * chunk_shape[d] / shard_shape[d])
                .collect();
            let s = shards
                .number(&shard_pos)
                .expect("an inner chunk the region touches lies in a shard it touches");
            let at = entry_position(&pos, &chunk_shape, &shard_shape);
            if whole[s] {
                continue;
            }
            match indexes[s].as_ref().and_then(|e| e[layout.number(&at)]) {
                Some(entry) => wanted[s].push((c, entry)),
                None => jobs.push(Job::Fill(c)),
            }
        }
        let mut req_keys: Vec<Option<String>> = vec![None; jobs.len()];
        let mut req_ranges: Vec<Option<ByteRange>> = vec![None; jobs.len()];
        // What a fetch is expected to bring, for the budget of bytes held
        // ahead (which also bounds the requests in flight): the runs'
        // average, and for whole shards at most a quarter of the budget,
        // so that at least four are in flight (a compressed shard is far
        // smaller than decoded, and what arrives counts as it is).
        let (mut run_bytes, mut runs) = (0u64, 0u64);
        let mut whole_bytes = 0usize;
        for s in 0..shards.total {
            if whole[s] {
                jobs.push(Job::Whole(s));
                req_keys.push(Some(keys[s].clone()));
                req_ranges.push(None);
                whole_bytes = z.outer_bytes().min(IO_BUDGET / 4);
                continue;
            }
            for run in shard::coalesce(
                std::mem::take(&mut wanted[s]),
                shard::COALESCE_GAP,
                shard::COALESCE_MAX,
            ) {
                req_keys.push(Some(keys[s].clone()));
                req_ranges.push(Some(ByteRange::Span {
                    offset: run.offset,
                    len: run.len,
                }));
                run_bytes = run_bytes.saturating_add(run.len);
                runs += 1;
                jobs.push(Job::Run(s, run));
            }
        }
        let average = usize::try_from(run_bytes / runs.max(1)).unwrap_or(IO_BUDGET);
        let expected = average.max(whole_bytes).clamp(1, IO_BUDGET);

        let _prefault = prepare_output(out);
        let out = Planes::new(out, shape, elem);
        let chunk_bytes = layout.inner.chunk_bytes();
        let parts = ShardParts {
            z,
            layout,
            shards: &shards,
            chunks: &chunks,
            chunk_shape: &chunk_shape,
            elem,
        };
        // Job `j`, given what its fetch brought (`None`: nothing stored)
        // and, for a range, the version of the shard it came from.
        let run_job = |j: usize,
                       fetched: Option<&[u8]>,
                       version: Option<&Version>,
                       buf: &mut Vec<u8>|
         -> Result<()> {
            match &jobs[j] {
                Job::Whole(s) => parts.copy_shard_in(*s, fetched, buf, &out, &what(*s)),
                Job::Fill(c) => {
                    let mut o = chunks.overlap(*c)?;
                    o.block_shape = chunk_shape.clone();
                    buf.resize(chunk_bytes, 0);
                    z.fill_buffer(buf);
                    out.copy_in(buf, &o, elem, false, j);
                    Ok(())
                }
                Job::Run(s, run) => {
                    if let (Some(a), Some(b)) = (&versions[*s], version) {
                        if a != b {
                            // Replaced since its index was read: the
                            // offsets are the old shard's. The new shard
                            // whole.
                            let shard = store.get(&keys[*s]).map_err(|e| e.context(what(*s)))?;
                            return parts.copy_shard_in(*s, shard.as_deref(), buf, &out, &what(*s));
                        }
                    }
                    buf.resize(chunk_bytes, 0);
                    for &(c, entry) in &run.chunks {
                        let mut o = chunks.overlap(c)?;
                        o.block_shape = chunk_shape.clone();
                        // A shard gone since its index was read (deleted)
                        // reads as the fill value.
                        let Some(bytes) = fetched else {
                            z.fill_buffer(buf);
                            out.copy_in(buf, &o, elem, false, c);
                            continue;
                        };
                        let at = entry_position(&o.grid_pos, &chunk_shape, &shard_shape);
                        let start = (entry.offset - run.offset) as usize;
                        let end = start + entry.nbytes as usize;
                        let Some(encoded) = bytes.get(start..end) else {
                            return Err(Error::codec(format!(
                                "{}: inner chunk {at:?} is at bytes {}..+{}, beyond the shard's {} bytes",
                                what(*s),
                                entry.offset,
                                entry.nbytes,
                                run.offset + bytes.len() as u64
                            )));
                        };
                        layout
                            .inner
                            .decode(encoded, buf)
                            .map_err(|e| e.context(format!("{}: inner chunk {at:?}", what(*s))))?;
                        out.copy_in(buf, &o, elem, false, c);
                    }
                    Ok(())
                }
            }
        };
        // Over a network, the I/O thread that received a shard or a run
        // decodes it at once, in whatever order they arrive, at most
        // `threads` of them at a time (as for N5 blocks, see
        // `Dataset::read_region`); the container's threads take the rest.
        let scratch = Scratch::new(self.container().options().threads);
        let use_early = |j: usize, bytes: &[u8], version: Option<&Version>| -> Result<bool> {
            scratch
                .with(|buf| run_job(j, Some(bytes), version, buf))
                .map(|()| true)
        };
        let early: Option<Early> = remote.then_some(&use_early);
        with_fetch_ranges(
            store,
            &req_keys,
            &req_ranges,
            io,
            expected,
            early,
            |fetch| {
                let result =
                    self.container()
                        .pool()
                        .run(jobs.len(), Vec::new, |buf: &mut Vec<u8>, j| {
                            match fetch.take(j)? {
                                Fetched::Used => Ok(()),
                                Fetched::Missing => run_job(j, None, None, buf),
                                Fetched::Bytes(bytes) => {
                                    let version = fetch.version(j);
                                    let done = run_job(j, Some(&bytes), version.as_ref(), buf);
                                    fetch.recycle(bytes);
                                    done
                                }
                            }
                        });
                if result.is_err() {
                    fetch.cancel();
                }
                result
            },
        )
    }
}

/// What the jobs of one sharded read share to copy shards into the region.
struct ShardParts<'a> {
    z: &'a ZarrArray,
    layout: &'a ShardLayout,
    /// The shards the region touches.
    shards: &'a Grid<'a>,
    /// The inner chunks the region touches.
    chunks: &'a Grid<'a>,
    /// An inner chunk's shape, N5 order.
    chunk_shape: &'a [u64],
    elem: usize,
}

impl ShardParts<'_> {
    /// Copies every inner chunk of shard `s` that the region touches into
    /// `out`, decoding each from `shard`, the shard's bytes read whole
    /// (one version of it), into `buf` (one inner chunk), or the fill value
    /// when the shard or the inner chunk is not stored. `what` names the
    /// shard in errors.
    fn copy_shard_in(
        &self,
        s: usize,
        shard: Option<&[u8]>,
        buf: &mut Vec<u8>,
        out: &Planes,
        what: &str,
    ) -> Result<()> {
        let layout = self.layout;
        let entries = match shard {
            Some(bytes) => Some(layout.whole_index(bytes, what)?),
            None => None,
        };
        let shard_pos = self.shards.grid_pos(s);
        let n = shard_pos.len();
        let chunks = self.chunks;
        buf.resize(layout.inner.chunk_bytes(), 0);
        for (i, entry) in (0..layout.chunks()).map(|i| (i, entries.as_ref().and_then(|e| e[i]))) {
            // The inner chunk's N5 grid position, and its number among the
            // region's inner chunks.
            let at = layout.position(i);
            let grid_pos: Vec<u64> = (0..n)
                .map(|d| shard_pos[d] * layout.per_shard[n - 1 - d] + at[n - 1 - d])
                .collect();
            let Some(c) = chunks.number(&grid_pos) else {
                continue;
            };
            let mut o = chunks.overlap(c)?;
            o.block_shape = self.chunk_shape.to_vec();
            match (entry, shard) {
                (Some(e), Some(bytes)) => {
                    // decode_index checked the entry against the shard.
                    let encoded = &bytes[e.offset as usize..(e.offset + e.nbytes) as usize];
                    layout
                        .inner
                        .decode(encoded, buf)
                        .map_err(|err| err.context(format!("{what}: inner chunk {at:?}")))?;
                }
                _ => self.z.fill_buffer(buf),
            }
            out.copy_in(buf, &o, self.elem, false, c);
        }
        Ok(())
    }
}

/// The position (C order) in its shard of the inner chunk at the N5 grid
/// position `pos` of a grid of `chunk` chunks in shards of `shard`.
fn entry_position(pos: &[u64], chunk: &[u64], shard: &[u64]) -> Vec<u64> {
    (0..pos.len())
        .rev()
        .map(|d| pos[d] * chunk[d] % shard[d] / chunk[d])
        .collect()
}
