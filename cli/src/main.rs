//! The `n5` command-line tool: the argument grammar of every subcommand
//! (clap derive), the global options, and the dispatch to the subcommand
//! modules in `cmd/`, with errors printed as one line and turned into the
//! documented exit codes.

mod cmd;
mod error;
mod global;
mod location;
mod npy;
mod output;
mod spec;
mod tiffmeta;
mod tiffstack;
mod work;
mod zarr;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::{CliResult, EXIT_OK, EXIT_USAGE};
pub use crate::global::Global;
use crate::global::GlobalArgs;

/// Inspect, convert, copy, verify and clean N5 containers, and Zarr v2 and
/// v3 containers and local HDF5 files (which `cp` and `import` also write).
///
/// PATH arguments name a container, or a group or dataset inside one:
/// `vol.n5/raw/s0` is the dataset `raw/s0` of the container `vol.n5` (the
/// last component ending in `.n5`, `.zarr`, `.h5` or `.hdf5`, or an
/// existing file on the way, is the container root; a prefix `n5:`,
/// `zarr2:`, `zarr3:`, `h5:` or `hdf5:` names the format). A PATH may also
/// be a URL: `s3://bucket/vol.n5/raw`, `gs://bucket/vol.n5`,
/// `https://host/vol.n5/raw/s0` (plain HTTP(S) is read-only and cannot
/// list), or `file:///data/vol.n5`.
///
/// Exit codes: 0 success, 1 error, 2 usage error, 3 `verify` found bad blocks.
#[derive(Parser, Debug)]
#[command(name = "n5", version, propagate_version = true)]
#[command(
    after_help = "Examples:\n  n5 tree vol.n5\n  n5 info --stats vol.n5/raw/s0\n  n5 cat vol.n5/raw/s0 --offset 0,0,10 --shape 512,512,1 -o slice.npy\n  n5 --anonymous ls s3://janelia-cosem-datasets/jrc_hela-2/jrc_hela-2.n5\n  n5 --endpoint http://127.0.0.1:8333 cp local.n5 s3://bucket/vol.n5 -c zstd\n  n5 info https://example.org/data/vol.n5/raw/s0\n  n5 ls data.h5\n  n5 cat hdf5:vol.bin/t00000/s00/0/cells -o cells.npy\n\nCredentials come from --options or the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS...)."
)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the groups and datasets in a container or group.
    #[command(
        after_help = "Plain HTTP(S) URLs cannot be listed (name a dataset instead).\n\nExamples:\n  n5 ls vol.n5\n  n5 ls -r --json vol.n5/raw\n  n5 --endpoint http://127.0.0.1:8333 ls s3://bucket/vol.n5"
    )]
    Ls(cmd::ls::LsArgs),
    /// Show the hierarchy below a container or group as a tree.
    #[command(after_help = "Example:\n  n5 tree vol.n5")]
    Tree(cmd::ls::TreeArgs),
    /// Describe a dataset: metadata, blocks stored, bytes, compression ratio.
    #[command(
        after_help = "A Zarr array is described in its format's terms (codecs, shard shape, fill value, chunk keys; shapes in N5 and C order).\n\nExamples:\n  n5 info vol.n5/raw/s0\n  n5 info --stats --json vol.n5/raw/s0\n  n5 info vol.zarr/raw"
    )]
    Info(cmd::info::InfoArgs),
    /// Read, write or remove attributes by N5 attribute path (`a/b[2]`).
    #[command(subcommand)]
    Attrs(cmd::attrs::AttrsCommand),
    /// Write a region of a dataset as raw little-endian bytes or .npy.
    #[command(
        after_help = "Examples:\n  n5 cat vol.n5/raw/s0 --offset 0,0,10 --shape 512,512,1 -o slice.npy\n  n5 cat vol.n5/raw/s0 --shape 64,64,64 > block.raw"
    )]
    Cat(cmd::cat::CatArgs),
    /// Import a raw, .npy or TIFF file (or a directory of TIFF pages) into a
    /// new dataset (N5, Zarr v2, Zarr v3 or an HDF5 file).
    #[command(
        after_help = "Examples:\n  n5 import volume.npy vol.n5/raw/s0 --block-size 64,64,64 --compression zstd\n  n5 import data.raw vol.n5/img --dtype uint16 --shape 512,512,64 --compression '{\"type\":\"gzip\",\"level\":-1}'\n  n5 import volume.npy vol.zarr/raw -b 64,64,64 --shard 1024,1024,1024 -c zstd   (sharded Zarr v3)\n  n5 import volume.npy zarr2:s3://bucket/vol.zarr/raw -c blosc\n  n5 import stack.tif vol.n5/raw -c zstd            (pages: [width, height, pages])\n  n5 import slices/ vol.zarr/raw                    (a directory of .tif pages, in natural order)"
    )]
    Import(cmd::import::ImportArgs),
    /// Copy a dataset or a group tree, optionally recompressing, re-chunking,
    /// sharding or converting between N5, Zarr v2, Zarr v3 and HDF5.
    #[command(
        after_help = "Between N5, Zarr v2, Zarr v3 (sharded with --shard) and HDF5 files, the destination's format is --format, else its prefix (n5:, zarr2:, zarr3:, h5:, hdf5:), else the container already there, else its suffix (.zarr: Zarr v3, .n5: N5, .h5 and .hdf5: HDF5), else the source's. HDF5 files hold raw and gzip data: without -c, another compression becomes gzip there.\n\nExamples:\n  n5 cp in.n5/raw out.n5/raw --compression zstd\n  n5 cp in.n5 out.n5 --block-size 128,128,128\n  n5 cp s3://bucket/vol.n5 local.n5\n  n5 cp local.n5 gs://bucket/vol.n5 -c zstd\n  n5 cp vol.n5 vol.zarr --format zarr3 --shard 1024,1024,1024 -b 64,64,64 -c zstd\n  n5 cp vol.zarr back.n5\n  n5 cp vol.zarr zarr2:v2.zarr\n  n5 cp data.h5 vol.zarr --shard 1024,1024,1024 -b 64,64,64 -c zstd\n  n5 cp vol.zarr out.h5"
    )]
    Cp(cmd::cp::CpArgs),
    /// Decode every block of every dataset and report the bad ones.
    #[command(
        after_help = "Exit code 3 when a block or dataset is bad.\n\nExamples:\n  n5 verify vol.n5\n  n5 verify --json vol.n5/raw/s0"
    )]
    Verify(cmd::verify::VerifyArgs),
    /// Delete the temporary files killed writers left (older than an hour).
    #[command(
        after_help = "Readers ignore these files; cleaning only reclaims space. On s3://, gs:// and http(s):// locations there is nothing to clean (object stores write each object in one request).\n\nExamples:\n  n5 clean vol.n5\n  n5 clean --older-than 0 --json vol.n5\n  n5 clean vol.zarr"
    )]
    Clean(cmd::clean::CleanArgs),
    #[command(
        after_help = "Levels s0..sN with tensorstore's downsampling semantics and the metadata viewers read: N5 (neuroglancer, n5-viewer, COSEM), OME-NGFF 0.5 (zarr3), OME-NGFF 0.4 (zarr2), BigDataViewer (bdv). Lists are in N5 order. Exit 2 for options that do not fit the source, 4 for --finalize before every part has finished.\n\nExamples:\n  n5 pyramid vol.n5/raw/s0 vol.n5/raw                       (levels beside s0)\n  n5 pyramid vol.n5/raw/s0 out.zarr/raw -b 64,64,64 --shard 512,512,512 -c zstd\n  n5 pyramid labels.n5/seg out.n5/seg --labels\n  n5 pyramid vol.n5/raw/s0 bdv.n5 --format bdv --resolution 0.4,0.4,2 --units um,um,um\n  n5 pyramid in.n5/raw out.zarr/raw --part 3/16              (part 3 of a 16-task job array)\n  n5 pyramid in.n5/raw out.zarr/raw --finalize"
    )]
    Pyramid(cmd::pyramid::PyramidCmdArgs),
}

fn run(cli: Cli) -> CliResult<u8> {
    let g = &Global::from_args(&cli.global)?;
    match cli.command {
        Command::Ls(a) => cmd::ls::ls(&a, g),
        Command::Tree(a) => cmd::ls::tree(&a, g),
        Command::Info(a) => cmd::info::info(&a, g),
        Command::Attrs(a) => cmd::attrs::attrs(&a, g),
        Command::Cat(a) => cmd::cat::cat(&a, g),
        Command::Import(a) => cmd::import::import(&a, g),
        Command::Cp(a) => cmd::cp::cp(&a, g),
        Command::Verify(a) => cmd::verify::verify(&a, g),
        Command::Clean(a) => cmd::clean::clean(&a, g),
        Command::Pyramid(a) => cmd::pyramid::pyramid(&a, g),
    }
}

fn main() -> ExitCode {
    // A bug is still reported on one line, without a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("n5: internal error{at}: {}", what.replace('\n', " "));
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return ExitCode::from(
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        EXIT_USAGE
                    } else {
                        EXIT_OK
                    },
                );
            }
            // One line: clap's first line without its "error: " prefix.
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            eprintln!("n5: {first} (see 'n5 --help')");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if !e.silent {
                eprintln!("{e}");
            }
            ExitCode::from(e.code)
        }
    }
}
