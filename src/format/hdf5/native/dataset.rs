//! HDF5 datasets (the design's B3): what a dataset is (its type as one of
//! N5's ten data types and its byte order, shape, maximum shape, layout,
//! chunk shape, filters, fill value), hyperslab reads and writes through
//! `H5Dread` / `H5Dwrite`, resizing, creating chunked datasets as N5
//! datasets become HDF5 ones, and the chunk queries that let the caller
//! read chunk bytes itself and decode them in Rust ([`super::filters`]) or
//! write encoded chunks with `H5Dwrite_chunk`.
//!
//! Every shape, offset and grid position is in HDF5's (C) order; see the
//! module documentation of [`super`].

use std::os::raw::{c_char, c_int, c_uint};
use std::sync::Arc;

use hdf5_metno::globals::{
    H5P_DATASET_CREATE, H5T_IEEE_F32BE, H5T_IEEE_F32LE, H5T_IEEE_F64BE, H5T_IEEE_F64LE,
    H5T_NATIVE_DOUBLE, H5T_NATIVE_FLOAT, H5T_NATIVE_INT16, H5T_NATIVE_INT32, H5T_NATIVE_INT64,
    H5T_NATIVE_INT8, H5T_NATIVE_UINT16, H5T_NATIVE_UINT32, H5T_NATIVE_UINT64, H5T_NATIVE_UINT8,
    H5T_STD_I16LE, H5T_STD_I32LE, H5T_STD_I64LE, H5T_STD_I8LE, H5T_STD_U16LE, H5T_STD_U32LE,
    H5T_STD_U64LE, H5T_STD_U8LE,
};

use super::sys;
use super::sys::h5::{haddr_t, hsize_t, HADDR_UNDEF};
use super::sys::h5d::{H5D_alloc_time_t, H5D_fill_value_t, H5D_layout_t, H5D_space_status_t};
use super::sys::h5i::hid_t;
use super::sys::h5p::H5P_DEFAULT;
use super::sys::h5s::{H5S_class_t, H5S_seloper_t, H5S_UNLIMITED};
use super::sys::h5t::{H5T_class_t, H5T_order_t, H5T_sign_t};
use super::{
    absolute, attrs, check, check_id, check_tri, close, components, cstring, failed, locked,
    take_h5_string, File, FileInner, Hid, Resolved,
};
use crate::codec::Compression;
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::hdf5::filters::{ByteOrder, ChunkDecoder, ChunkEncoder, Filter};

/// The most dimensions an HDF5 dataspace has.
pub(crate) const MAX_RANK: usize = 32;

/// The largest chunk HDF5 allows (4 GiB less one byte).
const MAX_CHUNK_BYTES: u64 = u32::MAX as u64;

/// The `H5Dread` calls [`Dataset::read`] has made in this process.
static LIBRARY_READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times [`Dataset::read`] has asked libhdf5 to read elements
/// (`H5Dread`) in this process.
pub(crate) fn library_reads() -> u64 {
    LIBRARY_READS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How a dataset's data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// In chunks, each allocated when first written.
    Chunked,
    /// In one piece.
    Contiguous,
    /// In the object header.
    Compact,
    /// Mapped from other datasets.
    Virtual,
}

impl Layout {
    /// `"chunked"`, `"contiguous"`, `"compact"` or `"virtual"`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Layout::Chunked => "chunked",
            Layout::Contiguous => "contiguous",
            Layout::Compact => "compact",
            Layout::Virtual => "virtual",
        }
    }
}

/// A dataset's element type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Element {
    /// One of N5's ten numeric types.
    Numeric {
        /// The N5 data type.
        data_type: DataType,
        /// The byte order of the stored elements.
        order: ByteOrder,
        /// The stored elements are plain IEEE floats or integers using all
        /// their bits (no n-bit precision or offset), so their bytes can be
        /// used as they are.
        plain: bool,
    },
    /// A type (or dataspace) the N5 API cannot open; says which.
    Unsupported(String),
}

/// What a dataset is. Shapes are C order, as HDF5 states them.
#[derive(Clone, Debug)]
pub(crate) struct Description {
    /// `"HDF5 file '...', object '...'"`: the dataset, for messages.
    pub(crate) context: String,
    /// The element type.
    pub(crate) element: Element,
    /// The bytes of one stored element.
    pub(crate) elem_size: usize,
    /// The current dimensions (empty for scalar and null dataspaces).
    pub(crate) shape: Vec<u64>,
    /// The maximum dimensions; `None` is unlimited.
    pub(crate) max_shape: Vec<Option<u64>>,
    /// The storage layout.
    pub(crate) layout: Layout,
    /// The chunk shape of chunked datasets.
    pub(crate) chunk: Option<Vec<u64>>,
    /// The filter pipeline, in the order filters are applied when writing.
    pub(crate) filters: Vec<Filter>,
    /// One element of the fill value, native byte order (zeros when no
    /// fill value is defined; empty when the type is not numeric).
    pub(crate) fill_value: Vec<u8>,
    /// Partial edge chunks are stored without filters (the layout flag
    /// `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`).
    pub(crate) partial_edge_chunks_unfiltered: bool,
}

impl Description {
    /// The N5 compression the dataset reports: the pipeline without
    /// shuffle and fletcher32 is exactly deflate at level L →
    /// `gzip` level L with `useZlib` (HDF5's deflate is a zlib stream);
    /// anything else, no filter included, → `raw` (the data are decoded
    /// whatever the filters).
    pub(crate) fn compression(&self) -> Compression {
        let rest: Vec<&Filter> = self
            .filters
            .iter()
            .filter(|f| {
                f.id != crate::format::hdf5::filters::id::SHUFFLE
                    && f.id != crate::format::hdf5::filters::id::FLETCHER32
            })
            .collect();
        match rest.as_slice() {
            [f] if f.id == crate::format::hdf5::filters::id::DEFLATE => Compression::Gzip {
                level: f.cd_values.first().map_or(6, |&l| l.min(9) as i32),
                use_zlib: true,
            },
            _ => Compression::Raw,
        }
    }

    /// The chunk decoder, when the dataset is chunked with plain elements
    /// and only filters [`ChunkDecoder`] runs: then chunks can be read
    /// without `H5Dread`.
    pub(crate) fn chunk_decoder(&self) -> Option<ChunkDecoder> {
        let (
            Element::Numeric {
                order, plain: true, ..
            },
            Layout::Chunked,
            Some(chunk),
        ) = (&self.element, self.layout, &self.chunk)
        else {
            return None;
        };
        ChunkDecoder::new(
            &self.filters,
            self.elem_size,
            *order,
            chunk,
            &self.shape,
            self.partial_edge_chunks_unfiltered,
        )
        .map(|c| c.with_context(&self.context))
    }

    /// The chunk encoder, when the dataset is chunked with plain elements
    /// and only deflate, shuffle and fletcher32 filters: then whole chunks
    /// can be encoded in Rust and written with `H5Dwrite_chunk`.
    pub(crate) fn chunk_encoder(&self) -> Option<ChunkEncoder> {
        let (
            Element::Numeric {
                order, plain: true, ..
            },
            Layout::Chunked,
            Some(chunk),
        ) = (&self.element, self.layout, &self.chunk)
        else {
            return None;
        };
        ChunkEncoder::new(
            &self.filters,
            self.elem_size,
            *order,
            chunk,
            &self.shape,
            self.partial_edge_chunks_unfiltered,
        )
        .map(|c| c.with_context(&self.context))
    }

    /// The number of chunks along each dimension (C order) of a chunked
    /// dataset.
    pub(crate) fn grid(&self) -> Option<Vec<u64>> {
        let chunk = self.chunk.as_ref()?;
        Some(
            self.shape
                .iter()
                .zip(chunk)
                .map(|(&d, &c)| d.div_ceil(c.max(1)))
                .collect(),
        )
    }
}

/// Where a chunk's bytes are in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkLocation {
    /// The absolute offset in the file (user block included).
    pub(crate) offset: u64,
    /// The stored (filtered) size in bytes.
    pub(crate) size: u64,
    /// Bit i set: filter i of the pipeline was not applied to this chunk.
    pub(crate) filter_mask: u32,
}

/// libhdf5's memory type for elements of `data_type` in native order.
fn native_type(data_type: DataType) -> hid_t {
    match data_type {
        DataType::U8 => *H5T_NATIVE_UINT8,
        DataType::U16 => *H5T_NATIVE_UINT16,
        DataType::U32 => *H5T_NATIVE_UINT32,
        DataType::U64 => *H5T_NATIVE_UINT64,
        DataType::I8 => *H5T_NATIVE_INT8,
        DataType::I16 => *H5T_NATIVE_INT16,
        DataType::I32 => *H5T_NATIVE_INT32,
        DataType::I64 => *H5T_NATIVE_INT64,
        DataType::F32 => *H5T_NATIVE_FLOAT,
        // Only numeric types reach libhdf5: HDF5 datasets of other types
        // are refused before (creation) or never get this type (reading).
        _ => *H5T_NATIVE_DOUBLE,
    }
}

/// The little-endian file type of `data_type` (numeric types only).
fn little_endian_type(data_type: DataType) -> hid_t {
    match data_type {
        DataType::U8 => *H5T_STD_U8LE,
        DataType::U16 => *H5T_STD_U16LE,
        DataType::U32 => *H5T_STD_U32LE,
        DataType::U64 => *H5T_STD_U64LE,
        DataType::I8 => *H5T_STD_I8LE,
        DataType::I16 => *H5T_STD_I16LE,
        DataType::I32 => *H5T_STD_I32LE,
        DataType::I64 => *H5T_STD_I64LE,
        DataType::F32 => *H5T_IEEE_F32LE,
        // Numeric types only, as for `native_type`.
        _ => *H5T_IEEE_F64LE,
    }
}

/// The element type of the datatype `t`. Call under the lock.
fn element_of(t: hid_t, context: &str) -> Result<(Element, usize)> {
    // SAFETY (every block below): `t` is an open datatype; under the
    // caller's lock.
    let class = unsafe { sys::h5t::H5Tget_class(t) };
    let size = unsafe { sys::h5t::H5Tget_size(t) };
    let order = match unsafe { sys::h5t::H5Tget_order(t) } {
        H5T_order_t::H5T_ORDER_BE => ByteOrder::Big,
        _ => ByteOrder::Little,
    };
    let unsupported = |what: String| Ok((Element::Unsupported(what), size));
    match class {
        H5T_class_t::H5T_INTEGER => {
            let signed = unsafe { sys::h5t::H5Tget_sign(t) } != H5T_sign_t::H5T_SGN_NONE;
            let data_type = match (size, signed) {
                (1, false) => DataType::U8,
                (2, false) => DataType::U16,
                (4, false) => DataType::U32,
                (8, false) => DataType::U64,
                (1, true) => DataType::I8,
                (2, true) => DataType::I16,
                (4, true) => DataType::I32,
                (8, true) => DataType::I64,
                _ => return unsupported(format!("integers of {size} bytes")),
            };
            let precision = unsafe { sys::h5t::H5Tget_precision(t) };
            let offset = unsafe { sys::h5t::H5Tget_offset(t) };
            let plain = precision == size * 8 && offset == 0;
            Ok((
                Element::Numeric {
                    data_type,
                    order,
                    plain,
                },
                size,
            ))
        }
        H5T_class_t::H5T_FLOAT => {
            let data_type = match size {
                4 => DataType::F32,
                8 => DataType::F64,
                2 => return unsupported("16-bit (half) floats".into()),
                _ => return unsupported(format!("floats of {size} bytes")),
            };
            let standard = [
                *H5T_IEEE_F32LE,
                *H5T_IEEE_F32BE,
                *H5T_IEEE_F64LE,
                *H5T_IEEE_F64BE,
            ];
            let mut plain = false;
            for s in standard {
                plain |= check_tri(
                    unsafe { sys::h5t::H5Tequal(t, s) },
                    ErrorKind::InvalidMetadata,
                    context,
                    "comparing the datatype",
                )?;
            }
            Ok((
                Element::Numeric {
                    data_type,
                    order,
                    plain,
                },
                size,
            ))
        }
        H5T_class_t::H5T_STRING => {
            let variable = unsafe { sys::h5t::H5Tis_variable_str(t) } > 0;
            let cset = match unsafe { sys::h5t::H5Tget_cset(t) } {
                sys::h5t::H5T_cset_t::H5T_CSET_UTF8 => "UTF-8",
                _ => "ASCII",
            };
            if variable {
                unsupported(format!("variable-length {cset} strings"))
            } else {
                unsupported(format!("fixed-length {cset} strings of {size} bytes"))
            }
        }
        H5T_class_t::H5T_ENUM => {
            let mut names = Vec::new();
            let n = unsafe { sys::h5t::H5Tget_nmembers(t) };
            for i in 0..n.clamp(0, 3) as c_uint {
                // SAFETY: member `i` exists; the name is freed there.
                names.push(unsafe { take_h5_string(sys::h5t::H5Tget_member_name(t, i)) });
            }
            if n == 2 && names == [Some(b"FALSE".to_vec()), Some(b"TRUE".to_vec())] {
                unsupported("an enum of FALSE and TRUE (h5py's bool)".into())
            } else {
                unsupported("an enum type".into())
            }
        }
        H5T_class_t::H5T_COMPOUND => unsupported("a compound type".into()),
        H5T_class_t::H5T_ARRAY => unsupported("an array type".into()),
        H5T_class_t::H5T_REFERENCE => unsupported("references".into()),
        H5T_class_t::H5T_OPAQUE => unsupported("opaque data".into()),
        H5T_class_t::H5T_VLEN => unsupported("variable-length sequences".into()),
        H5T_class_t::H5T_BITFIELD => unsupported("bitfields".into()),
        H5T_class_t::H5T_TIME => unsupported("a time type".into()),
        #[allow(unreachable_patterns)]
        _ => unsupported("a type of another class".into()),
    }
}

/// The description of the open dataset `id`. Call under the lock.
fn describe(id: hid_t, context: &str) -> Result<Description> {
    let md = ErrorKind::InvalidMetadata;
    // SAFETY (every block below): `id` is an open dataset; the ids made
    // here are closed by their Hid; buffers have the lengths passed; under
    // the caller's lock.
    let ftype = check_id(
        unsafe { sys::h5d::H5Dget_type(id) },
        close::datatype,
        md,
        context,
        "reading the datatype",
    )?;
    let (mut element, elem_size) = element_of(ftype.id(), context)?;
    let space = check_id(
        unsafe { sys::h5d::H5Dget_space(id) },
        close::space,
        md,
        context,
        "reading the dataspace",
    )?;
    let (shape, max_shape) = match unsafe { sys::h5s::H5Sget_simple_extent_type(space.id()) } {
        H5S_class_t::H5S_SIMPLE => {
            let rank = unsafe { sys::h5s::H5Sget_simple_extent_ndims(space.id()) };
            if !(0..=MAX_RANK as c_int).contains(&rank) {
                return Err(failed(md, context, "reading the rank"));
            }
            let mut dims = vec![0 as hsize_t; rank as usize];
            let mut max = vec![0 as hsize_t; rank as usize];
            let ret = unsafe {
                sys::h5s::H5Sget_simple_extent_dims(space.id(), dims.as_mut_ptr(), max.as_mut_ptr())
            };
            if ret < 0 {
                return Err(failed(md, context, "reading the dimensions"));
            }
            let max = max
                .into_iter()
                .map(|m| (m != H5S_UNLIMITED).then_some(m))
                .collect();
            (dims, max)
        }
        H5S_class_t::H5S_SCALAR => {
            element = Element::Unsupported(format!(
                "a scalar dataspace ({})",
                describe_element(&element)
            ));
            (Vec::new(), Vec::new())
        }
        _ => {
            element = Element::Unsupported("a null dataspace".into());
            (Vec::new(), Vec::new())
        }
    };
    let total = shape
        .iter()
        .try_fold(elem_size.max(1) as u64, |a, &d| a.checked_mul(d));
    if total.is_none() {
        return Err(Error::invalid_metadata(format!(
            "{context}: dimensions {shape:?} of {elem_size}-byte elements exceed 2^64 bytes"
        )));
    }
    let dcpl = check_id(
        unsafe { sys::h5d::H5Dget_create_plist(id) },
        close::plist,
        md,
        context,
        "reading the creation properties",
    )?;
    let layout = match unsafe { sys::h5p::H5Pget_layout(dcpl.id()) } {
        H5D_layout_t::H5D_CHUNKED => Layout::Chunked,
        H5D_layout_t::H5D_CONTIGUOUS => Layout::Contiguous,
        H5D_layout_t::H5D_COMPACT => Layout::Compact,
        H5D_layout_t::H5D_VIRTUAL => Layout::Virtual,
        _ => return Err(failed(md, context, "reading the layout")),
    };
    let mut chunk = None;
    let mut partial_edge_chunks_unfiltered = false;
    if layout == Layout::Chunked {
        let mut dims = vec![0 as hsize_t; MAX_RANK + 1];
        let n =
            unsafe { sys::h5p::H5Pget_chunk(dcpl.id(), dims.len() as c_int, dims.as_mut_ptr()) };
        if n < 0 || n as usize != shape.len() {
            return Err(failed(md, context, "reading the chunk shape"));
        }
        dims.truncate(n as usize);
        let bytes = dims
            .iter()
            .try_fold(elem_size as u64, |a, &c| a.checked_mul(c))
            .filter(|&b| b <= MAX_CHUNK_BYTES);
        if dims.contains(&0) || bytes.is_none() {
            return Err(Error::invalid_metadata(format!(
                "{context}: chunks of {dims:?} elements of {elem_size} bytes: not a valid chunk \
                 (HDF5 chunks are 1 element to 4 GiB)"
            )));
        }
        chunk = Some(dims);
        let mut opts: c_uint = 0;
        if unsafe { sys::h5p::H5Pget_chunk_opts(dcpl.id(), &mut opts) } >= 0 {
            partial_edge_chunks_unfiltered =
                opts & sys::h5d::H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS != 0;
        }
    }
    let nfilters = unsafe { sys::h5p::H5Pget_nfilters(dcpl.id()) };
    if nfilters < 0 {
        return Err(failed(md, context, "reading the filters"));
    }
    let mut filters = Vec::with_capacity(nfilters as usize);
    for i in 0..nfilters as c_uint {
        let mut flags: c_uint = 0;
        let mut cd = vec![0 as c_uint; 64];
        let mut n_cd: usize = cd.len();
        let mut name = vec![0 as c_char; 256];
        let mut config: c_uint = 0;
        let fid = unsafe {
            sys::h5p::H5Pget_filter2(
                dcpl.id(),
                i,
                &mut flags,
                &mut n_cd,
                cd.as_mut_ptr(),
                name.len(),
                name.as_mut_ptr(),
                &mut config,
            )
        };
        if fid < 0 {
            return Err(failed(md, context, &format!("reading filter {i}")));
        }
        if n_cd > cd.len() {
            cd = vec![0; n_cd];
            let again = unsafe {
                sys::h5p::H5Pget_filter2(
                    dcpl.id(),
                    i,
                    &mut flags,
                    &mut n_cd,
                    cd.as_mut_ptr(),
                    name.len(),
                    name.as_mut_ptr(),
                    &mut config,
                )
            };
            if again < 0 {
                return Err(failed(md, context, &format!("reading filter {i}")));
            }
        }
        cd.truncate(n_cd.min(cd.len()));
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        let name: Vec<u8> = name[..end].iter().map(|&c| c as u8).collect();
        filters.push(Filter {
            id: fid,
            name: String::from_utf8_lossy(&name).into_owned(),
            cd_values: cd,
            flags,
        });
    }
    // Nothing for types that are not numeric: their size is whatever the
    // file states (up to 4 GiB), and nothing reads their fill value.
    let mut fill_value = Vec::new();
    if let Element::Numeric { data_type, .. } = &element {
        fill_value = vec![0u8; data_type.size()];
        let mut status = H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
        let ret = unsafe { sys::h5p::H5Pfill_value_defined(dcpl.id(), &mut status) };
        check(ret, md, context, "reading the fill value")?;
        if status == H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED {
            let ret = unsafe {
                sys::h5p::H5Pget_fill_value(
                    dcpl.id(),
                    native_type(data_type.clone()),
                    fill_value.as_mut_ptr().cast(),
                )
            };
            check(ret, md, context, "reading the fill value")?;
        }
    }
    Ok(Description {
        context: context.to_string(),
        element,
        elem_size,
        shape,
        max_shape,
        layout,
        chunk,
        filters,
        fill_value,
        partial_edge_chunks_unfiltered,
    })
}

/// The element type in words, for messages.
fn describe_element(e: &Element) -> String {
    match e {
        Element::Numeric { data_type, .. } => data_type.name().to_string(),
        Element::Unsupported(what) => what.clone(),
    }
}

/// An open HDF5 dataset with its description. It keeps its file open.
pub(crate) struct Dataset {
    file: Arc<FileInner>,
    id: Hid,
    path: String,
    description: Description,
}

impl Dataset {
    /// The description read when the dataset was opened (the shape kept up
    /// to date by [`set_extent`](Self::set_extent)).
    pub(crate) fn description(&self) -> &Description {
        &self.description
    }

    /// The dataset's absolute path in the file.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// `"HDF5 file '...', object '<path>'"`, for messages.
    pub(crate) fn context(&self) -> String {
        self.file.context(&self.path)
    }

    /// The N5 data type; [`ErrorKind::Unsupported`] naming the HDF5 type
    /// (strings, compound, enums, arrays, references, opaque, half floats,
    /// scalar and null dataspaces).
    pub(crate) fn data_type(&self) -> Result<DataType> {
        match &self.description.element {
            Element::Numeric { data_type, .. } => Ok(data_type.clone()),
            Element::Unsupported(what) => Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{}: the dataset holds {what}; N5 datasets hold the ten numeric types",
                    self.context()
                ),
            )),
        }
    }

    /// The bytes of one element in memory (native order).
    fn elem_bytes(&self) -> Result<usize> {
        Ok(self.data_type()?.size())
    }

    /// The file and memory dataspaces of the box at `offset` of `shape`,
    /// checked against the dataset; `None` when the box is empty.
    fn selection(
        &self,
        offset: &[u64],
        shape: &[u64],
        buf_len: usize,
    ) -> Result<Option<(Hid, Hid)>> {
        let context = self.context();
        let dims = &self.description.shape;
        if offset.len() != dims.len() || shape.len() != dims.len() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "{context}: the dataset has {} dimensions; the box has {} and {}",
                    dims.len(),
                    offset.len(),
                    shape.len()
                ),
            ));
        }
        for i in 0..dims.len() {
            if offset[i]
                .checked_add(shape[i])
                .is_none_or(|end| end > dims[i])
            {
                return Err(Error::new(
                    ErrorKind::OutOfBounds,
                    format!(
                        "{context}: the box at {offset:?} of shape {shape:?} (C order) reaches beyond \
                         the dimensions {dims:?}"
                    ),
                ));
            }
        }
        let elem = self.elem_bytes()? as u64;
        let bytes = shape.iter().try_fold(elem, |a, &s| a.checked_mul(s));
        if bytes != Some(buf_len as u64) {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!(
                    "{context}: a box of shape {shape:?} needs {} bytes, the buffer has {buf_len}",
                    bytes.map_or("more than 2^64".to_string(), |b| b.to_string())
                ),
            ));
        }
        if shape.contains(&0) {
            return Ok(None);
        }
        locked(|| {
            // SAFETY: the dataset is open; `offset` and `shape` have the
            // dataset's rank; the spaces are closed by their Hids.
            let fspace = check_id(
                unsafe { sys::h5d::H5Dget_space(self.id.id()) },
                close::space,
                ErrorKind::InvalidMetadata,
                &context,
                "reading the dataspace",
            )?;
            let ret = unsafe {
                sys::h5s::H5Sselect_hyperslab(
                    fspace.id(),
                    H5S_seloper_t::H5S_SELECT_SET,
                    offset.as_ptr(),
                    std::ptr::null(),
                    shape.as_ptr(),
                    std::ptr::null(),
                )
            };
            check(
                ret,
                ErrorKind::InvalidArgument,
                &context,
                "selecting the box",
            )?;
            let mspace = check_id(
                unsafe {
                    sys::h5s::H5Screate_simple(
                        shape.len() as c_int,
                        shape.as_ptr(),
                        std::ptr::null(),
                    )
                },
                close::space,
                ErrorKind::Internal,
                &context,
                "making the memory dataspace",
            )?;
            Ok(Some((fspace, mspace)))
        })
    }

    /// Reads the box at `offset` of `shape` (C order) through `H5Dread`
    /// into `out`, elements in native byte order, C order (the same bytes
    /// as N5's order with the vectors reversed). `out` has exactly the
    /// box's bytes.
    pub(crate) fn read(&self, offset: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        let data_type = self.data_type()?;
        let Some((fspace, mspace)) = self.selection(offset, shape, out.len())? else {
            return Ok(());
        };
        let context = self.context();
        LIBRARY_READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ret = locked(|| {
            // SAFETY: the spaces select exactly `out.len()` bytes of
            // elements of the memory type; under the lock.
            self.file.streaming(|| unsafe {
                sys::h5d::H5Dread(
                    self.id.id(),
                    native_type(data_type),
                    mspace.id(),
                    fspace.id(),
                    H5P_DEFAULT,
                    out.as_mut_ptr().cast(),
                )
            })
        });
        let what = format!("reading the box at {offset:?} of shape {shape:?}");
        if ret < 0 {
            let error = locked(|| super::failed(ErrorKind::InvalidMetadata, &context, &what));
            return Err(self.missing_filter().unwrap_or(error));
        }
        Ok(())
    }

    /// [`ErrorKind::Unsupported`] naming the first filter of the pipeline
    /// libhdf5 has no implementation of (a plugin it cannot find), if any.
    fn missing_filter(&self) -> Option<Error> {
        self.description.filters.iter().find_map(|f| {
            // SAFETY: asks libhdf5 whether a filter id is available.
            let avail = locked(|| unsafe { sys::h5z::H5Zfilter_avail(f.id) });
            (avail <= 0).then(|| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{}: libhdf5 has no filter {} ({}) to decode the data: put its plugin in a \
                         directory named by HDF5_PLUGIN_PATH",
                        self.context(),
                        f.id,
                        if f.name.is_empty() { "unnamed" } else { &f.name }
                    ),
                )
            })
        })
    }

    /// Writes `data` (elements in native byte order, C order) to the box at
    /// `offset` of `shape` through `H5Dwrite`, then flushes the file.
    pub(crate) fn write(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        self.write_box(offset, shape, data)?;
        self.file.flush()
    }

    /// Writes libhdf5's buffered metadata and data of the dataset's file to
    /// the file.
    pub(crate) fn flush(&self) -> Result<()> {
        self.file.flush()
    }

    /// [`write`](Self::write) without the flush: the caller flushes once
    /// after a series of writes.
    pub(crate) fn write_box(&self, offset: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        self.file.check_writable(&self.path)?;
        let data_type = self.data_type()?;
        let Some((fspace, mspace)) = self.selection(offset, shape, data.len())? else {
            return Ok(());
        };
        let context = self.context();
        // SAFETY: as in `read`; libhdf5 only reads `data`.
        let ret = locked(|| unsafe {
            sys::h5d::H5Dwrite(
                self.id.id(),
                native_type(data_type),
                mspace.id(),
                fspace.id(),
                H5P_DEFAULT,
                data.as_ptr().cast(),
            )
        });
        check(
            ret,
            ErrorKind::Io,
            &context,
            &format!("writing the box at {offset:?} of shape {shape:?}"),
        )
    }

    /// Changes the dimensions (C order) with `H5Dset_extent`; shrinking
    /// discards the data outside. Beyond the maximum dimensions, and for
    /// datasets that are not chunked, [`ErrorKind::Unsupported`]. Flushes
    /// the file.
    pub(crate) fn set_extent(&mut self, shape: &[u64]) -> Result<()> {
        self.file.check_writable(&self.path)?;
        let context = self.context();
        let d = &self.description;
        if shape.len() != d.shape.len() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "{context}: the dataset has {} dimensions, not {}",
                    d.shape.len(),
                    shape.len()
                ),
            ));
        }
        let beyond = shape
            .iter()
            .zip(&d.max_shape)
            .any(|(&s, m)| m.is_some_and(|m| s > m));
        if beyond || (d.layout != Layout::Chunked && shape != d.shape.as_slice()) {
            let max: Vec<String> = d
                .max_shape
                .iter()
                .map(|m| m.map_or("unlimited".to_string(), |m| m.to_string()))
                .collect();
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{context}: the dimensions {shape:?} (C order) are beyond the dataset's maximum \
                     dimensions [{}]{}",
                    max.join(", "),
                    if d.layout == Layout::Chunked {
                        ""
                    } else {
                        " (only chunked datasets change their dimensions)"
                    }
                ),
            ));
        }
        // SAFETY: `shape` has the dataset's rank; under the lock.
        let ret = locked(|| unsafe { sys::h5d::H5Dset_extent(self.id.id(), shape.as_ptr()) });
        check(ret, ErrorKind::Io, &context, "changing the dimensions")?;
        self.description.shape = shape.to_vec();
        self.file.flush()
    }

    /// The element offset (C order) of the chunk at `grid_pos`, checked.
    fn chunk_offset(&self, grid_pos: &[u64]) -> Result<Vec<u64>> {
        let context = self.context();
        let d = &self.description;
        let Some(chunk) = &d.chunk else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{context}: the dataset is {}, not chunked", d.layout.name()),
            ));
        };
        if grid_pos.len() != chunk.len() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!(
                    "{context}: the dataset has {} dimensions, the grid position {}",
                    chunk.len(),
                    grid_pos.len()
                ),
            ));
        }
        let grid = d.grid().unwrap_or_default();
        if grid_pos.iter().zip(&grid).any(|(p, g)| p >= g) {
            return Err(Error::new(
                ErrorKind::OutOfBounds,
                format!("{context}: chunk {grid_pos:?} is outside the chunk grid {grid:?}"),
            ));
        }
        Ok(grid_pos.iter().zip(chunk).map(|(p, c)| p * c).collect())
    }

    /// libhdf5's address (relative to the base address before 1.14.4),
    /// size and filter mask of the chunk at element offset `offset`.
    fn raw_chunk_info(&self, offset: &[u64]) -> Result<(haddr_t, u64, u32)> {
        let mut mask: c_uint = 0;
        let mut addr: haddr_t = HADDR_UNDEF;
        let mut size: hsize_t = 0;
        // SAFETY: `offset` has the dataset's rank; the outputs are plain
        // integers; under the lock.
        let ret = locked(|| unsafe {
            sys::h5d::H5Dget_chunk_info_by_coord(
                self.id.id(),
                offset.as_ptr(),
                &mut mask,
                &mut addr,
                &mut size,
            )
        });
        check(
            ret,
            ErrorKind::InvalidMetadata,
            &self.context(),
            &format!("looking up the chunk at {offset:?}"),
        )?;
        Ok((addr, size, mask))
    }

    /// An absolute file offset from an address libhdf5 reported: libhdf5
    /// before 1.14.4 leaves out the user block.
    fn absolute_address(&self, addr: haddr_t) -> Option<u64> {
        if cfg!(n5_hdf5_1_14_4) {
            Some(addr)
        } else {
            addr.checked_add(self.file.userblock)
        }
    }

    /// The bytes of the file the dataset's data take (its allocated chunks
    /// as stored, filters applied; a contiguous dataset's storage once
    /// allocated): libhdf5's `H5Dget_storage_size`.
    pub(crate) fn storage_size(&self) -> u64 {
        // SAFETY: the dataset is open; the call only reads libhdf5's
        // metadata of it; under the lock.
        locked(|| unsafe { sys::h5d::H5Dget_storage_size(self.id.id()) })
    }

    /// Whether the chunk at `grid_pos` (C order) is allocated.
    pub(crate) fn chunk_allocated(&self, grid_pos: &[u64]) -> Result<bool> {
        let offset = self.chunk_offset(grid_pos)?;
        Ok(self.raw_chunk_info(&offset)?.0 != HADDR_UNDEF)
    }

    /// Where the chunk at `grid_pos` (C order) is stored: absolute file
    /// offset, stored size and filter mask; `None` when it is not
    /// allocated. A location outside the file is
    /// [`ErrorKind::InvalidMetadata`].
    pub(crate) fn chunk_location(&self, grid_pos: &[u64]) -> Result<Option<ChunkLocation>> {
        let offset = self.chunk_offset(grid_pos)?;
        let (addr, size, filter_mask) = self.raw_chunk_info(&offset)?;
        if addr == HADDR_UNDEF {
            return Ok(None);
        }
        let location = ChunkLocation {
            offset: self.absolute_address(addr).unwrap_or(u64::MAX),
            size,
            filter_mask,
        };
        self.check_location(grid_pos, &location)?;
        Ok(Some(location))
    }

    /// [`ErrorKind::InvalidMetadata`] when `location` is not inside the
    /// file.
    fn check_location(&self, grid_pos: &[u64], location: &ChunkLocation) -> Result<()> {
        let end = location.offset.checked_add(location.size);
        let (inside, file_size) = match end {
            Some(end) => self.file.reaches(end)?,
            None => (false, self.file.size()?),
        };
        if !inside {
            return Err(Error::invalid_metadata(format!(
                "{}: chunk {grid_pos:?} is said to be {} bytes at offset {}, outside the file of {} \
                 bytes",
                self.context(),
                location.size,
                location.offset,
                file_size
            )));
        }
        Ok(())
    }

    /// The stored bytes of the chunk at `grid_pos` at `location` (from
    /// [`chunk_location`](Self::chunk_location)), read with a positional
    /// read, without libhdf5 and without its lock, after checking again
    /// that they are inside the file.
    pub(crate) fn read_stored_chunk(
        &self,
        grid_pos: &[u64],
        location: &ChunkLocation,
    ) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_stored_chunk_into(grid_pos, location, &mut buf, false)?;
        Ok(buf)
    }

    /// [`read_stored_chunk`](Self::read_stored_chunk) into `buf`
    /// (replacing what it held, never zeroing it first); with
    /// `memory_only` only when all its bytes are in the page cache, else
    /// `false` (`buf` untouched). A file cut short since the location was found
    /// is [`ErrorKind::InvalidMetadata`].
    pub(crate) fn read_stored_chunk_into(
        &self,
        grid_pos: &[u64],
        location: &ChunkLocation,
        buf: &mut Vec<u8>,
        memory_only: bool,
    ) -> Result<bool> {
        self.check_location(grid_pos, location)?;
        let len = usize::try_from(location.size).map_err(|_| {
            Error::invalid_metadata(format!(
                "{}: chunk {grid_pos:?} is too large",
                self.context()
            ))
        })?;
        let reader = &self.file.reader;
        if memory_only
            && crate::os::in_page_cache(reader, location.offset, location.size) != Some(true)
        {
            return Ok(false);
        }
        buf.clear();
        let got = crate::os::read_at_into(reader, location.offset, len, buf)
            .map_err(|e| Error::io(format!("{} chunk {grid_pos:?}", self.context()), e))?;
        if got != len {
            return Err(Error::invalid_metadata(format!(
                "{}: chunk {grid_pos:?} is said to be {len} bytes at offset {}, but the file ends \
                 after {got} of them",
                self.context(),
                location.offset
            )));
        }
        Ok(true)
    }

    /// The grid positions (C order, sorted) of the allocated chunks. Asks
    /// libhdf5 by index (each query walks the chunk index: quadratic in
    /// their number) or chunk by chunk over the grid, whichever costs less.
    pub(crate) fn allocated_chunks(&self) -> Result<Vec<Vec<u64>>> {
        let context = self.context();
        let d = &self.description;
        let (Some(chunk), Some(grid)) = (&d.chunk, d.grid()) else {
            return Ok(Vec::new());
        };
        let mut count: hsize_t = 0;
        // libhdf5 1.10 wants the dataset's own dataspace here (H5S_ALL is
        // refused).
        let space = locked(|| {
            // SAFETY: the dataset is open; the space is closed by its Hid.
            let id = unsafe { sys::h5d::H5Dget_space(self.id.id()) };
            check_id(
                id,
                close::space,
                ErrorKind::InvalidMetadata,
                &context,
                "reading the dataspace",
            )
        })?;
        // SAFETY: the dataset and its dataspace are open; under the lock.
        let ret =
            locked(|| unsafe { sys::h5d::H5Dget_num_chunks(self.id.id(), space.id(), &mut count) });
        check(
            ret,
            ErrorKind::InvalidMetadata,
            &context,
            "counting the chunks",
        )?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let cells = grid
            .iter()
            .try_fold(1u64, |a, &g| a.checked_mul(g))
            .unwrap_or(u64::MAX);
        let by_index = count.saturating_mul(count) / 2;
        let by_coord = cells.saturating_mul(8);
        let mut out = Vec::new();
        if by_index <= by_coord {
            let rank = chunk.len();
            for index in 0..count {
                let mut offset = vec![0 as hsize_t; rank];
                let mut mask: c_uint = 0;
                let mut addr: haddr_t = HADDR_UNDEF;
                let mut size: hsize_t = 0;
                // SAFETY: `offset` has the dataset's rank; under the lock.
                let ret = locked(|| unsafe {
                    sys::h5d::H5Dget_chunk_info(
                        self.id.id(),
                        space.id(),
                        index,
                        offset.as_mut_ptr(),
                        &mut mask,
                        &mut addr,
                        &mut size,
                    )
                });
                check(
                    ret,
                    ErrorKind::InvalidMetadata,
                    &context,
                    &format!("reading chunk {index} of {count}"),
                )?;
                if addr == HADDR_UNDEF {
                    continue;
                }
                let pos: Vec<u64> = offset.iter().zip(chunk).map(|(o, c)| o / c).collect();
                let aligned = offset.iter().zip(chunk).all(|(o, c)| o % c == 0);
                if !aligned || pos.iter().zip(&grid).any(|(p, g)| p >= g) {
                    return Err(Error::invalid_metadata(format!(
                        "{context}: the chunk index lists a chunk at {offset:?}, which is not a \
                         chunk of the grid {grid:?} of {chunk:?} chunks"
                    )));
                }
                out.push(pos);
            }
            out.sort_unstable();
            out.dedup();
        } else {
            let mut pos = vec![0u64; grid.len()];
            'cells: loop {
                let offset: Vec<u64> = pos.iter().zip(chunk).map(|(p, c)| p * c).collect();
                if self.raw_chunk_info(&offset)?.0 != HADDR_UNDEF {
                    out.push(pos.clone());
                }
                for i in (0..pos.len()).rev() {
                    pos[i] += 1;
                    if pos[i] < grid[i] {
                        continue 'cells;
                    }
                    pos[i] = 0;
                }
                break;
            }
        }
        Ok(out)
    }

    /// Whether the dataset's storage is allocated (for contiguous and
    /// compact datasets; a chunked dataset answers whether any chunk is).
    pub(crate) fn storage_allocated(&self) -> Result<bool> {
        let mut status = H5D_space_status_t::H5D_SPACE_STATUS_NOT_ALLOCATED;
        // SAFETY: the dataset is open; under the lock.
        let ret = locked(|| unsafe { sys::h5d::H5Dget_space_status(self.id.id(), &mut status) });
        check(
            ret,
            ErrorKind::InvalidMetadata,
            &self.context(),
            "reading the allocation status",
        )?;
        Ok(status != H5D_space_status_t::H5D_SPACE_STATUS_NOT_ALLOCATED)
    }

    /// Writes encoded chunks (from [`Description::chunk_encoder`], all
    /// filters applied) with `H5Dwrite_chunk`: each pair is a grid position
    /// (C order) and the stored bytes. Flushes the file once at the end.
    /// Only the tests write this way: region writes go through `H5Dwrite`.
    #[cfg(test)]
    pub(crate) fn write_encoded_chunks(&self, chunks: &[(Vec<u64>, Vec<u8>)]) -> Result<()> {
        self.file.check_writable(&self.path)?;
        let context = self.context();
        for (pos, bytes) in chunks {
            let offset = self.chunk_offset(pos)?;
            // SAFETY: `offset` has the dataset's rank and `bytes` is the
            // stored chunk; libhdf5 only reads it; under the lock.
            let ret = locked(|| unsafe {
                sys::h5d::H5Dwrite_chunk(
                    self.id.id(),
                    H5P_DEFAULT,
                    0,
                    offset.as_ptr(),
                    bytes.len(),
                    bytes.as_ptr().cast(),
                )
            });
            check(
                ret,
                ErrorKind::Io,
                &context,
                &format!("writing chunk {pos:?}"),
            )?;
        }
        self.file.flush()
    }
}

/// What [`File::create_dataset`] makes. Shapes are C order.
#[derive(Clone, Debug)]
pub(crate) struct NewDataset<'a> {
    /// The dimensions (also the maximum dimensions).
    pub(crate) shape: &'a [u64],
    /// The wanted chunk shape, clamped to [1, dimension].
    pub(crate) chunk: &'a [u64],
    /// One of the ten numeric types.
    pub(crate) data_type: DataType,
    /// Raw, or gzip (shuffle for types wider than a byte, then deflate).
    pub(crate) compression: &'a Compression,
}

impl File {
    /// Opens the dataset at `path`: nothing there, or a group, is
    /// [`ErrorKind::NotFound`]. Datasets of any type open; see
    /// [`Dataset::data_type`].
    pub(crate) fn open_dataset(&self, path: &str) -> Result<Dataset> {
        let here = absolute(&components(path)?);
        let context = self.inner().context(&here);
        match self.inner().resolve(path)? {
            Resolved::Dataset(id) => {
                let description = locked(|| describe(id.id(), &context))?;
                Ok(Dataset {
                    file: self.inner().clone(),
                    id,
                    path: here,
                    description,
                })
            }
            Resolved::Group(_) => Err(Error::new(
                ErrorKind::NotFound,
                format!("{context}: a group, not a dataset"),
            )),
            _ => Err(Error::new(
                ErrorKind::NotFound,
                format!("{context}: no dataset there"),
            )),
        }
    }

    /// Creates a chunked dataset at `path`, with the groups missing on the
    /// way: dimensions and maximum dimensions `shape`, chunks `chunk`
    /// clamped to [1, dimension] (a dimension of 0 is made unlimited, so
    /// its chunk of 1 is allowed), a little-endian type, fill value 0,
    /// chunks allocated when first written; gzip adds shuffle (types wider
    /// than one byte) and deflate at its level (−1 → 6). Other compressions
    /// and non-numeric types are [`ErrorKind::Unsupported`]. A dataset,
    /// another object or a group with members at `path` (or a non-group on
    /// the way) is [`ErrorKind::AlreadyExists`]; an empty group there
    /// becomes the dataset and keeps its attributes. Flushes the file.
    pub(crate) fn create_dataset(&self, path: &str, new: &NewDataset<'_>) -> Result<Dataset> {
        let comps = components(path)?;
        let here = absolute(&comps);
        let context = self.inner().context(&here);
        let rank = new.shape.len();
        if rank == 0 || rank > MAX_RANK || new.chunk.len() != rank {
            return Err(Error::invalid_argument(format!(
                "{context}: {rank} dimensions and a chunk shape of {}: HDF5 datasets have 1 to \
                 {MAX_RANK} dimensions and a chunk extent for each",
                new.chunk.len()
            )));
        }
        if !new.data_type.is_numeric() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{context}: HDF5 datasets of N5 type {} are not supported (only the ten numeric \
                     types)",
                    new.data_type
                ),
            ));
        }
        let deflate = match new.compression {
            Compression::Raw => None,
            Compression::Gzip { level, .. } => Some(match *level {
                -1 => 6,
                l @ 0..=9 => l as c_uint,
                l => {
                    return Err(Error::invalid_argument(format!(
                        "{context}: gzip level {l} is outside -1..=9"
                    )))
                }
            }),
            other => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{context}: {} compression cannot be stored in an HDF5 file here: only raw \
                         and gzip (HDF5's deflate filter) are written, as Fiji's HDF5 library reads \
                         no plugin filters",
                        other.type_name()
                    ),
                ))
            }
        };
        self.inner().check_writable(&here)?;
        let Some((name, parents)) = comps.split_last() else {
            return Err(Error::invalid_argument(format!(
                "{context}: the root group cannot become a dataset"
            )));
        };
        for i in 0..parents.len() {
            let above = parents[..=i].join("/");
            match self.inner().resolve(&above)?.kind() {
                super::ObjectKind::Group | super::ObjectKind::None => {}
                _ => {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!(
                            "{}: not a group, so it cannot hold '{here}'",
                            self.inner().context(&absolute(&parents[..=i]))
                        ),
                    ))
                }
            }
        }
        let existing = self.inner().resolve(path)?;
        let empty_group = match &existing {
            Resolved::None => None,
            Resolved::Group(g) => {
                let members = locked(|| {
                    let mut info = std::mem::MaybeUninit::<sys::h5g::H5G_info_t>::zeroed();
                    // SAFETY: `g` is an open group.
                    let ret = unsafe { sys::h5g::H5Gget_info(g.id(), info.as_mut_ptr()) };
                    check(
                        ret,
                        ErrorKind::InvalidMetadata,
                        &context,
                        "reading the group",
                    )?;
                    // SAFETY: written by the successful call.
                    Ok(unsafe { info.assume_init() }.nlinks)
                })?;
                if members > 0 {
                    return Err(Error::new(
                        ErrorKind::AlreadyExists,
                        format!("{context}: a group with members is there"),
                    ));
                }
                Some(g)
            }
            Resolved::Dataset(_) => {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("{context}: a dataset is already there"),
                ))
            }
            Resolved::Other => {
                return Err(Error::new(
                    ErrorKind::AlreadyExists,
                    format!("{context}: a link to something other than a group is there"),
                ))
            }
        };
        let shape = new.shape;
        let chunk: Vec<u64> = new
            .chunk
            .iter()
            .zip(shape)
            .map(|(&c, &d)| c.clamp(1, d.max(1)))
            .collect();
        let max: Vec<u64> = shape
            .iter()
            .map(|&d| if d == 0 { H5S_UNLIMITED } else { d })
            .collect();
        let elem = new.data_type.size();
        // The dataset is made under its final name, or, over an empty
        // group, under a temporary name beside it that replaces the group
        // once its attributes are copied.
        let temporary = format!("{}/.n5-new-{name}", absolute(parents));
        let target = if empty_group.is_some() {
            temporary.clone()
        } else {
            here.clone()
        };
        let ctarget = cstring(&target, "path")?;
        let lcpl = self.intermediate_lcpl(&context)?;
        let dataset = locked(|| {
            // SAFETY (every block below): property lists and a dataspace are
            // made and closed by their Hids; the arrays have `rank`
            // elements; the fill value buffer has the element's size;
            // under the lock.
            let dcpl = check_id(
                unsafe { sys::h5p::H5Pcreate(*H5P_DATASET_CREATE) },
                close::plist,
                ErrorKind::Internal,
                &context,
                "creating dataset creation properties",
            )?;
            let zero = [0u8; 8];
            let ok = unsafe {
                sys::h5p::H5Pset_chunk(dcpl.id(), rank as c_int, chunk.as_ptr()) >= 0
                    && sys::h5p::H5Pset_fill_value(
                        dcpl.id(),
                        native_type(new.data_type.clone()),
                        zero.as_ptr().cast(),
                    ) >= 0
                    && sys::h5p::H5Pset_alloc_time(dcpl.id(), H5D_alloc_time_t::H5D_ALLOC_TIME_INCR)
                        >= 0
            };
            if !ok {
                return Err(failed(
                    ErrorKind::Internal,
                    &context,
                    "setting the chunks and fill value",
                ));
            }
            if let Some(level) = deflate {
                let ok = unsafe {
                    (elem == 1 || sys::h5p::H5Pset_shuffle(dcpl.id()) >= 0)
                        && sys::h5p::H5Pset_deflate(dcpl.id(), level) >= 0
                };
                if !ok {
                    return Err(failed(
                        ErrorKind::Internal,
                        &context,
                        "setting shuffle and deflate",
                    ));
                }
            }
            let space = check_id(
                unsafe { sys::h5s::H5Screate_simple(rank as c_int, shape.as_ptr(), max.as_ptr()) },
                close::space,
                ErrorKind::InvalidArgument,
                &context,
                "making the dataspace",
            )?;
            check_id(
                unsafe {
                    sys::h5d::H5Dcreate2(
                        self.inner().id(),
                        ctarget.as_ptr(),
                        little_endian_type(new.data_type.clone()),
                        space.id(),
                        lcpl.id(),
                        dcpl.id(),
                        H5P_DEFAULT,
                    )
                },
                close::object,
                ErrorKind::Io,
                &context,
                "creating the dataset",
            )
        })?;
        if let Some(group) = empty_group {
            let replaced = (|| {
                attrs::copy_attributes(group.id(), dataset.id(), &context)?;
                let cname = cstring(&here, "path")?;
                locked(|| {
                    // SAFETY: both names are C strings of the open file.
                    let ret = unsafe {
                        sys::h5l::H5Ldelete(self.inner().id(), cname.as_ptr(), H5P_DEFAULT)
                    };
                    check(ret, ErrorKind::Io, &context, "unlinking the empty group")?;
                    // SAFETY: as above.
                    let ret = unsafe {
                        sys::h5l::H5Lmove(
                            self.inner().id(),
                            ctarget.as_ptr(),
                            self.inner().id(),
                            cname.as_ptr(),
                            H5P_DEFAULT,
                            H5P_DEFAULT,
                        )
                    };
                    check(
                        ret,
                        ErrorKind::Io,
                        &context,
                        "moving the new dataset in place",
                    )
                })
            })();
            if let Err(e) = replaced {
                // Leave the group as it was; drop the half-made dataset.
                drop(dataset);
                // SAFETY: a C string of the open file; under the lock.
                locked(|| unsafe {
                    sys::h5l::H5Ldelete(self.inner().id(), ctarget.as_ptr(), H5P_DEFAULT);
                });
                return Err(e);
            }
        }
        drop(dataset);
        self.flush()?;
        self.open_dataset(&here)
    }
}
