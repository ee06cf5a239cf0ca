//! Region I/O of arrays whose every block is an object of its own
//! ([`ObjectBlocks`]: N5 blocks, unsharded Zarr chunks): the objects a
//! region touches are fetched by key ahead of the threads that decode them
//! and copy them into the region, and for writes, the stored blocks that a
//! region covers in part are fetched ahead, changed and encoded by the
//! container's threads, and sent by I/O threads on network stores.

use crate::dataset::Dataset;
use crate::error::Result;
use crate::format::array::{Array, ObjectBlocks, Order};
use crate::geometry::{copy_box_with, fill_with, swap_copy, swap_in_place, Placement};
use crate::pipeline::{
    with_fetch_ranges, with_lazy_fetch, with_upload, Early, EarlyUse, Fetch, Fetched, Offer, Upload,
};
use crate::storage::ByteRange;

use super::{prepare_output, Grid, Overlap, Part, Planes, UnitRows, Units};

/// Where a block's elements are once its object is at hand.
enum Read {
    /// Not stored: the buffer holds the fill value.
    Missing,
    /// Decoded into the buffer, in this order.
    Decoded(Order),
    /// Stored raw and whole: the elements start at this offset of the
    /// object's bytes, in this order; the buffer is untouched.
    Stored(usize, Order),
}

impl Dataset {
    /// [`Dataset::read_region`] of an array whose blocks are objects: see
    /// the module's description. `grid` holds the blocks the region
    /// touches.
    pub(super) fn read_objects(
        &self,
        array: &dyn Array,
        blocks: &dyn ObjectBlocks,
        grid: &Grid,
        shape: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        let attrs = array.attributes();
        let elem = attrs.data_type.size();
        let fill = array.fill();
        let _prefault = prepare_output(out, self.prefault_from());
        let out = Planes::new(out, shape, elem);
        // An overlap whose block shape is the block's buffer (the whole
        // chunk where a format stores edge chunks whole).
        let overlap = |i: usize| -> Result<Overlap> {
            let mut o = grid.overlap(i)?;
            o.block_shape = blocks.buffer_shape(&o.grid_pos, &o.block_shape);
            Ok(o)
        };
        let block_bytes = attrs.block_num_elements() * elem;
        let units = Units::new(grid, block_bytes);
        let store = blocks.store();
        let remote = store.capabilities().remote;
        // No I/O threads where the decoding threads read best themselves:
        // each finds its block's place as it takes it.
        let by_decoders = blocks.read_by_decoders() && !remote;
        let io = self.io_concurrency();
        // On a network store every block is put into the region by the I/O
        // thread that received it, while its bytes are still in that core's
        // cache and while that thread would only wait for the network: a
        // raw block stored whole is copied at once, any other is decoded
        // first, at most `threads` at a time (see `Early`: a block that
        // finds every decoding buffer in use waits for the thread that
        // holds one, and its own I/O thread fetches on). Handing blocks to
        // the decoding threads instead costs a wake-up and a switch per
        // block, which on a busy machine cost more than a fifth of the CPU
        // time of a compressed read. (From a local disk, whose I/O threads
        // are seldom idle, the decoding threads copy several neighbouring
        // blocks row by row, which is faster there.)
        let use_early = |offer: Offer, buf: Option<&mut Vec<u8>>| -> Result<EarlyUse> {
            let (i, bytes) = (offer.index, offer.bytes);
            let Some(buf) = buf else {
                // Without a buffer only a block stored raw and whole is
                // used (copied as it came); any other asks for one.
                let pos = grid.grid_pos(i);
                let Some((at, order)) = blocks.stored_elements(&pos, bytes)? else {
                    return Ok(EarlyUse::NeedsBuffer);
                };
                let o = overlap(i)?;
                let nbytes = o.block_shape.iter().product::<u64>() as usize * elem;
                out.copy_in(
                    &bytes[at..at + nbytes],
                    &o,
                    elem,
                    order == Order::Swapped,
                    i,
                );
                return Ok(EarlyUse::Used);
            };
            let o = overlap(i)?;
            let nbytes = o.block_shape.iter().product::<u64>() as usize * elem;
            if let Some((at, order)) = blocks.stored_elements(&o.grid_pos, bytes)? {
                out.copy_in(
                    &bytes[at..at + nbytes],
                    &o,
                    elem,
                    order == Order::Swapped,
                    i,
                );
                return Ok(EarlyUse::Used);
            }
            buf.resize(nbytes, 0);
            let order = blocks.decode(&o.grid_pos, bytes, buf)?;
            out.copy_in(&buf[..nbytes], &o, elem, order == Order::Swapped, i);
            Ok(EarlyUse::Used)
        };
        let early = remote.then_some(Early {
            work: &use_early,
            buffers: self.container().options().threads,
        });
        let read_units = |fetch: &Fetch| {
            let init = || (Vec::<Vec<u8>>::new(), Vec::<Fetched>::new());
            let result = self
                .container()
                .pool()
                .run(units.count, init, |(buffers, files), u| {
                    let unit = units.blocks(u);
                    buffers.resize_with(unit.len(), Vec::new);
                    files.resize_with(unit.len(), || Fetched::Missing);
                    // Each block is decoded into its own buffer; blocks are
                    // converted to native order as they are copied into the
                    // region, raw blocks stored whole straight from their
                    // bytes (most of them already on the I/O threads). A
                    // lazy fetch's blocks are all read before any is
                    // decoded (see Fetch::take_run); other fetches' are
                    // taken one by one as they are decoded.
                    let mut found = Vec::with_capacity(unit.len());
                    let taken = fetch.take_run(unit.clone(), &mut files[..unit.len()])?;
                    for (i, (buf, file)) in
                        unit.clone().zip(buffers.iter_mut().zip(files.iter_mut()))
                    {
                        let o = overlap(i)?;
                        let nbytes = o.block_shape.iter().product::<u64>() as usize * elem;
                        if !taken {
                            if let Fetched::Bytes(old) = std::mem::replace(file, Fetched::Missing) {
                                fetch.recycle(old);
                            }
                            *file = fetch.take(i)?;
                        }
                        // Only blocks that are decoded take (and first touch)
                        // a decode buffer.
                        let read = match file {
                            Fetched::Used => continue,
                            Fetched::Bytes(bytes) => {
                                match blocks.stored_elements(&o.grid_pos, bytes)? {
                                    Some((at, order)) => Read::Stored(at, order),
                                    None => {
                                        buf.resize(nbytes, 0);
                                        Read::Decoded(blocks.decode(&o.grid_pos, bytes, buf)?)
                                    }
                                }
                            }
                            Fetched::Missing => {
                                // Every byte is overwritten with the fill value.
                                buf.resize(nbytes, 0);
                                fill_with(buf, fill);
                                Read::Missing
                            }
                        };
                        found.push((o, read, nbytes, i - unit.start));
                    }
                    let parts: Vec<Part> = found
                        .iter()
                        .map(|(o, read, nbytes, k)| {
                            let (buf, file) = (&buffers[*k], &files[*k]);
                            match (read, file) {
                                (Read::Stored(at, order), Fetched::Bytes(file)) => {
                                    (&file[*at..at + nbytes], o, *order == Order::Swapped)
                                }
                                (Read::Decoded(Order::Swapped), _) => (&buf[..], o, true),
                                _ => (&buf[..], o, false),
                            }
                        })
                        .collect();
                    match parts.as_slice() {
                        [] => {}
                        [(src, o, swap)] => out.copy_in(src, o, elem, *swap, u),
                        _ => out.copy_run_in(&parts, elem, u),
                    }
                    Ok(())
                });
            if result.is_err() {
                fetch.cancel();
            }
            result
        };
        if by_decoders {
            let source = |i: usize, buf: &mut Vec<u8>, memory_only: bool| {
                blocks.read_stored_into(&grid.grid_pos(i), buf, memory_only)
            };
            return with_lazy_fetch(store, block_bytes, &source, read_units);
        }
        let (keys, ranges) = sources(blocks, grid, |_| Ok(true))?;
        with_fetch_ranges(store, &keys, &ranges, io, block_bytes, early, read_units)
    }

    /// [`Dataset::write_region`] of an array whose blocks are objects (see
    /// the module's description); `grid` holds the blocks the region
    /// touches.
    pub(super) fn write_objects(
        &self,
        array: &dyn Array,
        blocks: &dyn ObjectBlocks,
        grid: &Grid,
        shape: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let attrs = array.attributes();
        let elem = attrs.data_type.size();
        let order = blocks.write_order();
        let swap = order == Order::Swapped;
        // The fill value in the order blocks are encoded in.
        let mut fill = array.fill().to_vec();
        if swap {
            swap_in_place(&mut fill, elem);
        }
        let block_bytes = attrs.block_num_elements() * elem;
        let units = Units::new(grid, block_bytes);
        let plane_bytes = shape[..shape.len() - 1].iter().product::<u64>() as usize * elem;
        // The stored blocks a partial cover reads back; none for the others.
        let (keys, ranges) = sources(blocks, grid, |i| {
            let o = grid.overlap(i)?;
            Ok(o.extent != o.block_shape)
        })?;
        let store = blocks.store();
        let io = self.io_concurrency();
        let remote = store.capabilities().remote;
        let encode_units = |fetch: &crate::pipeline::Fetch, upload: Option<&Upload>| {
            let init = || (Vec::<Vec<u8>>::new(), Vec::new());
            let result = self
                .container()
                .pool()
                .run(units.count, init, |(buffers, scratch), u| {
                    let unit = units.blocks(u);
                    buffers.resize_with(unit.len(), Vec::new);
                    let mut overlaps = Vec::with_capacity(unit.len());
                    for (i, buf) in unit.zip(buffers.iter_mut()) {
                        let mut o = grid.overlap(i)?;
                        let covered = o.extent == o.block_shape;
                        let whole_buffer = {
                            let full = blocks.buffer_shape(&o.grid_pos, &o.block_shape);
                            let same = full == o.block_shape;
                            o.block_shape = full;
                            same
                        };
                        let nbytes = o.block_shape.iter().product::<u64>() as usize * elem;
                        buf.resize(nbytes, 0);
                        if let Fetched::Bytes(stored) = fetch.take(i)? {
                            // The stored block, in the encoding order,
                            // around what the region replaces.
                            let read = match blocks.stored_elements(&o.grid_pos, &stored)? {
                                Some((at, from)) => {
                                    buf.copy_from_slice(&stored[at..at + nbytes]);
                                    from
                                }
                                None => blocks.decode(&o.grid_pos, &stored, buf)?,
                            };
                            if read != order {
                                swap_in_place(buf, elem);
                            }
                            fetch.recycle(stored);
                        } else if !covered || !whole_buffer {
                            // None stored (or a whole chunk past the array's
                            // end): the fill value around the region's part.
                            fill_with(buf, &fill);
                        }
                        overlaps.push(o);
                    }
                    // Gather the region's part of each block, converting it
                    // to the encoding order; a unit of several blocks row by
                    // row across them, reading the region sequentially.
                    let copy_row = |d: &mut [u8], s: &[u8]| {
                        if swap {
                            swap_copy(d, s, elem);
                        } else {
                            d.copy_from_slice(s);
                        }
                    };
                    if let [o] = overlaps.as_slice() {
                        copy_box_with(
                            data,
                            Placement {
                                shape,
                                offset: &o.in_region,
                            },
                            &mut buffers[0],
                            Placement {
                                shape: &o.block_shape,
                                offset: &o.in_block,
                            },
                            &o.extent,
                            elem,
                            copy_row,
                        );
                    } else {
                        let refs: Vec<&Overlap> = overlaps.iter().collect();
                        let rows = UnitRows::new(shape, &refs, elem);
                        for z in 0..rows.planes() {
                            rows.visit_plane(z, |row| {
                                let s = row.plane * plane_bytes + row.in_plane;
                                let d =
                                    &mut buffers[row.block][row.in_block..row.in_block + row.len];
                                copy_row(d, &data[s..s + row.len]);
                            });
                        }
                    }
                    for (o, buf) in overlaps.iter().zip(buffers.iter()) {
                        match upload {
                            // Network stores: the write goes to the I/O threads.
                            Some(upload) => {
                                let mut out = upload.buffer();
                                let key = blocks.key(&o.grid_pos);
                                if blocks.encode(&o.grid_pos, &o.block_shape, buf, &mut out)? {
                                    upload.put(key, out)?;
                                } else {
                                    upload.delete(key)?;
                                }
                            }
                            None => blocks.put(&o.grid_pos, &o.block_shape, buf, scratch)?,
                        }
                    }
                    Ok(())
                });
            if result.is_err() {
                fetch.cancel();
            }
            result
        };
        // Blocks the region covers whole need no fetch (and no I/O thread
        // starts when none does), and one block no I/O threads to send it.
        with_fetch_ranges(store, &keys, &ranges, io, block_bytes, None, |fetch| {
            if remote && grid.total > 1 {
                with_upload(store, io, |upload| encode_units(fetch, Some(upload)))
            } else {
                encode_units(fetch, None)
            }
        })?;
        blocks.finish_writes()
    }
}

/// The key and range to fetch for each block of `grid` that `wanted` (by
/// the block's number) asks for; `None` where nothing is to be fetched.
#[allow(clippy::type_complexity)]
fn sources(
    blocks: &dyn ObjectBlocks,
    grid: &Grid,
    wanted: impl Fn(usize) -> Result<bool>,
) -> Result<(Vec<Option<String>>, Vec<Option<ByteRange>>)> {
    let mut keys = Vec::with_capacity(grid.total);
    let mut ranges = Vec::with_capacity(grid.total);
    for i in 0..grid.total {
        let source = if wanted(i)? {
            blocks.source(&grid.grid_pos(i))?
        } else {
            None
        };
        let (key, range) = source.map_or((None, None), |(k, r)| (Some(k), r));
        keys.push(key);
        ranges.push(range);
    }
    Ok((keys, ranges))
}
