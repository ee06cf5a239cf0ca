//! Region I/O: reading and writing any box of a numeric dataset, in voxel
//! units, through the blocks it touches, in parallel on the container's
//! worker pool (`parallel`) with the I/O pipeline (`pipeline`) fetching and
//! sending ahead. Blocks that are not stored read as the fill value;
//! partially covered blocks are read, modified and written back. The array
//! says how its blocks are reached (`RegionIo`): one object each
//! (`objects`) or inside shards (`sharded`); this file holds what both
//! share (the grid of blocks a region touches, the units a read hands
//! out, the output shared by the threads) and the entry points.

mod elements;
mod objects;
mod sharded;

use std::sync::Mutex;

use crate::dataset::Dataset;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::RegionIo;
use crate::format::n5::metadata::DatasetAttributes;
use crate::geometry::{check_buffer, copy_box_with, swap_copy, Placement};

/// The blocks a region touches and, for each, where the region and the block
/// overlap.
#[derive(Debug)]
struct Overlap {
    grid_pos: Vec<u64>,
    block_shape: Vec<u64>,
    /// Offset of the overlap inside the block.
    in_block: Vec<u64>,
    /// Offset of the overlap inside the region.
    in_region: Vec<u64>,
    extent: Vec<u64>,
}

fn check_region(attrs: &DatasetAttributes, offset: &[u64], shape: &[u64]) -> Result<()> {
    attrs.check_rank(offset.len(), "offset")?;
    attrs.check_rank(shape.len(), "shape")?;
    for d in 0..attrs.ndim() {
        let end = offset[d].checked_add(shape[d]);
        if end.is_none_or(|e| e > attrs.dimensions[d]) {
            return Err(Error::new(
                ErrorKind::OutOfBounds,
                format!(
                    "region offset {offset:?} shape {shape:?} exceeds the dataset's dimensions {:?} in dimension {d}",
                    attrs.dimensions
                ),
            ));
        }
    }
    Ok(())
}

/// From this output size on, a region read advises the kernel to back the
/// caller's buffer with huge pages (see `os::advise_huge_pages`) and faults
/// it in ahead ([`prepare_output`]): the page faults of filling a fresh
/// buffer cost about as much as reading it.
const HUGE_PAGE_OUTPUT: usize = 16 << 20;

/// From this output size on, a read from a local store has a thread of its
/// own fault the output in ahead ([`prepare_output`]) where a core is free
/// for it. Below it the decoding threads' own faults cost less: for a 54 MB
/// region (300³ uint16) from the disk the thread took 0.7 ms longer and
/// 0.9 ms more CPU time; for 256 MiB (512³) it took 6 ms off a 50 ms read.
/// (Reads from a network store, whose threads mostly wait, have it from
/// [`HUGE_PAGE_OUTPUT`] on.)
const PREFAULT_OUTPUT: usize = 128 << 20;

/// A thread faulting in a region read's output ahead of the threads that
/// fill it (see `os::prefault`); stopped and joined when dropped, which
/// the read does before it returns.
pub(super) struct Prefaulting {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Prefaulting {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // The thread only calls madvise; it does not panic.
            t.join().ok();
        }
    }
}

/// Prepare the output `out` of a region read of many blocks: from
/// [`HUGE_PAGE_OUTPUT`] on, unless all of it is present already, advise
/// huge pages and, from the size `prefault_from` on (see
/// [`Dataset::prefault_from`]; `None`: never), start a thread that faults
/// the pages in while the first blocks are fetched and decoded, so that the
/// kernel's zeroing of fresh pages (and on a virtual machine the host's
/// backing of them) is done beside the decoding threads rather than by
/// them. Keep the result until the read is done.
pub(super) fn prepare_output(out: &mut [u8], prefault_from: Option<usize>) -> Option<Prefaulting> {
    let (start, len) = (out.as_mut_ptr() as usize, out.len());
    // A buffer read into before is present already: faulting it in again
    // would only walk its page tables.
    if len < HUGE_PAGE_OUTPUT || crate::os::resident(start, len) {
        return None;
    }
    crate::os::advise_huge_pages(out);
    if prefault_from.is_none_or(|from| len < from) {
        return None;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("n5-prefault".into())
        .spawn(move || {
            crate::os::prefault(start, len, &flag);
        })
        .ok();
    Some(Prefaulting { stop, thread })
}

/// The blocks a region touches: a box of the block grid, numbered with
/// dimension 0 fastest.
struct Grid<'a> {
    attrs: &'a DatasetAttributes,
    offset: &'a [u64],
    shape: &'a [u64],
    first: Vec<u64>,
    count: Vec<u64>,
    total: usize,
}

impl<'a> Grid<'a> {
    fn new(attrs: &'a DatasetAttributes, offset: &'a [u64], shape: &'a [u64]) -> Result<Self> {
        let n = attrs.ndim();
        let (mut first, mut count) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for d in 0..n {
            let bs = attrs.block_size[d] as u64;
            if shape[d] == 0 {
                first.push(0);
                count.push(0);
            } else {
                let f = offset[d] / bs;
                first.push(f);
                count.push((offset[d] + shape[d] - 1) / bs - f + 1);
            }
        }
        let total = count
            .iter()
            .try_fold(1usize, |acc, &c| acc.checked_mul(usize::try_from(c).ok()?))
            .ok_or_else(|| Error::invalid_argument("the region touches more than 2^64 blocks"))?;
        Ok(Grid {
            attrs,
            offset,
            shape,
            first,
            count,
            total,
        })
    }

    /// The grid position of the `i`-th block the region touches.
    fn grid_pos(&self, mut i: usize) -> Vec<u64> {
        let n = self.attrs.ndim();
        let mut grid_pos = Vec::with_capacity(n);
        for d in 0..n {
            let c = self.count[d] as usize;
            grid_pos.push(self.first[d] + (i % c) as u64);
            i /= c;
        }
        grid_pos
    }

    /// The number `i` of the block at grid position `pos` among those the
    /// region touches (the inverse of [`Grid::grid_pos`]); `None` when the
    /// region does not touch it.
    fn number(&self, pos: &[u64]) -> Option<usize> {
        let (mut i, mut stride) = (0usize, 1usize);
        for ((&p, &first), &count) in pos.iter().zip(&self.first).zip(&self.count) {
            let k = p.checked_sub(first).filter(|&k| k < count)?;
            i += k as usize * stride;
            stride *= count as usize;
        }
        Some(i)
    }

    /// The `i`-th block the region touches and where the two overlap.
    fn overlap(&self, i: usize) -> Result<Overlap> {
        let n = self.attrs.ndim();
        let grid_pos = self.grid_pos(i);
        let block_shape = self.attrs.block_shape(&grid_pos)?;
        let mut in_block = Vec::with_capacity(n);
        let mut in_region = Vec::with_capacity(n);
        let mut extent = Vec::with_capacity(n);
        for d in 0..n {
            let start = grid_pos[d] * self.attrs.block_size[d] as u64;
            let lo = self.offset[d].max(start);
            let hi = (self.offset[d] + self.shape[d]).min(start + block_shape[d]);
            in_block.push(lo - start);
            in_region.push(lo - self.offset[d]);
            extent.push(hi - lo);
        }
        Ok(Overlap {
            grid_pos,
            block_shape,
            in_block,
            in_region,
            extent,
        })
    }
}

/// A block's data ready to be copied into the region: its bytes, where it
/// overlaps the region, and whether its elements are in the other byte
/// order.
type Part<'a> = (&'a [u8], &'a Overlap, bool);

/// How a region read hands out its blocks: in units of up to `run`
/// consecutive blocks along dimension 0 (the blocks of one unit differ only
/// in their dimension-0 position). A unit's blocks are copied into the
/// region together, row by row across the blocks, so that the region's
/// memory is written in long sequential stretches rather than in one
/// block's short rows scattered over many pages: for 64³ blocks of uint16
/// that halves the cost of the copy. Units tile the block numbering in
/// order.
struct Units {
    /// Blocks per unit (the last unit of a row of blocks may have fewer).
    run: usize,
    /// Blocks of the region along dimension 0.
    row: usize,
    /// Units per row of blocks.
    per_row: usize,
    /// Units in all.
    count: usize,
}

/// The most block data one unit of a region read holds per thread.
const UNIT_BYTES: usize = 4 << 20;

/// The most blocks in one unit of a region read.
const UNIT_BLOCKS: usize = 8;

impl Units {
    fn new(grid: &Grid, block_bytes: usize) -> Units {
        let row = grid.count.first().map_or(1, |&c| c as usize).max(1);
        let run = if grid.count.len() < 2 {
            1
        } else {
            (UNIT_BYTES / block_bytes.max(1))
                .clamp(1, UNIT_BLOCKS)
                .min(row)
        };
        let per_row = row.div_ceil(run);
        Units {
            run,
            row,
            per_row,
            count: grid.total / row * per_row,
        }
    }

    /// The block numbers of unit `u`.
    fn blocks(&self, u: usize) -> std::ops::Range<usize> {
        let (row, part) = (u / self.per_row, u % self.per_row);
        let start = row * self.row + part * self.run;
        start..(start + self.run).min((row + 1) * self.row)
    }
}

/// One row of one block of a unit, as [`UnitRows`] visits them (byte
/// offsets).
struct UnitRow {
    /// The plane of the region (index along its last dimension).
    plane: usize,
    /// Where the row starts inside that plane of the region.
    in_plane: usize,
    /// Which block of the unit.
    block: usize,
    /// Where the row starts inside that block's buffer.
    in_block: usize,
    /// The row's length.
    len: usize,
}

/// The rows of a unit's blocks (consecutive along dimension 0, so alike in
/// every other dimension, as [`Units`] makes them), plane by plane: within
/// a plane, [`UnitRows::visit_plane`] goes row by row and within a row
/// block by block, so the region is read or written sequentially. Needs at
/// least two dimensions.
struct UnitRows<'a> {
    overlaps: &'a [&'a Overlap],
    elem: usize,
    /// Element strides of the region and, per block, of its buffer.
    region: Vec<usize>,
    blocks: Vec<Vec<usize>>,
    /// Rows per plane: the product of the extents of dimensions 1..n-1.
    rows: u64,
}

impl<'a> UnitRows<'a> {
    fn new(shape: &[u64], overlaps: &'a [&'a Overlap], elem: usize) -> Self {
        let n = shape.len();
        let strides = |shape: &[u64]| {
            let mut s = vec![1usize; n];
            for d in 1..n {
                s[d] = s[d - 1] * shape[d - 1] as usize;
            }
            s
        };
        UnitRows {
            overlaps,
            elem,
            region: strides(shape),
            blocks: overlaps.iter().map(|o| strides(&o.block_shape)).collect(),
            rows: overlaps[0].extent[1..n - 1].iter().product(),
        }
    }

    /// How many planes (along the last dimension) the unit covers.
    fn planes(&self) -> u64 {
        *self.overlaps[0]
            .extent
            .last()
            .expect("at least two dimensions")
    }

    /// Visit the rows of the unit's plane `z` (counted from the unit's
    /// first) in the region's memory order. The rows are walked with an
    /// odometer over dimensions 1..n-1 that moves every offset by its
    /// stride (and back at a wrap): no division per row, which for rows
    /// of a few hundred bytes would cost as much as copying them.
    fn visit_plane(&self, z: u64, mut visit: impl FnMut(UnitRow)) {
        let (overlaps, elem) = (self.overlaps, self.elem);
        let n = self.region.len();
        let first = overlaps[0];
        let plane = (first.in_region[n - 1] + z) as usize;
        let mut dst = 0usize;
        for d in 1..n - 1 {
            dst += first.in_region[d] as usize * self.region[d];
        }
        let mut src: Vec<usize> = overlaps
            .iter()
            .zip(&self.blocks)
            .map(|(o, b)| {
                let inner: usize = (1..n - 1).map(|d| o.in_block[d] as usize * b[d]).sum();
                inner + o.in_block[0] as usize + (o.in_block[n - 1] + z) as usize * b[n - 1]
            })
            .collect();
        let mut counter = vec![0u64; n];
        for _ in 0..self.rows {
            for (k, o) in overlaps.iter().enumerate() {
                visit(UnitRow {
                    plane,
                    in_plane: (dst + o.in_region[0] as usize) * elem,
                    block: k,
                    in_block: src[k] * elem,
                    len: o.extent[0] as usize * elem,
                });
            }
            // The next row: dimension 1 on, carrying into the next.
            for d in 1..n - 1 {
                counter[d] += 1;
                dst += self.region[d];
                for (at, b) in src.iter_mut().zip(&self.blocks) {
                    *at += b[d];
                }
                if counter[d] < first.extent[d] {
                    break;
                }
                let extent = first.extent[d] as usize;
                counter[d] = 0;
                dst -= extent * self.region[d];
                for (at, b) in src.iter_mut().zip(&self.blocks) {
                    *at -= extent * b[d];
                }
            }
        }
    }
}

/// A region's output buffer shared by the threads of a read: one lock per
/// plane of the slowest dimension (the buffer's contiguous slices), so
/// threads copying different blocks rarely wait for each other.
struct Planes<'a> {
    planes: Vec<Mutex<&'a mut [u8]>>,
    shape: &'a [u64],
}

impl<'a> Planes<'a> {
    fn new(out: &'a mut [u8], shape: &'a [u64], elem: usize) -> Self {
        let n = shape.len();
        let plane_bytes = shape[..n - 1].iter().product::<u64>() as usize * elem;
        let planes = if n == 1 || plane_bytes == 0 {
            vec![Mutex::new(out)]
        } else {
            out.chunks_mut(plane_bytes).map(Mutex::new).collect()
        };
        Planes { planes, shape }
    }

    /// Copy a unit's blocks (consecutive along dimension 0, so alike in
    /// every other dimension) into the region, one plane at a time and,
    /// within a plane, row by row across the blocks (see [`UnitRows`]).
    /// As in [`copy_in`](Self::copy_in), threads copying units of the same
    /// planes start planes apart (`rotate`, the unit's number) and leave a
    /// plane another thread holds for later.
    fn copy_run_in(&self, parts: &[Part], elem: usize, rotate: usize) {
        let overlaps: Vec<&Overlap> = parts.iter().map(|p| p.1).collect();
        let rows = UnitRows::new(self.shape, &overlaps, elem);
        let first = overlaps[0];
        let n = self.shape.len();
        let copy_plane = |z: u64, out: &mut [u8]| {
            rows.visit_plane(z, |row| {
                let (bytes, _, swap) = parts[row.block];
                let (d, s, len) = (row.in_plane, row.in_block, row.len);
                if swap {
                    swap_copy(&mut out[d..d + len], &bytes[s..s + len], elem);
                } else {
                    out[d..d + len].copy_from_slice(&bytes[s..s + len]);
                }
            })
        };
        self.each_plane(first.in_region[n - 1], rows.planes(), rotate, copy_plane);
    }

    /// Run `copy` on each of the `planes` planes from `first` (the count
    /// from `first` and the plane, locked), starting at one chosen by
    /// `rotate` and leaving planes another thread holds to the end.
    fn each_plane(
        &self,
        first: u64,
        planes: u64,
        rotate: usize,
        mut copy: impl FnMut(u64, &mut [u8]),
    ) {
        let plane = |z: u64| &self.planes[(first + z) as usize];
        // 37 is prime: consecutive blocks start well apart.
        let start = (rotate as u64).wrapping_mul(37) % planes.max(1);
        let mut busy = Vec::new();
        for k in 0..planes {
            let z = (k + start) % planes;
            match plane(z).try_lock() {
                Ok(mut out) => copy(z, &mut out),
                Err(std::sync::TryLockError::Poisoned(p)) => copy(z, &mut p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => busy.push(z),
            }
        }
        for z in busy {
            copy(z, &mut plane(z).lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// Copy the part of the block in `buf` that overlap `o` describes into
    /// the region, one plane at a time; with `swap`, `buf` holds the
    /// block's elements in the other byte order and each row is converted
    /// as it is copied. Planes
    /// another thread is writing are left for later rather than waited for,
    /// and threads copying blocks of the same planes start at planes apart
    /// (`rotate`, the block's or unit's number, spreads them), so the I/O
    /// threads that copy raw blocks as they arrive rarely wait for a lock.
    fn copy_in(&self, buf: &[u8], o: &Overlap, elem: usize, swap: bool, rotate: usize) {
        let copy_row = |d: &mut [u8], s: &[u8]| {
            if swap {
                swap_copy(d, s, elem);
            } else {
                d.copy_from_slice(s);
            }
        };
        let n = self.shape.len();
        if n == 1 {
            let mut out = self.planes[0].lock().unwrap_or_else(|p| p.into_inner());
            copy_box_with(
                buf,
                Placement {
                    shape: &o.block_shape,
                    offset: &o.in_block,
                },
                &mut out,
                Placement {
                    shape: self.shape,
                    offset: &o.in_region,
                },
                &o.extent,
                elem,
                copy_row,
            );
            return;
        }
        let block_plane = o.block_shape[..n - 1].iter().product::<u64>() as usize * elem;
        let copy_plane = |z: u64, out: &mut [u8]| {
            let src = (o.in_block[n - 1] + z) as usize * block_plane;
            copy_box_with(
                &buf[src..src + block_plane],
                Placement {
                    shape: &o.block_shape[..n - 1],
                    offset: &o.in_block[..n - 1],
                },
                out,
                Placement {
                    shape: &self.shape[..n - 1],
                    offset: &o.in_region[..n - 1],
                },
                &o.extent[..n - 1],
                elem,
                copy_row,
            );
        };
        self.each_plane(o.in_region[n - 1], o.extent[n - 1], rotate, copy_plane);
    }
}

impl Dataset {
    /// Read the region at `offset` of `shape` (voxels, N5 order) into `out`,
    /// native byte order, dimension 0 fastest. `out` must hold exactly
    /// `prod(shape)` elements. Blocks that are not stored read as the fill
    /// value (zeros in N5).
    ///
    /// The blocks are fetched by I/O threads, up to
    /// [`crate::storage::StorageOptions::io_concurrency`] requests (or file
    /// reads) in flight and at most 24 MiB ahead, and decoded in parallel by
    /// the container's threads ([`crate::Options::threads`]), a few
    /// neighbouring blocks at a time (at most 8 and 4 MiB of block data per
    /// thread); on a network store, each block is instead put into `out`
    /// by the I/O thread that received it (decoded first if compressed, at
    /// most `threads` at a time). In a sharded array only the inner chunks
    /// the region touches are fetched, through each shard's index. A region
    /// that is exactly one block is decoded straight into `out`, and an
    /// output of 16 MiB or more is advised to use huge pages and faulted in
    /// by a thread of its own while the first blocks arrive.
    pub fn read_region(&self, offset: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        let array = self.array();
        let attrs = array.attributes();
        check_region(&attrs, offset, shape)?;
        let elem = attrs.data_type.size();
        check_buffer(shape, elem, out.len())?;
        self.check_layout(&attrs)?;
        let grid = Grid::new(&attrs, offset, shape)?;
        if grid.total == 1 {
            let o = grid.overlap(0)?;
            if o.extent == o.block_shape {
                return array.read_block_into(&o.grid_pos, out).map(|_| ());
            }
        }
        match array.region() {
            RegionIo::Objects(blocks) => self.read_objects(&*array, blocks, &grid, shape, out),
            RegionIo::Shards(shards) => {
                self.read_region_sharded(&*array, shards, offset, shape, out)
            }
            RegionIo::Whole(regions) => regions.read_region(offset, shape, out),
        }
    }

    /// Write `data` (native byte order, dimension 0 fastest, exactly
    /// `prod(shape)` elements) to the region at `offset`. Blocks the region
    /// covers entirely are replaced; partially covered blocks are read,
    /// modified and written back (in a sharded array, a shard it covers in
    /// part is changed atomically with respect to other writers).
    ///
    /// The blocks are encoded in parallel by the container's threads, a few
    /// neighbouring blocks at a time (at most 8 and 4 MiB of block data per
    /// thread, gathered from `data` row by row across them and converted to
    /// the stored byte order on the way), a shard at a time when sharded; a
    /// region that is exactly one block is encoded straight from `data`.
    /// The stored blocks that partially covered blocks need are fetched
    /// ahead by I/O threads, and on network stores the writes are carried
    /// out by I/O threads too, up to `io_concurrency` in flight. Every block
    /// is replaced atomically; after a failure, blocks already written stay.
    pub fn write_region(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        self.container().check_writable()?;
        let array = self.array();
        let attrs = array.attributes();
        check_region(&attrs, offset, shape)?;
        let elem = attrs.data_type.size();
        check_buffer(shape, elem, data.len())?;
        self.check_layout(&attrs)?;
        array.check_write()?;
        match array.region_writes() {
            RegionIo::Objects(blocks) => {
                let grid = Grid::new(&attrs, offset, shape)?;
                if grid.total == 1 {
                    let o = grid.overlap(0)?;
                    if o.extent == o.block_shape {
                        return array.write_block(&o.grid_pos, &o.block_shape, data);
                    }
                }
                self.write_objects(&*array, blocks, &grid, shape, data)
            }
            RegionIo::Shards(shards) => {
                self.write_region_sharded(&*array, shards, offset, shape, data)
            }
            RegionIo::Whole(regions) => regions.write_region(offset, shape, data),
        }
    }

    /// The output size from which a region read of this dataset has a
    /// thread fault its output in ([`prepare_output`]): where its threads
    /// wait for a network store, [`HUGE_PAGE_OUTPUT`]; where they are fewer
    /// than the cores, [`PREFAULT_OUTPUT`]; where they take every core,
    /// never, since such a thread only takes turns with them (a 300³ region
    /// read with two threads on two cores waited up to 7 ms for its second
    /// thread to start).
    fn prefault_from(&self) -> Option<usize> {
        if self.container().store().capabilities().remote {
            Some(HUGE_PAGE_OUTPUT)
        } else if self.container().options().threads < crate::parallel::cores() {
            Some(PREFAULT_OUTPUT)
        } else {
            None
        }
    }

    /// Requests in flight for this dataset's container.
    fn io_concurrency(&self) -> usize {
        let remote = self.container().store().capabilities().remote;
        self.container()
            .options()
            .storage
            .io_concurrency_for(remote)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
        }
    }

    /// The element offset of `pos` in an array of `shape`, dimension 0
    /// fastest.
    fn linear(pos: &[u64], shape: &[u64]) -> usize {
        pos.iter()
            .zip(shape)
            .rev()
            .fold(0u64, |acc, (&p, &s)| acc * s + p) as usize
    }

    /// Random units (blocks consecutive along dimension 0 with the same
    /// overlap in the other dimensions) of ranks 2 to 5 copied row by row
    /// through [`UnitRows`] land exactly where an element-by-element
    /// placement puts them, and the rows come in the region's memory
    /// order.
    #[test]
    fn unit_rows_place_every_element_in_memory_order() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Under Miri (which interprets every copy) a few small cases.
        let (cases, side) = if cfg!(miri) { (12, 4) } else { (300, 12) };
        for _ in 0..cases {
            let n = 2 + rng.below(4) as usize;
            let elem = [1usize, 2, 4, 8][rng.below(4) as usize];
            let region: Vec<u64> = (0..n).map(|_| 1 + rng.below(side)).collect();
            // The part of the region the unit covers, outside dimension 0.
            let (mut extent, mut in_region) = (vec![0u64; n], vec![0u64; n]);
            for d in 1..n {
                extent[d] = 1 + rng.below(region[d]);
                in_region[d] = rng.below(region[d] - extent[d] + 1);
            }
            let blocks = 1 + rng.below(4) as usize;
            let mut overlaps = Vec::new();
            let mut x = rng.below(region[0]);
            for _ in 0..blocks {
                if x >= region[0] {
                    break;
                }
                let e0 = 1 + rng.below(region[0] - x);
                let mut block_shape = vec![0u64; n];
                let mut in_block = vec![0u64; n];
                for d in 0..n {
                    let e = if d == 0 { e0 } else { extent[d] };
                    block_shape[d] = e + rng.below(5);
                    in_block[d] = rng.below(block_shape[d] - e + 1);
                }
                let mut ir = in_region.clone();
                ir[0] = x;
                let mut ex = extent.clone();
                ex[0] = e0;
                overlaps.push(Overlap {
                    grid_pos: vec![0; n],
                    block_shape,
                    in_block,
                    in_region: ir,
                    extent: ex,
                });
                x += e0;
            }
            // Block k's element i holds a value naming both.
            let data: Vec<Vec<u8>> = overlaps
                .iter()
                .enumerate()
                .map(|(k, o)| {
                    let len = o.block_shape.iter().product::<u64>() as usize * elem;
                    (0..len).map(|i| (i * 7 + k * 31 + 1) as u8).collect()
                })
                .collect();
            let plane = region[..n - 1].iter().product::<u64>() as usize * elem;
            let total = plane * region[n - 1] as usize;
            let mut got = vec![0u8; total];
            let mut last = None;
            let refs: Vec<&Overlap> = overlaps.iter().collect();
            let rows = UnitRows::new(&region, &refs, elem);
            for z in 0..rows.planes() {
                rows.visit_plane(z, |row| {
                    let at = row.plane * plane + row.in_plane;
                    assert!(last.is_none_or(|l| l < at), "rows out of memory order");
                    last = Some(at);
                    got[at..at + row.len]
                        .copy_from_slice(&data[row.block][row.in_block..row.in_block + row.len]);
                });
            }
            let mut want = vec![0u8; total];
            for (k, o) in overlaps.iter().enumerate() {
                let count = o.extent.iter().product::<u64>();
                for i in 0..count {
                    let mut rest = i;
                    let pos: Vec<u64> = o
                        .extent
                        .iter()
                        .map(|&e| {
                            let p = rest % e;
                            rest /= e;
                            p
                        })
                        .collect();
                    let r: Vec<u64> = (0..n).map(|d| o.in_region[d] + pos[d]).collect();
                    let b: Vec<u64> = (0..n).map(|d| o.in_block[d] + pos[d]).collect();
                    let (r, b) = (
                        linear(&r, &region) * elem,
                        linear(&b, &o.block_shape) * elem,
                    );
                    want[r..r + elem].copy_from_slice(&data[k][b..b + elem]);
                }
            }
            assert_eq!(
                got, want,
                "rank {n}, region {region:?}, overlaps {overlaps:?}"
            );
        }
    }
}
