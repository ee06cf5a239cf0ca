//! Box geometry: where a box sits inside a C-contiguous n-dimensional array
//! (dimension 0 fastest), the copy of a box from one array to another, row
//! by row, the check that a buffer holds a shape, and the fill and
//! byte-order conversion of elements. Used from below by the format layer
//! (shards, edge chunks) and by the region code; knows nothing of formats
//! or storage.

use crate::error::{Error, ErrorKind, Result};

/// Where a box sits inside an array: the array's shape and the box's offset
/// in it (elements, dimension 0 fastest).
pub(crate) struct Placement<'a> {
    pub shape: &'a [u64],
    pub offset: &'a [u64],
}

/// Copy a box of `extent` elements of `elem` bytes from `src` to `dst`, each
/// placed as given. The caller ensures the box lies inside both arrays.
///
/// Dimensions along which both arrays are contiguous are merged into longer
/// rows first, and offsets advance incrementally, so the cost is the
/// memcpy of each row plus a few additions (a 64³ block is 4096 rows).
pub(crate) fn copy_box(
    src: &[u8],
    from: Placement,
    dst: &mut [u8],
    to: Placement,
    extent: &[u64],
    elem: usize,
) {
    copy_box_with(src, from, dst, to, extent, elem, |d, s| {
        d.copy_from_slice(s)
    });
}

/// [`copy_box`] with each row copied by `copy_row(dst_row, src_row)`, such
/// as a copy that also converts the byte order.
pub(crate) fn copy_box_with(
    src: &[u8],
    from: Placement,
    dst: &mut [u8],
    to: Placement,
    extent: &[u64],
    elem: usize,
    copy_row: impl Fn(&mut [u8], &[u8]),
) {
    let n = extent.len();
    if extent.contains(&0) {
        return;
    }
    if n == 0 {
        // A rank-0 array: one element.
        copy_row(&mut dst[..elem], &src[..elem]);
        return;
    }
    // Byte strides and starting offsets.
    let mut ss = vec![elem; n];
    let mut ds = vec![elem; n];
    for d in 1..n {
        ss[d] = ss[d - 1] * from.shape[d - 1] as usize;
        ds[d] = ds[d - 1] * to.shape[d - 1] as usize;
    }
    let mut so: usize = (0..n).map(|d| from.offset[d] as usize * ss[d]).sum();
    let mut d_o: usize = (0..n).map(|d| to.offset[d] as usize * ds[d]).sum();
    // Merge leading dimensions that are whole in both arrays into the row.
    let mut row = extent[0] as usize * elem;
    let mut first = 1;
    while first < n
        && extent[first - 1] == from.shape[first - 1]
        && extent[first - 1] == to.shape[first - 1]
    {
        row *= extent[first] as usize;
        first += 1;
    }
    if first == n {
        copy_row(&mut dst[d_o..d_o + row], &src[so..so + row]);
        return;
    }
    // Rows along dimension `first`, then an odometer over the rest.
    let (rows, s1, d1) = (extent[first] as usize, ss[first], ds[first]);
    let mut idx = vec![0u64; n];
    loop {
        let (mut a, mut b) = (so, d_o);
        for _ in 0..rows {
            copy_row(&mut dst[b..b + row], &src[a..a + row]);
            a += s1;
            b += d1;
        }
        let mut d = first + 1;
        loop {
            if d >= n {
                return;
            }
            idx[d] += 1;
            so += ss[d];
            d_o += ds[d];
            if idx[d] < extent[d] {
                break;
            }
            so -= ss[d] * extent[d] as usize;
            d_o -= ds[d] * extent[d] as usize;
            idx[d] = 0;
            d += 1;
        }
    }
}

/// Check that a buffer of `len` bytes holds exactly `prod(shape)` elements
/// of `elem` bytes.
pub(crate) fn check_buffer(shape: &[u64], elem: usize, len: usize) -> Result<()> {
    let expected = shape
        .iter()
        .try_fold(elem as u64, |acc, &s| acc.checked_mul(s));
    if expected != Some(len as u64) {
        return Err(Error::new(
            ErrorKind::BufferSize,
            format!(
                "buffer has {len} bytes but shape {shape:?} of {elem}-byte elements needs {}",
                expected.map_or("more than 2^64".to_string(), |e| e.to_string())
            ),
        ));
    }
    Ok(())
}

/// Fill `buf` with copies of the element `fill`.
pub(crate) fn fill_with(buf: &mut [u8], fill: &[u8]) {
    if fill.iter().all(|&b| b == 0) {
        buf.fill(0);
    } else {
        for c in buf.chunks_exact_mut(fill.len()) {
            c.copy_from_slice(fill);
        }
    }
}

/// Whether every element of `buf` is `fill`, bit for bit.
pub(crate) fn is_fill(buf: &[u8], fill: &[u8]) -> bool {
    if fill.iter().all(|&b| b == 0) {
        let mut words = buf.chunks_exact(8);
        return words.by_ref().all(|w| w == [0u8; 8]) && words.remainder().iter().all(|&b| b == 0);
    }
    buf.chunks_exact(fill.len()).all(|c| c == fill)
}

/// Reverse the bytes of every element of `elem_size` bytes in place (a
/// no-op for single bytes).
pub(crate) fn swap_in_place(data: &mut [u8], elem_size: usize) {
    // Whole-word loads and stores: the compiler turns these loops into
    // vector byte shuffles (6x faster than swapping bytes one by one for
    // 16-bit elements).
    match elem_size {
        2 => {
            for c in data.chunks_exact_mut(2) {
                let v = u16::from_ne_bytes([c[0], c[1]]).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        4 => {
            for c in data.chunks_exact_mut(4) {
                let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        8 => {
            for c in data.chunks_exact_mut(8) {
                let v = u64::from_ne_bytes(c.try_into().expect("8 bytes")).swap_bytes();
                c.copy_from_slice(&v.to_ne_bytes());
            }
        }
        1 => {}
        _ => {
            for c in data.chunks_exact_mut(elem_size.max(1)) {
                c.reverse();
            }
        }
    }
}

/// Copy `src` to `dst` (equal lengths), reversing the bytes of every
/// element of `elem_size` bytes on the way: one pass over the bytes where
/// a copy followed by [`swap_in_place`] would take two.
pub(crate) fn swap_copy(dst: &mut [u8], src: &[u8], elem_size: usize) {
    assert_eq!(dst.len(), src.len(), "swap_copy: lengths differ");
    // As in swap_in_place, whole-word loads and stores become vector byte
    // shuffles.
    match elem_size {
        2 => {
            for (d, s) in dst.chunks_exact_mut(2).zip(src.chunks_exact(2)) {
                d.copy_from_slice(&u16::from_ne_bytes([s[0], s[1]]).swap_bytes().to_ne_bytes());
            }
        }
        4 => {
            for (d, s) in dst.chunks_exact_mut(4).zip(src.chunks_exact(4)) {
                let v = u32::from_ne_bytes([s[0], s[1], s[2], s[3]]).swap_bytes();
                d.copy_from_slice(&v.to_ne_bytes());
            }
        }
        8 => {
            for (d, s) in dst.chunks_exact_mut(8).zip(src.chunks_exact(8)) {
                let v = u64::from_ne_bytes(s.try_into().expect("8 bytes")).swap_bytes();
                d.copy_from_slice(&v.to_ne_bytes());
            }
        }
        0 | 1 => dst.copy_from_slice(src),
        _ => {
            for (d, s) in dst
                .chunks_exact_mut(elem_size)
                .zip(src.chunks_exact(elem_size))
            {
                for (a, b) in d.iter_mut().zip(s.iter().rev()) {
                    *a = *b;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element-by-element definition of copy_box.
    fn naive(
        src: &[u8],
        from: Placement,
        dst: &mut [u8],
        to: Placement,
        extent: &[u64],
        elem: usize,
    ) {
        let total: u64 = extent.iter().product();
        for k in 0..total {
            let (mut rem, mut si, mut di, mut sstride, mut dstride) = (k, 0u64, 0u64, 1u64, 1u64);
            for (d, &e) in extent.iter().enumerate() {
                let i = rem % e;
                rem /= e;
                si += (from.offset[d] + i) * sstride;
                di += (to.offset[d] + i) * dstride;
                sstride *= from.shape[d];
                dstride *= to.shape[d];
            }
            let (si, di) = (si as usize * elem, di as usize * elem);
            dst[di..di + elem].copy_from_slice(&src[si..si + elem]);
        }
    }

    #[test]
    fn swaps_reverse_every_element_of_any_size() {
        let data: Vec<u8> = (0..48u8).collect();
        for size in [1usize, 2, 3, 4, 8, 16] {
            let want: Vec<u8> = data
                .chunks_exact(size)
                .flat_map(|e| e.iter().rev().copied())
                .collect();
            let mut inplace = data.clone();
            swap_in_place(&mut inplace, size);
            assert_eq!(inplace, want, "swap_in_place, {size}-byte elements");
            let mut copied = vec![0u8; data.len()];
            swap_copy(&mut copied, &data, size);
            assert_eq!(copied, want, "swap_copy, {size}-byte elements");
        }
    }

    #[test]
    fn copy_box_matches_the_definition() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        // Miri interprets every step: fewer cases there.
        for _ in 0..if cfg!(miri) { 50 } else { 2000 } {
            let n = 1 + rand(4) as usize;
            let elem = [1, 2, 4, 8][rand(4) as usize];
            let (mut ss, mut ds, mut so, mut d_o, mut ext) =
                (vec![], vec![], vec![], vec![], vec![]);
            for _ in 0..n {
                let e = 1 + rand(5);
                // Sometimes the box spans a whole dimension of both arrays.
                let whole = rand(3) == 0;
                let (sa, da) = if whole {
                    (e, e)
                } else {
                    (e + rand(4), e + rand(4))
                };
                ext.push(e);
                ss.push(sa);
                ds.push(da);
                so.push(rand(sa - e + 1));
                d_o.push(rand(da - e + 1));
            }
            let slen = ss.iter().product::<u64>() as usize * elem;
            let dlen = ds.iter().product::<u64>() as usize * elem;
            let src: Vec<u8> = (0..slen).map(|i| (i * 7 + 3) as u8).collect();
            let mut want = vec![0u8; dlen];
            let mut got = vec![0u8; dlen];
            naive(
                &src,
                Placement {
                    shape: &ss,
                    offset: &so,
                },
                &mut want,
                Placement {
                    shape: &ds,
                    offset: &d_o,
                },
                &ext,
                elem,
            );
            copy_box(
                &src,
                Placement {
                    shape: &ss,
                    offset: &so,
                },
                &mut got,
                Placement {
                    shape: &ds,
                    offset: &d_o,
                },
                &ext,
                elem,
            );
            assert_eq!(
                got, want,
                "shape {ss:?}->{ds:?} off {so:?}->{d_o:?} ext {ext:?} elem {elem}"
            );
        }
    }
}
