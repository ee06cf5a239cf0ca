//! Test infrastructure for libn5: real object-store and HTTP servers on
//! loopback, started and stopped by the tests, and a proxy that injects
//! faults and latency in front of them.
//!
//! This file owns the crate's public surface: the error type, the rule for
//! skipping a test when a server binary is missing (`N5_REQUIRE_SERVERS`),
//! and the process-wide shared servers (`s3_signed`, `s3_anonymous`, `gcs`,
//! `http`, `https`). The servers themselves live in their own modules:
//!
//! - [`S3Server`]: SeaweedFS (`weed mini`), S3 API, signed or anonymous;
//! - [`GcsServer`]: fake-gcs-server, GCS JSON API;
//! - [`HttpServer`]: nginx serving a directory over HTTP or HTTPS;
//! - [`Proxy`]: a fault and latency proxy in front of any of them;
//! - [`client`]: a minimal blocking HTTP/1.1 client for setting things up.
//!
//! Every server listens on 127.0.0.1 only and is killed when the test
//! process ends, however it ends (see `process.rs`). See README.md beside
//! this crate's Cargo.toml for examples.

#![warn(missing_docs)]

mod bins;
pub mod client;
mod gcs;
mod nginx;
mod process;
mod proxy;
mod s3;
mod sigv4;
mod wire;

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

pub use bins::{find_binary, Binary};
pub use gcs::GcsServer;
pub use nginx::{HttpServer, Scheme, Site};
pub use process::free_port;
pub use proxy::{Counters, Fault, Proxy, Rule, StallAt};
pub use s3::{Credentials, S3Mode, S3Server};

/// Why a server could not be had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Its binary is not installed; the message names it and says how to
    /// install it (`tests/setup.sh servers`). Tests skip on this unless
    /// `N5_REQUIRE_SERVERS=1`.
    Missing(String),
    /// It is installed but did not start, or did not do what was asked;
    /// the message says why, with the tail of the server's log when there
    /// is one. Always a test failure.
    Failed(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Missing(m) | Error::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// Whether the environment demands the servers (`N5_REQUIRE_SERVERS=1`, set
/// by tests/run.sh): then a missing binary fails the test instead of
/// skipping it.
pub fn servers_required() -> bool {
    std::env::var("N5_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// The server, or `None` after printing `skipped: ...` when its binary is
/// missing and `N5_REQUIRE_SERVERS` is not `1`. Panics on any other error,
/// and on a missing binary when the servers are required.
///
/// ```no_run
/// let Some(s3) = n5_testkit::or_skip(n5_testkit::s3_signed()) else { return };
/// ```
#[track_caller]
pub fn or_skip<T>(result: Result<T, Error>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(Error::Missing(m)) if !servers_required() => {
            eprintln!("skipped: {m}");
            None
        }
        Err(Error::Missing(m)) => panic!("{m} (N5_REQUIRE_SERVERS=1: servers are required)"),
        Err(Error::Failed(m)) => panic!("{m}"),
    }
}

/// `server_or_skip!(expr)`: the `Ok` value of `expr` (a
/// `Result<T, n5_testkit::Error>`), or returns from the enclosing test
/// after printing `skipped: ...` (see [`or_skip`]).
///
/// ```no_run
/// # fn main() {
/// let s3 = n5_testkit::server_or_skip!(n5_testkit::s3_anonymous());
/// # }
/// ```
#[macro_export]
macro_rules! server_or_skip {
    ($e:expr) => {
        match $crate::or_skip($e) {
            Some(v) => v,
            None => return,
        }
    };
}

type Shared<T> = OnceLock<Result<T, Error>>;

static S3_SIGNED: Shared<S3Server> = OnceLock::new();
static S3_ANONYMOUS: Shared<S3Server> = OnceLock::new();
static GCS: Shared<GcsServer> = OnceLock::new();
static HTTP: Shared<HttpServer> = OnceLock::new();
static HTTPS: Shared<HttpServer> = OnceLock::new();

/// The processes of the shared servers started so far.
fn shared_processes() -> Vec<&'static process::ServerProcess> {
    let mut all = Vec::new();
    for cell in [&S3_SIGNED, &S3_ANONYMOUS] {
        if let Some(Ok(s)) = cell.get() {
            all.push(s.process());
        }
    }
    if let Some(Ok(s)) = GCS.get() {
        all.push(s.process());
    }
    for cell in [&HTTP, &HTTPS] {
        if let Some(Ok(s)) = cell.get() {
            all.push(s.process());
        }
    }
    all
}

/// Run by exit(3) at the end of a test binary: statics are never dropped,
/// so this stops the shared servers (SIGTERM to all, 3 s, SIGKILL), reaps
/// them and removes their temp dirs. When the process dies otherwise, the
/// parent-death signal kills them and the next process removes the dirs.
extern "C" fn stop_shared_servers() {
    let _ = std::panic::catch_unwind(|| {
        let all = shared_processes();
        for p in &all {
            p.terminate();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        for p in &all {
            p.finish(deadline);
        }
    });
}

fn shared<T>(
    cell: &'static Shared<T>,
    start: impl FnOnce() -> Result<T, Error>,
) -> Result<&'static T, Error> {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: atexit(3) only records the function; it has the C ABI,
        // takes nothing, and cannot unwind out (catch_unwind above).
        unsafe {
            libc::atexit(stop_shared_servers);
        }
    });
    cell.get_or_init(start).as_ref().map_err(Clone::clone)
}

/// The process-wide SeaweedFS that checks SigV4 signatures, started on first
/// use; its credentials are [`S3Server::credentials`]. Tests sharing it
/// should each use a bucket of their own ([`S3Server::create_bucket`]).
pub fn s3_signed() -> Result<&'static S3Server, Error> {
    shared(&S3_SIGNED, || S3Server::start(S3Mode::Signed))
}

/// The process-wide SeaweedFS without credentials (anonymous requests are
/// allowed), started on first use.
pub fn s3_anonymous() -> Result<&'static S3Server, Error> {
    shared(&S3_ANONYMOUS, || S3Server::start(S3Mode::Anonymous))
}

/// The process-wide fake-gcs-server, started on first use. Tests sharing it
/// should each use a bucket of their own ([`GcsServer::create_bucket`]).
pub fn gcs() -> Result<&'static GcsServer, Error> {
    shared(&GCS, GcsServer::start)
}

fn shared_http(scheme: Scheme) -> Result<&'static HttpServer, Error> {
    let cell = match scheme {
        Scheme::Http => &HTTP,
        Scheme::Https => &HTTPS,
    };
    shared(cell, || HttpServer::start_shared(scheme))
}

/// Serves `dir` over HTTP from the process-wide nginx: the files of `dir`
/// are at [`Site::url`] until the returned [`Site`] is dropped.
pub fn http(dir: &Path) -> Result<Site, Error> {
    shared_http(Scheme::Http)?.mount(dir)
}

/// Serves `dir` over HTTPS from the process-wide nginx, with a certificate
/// for 127.0.0.1 and localhost signed by the CA in [`Site::ca_pem`].
pub fn https(dir: &Path) -> Result<Site, Error> {
    shared_http(Scheme::Https)?.mount(dir)
}
