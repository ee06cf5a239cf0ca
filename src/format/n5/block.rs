//! The N5 block wire format: the big-endian header of modes 0 (default),
//! 1 (varlength) and 2 (object), element byte order, string payloads, and the
//! validation of every header field against the dataset before anything is
//! allocated.

use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::format::n5::metadata::{DatasetAttributes, MAX_BLOCK_BYTES};

/// How a block's element count is recorded in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockMode {
    /// Mode 0: the block holds exactly `prod(size)` elements.
    Default,
    /// Mode 1: the header carries an explicit element count (varlength data,
    /// strings).
    Varlength,
    /// Mode 2: an object block; the header has only an element count (bytes),
    /// no dimensions.
    Object,
}

impl BlockMode {
    /// The mode number in the header.
    pub const fn code(self) -> u16 {
        match self {
            BlockMode::Default => 0,
            BlockMode::Varlength => 1,
            BlockMode::Object => 2,
        }
    }
}

/// A parsed block header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// The block's mode.
    pub mode: BlockMode,
    /// Extent along each dimension (empty for object blocks).
    pub size: Vec<u32>,
    /// Number of elements the payload decodes to (for strings and objects:
    /// bytes). For mode 0 this is `prod(size)`.
    pub num_elements: u64,
}

/// How many times the dataset's nominal block a compressed varlength or
/// object block may decode to (see [`BlockHeader::check`]), unless that is
/// less than [`VARLENGTH_MIN_LIMIT`].
pub const VARLENGTH_FACTOR: u64 = 4;

/// What a compressed varlength or object block may always decode to,
/// whatever its dataset's block size.
pub const VARLENGTH_MIN_LIMIT: u64 = 16 << 20;

/// How many bytes a compressed varlength or object block may decode to per
/// byte of its file, when that is more than the limits above: large blocks
/// of a small nominal size (such as label-multiset blocks, several times
/// their nominal size) still read, and memory stays bounded by the file.
pub const VARLENGTH_PER_FILE_BYTE: u64 = 64;

impl BlockHeader {
    /// Parse the header at the start of `bytes`; returns it and its length.
    pub fn parse(bytes: &[u8]) -> Result<(BlockHeader, usize)> {
        let short = || {
            Error::codec(format!(
                "block file of {} bytes is too short for its header",
                bytes.len()
            ))
        };
        let u16_at = |o: usize| -> Result<u16> {
            bytes
                .get(o..o + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
                .ok_or_else(short)
        };
        let u32_at = |o: usize| -> Result<u32> {
            bytes
                .get(o..o + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or_else(short)
        };
        let mode = u16_at(0)?;
        match mode {
            0 | 1 => {
                let ndim = u16_at(2)? as usize;
                let mut size = Vec::with_capacity(ndim.min(crate::format::n5::metadata::MAX_RANK));
                for d in 0..ndim {
                    size.push(u32_at(4 + 4 * d)?);
                }
                let mut len = 4 + 4 * ndim;
                let num_elements = if mode == 1 {
                    let n = u32_at(len)? as u64;
                    len += 4;
                    n
                } else {
                    size.iter()
                        .try_fold(1u64, |n, &s| n.checked_mul(u64::from(s)))
                        .ok_or_else(|| {
                            Error::codec(format!(
                                "the block header's shape {size:?} has more than 2^64 elements"
                            ))
                        })?
                };
                let mode = if mode == 0 {
                    BlockMode::Default
                } else {
                    BlockMode::Varlength
                };
                Ok((
                    BlockHeader {
                        mode,
                        size,
                        num_elements,
                    },
                    len,
                ))
            }
            2 => Ok((
                BlockHeader {
                    mode: BlockMode::Object,
                    size: Vec::new(),
                    num_elements: u32_at(2)? as u64,
                },
                6,
            )),
            m => Err(Error::codec(format!("unknown block mode {m}"))),
        }
    }

    /// Append the header's bytes to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.mode.code().to_be_bytes());
        if self.mode == BlockMode::Object {
            out.extend_from_slice(&(self.num_elements as u32).to_be_bytes());
            return;
        }
        out.extend_from_slice(&(self.size.len() as u16).to_be_bytes());
        for s in &self.size {
            out.extend_from_slice(&s.to_be_bytes());
        }
        if self.mode == BlockMode::Varlength {
            out.extend_from_slice(&(self.num_elements as u32).to_be_bytes());
        }
    }

    /// Check the header against the dataset and return the number of bytes its
    /// payload decodes to. Rejects a wrong mode or rank, an extent above
    /// `blockSize`, sizes above the format's 2^31-byte block limit, and
    /// compressed varlength and object blocks announcing more than the larger
    /// of [`VARLENGTH_FACTOR`] times the dataset's block and
    /// [`VARLENGTH_MIN_LIMIT`]. [`BlockHeader::check_in_file`] also allows
    /// [`VARLENGTH_PER_FILE_BYTE`] times the block file's size.
    pub fn check(&self, attrs: &DatasetAttributes) -> Result<usize> {
        self.check_in_file(attrs, 0)
    }

    /// [`BlockHeader::check`] for a header read from a block file of
    /// `file_len` bytes.
    pub fn check_in_file(&self, attrs: &DatasetAttributes, file_len: usize) -> Result<usize> {
        let dtype = &attrs.data_type;
        match (self.mode, dtype) {
            (BlockMode::Object, DataType::Object) => {}
            (BlockMode::Object, _) => {
                return Err(Error::codec(format!(
                    "object block (mode 2) in a dataset of type {dtype}"
                )))
            }
            _ => {
                if self.size.len() != attrs.ndim() {
                    return Err(Error::codec(format!(
                        "header has {} dimensions but the dataset has {}",
                        self.size.len(),
                        attrs.ndim()
                    )));
                }
                for (d, (&s, &b)) in self.size.iter().zip(&attrs.block_size).enumerate() {
                    if s > b {
                        return Err(Error::codec(format!(
                            "header size {:?} exceeds blockSize {:?} in dimension {d}",
                            self.size, attrs.block_size
                        )));
                    }
                }
            }
        }
        let bytes = self.num_elements.checked_mul(dtype.size() as u64);
        let nbytes = match bytes {
            Some(b) if b <= MAX_BLOCK_BYTES => b,
            _ => {
                return Err(Error::codec(format!(
                    "header announces {} elements of {dtype}, more than a block can hold",
                    self.num_elements
                )))
            }
        };
        // Varlength and object blocks may hold any number of elements, so
        // their header alone would decide how much memory a read takes.
        // Compressed ones are held to 4 times the dataset's block, 16 MiB or
        // 64 times their file, whichever is most (peers write small
        // varlength and string blocks several times their nominal size);
        // raw ones are bounded by their file, which is checked before
        // anything is allocated.
        let nominal = attrs.block_num_elements() as u64 * dtype.size() as u64;
        let limit = nominal
            .saturating_mul(VARLENGTH_FACTOR)
            .max(VARLENGTH_MIN_LIMIT)
            .max((file_len as u64).saturating_mul(VARLENGTH_PER_FILE_BYTE));
        if self.mode != BlockMode::Default
            && attrs.compression != crate::codec::Compression::Raw
            && nbytes > limit
        {
            let kind = match self.mode {
                BlockMode::Object => "object",
                _ => "varlength",
            };
            return Err(Error::codec(format!(
                "{kind} block announces {} elements of {dtype} ({nbytes} bytes), more than \
                 the {limit} bytes a compressed {kind} block may hold here (the largest of \
                 {VARLENGTH_FACTOR} times the dataset's {nominal}-byte block, 16 MiB and \
                 {VARLENGTH_PER_FILE_BYTE} times the {file_len}-byte block file)",
                self.num_elements
            )));
        }
        Ok(nbytes as usize)
    }
}

/// A decoded block: its header and its payload with numeric elements in
/// **native** byte order (strings and objects are bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct DataBlock {
    /// The header the block was stored with (or will be written with).
    pub header: BlockHeader,
    /// The decoded payload: `num_elements * element size` bytes.
    pub data: Vec<u8>,
}

/// Convert elements of `elem_size` bytes between big-endian and native order
/// in place (a no-op on big-endian machines and for single bytes).
pub fn swap_to_from_be(data: &mut [u8], elem_size: usize) {
    if cfg!(target_endian = "little") {
        crate::geometry::swap_in_place(data, elem_size);
    }
}

/// Copy `src` to `dst` (equal lengths), converting elements of `elem_size`
/// bytes between big-endian and native order on the way: one pass over the
/// bytes where a copy followed by [`swap_to_from_be`] would take two.
pub fn copy_to_from_be(dst: &mut [u8], src: &[u8], elem_size: usize) {
    if cfg!(target_endian = "big") {
        dst.copy_from_slice(src);
    } else {
        crate::geometry::swap_copy(dst, src, elem_size);
    }
}

/// Decode a whole block file: parse and check the header, decompress the
/// payload (exactly the announced bytes, never more) and convert numeric
/// elements to native byte order.
pub fn decode(bytes: &[u8], attrs: &DatasetAttributes) -> Result<DataBlock> {
    let (header, header_len) = BlockHeader::parse(bytes)?;
    let nbytes = header.check_in_file(attrs, bytes.len())?;
    let payload = &bytes[header_len..];
    if attrs.compression == crate::codec::Compression::Raw && payload.len() < nbytes {
        return Err(Error::codec(format!(
            "payload has {} bytes but the header announces {nbytes}",
            payload.len()
        )));
    }
    let mut data = vec![0u8; nbytes];
    attrs.compression.decode(payload, &mut data)?;
    swap_to_from_be(&mut data, attrs.data_type.size());
    Ok(DataBlock { header, data })
}

/// Where the payload of a mode-0 block whose header size equals `shape`
/// starts in `bytes`, with its decoded size; `None` for a block of another
/// form. The header is parsed and checked either way.
pub(crate) fn exact_payload(
    bytes: &[u8],
    attrs: &DatasetAttributes,
    shape: &[u64],
) -> Result<Option<(usize, usize)>> {
    let (header, header_len) = BlockHeader::parse(bytes)?;
    let nbytes = header.check_in_file(attrs, bytes.len())?;
    let exact = header.mode == BlockMode::Default
        && header.size.iter().zip(shape).all(|(&s, &n)| s as u64 == n);
    Ok(exact.then_some((header_len, nbytes)))
}

/// Check that `data` holds exactly the header's elements.
fn check_data_len(header: &BlockHeader, data: &[u8], attrs: &DatasetAttributes) -> Result<()> {
    let expected = header.num_elements as usize * attrs.data_type.size();
    if data.len() != expected {
        return Err(Error::new(
            crate::error::ErrorKind::BufferSize,
            format!(
                "block data has {} bytes but {} elements of {} need {expected}",
                data.len(),
                header.num_elements,
                attrs.data_type
            ),
        ));
    }
    Ok(())
}

/// Encode a block: header, then the compressed big-endian payload. `data` is
/// in native order and holds `header.num_elements` elements.
pub fn encode(header: &BlockHeader, data: &[u8], attrs: &DatasetAttributes) -> Result<Vec<u8>> {
    let elem = attrs.data_type.size();
    check_data_len(header, data, attrs)?;
    let mut out = Vec::with_capacity(16 + 4 * header.size.len() + data.len());
    header.write(&mut out);
    if attrs.compression == crate::codec::Compression::Raw {
        // Copy once, then convert in place.
        let start = out.len();
        out.extend_from_slice(data);
        swap_to_from_be(&mut out[start..], elem);
    } else if cfg!(target_endian = "little") && elem > 1 {
        let mut be = data.to_vec();
        swap_to_from_be(&mut be, elem);
        attrs.compression.encode(&be, elem, &mut out)?;
    } else {
        attrs.compression.encode(data, elem, &mut out)?;
    }
    Ok(out)
}

/// Encode a numeric block whose `data` the caller has already converted to
/// big-endian (as region writes do while gathering it): the header and
/// compressed payload replace the contents of `out`, whose memory is reused
/// from block to block.
pub(crate) fn encode_big_endian(
    header: &BlockHeader,
    data: &[u8],
    attrs: &DatasetAttributes,
    out: &mut Vec<u8>,
) -> Result<()> {
    check_data_len(header, data, attrs)?;
    out.clear();
    header.write(out);
    attrs.compression.encode(data, attrs.data_type.size(), out)
}

/// The payload of a `string` block: each string's UTF-8 followed by NUL.
pub fn encode_strings<S: AsRef<str>>(strings: &[S]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for (i, s) in strings.iter().enumerate() {
        let s = s.as_ref();
        if s.contains('\0') {
            return Err(Error::invalid_argument(format!(
                "string {i} contains a NUL character, which N5 uses as the separator"
            )));
        }
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }
    Ok(out)
}

/// The strings of a `string` block payload: NUL-terminated UTF-8 (a missing
/// final NUL is tolerated).
pub fn decode_strings(payload: &[u8]) -> Result<Vec<String>> {
    let body = payload.strip_suffix(&[0]).unwrap_or(payload);
    if payload.is_empty() {
        return Ok(Vec::new());
    }
    body.split(|&b| b == 0)
        .enumerate()
        .map(|(i, s)| {
            String::from_utf8(s.to_vec())
                .map_err(|_| Error::codec(format!("string {i} of the block is not valid UTF-8")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Compression;

    fn attrs(dims: &[u64], block: &[u32], t: DataType) -> DatasetAttributes {
        DatasetAttributes::new(dims.to_vec(), block.to_vec(), t, Compression::Raw).unwrap()
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot run the C gzip decoder")]
    fn compressed_varlength_blocks_have_a_size_limit() {
        // Found by fuzz/fuzz_targets/block_decode.rs: a varlength header
        // announcing 2^29 elements made a read allocate 512 MiB up front.
        // The limit is 16 MiB here (4 blocks of 16 bytes are less).
        let mut a = attrs(&[8, 8], &[4, 4], DataType::U8);
        a.compression = Compression::Gzip {
            level: -1,
            use_zlib: false,
        };
        let header = |n: u32| {
            let mut h = vec![0, 1, 0, 2, 0, 0, 0, 4, 0, 0, 0, 4];
            h.extend_from_slice(&n.to_be_bytes());
            h
        };
        let e = decode(&header(1 << 29), &a).unwrap_err();
        assert!(e.message().contains("varlength"), "{e}");
        // Below the limit the payload is decoded (here: a gzip error).
        let e = decode(&header(1 << 20), &a).unwrap_err();
        assert!(!e.message().contains("varlength"), "{e}");
        // Raw varlength blocks are bounded by their file instead.
        let raw = attrs(&[8, 8], &[4, 4], DataType::U8);
        let mut bytes = header(100);
        bytes.extend_from_slice(&[7; 100]);
        assert_eq!(decode(&bytes, &raw).unwrap().data, vec![7; 100]);
        // Object blocks (mode 2) have the same limit.
        let mut o = attrs(&[40], &[10], DataType::Object);
        o.compression = a.compression.clone();
        let object = |n: u32| [&[0u8, 2][..], &n.to_be_bytes()].concat();
        let e = decode(&object(1 << 30), &o).unwrap_err();
        assert!(e.message().contains("object block announces"), "{e}");
        let e = decode(&object(1 << 20), &o).unwrap_err();
        assert!(!e.message().contains("object block announces"), "{e}");
        // A larger file may announce up to 64 times its size.
        let mut big = header(40 << 20);
        big.resize(1 << 20, 0);
        let e = decode(&big, &a).unwrap_err();
        assert!(!e.message().contains("varlength block announces"), "{e}");
        let mut bigger = header(80 << 20);
        bigger.resize(1 << 20, 0);
        let e = decode(&bigger, &a).unwrap_err();
        assert!(
            e.message().contains("64 times the 1048576-byte block file"),
            "{e}"
        );
    }

    #[test]
    fn header_shapes_beyond_64_bits_are_errors() {
        // Found by fuzz/fuzz_targets/block_decode.rs: three extents of
        // 2^32-1 overflowed the element count.
        let mut bytes = vec![0, 0, 0, 3];
        for _ in 0..3 {
            bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        }
        let e = BlockHeader::parse(&bytes).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Codec, "{e}");
        assert!(e.message().contains("2^64"), "{e}");
        let a = attrs(&[4, 4, 4], &[2, 2, 2], DataType::U8);
        assert!(decode(&bytes, &a).is_err());
    }

    #[test]
    fn copy_to_from_be_is_a_copy_then_a_swap() {
        let src: Vec<u8> = (0..203u32).map(|i| (i * 37 + 11) as u8).collect();
        for elem in [1, 2, 4, 8, 3] {
            let len = src.len() / elem * elem;
            let mut want = src[..len].to_vec();
            swap_to_from_be(&mut want, elem);
            let mut got = vec![0u8; len];
            copy_to_from_be(&mut got, &src[..len], elem);
            assert_eq!(got, want, "element size {elem}");
        }
    }

    #[test]
    fn golden_mode0_readme_example() {
        let golden = [
            0x00, 0x00, 0x00, 0x03, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 1, 0, 2, 0, 3, 0, 4, 0,
            5, 0, 6,
        ];
        let a = attrs(&[1, 2, 3], &[1, 2, 3], DataType::U16);
        let values: Vec<u8> = [1u16, 2, 3, 4, 5, 6]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let header = BlockHeader {
            mode: BlockMode::Default,
            size: vec![1, 2, 3],
            num_elements: 6,
        };
        assert_eq!(encode(&header, &values, &a).unwrap(), golden);
        let block = decode(&golden, &a).unwrap();
        assert_eq!(block.header, header);
        assert_eq!(block.data, values);
    }

    #[test]
    fn golden_mode1_varlength() {
        let golden = [
            0x00, 0x01, 0x00, 0x02, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 4, 0x0a, 0x0b, 0x0c, 0x0d,
        ];
        let a = attrs(&[3, 2], &[3, 2], DataType::U8);
        let header = BlockHeader {
            mode: BlockMode::Varlength,
            size: vec![3, 2],
            num_elements: 4,
        };
        assert_eq!(encode(&header, &[10, 11, 12, 13], &a).unwrap(), golden);
        assert_eq!(decode(&golden, &a).unwrap().data, vec![10, 11, 12, 13]);
    }

    #[test]
    fn golden_string_block() {
        let golden = [
            0x00, 0x01, 0x00, 0x01, 0, 0, 0, 3, 0, 0, 0, 6, 0x00, 0x61, 0x00, 0xc3, 0xbe, 0x00,
        ];
        let a = attrs(&[3], &[3], DataType::String);
        let payload = encode_strings(&["", "a", "þ"]).unwrap();
        let header = BlockHeader {
            mode: BlockMode::Varlength,
            size: vec![3],
            num_elements: payload.len() as u64,
        };
        assert_eq!(encode(&header, &payload, &a).unwrap(), golden);
        let block = decode(&golden, &a).unwrap();
        assert_eq!(decode_strings(&block.data).unwrap(), vec!["", "a", "þ"]);
        assert!(encode_strings(&["a\0b"]).is_err());
        assert_eq!(decode_strings(b"").unwrap(), Vec::<String>::new());
        assert!(decode_strings(&[0xff, 0]).is_err());
    }

    #[test]
    fn golden_object_block() {
        let golden = [0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0xca, 0xfe];
        let a = attrs(&[40], &[10], DataType::Object);
        let header = BlockHeader {
            mode: BlockMode::Object,
            size: vec![],
            num_elements: 2,
        };
        assert_eq!(encode(&header, &[0xca, 0xfe], &a).unwrap(), golden);
        assert_eq!(decode(&golden, &a).unwrap().data, vec![0xca, 0xfe]);
        let numeric = attrs(&[40], &[10], DataType::U8);
        assert!(decode(&golden, &numeric).is_err());
    }

    #[test]
    fn golden_truncated_edge_block_java_1_5() {
        // data-3.1.3.n5/raw/1/1 of the Java backward-compatibility suite.
        let golden = [0x00, 0x00, 0x00, 0x02, 0, 0, 0, 2, 0, 0, 0, 1, 3, 3];
        let a = attrs(&[7, 5], &[5, 4], DataType::U8);
        let block = decode(&golden, &a).unwrap();
        assert_eq!(block.header.size, vec![2, 1]);
        assert_eq!(block.data, vec![3, 3]);
    }

    #[test]
    fn hostile_headers_are_errors() {
        let a = attrs(&[100, 100], &[10, 10], DataType::U64);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![], "too short"),
            (vec![0], "too short"),
            (vec![0, 0, 0, 2, 0, 0], "too short"),
            (vec![0, 7, 0, 0], "unknown block mode 7"),
            (
                vec![0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1],
                "3 dimensions",
            ),
            (
                vec![0, 0, 0, 2, 0, 0, 0, 11, 0, 0, 0, 1],
                "exceeds blockSize",
            ),
            (
                vec![0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1],
                "exceeds blockSize",
            ),
            (
                vec![0, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff],
                "more than a block can hold",
            ),
            (
                vec![0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3],
                "payload has 3 bytes",
            ),
            (vec![0, 2, 0, 0, 0, 1, 9], "object block"),
            (vec![0, 0, 0xff, 0xff], "too short"),
        ];
        for (bytes, needle) in cases {
            let e = decode(&bytes, &a).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Codec, "{bytes:?}");
            assert!(e.message().contains(needle), "{bytes:?}: {e}");
        }
    }

    #[test]
    fn byte_order_round_trip() {
        for t in DataType::NUMERIC {
            let a = attrs(&[4], &[4], t.clone());
            let data: Vec<u8> = (0..4 * t.size() as u8).collect();
            let header = BlockHeader {
                mode: BlockMode::Default,
                size: vec![4],
                num_elements: 4,
            };
            let enc = encode(&header, &data, &a).unwrap();
            assert_eq!(decode(&enc, &a).unwrap().data, data, "{t}");
            // Stored big-endian: the first element's most significant byte first.
            let first = &data[..t.size()];
            let mut be = first.to_vec();
            if cfg!(target_endian = "little") {
                be.reverse();
            }
            assert_eq!(&enc[8..8 + t.size()], &be[..], "{t}");
        }
        let a = attrs(&[4], &[4], DataType::U16);
        let header = BlockHeader {
            mode: BlockMode::Default,
            size: vec![4],
            num_elements: 4,
        };
        assert_eq!(
            encode(&header, &[0; 7], &a).unwrap_err().kind(),
            crate::error::ErrorKind::BufferSize
        );
    }
}
