//! The geometry of a pyramid build: boxes of a level's shard grid, the box
//! of the previous level a box reduces, slabs that bound what one job
//! reads, and where a box of the source lands in `s0` (its axes permuted
//! into output order and, for BigDataViewer, split into 3-D stacks:
//! [`s0_pieces`]).

use std::borrow::Cow;

use super::plan::{OutFormat, Plan, Stack};

/// The most bytes of the previous level one job reads at once (pyramid.md,
/// "Streaming and memory").
pub const SLAB_BYTES: u64 = 64 << 20;

/// A box of a level: its offset and shape (N5 order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// The first voxel.
    pub offset: Vec<u64>,
    /// The extent per axis.
    pub shape: Vec<u64>,
}

impl Region {
    /// The number of voxels.
    pub fn voxels(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// The box of the shard at `pos`, clipped at the level's end.
pub fn shard_region(shape: &[u64], shard: &[u64], pos: &[u64]) -> Region {
    let offset: Vec<u64> = pos.iter().zip(shard).map(|(&p, &s)| p * s).collect();
    let shape = offset
        .iter()
        .zip(shard)
        .zip(shape)
        .map(|((&o, &s), &n)| s.min(n - o))
        .collect();
    Region { offset, shape }
}

/// The box of the previous level (of shape `prev`) that the box `out` of
/// the next level reduces with `factors`: each output voxel's window,
/// clipped at the previous level's end.
pub fn input_region(out: &Region, factors: &[u64], prev: &[u64]) -> Region {
    let offset: Vec<u64> = out
        .offset
        .iter()
        .zip(factors)
        .map(|(&o, &f)| o * f)
        .collect();
    let shape = out
        .offset
        .iter()
        .zip(&out.shape)
        .zip(factors)
        .zip(prev)
        .map(|(((&o, &n), &f), &p)| ((o + n) * f).min(p) - o * f)
        .collect();
    Region { offset, shape }
}

/// `out` cut along its last axis longer than one voxel into slabs whose
/// input boxes hold at most `max_bytes` (at least one output plane each).
pub fn slabs(
    out: &Region,
    factors: &[u64],
    prev: &[u64],
    element: u64,
    max_bytes: u64,
) -> Vec<Region> {
    let whole = input_region(out, factors, prev);
    if whole.voxels() * element <= max_bytes {
        return vec![out.clone()];
    }
    let Some(axis) = (0..out.shape.len()).rev().find(|&a| out.shape[a] > 1) else {
        return vec![out.clone()];
    };
    // Bytes of the input per output plane along `axis`.
    let plane = whole.voxels() / whole.shape[axis].max(1) * factors[axis] * element;
    let step = (max_bytes / plane.max(1)).max(1);
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < out.shape[axis] {
        let n = step.min(out.shape[axis] - at);
        let mut piece = out.clone();
        piece.offset[axis] += at;
        piece.shape[axis] = n;
        pieces.push(piece);
        at += n;
    }
    pieces
}

/// `data` (elements of `element` bytes, shape `shape`, dimension 0
/// fastest) with its axes permuted: axis `j` of the result is axis
/// `perm[j]` of the input.
pub fn permute(data: &[u8], shape: &[u64], perm: &[usize], element: usize) -> Vec<u8> {
    let rank = shape.len();
    let mut in_strides = vec![0usize; rank];
    let mut s = element;
    for (d, stride) in in_strides.iter_mut().enumerate() {
        *stride = s;
        s *= shape[d] as usize;
    }
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p] as usize).collect();
    let strides: Vec<usize> = perm.iter().map(|&p| in_strides[p]).collect();
    let mut out = Vec::with_capacity(data.len());
    let mut idx = vec![0usize; rank];
    let total: usize = out_shape.iter().product();
    for _ in 0..total {
        let at: usize = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.extend_from_slice(&data[at..at + element]);
        for d in 0..rank {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// The box at `at` of `part` (shape) out of `data`, a box of shape `whole`
/// (elements of `element` bytes, dimension 0 fastest; `at` relative to the
/// start of `whole`), copied a run along dimension 0 at a time.
pub fn sub_box(data: &[u8], whole: &[u64], at: &[u64], part: &[u64], element: usize) -> Vec<u8> {
    let rank = whole.len();
    let run = part.first().copied().unwrap_or(1) as usize * element;
    let rows: u64 = part.iter().skip(1).product();
    let mut out = Vec::with_capacity(part.iter().product::<u64>() as usize * element);
    let mut idx = vec![0u64; rank];
    for _ in 0..rows {
        let (mut start, mut stride) = (0u64, 1u64);
        for d in 0..rank {
            start += (at[d] + idx[d]) * stride;
            stride *= whole[d];
        }
        let s = start as usize * element;
        out.extend_from_slice(&data[s..s + run]);
        for d in 1..rank {
            idx[d] += 1;
            if idx[d] < part[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// A box of one stack's `s0` with its elements: where (part of) a box of
/// the source lands ([`s0_pieces`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S0Piece<'a> {
    /// The stack (`Stack::default()` except for bdv).
    pub stack: Stack,
    /// The box of the stack's `s0`, over the plan's
    /// [`level_axes`](Plan::level_axes) in their order.
    pub region: Region,
    /// Its elements, dimension 0 fastest (borrowed from the source box
    /// when they are laid out the same).
    pub data: Cow<'a, [u8]>,
}

/// Where the box of the source at `offset` of `shape` (source axis order,
/// N5 order), holding `data` (elements of `element` bytes, dimension 0
/// fastest), lands in `s0` under `plan`: its axes permuted into output
/// order ([`Plan::permutation`]: OME-NGFF's `x, y, z, c, t`) and, for
/// bdv, split into one 3-D box per channel index (the setup) and time
/// index (the time point) it spans, each over the level axes `x, y, z`.
/// This is how a build copies the source into `s0`, and how a caller that
/// writes `s0` itself ([`super::build::begin_written`]) places what it
/// reads.
pub fn s0_pieces<'a>(
    plan: &Plan,
    offset: &[u64],
    shape: &[u64],
    data: &'a [u8],
    element: usize,
) -> Vec<S0Piece<'a>> {
    let perm = &plan.permutation;
    let out_off: Vec<u64> = perm.iter().map(|&p| offset[p]).collect();
    let out_shape: Vec<u64> = perm.iter().map(|&p| shape[p]).collect();
    let mut data: Cow<'a, [u8]> = if plan.permutes() {
        Cow::Owned(permute(data, shape, perm, element))
    } else {
        Cow::Borrowed(data)
    };
    if plan.format != OutFormat::Bdv {
        return vec![S0Piece {
            stack: Stack::default(),
            region: Region {
                offset: out_off,
                shape: out_shape,
            },
            data,
        }];
    }
    let rank = out_shape.len();
    // A stack's elements: the level axes in their order, then the
    // channel and time axes (one element thick).
    let mut order = plan.level_axes.clone();
    order.extend((0..rank).filter(|a| !plan.level_axes.contains(a)));
    let reordered = order.iter().enumerate().any(|(i, &a)| i != a);
    let region = Region {
        offset: plan.level_axes.iter().map(|&a| out_off[a]).collect(),
        shape: plan.level_axes.iter().map(|&a| out_shape[a]).collect(),
    };
    let span = |axis: Option<usize>| axis.map_or((0, 1), |a| (out_off[a], out_shape[a]));
    let ((c0, cn), (t0, tn)) = (span(plan.channel_axis()), span(plan.time_axis()));
    let mut pieces = Vec::with_capacity((cn * tn) as usize);
    for c in 0..cn {
        for t in 0..tn {
            let mut at = vec![0u64; rank];
            let mut part = out_shape.clone();
            for (axis, i) in [(plan.channel_axis(), c), (plan.time_axis(), t)] {
                if let Some(a) = axis {
                    at[a] = i;
                    part[a] = 1;
                }
            }
            let mut stack_data = if cn * tn == 1 {
                std::mem::take(&mut data)
            } else {
                Cow::Owned(sub_box(&data, &out_shape, &at, &part, element))
            };
            if reordered {
                stack_data = Cow::Owned(permute(&stack_data, &part, &order, element));
            }
            pieces.push(S0Piece {
                stack: Stack {
                    setup: c0 + c,
                    timepoint: t0 + t,
                },
                region: region.clone(),
                data: stack_data,
            });
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_of_the_grid_and_their_inputs() {
        let r = shard_region(&[10, 7], &[4, 4], &[2, 1]);
        assert_eq!(
            r,
            Region {
                offset: vec![8, 4],
                shape: vec![2, 3]
            }
        );
        // Level of [10, 7] from [20, 13] by 2: the last window along
        // axis 1 holds one voxel.
        let i = input_region(&r, &[2, 2], &[20, 13]);
        assert_eq!(
            i,
            Region {
                offset: vec![16, 8],
                shape: vec![4, 5]
            }
        );
    }

    #[test]
    fn slabs_bound_the_input_and_cover_the_box() {
        let out = Region {
            offset: vec![0, 0, 4],
            shape: vec![8, 8, 8],
        };
        let pieces = slabs(&out, &[2, 2, 2], &[16, 16, 24], 2, 16 * 16 * 2 * 2 * 3);
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces.iter().map(|p| p.shape[2]).sum::<u64>(), 8);
        assert_eq!(pieces[1].offset, vec![0, 0, 7]);
        for p in &pieces {
            assert!(input_region(p, &[2, 2, 2], &[16, 16, 24]).voxels() * 2 <= 16 * 16 * 2 * 2 * 3);
        }
        assert_eq!(
            slabs(&out, &[2, 2, 2], &[16, 16, 24], 2, 1 << 30),
            vec![out]
        );
    }

    /// The plan of a source of `shape` with axes `names` into `format`
    /// (one shard the whole array).
    fn plan_of(shape: &[u64], names: &[&str], format: OutFormat) -> Plan {
        use super::super::plan::{PyramidOptions, SourceInfo};
        let src = SourceInfo {
            shape: shape.to_vec(),
            axes: Some(names.iter().map(|n| n.to_string()).collect()),
            ..SourceInfo::default()
        };
        Plan::new(&src, &PyramidOptions::default(), format, shape, shape).unwrap()
    }

    /// One byte per element: its index in the source (dimension 0
    /// fastest) mod 251, from its position.
    fn value(pos: &[u64], shape: &[u64]) -> u8 {
        let mut i = 0u64;
        for d in (0..shape.len()).rev() {
            i = i * shape[d] + pos[d];
        }
        (i % 251) as u8
    }

    /// The elements of the box at `offset` of `shape` of a source of
    /// `whole`, dimension 0 fastest.
    fn source_box(whole: &[u64], offset: &[u64], shape: &[u64]) -> Vec<u8> {
        let n: u64 = shape.iter().product();
        (0..n)
            .map(|mut i| {
                let pos: Vec<u64> = (0..shape.len())
                    .map(|d| {
                        let p = offset[d] + i % shape[d];
                        i /= shape[d];
                        p
                    })
                    .collect();
                value(&pos, whole)
            })
            .collect()
    }

    /// Checks that every element of `piece` is the source's element the
    /// plan maps there: output axis `level_axes[i]` is source axis
    /// `permutation[level_axes[i]]`, the channel and time axes fixed at the
    /// piece's setup and time point.
    fn check_piece(plan: &Plan, whole: &[u64], piece: &S0Piece) {
        let r = &piece.region;
        assert_eq!(piece.data.len() as u64, r.voxels());
        for (k, &got) in piece.data.iter().enumerate() {
            let mut k = k as u64;
            let mut out = vec![0u64; plan.axes.len()];
            for (i, &a) in plan.level_axes.iter().enumerate() {
                out[a] = r.offset[i] + k % r.shape[i];
                k /= r.shape[i];
            }
            if let Some(c) = plan
                .channel_axis()
                .filter(|_| plan.format == OutFormat::Bdv)
            {
                out[c] = piece.stack.setup;
            }
            if let Some(t) = plan.time_axis().filter(|_| plan.format == OutFormat::Bdv) {
                out[t] = piece.stack.timepoint;
            }
            let mut src = vec![0u64; out.len()];
            for (a, &p) in plan.permutation.iter().enumerate() {
                src[p] = out[a];
            }
            assert_eq!(got, value(&src, whole), "{:?} at {out:?}", piece.stack);
        }
    }

    #[test]
    fn source_boxes_land_in_s0_permuted_and_split_into_stacks() {
        // An ImageJ hyperstack, x, y, c, z, t.
        let whole = [5u64, 3, 2, 4, 3];
        let names = ["x", "y", "c", "z", "t"];
        let boxes: [([u64; 5], [u64; 5]); 3] = [
            ([0; 5], whole),
            ([1, 0, 1, 2, 1], [3, 3, 1, 2, 2]),
            ([0, 1, 0, 0, 2], [5, 2, 2, 4, 1]),
        ];
        let ngff = plan_of(&whole, &names, OutFormat::Zarr3);
        assert!(ngff.permutes());
        for (offset, shape) in &boxes {
            let data = source_box(&whole, offset, shape);
            let pieces = s0_pieces(&ngff, offset, shape, &data, 1);
            assert_eq!(pieces.len(), 1);
            // x, y, z, c, t.
            let p = &pieces[0];
            assert_eq!(p.region.offset, [0, 1, 3, 2, 4].map(|a| offset[a]));
            assert_eq!(p.region.shape, [0, 1, 3, 2, 4].map(|a| shape[a]));
            check_piece(&ngff, &whole, p);
        }
        // BigDataViewer: one piece per channel and time index of the box.
        let bdv = plan_of(&whole, &names, OutFormat::Bdv);
        for (offset, shape) in &boxes {
            let data = source_box(&whole, offset, shape);
            let pieces = s0_pieces(&bdv, offset, shape, &data, 1);
            assert_eq!(pieces.len() as u64, shape[2] * shape[4]);
            for p in &pieces {
                assert!((offset[2]..offset[2] + shape[2]).contains(&p.stack.setup));
                assert!((offset[4]..offset[4] + shape[4]).contains(&p.stack.timepoint));
                assert_eq!(p.region.shape, [shape[0], shape[1], shape[3]]);
                check_piece(&bdv, &whole, p);
            }
        }
        // N5 keeps the box as it is, borrowed.
        let n5 = plan_of(&whole, &names, OutFormat::N5);
        let data = source_box(&whole, &[0; 5], &whole);
        let pieces = s0_pieces(&n5, &[0; 5], &whole, &data, 1);
        assert!(matches!(pieces[0].data, Cow::Borrowed(_)));
        assert_eq!(pieces[0].region.shape, whole);
        // A bdv source whose space axes are not in x, y, z order: each
        // stack is x, y, z.
        let zyx = [3u64, 4, 5];
        let bdv = plan_of(&zyx, &["z", "y", "x"], OutFormat::Bdv);
        let data = source_box(&zyx, &[0; 3], &zyx);
        let pieces = s0_pieces(&bdv, &[0; 3], &zyx, &data, 1);
        assert_eq!(pieces[0].region.shape, [5, 4, 3]);
        check_piece(&bdv, &zyx, &pieces[0]);
    }

    #[test]
    fn permutation_moves_axes() {
        // shape [2, 3] (x fastest): value = x + 10 y.
        let data: Vec<u8> = (0..3)
            .flat_map(|y| (0..2).map(move |x| x + 10 * y))
            .collect();
        let t = permute(&data, &[2, 3], &[1, 0], 1);
        // shape [3, 2]: value at (y, x) fastest y.
        assert_eq!(t, vec![0, 10, 20, 1, 11, 21]);
        assert_eq!(permute(&data, &[2, 3], &[0, 1], 1), data);
    }
}
