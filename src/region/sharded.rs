//! Region I/O of sharded arrays ([`ShardedBlocks`]). Writes go a shard at
//! a time: a shard the region covers is encoded from the region alone, one
//! it covers in part is changed atomically. Reads fetch only what the
//! region needs. Over a network, a shard whose every inner chunk the region
//! touches (one it covers whole, or all but the edges of its outer chunks)
//! is one request for the whole object, made at once, with the index
//! inside. Of a shard it touches in part (and on a local disk, of every
//! shard) the index is read with one range request (a suffix when it is at
//! the end), and as soon as it arrives, the inner chunks the region touches
//! are requested, neighbours coalesced into one range ([`coalesce`]);
//! over a network, a shard whose index an earlier read of the same open
//! array kept ([`crate::format::array::IndexCache`]) and which lists every
//! inner chunk touched has its ranges requested at once, each checked by
//! the version it comes with.
//! All of it is one fetch that grows as indexes arrive
//! ([`with_growing_fetch`]): `io_concurrency` requests in flight within
//! one budget of bytes, decoded by the container's threads as for any
//! region read, and over a network by the I/O thread that received them,
//! in the order they arrive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::codec::Compression;
use crate::dataset::Dataset;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::{
    coalesce, keeps_indexes, replaced, Array, Entry, IndexFrom, Known, Run, ShardedBlocks,
    COALESCE_GAP, COALESCE_MAX, COALESCE_MAX_REMOTE,
};
use crate::format::n5::metadata::DatasetAttributes;
use crate::geometry::{copy_box, fill_with, Placement};
use crate::path;
use crate::pipeline::{
    with_growing_fetch, with_upload, Early, EarlyUse, Fetched, Offer, Upload, IO_BUDGET,
};
use crate::storage::{ByteRange, Version};

use super::{prepare_output, Grid, Overlap, Planes};

/// A shard whose every inner chunk a read over a network touches, but
/// which it does not cover whole, is fetched whole only when it holds at
/// most this many bytes decoded: it is held whole until decoded, and a
/// large one read in ranges costs few requests more.
const WHOLE_SHARD_MAX: usize = 2 * IO_BUDGET;

/// What one request of a sharded read fetches, by the request's index.
enum Job {
    /// The index of a shard read in part (taken as it arrives; it tells
    /// which ranges to request next).
    Index,
    /// A shard fetched and decoded whole.
    Whole(usize),
    /// Inner chunks of one shard, fetched as one range, and the index
    /// their offsets came from.
    Run(usize, Run, IndexFrom),
}

/// Whether the read whose overlap with a shard is `o` touches every inner
/// chunk (of shape `chunk`, N5 order) of the shard within the array.
fn touches_every_chunk(o: &Overlap, chunk: &[u64]) -> bool {
    (0..chunk.len()).all(|d| {
        let last = (o.in_block[d] + o.extent[d]).saturating_sub(1);
        o.in_block[d] < chunk[d] && last / chunk[d] == o.block_shape[d].saturating_sub(1) / chunk[d]
    })
}

impl Dataset {
    /// [`Dataset::read_region`] of a sharded array (see the module's
    /// description). Entries of an index are checked as
    /// [`ShardedBlocks::decode_index`] does, and an inner chunk whose range
    /// comes back short (beyond the shard's end) is an error naming the
    /// shard and the inner chunk.
    pub(super) fn read_region_sharded(
        &self,
        array: &dyn Array,
        sharded: &dyn ShardedBlocks,
        offset: &[u64],
        shape: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        // The grids of the shards and of their inner chunks (nested shards
        // are decoded whole), N5 order.
        let attrs = array.attributes();
        let shard_shape = array.shard_shape();
        let shard_attrs = grid_of(&attrs, &shard_shape)?;
        let elem = shard_attrs.data_type.size();
        let n = shard_attrs.ndim();
        let shards = Grid::new(&shard_attrs, offset, shape)?;
        let chunk_shape = sharded.chunk_shape();
        let chunk_attrs = grid_of(&attrs, &chunk_shape)?;
        let chunks = Grid::new(&chunk_attrs, offset, shape)?;
        let fill = array.fill();
        let store = sharded.store();
        let io = self.io_concurrency();
        let keys: Vec<String> = (0..shards.total)
            .map(|i| sharded.shard_key(&shards.grid_pos(i)))
            .collect();
        let what = |s: usize| {
            format!(
                "{} of dataset '{}'",
                store.describe(&keys[s]),
                path::display(self.path())
            )
        };
        // Over a network, a shard whose every inner chunk the region needs
        // is one request (no index first, no round trip before its bytes
        // come). On a local disk it is read like a shard touched in part:
        // its index, then its inner chunks in ranges of at most
        // `COALESCE_MAX` (over a network `COALESCE_MAX_REMOTE`), so that
        // decoding starts after the first few MiB rather than a whole
        // shard, the threads share every shard's work, and the budget of
        // bytes held ahead keeps several reads on the disk (a whole shard
        // can be most of the budget).
        let remote = store.capabilities().remote;
        let mut whole = Vec::with_capacity(shards.total);
        for i in 0..shards.total {
            let o = shards.overlap(i)?;
            let covered = o.extent == o.block_shape;
            whole.push(
                remote
                    && (covered
                        || (touches_every_chunk(&o, &chunk_shape)
                            && sharded.shard_bytes() <= WHOLE_SHARD_MAX)),
            );
        }
        // The inner chunks the region touches in each shard read in part:
        // their number in `chunks` and their place in the shard's index.
        let mut touched: Vec<Vec<(usize, usize)>> = vec![Vec::new(); shards.total];
        for c in 0..chunks.total {
            let pos = chunks.grid_pos(c);
            let shard_pos: Vec<u64> = (0..n)
                .map(|d| pos[d] * chunk_shape[d] / shard_shape[d])
                .collect();
            let s = shards
                .number(&shard_pos)
                .expect("an inner chunk the region touches lies in a shard it touches");
            if !whole[s] {
                let within = within_shard(&pos, &chunk_shape, &shard_shape);
                touched[s].push((c, sharded.entry_number(&within)));
            }
        }

        // Over a network, the indexes kept from earlier reads that list
        // every inner chunk the region touches in their shard (one that
        // lists one missing may be older than the chunk, and is read again).
        let indexes = sharded.indexes();
        let keeping = keeps_indexes(store.capabilities());
        let mut kept: Vec<Option<Known>> = vec![None; shards.total];
        if keeping {
            for s in (0..shards.total).filter(|&i| !whole[i]) {
                kept[s] = indexes.listing(&keys[s], touched[s].iter().map(|&(_, at)| at));
            }
        }
        // The inner chunks `wanted` of one shard as coalesced ranges.
        let runs = |wanted: Vec<(usize, Entry)>| {
            coalesce(
                wanted,
                COALESCE_GAP,
                if remote {
                    COALESCE_MAX_REMOTE
                } else {
                    COALESCE_MAX
                },
            )
        };

        // The first requests: the indexes of the shards read in part, the
        // shards read whole, and the ranges of the shards whose indexes
        // were kept. The ranges of other inner chunks follow as the indexes
        // arrive.
        let partial: Vec<usize> = (0..shards.total)
            .filter(|&i| !whole[i] && kept[i].is_none())
            .collect();
        let mut first_keys: Vec<Option<String>> = Vec::new();
        let mut first_ranges: Vec<Option<ByteRange>> = Vec::new();
        let mut first_jobs: Vec<Arc<Job>> = Vec::new();
        for &s in &partial {
            first_keys.push(Some(keys[s].clone()));
            first_ranges.push(Some(sharded.index_request()));
            first_jobs.push(Arc::new(Job::Index));
        }
        let mut whole_bytes = 0;
        for s in (0..shards.total).filter(|&i| whole[i]) {
            first_keys.push(Some(keys[s].clone()));
            first_ranges.push(None);
            first_jobs.push(Arc::new(Job::Whole(s)));
            // What a whole shard is expected to bring, for the budget of
            // bytes held ahead (which also bounds the requests in flight):
            // at most a quarter of the budget, so that at least four are
            // in flight (a compressed shard is far smaller than decoded,
            // and what arrives counts as it is). Ranges count as their
            // length.
            whole_bytes = sharded.shard_bytes().min(IO_BUDGET / 4);
        }
        for (s, known) in kept.iter().enumerate() {
            let Some(known) = known else { continue };
            let wanted = touched[s]
                .iter()
                .filter_map(|&(c, at)| known.entries[at].map(|e| (c, e)))
                .collect();
            for run in runs(wanted) {
                first_keys.push(Some(keys[s].clone()));
                first_ranges.push(Some(ByteRange::Span {
                    offset: run.offset,
                    len: run.len,
                }));
                let from = IndexFrom::Kept(known.version.clone());
                first_jobs.push(Arc::new(Job::Run(s, run, from)));
            }
        }
        // Every request's job, by the request's index; the I/O threads
        // look a job up when its bytes arrive, while `body` adds more.
        let jobs = Mutex::new(first_jobs);
        let job = |j: usize| Arc::clone(&jobs.lock().unwrap_or_else(|p| p.into_inner())[j]);

        let _prefault = prepare_output(out, self.prefault_from());
        let out = Planes::new(out, shape, elem);
        let chunk_bytes = sharded.chunk_bytes();
        let parts = ShardParts {
            fill,
            sharded,
            shards: &shards,
            chunks: &chunks,
            chunk_shape: &chunk_shape,
            elem,
        };
        // Shards read again whole because a run found them replaced.
        let reread: Vec<AtomicBool> = (0..shards.total).map(|_| AtomicBool::new(false)).collect();
        // A whole shard or a run, given what its fetch brought (`None`:
        // nothing stored) and, for a range, the version of the shard it
        // came from.
        // The `piece` (k, n) is the k-th of n slices of its inner chunks.
        let run_job = |job: &Job,
                       fetched: Option<&[u8]>,
                       version: Option<&Version>,
                       buf: &mut Vec<u8>,
                       piece: (usize, usize)|
         -> Result<()> {
            match job {
                Job::Index => Ok(()),
                Job::Whole(s) => parts.copy_shard_in(*s, fetched, buf, &out, &what(*s), piece),
                Job::Run(s, run, from) => {
                    if replaced(from, version) {
                        // Replaced since its index was read: the offsets
                        // are the old shard's. The new shard whole (a run
                        // that finds it so is not read in pieces), every
                        // inner chunk the region touches in it, once: the
                        // shard's other runs that find it so are done.
                        indexes.forget(&keys[*s]);
                        if reread[*s].swap(true, Ordering::AcqRel) {
                            return Ok(());
                        }
                        let shard = store.get(&keys[*s]).map_err(|e| e.context(what(*s)))?;
                        let all = (0, 1);
                        return parts.copy_shard_in(
                            *s,
                            shard.as_deref(),
                            buf,
                            &out,
                            &what(*s),
                            all,
                        );
                    }
                    buf.resize(chunk_bytes, 0);
                    for &(c, entry) in &run.chunks[slice(run.chunks.len(), piece)] {
                        let mut o = chunks.overlap(c)?;
                        o.block_shape = chunk_shape.clone();
                        // A shard gone since its index was read (deleted)
                        // reads as the fill value.
                        let Some(bytes) = fetched else {
                            fill_with(buf, fill);
                            out.copy_in(buf, &o, elem, false, c);
                            continue;
                        };
                        let at = c_order(&within_shard(&o.grid_pos, &chunk_shape, &shard_shape));
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
                        let chunk = sharded
                            .chunk_view(encoded, buf)
                            .map_err(|e| e.context(format!("{}: inner chunk {at:?}", what(*s))))?;
                        out.copy_in(chunk, &o, elem, false, c);
                    }
                    Ok(())
                }
            }
        };
        // An inner chunk that reads as the fill value.
        let fill = |c: usize, buf: &mut Vec<u8>| -> Result<()> {
            let mut o = chunks.overlap(c)?;
            o.block_shape = chunk_shape.clone();
            buf.resize(chunk_bytes, 0);
            fill_with(buf, fill);
            out.copy_in(buf, &o, elem, false, c);
            Ok(())
        };
        // Over a network, the I/O thread that received a shard or a run
        // decodes it at once, in whatever order they arrive, at most
        // `threads` at a time (as for N5 blocks, see
        // `Dataset::read_region` and `Early`), in pieces of a few inner
        // chunks that the threads decoding share: a whole shard, often the
        // last to arrive, is then decoded by all of them rather than by
        // one while the others wait. The container's threads take the
        // rest. Indexes go to `body`.
        let use_early = |offer: Offer, buf: Option<&mut Vec<u8>>| -> Result<EarlyUse> {
            let job = job(offer.index);
            let pieces = match &*job {
                Job::Index => return Ok(EarlyUse::HandOn),
                Job::Whole(_) => sharded.chunks_per_shard().div_ceil(PIECE_CHUNKS),
                Job::Run(_, _, from) if replaced(from, offer.version) => 1,
                Job::Run(_, run, _) => run.chunks.len().div_ceil(PIECE_CHUNKS),
            };
            let Some(buf) = buf else {
                return Ok(EarlyUse::Parts(pieces));
            };
            run_job(
                &job,
                Some(offer.bytes),
                offer.version,
                buf,
                (offer.part, pieces.max(1)),
            )
            .map(|()| EarlyUse::Used)
        };
        let early = remote.then_some(Early {
            work: &use_early,
            buffers: self.container().options().threads,
        });
        with_growing_fetch(
            store,
            &first_keys,
            &first_ranges,
            io,
            whole_bytes,
            early,
            |fetch| {
                // Each index as it arrives, in order: the ranges it
                // locates are requested at once.
                let mut fills: Vec<usize> = Vec::new();
                let requested = (|| -> Result<()> {
                    for (j, &s) in partial.iter().enumerate() {
                        let (index, version) = match fetch.take(j)? {
                            Fetched::Bytes(bytes) => {
                                // A suffix read does not tell the shard's
                                // length; each entry is checked by what its
                                // range returns.
                                let index: Arc<[Option<Entry>]> =
                                    sharded.decode_index(&bytes, u64::MAX, &what(s))?.into();
                                fetch.recycle(bytes);
                                let version = fetch.version(j);
                                if keeping {
                                    indexes.keep(&keys[s], version.as_ref(), &index);
                                }
                                (Some(index), version)
                            }
                            Fetched::Missing => (None, None),
                            Fetched::Used => {
                                return Err(Error::new(
                                    ErrorKind::Internal,
                                    format!("{}: the shard's index was used up early", what(s)),
                                ))
                            }
                        };
                        let mut wanted = Vec::new();
                        for &(c, at) in &touched[s] {
                            match index.as_ref().and_then(|e| e[at]) {
                                Some(entry) => wanted.push((c, entry)),
                                None => fills.push(c),
                            }
                        }
                        for run in runs(wanted) {
                            let range = ByteRange::Span {
                                offset: run.offset,
                                len: run.len,
                            };
                            // The job first: its bytes may arrive before
                            // `push` returns.
                            jobs.lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(Arc::new(Job::Run(s, run, IndexFrom::Read(version.clone()))));
                            fetch.push(Some(keys[s].clone()), Some(range));
                        }
                    }
                    Ok(())
                })();
                fetch.close();
                requested?;
                let requests = jobs.lock().unwrap_or_else(|p| p.into_inner()).len();
                let result = self.container().pool().run(
                    requests + fills.len(),
                    Vec::new,
                    |buf: &mut Vec<u8>, j| {
                        if j >= requests {
                            return fill(fills[j - requests], buf);
                        }
                        let job = job(j);
                        if let Job::Index = *job {
                            return Ok(());
                        }
                        match fetch.take(j)? {
                            Fetched::Used => Ok(()),
                            Fetched::Missing => run_job(&job, None, None, buf, (0, 1)),
                            Fetched::Bytes(bytes) => {
                                let version = fetch.version(j);
                                let all = (0, 1);
                                let done = run_job(&job, Some(&bytes), version.as_ref(), buf, all);
                                fetch.recycle(bytes);
                                done
                            }
                        }
                    },
                );
                if result.is_err() {
                    fetch.cancel();
                }
                result
            },
        )
    }
}

impl Dataset {
    /// [`Dataset::write_region`] of a sharded array: each shard the region
    /// touches is written once, by the container's threads in parallel (on
    /// a network store, sent by I/O threads while the next ones are
    /// encoded). A shard the region covers whole is encoded from the region
    /// alone, inner chunk by inner chunk (up to the array's end, the fill
    /// value beyond it); one it covers in part is read, changed and written
    /// back atomically with respect to other writers
    /// ([`ShardedBlocks::merge_shard`]).
    pub(super) fn write_region_sharded(
        &self,
        array: &dyn Array,
        sharded: &dyn ShardedBlocks,
        offset: &[u64],
        shape: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let full = array.shard_shape();
        let attrs = grid_of(&array.attributes(), &full)?;
        let elem = attrs.data_type.size();
        let grid = Grid::new(&attrs, offset, shape)?;
        let inner = sharded.chunk_shape();
        let fill = array.fill();
        let store = sharded.store();
        let write = |upload: Option<&Upload>| {
            self.container().pool().run(
                grid.total,
                || (Vec::new(), Vec::new()),
                |(buf, scratch): &mut (Vec<u8>, Vec<u8>), i| {
                    let mut o = grid.overlap(i)?;
                    let whole = o.extent == o.block_shape;
                    o.block_shape = full.clone();
                    let pos = o.grid_pos.clone();
                    let place = |buf: &mut [u8]| {
                        copy_box(
                            data,
                            Placement {
                                shape,
                                offset: &o.in_region,
                            },
                            buf,
                            Placement {
                                shape: &o.block_shape,
                                offset: &o.in_block,
                            },
                            &o.extent,
                            elem,
                        )
                    };
                    if !whole {
                        return sharded.merge_shard(&pos, &mut |b| place(b));
                    }
                    let key = sharded.shard_key(&pos);
                    // This array's reads need not try an index it kept of
                    // the shard before (its version would tell them).
                    sharded.indexes().forget(&key);
                    let mut out = upload.map_or_else(|| std::mem::take(scratch), Upload::buffer);
                    out.clear();
                    let keep = if o.extent == full {
                        // A whole shard inside the array: each inner chunk
                        // is gathered from the region and encoded.
                        let n = full.len();
                        let (zero, mut at) = (vec![0u64; n], vec![0u64; n]);
                        sharded.encode_shard_from(&pos, &mut out, &mut |p, chunk| {
                            for d in 0..n {
                                at[d] = o.in_region[d] + p[d] * inner[d];
                            }
                            let from = Placement { shape, offset: &at };
                            let to = Placement {
                                shape: &inner,
                                offset: &zero,
                            };
                            copy_box(data, from, chunk, to, &inner, elem);
                        })
                    } else {
                        // A shard past the array's end: the fill value
                        // beyond it.
                        buf.resize(sharded.shard_bytes(), 0);
                        fill_with(buf, fill);
                        place(buf);
                        sharded.encode_shard(&pos, buf, &mut out)
                    }
                    .map_err(|e| e.context(store.describe(&key)))?;
                    // Written (or deleted) by an I/O thread, or here.
                    match (upload, keep) {
                        (Some(upload), true) => upload.put(key, out),
                        (Some(upload), false) => upload.delete(key),
                        (None, true) => {
                            let put = store.put(&key, &[&out]);
                            *scratch = out;
                            put
                        }
                        (None, false) => {
                            *scratch = out;
                            store.delete(&key).map(|_| ())
                        }
                    }
                },
            )
        };
        // On a network store, the I/O threads send the shards while the
        // container's threads encode the next ones.
        if store.capabilities().remote && grid.total > 1 {
            with_upload(store, self.io_concurrency(), |upload| write(Some(upload)))
        } else {
            write(None)
        }
    }
}

/// What the jobs of one sharded read share to copy shards into the region.
struct ShardParts<'a> {
    /// One element of the fill value.
    fill: &'a [u8],
    sharded: &'a dyn ShardedBlocks,
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
    /// when the shard or the inner chunk is not stored; of the shard's
    /// inner chunks (in the order of its index) only the slice `piece`
    /// (see [`slice`]). `what` names the shard in errors.
    fn copy_shard_in(
        &self,
        s: usize,
        shard: Option<&[u8]>,
        buf: &mut Vec<u8>,
        out: &Planes,
        what: &str,
        piece: (usize, usize),
    ) -> Result<()> {
        let sharded = self.sharded;
        let entries = match shard {
            Some(bytes) => Some(sharded.whole_index(bytes, what)?),
            None => None,
        };
        let shard_pos = self.shards.grid_pos(s);
        let n = shard_pos.len();
        let chunks = self.chunks;
        // Inner chunks per shard along each dimension.
        let per: Vec<u64> = (0..n)
            .map(|d| self.shards.attrs.block_size[d] as u64 / self.chunk_shape[d])
            .collect();
        buf.resize(sharded.chunk_bytes(), 0);
        let mine = slice(sharded.chunks_per_shard(), piece);
        for (i, entry) in mine.map(|i| (i, entries.as_ref().and_then(|e| e[i]))) {
            // The inner chunk's N5 grid position, and its number among the
            // region's inner chunks.
            let at = sharded.entry_position(i);
            let grid_pos: Vec<u64> = (0..n).map(|d| shard_pos[d] * per[d] + at[d]).collect();
            let Some(c) = chunks.number(&grid_pos) else {
                continue;
            };
            let mut o = chunks.overlap(c)?;
            o.block_shape = self.chunk_shape.to_vec();
            let chunk = match (entry, shard) {
                (Some(e), Some(bytes)) => {
                    // whole_index checked the entry against the shard.
                    let encoded = &bytes[e.offset as usize..(e.offset + e.nbytes) as usize];
                    sharded.chunk_view(encoded, buf).map_err(|err| {
                        err.context(format!("{what}: inner chunk {:?}", c_order(&at)))
                    })?
                }
                _ => {
                    fill_with(buf, self.fill);
                    &buf[..]
                }
            };
            out.copy_in(chunk, &o, self.elem, false, c);
        }
        Ok(())
    }
}

/// Inner chunks per piece of a whole shard or a run that the threads
/// decoding over a network share (see `read_region_sharded`): 64³ chunks
/// of 2-byte elements make pieces of 2 MiB decoded.
const PIECE_CHUNKS: usize = 4;

/// The `k`-th of `n` slices, as equal as can be, of `0..len`.
fn slice(len: usize, (k, n): (usize, usize)) -> std::ops::Range<usize> {
    len * k / n..len * (k + 1) / n
}

/// The position (N5 order, in inner chunks) in its shard of the inner
/// chunk at the N5 grid position `pos` of a grid of `chunk` chunks in shards
/// of `shard`.
fn within_shard(pos: &[u64], chunk: &[u64], shard: &[u64]) -> Vec<u64> {
    (0..pos.len())
        .map(|d| pos[d] * chunk[d] % shard[d] / chunk[d])
        .collect()
}

/// `v` in C order (reversed), as messages name inner chunks.
fn c_order(v: &[u64]) -> Vec<u64> {
    v.iter().rev().copied().collect()
}

/// The grid of boxes of `shape` (shards, or their inner chunks) over an
/// array with `attrs` (N5 order).
fn grid_of(attrs: &DatasetAttributes, shape: &[u64]) -> Result<DatasetAttributes> {
    let block_size = shape
        .iter()
        .map(|&s| {
            u32::try_from(s).map_err(|_| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!("a shard of {s} elements along one dimension is more than 2^32-1"),
                )
            })
        })
        .collect::<Result<Vec<u32>>>()?;
    DatasetAttributes::new(
        attrs.dimensions.clone(),
        block_size,
        attrs.data_type.clone(),
        Compression::Raw,
    )
}
