//! HDF5 files opened through the public API, as a user reads one: any
//! bytes written to a file of their own (`.h5`), opened with
//! `Container::open_with(..., Mode::Read, ...)`, its hierarchy listed,
//! every group's and dataset's attributes read, every dataset opened with
//! its metadata, read whole as a region and in part, its first and last
//! blocks read and its blocks listed (at most 64 objects; reads of
//! datasets of at most 2^16 elements and blocks of at most 1 MiB, as a
//! caller sizes its buffers). Every call must give data or an error of
//! one of the kinds the design names for bad input (`InvalidMetadata`,
//! `Codec`, `Io`, or `Unsupported`, `NotFound` and `Json` for what the
//! file holds), whose message names the file; never a panic; and once
//! the container and its datasets are dropped, no HDF5 identifier may be
//! left open.
//!
//! libhdf5 itself parses the file's structures here: libhdf5 1.10.8
//! crashes or loops on some damaged files, which nothing in the calling
//! process can catch (fuzz/README.md), so this target is run by name, not
//! in CI's default list.
#![no_main]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use hdf5_metno_sys::h5f::{H5Fget_obj_count, H5F_OBJ_ALL};
use hdf5_metno_sys::h5i::hid_t;
use libfuzzer_sys::fuzz_target;
use n5::{Container, Dataset, Error, ErrorKind, Mode, Options};

/// The most elements a whole-array read covers.
const MAX_ELEMENTS: u64 = 1 << 16;
/// The largest block read, in bytes.
const MAX_BLOCK_BYTES: u64 = 1 << 20;
/// The most groups and datasets visited in one file.
const MAX_OBJECTS: usize = 64;

/// The number of the next input's file.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A new file for each input (libhdf5 keeps files that an id still holds
/// open, and would find an earlier input's file again under the same
/// name), in memory where the system has /dev/shm.
fn file_for(data: &[u8]) -> PathBuf {
    let dir = match std::path::Path::new("/dev/shm") {
        d if d.is_dir() => d.to_path_buf(),
        _ => std::env::temp_dir(),
    };
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("n5-fuzz-hdf5-{}-{n}.h5", std::process::id()));
    std::fs::write(&path, data).expect("writing the input's file");
    path
}

/// The product of `shape`, if it is at most `limit`.
fn at_most(shape: &[u64], factor: u64, limit: u64) -> Option<usize> {
    shape
        .iter()
        .try_fold(factor, |a, &b| a.checked_mul(b))
        .filter(|&n| n <= limit)
        .map(|n| n as usize)
}

/// Checks an error: one of the kinds bad input gives, naming the file.
fn check(e: &Error, name: &str, what: &str) {
    assert!(
        matches!(
            e.kind(),
            ErrorKind::InvalidMetadata
                | ErrorKind::Codec
                | ErrorKind::Io
                | ErrorKind::Unsupported
                | ErrorKind::NotFound
                | ErrorKind::Json
        ),
        "{what}: an error of kind {:?}: {e}",
        e.kind()
    );
    assert!(
        e.message().contains(name),
        "{what}: the message does not name the file '{name}': {e}"
    );
}

/// Does what a reader does with a dataset: metadata, reads of the whole
/// array, a region in part, the first and last blocks, the listing.
fn read_dataset(d: &Dataset, name: &str) {
    let what = |call: &str| format!("{call} of '{}'", d.path());
    if let Err(e) = d.metadata() {
        check(&e, name, &what("metadata"));
    }
    let attrs = d.attributes();
    let dims = &attrs.dimensions;
    let elem = attrs.data_type.size() as u64;
    let block: Vec<u64> = attrs.block_size.iter().map(|&b| u64::from(b)).collect();
    let Some(block_bytes) = at_most(&block, elem, MAX_BLOCK_BYTES) else {
        return;
    };
    if let Some(n) = at_most(dims, 1, MAX_ELEMENTS) {
        let zeros = vec![0u64; dims.len()];
        let mut out = vec![0u8; n * elem as usize];
        if let Err(e) = d.read_region(&zeros, dims, &mut out) {
            check(&e, name, &what("a whole read"));
        }
        // Every element but the first along each dimension: a region that
        // starts inside the first block.
        if dims.iter().all(|&x| x > 1) {
            let ones = vec![1u64; dims.len()];
            let shape: Vec<u64> = dims.iter().map(|x| x - 1).collect();
            let k = at_most(&shape, elem, u64::MAX).unwrap_or(0);
            if let Err(e) = d.read_region(&ones, &shape, &mut out[..k]) {
                check(&e, name, &what("a read in part"));
            }
        }
    }
    let grid = attrs.grid_shape();
    let last: Vec<u64> = grid.iter().map(|g| g.saturating_sub(1)).collect();
    let zeros = vec![0u64; grid.len()];
    let mut buf = vec![0u8; block_bytes];
    for pos in [&zeros, &last] {
        if grid.contains(&0) {
            break;
        }
        let Ok(shape) = d.block_shape(pos) else {
            continue;
        };
        let k = at_most(&shape, elem, MAX_BLOCK_BYTES).unwrap_or(0);
        if let Err(e) = d.read_block_into(pos, &mut buf[..k]) {
            check(&e, name, &what("a block read"));
        }
        if let Err(e) = d.read_block(pos) {
            check(&e, name, &what("a block read"));
        }
    }
    if let Err(e) = d.list_blocks() {
        check(&e, name, &what("the block listing"));
    }
}

fuzz_target!(|data: &[u8]| {
    let path = file_for(data);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let options = Options::from_json(r#"{"threads": 2}"#).expect("options");
    match Container::open_with(&path, Mode::Read, options) {
        Err(e) => check(&e, &name, "opening"),
        Ok(c) => {
            let _ = c.version();
            let mut stack = vec![String::new()];
            let mut visited = 0;
            while let Some(p) = stack.pop() {
                visited += 1;
                if visited > MAX_OBJECTS {
                    break;
                }
                if let Err(e) = c.attributes(&p) {
                    check(&e, &name, &format!("the attributes of '{p}'"));
                }
                match c.dataset_exists(&p) {
                    Ok(true) => match c.open_dataset(&p) {
                        Ok(d) => read_dataset(&d, &name),
                        Err(e) => check(&e, &name, &format!("opening dataset '{p}'")),
                    },
                    Ok(false) => match c.list(&p) {
                        Ok(children) => {
                            stack.extend(children.iter().map(|n| format!("{p}/{n}")));
                        }
                        Err(e) => check(&e, &name, &format!("listing '{p}'")),
                    },
                    Err(e) => check(&e, &name, &format!("whether '{p}' is a dataset")),
                }
            }
        }
    }
    // Every identifier libn5 opened is closed with the container and its
    // datasets.
    // SAFETY: a plain query of libhdf5's identifier tables; nothing else
    // calls libhdf5 now.
    let open = unsafe { H5Fget_obj_count(H5F_OBJ_ALL as hid_t, H5F_OBJ_ALL) };
    assert_eq!(open, 0, "HDF5 identifiers left open");
    let _ = std::fs::remove_file(&path);
});
