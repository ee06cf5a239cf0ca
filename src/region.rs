//! Region I/O: reading and writing any box of a numeric dataset, in voxel
//! units, through the blocks it touches. Missing blocks read as zeros;
//! partially covered blocks are read, modified and written back.

use crate::dataset::{check_buffer, Dataset};
use crate::error::{Error, ErrorKind, Result};
use crate::metadata::DatasetAttributes;

/// Where a box sits inside an array: the array's shape and the box's offset
/// in it (elements, dimension 0 fastest).
pub(crate) struct Placement<'a> {
    pub shape: &'a [u64],
    pub offset: &'a [u64],
}

/// Copy a box of `extent` elements of `elem` bytes from `src` to `dst`, each
/// placed as given. The caller ensures the box lies inside both arrays.
pub(crate) fn copy_box(
    src: &[u8],
    from: Placement,
    dst: &mut [u8],
    to: Placement,
    extent: &[u64],
    elem: usize,
) {
    let (src_shape, src_off, dst_shape, dst_off) = (from.shape, from.offset, to.shape, to.offset);
    let n = extent.len();
    if extent.contains(&0) {
        return;
    }
    let row = extent[0] as usize * elem;
    // Strides in bytes.
    let strides = |shape: &[u64]| {
        let mut s = vec![elem; n];
        for d in 1..n {
            s[d] = s[d - 1] * shape[d - 1] as usize;
        }
        s
    };
    let ss = strides(src_shape);
    let ds = strides(dst_shape);
    let base = |off: &[u64], st: &[usize]| -> usize {
        off.iter().zip(st).map(|(&o, &s)| o as usize * s).sum()
    };
    let sbase = base(src_off, &ss);
    let dbase = base(dst_off, &ds);
    let mut idx = vec![0u64; n];
    loop {
        let mut so = sbase;
        let mut d_o = dbase;
        for d in 1..n {
            so += idx[d] as usize * ss[d];
            d_o += idx[d] as usize * ds[d];
        }
        dst[d_o..d_o + row].copy_from_slice(&src[so..so + row]);
        // Advance the index over dimensions 1.. (dimension 0 is the row).
        let mut d = 1;
        loop {
            if d == n {
                return;
            }
            idx[d] += 1;
            if idx[d] < extent[d] {
                break;
            }
            idx[d] = 0;
            d += 1;
        }
    }
}

/// The blocks a region touches and, for each, where the region and the block
/// overlap.
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

/// Visit every block overlapping the region, in grid order (dimension 0 fastest).
fn for_each_overlap(
    attrs: &DatasetAttributes,
    offset: &[u64],
    shape: &[u64],
    mut f: impl FnMut(&Overlap) -> Result<()>,
) -> Result<()> {
    let n = attrs.ndim();
    if shape.contains(&0) {
        return Ok(());
    }
    let bs: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
    let first: Vec<u64> = (0..n).map(|d| offset[d] / bs[d]).collect();
    let last: Vec<u64> = (0..n).map(|d| (offset[d] + shape[d] - 1) / bs[d]).collect();
    let mut pos = first.clone();
    loop {
        let block_shape = attrs.block_shape(&pos)?;
        let mut in_block = Vec::with_capacity(n);
        let mut in_region = Vec::with_capacity(n);
        let mut extent = Vec::with_capacity(n);
        for d in 0..n {
            let start = pos[d] * bs[d];
            let lo = offset[d].max(start);
            let hi = (offset[d] + shape[d]).min(start + block_shape[d]);
            in_block.push(lo - start);
            in_region.push(lo - offset[d]);
            extent.push(hi - lo);
        }
        f(&Overlap {
            grid_pos: pos.clone(),
            block_shape,
            in_block,
            in_region,
            extent,
        })?;
        let mut d = 0;
        loop {
            if d == n {
                return Ok(());
            }
            pos[d] += 1;
            if pos[d] <= last[d] {
                break;
            }
            pos[d] = first[d];
            d += 1;
        }
    }
}

impl Dataset {
    /// Read the region at `offset` of `shape` (voxels, N5 order) into `out`,
    /// native byte order, dimension 0 fastest. `out` must hold exactly
    /// `prod(shape)` elements. Missing blocks read as zeros.
    pub fn read_region(&self, offset: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        let attrs = self.attributes();
        check_region(&attrs, offset, shape)?;
        let elem = attrs.data_type.size();
        check_buffer(shape, elem, out.len())?;
        let mut buf = Vec::new();
        for_each_overlap(&attrs, offset, shape, |o| {
            let nbytes = o.block_shape.iter().product::<u64>() as usize * elem;
            buf.resize(nbytes, 0);
            self.read_block_into(&o.grid_pos, &mut buf)?;
            copy_box(
                &buf,
                Placement {
                    shape: &o.block_shape,
                    offset: &o.in_block,
                },
                out,
                Placement {
                    shape,
                    offset: &o.in_region,
                },
                &o.extent,
                elem,
            );
            Ok(())
        })
    }

    /// Write `data` (native byte order, dimension 0 fastest, exactly
    /// `prod(shape)` elements) to the region at `offset`. Blocks the region
    /// covers entirely are replaced; partially covered blocks are read,
    /// modified and written back.
    pub fn write_region(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        self.container().check_writable()?;
        let attrs = self.attributes();
        check_region(&attrs, offset, shape)?;
        let elem = attrs.data_type.size();
        check_buffer(shape, elem, data.len())?;
        let mut buf = Vec::new();
        for_each_overlap(&attrs, offset, shape, |o| {
            let nbytes = o.block_shape.iter().product::<u64>() as usize * elem;
            buf.resize(nbytes, 0);
            if o.extent != o.block_shape {
                self.read_block_into(&o.grid_pos, &mut buf)?;
            }
            copy_box(
                data,
                Placement {
                    shape,
                    offset: &o.in_region,
                },
                &mut buf,
                Placement {
                    shape: &o.block_shape,
                    offset: &o.in_block,
                },
                &o.extent,
                elem,
            );
            self.write_block(&o.grid_pos, &o.block_shape, &buf)
        })
    }
}
