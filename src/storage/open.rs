//! Opening the store a parsed [`Location`] names: the one place that knows
//! every backend. [`super::location`] only describes where a container is;
//! this turns the description into a [`Store`].

use std::sync::Arc;

use super::fs::FsStore;
use super::gcs::GcsStore;
use super::location::{Backend, Location};
use super::options::StorageOptions;
use super::s3::S3Store;
use super::store::Store;
use super::web::WebStore;
use crate::error::Result;

/// Open the store `location` names, with `options` (its cache aside, which
/// the container adds). Nothing is sent over the network yet.
pub fn open(location: &Location, options: &StorageOptions) -> Result<Arc<dyn Store>> {
    Ok(match &location.backend {
        Backend::File(path) => Arc::new(FsStore::new(path)),
        Backend::S3(l) => Arc::new(S3Store::new(l, &location.display, options)?),
        Backend::Gcs(l) => Arc::new(GcsStore::new(l, &location.display, options)?),
        Backend::Web(l) => Arc::new(WebStore::new(l, &location.display, options)?),
    })
}
