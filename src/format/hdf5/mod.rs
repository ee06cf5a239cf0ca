//! HDF5. Without libhdf5: the Zarr v3 shards that are also HDF5 files
//! (`shard_file` writes the HDF5 structures of such a shard around the
//! inner chunks the Zarr shard writer encodes, and reads them back for
//! checks, [`inspect_shard`]; `lookup3` is the checksum HDF5 puts on its
//! metadata) and the signature search that tells HDF5 files apart
//! (`signature`). Under the cargo feature `hdf5`, HDF5 files opened
//! through libhdf5 (`native`).

pub(crate) mod lookup3;
pub(crate) mod shard_file;
pub(crate) mod signature;

#[cfg(feature = "hdf5")]
pub(crate) mod native;

pub use shard_file::{inspect_shard, ShardFileInfo, BLOSC_FILTER, SIGNATURE, ZSTD_FILTER};
