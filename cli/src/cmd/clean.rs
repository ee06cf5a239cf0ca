//! `n5 clean`: delete the temporary files (`.n5tmp.*`) that writers killed
//! in the middle of a write left in a container of any format (N5, Zarr v2,
//! Zarr v3; an HDF5 file, which libhdf5 writes in place, has none). Readers and listings ignore them; this reclaims their space. Only temporaries older than
//! `--older-than` go, so that writes in progress elsewhere keep theirs, and
//! only in a directory that is recognisably a container. Object stores
//! (S3, GCS) write each object in one atomic request and plain HTTP(S)
//! cannot be written, so a URL has nothing to clean: the command checks
//! that the container is there and says so.

use std::time::Duration;

use clap::Args;
use n5::Mode;
use serde_json::json;

use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::Location;
use crate::output::{count, size, Out};
use crate::Global;

/// Arguments of `n5 clean`.
#[derive(Args, Debug)]
pub struct CleanArgs {
    /// Container (a group or dataset path cleans its whole container).
    pub path: String,
    /// Keep temporaries modified less than this many seconds ago (a write
    /// in progress has one too).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub older_than: u64,
    /// Print one JSON object: {removed, bytes}.
    #[arg(long)]
    pub json: bool,
}

/// Runs `n5 clean`.
pub fn clean(a: &CleanArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    if !loc.is_local() {
        // Opening checks that the container is there; read-only, since a
        // writable open would add a missing root version.
        let c = loc.open(Mode::Read, 1)?;
        let mut out = Out::new();
        if a.json {
            out.json(&json!({"removed": 0, "bytes": 0}))?;
        } else {
            out.line(&format!(
                "nothing to clean: {} is on a store whose writes leave no temporary files",
                c.location()
            ))?;
        }
        out.flush()?;
        return Ok(EXIT_OK);
    }
    if loc.local.as_ref().is_some_and(|root| root.is_file()) {
        // A container that is one file (HDF5): libhdf5 writes it in place.
        let c = loc.open(Mode::Read, 1)?;
        let mut out = Out::new();
        if a.json {
            out.json(&json!({"removed": 0, "bytes": 0}))?;
        } else {
            out.line(&format!(
                "nothing to clean: {} is a {} file, written in place without temporary files",
                c.location(),
                c.format().name()
            ))?;
        }
        out.flush()?;
        return Ok(EXIT_OK);
    }
    if !loc.root_is_container() {
        return Err(CliError::new(
            &loc.arg,
            "not a container (a directory named *.n5 or *.zarr, one with an \"n5\" version in its attributes.json, or a Zarr root with zarr.json, .zgroup or .zarray)",
        ));
    }
    // Opened to read, so that nothing is added (a missing root version or
    // group marker); the store removes the temporaries, the container's
    // documents and blocks are not written.
    let c = loc.open(Mode::Read, g.threads.max(1))?;
    let (files, bytes) = c
        .store()
        .remove_stale_temporaries(Duration::from_secs(a.older_than))
        .at(&loc.arg)?;
    let mut out = Out::new();
    if a.json {
        out.json(&json!({"removed": files, "bytes": bytes}))?;
    } else {
        out.line(&format!(
            "removed {} ({})",
            count(files as usize, "stale temporary file"),
            size(bytes)
        ))?;
    }
    out.flush()?;
    Ok(EXIT_OK)
}
