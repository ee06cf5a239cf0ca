//! N5 datasets as the API's [`Array`]: metadata in the dataset's
//! attributes.json, one block file per grid position (the key is the
//! position's numbers joined by `/`), edge blocks written truncated and read
//! whether stored truncated or padded, and N5's own varlength, string and
//! object blocks. Blocks are objects of the container's store, one atomic
//! write each.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use super::block::{self, BlockHeader, BlockMode, DataBlock};
use super::metadata::DatasetAttributes;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::{Array, ObjectBlocks, Order, RegionIo};
use crate::format::node::as_object_mut;
use crate::format::Format;
use crate::geometry::{check_buffer, copy_box, is_fill, Placement};
use crate::path::{self, display};
use crate::storage::{ByteRange, Exact, Store};

/// An N5 dataset.
#[derive(Debug)]
pub(crate) struct N5Array {
    store: Arc<dyn Store>,
    path: String,
    attributes: Arc<DatasetAttributes>,
    /// Whether all-zero blocks are stored (else deleted).
    write_empty: bool,
    /// One element of zeros, the fill value.
    zero: Vec<u8>,
}

thread_local! {
    /// The block-file buffer of this thread's single-block reads, reused
    /// from call to call.
    static FILE_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A [`FILE_BUFFER`] that grew beyond this (a huge block) is released after
/// the read rather than kept for the thread's lifetime.
const KEEP_FILE_BUFFER: usize = 64 << 20;

impl N5Array {
    /// The dataset at `path` of `store` with `attributes`.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        path: String,
        attributes: DatasetAttributes,
        write_empty: bool,
    ) -> N5Array {
        let zero = vec![0u8; attributes.data_type.size()];
        N5Array {
            store,
            path,
            attributes: Arc::new(attributes),
            write_empty,
            zero,
        }
    }

    fn err(&self, grid_pos: &[u64]) -> impl Fn(Error) -> Error + '_ {
        let key = self.key(grid_pos);
        move |e: Error| {
            e.context(format!(
                "block '{}' of dataset '{}'",
                key,
                display(&self.path)
            ))
        }
    }

    /// The mode-0 header of a block of `shape`.
    fn header(shape: &[u64]) -> BlockHeader {
        BlockHeader {
            mode: BlockMode::Default,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: shape.iter().product(),
        }
    }

    /// Encode `header` and `data` (native order) and store them at `grid_pos`.
    fn store_block(&self, grid_pos: &[u64], header: &BlockHeader, data: &[u8]) -> Result<()> {
        let bytes = block::encode(header, data, &self.attributes).map_err(self.err(grid_pos))?;
        self.store.put(&self.key(grid_pos), &[&bytes])
    }

    /// [`Array::read_block_into`] of a raw block stored exactly as its
    /// nominal shape says (the usual case): the payload is read from the
    /// file straight into `out` and converted there, with no intermediate
    /// buffer. `None` when the block is stored any other way (padded,
    /// truncated, varlength, short), for the general path to handle.
    fn read_raw_direct(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<Option<bool>> {
        let attrs = &self.attributes;
        let shape = attrs.block_shape(grid_pos)?;
        let elem = attrs.data_type.size();
        if check_buffer(&shape, elem, out.len()).is_err() {
            return Ok(None);
        }
        let mut expected = Vec::with_capacity(8 + 4 * shape.len());
        N5Array::header(&shape).write(&mut expected);
        let mut header = vec![0u8; expected.len()];
        match self
            .store
            .get_exact(&self.key(grid_pos), &mut [&mut header, out])?
        {
            Exact::Missing => {
                out.fill(0);
                Ok(Some(false))
            }
            Exact::Read if header == expected => {
                block::swap_to_from_be(out, elem);
                Ok(Some(true))
            }
            // Stored another way: decode what was read.
            Exact::Read => {
                let whole = [&header[..], &out[..]].concat();
                self.decode_native(grid_pos, &whole, out)
                    .map(|()| Some(true))
            }
            Exact::Other(bytes) => self
                .decode_native(grid_pos, &bytes, out)
                .map(|()| Some(true)),
        }
    }

    /// Decode a stored block into `out` (its nominal shape), native order.
    fn decode_native(&self, grid_pos: &[u64], stored: &[u8], out: &mut [u8]) -> Result<()> {
        if self.decode(grid_pos, stored, out)? == Order::Swapped {
            crate::geometry::swap_in_place(out, self.attributes.data_type.size());
        }
        Ok(())
    }
}

impl Array for N5Array {
    fn format(&self) -> Format {
        Format::N5
    }

    fn attributes(&self) -> Arc<DatasetAttributes> {
        self.attributes.clone()
    }

    /// The dataset's attributes.json as stored now (user attributes
    /// included).
    fn metadata(&self) -> Result<Value> {
        Format::N5
            .user_attributes(&*self.store, &self.path)?
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("dataset '{}' has no attributes.json", display(&self.path)),
                )
            })
    }

    fn fill(&self) -> &[u8] {
        &self.zero
    }

    fn shard_shape(&self) -> Vec<u64> {
        self.attributes
            .block_size
            .iter()
            .map(|&b| b as u64)
            .collect()
    }

    /// Blocks outside the new extent stay stored and reappear if the
    /// dataset grows again, as with the other N5 implementations.
    fn resize(&self, dimensions: &[u64]) -> Result<Arc<dyn Array>> {
        let a = &self.attributes;
        let updated = DatasetAttributes::new(
            dimensions.to_vec(),
            a.block_size.clone(),
            a.data_type.clone(),
            a.compression.clone(),
        )?;
        Format::N5.update_user_attributes(&*self.store, &self.path, &mut |doc| {
            as_object_mut(doc).insert("dimensions".into(), Value::from(dimensions.to_vec()));
            Ok(())
        })?;
        Ok(Arc::new(N5Array::new(
            self.store.clone(),
            self.path.clone(),
            updated,
            self.write_empty,
        )))
    }

    fn block_key(&self, grid_pos: &[u64]) -> String {
        self.key(grid_pos)
    }

    fn block_exists(&self, grid_pos: &[u64]) -> Result<bool> {
        self.store.exists(&self.key(grid_pos))
    }

    fn unit_object(&self, unit_pos: &[u64]) -> Option<(&dyn Store, String)> {
        Some((&*self.store, self.key(unit_pos)))
    }

    /// The dataset keys (dimensions, block size, data type, compression):
    /// the block format itself is the same in every N5 version.
    fn encoding(&self) -> Option<Value> {
        Some(Value::Object(self.attributes.to_json()))
    }

    fn read_block(&self, grid_pos: &[u64]) -> Result<Option<DataBlock>> {
        let Some(bytes) = self.store.get(&self.key(grid_pos))? else {
            return Ok(None);
        };
        block::decode(&bytes, &self.attributes)
            .map(Some)
            .map_err(self.err(grid_pos))
    }

    fn block_header(&self, grid_pos: &[u64]) -> Result<Option<BlockHeader>> {
        // The header's largest size: mode, rank, the extents and the
        // element count (an object block's is shorter).
        let len = 8 + 4 * self.attributes.ndim() as u64;
        let range = ByteRange::Span { offset: 0, len };
        let Some(bytes) = self.store.get_range(&self.key(grid_pos), range)? else {
            return Ok(None);
        };
        let (header, _) = BlockHeader::parse(&bytes).map_err(self.err(grid_pos))?;
        Ok(Some(header))
    }

    /// A stored block larger than nominal (padded end blocks) is clipped,
    /// a smaller one is zero-extended, a missing one gives zeros.
    fn read_block_into(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<bool> {
        if self.attributes.compression == crate::codec::Compression::Raw {
            if let Some(found) = self.read_raw_direct(grid_pos, out)? {
                return Ok(found);
            }
        }
        FILE_BUFFER.with_borrow_mut(|file| {
            let result = if self.store.get_into(&self.key(grid_pos), file)? {
                self.decode_native(grid_pos, file, out).map(|()| true)
            } else {
                out.fill(0);
                Ok(false)
            };
            if file.capacity() > KEEP_FILE_BUFFER {
                *file = Vec::new();
            }
            result
        })
    }

    /// Any shape within `1..=blockSize` is stored as given; with empty
    /// blocks not written, an all-zero block is not stored and a stored
    /// one is deleted.
    fn write_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        if !self.write_empty && is_fill(data, &self.zero) {
            return self.store.delete(&self.key(grid_pos)).map(|_| ());
        }
        self.store_block(grid_pos, &N5Array::header(shape), data)
    }

    fn delete_block(&self, grid_pos: &[u64]) -> Result<bool> {
        self.store.delete(&self.key(grid_pos))
    }

    /// Object stores answer from a flat listing of the dataset's keys (a
    /// thousand per request). Blocks outside the current grid (left by a
    /// shrinking resize) are included.
    fn list_blocks(&self) -> Result<Vec<Vec<u64>>> {
        let ndim = self.attributes.ndim();
        let number = |n: &str| {
            let canonical = !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n.len() == 1 || !n.starts_with('0'));
            canonical.then(|| n.parse::<u64>().ok()).flatten()
        };
        let mut out: Vec<Vec<u64>> = self
            .store
            .list_keys(&self.path)?
            .iter()
            .filter_map(|key| {
                let position: Option<Vec<u64>> = key.split('/').map(number).collect();
                position.filter(|p| p.len() == ndim)
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    fn own_blocks(&self, _what: &str) -> Result<()> {
        Ok(())
    }

    /// When the number of elements equals `prod(shape)` the block is
    /// written in mode 0, as Java does.
    fn write_varlength_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        let elem = self.attributes.data_type.size();
        if !data.len().is_multiple_of(elem) {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!(
                    "{} bytes are not a whole number of {} elements",
                    data.len(),
                    self.attributes.data_type
                ),
            ));
        }
        let n = (data.len() / elem) as u64;
        if n > u32::MAX as u64 {
            return Err(Error::invalid_argument(
                "a block holds at most 2^32-1 elements",
            ));
        }
        let mode = if n == shape.iter().product::<u64>() {
            BlockMode::Default
        } else {
            BlockMode::Varlength
        };
        let header = BlockHeader {
            mode,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: n,
        };
        self.store_block(grid_pos, &header, data)
    }

    /// Each string as UTF-8 followed by NUL, always in mode 1, as Java
    /// does.
    fn write_string_block(&self, grid_pos: &[u64], shape: &[u64], strings: &[&str]) -> Result<()> {
        let payload = block::encode_strings(strings)?;
        if payload.len() as u64 > u32::MAX as u64 {
            return Err(Error::invalid_argument(
                "a string block holds at most 2^32-1 bytes",
            ));
        }
        let header = BlockHeader {
            mode: BlockMode::Varlength,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: payload.len() as u64,
        };
        self.store_block(grid_pos, &header, &payload)
    }

    fn read_string_block(&self, grid_pos: &[u64]) -> Result<Option<(Vec<u32>, Vec<String>)>> {
        let Some(block) = self.read_block(grid_pos)? else {
            return Ok(None);
        };
        let strings = block::decode_strings(&block.data).map_err(self.err(grid_pos))?;
        Ok(Some((block.header.size, strings)))
    }

    /// Opaque bytes in a mode-2 block.
    fn write_object_block(&self, grid_pos: &[u64], bytes: &[u8]) -> Result<()> {
        if bytes.len() as u64 > u32::MAX as u64 {
            return Err(Error::invalid_argument(
                "an object block holds at most 2^32-1 bytes",
            ));
        }
        let header = BlockHeader {
            mode: BlockMode::Object,
            size: Vec::new(),
            num_elements: bytes.len() as u64,
        };
        self.store_block(grid_pos, &header, bytes)
    }

    fn region(&self) -> RegionIo<'_> {
        RegionIo::Objects(self)
    }
}

impl ObjectBlocks for N5Array {
    fn store(&self) -> &dyn Store {
        &*self.store
    }

    fn key(&self, grid_pos: &[u64]) -> String {
        path::join(&self.path, &DatasetAttributes::block_key(grid_pos))
    }

    fn buffer_shape(&self, _grid_pos: &[u64], nominal: &[u64]) -> Vec<u64> {
        nominal.to_vec()
    }

    /// A raw mode-0 block of the nominal shape: its big-endian payload
    /// after the header.
    fn stored_elements(&self, grid_pos: &[u64], stored: &[u8]) -> Result<Option<(usize, Order)>> {
        let attrs = &self.attributes;
        if attrs.compression != crate::codec::Compression::Raw {
            return Ok(None);
        }
        let shape = attrs.block_shape(grid_pos)?;
        let found = block::exact_payload(stored, attrs, &shape).map_err(self.err(grid_pos))?;
        Ok(found
            .filter(|&(at, nbytes)| stored.len() - at >= nbytes)
            .map(|(at, _)| (at, Order::big_endian())))
    }

    /// A mode-0 block of the nominal shape is decompressed straight into
    /// `out` and left big-endian; any other (padded, truncated) is decoded
    /// whole and placed, zeros where it is smaller.
    fn decode(&self, grid_pos: &[u64], stored: &[u8], out: &mut [u8]) -> Result<Order> {
        let attrs = &self.attributes;
        let shape = attrs.block_shape(grid_pos)?;
        let elem = attrs.data_type.size();
        check_buffer(&shape, elem, out.len())?;
        let err = self.err(grid_pos);
        if let Some((at, nbytes)) = block::exact_payload(stored, attrs, &shape).map_err(&err)? {
            if nbytes == out.len() {
                attrs.compression.decode(&stored[at..], out).map_err(&err)?;
                return Ok(Order::big_endian());
            }
        }
        let block = block::decode(stored, attrs).map_err(&err)?;
        place_block(&block, &shape, elem, out).map_err(&err)?;
        Ok(Order::Native)
    }

    fn write_order(&self) -> Order {
        Order::big_endian()
    }

    fn encode(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        if !self.write_empty && is_fill(data, &self.zero) {
            return Ok(false);
        }
        let header = N5Array::header(shape);
        if self.attributes.compression == crate::codec::Compression::Raw {
            out.clear();
            header.write(out);
            out.extend_from_slice(data);
            return Ok(true);
        }
        block::encode_big_endian(&header, data, &self.attributes, out)
            .map_err(self.err(grid_pos))?;
        Ok(true)
    }

    /// A raw block is written as its header followed by `data`, with no
    /// copy.
    fn put(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let key = self.key(grid_pos);
        if self.attributes.compression == crate::codec::Compression::Raw
            && (self.write_empty || !is_fill(data, &self.zero))
        {
            scratch.clear();
            N5Array::header(shape).write(scratch);
            return self.store.put(&key, &[scratch, data]);
        }
        if self.encode(grid_pos, shape, data, scratch)? {
            self.store.put(&key, &[scratch])
        } else {
            self.store.delete(&key).map(|_| ())
        }
    }
}

/// Copy a decoded numeric block into a buffer of the nominal `shape`,
/// clipping larger (padded) blocks and zero-filling where the stored block
/// is smaller.
fn place_block(block: &DataBlock, shape: &[u64], elem: usize, out: &mut [u8]) -> Result<()> {
    let stored: Vec<u64> = block.header.size.iter().map(|&s| s as u64).collect();
    let stored_elems: u64 = stored.iter().product();
    if block.header.num_elements < stored_elems {
        return Err(Error::codec(format!(
            "varlength block with {} elements for size {:?} cannot be read as an array",
            block.header.num_elements, block.header.size
        )));
    }
    let extent: Vec<u64> = stored.iter().zip(shape).map(|(&s, &n)| s.min(n)).collect();
    if extent != shape {
        out.fill(0);
    }
    let zeros = vec![0u64; shape.len()];
    copy_box(
        &block.data,
        Placement {
            shape: &stored,
            offset: &zeros,
        },
        out,
        Placement {
            shape,
            offset: &zeros,
        },
        &extent,
        elem,
    );
    Ok(())
}
