//! The storage layer: where a container's bytes live.
//!
//! [`Store`] (in [`store`], with its small types) is the one synchronous
//! key-value interface the format code talks to. Keys are normalised
//! container-relative paths (see [`crate::path`]: `/`-separated, no `..`,
//! `""` for the root), so nothing above this layer knows whether a key is a
//! file on a disk, an object in a bucket or a URL. Backends:
//!
//! * [`fs`]: the local file system (temporary file and rename, `flock`,
//!   stale temporaries, the symlink policy, read-ahead hints);
//! * [`memory`]: a map in memory, for tests and scratch containers;
//! * [`bucket`]: the object stores with buckets, over the wire protocol
//!   of [`s3`] (S3 and S3-compatible stores) or [`gcs`] (Google Cloud
//!   Storage, JSON API);
//! * [`web`]: read-only plain HTTP(S);
//! * [`cache`]: an in-memory block cache in front of any of them.
//!
//! [`location`] parses a location string (`/data/vol.n5`,
//! `s3://bucket/vol.n5`, `gs://...`, `https://...`) into a description of
//! where the container is, and [`open()`] opens the store it names;
//! [`options`] holds the storage options of `options_json` and their
//! credentials; [`http`] is the HTTP client the network backends share
//! (retries, timeouts, bounded bodies), and `http_reads` the reads of
//! whole objects and byte ranges they make with it.
//!
//! This file only declares the modules and names their public items here;
//! the backends import [`store`], never this file.

pub mod bucket;
pub mod cache;
pub mod fs;
pub mod gcs;
pub mod http;
mod http_reads;
pub mod location;
pub mod memory;
mod open;
pub mod options;
pub mod s3;
pub mod store;
pub mod web;

pub use fs::{FsStore, TEMP_PREFIX};
pub use location::Location;
pub use memory::MemoryStore;
pub use open::open;
pub use options::StorageOptions;
pub use store::{
    backoff, ByteRange, Capabilities, Exact, Listing, Precondition, Store, UpdateFn, Version,
    UPDATE_ATTEMPTS,
};
