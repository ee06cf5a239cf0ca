//! Zarr v3: zarr.json documents of groups and arrays (`metadata`), the
//! codec chain that turns chunks into bytes (`chain`), the
//! `sharding_indexed` codec's shards and their indexes (`shard`), the
//! indexes an open array keeps from reads over a network (`index_cache`),
//! and the `hdf5_shards` member that makes every shard an HDF5 file too
//! (`hdf5_shards`).

pub(crate) mod chain;
pub(crate) mod dtype;
pub(crate) mod hdf5_shards;
pub(crate) mod index_cache;
pub(crate) mod metadata;
pub(crate) mod shard;
