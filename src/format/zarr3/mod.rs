//! Zarr v3: zarr.json documents of groups and arrays (`metadata`), the
//! codec chain that turns chunks into bytes (`chain`), and the
//! `sharding_indexed` codec's shards and their indexes (`shard`).

pub(crate) mod chain;
pub(crate) mod metadata;
pub(crate) mod shard;
