//! Where the backend-independent tests run: a fresh container place in each
//! backend the library writes to (a directory, memory, S3 on SeaweedFS, GCS
//! on fake-gcs-server), so one test body checks them all. The servers are
//! the process-wide ones of `n5-testkit`, started on first use; without
//! their binaries the S3 and GCS places are left out with a printed reason,
//! unless `N5_REQUIRE_SERVERS=1`, when that is a failure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use n5::storage::MemoryStore;
use n5::{Container, Mode, Options};
use serde_json::json;

use super::Scratch;

/// A backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The local file system.
    Fs,
    /// A [`MemoryStore`].
    Memory,
    /// SeaweedFS through `s3://`, signed requests.
    S3,
    /// fake-gcs-server through `gs://`.
    Gcs,
}

/// A place for one container that nothing else uses.
pub struct Place {
    /// Its backend.
    pub kind: Kind,
    /// Its location string (`memory` for the memory store).
    pub location: String,
    /// The options that reach it (endpoint and credentials).
    pub options: Options,
    memory: Option<Arc<MemoryStore>>,
    _scratch: Option<Scratch>,
}

impl Place {
    /// Open the container here in `mode`.
    pub fn open(&self, mode: Mode) -> n5::Result<Container> {
        self.open_with(mode, self.options.clone())
    }

    /// Open the container here in `mode` with `options` (which must keep
    /// the endpoint and credentials of [`Place::options`]).
    pub fn open_with(&self, mode: Mode, options: Options) -> n5::Result<Container> {
        match &self.memory {
            Some(store) => Container::open_store(store.clone(), "memory", mode, options),
            None => Container::open_with(&self.location, mode, options),
        }
    }

    /// The same place with options merged from `extra` (JSON object text).
    pub fn options_with(&self, extra: &str) -> Options {
        let mut doc = options_json(self);
        for (k, v) in
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(extra).unwrap()
        {
            doc.insert(k, v);
        }
        Options::from_json(&serde_json::Value::Object(doc).to_string()).unwrap()
    }
}

/// The options of a place as JSON (endpoint and credentials).
pub fn options_json(place: &Place) -> serde_json::Map<String, serde_json::Value> {
    let v = match place.kind {
        Kind::Fs | Kind::Memory => json!({}),
        Kind::S3 => {
            let s3 = n5_testkit::s3_signed().unwrap();
            let c = s3.credentials().unwrap();
            json!({"s3": {"endpoint": s3.endpoint(), "region": s3.region(),
                          "access_key_id": c.access_key_id, "secret_access_key": c.secret_access_key}})
        }
        Kind::Gcs => json!({"gcs": {"endpoint": n5_testkit::gcs().unwrap().endpoint()}}),
    };
    v.as_object().unwrap().clone()
}

static N: AtomicU64 = AtomicU64::new(0);

fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The bucket the tests of this process share on the signed SeaweedFS.
pub fn s3_bucket() -> Option<&'static str> {
    static BUCKET: OnceLock<Option<String>> = OnceLock::new();
    BUCKET
        .get_or_init(|| {
            let s3 = n5_testkit::or_skip(n5_testkit::s3_signed())?;
            Some(s3.unique_bucket("n5-tests").unwrap())
        })
        .as_deref()
}

/// The bucket the tests of this process share on fake-gcs-server.
pub fn gcs_bucket() -> Option<&'static str> {
    static BUCKET: OnceLock<Option<String>> = OnceLock::new();
    BUCKET
        .get_or_init(|| {
            let gcs = n5_testkit::or_skip(n5_testkit::gcs())?;
            Some(gcs.unique_bucket("n5-tests").unwrap())
        })
        .as_deref()
}

/// A fresh place in backend `kind`, `None` when its server is not available
/// (after saying so).
pub fn place(kind: Kind, name: &str) -> Option<Place> {
    let id = unique(name);
    let mut place = Place {
        kind,
        location: String::new(),
        options: Options::default(),
        memory: None,
        _scratch: None,
    };
    match kind {
        Kind::Fs => {
            let scratch = Scratch::new(name);
            place.location = scratch.join("c.n5").to_str().unwrap().to_string();
            place._scratch = Some(scratch);
        }
        Kind::Memory => {
            place.location = "memory".into();
            place.memory = Some(Arc::new(MemoryStore::new()));
        }
        Kind::S3 => place.location = format!("s3://{}/{id}/c.n5", s3_bucket()?),
        Kind::Gcs => place.location = format!("gs://{}/{id}/c.n5", gcs_bucket()?),
    }
    let options = serde_json::Value::Object(options_json(&place)).to_string();
    place.options = Options::from_json(&options).unwrap();
    Some(place)
}

/// A fresh place in every backend available.
pub fn places(name: &str) -> Vec<Place> {
    [Kind::Fs, Kind::Memory, Kind::S3, Kind::Gcs]
        .into_iter()
        .filter_map(|k| place(k, name))
        .collect()
}

/// A fresh place in every object store available (S3 and GCS).
pub fn object_stores(name: &str) -> Vec<Place> {
    [Kind::S3, Kind::Gcs]
        .into_iter()
        .filter_map(|k| place(k, name))
        .collect()
}
