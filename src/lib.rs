//! libn5: the N5 chunked n-dimensional array format.
//!
//! The Rust core, one module per concern: data types ([`dtype`]), errors
//! ([`error`]), compression codecs ([`codec`]), the block wire format
//! ([`block`]), dataset metadata ([`metadata`]), N5 attribute paths
//! ([`attrpath`]), container-relative paths ([`path`]), file-system storage
//! ([`storage`]), containers, groups and attributes ([`container`]), datasets
//! and blocks ([`dataset`]), region I/O ([`region`]), and the C API
//! ([`ffi`]), which `include/n5.h` declares.
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

pub mod attrpath;
pub mod block;
pub mod codec;
pub mod container;
pub mod dataset;
pub mod dtype;
pub mod error;
pub mod ffi;
pub mod format;
pub mod metadata;
mod os;
mod parallel;
pub mod path;
mod pipeline;
pub mod region;
pub mod storage;

pub use block::{BlockHeader, BlockMode, DataBlock};
pub use codec::Compression;
pub use container::{Container, Mode, Options};
pub use dataset::Dataset;
pub use dtype::DataType;
pub use error::{Error, ErrorKind, Result};
pub use metadata::DatasetAttributes;
