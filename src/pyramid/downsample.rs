//! The downsampling kernels of pyramid.md: one box of the previous level in, one box of the next out.
//!
//! Semantics are tensorstore's `downsample` driver, bit for bit: output voxel
//! `i` reduces the window `[f·i, min(f·i+f, n))` per axis (no padding at the
//! far edges). Arrays are in N5 order (dimension 0 fastest).
//!
//! Every kernel walks the output one *row* (all output voxels sharing
//! dimensions 1.. coordinates) at a time. For each row, the input rows of its
//! windows are visited in window order (dimension 1 fastest), each decoded
//! once into an aligned scratch row:
//!
//! - `mean`, `min`, `max` fold each input row into a row of accumulators,
//!   window offsets along dimension 0 innermost. That is the order in which
//!   tensorstore adds the elements of a window, so float means come out
//!   bit-identical.
//! - `median` and `mode` gather the full windows of the row into slots laid
//!   out structure-of-arrays (slot `k` of every window contiguous), then sort
//!   all windows at once with a sorting network whose compare-exchange steps
//!   run across the windows; partial windows, windows too large for a network
//!   and float windows holding NaN take a scalar path.
//! - `stride` copies the first voxel of each window.

use std::collections::HashMap;

use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};

/// A downsampling method: how the voxels of one window reduce to one voxel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The window's first voxel.
    Stride,
    /// The arithmetic mean; integers round to nearest, ties to even.
    Mean,
    /// The lower median: the value of rank ⌊(m−1)/2⌋ among the m values.
    Median,
    /// The most frequent value; among tied values the smallest.
    Mode,
    /// The smallest value (floats: NaN ignored; a window of NaN only gives +inf).
    Min,
    /// The largest value (floats: NaN ignored; a window of NaN only gives −inf).
    Max,
}

impl Method {
    /// Every method, in the order of the command line's help.
    pub const ALL: [Method; 6] = [
        Method::Stride,
        Method::Mean,
        Method::Median,
        Method::Mode,
        Method::Min,
        Method::Max,
    ];

    /// The method named `name` (`stride`, `mean`, `median`, `mode`, `min`,
    /// `max`, as tensorstore spells them), or `None`.
    pub fn parse(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The method's name, as [`Method::parse`] takes it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Stride => "stride",
            Method::Mean => "mean",
            Method::Median => "median",
            Method::Mode => "mode",
            Method::Min => "min",
            Method::Max => "max",
        }
    }

    /// Whether an output voxel stands for its whole window (every method but
    /// [`Method::Stride`], which samples the window's first voxel): this
    /// decides where a level's voxels are placed.
    pub fn is_pooling(self) -> bool {
        self != Method::Stride
    }
}

/// Whether the kernels reduce elements of `dtype`: the ten integer and
/// float types.
pub fn reduces(dtype: &DataType) -> bool {
    dtype.is_numeric()
}

/// The shape of the box that [`downsample`] makes from a box of shape
/// `in_shape`: `ceil(n/f)` per axis (a factor 0 counts as 1 here;
/// [`downsample`] refuses it).
pub fn out_shape(in_shape: &[u64], factors: &[u64]) -> Vec<u64> {
    in_shape
        .iter()
        .zip(factors)
        .map(|(&n, &f)| n.div_ceil(f.max(1)))
        .collect()
}

/// Reduces one box of a level to the box of the next level.
///
/// `input`: elements of `dtype` in native byte order, dimension 0 fastest,
/// shape `in_shape`. The box starts at a multiple of `factors` in the level;
/// its far edge is a multiple of the factors or the level's edge (so the last
/// window along an axis may be partial: it holds only the voxels that exist;
/// no padding). `out`: shape [`out_shape`]`(in_shape, factors)`, same dtype.
///
/// Errors: [`ErrorKind::Unsupported`] for a type other than the ten numeric
/// ones, [`ErrorKind::InvalidArgument`] when `factors` and `in_shape` differ
/// in length or a factor is 0, [`ErrorKind::BufferSize`] when `input` or
/// `out` is not exactly the size its shape needs.
pub fn downsample(
    dtype: &DataType,
    method: Method,
    input: &[u8],
    in_shape: &[u64],
    factors: &[u64],
    out: &mut [u8],
) -> Result<()> {
    if in_shape.len() != factors.len() {
        return Err(Error::invalid_argument(format!(
            "downsample: {} factors for a box of rank {}",
            factors.len(),
            in_shape.len()
        )));
    }
    if let Some(axis) = factors.iter().position(|&f| f == 0) {
        return Err(Error::invalid_argument(format!(
            "downsample: factor 0 on axis {axis}"
        )));
    }
    if !reduces(dtype) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "downsample: data type {} is not numeric (only the ten integer and float types are)",
                dtype.name()
            ),
        ));
    }
    let size = dtype.size();
    let out_dims = out_shape(in_shape, factors);
    let in_bytes = byte_len(in_shape, size, "input")?;
    let out_bytes = byte_len(&out_dims, size, "output")?;
    if input.len() as u128 != in_bytes {
        return Err(Error::new(
            ErrorKind::BufferSize,
            format!(
                "downsample: the input buffer holds {} bytes; shape {:?} of {} needs {in_bytes}",
                input.len(),
                in_shape,
                dtype.name()
            ),
        ));
    }
    if out.len() as u128 != out_bytes {
        return Err(Error::new(
            ErrorKind::BufferSize,
            format!(
                "downsample: the output buffer holds {} bytes; shape {:?} of {} needs {out_bytes}",
                out.len(),
                out_dims,
                dtype.name()
            ),
        ));
    }
    if in_bytes == 0 {
        return Ok(());
    }
    // The buffer sizes fit in memory, so every extent fits in usize; a factor
    // beyond its extent acts as the extent.
    let geom = if in_shape.is_empty() {
        Geom::new(&[1], &[1])
    } else {
        let n: Vec<usize> = in_shape.iter().map(|&n| n as usize).collect();
        let f: Vec<usize> = factors
            .iter()
            .zip(in_shape)
            .map(|(&f, &n)| f.min(n) as usize)
            .collect();
        Geom::new(&n, &f)
    };
    match dtype {
        DataType::U8 => run::<u8, u32, u64>(&geom, method, input, out),
        DataType::U16 => run::<u16, u32, u64>(&geom, method, input, out),
        DataType::U32 => run::<u32, u64, u64>(&geom, method, input, out),
        DataType::U64 => run::<u64, u128, u128>(&geom, method, input, out),
        DataType::I8 => run::<i8, i32, i64>(&geom, method, input, out),
        DataType::I16 => run::<i16, i32, i64>(&geom, method, input, out),
        DataType::I32 => run::<i32, i64, i64>(&geom, method, input, out),
        DataType::I64 => run::<i64, i128, i128>(&geom, method, input, out),
        DataType::F32 => run::<f32, f32, f32>(&geom, method, input, out),
        DataType::F64 => run::<f64, f64, f64>(&geom, method, input, out),
        _ => unreachable!("checked above"),
    }
    Ok(())
}

/// The byte length of a box of `shape` with `size`-byte elements, refused
/// when it could not be a buffer.
fn byte_len(shape: &[u64], size: usize, what: &str) -> Result<u128> {
    let mut total: u128 = size as u128;
    for &n in shape {
        total = total.saturating_mul(n as u128);
    }
    if total > isize::MAX as u128 {
        return Err(Error::new(
            ErrorKind::BufferSize,
            format!("downsample: an {what} box of shape {shape:?} does not fit in memory"),
        ));
    }
    Ok(total)
}

// ---------------------------------------------------------------- elements

/// A numeric element type: its native-byte-order encoding and what the
/// reductions need to know about it.
trait Elem: Copy + PartialOrd + Default + 'static {
    /// Bytes per element.
    const SIZE: usize;
    /// The start value of `min` (+inf or the type's maximum).
    const MIN_INIT: Self;
    /// The start value of `max` (−inf or the type's minimum).
    const MAX_INIT: Self;
    /// Whether the type has NaN values.
    const FLOAT: bool;
    /// The element in `b` (exactly `SIZE` bytes).
    fn load(b: &[u8]) -> Self;
    /// Writes the element into `b` (exactly `SIZE` bytes).
    fn store(self, b: &mut [u8]);
    /// Whether the element is NaN.
    fn is_nan(self) -> bool;
    /// A NaN (floats; integers give 0, never used).
    fn nan() -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const MIN_INIT: Self = <$t>::MAX;
            const MAX_INIT: Self = <$t>::MIN;
            const FLOAT: bool = false;
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().unwrap())
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            fn nan() -> Self {
                0
            }
        }
    )*};
}
int_elem!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const MIN_INIT: Self = <$t>::INFINITY;
            const MAX_INIT: Self = <$t>::NEG_INFINITY;
            const FLOAT: bool = true;
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().unwrap())
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn nan() -> Self {
                <$t>::NAN
            }
        }
    )*};
}
float_elem!(f32, f64);

/// A sum of elements of `E` for `mean`: exact for integers (as long as
/// [`MeanAcc::fits`] holds), the element type itself for floats.
trait MeanAcc<E>: Copy {
    /// The empty sum.
    const ZERO: Self;
    /// Whether sums of `count` elements of `E` cannot overflow.
    fn fits(count: u64) -> bool;
    /// The sum plus `e`.
    fn add(self, e: E) -> Self;
    /// The sum divided by `count` (integers: rounded to nearest, ties to even).
    fn mean(self, count: u64) -> E;
}

/// Integer sums: exact; the mean is rounded to nearest, ties to even.
macro_rules! int_acc {
    ($acc:ty, $wide:ty; $($e:ty),*) => {$(
        impl MeanAcc<$e> for $acc {
            const ZERO: Self = 0;
            #[inline(always)]
            fn fits(count: u64) -> bool {
                let worst = (<$e>::MAX as i128).max(-(<$e>::MIN as i128)) as u128;
                worst.checked_mul(count as u128).is_some_and(|w| w <= <$acc>::MAX as u128)
            }
            #[inline(always)]
            fn add(self, e: $e) -> Self {
                self + e as $acc
            }
            #[inline(always)]
            fn mean(self, count: u64) -> $e {
                let n = count as $acc;
                // Floor division (the remainder is in [0, n)), then round
                // half to even: up when 2r > n, or 2r = n with q odd.
                let (q, r) = if count.is_power_of_two() {
                    let k = count.trailing_zeros();
                    (self >> k, self & (n - 1))
                } else {
                    (self.div_euclid(n), self.rem_euclid(n))
                };
                let up = (r as $wide) * 2 + ((q & 1) as $wide) > (n as $wide);
                (q + up as $acc) as $e
            }
        }
    )*};
}
int_acc!(u32, u64; u8, u16);
int_acc!(u64, u128; u8, u16, u32);
int_acc!(i32, i64; i8, i16);
int_acc!(i64, i128; i8, i16, i32);

/// 128-bit sums for 64-bit elements; divided in 64 bits when they fit.
macro_rules! wide_acc {
    ($acc:ty, $narrow:ty, $e:ty) => {
        impl MeanAcc<$e> for $acc {
            const ZERO: Self = 0;
            fn fits(count: u64) -> bool {
                // |sum| ≤ 2^64 · count < 2^127 for any count a buffer can hold.
                count < 1 << 62
            }
            #[inline(always)]
            fn add(self, e: $e) -> Self {
                self + e as $acc
            }
            #[inline(always)]
            fn mean(self, count: u64) -> $e {
                if let Ok(s) = <$narrow>::try_from(self) {
                    // 64-bit division is much faster than 128-bit.
                    let n = count as $narrow;
                    let (q, r) = (s.div_euclid(n), s.rem_euclid(n));
                    let up = (r as $acc) * 2 + ((q & 1) as $acc) > (n as $acc);
                    return (q as $acc + up as $acc) as $e;
                }
                let n = count as $acc;
                let (q, r) = (self.div_euclid(n), self.rem_euclid(n));
                let up = r * 2 + (q & 1) > n;
                (q + up as $acc) as $e
            }
        }
    };
}
wide_acc!(u128, u64, u64);
wide_acc!(i128, i64, i64);

macro_rules! float_acc {
    ($($t:ty),*) => {$(
        impl MeanAcc<$t> for $t {
            const ZERO: Self = 0.0;
            fn fits(_: u64) -> bool {
                true
            }
            #[inline(always)]
            fn add(self, e: $t) -> Self {
                self + e
            }
            #[inline(always)]
            fn mean(self, count: u64) -> $t {
                self / count as $t
            }
        }
    )*};
}
float_acc!(f32, f64);

// ---------------------------------------------------------------- geometry

/// The box and its windows, in elements: extents `n`, factors `f` (clamped
/// to the extents), output extents `o`, input strides.
struct Geom {
    n: Vec<usize>,
    f: Vec<usize>,
    o: Vec<usize>,
    stride: Vec<usize>,
}

impl Geom {
    fn new(n: &[usize], f: &[usize]) -> Geom {
        let o = n.iter().zip(f).map(|(&n, &f)| n.div_ceil(f)).collect();
        let mut stride = Vec::with_capacity(n.len());
        let mut s = 1;
        for &n in n {
            stride.push(s);
            s *= n;
        }
        Geom {
            n: n.to_vec(),
            f: f.to_vec(),
            o,
            stride,
        }
    }

    /// The number of output rows (output voxels over dimensions 1..).
    fn out_rows(&self) -> usize {
        self.o[1..].iter().product()
    }

    /// The largest window: the product of the factors.
    fn window(&self) -> usize {
        self.f.iter().product()
    }

    /// Calls `each(row, starts)` for every output row in order, `starts` the
    /// element offsets of the input rows its windows span, in window order
    /// (dimension 1 fastest).
    fn for_each_row(&self, mut each: impl FnMut(usize, &[usize])) {
        let rank = self.n.len();
        let mut pos = vec![0usize; rank]; // output position, dims 1..
        let mut off = vec![0usize; rank]; // window offset, dims 1..
        let mut bound = vec![0usize; rank];
        let mut starts = Vec::with_capacity(self.f[1..].iter().product());
        for row in 0..self.out_rows() {
            let mut base = 0;
            for d in 1..rank {
                let lo = pos[d] * self.f[d];
                base += lo * self.stride[d];
                bound[d] = self.f[d].min(self.n[d] - lo);
                off[d] = 0;
            }
            starts.clear();
            'window: loop {
                let s: usize = (1..rank).map(|d| off[d] * self.stride[d]).sum();
                starts.push(base + s);
                for d in 1..rank {
                    off[d] += 1;
                    if off[d] < bound[d] {
                        continue 'window;
                    }
                    off[d] = 0;
                }
                break;
            }
            each(row, &starts);
            for (p, &o) in pos.iter_mut().zip(&self.o).skip(1) {
                *p += 1;
                if *p < o {
                    break;
                }
                *p = 0;
            }
        }
    }
}

/// Decodes `dst.len()` elements from `src`.
#[inline]
fn decode<E: Elem>(src: &[u8], dst: &mut [E]) {
    for (d, c) in dst.iter_mut().zip(src.chunks_exact(E::SIZE)) {
        *d = E::load(c);
    }
}

/// Encodes `src` into `dst`.
#[inline]
fn encode<E: Elem>(src: &[E], dst: &mut [u8]) {
    for (s, c) in src.iter().zip(dst.chunks_exact_mut(E::SIZE)) {
        s.store(c);
    }
}

// ---------------------------------------------------------------- kernels

/// Runs `method` over the box for element type `E`; `mean` sums in `A` when
/// the window fits it, else in `B`.
fn run<E, A, B>(g: &Geom, method: Method, input: &[u8], out: &mut [u8])
where
    E: Elem,
    A: MeanAcc<E>,
    B: MeanAcc<E>,
{
    match method {
        Method::Stride => stride::<E>(g, input, out),
        Method::Mean if A::fits(g.window() as u64) => fold::<E, A>(
            g,
            input,
            out,
            A::ZERO,
            #[inline(always)]
            |a, x| a.add(x),
            |a, count| a.mean(count as u64),
        ),
        Method::Mean => fold::<E, B>(
            g,
            input,
            out,
            B::ZERO,
            #[inline(always)]
            |a, x| a.add(x),
            |a, count| a.mean(count as u64),
        ),
        Method::Min => fold::<E, E>(
            g,
            input,
            out,
            E::MIN_INIT,
            // `x < a` is false for a NaN `x`: NaN is skipped.
            #[inline(always)]
            |a, x| if x < a { x } else { a },
            |a, _| a,
        ),
        Method::Max => fold::<E, E>(
            g,
            input,
            out,
            E::MAX_INIT,
            #[inline(always)]
            |a, x| if a < x { x } else { a },
            |a, _| a,
        ),
        Method::Median => select::<E>(g, input, out, false),
        Method::Mode => select::<E>(g, input, out, true),
    }
}

/// `stride`: the first voxel of each window.
fn stride<E: Elem>(g: &Geom, input: &[u8], out: &mut [u8]) {
    let s = E::SIZE;
    let (f0, o0) = (g.f[0], g.o[0]);
    g.for_each_row(|row, starts| {
        let dst = &mut out[row * o0 * s..(row + 1) * o0 * s];
        let src = &input[starts[0] * s..];
        if f0 == 1 {
            dst.copy_from_slice(&src[..o0 * s]);
        } else {
            for (i, d) in dst.chunks_exact_mut(s).enumerate() {
                d.copy_from_slice(&src[i * f0 * s..i * f0 * s + s]);
            }
        }
    });
}

/// The accumulating methods (`mean`, `min`, `max`): every input row of a
/// window folded into a row of accumulators with `op` (window offsets along
/// dimension 0 innermost, as tensorstore adds them), then `finish(acc,
/// count)` per output voxel.
fn fold<E: Elem, A: Copy>(
    g: &Geom,
    input: &[u8],
    out: &mut [u8],
    init: A,
    op: impl Fn(A, E) -> A + Copy,
    finish: impl Fn(A, usize) -> E,
) {
    let s = E::SIZE;
    let (n0, f0, o0) = (g.n[0], g.f[0], g.o[0]);
    let mut line = vec![E::default(); n0];
    let mut acc = vec![init; o0];
    let mut res = vec![E::default(); o0];
    // Windows along dimension 0 holding f0 voxels; the last may hold fewer.
    let full = n0 / f0;
    let tail = n0 - full * f0;
    g.for_each_row(|row, starts| {
        acc.fill(init);
        for &start in starts {
            decode(&input[start * s..(start + n0) * s], &mut line);
            fold_line(&mut acc, &line, f0, op);
        }
        let outer = starts.len();
        for (r, &a) in res[..full].iter_mut().zip(&acc[..full]) {
            *r = finish(a, outer * f0);
        }
        if tail > 0 {
            res[full] = finish(acc[full], outer * tail);
        }
        encode(&res, &mut out[row * o0 * s..(row + 1) * o0 * s]);
    });
}

/// Folds `line` into `acc` (`acc[i]` takes `line[f0·i .. f0·i+f0]`, in order).
#[inline(always)]
fn fold_line<E: Copy, A: Copy>(acc: &mut [A], line: &[E], f0: usize, op: impl Fn(A, E) -> A) {
    match f0 {
        1 => {
            for (a, &x) in acc.iter_mut().zip(line) {
                *a = op(*a, x);
            }
        }
        2 => {
            let pairs = line.chunks_exact(2);
            let rest = pairs.remainder();
            for (a, p) in acc.iter_mut().zip(pairs) {
                *a = op(op(*a, p[0]), p[1]);
            }
            if let [x] = rest {
                let last = acc.len() - 1;
                acc[last] = op(acc[last], *x);
            }
        }
        _ => {
            for (a, w) in acc.iter_mut().zip(line.chunks(f0)) {
                for &x in w {
                    *a = op(*a, x);
                }
            }
        }
    }
}

/// Windows up to this size are sorted with a network across the windows of a
/// row; larger ones one by one.
const NETWORK_MAX: usize = 64;

/// A sorting network on `m` slots (Batcher's odd–even merge sort, which
/// works for any `m`): compare-exchange pairs `(lo, hi)`, `lo < hi`, in order.
fn sorting_network(m: usize) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut p = 1;
    while p < m {
        let mut k = p;
        while k >= 1 {
            let mut j = k % p;
            while j + k < m {
                for i in 0..k.min(m - j - k) {
                    if (i + j) / (2 * p) == (i + j + k) / (2 * p) {
                        pairs.push((i + j, i + j + k));
                    }
                }
                j += 2 * k;
            }
            k /= 2;
        }
        p *= 2;
    }
    pairs
}

/// The steps of `network` that the value landing in slot `target` depends
/// on (a selection network).
fn prune_network(network: &[(usize, usize)], m: usize, target: usize) -> Vec<(usize, usize)> {
    let mut needed = vec![false; m];
    needed[target] = true;
    let mut kept = Vec::new();
    for &(a, b) in network.iter().rev() {
        if needed[a] || needed[b] {
            needed[a] = true;
            needed[b] = true;
            kept.push((a, b));
        }
    }
    kept.reverse();
    kept
}

/// The networks of one window size: the full sort (mode) and the steps the
/// lower median needs.
struct Networks {
    sort: Vec<(usize, usize)>,
    median: Vec<(usize, usize)>,
}

/// `median` (`mode` false) and `mode`: each row's full windows gathered into
/// slots and reduced together by a network, the rest one window at a time.
fn select<E: Elem>(g: &Geom, input: &[u8], out: &mut [u8], mode: bool) {
    let s = E::SIZE;
    let (n0, f0, o0) = (g.n[0], g.f[0], g.o[0]);
    let full = n0 / f0;
    let tail = n0 - full * f0;
    let mut line = vec![E::default(); n0];
    let mut slots: Vec<E> = Vec::new();
    let mut tail_win: Vec<E> = Vec::new();
    let mut win: Vec<E> = Vec::new();
    let mut res = vec![E::default(); o0];
    let mut scratch = ModeScratch::default();
    let mut networks: HashMap<usize, Networks> = HashMap::new();
    g.for_each_row(|row, starts| {
        let m = starts.len() * f0;
        slots.resize(m * full, E::default());
        tail_win.clear();
        for (r, &start) in starts.iter().enumerate() {
            decode(&input[start * s..(start + n0) * s], &mut line);
            for dx in 0..f0 {
                let slot = &mut slots[(r * f0 + dx) * full..(r * f0 + dx + 1) * full];
                if f0 == 1 {
                    slot.copy_from_slice(&line[..full]);
                } else {
                    for (d, w) in slot.iter_mut().zip(line.chunks_exact(f0)) {
                        *d = w[dx];
                    }
                }
            }
            tail_win.extend_from_slice(&line[full * f0..]);
        }
        let by_network =
            full > 0 && m <= NETWORK_MAX && !(E::FLOAT && slots.iter().any(|x| x.is_nan()));
        if by_network {
            let nets = networks.entry(m).or_insert_with(|| {
                let sort = sorting_network(m);
                let median = prune_network(&sort, m, (m - 1) / 2);
                Networks { sort, median }
            });
            if mode {
                network_sort(&mut slots, full, &nets.sort);
                sorted_mode(&slots, full, m, &mut res[..full], &mut scratch);
            } else {
                network_sort(&mut slots, full, &nets.median);
                res[..full].copy_from_slice(&slots[(m - 1) / 2 * full..((m - 1) / 2 + 1) * full]);
            }
        } else {
            for (i, r) in res[..full].iter_mut().enumerate() {
                win.clear();
                win.extend((0..m).map(|k| slots[k * full + i]));
                *r = reduce_window(&mut win, mode);
            }
        }
        if tail > 0 {
            res[full] = reduce_window(&mut tail_win, mode);
        }
        encode(&res, &mut out[row * o0 * s..(row + 1) * o0 * s]);
    });
}

/// Runs the compare-exchange steps over `slots` (slot `k` of every window is
/// `slots[k·lanes .. (k+1)·lanes]`), so that each window ends sorted in the
/// slots the steps cover.
fn network_sort<E: Elem>(slots: &mut [E], lanes: usize, steps: &[(usize, usize)]) {
    for &(a, b) in steps {
        let (left, right) = slots.split_at_mut(b * lanes);
        let lo = &mut left[a * lanes..(a + 1) * lanes];
        let hi = &mut right[..lanes];
        for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
            let (p, q) = (*x, *y);
            let swap = q < p;
            *x = if swap { q } else { p };
            *y = if swap { p } else { q };
        }
    }
}

/// Scratch rows of the run-length scan of [`sorted_mode`].
#[derive(Default)]
struct ModeScratch {
    run: Vec<u32>,
    best: Vec<u32>,
}

/// The mode of each of `lanes` sorted windows of `m` slots: the value of the
/// first longest run (runs ascend, so ties go to the smallest value).
fn sorted_mode<E: Elem>(slots: &[E], lanes: usize, m: usize, res: &mut [E], sc: &mut ModeScratch) {
    sc.run.clear();
    sc.run.resize(lanes, 1);
    sc.best.clear();
    sc.best.resize(lanes, 1);
    res.copy_from_slice(&slots[..lanes]);
    for k in 1..m {
        let prev = &slots[(k - 1) * lanes..k * lanes];
        let cur = &slots[k * lanes..(k + 1) * lanes];
        for i in 0..lanes {
            let run = if cur[i] == prev[i] { sc.run[i] + 1 } else { 1 };
            sc.run[i] = run;
            let longer = run > sc.best[i];
            sc.best[i] = if longer { run } else { sc.best[i] };
            res[i] = if longer { cur[i] } else { res[i] };
        }
    }
}

/// The median or mode of one window (reordered in place), taken over its
/// non-NaN values; a window of NaN only gives NaN.
fn reduce_window<E: Elem>(win: &mut Vec<E>, mode: bool) -> E {
    if E::FLOAT {
        win.retain(|x| !x.is_nan());
        if win.is_empty() {
            return E::nan();
        }
    }
    // No NaN is left, so the order is total (−0.0 and +0.0 tie).
    let order = |a: &E, b: &E| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal);
    if !mode {
        let k = (win.len() - 1) / 2;
        return *win.select_nth_unstable_by(k, order).1;
    }
    win.sort_unstable_by(order);
    let (mut best, mut best_len, mut run) = (win[0], 1, 1);
    for k in 1..win.len() {
        run = if win[k] == win[k - 1] { run + 1 } else { 1 };
        if run > best_len {
            best_len = run;
            best = win[k];
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Downsamples `input` (elements of `E`, native order) and decodes the result.
    fn ds<E: Elem>(
        dtype: DataType,
        method: Method,
        input: &[E],
        shape: &[u64],
        f: &[u64],
    ) -> Vec<E> {
        let mut bytes = vec![0u8; input.len() * E::SIZE];
        encode(input, &mut bytes);
        let n: u64 = out_shape(shape, f).iter().product();
        let mut out = vec![0u8; n as usize * E::SIZE];
        downsample(&dtype, method, &bytes, shape, f, &mut out).unwrap();
        let mut res = vec![E::default(); n as usize];
        decode(&out, &mut res);
        res
    }

    fn ds1<E: Elem>(dtype: DataType, method: Method, input: &[E]) -> E {
        let r = ds(
            dtype,
            method,
            input,
            &[input.len() as u64],
            &[input.len() as u64],
        );
        assert_eq!(r.len(), 1);
        r[0]
    }

    /// A reference reduction of one window, straight from the contract.
    fn reference(method: Method, w: &[f64]) -> f64 {
        let mut v: Vec<f64> = w.iter().copied().filter(|x| !x.is_nan()).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        match method {
            Method::Stride => w[0],
            Method::Mean => w.iter().sum::<f64>() / w.len() as f64,
            Method::Min => v.first().copied().unwrap_or(f64::INFINITY),
            Method::Max => v.last().copied().unwrap_or(f64::NEG_INFINITY),
            Method::Median => v
                .get(v.len().wrapping_sub(1) / 2)
                .copied()
                .unwrap_or(f64::NAN),
            Method::Mode => {
                let mut best = (0, f64::NAN);
                let mut i = 0;
                while i < v.len() {
                    let j = v[i..].iter().take_while(|&&x| x == v[i]).count();
                    if j > best.0 {
                        best = (j, v[i]);
                    }
                    i += j;
                }
                best.1
            }
        }
    }

    /// The window of output voxel `pos` in a box of `shape` with factors `f`.
    fn window_of(input: &[f64], shape: &[usize], f: &[usize], pos: &[usize]) -> Vec<f64> {
        let rank = shape.len();
        let lo: Vec<usize> = (0..rank).map(|d| pos[d] * f[d]).collect();
        let hi: Vec<usize> = (0..rank).map(|d| (lo[d] + f[d]).min(shape[d])).collect();
        let mut idx = lo.clone();
        let mut w = Vec::new();
        'outer: loop {
            let mut lin = 0;
            let mut st = 1;
            for d in 0..rank {
                lin += idx[d] * st;
                st *= shape[d];
            }
            w.push(input[lin]);
            for d in 0..rank {
                idx[d] += 1;
                if idx[d] < hi[d] {
                    continue 'outer;
                }
                idx[d] = lo[d];
            }
            break;
        }
        w
    }

    /// Checks every method on u16 label-like data against the reference.
    fn check_against_reference(shape: &[usize], f: &[usize], seed: u64) {
        let total: usize = shape.iter().product();
        let mut x = seed | 1;
        let data: Vec<u16> = (0..total)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 5) as u16 * 1000
            })
            .collect();
        let data_f: Vec<f64> = data.iter().map(|&v| v as f64).collect();
        let shape64: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
        let f64s: Vec<u64> = f.iter().map(|&n| n as u64).collect();
        let oshape: Vec<usize> = out_shape(&shape64, &f64s)
            .iter()
            .map(|&n| n as usize)
            .collect();
        for method in Method::ALL {
            let got = ds(DataType::U16, method, &data, &shape64, &f64s);
            let mut pos = vec![0usize; shape.len()];
            for (k, &g) in got.iter().enumerate() {
                let mut rest = k;
                for d in 0..shape.len() {
                    pos[d] = rest % oshape[d];
                    rest /= oshape[d];
                }
                let w = window_of(&data_f, shape, f, &pos);
                let mut want = reference(method, &w);
                if method == Method::Mean {
                    // Integer mean: round half to even.
                    want = want.round_ties_even();
                }
                assert_eq!(
                    g as f64, want,
                    "{method:?} shape {shape:?} f {f:?} at {pos:?}: {w:?}"
                );
            }
        }
    }

    #[test]
    fn method_names() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.name()), Some(m));
            assert_eq!(m.is_pooling(), m != Method::Stride);
        }
        assert_eq!(Method::parse("avg"), None);
        assert_eq!(Method::parse("Mean"), None);
    }

    #[test]
    fn contract_examples() {
        assert_eq!(ds1(DataType::I32, Method::Mean, &[1i32, 2]), 2);
        assert_eq!(ds1(DataType::I32, Method::Mean, &[2i32, 3]), 2);
        assert_eq!(ds1(DataType::I32, Method::Mean, &[-1i32, -2]), -2);
        assert_eq!(ds1(DataType::I32, Method::Mean, &[-2i32, -3]), -2);
        assert_eq!(ds1(DataType::U8, Method::Mean, &[1u8, 2]), 2);
        assert_eq!(ds1(DataType::I8, Method::Mean, &[-2i8, -3]), -2);
        assert_eq!(ds1(DataType::I16, Method::Mean, &[-1i16, -2]), -2);
        assert_eq!(ds1(DataType::I64, Method::Mean, &[-2i64, -3]), -2);
        assert_eq!(ds1(DataType::U64, Method::Mean, &[2u64, 3]), 2);
        assert_eq!(
            ds1(DataType::U64, Method::Mean, &[u64::MAX, u64::MAX]),
            u64::MAX
        );
        assert_eq!(ds1(DataType::U16, Method::Median, &[4u16, 3, 1, 2]), 2);
        assert_eq!(ds1(DataType::I32, Method::Mode, &[7i32, 7, 3, 3]), 3);
        assert_eq!(ds1(DataType::U8, Method::Min, &[4u8, 3, 1, 2]), 1);
        assert_eq!(ds1(DataType::U8, Method::Max, &[4u8, 3, 1, 2]), 4);
        assert_eq!(ds1(DataType::U8, Method::Stride, &[4u8, 3, 1, 2]), 4);
    }

    #[test]
    fn integer_mean_rounding() {
        // Means of two: x.5 goes to the even neighbour.
        for a in -6i32..6 {
            for b in -6i32..6 {
                let want = ((a + b) as f64 / 2.0).round_ties_even() as i32;
                assert_eq!(ds1(DataType::I32, Method::Mean, &[a, b]), want, "{a} {b}");
            }
        }
        // Means of three (no ties) and of six (ties at .5).
        assert_eq!(ds1(DataType::I16, Method::Mean, &[0i16, 0, 1]), 0);
        assert_eq!(ds1(DataType::I16, Method::Mean, &[0i16, 1, 1]), 1);
        assert_eq!(ds1(DataType::I16, Method::Mean, &[0i16, 0, -1]), 0);
        assert_eq!(ds1(DataType::I16, Method::Mean, &[0i16, -1, -1]), -1);
        assert_eq!(ds1(DataType::U32, Method::Mean, &[1u32, 1, 1, 2, 2, 2]), 2);
        assert_eq!(ds1(DataType::U32, Method::Mean, &[0u32, 0, 0, 1, 1, 2]), 1);
        assert_eq!(
            ds1(DataType::I32, Method::Mean, &[0i32, 0, 0, -1, -1, -2]),
            -1
        );
    }

    #[test]
    fn extremes_of_64_bit_types() {
        assert_eq!(
            ds1(DataType::U64, Method::Mean, &[u64::MAX, u64::MAX - 1]),
            u64::MAX - 1
        );
        assert_eq!(
            ds1(DataType::U64, Method::Mean, &[u64::MAX, u64::MAX, 0]),
            u64::MAX / 3 * 2
        );
        assert_eq!(
            ds1(DataType::I64, Method::Mean, &[i64::MIN, i64::MIN]),
            i64::MIN
        );
        assert_eq!(
            ds1(DataType::I64, Method::Mean, &[i64::MAX, i64::MAX]),
            i64::MAX
        );
        assert_eq!(ds1(DataType::I64, Method::Mean, &[i64::MIN, i64::MAX]), 0);
        assert_eq!(
            ds1(DataType::I64, Method::Mean, &[i64::MIN, i64::MIN + 1]),
            i64::MIN
        );
        assert_eq!(
            ds1(DataType::I64, Method::Mean, &[i64::MIN + 1, i64::MIN + 2]),
            i64::MIN + 2
        );
        assert_eq!(
            ds1(DataType::I64, Method::Min, &[0, i64::MIN, i64::MAX]),
            i64::MIN
        );
        assert_eq!(
            ds1(DataType::I64, Method::Max, &[0, i64::MIN, i64::MAX]),
            i64::MAX
        );
        assert_eq!(
            ds1(DataType::U64, Method::Median, &[u64::MAX, 0, 1, u64::MAX]),
            1
        );
        assert_eq!(
            ds1(
                DataType::I64,
                Method::Mode,
                &[i64::MAX, i64::MIN, i64::MAX, i64::MIN]
            ),
            i64::MIN
        );
        assert_eq!(
            ds1(DataType::I8, Method::Mean, &[-128i8, -128, -128, -127]),
            -128
        );
        assert_eq!(ds1(DataType::U32, Method::Mean, &[u32::MAX; 5]), u32::MAX);
        assert_eq!(ds1(DataType::I32, Method::Mean, &[i32::MIN; 5]), i32::MIN);
    }

    #[test]
    #[cfg_attr(miri, ignore = "70000-voxel windows are slow under Miri")]
    fn wide_windows_fall_back_to_wide_sums() {
        // 70000 × 65535 overflows u32: the mean sums in u64.
        let v = vec![u16::MAX; 70000];
        assert_eq!(ds1(DataType::U16, Method::Mean, &v), u16::MAX);
        let v = vec![i16::MIN; 70000];
        assert_eq!(ds1(DataType::I16, Method::Mean, &v), i16::MIN);
    }

    #[test]
    fn float_specials() {
        let nan = f32::NAN;
        let inf = f32::INFINITY;
        assert!(ds1(DataType::F32, Method::Stride, &[nan, 1.0]).is_nan());
        assert!(ds1(DataType::F32, Method::Mean, &[1.0, nan]).is_nan());
        assert!(ds1(DataType::F32, Method::Mean, &[inf, -inf]).is_nan());
        assert_eq!(ds1(DataType::F32, Method::Mean, &[inf, 1.0]), inf);
        assert_eq!(ds1(DataType::F32, Method::Min, &[nan, 3.0, nan, 2.0]), 2.0);
        assert_eq!(ds1(DataType::F32, Method::Max, &[nan, 3.0, nan, 2.0]), 3.0);
        assert_eq!(ds1(DataType::F32, Method::Min, &[nan, nan]), inf);
        assert_eq!(ds1(DataType::F32, Method::Max, &[nan, nan]), -inf);
        assert_eq!(ds1(DataType::F64, Method::Min, &[f64::NAN]), f64::INFINITY);
        assert_eq!(
            ds1(
                DataType::F32,
                Method::Median,
                &[nan, 4.0, 3.0, nan, 1.0, 2.0]
            ),
            2.0
        );
        assert_eq!(
            ds1(DataType::F32, Method::Median, &[nan, 4.0, 3.0, nan, 1.0]),
            3.0
        );
        assert_eq!(
            ds1(DataType::F32, Method::Mode, &[nan, nan, nan, 1.0, 2.0, 2.0]),
            2.0
        );
        assert!(ds1(DataType::F32, Method::Median, &[nan, nan]).is_nan());
        assert!(ds1(DataType::F64, Method::Mode, &[f64::NAN; 3]).is_nan());
        // −0.0 and +0.0 are one value.
        assert_eq!(
            ds1(DataType::F32, Method::Mode, &[-0.0f32, 0.0, 1.0, 1.0, 2.0]),
            0.0
        );
        assert_eq!(
            ds1(DataType::F32, Method::Median, &[-0.0f32, 0.0, 0.0, 5.0]),
            0.0
        );
        assert_eq!(ds1(DataType::F32, Method::Min, &[0.0f32, -0.0, 1.0]), 0.0);
        assert_eq!(ds1(DataType::F32, Method::Min, &[inf, -inf]), -inf);
        assert_eq!(ds1(DataType::F32, Method::Median, &[inf, -inf, inf]), inf);
        // The network path (full windows of 2×2) with and without NaN.
        let v = [1.0f32, nan, 2.0, 2.0, 5.0, 6.0, 7.0, 8.0];
        assert_eq!(
            ds(DataType::F32, Method::Mode, &v, &[4, 2], &[2, 2]),
            vec![1.0, 2.0]
        );
        assert_eq!(
            ds(DataType::F32, Method::Median, &v, &[4, 2], &[2, 2]),
            vec![5.0, 2.0]
        );
        let v = [1.0f32, 3.0, 2.0, 2.0, 5.0, 6.0, 7.0, -0.0];
        assert_eq!(
            ds(DataType::F32, Method::Mode, &v, &[4, 2], &[2, 2]),
            vec![1.0, 2.0]
        );
        assert_eq!(
            ds(DataType::F32, Method::Median, &v, &[4, 2], &[2, 2]),
            vec![3.0, 2.0]
        );
        // Float mean: the sum in window order, in f32, then divided.
        let v = [1.0e8f32, 1.0, -1.0e8, 1.0];
        assert_eq!(
            ds1(DataType::F32, Method::Mean, &v),
            ((((0.0f32 + 1.0e8) + 1.0) - 1.0e8) + 1.0) / 4.0
        );
        assert_eq!(
            ds1(DataType::F32, Method::Mean, &[0.1f32, 0.2, 0.3]),
            (0.1f32 + 0.2 + 0.3) / 3.0
        );
    }

    #[test]
    fn float_mean_sums_in_window_order() {
        // 3-D window 2×2×2: dimension 0 innermost, then 1, then 2.
        let v: Vec<f32> = (0..8)
            .map(|i| 1.0 + (i as f32) * 1.0e-7 + if i == 3 { 1.0e7 } else { 0.0 })
            .collect();
        let mut want = 0.0f32;
        for &x in &v {
            want += x;
        }
        assert_eq!(
            ds(DataType::F32, Method::Mean, &v, &[2, 2, 2], &[2, 2, 2]),
            vec![want / 8.0]
        );
    }

    #[test]
    fn partial_windows_and_factor_one_axes() {
        // Factor 4 on 5: windows of 4 and 1.
        let v = [1u8, 2, 3, 4, 9];
        assert_eq!(ds(DataType::U8, Method::Mean, &v, &[5], &[4]), vec![2, 9]);
        assert_eq!(ds(DataType::U8, Method::Median, &v, &[5], &[4]), vec![2, 9]);
        assert_eq!(ds(DataType::U8, Method::Max, &v, &[5], &[4]), vec![4, 9]);
        assert_eq!(ds(DataType::U8, Method::Stride, &v, &[5], &[4]), vec![1, 9]);
        // A factor larger than the extent: one window.
        assert_eq!(ds(DataType::U8, Method::Mean, &v, &[5], &[100]), vec![4]);
        // Factor 1 everywhere copies.
        for m in Method::ALL {
            assert_eq!(ds(DataType::U8, m, &v, &[5], &[1]), v.to_vec());
        }
        // 3×3 with factors [2,1]: windows of 2 and 1 along dimension 0.
        let v = [1i16, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(
            ds(DataType::I16, Method::Mean, &v, &[3, 3], &[2, 1]),
            vec![2, 3, 4, 6, 8, 9]
        );
        assert_eq!(
            ds(DataType::I16, Method::Min, &v, &[3, 3], &[1, 2]),
            vec![1, 2, 3, 7, 8, 9]
        );
        assert_eq!(
            ds(DataType::I16, Method::Mean, &v, &[3, 3], &[2, 2]),
            vec![3, 4, 8, 9]
        );
    }

    #[test]
    fn every_method_matches_the_reference() {
        check_against_reference(&[7], &[3], 1);
        check_against_reference(&[9, 5], &[2, 2], 2);
        check_against_reference(&[5, 7, 3], &[2, 3, 2], 3);
        check_against_reference(&[8, 6, 4], &[2, 2, 2], 4);
        check_against_reference(&[5, 5], &[4, 4], 5);
        check_against_reference(&[3, 4, 5, 3], &[1, 2, 3, 2], 6);
        check_against_reference(&[3, 3, 2, 3, 4], &[2, 1, 2, 3, 2], 7);
        check_against_reference(&[17, 9, 5], &[4, 3, 5], 8);
        check_against_reference(&[2, 2, 2], &[1, 1, 1], 9);
    }

    #[test]
    #[cfg_attr(miri, ignore = "slow under Miri")]
    fn large_windows_take_the_scalar_path() {
        // 5×5×5 = 125 voxels per window, beyond the networks.
        check_against_reference(&[10, 10, 10], &[5, 5, 5], 10);
    }

    #[test]
    #[cfg_attr(miri, ignore = "2^14 inputs per network are slow under Miri")]
    fn sorting_networks_sort() {
        // The 0-1 principle: a network sorts everything when it sorts all 0/1 inputs.
        for m in 1..=14usize {
            let net = sorting_network(m);
            for bits in 0u32..(1 << m) {
                let mut v: Vec<u32> = (0..m).map(|i| (bits >> i) & 1).collect();
                for &(a, b) in &net {
                    assert!(a < b);
                    if v[b] < v[a] {
                        v.swap(a, b);
                    }
                }
                assert!(v.windows(2).all(|w| w[0] <= w[1]), "m {m}");
            }
        }
        assert_eq!(sorting_network(8).len(), 19);
    }

    #[test]
    fn rank_zero_and_empty_boxes() {
        let mut out = [0u8; 2];
        downsample(
            &DataType::U16,
            Method::Mean,
            &7u16.to_ne_bytes(),
            &[],
            &[],
            &mut out,
        )
        .unwrap();
        assert_eq!(u16::from_ne_bytes(out), 7);
        let mut out = [];
        downsample(
            &DataType::U16,
            Method::Mode,
            &[],
            &[0, 3],
            &[2, 2],
            &mut out,
        )
        .unwrap();
        assert_eq!(out_shape(&[0, 3], &[2, 2]), vec![0, 2]);
    }

    #[test]
    fn unaligned_buffers() {
        let v: Vec<u32> = (0..16).collect();
        let mut bytes = [0u8; 1 + 64];
        encode(&v, &mut bytes[1..]);
        let mut out = [0u8; 1 + 16];
        downsample(
            &DataType::U32,
            Method::Mean,
            &bytes[1..],
            &[4, 4],
            &[2, 2],
            &mut out[1..],
        )
        .unwrap();
        let mut got = vec![0u32; 4];
        decode(&out[1..], &mut got);
        assert_eq!(got, vec![2, 4, 10, 12]);
    }

    #[test]
    fn errors() {
        let mut out = vec![0u8; 4];
        let e = downsample(
            &DataType::U16,
            Method::Mean,
            &[0; 8],
            &[4],
            &[2],
            &mut out[..3],
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BufferSize);
        assert!(e.message().contains("output"), "{}", e.message());
        let e =
            downsample(&DataType::U16, Method::Mean, &[0; 7], &[4], &[2], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BufferSize);
        assert!(e.message().contains("input"), "{}", e.message());
        let e = downsample(
            &DataType::U16,
            Method::Mean,
            &[0; 8],
            &[4],
            &[2, 1],
            &mut out,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let e =
            downsample(&DataType::U16, Method::Mean, &[0; 8], &[4], &[0], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("factor 0"), "{}", e.message());
        for t in [
            DataType::String,
            DataType::Object,
            DataType::Bool,
            DataType::F16,
            DataType::C64,
        ] {
            let e = downsample(&t, Method::Mean, &[0; 8], &[4], &[2], &mut out).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{t:?}");
        }
        let e = downsample(
            &DataType::U8,
            Method::Mean,
            &[],
            &[u64::MAX, u64::MAX],
            &[1, 1],
            &mut [],
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BufferSize);
    }

    /// Input voxels per second of the kernels on 256³ boxes with factors
    /// [2,2,2]: uint16 for every method, on an image (smooth with noise: windows
    /// of distinct values) and on labels (blocks of 16³: windows mostly
    /// uniform), and uint8 and float32 images (run with `--release --ignored
    /// --nocapture`).
    #[test]
    #[ignore = "timing; run in release"]
    fn timing_256_cubed() {
        let n = 256usize;
        let total = n * n * n;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let image: Vec<u16> = (0..total)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((i % 251) as u16)
                    .wrapping_mul(97)
                    .wrapping_add((x % 7) as u16)
            })
            .collect();
        let labels: Vec<u16> = (0..total)
            .map(|i| {
                let (a, b, c) = (i % n / 16, i / n % n / 16, i / n / n / 16);
                ((a + 3 * b + 7 * c) % 13) as u16
            })
            .collect();
        fn time(what: &str, dtype: DataType, method: Method, bytes: &[u8], total: usize) {
            let shape = [256u64; 3];
            let f = [2u64; 3];
            let mut out = vec![0u8; bytes.len() / 8];
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = std::time::Instant::now();
                downsample(&dtype, method, bytes, &shape, &f, &mut out).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{:>6} {what:<12} 256^3 [2,2,2]: {:7.1} ms, {:6.0} M input voxels/s",
                method.name(),
                best * 1e3,
                total as f64 / best / 1e6
            );
        }
        let bytes = |v: &[u16]| {
            let mut b = vec![0u8; v.len() * 2];
            encode(v, &mut b);
            b
        };
        let (image16, labels16) = (bytes(&image), bytes(&labels));
        for method in Method::ALL {
            time("u16 image", DataType::U16, method, &image16, total);
            time("u16 labels", DataType::U16, method, &labels16, total);
        }
        let image8: Vec<u8> = image.iter().map(|&v| v as u8).collect();
        let image_f32: Vec<f32> = image.iter().map(|&v| v as f32 * 0.25).collect();
        let mut bytes_f32 = vec![0u8; total * 4];
        encode(&image_f32, &mut bytes_f32);
        for method in [Method::Mean, Method::Min, Method::Mode] {
            time("u8 image", DataType::U8, method, &image8, total);
            time("f32 image", DataType::F32, method, &bytes_f32, total);
        }
    }
}
