//! The HDF5 side of a Zarr v3 shard that is also an HDF5 file (hdf5.md A3):
//! the superblock, the object headers of the root group, of the `data`
//! dataset and of `/zarrindex`, and the Fixed Array chunk index, written
//! around inner chunks the Zarr shard writer has already encoded; and
//! [`inspect_shard`], which reads those structures back and checks them
//! (their checksums, and every address against the file's length).
//!
//! The layout of one file: `[Zarr index, zero-padded to U bytes]`,
//! superblock v3 (base address U), root group header, `data` header,
//! `[zarrindex header]`, Fixed Array header `FAHD`, its one unpaged data
//! block `FADB`, the inner chunks, `[Zarr index]` (the raw data of
//! `/zarrindex`). HDF5 addresses are relative to U; the Zarr index's
//! offsets are from the start of the file.

use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};

use super::lookup3::checksum;

/// HDF5's undefined address (all bits 1).
pub(crate) const UNDEF: u64 = u64::MAX;

pub use super::signature::SIGNATURE;

/// The most dimensions an HDF5 dataspace has.
pub(crate) const MAX_RANK: usize = 32;

/// Bytes of a version 3 superblock.
const SUPERBLOCK_LEN: u64 = 48;

/// Bytes of the Fixed Array header.
const FAHD_LEN: u64 = 28;

/// Bytes of the Fixed Array data block around its entries (signature,
/// version, client, header address, checksum).
const FADB_OVERHEAD: u64 = 18;

/// Object header message types.
const MSG_DATASPACE: u8 = 0x01;
const MSG_LINK_INFO: u8 = 0x02;
const MSG_DATATYPE: u8 = 0x03;
const MSG_FILL: u8 = 0x05;
const MSG_LINK: u8 = 0x06;
const MSG_LAYOUT: u8 = 0x08;
const MSG_GROUP_INFO: u8 = 0x0a;
const MSG_PIPELINE: u8 = 0x0b;

/// A message flag: the message is constant.
const CONSTANT: u8 = 0x01;

/// The HDF5 filter id of the zstd plugin.
pub const ZSTD_FILTER: u16 = 32015;

/// The HDF5 filter id of the blosc plugin.
pub const BLOSC_FILTER: u16 = 32001;

/// The one filter of a `data` dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Filter {
    /// Raw chunks: no filter pipeline.
    None,
    /// zstd (32015, name `zstd`, cd `[level]`).
    Zstd {
        /// zstd's level (its bits as an unsigned cd value).
        level: i32,
    },
    /// blosc (32001, name `blosc`, cd `[2, 2, typesize, chunk bytes,
    /// clevel, shuffle, compressor]`).
    Blosc {
        /// Element size the shuffle works on.
        typesize: u32,
        /// 0..=9.
        clevel: u32,
        /// 0 none, 1 byte, 2 bit.
        shuffle: u32,
        /// blosclz 0, lz4 1, lz4hc 2, snappy 3, zlib 4, zstd 5.
        compressor: u32,
    },
}

/// Where the Zarr index of a shard file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexAt {
    /// In the user block before the HDF5 file.
    Start,
    /// At the end of the file, as the raw data of `/zarrindex`.
    End,
}

/// What one shard file holds besides its chunks, and where each of its
/// structures lies.
#[derive(Clone, Debug)]
pub(crate) struct ShardFile {
    /// The element type.
    dtype: DataType,
    /// Whether the elements (and the fill value) are big-endian.
    big_endian: bool,
    /// The dataset's dims: the shard's region clipped to the array (C order).
    dims: Vec<u64>,
    /// The max dims: the shard shape (C order).
    max_dims: Vec<u64>,
    /// The chunk dims: the inner chunk shape (C order).
    chunk: Vec<u64>,
    /// One element of the fill value in the file's byte order.
    fill: Vec<u8>,
    /// The filter.
    filter: Filter,
    /// Where the Zarr index is, and its bytes.
    index_at: IndexAt,
    index_bytes: u64,
    /// The user block's size U (the base address).
    base: u64,
    /// Number of chunks (Fixed Array entries).
    n: u64,
    /// Bytes of the chunk size field of a filtered entry.
    size_len: usize,
    /// Addresses (relative to U) of the structures, and the first byte
    /// after them.
    root_at: u64,
    data_at: u64,
    zarrindex_at: u64,
    fahd_at: u64,
    fadb_at: u64,
    end: u64,
}

/// The bytes of one element of `dtype` in an HDF5 datatype message.
fn datatype_message(dtype: DataType, big_endian: bool) -> Vec<u8> {
    let size = dtype.size() as u32;
    let order = u8::from(big_endian);
    let mut m = Vec::with_capacity(20);
    match dtype {
        DataType::F32 | DataType::F64 => {
            let (sign, exp_loc, exp_size, mant_size, bias): (u8, u8, u8, u8, u32) =
                if dtype == DataType::F32 {
                    (31, 23, 8, 23, 127)
                } else {
                    (63, 52, 11, 52, 1023)
                };
            // Class 1 (floating point), version 1; mantissa normalised
            // with the most significant bit implied (0x20).
            m.extend_from_slice(&[0x11, order | 0x20, sign, 0]);
            m.extend_from_slice(&size.to_le_bytes());
            m.extend_from_slice(&0u16.to_le_bytes());
            m.extend_from_slice(&(8 * size as u16).to_le_bytes());
            m.extend_from_slice(&[exp_loc, exp_size, 0, mant_size]);
            m.extend_from_slice(&bias.to_le_bytes());
        }
        _ => {
            let signed = matches!(
                dtype,
                DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64
            );
            // Class 0 (fixed point), version 1.
            m.extend_from_slice(&[0x10, order | if signed { 0x08 } else { 0 }, 0, 0]);
            m.extend_from_slice(&size.to_le_bytes());
            m.extend_from_slice(&0u16.to_le_bytes());
            m.extend_from_slice(&(8 * size as u16).to_le_bytes());
        }
    }
    m
}

/// The fewest bytes (1..=8) that hold `v`.
fn bytes_for(v: u64) -> usize {
    (8 - v.leading_zeros() as usize / 8).max(1)
}

/// One object header, version 2, without times: `messages` are (type,
/// flags, body).
fn object_header(messages: &[(u8, u8, Vec<u8>)]) -> Vec<u8> {
    let chunk: usize = messages.iter().map(|(_, _, b)| 4 + b.len()).sum();
    let (code, width) = match chunk {
        0..=0xff => (0u8, 1),
        0x100..=0xffff => (1, 2),
        0x1_0000..=0xffff_ffff => (2, 4),
        _ => (3, 8),
    };
    let mut h = Vec::with_capacity(6 + width + chunk + 4);
    h.extend_from_slice(b"OHDR");
    h.push(2);
    h.push(code);
    h.extend_from_slice(&(chunk as u64).to_le_bytes()[..width]);
    for (kind, flags, body) in messages {
        h.push(*kind);
        h.extend_from_slice(&(body.len() as u16).to_le_bytes());
        h.push(*flags);
        h.extend_from_slice(body);
    }
    let sum = checksum(&h);
    h.extend_from_slice(&sum.to_le_bytes());
    h
}

/// A hard link message to the object header at `address`.
fn link(name: &str, address: u64) -> Vec<u8> {
    let mut m = vec![1, 0, name.len() as u8];
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(&address.to_le_bytes());
    m
}

/// A dataspace message (version 2, simple).
fn dataspace(dims: &[u64], max_dims: Option<&[u64]>) -> Vec<u8> {
    let mut m = vec![2, dims.len() as u8, u8::from(max_dims.is_some()), 1];
    for d in dims.iter().chain(max_dims.unwrap_or(&[])) {
        m.extend_from_slice(&d.to_le_bytes());
    }
    m
}

impl ShardFile {
    /// The shard file of a `dtype` array whose `bytes` codec is big-endian
    /// or not: dims `dims` (the shard clipped to the array), max dims the
    /// shard shape `max_dims`, chunk dims `chunk` (all C order), fill
    /// value `fill` (one element, the file's byte order), `filter`, and a
    /// Zarr index of `index_bytes` at `index_at`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        dtype: DataType,
        big_endian: bool,
        dims: &[u64],
        max_dims: &[u64],
        chunk: &[u64],
        fill: &[u8],
        filter: Filter,
        index_at: IndexAt,
        index_bytes: u64,
    ) -> Result<ShardFile> {
        let rank = chunk.len();
        let internal = |what: String| Error::new(ErrorKind::Internal, what);
        if !dtype.is_numeric() || fill.len() != dtype.size() {
            return Err(internal(format!(
                "an HDF5 shard of {} with a {}-byte fill value",
                dtype.name(),
                fill.len()
            )));
        }
        if rank == 0 || rank > MAX_RANK || dims.len() != rank || max_dims.len() != rank {
            return Err(internal(format!(
                "an HDF5 shard of dims {dims:?}, max dims {max_dims:?}, chunk {chunk:?}"
            )));
        }
        let fits = (0..rank).all(|d| {
            chunk[d] > 0 && dims[d] <= max_dims[d] && max_dims[d].is_multiple_of(chunk[d])
        });
        let chunk_bytes = chunk
            .iter()
            .try_fold(dtype.size() as u64, |a, &c| a.checked_mul(c))
            .filter(|&b| b < 1 << 32);
        let n = max_dims
            .iter()
            .zip(chunk)
            .try_fold(1u64, |a, (&m, &c)| a.checked_mul(m / c.max(1)));
        let (Some(chunk_bytes), Some(n), true) = (chunk_bytes, n, fits) else {
            return Err(internal(format!(
                "an HDF5 shard of dims {dims:?}, max dims {max_dims:?}, chunk {chunk:?}"
            )));
        };
        let base = match index_at {
            IndexAt::End => 0,
            IndexAt::Start => index_bytes.max(512).next_power_of_two(),
        };
        // HDF5's width of a filtered chunk's size (H5D_FARRAY_FILT).
        let size_len = (1 + (chunk_bytes.ilog2() as usize + 8) / 8).min(8);
        let mut file = ShardFile {
            dtype,
            big_endian,
            dims: dims.to_vec(),
            max_dims: max_dims.to_vec(),
            chunk: chunk.to_vec(),
            fill: fill.to_vec(),
            filter,
            index_at,
            index_bytes,
            base,
            n,
            size_len,
            root_at: SUPERBLOCK_LEN,
            data_at: 0,
            zarrindex_at: 0,
            fahd_at: 0,
            fadb_at: 0,
            end: 0,
        };
        // The headers' sizes do not depend on the addresses in them.
        file.data_at = file.root_at + file.root_header().len() as u64;
        file.zarrindex_at = file.data_at + file.data_header().len() as u64;
        file.fahd_at = file.zarrindex_at
            + match index_at {
                IndexAt::End => file.zarrindex_header(0).len() as u64,
                IndexAt::Start => 0,
            };
        file.fadb_at = file.fahd_at + FAHD_LEN;
        let entries = n
            .checked_mul(file.entry_size() as u64)
            .and_then(|e| e.checked_add(file.fadb_at + FADB_OVERHEAD))
            .ok_or_else(|| internal(format!("an HDF5 shard of {n} chunks")))?;
        file.end = entries;
        Ok(file)
    }

    /// Bytes from the start of the file to the first inner chunk: the user
    /// block and the HDF5 metadata.
    pub(crate) fn head_len(&self) -> u64 {
        self.base + self.end
    }

    /// Bytes of one Fixed Array entry: the chunk's address, and for
    /// filtered chunks its size and filter mask.
    fn entry_size(&self) -> usize {
        match self.filter {
            Filter::None => 8,
            _ => 8 + self.size_len + 4,
        }
    }

    /// Bytes of one inner chunk decoded.
    fn chunk_bytes(&self) -> u64 {
        self.chunk.iter().product::<u64>() * self.dtype.size() as u64
    }

    fn root_header(&self) -> Vec<u8> {
        let mut info = vec![0, 0];
        info.extend_from_slice(&UNDEF.to_le_bytes());
        info.extend_from_slice(&UNDEF.to_le_bytes());
        let mut messages = vec![
            (MSG_LINK_INFO, 0, info),
            (MSG_GROUP_INFO, 0, vec![0, 0]),
            (MSG_LINK, 0, link("data", self.data_at)),
        ];
        if self.index_at == IndexAt::End {
            messages.push((MSG_LINK, 0, link("zarrindex", self.zarrindex_at)));
        }
        object_header(&messages)
    }

    fn data_header(&self) -> Vec<u8> {
        let mut fill = vec![3, 0x2b];
        fill.extend_from_slice(&(self.fill.len() as u32).to_le_bytes());
        fill.extend_from_slice(&self.fill);
        let mut messages = vec![
            (
                MSG_DATASPACE,
                0,
                dataspace(&self.dims, Some(&self.max_dims)),
            ),
            (
                MSG_DATATYPE,
                CONSTANT,
                datatype_message(self.dtype.clone(), self.big_endian),
            ),
            (MSG_FILL, CONSTANT, fill),
        ];
        let filter: Option<(u16, &[u8], Vec<u32>)> = match &self.filter {
            Filter::None => None,
            Filter::Zstd { level } => Some((ZSTD_FILTER, b"zstd\0", vec![*level as u32])),
            Filter::Blosc {
                typesize,
                clevel,
                shuffle,
                compressor,
            } => Some((
                BLOSC_FILTER,
                b"blosc\0",
                vec![
                    2,
                    2,
                    *typesize,
                    self.chunk_bytes() as u32,
                    *clevel,
                    *shuffle,
                    *compressor,
                ],
            )),
        };
        if let Some((id, name, cd)) = filter {
            // Version 2, one filter, optional (flags 1), with its name.
            let mut p = vec![2, 1];
            p.extend_from_slice(&id.to_le_bytes());
            p.extend_from_slice(&(name.len() as u16).to_le_bytes());
            p.extend_from_slice(&1u16.to_le_bytes());
            p.extend_from_slice(&(cd.len() as u16).to_le_bytes());
            p.extend_from_slice(name);
            for v in cd {
                p.extend_from_slice(&v.to_le_bytes());
            }
            messages.push((MSG_PIPELINE, CONSTANT, p));
        }
        // Layout v4, chunked, flags 0 (partial edge chunks filtered),
        // rank + 1 dimensions (the last the element size), Fixed Array.
        let elem = self.dtype.size() as u64;
        let width = bytes_for(self.chunk.iter().copied().fold(elem, u64::max));
        let mut layout = vec![4, 2, 0, self.chunk.len() as u8 + 1, width as u8];
        for &d in self.chunk.iter().chain(std::iter::once(&elem)) {
            layout.extend_from_slice(&d.to_le_bytes()[..width]);
        }
        layout.push(3);
        layout.push(self.page_bits());
        layout.extend_from_slice(&self.fahd_at.to_le_bytes());
        messages.push((MSG_LAYOUT, 0, layout));
        object_header(&messages)
    }

    /// The `zarrindex` dataset's header, its raw data at `address`.
    fn zarrindex_header(&self, address: u64) -> Vec<u8> {
        let mut contiguous = vec![3, 1];
        contiguous.extend_from_slice(&address.to_le_bytes());
        contiguous.extend_from_slice(&self.index_bytes.to_le_bytes());
        object_header(&[
            (MSG_DATASPACE, 0, dataspace(&[self.index_bytes], None)),
            (
                MSG_DATATYPE,
                CONSTANT,
                datatype_message(DataType::U8, false),
            ),
            // Version 3: allocated early, fill value written if set, none
            // defined.
            (MSG_FILL, CONSTANT, vec![3, 0x09]),
            (MSG_LAYOUT, 0, contiguous),
        ])
    }

    /// log2 of the entries of a Fixed Array data block page: enough for
    /// every entry, so that the one data block is not paged.
    fn page_bits(&self) -> u8 {
        let bits = 64 - (self.n.max(1) - 1).leading_zeros();
        bits.max(10) as u8
    }

    /// Writes the HDF5 metadata into `head` (the file's first
    /// [`ShardFile::head_len`] bytes; the user block is left as it is):
    /// `chunks` are the inner chunks in C order, as (offset from the start
    /// of the file, bytes), `None` for an absent one; `file_len` is the
    /// length of the whole file, the Zarr index at the end included.
    pub(crate) fn write_head(
        &self,
        chunks: &[Option<(u64, u64)>],
        file_len: u64,
        head: &mut [u8],
    ) -> Result<()> {
        let internal = |what: String| Error::new(ErrorKind::Internal, what);
        if chunks.len() as u64 != self.n || head.len() as u64 != self.head_len() {
            return Err(internal(format!(
                "{} chunks and {} bytes for an HDF5 shard head of {} chunks and {} bytes",
                chunks.len(),
                head.len(),
                self.n,
                self.head_len()
            )));
        }
        let meta = &mut head[self.base as usize..];
        // Superblock v3: offsets and lengths of 8 bytes, base address U.
        let mut sb = Vec::with_capacity(SUPERBLOCK_LEN as usize);
        sb.extend_from_slice(&SIGNATURE);
        sb.extend_from_slice(&[3, 8, 8, 0]);
        sb.extend_from_slice(&self.base.to_le_bytes());
        sb.extend_from_slice(&UNDEF.to_le_bytes());
        sb.extend_from_slice(&file_len.to_le_bytes());
        sb.extend_from_slice(&self.root_at.to_le_bytes());
        let sum = checksum(&sb);
        sb.extend_from_slice(&sum.to_le_bytes());
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            meta[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&sb);
        put(&self.root_header());
        put(&self.data_header());
        if self.index_at == IndexAt::End {
            let address = file_len
                .checked_sub(self.index_bytes)
                .ok_or_else(|| internal(format!("an HDF5 shard of {file_len} bytes")))?;
            put(&self.zarrindex_header(address));
        }
        // Fixed Array header: client 0 (raw chunks) or 1 (filtered).
        let client = u8::from(self.filter != Filter::None);
        let mut fahd = Vec::with_capacity(FAHD_LEN as usize);
        fahd.extend_from_slice(b"FAHD");
        fahd.extend_from_slice(&[0, client, self.entry_size() as u8, self.page_bits()]);
        fahd.extend_from_slice(&self.n.to_le_bytes());
        fahd.extend_from_slice(&self.fadb_at.to_le_bytes());
        let sum = checksum(&fahd);
        fahd.extend_from_slice(&sum.to_le_bytes());
        put(&fahd);
        // The data block, unpaged.
        let mut fadb = Vec::with_capacity((self.end - self.fadb_at) as usize);
        fadb.extend_from_slice(b"FADB");
        fadb.extend_from_slice(&[0, client]);
        fadb.extend_from_slice(&self.fahd_at.to_le_bytes());
        let max_size = if self.size_len == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * self.size_len)) - 1
        };
        for chunk in chunks {
            let (address, size) = match *chunk {
                Some((offset, size)) => {
                    let address = offset
                        .checked_sub(self.head_len())
                        .map(|_| offset - self.base);
                    let raw = self.filter != Filter::None || size == self.chunk_bytes();
                    match address {
                        Some(a) if size <= max_size && raw => (a, size),
                        _ => {
                            return Err(internal(format!(
                                "an HDF5 chunk of {size} bytes at {offset} (the chunks start at {}, hold {} bytes decoded)",
                                self.head_len(),
                                self.chunk_bytes()
                            )))
                        }
                    }
                }
                None => (UNDEF, 0),
            };
            fadb.extend_from_slice(&address.to_le_bytes());
            if self.filter != Filter::None {
                fadb.extend_from_slice(&size.to_le_bytes()[..self.size_len]);
                fadb.extend_from_slice(&0u32.to_le_bytes());
            }
        }
        let sum = checksum(&fadb);
        fadb.extend_from_slice(&sum.to_le_bytes());
        put(&fadb);
        if at as u64 != self.end {
            return Err(internal(format!(
                "HDF5 metadata of {at} bytes, {} planned",
                self.end
            )));
        }
        Ok(())
    }
}

/// What [`inspect_shard`] finds in a shard file. Shapes are in C order (as
/// HDF5 and h5py state them); offsets are from the start of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardFileInfo {
    /// The user block's size (the HDF5 base address): where the superblock
    /// is.
    pub user_block: u64,
    /// The end-of-file address the superblock states.
    pub eof: u64,
    /// The root group's members, in the order of their link messages.
    pub members: Vec<String>,
    /// `data`'s dims.
    pub dims: Vec<u64>,
    /// `data`'s max dims.
    pub max_dims: Vec<u64>,
    /// `data`'s chunk dims (without the element size).
    pub chunk: Vec<u64>,
    /// The element: `(class, size, big_endian, signed)`, class 0 for
    /// integers and 1 for floats.
    pub element: (u8, u32, bool, bool),
    /// The fill value's bytes (file byte order), when defined.
    pub fill: Option<Vec<u8>>,
    /// The filters: `(id, name, cd values)`.
    pub filters: Vec<(u16, String, Vec<u32>)>,
    /// Per chunk, C order: `(offset, bytes)`, `None` where none is stored.
    pub chunks: Vec<Option<(u64, u64)>>,
    /// `/zarrindex`'s raw data: `(offset, bytes)`.
    pub zarrindex: Option<(u64, u64)>,
}

/// A reader of one structure's bytes that fails, rather than panics, at
/// its end.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8], what: &'static str) -> Self {
        Bytes { data, at: 0, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(Error::codec(format!(
                "HDF5 {}: {} bytes wanted at {}, {} there",
                self.what,
                n,
                self.at,
                self.data.len()
            )));
        };
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn uint(&mut self, n: usize) -> Result<u64> {
        let mut w = [0u8; 8];
        w[..n.min(8)].copy_from_slice(self.take(n.min(8))?);
        Ok(u64::from_le_bytes(w))
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(self.uint(2)? as u16)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(self.uint(4)? as u32)
    }

    fn u64(&mut self) -> Result<u64> {
        self.uint(8)
    }

    fn expect(&mut self, bytes: &[u8]) -> Result<()> {
        let got = self.take(bytes.len())?;
        if got != bytes {
            return Err(Error::codec(format!(
                "HDF5 {}: {:02x?} where {:02x?} belongs",
                self.what, got, bytes
            )));
        }
        Ok(())
    }
}

/// A bad structure: an error naming it.
fn bad(what: &str, why: impl std::fmt::Display) -> Error {
    Error::codec(format!("HDF5 {what}: {why}"))
}

/// The bytes of the structure at `address` (relative to `base`) of
/// `len` bytes, or until the end when `len` is `None`.
fn at<'a>(
    file: &'a [u8],
    base: u64,
    address: u64,
    len: Option<u64>,
    what: &str,
) -> Result<&'a [u8]> {
    let start = base.checked_add(address).filter(|&s| s < file.len() as u64);
    let Some(start) = start else {
        return Err(bad(
            what,
            format!("address {address} beyond the file's {} bytes", file.len()),
        ));
    };
    let end = match len {
        None => file.len() as u64,
        Some(l) => start
            .checked_add(l)
            .filter(|&e| e <= file.len() as u64)
            .ok_or_else(|| bad(what, format!("{l} bytes at {address} beyond the file")))?,
    };
    Ok(&file[start as usize..end as usize])
}

/// Checks the lookup3 checksum that ends `bytes`.
fn check_sum(bytes: &[u8], what: &str) -> Result<()> {
    let (body, sum) = bytes.split_at(bytes.len().saturating_sub(4));
    if sum.len() != 4 || checksum(body).to_le_bytes() != sum {
        return Err(bad(what, "wrong checksum"));
    }
    Ok(())
}

/// The messages `(type, body)` of the version 2 object header at
/// `address`.
fn messages<'a>(
    file: &'a [u8],
    base: u64,
    address: u64,
    what: &'static str,
) -> Result<Vec<(u8, &'a [u8])>> {
    let rest = at(file, base, address, None, what)?;
    let mut r = Bytes::new(rest, what);
    r.expect(b"OHDR")?;
    r.expect(&[2])?;
    let flags = r.u8()?;
    if flags & !0x03 != 0 {
        return Err(bad(what, format!("object header flags {flags:#x}")));
    }
    let chunk = r.uint(1 << (flags & 3))?;
    let len = (r.at as u64)
        .checked_add(chunk)
        .filter(|&l| l + 4 <= rest.len() as u64)
        .ok_or_else(|| {
            bad(
                what,
                format!("an object header of {chunk} bytes beyond the file"),
            )
        })? as usize;
    check_sum(&rest[..len + 4], what)?;
    let mut m = Bytes::new(&rest[r.at..len], what);
    let mut out = Vec::new();
    while m.at < m.data.len() {
        let kind = m.u8()?;
        let size = m.u16()? as usize;
        let _flags = m.u8()?;
        out.push((kind, m.take(size)?));
    }
    Ok(out)
}

/// The single message of `kind` among `messages`.
fn one<'a>(messages: &[(u8, &'a [u8])], kind: u8, what: &str) -> Result<&'a [u8]> {
    let mut found = messages.iter().filter(|(k, _)| *k == kind);
    match (found.next(), found.next()) {
        (Some((_, body)), None) => Ok(body),
        _ => Err(bad(
            what,
            format!("not exactly one message of type {kind:#x}"),
        )),
    }
}

/// A dataspace message: (dims, max dims).
fn read_dataspace(body: &[u8], what: &'static str) -> Result<(Vec<u64>, Vec<u64>)> {
    let mut r = Bytes::new(body, what);
    r.expect(&[2])?;
    let rank = r.u8()? as usize;
    let flags = r.u8()?;
    r.expect(&[1])?;
    if rank > MAX_RANK || flags & !1 != 0 {
        return Err(bad(
            what,
            format!("dataspace of rank {rank}, flags {flags:#x}"),
        ));
    }
    let dims = (0..rank).map(|_| r.u64()).collect::<Result<Vec<u64>>>()?;
    let max = if flags & 1 != 0 {
        (0..rank).map(|_| r.u64()).collect::<Result<Vec<u64>>>()?
    } else {
        dims.clone()
    };
    Ok((dims, max))
}

/// Reads and checks the HDF5 structures of a Zarr v3 shard that is also
/// an HDF5 file, as libn5 writes them (Zarr arrays with the `hdf5_shards`
/// member): the superblock (version 3, at offset 0 or in a user block of
/// 512, 1024, … bytes), the root group's links, the `data` dataset's
/// dataspace, datatype, fill value, filters and chunked layout (version 4,
/// Fixed Array index) and every Fixed Array entry, and `/zarrindex` when
/// the file has it; every checksum is checked and every address and chunk
/// against the file's length. Other HDF5 files (other structure versions,
/// other indexes) are errors: this is no general HDF5 reader. Never reads
/// outside `file`, and allocates no more than its length.
pub fn inspect_shard(file: &[u8]) -> Result<ShardFileInfo> {
    let mut base = 0u64;
    while file.get(base as usize..base as usize + 8) != Some(&SIGNATURE[..]) {
        base = if base == 0 { 512 } else { base * 2 };
        if base >= file.len() as u64 {
            return Err(bad("file", "no superblock signature at 0, 512, 1024, …"));
        }
    }
    let sb = at(file, base, 0, Some(SUPERBLOCK_LEN), "superblock")?;
    check_sum(sb, "superblock")?;
    let mut r = Bytes::new(sb, "superblock");
    r.take(8)?;
    r.expect(&[3, 8, 8, 0])?;
    let stated_base = r.u64()?;
    if stated_base != base {
        return Err(bad(
            "superblock",
            format!("base address {stated_base} at offset {base}"),
        ));
    }
    if r.u64()? != UNDEF {
        return Err(bad("superblock", "an extension"));
    }
    let eof = r.u64()?;
    let root = r.u64()?;
    if eof != file.len() as u64 {
        return Err(bad(
            "superblock",
            format!("end of file {eof}, the file has {} bytes", file.len()),
        ));
    }
    // The root group: link info, group info, hard links.
    let mut members = Vec::new();
    let mut addresses = Vec::new();
    let root_messages = messages(file, base, root, "root group")?;
    one(&root_messages, MSG_LINK_INFO, "root group")?;
    one(&root_messages, MSG_GROUP_INFO, "root group")?;
    for (kind, body) in &root_messages {
        if *kind != MSG_LINK {
            continue;
        }
        let mut l = Bytes::new(body, "link");
        l.expect(&[1, 0])?;
        let n = l.u8()? as usize;
        let name = String::from_utf8_lossy(l.take(n)?).into_owned();
        addresses.push(l.u64()?);
        members.push(name);
    }
    let find = |name: &str| members.iter().position(|m| m == name).map(|i| addresses[i]);
    let data = find("data").ok_or_else(|| bad("root group", "no link 'data'"))?;
    let m = messages(file, base, data, "dataset 'data'")?;
    let (dims, max_dims) = read_dataspace(
        one(&m, MSG_DATASPACE, "dataset 'data'")?,
        "dataspace of 'data'",
    )?;
    if dims.iter().zip(&max_dims).any(|(d, m)| d > m) {
        return Err(bad(
            "dataset 'data'",
            format!("dims {dims:?} above max dims {max_dims:?}"),
        ));
    }
    // Datatype: integers and IEEE floats of version 1.
    let mut t = Bytes::new(
        one(&m, MSG_DATATYPE, "dataset 'data'")?,
        "datatype of 'data'",
    );
    let class_version = t.u8()?;
    let bits = t.take(3)?;
    let size = t.u32()?;
    let element = match class_version {
        0x10 => (0, size, bits[0] & 1 != 0, bits[0] & 0x08 != 0),
        0x11 => (1, size, bits[0] & 1 != 0, true),
        other => {
            return Err(bad(
                "datatype of 'data'",
                format!("class and version {other:#x}"),
            ))
        }
    };
    if ![1, 2, 4, 8].contains(&size) {
        return Err(bad("datatype of 'data'", format!("{size}-byte elements")));
    }
    // Fill value, version 3.
    let mut f = Bytes::new(one(&m, MSG_FILL, "dataset 'data'")?, "fill value of 'data'");
    f.expect(&[3])?;
    let fill = if f.u8()? & 0x20 != 0 {
        let n = f.u32()? as usize;
        Some(f.take(n)?.to_vec())
    } else {
        None
    };
    // Filters, version 2.
    let mut filters = Vec::new();
    if let Some((_, body)) = m.iter().find(|(k, _)| *k == MSG_PIPELINE) {
        let mut p = Bytes::new(body, "filter pipeline of 'data'");
        p.expect(&[2])?;
        let count = p.u8()?;
        for _ in 0..count {
            let id = p.u16()?;
            let name_len = if id >= 256 { p.u16()? as usize } else { 0 };
            let _flags = p.u16()?;
            let ncd = p.u16()? as usize;
            let name = p.take(name_len)?;
            let name =
                String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
            let cd = (0..ncd).map(|_| p.u32()).collect::<Result<Vec<u32>>>()?;
            filters.push((id, name, cd));
        }
    }
    // Layout v4, chunked, Fixed Array.
    let mut l = Bytes::new(one(&m, MSG_LAYOUT, "dataset 'data'")?, "layout of 'data'");
    l.expect(&[4, 2, 0])?;
    let ndims = l.u8()? as usize;
    let width = l.u8()? as usize;
    if ndims != dims.len() + 1 || !(1..=8).contains(&width) {
        return Err(bad(
            "layout of 'data'",
            format!("{ndims} dimensions of {width} bytes"),
        ));
    }
    let mut chunk = (0..ndims)
        .map(|_| l.uint(width))
        .collect::<Result<Vec<u64>>>()?;
    if chunk.pop() != Some(size as u64) {
        return Err(bad(
            "layout of 'data'",
            "the chunk's element size is not the datatype's",
        ));
    }
    l.expect(&[3])?;
    let page_bits = l.u8()?;
    let fahd_at = l.u64()?;
    let chunk_bytes = chunk
        .iter()
        .try_fold(size as u64, |a, &c| a.checked_mul(c))
        .filter(|&b| b > 0 && b < 1 << 32)
        .ok_or_else(|| bad("layout of 'data'", format!("chunk {chunk:?}")))?;
    if chunk
        .iter()
        .zip(&max_dims)
        .any(|(c, m)| !m.is_multiple_of(*c))
    {
        return Err(bad(
            "layout of 'data'",
            format!("chunk {chunk:?} does not divide max dims {max_dims:?}"),
        ));
    }
    let n = chunk
        .iter()
        .zip(&max_dims)
        .try_fold(1u64, |a, (c, m)| a.checked_mul(m / c))
        .ok_or_else(|| bad("layout of 'data'", "too many chunks"))?;
    // Fixed Array header and its data block.
    let fahd = at(file, base, fahd_at, Some(FAHD_LEN), "Fixed Array header")?;
    check_sum(fahd, "Fixed Array header")?;
    let mut h = Bytes::new(fahd, "Fixed Array header");
    h.expect(b"FAHD\0")?;
    let filtered = !filters.is_empty();
    h.expect(&[u8::from(filtered)])?;
    let entry = h.u8()? as u64;
    let size_len = (1 + (chunk_bytes.ilog2() as usize + 8) / 8).min(8);
    let want_entry = if filtered { 8 + size_len as u64 + 4 } else { 8 };
    if entry != want_entry
        || h.u8()? != page_bits
        || h.u64()? != n
        || n.saturating_sub(1)
            .checked_shr(page_bits.into())
            .unwrap_or(0)
            != 0
    {
        return Err(bad(
            "Fixed Array header",
            "its entry size, page bits or count are not the layout's",
        ));
    }
    let fadb_at = h.u64()?;
    let fadb_len = n
        .checked_mul(entry)
        .and_then(|e| e.checked_add(FADB_OVERHEAD))
        .ok_or_else(|| bad("Fixed Array data block", "too many entries"))?;
    let fadb = at(
        file,
        base,
        fadb_at,
        Some(fadb_len),
        "Fixed Array data block",
    )?;
    check_sum(fadb, "Fixed Array data block")?;
    let mut d = Bytes::new(fadb, "Fixed Array data block");
    d.expect(b"FADB\0")?;
    d.expect(&[u8::from(filtered)])?;
    if d.u64()? != fahd_at {
        return Err(bad("Fixed Array data block", "not its header's"));
    }
    // Every entry read from the block, whose length the file bounds.
    let mut chunks = Vec::with_capacity((fadb.len() / entry as usize).min(n as usize));
    for _ in 0..n {
        let address = d.u64()?;
        let bytes = if filtered {
            let s = d.uint(size_len)?;
            d.u32()?;
            s
        } else {
            chunk_bytes
        };
        if address == UNDEF {
            chunks.push(None);
            continue;
        }
        let offset = base
            .checked_add(address)
            .filter(|&o| o.checked_add(bytes).is_some_and(|e| e <= file.len() as u64))
            .ok_or_else(|| {
                bad(
                    "Fixed Array data block",
                    format!("a chunk of {bytes} bytes at {address}, beyond the file"),
                )
            })?;
        chunks.push(Some((offset, bytes)));
    }
    let zarrindex = match find("zarrindex") {
        None => None,
        Some(address) => {
            let m = messages(file, base, address, "dataset 'zarrindex'")?;
            let (dims, _) = read_dataspace(
                one(&m, MSG_DATASPACE, "dataset 'zarrindex'")?,
                "dataspace of 'zarrindex'",
            )?;
            let mut l = Bytes::new(
                one(&m, MSG_LAYOUT, "dataset 'zarrindex'")?,
                "layout of 'zarrindex'",
            );
            l.expect(&[3, 1])?;
            let address = l.u64()?;
            let len = l.u64()?;
            if dims != [len] {
                return Err(bad(
                    "dataset 'zarrindex'",
                    format!("shape {dims:?} holding {len} bytes"),
                ));
            }
            at(file, base, address, Some(len), "dataset 'zarrindex'")?;
            Some((base + address, len))
        }
    };
    Ok(ShardFileInfo {
        user_block: base,
        eof,
        members,
        dims,
        max_dims,
        chunk,
        element,
        fill,
        filters,
        chunks,
        zarrindex,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard file of 3 × 5 uint16 in max dims 4 × 6, chunks 2 × 3, with
    /// `filter`, its chunks `chunks` (their bytes: `len` each, 0xab) where
    /// `Some`.
    fn file(filter: Filter, at: IndexAt, present: &[bool], len: u64) -> Vec<u8> {
        let f = ShardFile::new(
            DataType::U16,
            false,
            &[3, 5],
            &[4, 6],
            &[2, 3],
            &7u16.to_le_bytes(),
            filter,
            at,
            68,
        )
        .unwrap();
        let head = f.head_len();
        let mut chunks = Vec::new();
        let mut end = head;
        for &p in present {
            chunks.push(p.then(|| {
                end += len;
                (end - len, len)
            }));
        }
        let index = if at == IndexAt::End { 68 } else { 0 };
        let mut bytes = vec![0xab; (end + index) as usize];
        bytes[..head as usize].fill(0);
        f.write_head(&chunks, bytes.len() as u64, &mut bytes[..head as usize])
            .unwrap();
        bytes
    }

    #[test]
    fn what_is_written_is_what_inspection_finds() {
        let present = [true, false, true, true];
        let raw = file(Filter::None, IndexAt::End, &present, 12);
        let info = inspect_shard(&raw).unwrap();
        assert_eq!(info.user_block, 0);
        assert_eq!(
            (info.dims, info.max_dims, info.chunk),
            (vec![3, 5], vec![4, 6], vec![2, 3])
        );
        assert_eq!(info.element, (0, 2, false, false));
        assert_eq!(info.fill, Some(vec![7, 0]));
        assert!(info.filters.is_empty());
        assert_eq!(info.members, ["data", "zarrindex"]);
        assert_eq!(info.zarrindex, Some((raw.len() as u64 - 68, 68)));
        assert_eq!(
            info.chunks.iter().map(Option::is_some).collect::<Vec<_>>(),
            present
        );
        let zstd = file(Filter::Zstd { level: -3 }, IndexAt::Start, &present, 5);
        let info = inspect_shard(&zstd).unwrap();
        assert_eq!(info.user_block, 512);
        assert_eq!(info.members, ["data"]);
        assert_eq!(
            info.filters,
            [(ZSTD_FILTER, "zstd".to_string(), vec![(-3i32) as u32])]
        );
        let first = info.chunks[0].unwrap();
        assert_eq!(first.1, 5);
        // Raw chunks must be exactly a chunk's bytes.
        let f = ShardFile::new(
            DataType::U16,
            false,
            &[3, 5],
            &[4, 6],
            &[2, 3],
            &[0, 0],
            Filter::None,
            IndexAt::End,
            68,
        )
        .unwrap();
        let mut head = vec![0u8; f.head_len() as usize];
        let chunks = [Some((f.head_len(), 11)), None, None, None];
        assert!(f.write_head(&chunks, 1000, &mut head).is_err());
        assert!(f.write_head(&chunks[..3], 1000, &mut head).is_err());
    }

    #[test]
    fn damaged_files_are_errors_never_panics() {
        let good = file(
            Filter::Blosc {
                typesize: 2,
                clevel: 5,
                shuffle: 1,
                compressor: 1,
            },
            IndexAt::End,
            &[true, true, false, true],
            9,
        );
        inspect_shard(&good).unwrap();
        for cut in 0..good.len() {
            assert!(inspect_shard(&good[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..good.len() - 68 - 27 {
            for bit in [0x01, 0x80] {
                let mut bad = good.clone();
                bad[at] ^= bit;
                // Every byte of the metadata is under a checksum.
                assert!(inspect_shard(&bad).is_err(), "byte {at} bit {bit:#x}");
            }
        }
    }
}
