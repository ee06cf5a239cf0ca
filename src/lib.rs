//! libn5: the N5 chunked n-dimensional array format.
//!
//! The Rust core: data types ([`dtype`]), compression codecs ([`codec`]),
//! the block wire format ([`block`]), dataset metadata ([`metadata`]),
//! attribute paths ([`attrpath`]), file-system storage ([`storage`]),
//! containers and groups ([`container`]), datasets and blocks ([`dataset`])
//! and region I/O ([`region`]).

pub mod codec;
pub mod dtype;
pub mod error;

pub use codec::Compression;
pub use dtype::DataType;
pub use error::{Error, ErrorKind, Result};
