//! libn5: the N5 API over N5, Zarr v2 and Zarr v3 containers.
//!
//! The Rust core in three layers. The API: containers, groups and
//! attributes ([`container`]), datasets and blocks ([`dataset`]), region
//! I/O ([`region`]) and hdmf-zarr links and object references
//! ([`links`]), with N5 attribute paths ([`attrpath`]) and
//! container-relative paths ([`path`]). Below it the format layer
//! ([`format`](mod@format): what the bytes mean; N5's block wire format
//! [`block`] and dataset metadata [`metadata`], Zarr v2, Zarr v3 and
//! sharding), and below that the storage layer ([`storage`]: where the
//! bytes live). Shared by all: data types ([`dtype`]), errors ([`error`]),
//! JSON text with Python's non-finite tokens ([`jsontext`])
//! and compression codecs ([`codec`]). The C API ([`ffi`]), which
//! `include/n5.h` declares, converts and delegates.
//!
//! Dimension order is N5's everywhere: index 0 of every shape, offset and
//! grid position is the first entry of `dimensions` in attributes.json (the
//! fastest-varying axis), and buffers are contiguous with dimension 0
//! fastest. Buffers hold elements in native byte order.
//!
//! ```no_run
//! use n5::{Compression, Container, DataType, DatasetAttributes, Mode};
//! # fn main() -> n5::Result<()> {
//! let c = Container::open("volume.n5", Mode::Create)?;
//! let gzip = Compression::from_json(&serde_json::json!({"type": "gzip"}))?;
//! let attrs = DatasetAttributes::new(vec![64, 64, 16], vec![32, 32, 8], DataType::U16, gzip)?;
//! let ds = c.create_dataset("raw/s0", attrs)?;
//! ds.write_region(&[0, 0, 0], &[64, 64, 16], &vec![0u8; 64 * 64 * 16 * 2])?;
//! let mut out = vec![0u8; 10 * 10 * 2 * 2];
//! ds.read_region(&[5, 5, 5], &[10, 10, 2], &mut out)?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod attrpath;
pub mod codec;
pub mod container;
pub mod dataset;
pub mod dtype;
pub mod error;
pub mod ffi;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
mod geometry;
pub mod jsontext;
pub mod links;
/// The N5 block wire format (see [`format::n5::block`]).
pub use format::n5::block;
/// N5 dataset metadata (see [`format::n5::metadata`]).
pub use format::n5::metadata;
mod lru;
mod os;
mod parallel;
pub mod path;
mod pipeline;
pub mod pyramid;
pub mod region;
pub mod storage;

pub use block::{BlockHeader, BlockMode, DataBlock};
pub use codec::Compression;
pub use container::{Container, Mode, Options};
pub use dataset::Dataset;
pub use dtype::DataType;
pub use error::{Error, ErrorKind, Result};
pub use metadata::DatasetAttributes;
