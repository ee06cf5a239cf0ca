//! Datasets: cached metadata, resizing, and block-level I/O by grid position
//! (numeric, varlength, string and object blocks), with edge blocks written
//! truncated and read whether stored truncated or padded. Blocks are objects
//! of the container's store, one atomic write each.

use std::cell::RefCell;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::block::{self, BlockHeader, BlockMode, DataBlock};
use crate::container::Container;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::ZarrArray;
use crate::geometry::{copy_box, Placement};
use crate::metadata::DatasetAttributes;
use crate::path::{self, display};
use crate::storage::{ByteRange, Exact, Store};

/// An open dataset. Cheap to clone; keeps its container alive.
/// `Send + Sync`: every method may be called from any thread.
#[derive(Clone, Debug)]
pub struct Dataset {
    container: Container,
    path: String,
    attributes: Arc<RwLock<Arc<DatasetAttributes>>>,
    /// The array's layout and codecs in a Zarr container (`None` for N5),
    /// replaced as a whole when the array is resized.
    zarr: Option<Arc<RwLock<Arc<ZarrArray>>>>,
}

impl Dataset {
    pub(crate) fn new(container: Container, path: String, attributes: DatasetAttributes) -> Self {
        Dataset {
            container,
            path,
            attributes: Arc::new(RwLock::new(Arc::new(attributes))),
            zarr: None,
        }
    }

    /// The Zarr array `array` at `path` of `container`.
    pub(crate) fn new_zarr(container: Container, path: String, array: ZarrArray) -> Result<Self> {
        let attributes = array.attributes()?;
        Ok(Dataset {
            container,
            path,
            attributes: Arc::new(RwLock::new(Arc::new(attributes))),
            zarr: Some(Arc::new(RwLock::new(Arc::new(array)))),
        })
    }

    /// A snapshot of the array's Zarr layout, `None` in an N5 container.
    pub(crate) fn zarr(&self) -> Option<Arc<ZarrArray>> {
        self.zarr.as_ref().map(|z| match z.read() {
            Ok(a) => a.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        })
    }

    /// The shard shape (N5 order): the chunk grid's shape of a sharded Zarr
    /// array, else the block size.
    pub fn shard_shape(&self) -> Vec<u64> {
        match self.zarr() {
            Some(z) => z.shard_shape(),
            None => self
                .attributes()
                .block_size
                .iter()
                .map(|&b| b as u64)
                .collect(),
        }
    }

    /// One element of the value that blocks which are not stored read as,
    /// in native byte order: a Zarr array's `fill_value`, zeros for N5.
    pub fn fill_value(&self) -> Vec<u8> {
        match self.zarr() {
            Some(z) => z.fill().to_vec(),
            None => vec![0u8; self.data_type().size()],
        }
    }

    /// The dataset's own metadata document: a Zarr array's zarr.json or
    /// .zarray as it was read when the dataset was opened, or an N5
    /// dataset's attributes.json as stored now (user attributes included).
    pub fn metadata(&self) -> Result<Value> {
        if let Some(z) = self.zarr() {
            return Ok(z.document().clone());
        }
        self.container
            .read_attributes_file(&self.path)?
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("dataset '{}' has no attributes.json", display(&self.path)),
                )
            })
    }

    /// Read the block at `grid_pos` of a Zarr array into `out`, which holds
    /// the block's nominal shape (clipped at the array's end); missing
    /// chunks read as the fill value and give `false`.
    fn read_zarr_block(&self, z: &ZarrArray, grid_pos: &[u64], out: &mut [u8]) -> Result<bool> {
        let attrs = self.attributes();
        let shape = attrs.block_shape(grid_pos)?;
        let elem = attrs.data_type.size();
        check_buffer(&shape, elem, out.len())?;
        if out.len() == z.block_bytes() {
            return z.read_block(self.store(), &self.path, grid_pos, Some(out));
        }
        // An edge block: Zarr stores it full size.
        let mut full = vec![0u8; z.block_bytes()];
        let found = z.read_block(self.store(), &self.path, grid_pos, Some(&mut full))?;
        let full_shape: Vec<u64> = attrs.block_size.iter().map(|&b| b as u64).collect();
        let zeros = vec![0u64; shape.len()];
        copy_box(
            &full,
            Placement {
                shape: &full_shape,
                offset: &zeros,
            },
            out,
            Placement {
                shape: &shape,
                offset: &zeros,
            },
            &shape,
            elem,
        );
        Ok(found)
    }

    /// The container this dataset belongs to.
    pub fn container(&self) -> &Container {
        &self.container
    }

    /// The dataset's normalised path in its container (`""` for the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// A snapshot of the dataset's metadata.
    pub fn attributes(&self) -> Arc<DatasetAttributes> {
        match self.attributes.read() {
            Ok(a) => a.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The dataset's data type.
    pub fn data_type(&self) -> DataType {
        self.attributes().data_type
    }

    /// Change the dataset's dimensions (rank unchanged), keeping every stored
    /// block. Blocks outside the new extent stay on disk and reappear if the
    /// dataset grows again, as with the other N5 implementations.
    pub fn set_dimensions(&self, dimensions: &[u64]) -> Result<()> {
        self.container.check_writable()?;
        let current = self.attributes();
        current.check_rank(dimensions.len(), "dimensions")?;
        if let (Some(lock), Some(z)) = (&self.zarr, self.zarr()) {
            return self.set_zarr_shape(lock, &z, dimensions);
        }
        let updated = DatasetAttributes::new(
            dimensions.to_vec(),
            current.block_size.clone(),
            current.data_type,
            current.compression.clone(),
        )?;
        self.container.update_attributes(&self.path, |doc| {
            crate::container::as_object_mut(doc)
                .insert("dimensions".into(), Value::from(dimensions.to_vec()));
            Ok(())
        })?;
        let mut guard = match self.attributes.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *guard = Arc::new(updated);
        Ok(())
    }

    /// [`Dataset::set_dimensions`] of a Zarr array: the `shape` of its
    /// metadata document (C order) is replaced atomically, every other
    /// member kept, and the new document checked before it is written.
    fn set_zarr_shape(
        &self,
        lock: &RwLock<Arc<ZarrArray>>,
        z: &ZarrArray,
        dimensions: &[u64],
    ) -> Result<()> {
        let shape: Vec<u64> = dimensions.iter().rev().copied().collect();
        let key = crate::format::array::metadata_key(z.format(), &self.path);
        let store = self.store();
        let mut resized = None;
        store.update(&key, &mut |current| {
            let bytes = current.ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("{} no longer exists", store.describe(&key)),
                )
            })?;
            let mut doc = crate::format::node::parse_json(bytes, &key, store)?;
            crate::container::as_object_mut(&mut doc)
                .insert("shape".into(), Value::from(shape.clone()));
            let array = ZarrArray::from_stored(z.format(), doc.clone())
                .map_err(|e| Error::invalid_argument(e.message()))?;
            resized = Some(array);
            serde_json::to_vec_pretty(&doc)
                .map(Some)
                .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))
        })?;
        let array =
            resized.ok_or_else(|| Error::new(ErrorKind::Internal, "the resize did not run"))?;
        let attributes = array.attributes()?;
        *lock.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(array);
        *self.attributes.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(attributes);
        Ok(())
    }

    /// The storage key of the block at `grid_pos`.
    pub fn block_key(&self, grid_pos: &[u64]) -> String {
        match self.zarr() {
            Some(z) => path::join(&self.path, &z.outer_key(&z.outer_of_block(grid_pos))),
            None => path::join(&self.path, &DatasetAttributes::block_key(grid_pos)),
        }
    }

    fn block_error(&self, grid_pos: &[u64]) -> impl Fn(Error) -> Error + '_ {
        let key = self.block_key(grid_pos);
        move |e: Error| {
            e.context(format!(
                "block '{}' of dataset '{}'",
                key,
                display(&self.path)
            ))
        }
    }

    /// The nominal shape of the block at `grid_pos` (`blockSize` clipped at
    /// the dataset's end).
    pub fn block_shape(&self, grid_pos: &[u64]) -> Result<Vec<u64>> {
        self.attributes().block_shape(grid_pos)
    }

    fn store(&self) -> &dyn Store {
        self.container.store()
    }

    /// Whether the block at `grid_pos` is stored.
    pub fn block_exists(&self, grid_pos: &[u64]) -> Result<bool> {
        self.attributes().check_grid_pos(grid_pos)?;
        if let Some(z) = self.zarr() {
            return z.read_block(self.store(), &self.path, grid_pos, None);
        }
        self.store().exists(&self.block_key(grid_pos))
    }

    /// Read the block at `grid_pos` as stored: its header and its decoded
    /// payload (numeric elements in native byte order). `None` when the
    /// block is not stored.
    pub fn read_block(&self, grid_pos: &[u64]) -> Result<Option<DataBlock>> {
        let attrs = self.attributes();
        attrs.check_grid_pos(grid_pos)?;
        if let Some(z) = self.zarr() {
            let shape = attrs.block_shape(grid_pos)?;
            let n: u64 = shape.iter().product();
            let mut data = vec![0u8; n as usize * attrs.data_type.size()];
            if !self.read_zarr_block(&z, grid_pos, &mut data)? {
                return Ok(None);
            }
            let header = BlockHeader {
                mode: BlockMode::Default,
                size: shape.iter().map(|&s| s as u32).collect(),
                num_elements: n,
            };
            return Ok(Some(DataBlock { header, data }));
        }
        let Some(bytes) = self.store().get(&self.block_key(grid_pos))? else {
            return Ok(None);
        };
        block::decode(&bytes, &attrs)
            .map(Some)
            .map_err(self.block_error(grid_pos))
    }

    /// The header of the block stored at `grid_pos` (mode, shape and element
    /// count as written), without decompressing its payload; `None` when
    /// the block is not stored.
    pub fn block_header(&self, grid_pos: &[u64]) -> Result<Option<BlockHeader>> {
        let attrs = self.attributes();
        attrs.check_grid_pos(grid_pos)?;
        if self.zarr.is_some() {
            // Zarr chunks have no header: the nominal one of a stored block.
            if !self.block_exists(grid_pos)? {
                return Ok(None);
            }
            let shape = attrs.block_shape(grid_pos)?;
            return Ok(Some(BlockHeader {
                mode: BlockMode::Default,
                size: shape.iter().map(|&s| s as u32).collect(),
                num_elements: shape.iter().product(),
            }));
        }
        // The header's largest size: mode, rank, the extents and the
        // element count (an object block's is shorter).
        let len = 8 + 4 * attrs.ndim() as u64;
        let range = ByteRange::Span { offset: 0, len };
        let Some(bytes) = self.store().get_range(&self.block_key(grid_pos), range)? else {
            return Ok(None);
        };
        let (header, _) = BlockHeader::parse(&bytes).map_err(self.block_error(grid_pos))?;
        Ok(Some(header))
    }

    /// Read the numeric block at `grid_pos` into `out`, which holds the
    /// block's nominal shape ([`Dataset::block_shape`]) in native byte order.
    /// A stored block larger than nominal (padded end blocks) is clipped, a
    /// smaller one is zero-extended, a missing one gives zeros and `false`.
    pub fn read_block_into(&self, grid_pos: &[u64], out: &mut [u8]) -> Result<bool> {
        let attrs = self.attributes();
        if let Some(z) = self.zarr() {
            attrs.check_grid_pos(grid_pos)?;
            return self.read_zarr_block(&z, grid_pos, out);
        }
        if attrs.compression == crate::codec::Compression::Raw && attrs.data_type.is_numeric() {
            if let Some(found) = self.read_raw_block_direct(grid_pos, &attrs, out)? {
                return Ok(found);
            }
        }
        FILE_BUFFER.with_borrow_mut(|file| {
            let result = self.read_block_into_with(grid_pos, out, file);
            if file.capacity() > KEEP_FILE_BUFFER {
                *file = Vec::new();
            }
            result
        })
    }

    /// [`Dataset::read_block_into`] of a raw block stored exactly as its
    /// nominal shape says (the usual case): the payload is read from the
    /// file straight into `out` and converted there, with no intermediate
    /// buffer. `None` when the block is stored any other way (padded,
    /// truncated, varlength, short), for the general path to handle.
    fn read_raw_block_direct(
        &self,
        grid_pos: &[u64],
        attrs: &DatasetAttributes,
        out: &mut [u8],
    ) -> Result<Option<bool>> {
        let shape = attrs.block_shape(grid_pos)?;
        let elem = attrs.data_type.size();
        if check_buffer(&shape, elem, out.len()).is_err() {
            return Ok(None);
        }
        let key = self.block_key(grid_pos);
        let mut expected = Vec::with_capacity(8 + 4 * shape.len());
        BlockHeader {
            mode: BlockMode::Default,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: shape.iter().product(),
        }
        .write(&mut expected);
        let mut header = vec![0u8; expected.len()];
        match self.store().get_exact(&key, &mut [&mut header, out])? {
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
                self.decode_block_for_region(grid_pos, &whole, out, false)
                    .map(|read| Some(!matches!(read, BlockRead::Missing)))
            }
            Exact::Other(bytes) => self
                .decode_block_for_region(grid_pos, &bytes, out, false)
                .map(|read| Some(!matches!(read, BlockRead::Missing))),
        }
    }

    /// [`Dataset::read_block_into`] reading the file through `file`, a
    /// buffer the caller reuses from block to block.
    pub(crate) fn read_block_into_with(
        &self,
        grid_pos: &[u64],
        out: &mut [u8],
        file: &mut Vec<u8>,
    ) -> Result<bool> {
        Ok(!matches!(
            self.read_block_for_region(grid_pos, out, file, false)?,
            BlockRead::Missing
        ))
    }

    /// Read the numeric block at `grid_pos` for a region: like
    /// [`Dataset::read_block_into_with`], except that with `convert_later`
    /// the caller converts the byte order as it copies the block into its
    /// region: a raw block stored whole is left in `file` undecoded
    /// ([`BlockRead::RawAt`]) and a compressed one is decoded into `out`
    /// but left big-endian ([`BlockRead::BigEndian`]).
    pub(crate) fn read_block_for_region(
        &self,
        grid_pos: &[u64],
        out: &mut [u8],
        file: &mut Vec<u8>,
        convert_later: bool,
    ) -> Result<BlockRead> {
        if !self.store().get_into(&self.block_key(grid_pos), file)? {
            self.check_block_buffer(grid_pos, out.len())?;
            out.fill(0);
            return Ok(BlockRead::Missing);
        }
        self.decode_block_for_region(grid_pos, file, out, convert_later)
    }

    /// Check that `len` bytes hold the numeric block at `grid_pos`.
    fn check_block_buffer(&self, grid_pos: &[u64], len: usize) -> Result<()> {
        let attrs = self.attributes();
        self.check_numeric(&attrs)?;
        check_buffer(&attrs.block_shape(grid_pos)?, attrs.data_type.size(), len)
    }

    /// Where the payload of a raw block stored whole starts in `bytes` (its
    /// stored bytes, header included), so that a region read copies it from
    /// there without a decode buffer; `None` for any other block.
    pub(crate) fn raw_payload_at(&self, grid_pos: &[u64], bytes: &[u8]) -> Result<Option<usize>> {
        let attrs = self.attributes();
        if attrs.compression != crate::codec::Compression::Raw {
            return Ok(None);
        }
        self.check_numeric(&attrs)?;
        let shape = attrs.block_shape(grid_pos)?;
        self.raw_payload_in(&attrs, &shape, grid_pos, bytes)
    }

    /// [`Dataset::raw_payload_at`] with the dataset's attributes and the
    /// block's shape at hand.
    fn raw_payload_in(
        &self,
        attrs: &DatasetAttributes,
        shape: &[u64],
        grid_pos: &[u64],
        bytes: &[u8],
    ) -> Result<Option<usize>> {
        if attrs.compression != crate::codec::Compression::Raw {
            return Ok(None);
        }
        let found =
            block::exact_payload(bytes, attrs, shape).map_err(self.block_error(grid_pos))?;
        Ok(found
            .filter(|&(at, nbytes)| bytes.len() - at >= nbytes)
            .map(|(at, _)| at))
    }

    /// [`Dataset::read_block_for_region`] of a block whose stored bytes
    /// (the block file, header included) are already in `bytes`.
    pub(crate) fn decode_block_for_region(
        &self,
        grid_pos: &[u64],
        bytes: &[u8],
        out: &mut [u8],
        convert_later: bool,
    ) -> Result<BlockRead> {
        let attrs = self.attributes();
        self.check_numeric(&attrs)?;
        let shape = attrs.block_shape(grid_pos)?;
        let elem = attrs.data_type.size();
        check_buffer(&shape, elem, out.len())?;
        if convert_later {
            if let Some(at) = self.raw_payload_in(&attrs, &shape, grid_pos, bytes)? {
                return Ok(BlockRead::RawAt(at));
            }
        }
        let err = self.block_error(grid_pos);
        if let Some((at, nbytes)) = block::exact_payload(bytes, &attrs, &shape).map_err(&err)? {
            if nbytes == out.len() {
                attrs.compression.decode(&bytes[at..], out).map_err(&err)?;
                if convert_later {
                    return Ok(BlockRead::BigEndian);
                }
                block::swap_to_from_be(out, elem);
                return Ok(BlockRead::Decoded);
            }
        }
        let block = block::decode(bytes, &attrs).map_err(&err)?;
        place_block(&block, &shape, elem, out).map_err(&err)?;
        Ok(BlockRead::Decoded)
    }

    fn check_numeric(&self, attrs: &DatasetAttributes) -> Result<()> {
        if !attrs.data_type.is_numeric() {
            return Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!(
                    "dataset '{}' holds {} data, which is read and written by its own block functions",
                    display(&self.path),
                    attrs.data_type
                ),
            ));
        }
        Ok(())
    }

    fn check_write(
        &self,
        attrs: &DatasetAttributes,
        grid_pos: &[u64],
        shape: &[u64],
    ) -> Result<()> {
        self.container.check_writable()?;
        attrs.check_grid_pos(grid_pos)?;
        attrs.check_rank(shape.len(), "block shape")?;
        for (d, (&s, &b)) in shape.iter().zip(&attrs.block_size).enumerate() {
            if s == 0 || s > b as u64 {
                return Err(Error::new(
                    ErrorKind::ShapeMismatch,
                    format!(
                        "block shape {shape:?} is not within 1..=blockSize {:?} in dimension {d}",
                        attrs.block_size
                    ),
                ));
            }
        }
        Ok(())
    }

    fn store_block(
        &self,
        grid_pos: &[u64],
        header: &BlockHeader,
        data: &[u8],
        attrs: &DatasetAttributes,
    ) -> Result<()> {
        let bytes = block::encode(header, data, attrs).map_err(self.block_error(grid_pos))?;
        self.store().put(&self.block_key(grid_pos), &[&bytes])
    }

    /// Write a numeric block of `shape` at `grid_pos` from `data` (native
    /// byte order, `prod(shape)` elements). Normal writers pass
    /// [`Dataset::block_shape`]; any shape within `1..=blockSize` is stored
    /// as given. The file is replaced atomically. With
    /// [`crate::Options::write_empty_blocks`] off, an all-zero block is not
    /// stored, and a stored one at `grid_pos` is deleted.
    pub fn write_block(&self, grid_pos: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        if let Some(z) = self.zarr() {
            return self.write_zarr_block(&z, grid_pos, shape, data);
        }
        match self.begin_numeric_write(grid_pos, shape, data)? {
            Some((attrs, header)) => self.store_block(grid_pos, &header, data, &attrs),
            None => self.store().delete(&self.block_key(grid_pos)).map(|_| ()),
        }
    }

    /// [`Dataset::write_block`] of a Zarr array: the chunk (or inner chunk)
    /// is `data` where `shape` covers it and the fill value elsewhere, the
    /// whole chunk is written, and in a sharded array its shard is
    /// changed atomically (see [`ZarrArray::merge_shard`]).
    fn write_zarr_block(
        &self,
        z: &ZarrArray,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let attrs = self.attributes();
        self.check_write(&attrs, grid_pos, shape)?;
        let elem = attrs.data_type.size();
        check_buffer(shape, elem, data.len())?;
        let nominal = attrs.block_shape(grid_pos)?;
        let origin: Vec<u64> = grid_pos
            .iter()
            .zip(&attrs.block_size)
            .map(|(&p, &b)| p * b as u64)
            .collect();
        let mut block = vec![0u8; nominal.iter().product::<u64>() as usize * elem];
        z.fill_buffer(&mut block);
        let extent: Vec<u64> = shape
            .iter()
            .zip(&nominal)
            .map(|(&s, &n)| s.min(n))
            .collect();
        let zeros = vec![0u64; shape.len()];
        copy_box(
            data,
            Placement {
                shape,
                offset: &zeros,
            },
            &mut block,
            Placement {
                shape: &nominal,
                offset: &zeros,
            },
            &extent,
            elem,
        );
        self.write_region_zarr(z, &origin, &nominal, &block)
    }

    /// The checks of a numeric block write and its mode-0 header; `None`
    /// when the block is all zeros and empty blocks are not stored (the
    /// caller then deletes any block stored at `grid_pos`).
    fn begin_numeric_write(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
    ) -> Result<Option<(Arc<DatasetAttributes>, BlockHeader)>> {
        let attrs = self.attributes();
        self.check_numeric(&attrs)?;
        self.check_write(&attrs, grid_pos, shape)?;
        check_buffer(shape, attrs.data_type.size(), data.len())?;
        if !self.container.options().write_empty_blocks && is_all_zero(data) {
            return Ok(None);
        }
        let header = BlockHeader {
            mode: BlockMode::Default,
            size: shape.iter().map(|&s| s as u32).collect(),
            num_elements: shape.iter().product(),
        };
        Ok(Some((attrs, header)))
    }

    /// [`Dataset::write_block`] of a block the caller holds big-endian, as
    /// region writes convert it while gathering it. The block file is built
    /// in `scratch`, so no per-block memory is allocated; a raw block is
    /// written as its header followed by `data`, with no copy.
    pub(crate) fn write_block_big_endian(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let key = self.block_key(grid_pos);
        let Some((attrs, header)) = self.begin_numeric_write(grid_pos, shape, data)? else {
            return self.store().delete(&key).map(|_| ());
        };
        if attrs.compression == crate::codec::Compression::Raw {
            scratch.clear();
            header.write(scratch);
            return self.store().put(&key, &[scratch, data]);
        }
        block::encode_big_endian(&header, data, &attrs, scratch)
            .map_err(self.block_error(grid_pos))?;
        self.store().put(&key, &[scratch])
    }

    /// The block file of a block the caller holds big-endian, built in
    /// `out` (replacing its contents); `false` when the block is all zeros
    /// and empty blocks are not stored, so the caller deletes it instead.
    pub(crate) fn encode_block_big_endian(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let Some((attrs, header)) = self.begin_numeric_write(grid_pos, shape, data)? else {
            return Ok(false);
        };
        if attrs.compression == crate::codec::Compression::Raw {
            out.clear();
            header.write(out);
            out.extend_from_slice(data);
            return Ok(true);
        }
        block::encode_big_endian(&header, data, &attrs, out).map_err(self.block_error(grid_pos))?;
        Ok(true)
    }

    /// Write a varlength (mode 1) block: a header `shape` with
    /// `data.len() / element size` elements, any number. When that number
    /// equals `prod(shape)` the block is written in mode 0, as Java does.
    pub fn write_varlength_block(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        data: &[u8],
    ) -> Result<()> {
        if let Some(z) = self.zarr() {
            return Err(crate::format::unsupported_on(
                z.format(),
                "varlength blocks",
            ));
        }
        let attrs = self.attributes();
        self.check_numeric(&attrs)?;
        self.check_write(&attrs, grid_pos, shape)?;
        let elem = attrs.data_type.size();
        if !data.len().is_multiple_of(elem) {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!(
                    "{} bytes are not a whole number of {} elements",
                    data.len(),
                    attrs.data_type
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
        self.store_block(grid_pos, &header, data, &attrs)
    }

    /// Read the strings of the `string` block at `grid_pos` (`None` when not
    /// stored) with the header's shape.
    pub fn read_string_block(&self, grid_pos: &[u64]) -> Result<Option<(Vec<u32>, Vec<String>)>> {
        self.expect_type(DataType::String)?;
        let Some(block) = self.read_block(grid_pos)? else {
            return Ok(None);
        };
        let strings = block::decode_strings(&block.data).map_err(self.block_error(grid_pos))?;
        Ok(Some((block.header.size, strings)))
    }

    /// Write the `string` block at `grid_pos` with header `shape`: each
    /// string as UTF-8 followed by NUL, always in mode 1, as Java does.
    pub fn write_string_block<S: AsRef<str>>(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        strings: &[S],
    ) -> Result<()> {
        let attrs = self.attributes();
        self.expect_type(DataType::String)?;
        self.check_write(&attrs, grid_pos, shape)?;
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
        self.store_block(grid_pos, &header, &payload, &attrs)
    }

    /// Read the bytes of the `object` block at `grid_pos` (`None` when not stored).
    pub fn read_object_block(&self, grid_pos: &[u64]) -> Result<Option<Vec<u8>>> {
        self.expect_type(DataType::Object)?;
        Ok(self.read_block(grid_pos)?.map(|b| b.data))
    }

    /// Write the `object` block at `grid_pos`: opaque bytes in a mode-2 block.
    pub fn write_object_block(&self, grid_pos: &[u64], bytes: &[u8]) -> Result<()> {
        let attrs = self.attributes();
        self.expect_type(DataType::Object)?;
        self.container.check_writable()?;
        attrs.check_grid_pos(grid_pos)?;
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
        self.store_block(grid_pos, &header, bytes, &attrs)
    }

    fn expect_type(&self, t: DataType) -> Result<()> {
        if let Some(z) = self.zarr() {
            return Err(crate::format::unsupported_on(
                z.format(),
                &format!("{t} blocks"),
            ));
        }
        let actual = self.data_type();
        if actual != t {
            return Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!("dataset '{}' holds {actual}, not {t}", display(&self.path)),
            ));
        }
        Ok(())
    }

    /// Delete the block at `grid_pos`; returns whether it was stored.
    pub fn delete_block(&self, grid_pos: &[u64]) -> Result<bool> {
        self.container.check_writable()?;
        self.attributes().check_grid_pos(grid_pos)?;
        if let Some(z) = self.zarr() {
            if z.is_sharded() {
                // The inner chunk becomes fill value, which leaves it out.
                if !self.block_exists(grid_pos)? {
                    return Ok(false);
                }
                let shape = self.block_shape(grid_pos)?;
                let mut fill = vec![0u8; shape.iter().product::<u64>() as usize * z.fill().len()];
                z.fill_buffer(&mut fill);
                self.write_zarr_block(&z, grid_pos, &shape, &fill)?;
                return Ok(true);
            }
        }
        self.store().delete(&self.block_key(grid_pos))
    }

    /// The grid positions of every stored block, in lexicographic order of
    /// their keys' numbers (dimension 0 first). Blocks outside the current
    /// grid (left by a shrinking resize) are included. Object stores answer
    /// from a flat listing of the dataset's keys (a thousand per request);
    /// in a sharded Zarr array, each stored shard's index is read for the
    /// inner chunks it holds.
    pub fn list_blocks(&self) -> Result<Vec<Vec<u64>>> {
        if let Some(z) = self.zarr() {
            // The chunks (shards) stored, then the blocks each holds.
            let mut out = Vec::new();
            for key in self.store().list_keys(&self.path)? {
                if let Some(outer) = z.outer_position(&key) {
                    out.extend(z.blocks_in(self.store(), &self.path, &outer)?);
                }
            }
            out.sort_unstable();
            return Ok(out);
        }
        let ndim = self.attributes().ndim();
        let number = |n: &str| {
            let canonical = !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n.len() == 1 || !n.starts_with('0'));
            canonical.then(|| n.parse::<u64>().ok()).flatten()
        };
        let mut out: Vec<Vec<u64>> = self
            .store()
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
}

thread_local! {
    /// The block-file buffer of this thread's single-block reads, reused
    /// from call to call.
    static FILE_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A [`FILE_BUFFER`] that grew beyond this (a huge block) is released after
/// the read rather than kept for the thread's lifetime.
const KEEP_FILE_BUFFER: usize = 64 << 20;

/// What [`Dataset::read_block_for_region`] found.
pub(crate) enum BlockRead {
    /// No block is stored; the buffer holds zeros.
    Missing,
    /// The block was decoded into the buffer (native order).
    Decoded,
    /// The block was decoded into the buffer and is still big-endian, as
    /// stored (only when the caller converts it later).
    BigEndian,
    /// A raw block stored whole: its big-endian payload starts at this
    /// offset of the file buffer; the block buffer is untouched.
    RawAt(usize),
}

/// Whether every byte of `data` is zero.
fn is_all_zero(data: &[u8]) -> bool {
    let mut words = data.chunks_exact(8);
    words.by_ref().all(|w| w == [0u8; 8]) && words.remainder().iter().all(|&b| b == 0)
}

/// Check that a buffer of `len` bytes holds exactly `prod(shape)` elements.
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
