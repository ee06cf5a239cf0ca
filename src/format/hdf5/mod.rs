//! HDF5. Without libhdf5: the Zarr v3 shards that are also HDF5 files
//! (`shard_file` writes the HDF5 structures of such a shard around the
//! inner chunks the Zarr shard writer encodes, and reads them back for
//! checks, [`inspect_shard`]; `lookup3` is the checksum HDF5 puts on its
//! metadata), the signature search that tells HDF5 files apart
//! (`signature`), which locations are HDF5 files (`open`), the options of
//! HDF5 containers ([`Hdf5Options`]) and what of N5's metadata an HDF5
//! dataset can be created with. Under the cargo feature `hdf5`, HDF5 files
//! opened through libhdf5 (`native`) as a container's hierarchy (`tree`)
//! and arrays (`array`), whose chunks are decoded and encoded in Rust
//! (`filters`, which needs no libhdf5 itself; `ChunkPipeline` is its
//! decoder for the fuzz targets).

#[cfg(feature = "hdf5")]
pub(crate) mod filters;
pub(crate) mod lookup3;
pub(crate) mod open;
pub(crate) mod shard_file;
pub(crate) mod signature;

#[cfg(feature = "hdf5")]
pub(crate) mod array;
#[cfg(feature = "hdf5")]
pub(crate) mod native;
#[cfg(feature = "hdf5")]
pub(crate) mod tree;

#[cfg(feature = "hdf5")]
pub use filters::ChunkPipeline;
pub use shard_file::{inspect_shard, ShardFileInfo, BLOSC_FILTER, SIGNATURE, ZSTD_FILTER};

use serde_json::Value;

use crate::codec::Compression;
use crate::error::{Error, ErrorKind, Result};

/// The block size contiguous, compact and virtual datasets get by default
/// (N5 order): N5Factory's.
pub const DEFAULT_BLOCK_SIZE: [u64; 5] = [64, 64, 64, 1, 1];

/// The most entries `default_block_size` may have (HDF5's largest rank).
const MAX_DEFAULT_RANK: usize = 32;

/// How HDF5 files are opened (`"hdf5"` of the options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hdf5Options {
    /// The block size (N5 order) of datasets that are not chunked
    /// (contiguous, compact, virtual): entry i where it exists and is
    /// above 0, else the whole dimension i. Default [`DEFAULT_BLOCK_SIZE`].
    pub default_block_size: Vec<u64>,
}

impl Default for Hdf5Options {
    fn default() -> Self {
        Hdf5Options {
            default_block_size: DEFAULT_BLOCK_SIZE.to_vec(),
        }
    }
}

impl Hdf5Options {
    /// Parse `{"default_block_size": [64, 64, 64, 1, 1]}`: at most 32
    /// non-negative integers, each at most 2^31-1. Unknown keys are an
    /// error.
    pub fn from_json(v: &Value) -> Result<Hdf5Options> {
        let map = v.as_object().ok_or_else(|| {
            Error::invalid_argument(format!(
                "options: hdf5 must be a JSON object, not {}",
                crate::storage::options::shown_value(v)
            ))
        })?;
        let mut options = Hdf5Options::default();
        for (key, value) in map {
            match key.as_str() {
                "default_block_size" => {
                    let bad = || {
                        Error::invalid_argument(format!(
                            "options: hdf5.default_block_size must be a list of at most \
                             {MAX_DEFAULT_RANK} integers from 0 to 2^31-1 (N5 order), not {}",
                            crate::storage::options::shown_value(value)
                        ))
                    };
                    let items = value.as_array().ok_or_else(bad)?;
                    if items.len() > MAX_DEFAULT_RANK {
                        return Err(bad());
                    }
                    options.default_block_size = items
                        .iter()
                        .map(|x| x.as_u64().filter(|&b| b <= i32::MAX as u64).ok_or_else(bad))
                        .collect::<Result<_>>()?;
                }
                other => {
                    return Err(Error::invalid_argument(format!(
                        "options: unknown key 'hdf5.{other}' (known: default_block_size)"
                    )))
                }
            }
        }
        Ok(options)
    }
}

/// Whether `name` ends in `.h5` or `.hdf5`, in any case.
pub(crate) fn has_hdf5_suffix(name: &str) -> bool {
    let lower = name.trim_end_matches('/').to_ascii_lowercase();
    lower.ends_with(".h5") || lower.ends_with(".hdf5")
}

/// [`ErrorKind::Unsupported`] naming the codec unless an HDF5 dataset can
/// be created with `compression`: raw (no filter) or gzip (shuffle and
/// deflate). Other codecs would need plugin filters, which Fiji's HDF5
/// library does not read.
pub(crate) fn check_compression(compression: &Compression) -> Result<()> {
    match compression {
        Compression::Raw | Compression::Gzip { .. } => Ok(()),
        other => Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "{} compression cannot be stored in an HDF5 file: only raw and gzip (HDF5's \
                 deflate filter) are written, as Fiji's HDF5 library reads no plugin filters",
                other.type_name()
            ),
        )),
    }
}

/// How many times libhdf5 has been asked to read dataset elements itself
/// (`H5Dread`) in this process: region reads of datasets whose chunks are
/// decoded in Rust leave it unchanged, which tests check.
#[cfg(feature = "hdf5")]
pub fn library_reads() -> u64 {
    native::dataset::library_reads()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_parse_strictly() {
        assert_eq!(
            Hdf5Options::from_json(&json!({})).unwrap(),
            Hdf5Options::default()
        );
        let o = Hdf5Options::from_json(&json!({"default_block_size": [32, 0, 7]})).unwrap();
        assert_eq!(o.default_block_size, vec![32, 0, 7]);
        for bad in [
            json!([1]),
            json!({"default_block_size": [-1]}),
            json!({"default_block_size": [1.5]}),
            json!({"default_block_size": [1u64 << 31]}),
            json!({"default_block_size": "64"}),
            json!({"default_blocksize": [64]}),
            json!({"default_block_size": vec![1; 33]}),
        ] {
            assert!(Hdf5Options::from_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn suffixes_in_any_case() {
        for yes in ["a.h5", "A.H5", "x/y.hdf5", "v.HDF5", "v.h5/"] {
            assert!(has_hdf5_suffix(yes), "{yes}");
        }
        for no in ["h5", "a.h55", "a.hdf", "a.n5", "a_h5"] {
            assert!(!has_hdf5_suffix(no), "{no}");
        }
    }
}
