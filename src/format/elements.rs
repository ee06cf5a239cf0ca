//! Elements of variable length (nwb.md §1): the strings and bytes of Zarr
//! `string` and `bytes` arrays and the decoded values of legacy `|O`
//! arrays, held per block as [`Elements`], and the `vlen-utf8` /
//! `vlen-bytes` encoding of a chunk of them (a u32le count, then per
//! element a u32le length and its bytes). Decoding never allocates by a
//! count or length the chunk states beyond what its bytes can hold.

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
/// bytes left over are [`crate::error::ErrorKind::Codec`] errors.
pub(crate) fn decode_vlen(bytes: &[u8], n: usize, what: &str) -> Result<Elements> {
    let count = u32_at(bytes, 0)
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
    let mut data = Vec::with_capacity(bytes.len() - 4 - 4 * n);
    let mut ends = Vec::with_capacity(n);
    let mut at = 4usize;
    for i in 0..n {
        let len = u32_at(bytes, at).ok_or_else(|| {
            Error::codec(format!(
                "{what}: element {i}'s length lies past the chunk's end"
            ))
        })? as usize;
        at += 4;
        let element = at
            .checked_add(len)
            .and_then(|end| bytes.get(at..end))
            .ok_or_else(|| {
                Error::codec(format!(
                    "{what}: element {i} of {len} bytes lies past the chunk's end"
                ))
            })?;
        data.extend_from_slice(element);
        ends.push(data.len());
        at += len;
    }
    if at != bytes.len() {
        return Err(Error::codec(format!(
            "{what}: {} bytes follow the last element",
            bytes.len() - at
        )));
    }
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
        assert_eq!(decode_vlen(&out, 3, "c").unwrap(), e);
        assert_eq!(e.bytes(1), Some(&b""[..]));
        assert!(decode_vlen(&out, 2, "c").is_err());
        for cut in 0..out.len() {
            assert!(decode_vlen(&out[..cut], 3, "c").is_err(), "{cut}");
        }
        let mut extra = out.clone();
        extra.push(0);
        assert!(decode_vlen(&extra, 3, "c").is_err());
        // A count of 2^32-1 in 8 bytes allocates nothing of that size.
        assert!(decode_vlen(&[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0], usize::MAX >> 1, "c").is_err());
        let huge_len = [1u8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, b'a'];
        assert!(decode_vlen(&huge_len, 1, "c").is_err());
        assert!(!e.all_equal(b"a"));
        assert!(encode_vlen(&Elements::Json(vec![]), &mut out).is_err());
    }
}
