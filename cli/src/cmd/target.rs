//! What `cp` and `import` decide alike about the datasets they create: the
//! destination's format (from `--format`, the location's prefix, the
//! container already there, its suffix), and a `--shard` shape checked
//! against the format and the block size, `--hdf5-shards` checked against
//! them, and a new array's document checked before anything is written.

use std::sync::Arc;

use n5::format::Format;
use n5::storage::MemoryStore;
use n5::{Container, DatasetAttributes, Mode, Options};
use serde_json::Value;

use crate::error::{At, CliError, CliResult};

/// The options of what `cp` and `import` create.
#[derive(clap::Args, Debug)]
pub struct MadeArgs {
    /// The format of the datasets made: n5, zarr2, zarr3 or hdf5. Default:
    /// the destination's prefix (n5:, zarr2:, zarr3:, h5:, hdf5:), else the
    /// format of the container already there, else its suffix (.zarr:
    /// zarr3, .n5: n5, .h5 and .hdf5: hdf5), else the source's format (n5
    /// for an import).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Make every dataset made a sharded Zarr v3 array
    /// (`sharding_indexed`) with this shard shape, N5 order like
    /// --block-size, a multiple of the block size (the inner chunk shape)
    /// in each dimension.
    #[arg(long, value_name = "LIST")]
    pub shard: Option<String>,
    /// Make every shard of the sharded Zarr v3 arrays made an HDF5 file
    /// too (the `hdf5_shards` member): h5py, h5dump and other HDF5 programs
    /// open each shard as a file whose dataset `data` is the shard's part
    /// of the array. Needs sharded Zarr v3 (--shard, or a sharded Zarr v3
    /// source of `cp`) and raw, zstd or blosc compression.
    #[arg(long)]
    pub hdf5_shards: bool,
}
use crate::location::{Location, Prefix};

/// The destination's format: `--format`, else the prefix, else the format
/// of a container already there, else the suffix, else `source` (the
/// source's format for a copy, N5 for an import). A
/// `zarr:` prefix where nothing is there yet means some Zarr: `--format`
/// zarr2 or zarr3 decides, else Zarr v3 (what the library creates there).
pub fn destination_format(
    format: Option<&str>,
    dloc: &Location,
    source: Format,
) -> CliResult<Format> {
    let existing = dloc.existing_format();
    let prefix = dloc.prefix_format();
    let any_zarr = dloc.prefix() == Some(Prefix::AnyZarr);
    let Some(text) = format else {
        if any_zarr && prefix.is_none() {
            return Ok(Format::Zarr3);
        }
        return Ok(prefix
            .or(existing)
            .or_else(|| dloc.suffix_format())
            .unwrap_or(source));
    };
    let wanted = match text.to_ascii_lowercase().as_str() {
        "n5" => Format::N5,
        "zarr2" => Format::Zarr2,
        "zarr3" | "zarr" => Format::Zarr3,
        "hdf5" | "h5" => Format::Hdf5,
        other => {
            return Err(CliError::usage(
                "--format",
                format!("'{other}' is not one of n5, zarr2, zarr3, hdf5"),
            ))
        }
    };
    if any_zarr && matches!(wanted, Format::N5 | Format::Hdf5) {
        return Err(CliError::usage(
            &dloc.arg,
            format!(
                "--format {} contradicts the location's zarr: prefix",
                wanted.name()
            ),
        ));
    }
    if let Some(e) = existing.filter(|&e| e != wanted) {
        return Err(CliError::new(
            &dloc.arg,
            format!(
                "is an existing {} container; --format {} cannot write into it (write to a new location)",
                e.name(),
                wanted.name()
            ),
        ));
    }
    if let Some(p) = prefix.filter(|&p| p != wanted) {
        return Err(CliError::usage(
            &dloc.arg,
            format!(
                "--format {} contradicts the location's {} prefix",
                wanted.name(),
                p.name()
            ),
        ));
    }
    Ok(wanted)
}

/// The shard shape of `--shard` for a dataset of block size `block` (N5
/// order), checked: the rank, and a multiple of the block size.
pub fn checked_shard(shard: &[u64], block: &[u32], sarg: &str) -> CliResult<Vec<u64>> {
    if shard.len() != block.len() {
        return Err(CliError::usage(
            sarg,
            format!(
                "--shard has {} values but this dataset has {} dimensions",
                shard.len(),
                block.len()
            ),
        ));
    }
    for (d, (&s, &b)) in shard.iter().zip(block).enumerate() {
        if s == 0 || s % b as u64 != 0 {
            return Err(CliError::usage(
                "--shard",
                format!(
                    "shard shape {shard:?} is not a multiple of the block size {block:?} (dimension {d}: {s} is not a multiple of {b}); the blocks are the shards' inner chunks"
                ),
            ));
        }
    }
    Ok(shard.to_vec())
}

/// `--shard` is for Zarr v3 only: an error naming the destination `darg`
/// when it is given for another `format`.
pub fn check_shard_format(shard: bool, format: Format, darg: &str) -> CliResult<()> {
    if shard && format != Format::Zarr3 {
        return Err(CliError::usage(
            "--shard",
            format!(
                "makes sharded Zarr v3 arrays, and the destination {darg} is {} (give --format zarr3, or a zarr3: or .zarr destination)",
                format.name()
            ),
        ));
    }
    Ok(())
}

/// `--hdf5-shards` is for sharded Zarr v3 arrays only: an error naming the
/// destination `darg` when it is given for another `format`, or for a
/// dataset that would not be sharded.
pub fn check_hdf5_shards(hdf5: bool, format: Format, sharded: bool, darg: &str) -> CliResult<()> {
    if hdf5 && (format != Format::Zarr3 || !sharded) {
        let what = if format == Format::Zarr3 {
            "an unsharded Zarr v3 array (give --shard)".to_string()
        } else {
            format!(
                "{} (give --format zarr3, or a zarr3: or .zarr destination, and --shard)",
                format.name()
            )
        };
        return Err(CliError::usage(
            "--hdf5-shards",
            format!("makes the shards of sharded Zarr v3 arrays HDF5 files, and the destination {darg} is {what}"),
        ));
    }
    Ok(())
}

/// Check the Zarr array document `document` of the new dataset `dp` as
/// the library checks it when it is created, by creating it in an empty
/// in-memory container of `format` (N5 and HDF5 datasets, whose metadata
/// [`n5::Container::dataset_document`] checks, need no more): what it refuses (a shard or chunk of
/// more than 2 GiB decoded, among others) then stops the copy or import
/// before anything is written. An array whose shards are to be HDF5
/// files too with codecs they cannot hold (`-c gzip`) is a usage error.
pub fn check_document(format: Format, dp: &str, document: &Value, darg: &str) -> CliResult<()> {
    if matches!(format, Format::N5 | Format::Hdf5) {
        return Ok(());
    }
    let scratch = Container::open_store(
        Arc::new(MemoryStore::new()),
        "planning",
        Mode::Create,
        Options {
            format: Some(format),
            ..Options::default()
        },
    )
    .at(darg)?;
    scratch
        .create_dataset_json(dp, document)
        .map(|_| ())
        .map_err(|e| {
            let hdf5 = document.get(HDF5_SHARDS).is_some()
                && e.kind() == n5::ErrorKind::Unsupported
                && e.message().contains(HDF5_SHARDS);
            if hdf5 {
                CliError::usage(darg, e.message())
            } else {
                CliError::new(darg, e.message())
            }
        })
}

/// The zarr.json member that makes an array's shards HDF5 files too.
pub const HDF5_SHARDS: &str = "hdf5_shards";

/// Whether the Zarr document `have` of an existing array says what `want`
/// does (every member of `want` but the user attributes).
pub fn same_document(have: &Value, want: &Value) -> bool {
    want.as_object().is_some_and(|w| {
        w.iter()
            .filter(|(k, _)| k.as_str() != "attributes")
            .all(|(k, v)| have.get(k) == Some(v))
    })
}

/// Creates the dataset at `dp` of a copy or an import; `false` when another process
/// (a concurrent part of the same copy) made it first with the same
/// metadata, an error when with other metadata.
pub fn create_dataset(
    dst: &Container,
    dp: &str,
    format: Format,
    attrs: &DatasetAttributes,
    document: &Value,
) -> n5::Result<bool> {
    let made = if format == Format::N5 {
        dst.create_dataset(dp, attrs.clone()).map(|_| ())
    } else {
        dst.create_dataset_json(dp, document).map(|_| ())
    };
    match made {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == n5::ErrorKind::AlreadyExists => {
            let existing = dst.open_dataset(dp)?;
            let same = if matches!(format, Format::N5 | Format::Hdf5) {
                *existing.attributes() == *attrs
            } else {
                same_document(&existing.metadata()?, document)
            };
            if same {
                Ok(false)
            } else {
                Err(n5::Error::new(
                    n5::ErrorKind::AlreadyExists,
                    "a dataset with other metadata is already there (remove it, or run with the same options to resume)",
                ))
            }
        }
        Err(e) => Err(e),
    }
}
