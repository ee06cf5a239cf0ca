//! The options every subcommand takes: their command-line grammar
//! ([`GlobalArgs`]), and what they resolve to ([`Global`]): threads, quiet,
//! and the storage options of the containers a command opens (`--options`
//! JSON or `@FILE`, `--endpoint`, `--anonymous`, `--io-concurrency`,
//! `--cache-bytes`), with the options each location gets from them.

use clap::Args;
use n5::storage::location::Backend;
use n5::storage::options::MAX_IO_CONCURRENCY;
use n5::Options;

use crate::error::{CliError, CliResult};

/// Options every subcommand takes (the grammar).
#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Threads for block work (0: one per core).
    #[arg(long, global = true, default_value_t = 0, value_name = "N")]
    pub threads: usize,
    /// No progress bars (they are drawn only when stderr is a terminal anyway).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// Storage options as a JSON object, or @FILE to read them from a file:
    /// {"s3": {"endpoint", "region", "anonymous", "path_style",
    /// "access_key_id", "secret_access_key", "session_token", "profile",
    /// "checksum": "crc32c"|"md5"},
    /// "gcs": {"endpoint", "anonymous", "credentials_file", "token"},
    /// "http": {"headers": {...}}, "io_concurrency", "cache_bytes", "retry"}.
    #[arg(long, global = true, value_name = "JSON|@FILE")]
    pub options: Option<String>,
    /// The endpoint of s3:// locations (s3.endpoint) and of gs:// locations
    /// (gcs.endpoint), such as http://127.0.0.1:8333.
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Send S3 and GCS requests without credentials (public buckets).
    #[arg(long, global = true)]
    pub anonymous: bool,
    /// Requests in flight for block work on remote stores (0: the
    /// backend's default, 32 remote, 4 local).
    #[arg(long, global = true, value_name = "N")]
    pub io_concurrency: Option<usize>,
    /// Bytes of the in-memory block cache of each container opened (default 0: none).
    #[arg(long, global = true, value_name = "BYTES")]
    pub cache_bytes: Option<u64>,
}

/// The global options, resolved: what the subcommands use.
#[derive(Clone, Debug, Default)]
pub struct Global {
    /// Threads for block work (0: one per core).
    pub threads: usize,
    /// No progress bars.
    pub quiet: bool,
    /// The container options from `--options` and the flags, before the
    /// per-location settings ([`Global::options_for`]).
    options: Options,
    /// `--endpoint`.
    endpoint: Option<String>,
    /// `--anonymous`.
    anonymous: bool,
}

impl Global {
    /// Resolve the command-line options: read and parse `--options`, check
    /// the numbers.
    pub fn from_args(a: &GlobalArgs) -> CliResult<Global> {
        let mut threads = a.threads;
        let mut options = Options::default();
        if let Some(text) = &a.options {
            let (text, source) = match text.strip_prefix('@') {
                Some(file) => (
                    std::fs::read_to_string(file).map_err(|e| {
                        CliError::usage(format!("--options @{file}"), format!("cannot read: {e}"))
                    })?,
                    format!("--options @{file}"),
                ),
                None => (text.clone(), "--options".to_string()),
            };
            options = Options::from_json(&text).map_err(|e| {
                let m = e.message();
                CliError::usage(&source, m.strip_prefix("options: ").unwrap_or(m))
            })?;
            // "threads" in the options stands for --threads when that is not given.
            let has_threads = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .is_some_and(|v| v.get("threads").is_some());
            if threads == 0 && has_threads {
                threads = options.threads;
            }
        }
        if let Some(n) = a.io_concurrency {
            if n > MAX_IO_CONCURRENCY {
                return Err(CliError::usage(
                    "--io-concurrency",
                    format!("must be from 0 (the default) to {MAX_IO_CONCURRENCY}, not {n}"),
                ));
            }
            options.storage.io_concurrency = (n > 0).then_some(n);
        }
        if let Some(n) = a.cache_bytes {
            options.storage.cache_bytes = n;
        }
        if let Some(e) = &a.endpoint {
            let lower = e.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Err(CliError::usage(
                    "--endpoint",
                    format!(
                        "'{}' is not an http:// or https:// URL",
                        n5::storage::http::redact_url(e)
                    ),
                ));
            }
        }
        Ok(Global {
            threads,
            quiet: a.quiet,
            options,
            endpoint: a.endpoint.clone(),
            anonymous: a.anonymous,
        })
    }

    /// The options to open the location `text` (without a format prefix),
    /// parsed as `parsed`, with: `--endpoint` as the S3 endpoint of an
    /// `s3://` location and the GCS endpoint of a `gs://` one, and
    /// `--anonymous` for both backends.
    pub fn options_for(&self, text: &str, parsed: &n5::storage::Location) -> Options {
        let mut o = self.options.clone();
        let scheme = text
            .find("://")
            .map(|i| text[..i].to_ascii_lowercase())
            .unwrap_or_default();
        if let Some(e) = &self.endpoint {
            match (&parsed.backend, scheme.as_str()) {
                (Backend::S3(_), "s3") => o.storage.s3.endpoint = Some(e.clone()),
                (Backend::Gcs(_), "gs") => o.storage.gcs.endpoint = Some(e.clone()),
                _ => {}
            }
        }
        if self.anonymous {
            o.storage.s3.anonymous = true;
            o.storage.gcs.anonymous = true;
        }
        o
    }
}
