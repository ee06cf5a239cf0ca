//! Zarr v2: .zarray documents (`metadata`), the chunks they describe
//! (`chunk`), and the object chunks of legacy hdmf-zarr files, pickled or
//! `json2` (`pickle`).

pub(crate) mod chunk;
pub(crate) mod dtype;
pub(crate) mod metadata;
pub(crate) mod pickle;
