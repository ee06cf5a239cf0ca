//! Elements of variable length (nwb.md §1): the strings and bytes of Zarr
//! `string` and `bytes` arrays and the decoded values of legacy `|O`
//! arrays, held per block as [`Elements`], and the `vlen-utf8` /
//! `vlen-bytes` encoding of a chunk of them (a u32le count, then per
//! element a u32le length and its bytes). Decoding never allocates by a
//! count or length the chunk states beyond what its bytes can hold.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{Error, Result};

/// The elements of one block, in the block's N5 order (the C order of the
/// Zarr chunk).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Elements {
    /// Strings (UTF-8, checked when written) or bytes, packed: element `i`
    /// is `data[ends[i - 1]..ends[i]]` (from 0 for the first).
    Packed {
        /// The elements' bytes, one after the other.
        data: Vec<u8>,
        /// Where each element ends in `data`.
        ends: Vec<usize>,
    },
    /// The values of a legacy object array (pickle, json2), as JSON.
    Json(Vec<Value>),
}

impl Elements {
    /// How many elements there are.
    pub(crate) fn len(&self) -> usize {
        match self {
            Elements::Packed { ends, .. } => ends.len(),
            Elements::Json(v) => v.len(),
        }
    }

    /// The bytes of element `i` of packed elements.
    pub(crate) fn bytes(&self, i: usize) -> Option<&[u8]> {
        match self {
            Elements::Packed { data, ends } => {
                let start = if i == 0 { 0 } else { ends[i - 1] };
                Some(&data[start..ends[i]])
            }
            Elements::Json(_) => None,
        }
    }

    /// Whether every element is the bytes `fill`.
    pub(crate) fn all_equal(&self, fill: &[u8]) -> bool {
        (0..self.len()).all(|i| self.bytes(i) == Some(fill))
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at.checked_add(4)?)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// Decodes a `vlen-utf8` or `vlen-bytes` chunk of `n` elements; `what`
/// names the chunk. A count other than `n`, a length past the end, or
/// bytes left over are [`crate::error::ErrorKind::Codec`] errors. The
/// lengths are read first; then the elements' bytes are moved together,
/// in the chunk's own buffer when it is owned (no second buffer), else
/// into one of exactly their size.
pub(crate) fn decode_vlen(bytes: Cow<'_, [u8]>, n: usize, what: &str) -> Result<Elements> {
    let count = u32_at(&bytes, 0)
        .ok_or_else(|| Error::codec(format!("{what}: a variable-length chunk without its count")))?
        as usize;
    if count != n {
        return Err(Error::codec(format!(
            "{what}: the chunk holds {count} elements, the chunk shape {n}"
        )));
    }
    // Every element takes at least its 4-byte length.
    if n > (bytes.len() - 4) / 4 {
        return Err(Error::codec(format!(
            "{what}: {n} elements cannot fit in {} bytes",
            bytes.len()
        )));
    }
    let mut ends = Vec::with_capacity(n);
    let mut at = 4usize;
    let mut end = 0usize;
    for i in 0..n {
        let len = u32_at(&bytes, at).ok_or_else(|| {
            Error::codec(format!(
                "{what}: element {i}'s length lies past the chunk's end"
            ))
        })? as usize;
        at += 4;
        at = at
            .checked_add(len)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| {
                Error::codec(format!(
                    "{what}: element {i} of {len} bytes lies past the chunk's end"
                ))
            })?;
        end += len;
        ends.push(end);
    }
    if at != bytes.len() {
        return Err(Error::codec(format!(
            "{what}: {} bytes follow the last element",
            bytes.len() - at
        )));
    }
    // Element i's bytes follow the count and i + 1 lengths.
    let mut start = 0usize;
    let data = match bytes {
        Cow::Owned(mut buf) => {
            for (i, &e) in ends.iter().enumerate() {
                let from = 8 + 4 * i + start;
                buf.copy_within(from..from + (e - start), start);
                start = e;
            }
            buf.truncate(end);
            buf
        }
        Cow::Borrowed(buf) => {
            let mut data = Vec::with_capacity(end);
            for (i, &e) in ends.iter().enumerate() {
                let from = 8 + 4 * i + start;
                data.extend_from_slice(&buf[from..from + (e - start)]);
                start = e;
            }
            data
        }
    };
    Ok(Elements::Packed { data, ends })
}

/// Appends the `vlen-utf8`/`vlen-bytes` encoding of packed elements to
/// `out`.
pub(crate) fn encode_vlen(elements: &Elements, out: &mut Vec<u8>) -> Result<()> {
    let Elements::Packed { data, ends } = elements else {
        return Err(Error::new(
            crate::error::ErrorKind::Unsupported,
            "legacy object elements (pickle, json2) are not written",
        ));
    };
    let too_long = || Error::codec("an element or chunk of 4 GiB or more has no vlen encoding");
    out.reserve(4 + 4 * ends.len() + data.len());
    out.extend_from_slice(
        &u32::try_from(ends.len())
            .map_err(|_| too_long())?
            .to_le_bytes(),
    );
    let mut start = 0;
    for &end in ends {
        let len = u32::try_from(end - start).map_err(|_| too_long())?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&data[start..end]);
        start = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_and_lies_are_errors() {
        let e = Elements::Packed {
            data: b"abc\xc3\xa9".to_vec(),
            ends: vec![1, 1, 5],
        };
        let mut out = Vec::new();
        encode_vlen(&e, &mut out).unwrap();
        assert_eq!(out, b"\x03\0\0\0\x01\0\0\0a\0\0\0\0\x04\0\0\0bc\xc3\xa9");
        assert_eq!(decode_vlen(Cow::Borrowed(&out), 3, "c").unwrap(), e);
        assert_eq!(decode_vlen(Cow::Owned(out.clone()), 3, "c").unwrap(), e);
        assert_eq!(e.bytes(1), Some(&b""[..]));
        assert!(decode_vlen(Cow::Borrowed(&out), 2, "c").is_err());
        for cut in 0..out.len() {
            assert!(
                decode_vlen(Cow::Borrowed(&out[..cut]), 3, "c").is_err(),
                "{cut}"
            );
            assert!(
                decode_vlen(Cow::Owned(out[..cut].to_vec()), 3, "c").is_err(),
                "{cut}"
            );
        }
        let mut extra = out.clone();
        extra.push(0);
        assert!(decode_vlen(Cow::Owned(extra), 3, "c").is_err());
        // A count of 2^32-1 in 8 bytes allocates nothing of that size.
        assert!(decode_vlen(
            Cow::Borrowed(&[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0]),
            usize::MAX >> 1,
            "c"
        )
        .is_err());
        let huge_len = [1u8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, b'a'];
        assert!(decode_vlen(Cow::Borrowed(&huge_len), 1, "c").is_err());
        assert!(!e.all_equal(b"a"));
        // Many elements of every length, moved together in place and copied.
        let many = Elements::Packed {
            data: (0..5050u32).map(|i| (i % 241) as u8).collect(),
            ends: (1..=100usize)
                .scan(0, |end, len| {
                    *end += len;
                    Some(*end)
                })
                .collect(),
        };
        let mut chunk = Vec::new();
        encode_vlen(&many, &mut chunk).unwrap();
        assert_eq!(
            decode_vlen(Cow::Owned(chunk.clone()), 100, "c").unwrap(),
            many
        );
        assert_eq!(decode_vlen(Cow::Borrowed(&chunk), 100, "c").unwrap(), many);
        assert!(encode_vlen(&Elements::Json(vec![]), &mut out).is_err());
    }
}
