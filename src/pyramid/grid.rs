//! The geometry of a pyramid build: boxes of a level's shard grid, the box
//! of the previous level a box reduces, slabs that bound what one job
//! reads, and the axis permutation of `s0`.

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
