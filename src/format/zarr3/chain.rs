//! The Zarr v3 codec chain applied to one chunk held in memory: array →
//! array codecs (`transpose`), one array → bytes codec (`bytes`, or
//! `sharding_indexed` for a whole shard, see `shard`), then bytes → bytes
//! codecs (`gzip`, `zstd`, `blosc`, `crc32c`), and the reverse when
//! decoding. Chunks are arrays in C order of the chunk shape, elements in
//! native byte order, which is also the N5-order block of the reversed
//! shape the API works with.
//!
//! Decoding writes into a buffer of the chunk's exact size and never
//! allocates by a size the input claims: every compressor decodes into a
//! buffer whose size follows from the chunk shape and the codecs after it.

use std::borrow::Cow;

use crate::codec::Compression;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::elements::{decode_vlen, encode_vlen, Elements};

use super::metadata::{CodecSpec, Endian, Shuffle};
use super::shard;

/// A chain of codecs for chunks of one shape and data type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chain {
    /// The codecs, in encoding order.
    pub specs: Vec<CodecSpec>,
    /// Element type.
    pub dtype: DataType,
    /// The chunk shape the chain is applied to (C order).
    pub shape: Vec<u64>,
    /// One element of the fill value (native byte order), for the missing
    /// inner chunks of shards.
    pub fill: Vec<u8>,
}

impl Chain {
    /// The chain `specs` for chunks of `shape` and `dtype` (already checked
    /// by `metadata::parse_chain`) with fill value `fill`.
    pub(crate) fn new(
        specs: Vec<CodecSpec>,
        dtype: DataType,
        shape: Vec<u64>,
        fill: Vec<u8>,
    ) -> Chain {
        Chain {
            specs,
            dtype,
            shape,
            fill,
        }
    }

    /// Bytes of one decoded chunk.
    pub(crate) fn chunk_bytes(&self) -> usize {
        self.shape.iter().product::<u64>() as usize * self.dtype.size()
    }

    /// The array → bytes codec's position.
    fn split(&self) -> usize {
        self.specs
            .iter()
            .position(|c| {
                matches!(
                    c,
                    CodecSpec::Bytes { .. } | CodecSpec::Vlen { .. } | CodecSpec::Sharding { .. }
                )
            })
            .expect("parse_chain checks there is one")
    }

    /// Chunks of variable-length elements have no binary layout: they are
    /// decoded element by element, never by [`Chain::decode`].
    fn check_layout(&self) -> Result<()> {
        if self.dtype.has_layout() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!("chunks of {} elements have no binary layout", self.dtype),
            ))
        }
    }

    /// Whether a stored chunk is its decoded bytes as they are: the chain
    /// is `bytes` alone, in this machine's byte order (or for one-byte
    /// elements), so a reader may copy straight from the stored bytes.
    pub(crate) fn stores_as_is(&self) -> bool {
        self.dtype.has_layout()
            && matches!(
                self.specs.as_slice(),
                [CodecSpec::Bytes { endian }] if endian.is_none_or(|e| e == native())
            )
    }

    /// The sharding codec when this chain is a plain `sharding_indexed` one
    /// (nothing before it or after it), which allows partial reads.
    pub(crate) fn sharding(&self) -> Option<&CodecSpec> {
        match self.specs.as_slice() {
            [s @ CodecSpec::Sharding { .. }] => Some(s),
            _ => None,
        }
    }

    /// The bytes of the chunk after the array → bytes codec: its size when
    /// fixed (`bytes`), `None` for a shard.
    fn array_bytes_size(&self) -> Option<usize> {
        match self.specs[self.split()] {
            CodecSpec::Bytes { .. } => Some(self.chunk_bytes()),
            _ => None,
        }
    }

    /// Decodes a stored chunk into `out` (exactly [`Chain::chunk_bytes`]).
    pub(crate) fn decode(&self, encoded: &[u8], out: &mut [u8]) -> Result<()> {
        self.check_layout()?;
        if out.len() != self.chunk_bytes() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "chunk buffer of {} bytes, {} expected",
                    out.len(),
                    self.chunk_bytes()
                ),
            ));
        }
        let split = self.split();
        // The size after each bytes -> bytes codec, where fixed.
        let mut sizes = Vec::with_capacity(self.specs.len() - split);
        let mut size = self.array_bytes_size();
        sizes.push(size);
        for spec in &self.specs[split + 1..] {
            size = match spec {
                CodecSpec::Crc32c => size.map(|s| s + 4),
                _ => None,
            };
            sizes.push(size);
        }
        // The array -> bytes codec's output goes to `out`, or through a
        // buffer when transposes follow.
        let transposes: Vec<&Vec<usize>> = self.specs[..split]
            .iter()
            .map(|c| match c {
                CodecSpec::Transpose { order } => order,
                _ => unreachable!("only transposes come before the array -> bytes codec"),
            })
            .collect();
        let elem = self.dtype.size();
        let mut array = if transposes.is_empty() {
            None
        } else {
            Some(vec![0u8; out.len()])
        };
        {
            let target: &mut [u8] = array.as_deref_mut().unwrap_or(out);
            // Undo the bytes -> bytes codecs, last first. The compressor
            // right after `bytes` decodes straight into the target.
            let bytes_endian = match &self.specs[split] {
                CodecSpec::Bytes { endian } => Some(*endian),
                _ => None,
            };
            let mut in_target = false;
            let mut current: Cow<[u8]> = Cow::Borrowed(encoded);
            for (i, spec) in self.specs[split + 1..].iter().enumerate().rev() {
                let want = sizes[i];
                current = match spec {
                    CodecSpec::Crc32c => {
                        let len = crc32c_check(&current)?.len();
                        match current {
                            Cow::Borrowed(b) => Cow::Borrowed(&b[..len]),
                            Cow::Owned(mut v) => {
                                v.truncate(len);
                                Cow::Owned(v)
                            }
                        }
                    }
                    compressor => {
                        let want = want.ok_or_else(|| {
                            Error::new(
                                ErrorKind::Unsupported,
                                format!(
                                    "codec '{}' after a codec whose output size varies ('{}') cannot be decoded",
                                    compressor.name(),
                                    self.specs[split + i].name()
                                ),
                            )
                        })?;
                        let codec = byte_codec(compressor)?;
                        crate::codec::check_decoded_size(&codec, &current, want)?;
                        if i == 0 && bytes_endian.is_some() {
                            // `want` is the chunk's size, the target's.
                            codec.decode(&current, target)?;
                            in_target = true;
                            Cow::Borrowed(&[][..])
                        } else {
                            let mut buf = vec![0u8; want];
                            codec.decode(&current, &mut buf)?;
                            Cow::Owned(buf)
                        }
                    }
                };
            }
            // The shape the array -> bytes codec sees.
            let mut inner_shape = self.shape.clone();
            for order in &transposes {
                inner_shape = order.iter().map(|&i| inner_shape[i]).collect();
            }
            match &self.specs[split] {
                CodecSpec::Bytes { endian } => {
                    if !in_target {
                        let data = current
                            .get(..target.len())
                            .filter(|_| current.len() == target.len())
                            .ok_or_else(|| {
                                Error::codec(format!(
                                    "the chunk has {} bytes after its codecs, {} expected",
                                    current.len(),
                                    target.len()
                                ))
                            })?;
                        target.copy_from_slice(data);
                    }
                    if endian.is_some_and(|e| e != native()) {
                        self.dtype.swap_in_place(target);
                    }
                }
                sharding @ CodecSpec::Sharding { .. } => {
                    shard::decode_whole(
                        sharding,
                        self.dtype.clone(),
                        &inner_shape,
                        &self.fill,
                        &current,
                        target,
                    )?;
                }
                _ => unreachable!("split points at the array -> bytes codec"),
            }
        }
        // Undo the transposes, last first.
        if let Some(mut array) = array {
            let mut shapes = vec![self.shape.clone()];
            for order in &transposes {
                let last = shapes.last().expect("one shape at least");
                shapes.push(order.iter().map(|&i| last[i]).collect());
            }
            for (k, order) in transposes.iter().enumerate().rev() {
                let target_is_out = k == 0;
                let mut next = if target_is_out {
                    Vec::new()
                } else {
                    vec![0u8; array.len()]
                };
                let dst: &mut [u8] = if target_is_out { out } else { &mut next };
                untranspose(&array, &shapes[k + 1], order, elem, dst);
                if target_is_out {
                    break;
                }
                array = next;
            }
        }
        Ok(())
    }

    /// Decodes a stored chunk of variable-length elements (`vlen-utf8` or
    /// `vlen-bytes` after any bytes -> bytes codecs, each decoded to
    /// whatever size its data has, up to 2 GiB); `what` names the chunk.
    pub(crate) fn decode_elements(&self, encoded: &[u8], what: &str) -> Result<Elements> {
        let split = self.split();
        if split != 0 || !matches!(self.specs[split], CodecSpec::Vlen { .. }) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{what}: variable-length chunks with codecs before '{}' are not supported",
                    self.specs[split].name()
                ),
            ));
        }
        let limit = crate::format::n5::metadata::MAX_BLOCK_BYTES as usize;
        let mut current: Cow<[u8]> = Cow::Borrowed(encoded);
        for spec in self.specs[split + 1..].iter().rev() {
            current = match spec {
                CodecSpec::Crc32c => {
                    let len = crc32c_check(&current).map_err(|e| e.context(what))?.len();
                    match current {
                        Cow::Borrowed(b) => Cow::Borrowed(&b[..len]),
                        Cow::Owned(mut v) => {
                            v.truncate(len);
                            Cow::Owned(v)
                        }
                    }
                }
                compressor => Cow::Owned(
                    crate::codec::decode_unsized(&byte_codec(compressor)?, &current, limit)
                        .map_err(|e| e.context(what))?,
                ),
            };
        }
        let n = self.shape.iter().product::<u64>() as usize;
        decode_vlen(current, n, what)
    }

    /// Encodes a chunk of variable-length elements (as many as the chunk
    /// shape holds) and appends it to `out`.
    pub(crate) fn encode_elements(&self, elements: &Elements, out: &mut Vec<u8>) -> Result<()> {
        let split = self.split();
        if split != 0 || !matches!(self.specs[split], CodecSpec::Vlen { .. }) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "variable-length chunks with codecs before the array -> bytes codec are not written",
            ));
        }
        let mut bytes = Vec::new();
        encode_vlen(elements, &mut bytes)?;
        for spec in &self.specs[split + 1..] {
            match spec {
                CodecSpec::Crc32c => {
                    let crc = crc32c::crc32c(&bytes);
                    bytes.extend_from_slice(&crc.to_le_bytes());
                }
                compressor => {
                    let mut next = Vec::with_capacity(bytes.len() / 2 + 64);
                    encode_bytes(compressor, &DataType::U8, &bytes, &mut next)?;
                    bytes = next;
                }
            }
        }
        out.extend_from_slice(&bytes);
        Ok(())
    }

    /// Encodes the chunk `data` (native byte order, C order of the chunk
    /// shape) and appends the result to `out`.
    pub(crate) fn encode(&self, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
        self.encode_at(data, None, out)
    }

    /// [`Chain::encode`] of the chunk at the grid position `at` (C order)
    /// of its array: an HDF5 shard's dataset is clipped to the array
    /// (`shard::encode_whole_at`); other chunks do not depend on it.
    pub(crate) fn encode_at(
        &self,
        data: &[u8],
        at: Option<&[u64]>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        self.check_layout()?;
        if data.len() != self.chunk_bytes() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "chunk of {} bytes, {} expected",
                    data.len(),
                    self.chunk_bytes()
                ),
            ));
        }
        let split = self.split();
        let elem = self.dtype.size();
        // Array -> array.
        let mut shape = self.shape.clone();
        let mut array: Cow<[u8]> = Cow::Borrowed(data);
        for spec in &self.specs[..split] {
            if let CodecSpec::Transpose { order } = spec {
                let mut next = vec![0u8; array.len()];
                transpose(&array, &shape, order, elem, &mut next);
                shape = order.iter().map(|&i| shape[i]).collect();
                array = Cow::Owned(next);
            }
        }
        // Bytes -> bytes codecs come after; the last compressor among them
        // appends to `out` itself, and checksums after it are computed over
        // what it appended.
        let rest = &self.specs[split + 1..];
        let last_compressor = rest.iter().rposition(|c| !matches!(c, CodecSpec::Crc32c));
        let start = out.len();
        let mut in_out = false;
        // Array -> bytes: native-order `bytes` passes the chunk through; a
        // shard is assembled in `out` when no compressor follows.
        let mut bytes: Cow<[u8]> = match &self.specs[split] {
            CodecSpec::Bytes { endian } => {
                if endian.is_some_and(|e| e != native()) {
                    let mut swapped = array.into_owned();
                    self.dtype.swap_in_place(&mut swapped);
                    Cow::Owned(swapped)
                } else {
                    array
                }
            }
            sharding @ CodecSpec::Sharding { .. } if last_compressor.is_none() => {
                let written = shard::encode_whole_at(
                    sharding,
                    self.dtype.clone(),
                    &shape,
                    &self.fill,
                    at,
                    &array,
                    out,
                );
                if let Err(e) = written {
                    out.truncate(start);
                    return Err(e);
                }
                in_out = true;
                Cow::Borrowed(&[][..])
            }
            sharding @ CodecSpec::Sharding { .. } => {
                let mut shard = Vec::new();
                shard::encode_whole_at(
                    sharding,
                    self.dtype.clone(),
                    &shape,
                    &self.fill,
                    at,
                    &array,
                    &mut shard,
                )?;
                Cow::Owned(shard)
            }
            _ => unreachable!("split points at the array -> bytes codec"),
        };
        if !in_out && last_compressor.is_none() {
            out.extend_from_slice(&bytes);
            in_out = true;
        }
        for (i, spec) in rest.iter().enumerate() {
            match spec {
                CodecSpec::Crc32c if in_out => {
                    let crc = crc32c::crc32c(&out[start..]);
                    out.extend_from_slice(&crc.to_le_bytes());
                }
                CodecSpec::Crc32c => {
                    let mut with_crc = bytes.into_owned();
                    let crc = crc32c::crc32c(&with_crc);
                    with_crc.extend_from_slice(&crc.to_le_bytes());
                    bytes = Cow::Owned(with_crc);
                }
                compressor if Some(i) == last_compressor => {
                    if let Err(e) = encode_bytes(compressor, &self.dtype, &bytes, out) {
                        out.truncate(start);
                        return Err(e);
                    }
                    in_out = true;
                }
                compressor => {
                    let mut next = Vec::with_capacity(bytes.len() / 2 + 64);
                    encode_bytes(compressor, &self.dtype, &bytes, &mut next)?;
                    bytes = Cow::Owned(next);
                }
            }
        }
        Ok(())
    }
}

/// The bytes before a CRC-32C suffix and the stored checksum.
pub(crate) fn crc32c_split(bytes: &[u8]) -> Result<(&[u8], u32)> {
    if bytes.len() < 4 {
        return Err(Error::codec(format!(
            "crc32c: {} bytes, too short to hold the checksum",
            bytes.len()
        )));
    }
    let (data, crc) = bytes.split_at(bytes.len() - 4);
    Ok((data, u32::from_le_bytes(crc.try_into().expect("4 bytes"))))
}

/// Checks the CRC-32C suffix of `bytes` and returns the bytes before it.
pub(crate) fn crc32c_check(bytes: &[u8]) -> Result<&[u8]> {
    let (data, stored) = crc32c_split(bytes)?;
    let actual = crc32c::crc32c(data);
    if actual != stored {
        return Err(Error::codec(format!(
            "crc32c mismatch: stored {stored:08x}, computed {actual:08x}"
        )));
    }
    Ok(data)
}

/// This machine's byte order.
pub(crate) fn native() -> Endian {
    if cfg!(target_endian = "little") {
        Endian::Little
    } else {
        Endian::Big
    }
}

/// The shared codec that does the work of a bytes -> bytes codec.
fn byte_codec(spec: &CodecSpec) -> Result<Compression> {
    Ok(match spec {
        CodecSpec::Gzip { level } => Compression::Gzip {
            level: *level as i32,
            use_zlib: false,
        },
        CodecSpec::Zstd { level, .. } => Compression::Zstd { level: *level },
        CodecSpec::Blosc {
            cname,
            clevel,
            shuffle,
            blocksize,
            ..
        } => Compression::Blosc {
            cname: cname.clone(),
            clevel: *clevel,
            shuffle: match shuffle {
                Shuffle::None => 0,
                Shuffle::Byte => 1,
                Shuffle::Bit => 2,
            },
            blocksize: *blocksize,
        },
        CodecSpec::Numcodecs { codec, .. } => codec.clone(),
        other => {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("'{}' is not a compressor", other.name()),
            ))
        }
    })
}

/// Compresses `data` with a bytes -> bytes compressor, appending to `out`.
fn encode_bytes(spec: &CodecSpec, dtype: &DataType, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    match spec {
        CodecSpec::Zstd {
            level,
            checksum: true,
        } => crate::codec::zstd_encode_frame(data, *level, true, out),
        CodecSpec::Blosc { typesize, .. } => {
            byte_codec(spec)?.encode(data, *typesize as usize, out)
        }
        // numcodecs' lz4 is a size prefix and one block.
        CodecSpec::Numcodecs { id, .. } if id == "lz4" => {
            crate::codec::lz4_encode_numcodecs(data, out)
        }
        _ => byte_codec(spec)?.encode(data, dtype.size(), out),
    }
}

/// C-order strides (in elements) of `shape`.
fn strides(shape: &[u64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as usize;
    }
    s
}

/// Visits every multi-index of `shape` in C order, giving `f` the element
/// offset along `strides_a` and along `strides_b` (two views of the same
/// elements).
fn walk(shape: &[u64], strides_a: &[usize], strides_b: &[usize], mut f: impl FnMut(usize, usize)) {
    let n: u64 = shape.iter().product();
    if n == 0 {
        return;
    }
    let rank = shape.len();
    let mut idx = vec![0u64; rank];
    let (mut a, mut b) = (0usize, 0usize);
    for _ in 0..n {
        f(a, b);
        for d in (0..rank).rev() {
            idx[d] += 1;
            a += strides_a[d];
            b += strides_b[d];
            if idx[d] < shape[d] {
                break;
            }
            a -= strides_a[d] * shape[d] as usize;
            b -= strides_b[d] * shape[d] as usize;
            idx[d] = 0;
        }
    }
}

/// `dst` = the transpose of `src` (C order, `shape`) by `order`: output
/// dimension `i` is input dimension `order[i]`.
pub(crate) fn transpose(src: &[u8], shape: &[u64], order: &[usize], elem: usize, dst: &mut [u8]) {
    let out_shape: Vec<u64> = order.iter().map(|&i| shape[i]).collect();
    let in_strides = strides(shape);
    let gathered: Vec<usize> = order.iter().map(|&i| in_strides[i]).collect();
    walk(&out_shape, &strides(&out_shape), &gathered, |o, i| {
        dst[o * elem..(o + 1) * elem].copy_from_slice(&src[i * elem..(i + 1) * elem]);
    });
}

/// Undoes [`transpose`]: `src` is the transposed array (shape
/// `transposed_shape`), `dst` the original.
pub(crate) fn untranspose(
    src: &[u8],
    transposed_shape: &[u64],
    order: &[usize],
    elem: usize,
    dst: &mut [u8],
) {
    let out_strides_t = strides(transposed_shape);
    // The original shape, and each original dimension's stride in `src`.
    let rank = order.len();
    let mut shape = vec![0u64; rank];
    let mut src_strides = vec![0usize; rank];
    for (i, &d) in order.iter().enumerate() {
        shape[d] = transposed_shape[i];
        src_strides[d] = out_strides_t[i];
    }
    walk(&shape, &strides(&shape), &src_strides, |o, i| {
        dst[o * elem..(o + 1) * elem].copy_from_slice(&src[i * elem..(i + 1) * elem]);
    });
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::metadata::parse_chain;
    use super::*;

    fn chain(codecs: Value, dtype: DataType, shape: &[u64]) -> Chain {
        let specs = parse_chain(Some(&codecs), dtype.clone(), shape, 0).unwrap();
        let fill = vec![0; dtype.size()];
        Chain::new(specs, dtype, shape.to_vec(), fill)
    }

    /// A chunk of uint16 counting up, native order.
    fn counting(n: usize) -> Vec<u8> {
        (0..n as u16).flat_map(u16::to_ne_bytes).collect()
    }

    #[test]
    fn round_trips_through_every_codec() {
        let shape = [3u64, 4, 5];
        let data = counting(60);
        for codecs in [
            json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
            json!([{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                   {"name": "bytes", "configuration": {"endian": "big"}}]),
            json!([{"name": "transpose", "configuration": {"order": [1, 2, 0]}},
                   {"name": "transpose", "configuration": {"order": [2, 1, 0]}},
                   {"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "gzip", "configuration": {"level": 5}}, {"name": "crc32c"}]),
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "crc32c"}, {"name": "zstd", "configuration": {"level": 1, "checksum": true}}]),
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 2, "blocksize": 0}}]),
            json!([{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [1, 2, 5],
                "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]),
            json!([{"name": "bytes", "configuration": {"endian": "big"}},
                   {"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]),
            json!([{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [3, 2, 5],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                "index_location": "start"}}, {"name": "crc32c"}]),
        ] {
            let c = chain(codecs.clone(), DataType::U16, &shape);
            // Encoding appends: what `out` held before stays.
            let mut encoded = vec![7u8; 3];
            c.encode(&data, &mut encoded).unwrap();
            assert_eq!(encoded[..3], [7, 7, 7], "{codecs}");
            let mut back = vec![0u8; data.len()];
            c.decode(&encoded[3..], &mut back).unwrap();
            assert_eq!(back, data, "{codecs}");
        }
    }

    #[test]
    fn bytes_and_transpose_give_the_layout_the_specification_describes() {
        // A 2×3 uint16 array [[0,1,2],[3,4,5]], big endian, transposed to 3×2.
        let c = chain(
            json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
                   {"name": "bytes", "configuration": {"endian": "big"}}]),
            DataType::U16,
            &[2, 3],
        );
        let mut encoded = Vec::new();
        c.encode(&counting(6), &mut encoded).unwrap();
        assert_eq!(encoded, [0, 0, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5]);
        // crc32c of "123456789" is the standard check value.
        let c = chain(
            json!([{"name": "bytes"}, {"name": "crc32c"}]),
            DataType::U8,
            &[9],
        );
        let mut encoded = Vec::new();
        c.encode(b"123456789", &mut encoded).unwrap();
        assert_eq!(&encoded[9..], &0xE306_9283u32.to_le_bytes());
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let c = chain(
            json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]),
            DataType::U16,
            &[8],
        );
        let mut encoded = Vec::new();
        c.encode(&counting(8), &mut encoded).unwrap();
        let mut out = vec![0u8; 16];
        encoded[3] ^= 1;
        let e = c.decode(&encoded, &mut out).unwrap_err();
        assert!(e.message().contains("crc32c mismatch"), "{e}");
        let e = c.decode(&encoded[..10], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Codec, "{e}");
        let e = c.decode(&[1, 2], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Codec, "{e}");
        // A plain chunk of the wrong length.
        let c = chain(
            json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
            DataType::U16,
            &[8],
        );
        assert!(c.decode(&[0u8; 15], &mut out).is_err());
        assert!(c.decode(&[0u8; 17], &mut out).is_err());
    }
}
