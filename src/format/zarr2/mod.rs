//! Zarr v2: .zarray documents (`metadata`) and the chunks they describe
//! (`chunk`).

pub(crate) mod chunk;
pub(crate) mod dtype;
pub(crate) mod metadata;
