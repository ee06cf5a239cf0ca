//! HDF5 without libhdf5: the Zarr v3 shards that are also HDF5 files
//! (hdf5.md part A). `shard_file` writes the HDF5 structures of such a
//! shard around the inner chunks the Zarr shard writer encodes, and reads
//! them back for checks ([`inspect_shard`]); `lookup3` is the checksum
//! HDF5 puts on its metadata.

pub(crate) mod lookup3;
pub(crate) mod shard_file;

pub use shard_file::{inspect_shard, ShardFileInfo, BLOSC_FILTER, SIGNATURE, ZSTD_FILTER};
