//! HDF5: the pure-Rust byte layouts of HDF5 files (the signature search
//! that tells HDF5 files apart) and, under the cargo feature `hdf5`, HDF5
//! files opened through libhdf5 (`native`).

pub(crate) mod signature;

#[cfg(feature = "hdf5")]
pub(crate) mod native;
