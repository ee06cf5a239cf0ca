//! The storage part of a container's options (`options_json`): requests in
//! flight, the block cache, and the per-backend settings and credentials
//! (`s3`, `gcs`, `http`, `retry`), parsed strictly (unknown keys are
//! errors). Secrets are kept in [`Secret`], which never prints its value.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A credential: shown as `<redacted>` by `Debug` and `Display`, so it can
/// never reach a message, a log line or a panic.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for signing and headers only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Settings of S3 and S3-compatible stores (`"s3"` in the options). Every
/// field is optional; what is not given comes from the environment (see
/// [`crate::storage::s3`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct S3Options {
    /// The endpoint, such as `http://127.0.0.1:8333` (default: AWS, or
    /// `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`).
    pub endpoint: Option<String>,
    /// The bucket's region; found from the server's answers when missing or wrong.
    pub region: Option<String>,
    /// Send unsigned requests, whatever credentials the environment holds.
    pub anonymous: bool,
    /// Path-style addressing (`endpoint/bucket/key`); default: on with an
    /// explicit endpoint, off for AWS (`bucket.s3.region.amazonaws.com`).
    pub path_style: Option<bool>,
    /// The access key id.
    pub access_key_id: Option<String>,
    /// The secret access key.
    pub secret_access_key: Option<Secret>,
    /// The session token of temporary credentials.
    pub session_token: Option<Secret>,
    /// The profile of `~/.aws/credentials` and `~/.aws/config`.
    pub profile: Option<String>,
    /// The checksum every upload carries, which the server checks against
    /// the body it received (`"checksum"`: `"crc32c"`, the default, or
    /// `"md5"` for S3-compatible servers that ignore `x-amz-checksum-*`).
    pub checksum: UploadChecksum,
}

/// The checksum an S3 upload carries, so that the server refuses a body
/// damaged or cut short on the way instead of storing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UploadChecksum {
    /// `x-amz-checksum-crc32c`: CRC-32C, computed at memory speed.
    #[default]
    Crc32c,
    /// `Content-MD5`: checked by every S3-compatible server, about
    /// 2 ms per MB of body to compute.
    Md5,
}

/// Settings of Google Cloud Storage (`"gcs"` in the options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcsOptions {
    /// The endpoint, such as `http://127.0.0.1:4443` (default:
    /// `STORAGE_EMULATOR_HOST`, else `https://storage.googleapis.com`).
    pub endpoint: Option<String>,
    /// Send requests without credentials.
    pub anonymous: bool,
    /// A service-account key file or an authorized-user file.
    pub credentials_file: Option<PathBuf>,
    /// An OAuth 2 access token to send as it is.
    pub token: Option<Secret>,
}

/// Settings of plain HTTP(S) locations (`"http"` in the options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpOptions {
    /// Headers sent with every request (such as `Authorization`); their
    /// values are secrets.
    pub headers: Vec<(String, Secret)>,
}

/// How network requests are retried (`"retry"` in the options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryOptions {
    /// Attempts of one request in all, the first included.
    pub max_attempts: u32,
    /// Time one request may take with all its attempts and pauses.
    pub max_time: Duration,
    /// A request that sends or receives nothing for this long is abandoned
    /// (and retried).
    pub request_timeout: Duration,
}

impl Default for RetryOptions {
    fn default() -> Self {
        RetryOptions {
            max_attempts: 8,
            max_time: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The storage options of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageOptions {
    /// Requests (or file reads) in flight for multi-block work, independent
    /// of the decoding threads; `None` for the backend's default
    /// ([`StorageOptions::io_concurrency_for`]).
    pub io_concurrency: Option<usize>,
    /// Bytes of the in-memory block cache shared by every dataset of the
    /// container; 0 for none (the default).
    pub cache_bytes: u64,
    /// S3 settings.
    pub s3: S3Options,
    /// Google Cloud Storage settings.
    pub gcs: GcsOptions,
    /// Plain HTTP(S) settings.
    pub http: HttpOptions,
    /// Retries of network requests.
    pub retry: RetryOptions,
}

/// Requests in flight on a network store unless `io_concurrency` says
/// otherwise: enough to hide a time to first byte of tens of milliseconds.
pub const REMOTE_IO_CONCURRENCY: usize = 32;

/// File reads in flight on a local disk unless `io_concurrency` says
/// otherwise.
pub const LOCAL_IO_CONCURRENCY: usize = 4;

/// The most requests in flight `io_concurrency` may ask for.
pub const MAX_IO_CONCURRENCY: usize = 256;

impl StorageOptions {
    /// The requests in flight for a store that is `remote` or not.
    pub fn io_concurrency_for(&self, remote: bool) -> usize {
        self.io_concurrency.unwrap_or(if remote {
            REMOTE_IO_CONCURRENCY
        } else {
            LOCAL_IO_CONCURRENCY
        })
    }

    /// Take the storage keys out of an options object and parse them;
    /// returns whether `key` was one of them.
    pub(crate) fn parse_key(&mut self, key: &str, v: &Value) -> Result<bool> {
        match key {
            "io_concurrency" => {
                self.io_concurrency = match v.as_u64() {
                    Some(0) => None,
                    Some(n) if n <= MAX_IO_CONCURRENCY as u64 => Some(n as usize),
                    _ => {
                        return Err(bad(
                            "io_concurrency",
                            v,
                            &format!("an integer from 0 (the default) to {MAX_IO_CONCURRENCY}"),
                        ))
                    }
                }
            }
            "cache_bytes" => {
                self.cache_bytes = v
                    .as_u64()
                    .ok_or_else(|| bad("cache_bytes", v, "a number of bytes"))?
            }
            "s3" => self.s3 = parse_s3(object("s3", v)?)?,
            "gcs" => self.gcs = parse_gcs(object("gcs", v)?)?,
            "http" => self.http = parse_http(object("http", v)?)?,
            "retry" => self.retry = parse_retry(object("retry", v)?)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The options as JSON, without credentials (for `n5_container_options`).
    pub fn to_json_without_secrets(&self, remote: bool) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "io_concurrency".into(),
            Value::from(self.io_concurrency_for(remote)),
        );
        m.insert("cache_bytes".into(), Value::from(self.cache_bytes));
        m.insert(
            "retry".into(),
            serde_json::json!({
                "max_attempts": self.retry.max_attempts,
                "max_seconds": self.retry.max_time.as_secs_f64(),
                "request_timeout_seconds": self.retry.request_timeout.as_secs_f64(),
            }),
        );
        m
    }
}

fn bad(key: &str, v: &Value, want: &str) -> Error {
    let shown = if is_secret_key(key) {
        "a value".to_string()
    } else {
        shown_value(v)
    };
    Error::invalid_argument(format!("options: {key} must be {want}, not {shown}"))
}

/// How a wrong option value is shown in an error: numbers, booleans and
/// short strings as they are; objects and arrays (which may hold secrets)
/// and long strings only by their kind.
pub(crate) fn shown_value(v: &Value) -> String {
    match v {
        Value::Object(_) => "an object".to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::String(s) if s.chars().count() > 64 => "a long string".to_string(),
        other => other.to_string(),
    }
}

fn is_secret_key(key: &str) -> bool {
    key.ends_with("secret_access_key")
        || key.ends_with("session_token")
        || key.ends_with("token")
        || key.starts_with("http.headers")
}

fn object<'a>(key: &str, v: &'a Value) -> Result<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| bad(key, v, "a JSON object"))
}

fn unknown(section: &str, key: &str, known: &str) -> Error {
    Error::invalid_argument(format!(
        "options: unknown key '{section}.{key}' (known: {known})"
    ))
}

fn string(key: &str, v: &Value) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| bad(key, v, "a string"))
}

fn boolean(key: &str, v: &Value) -> Result<bool> {
    v.as_bool().ok_or_else(|| bad(key, v, "true or false"))
}

fn seconds(key: &str, v: &Value) -> Result<Duration> {
    match v.as_f64() {
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(bad(key, v, "a number of seconds above 0, at most 86400")),
    }
}

fn parse_s3(m: &Map<String, Value>) -> Result<S3Options> {
    let mut o = S3Options::default();
    for (k, v) in m {
        let key = format!("s3.{k}");
        match k.as_str() {
            "endpoint" => o.endpoint = Some(string(&key, v)?),
            "region" => o.region = Some(string(&key, v)?),
            "anonymous" => o.anonymous = boolean(&key, v)?,
            "path_style" => o.path_style = Some(boolean(&key, v)?),
            "access_key_id" => o.access_key_id = Some(string(&key, v)?),
            "secret_access_key" => o.secret_access_key = Some(Secret(string(&key, v)?)),
            "session_token" => o.session_token = Some(Secret(string(&key, v)?)),
            "profile" => o.profile = Some(string(&key, v)?),
            "checksum" => {
                o.checksum = match v.as_str() {
                    Some("crc32c") => UploadChecksum::Crc32c,
                    Some("md5") => UploadChecksum::Md5,
                    _ => return Err(bad(&key, v, "\"crc32c\" or \"md5\"")),
                }
            }
            _ => return Err(unknown("s3", k, "endpoint, region, anonymous, path_style, access_key_id, secret_access_key, session_token, profile, checksum")),
        }
    }
    Ok(o)
}

fn parse_gcs(m: &Map<String, Value>) -> Result<GcsOptions> {
    let mut o = GcsOptions::default();
    for (k, v) in m {
        let key = format!("gcs.{k}");
        match k.as_str() {
            "endpoint" => o.endpoint = Some(string(&key, v)?),
            "anonymous" => o.anonymous = boolean(&key, v)?,
            "credentials_file" => o.credentials_file = Some(PathBuf::from(string(&key, v)?)),
            "token" => o.token = Some(Secret(string(&key, v)?)),
            _ => {
                return Err(unknown(
                    "gcs",
                    k,
                    "endpoint, anonymous, credentials_file, token",
                ))
            }
        }
    }
    Ok(o)
}

fn parse_http(m: &Map<String, Value>) -> Result<HttpOptions> {
    let mut o = HttpOptions::default();
    for (k, v) in m {
        match k.as_str() {
            "headers" => {
                for (name, value) in object("http.headers", v)? {
                    let valid_name = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !valid_name {
                        return Err(Error::invalid_argument(format!(
                            "options: http.headers: '{name}' is not a header name"
                        )));
                    }
                    let value = string(&format!("http.headers.{name}"), value)?;
                    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                        return Err(Error::invalid_argument(format!(
                            "options: http.headers.{name} holds a line break"
                        )));
                    }
                    o.headers.push((name.clone(), Secret(value)));
                }
            }
            _ => return Err(unknown("http", k, "headers")),
        }
    }
    Ok(o)
}

fn parse_retry(m: &Map<String, Value>) -> Result<RetryOptions> {
    let mut o = RetryOptions::default();
    for (k, v) in m {
        let key = format!("retry.{k}");
        match k.as_str() {
            "max_attempts" => {
                o.max_attempts = match v.as_u64() {
                    Some(n @ 1..=100) => n as u32,
                    _ => return Err(bad(&key, v, "an integer from 1 to 100")),
                }
            }
            "max_seconds" => o.max_time = seconds(&key, v)?,
            "request_timeout_seconds" => o.request_timeout = seconds(&key, v)?,
            _ => {
                return Err(unknown(
                    "retry",
                    k,
                    "max_attempts, max_seconds, request_timeout_seconds",
                ))
            }
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StorageOptions> {
        let v: Value = serde_json::from_str(text).unwrap();
        let mut o = StorageOptions::default();
        for (k, v) in v.as_object().unwrap() {
            assert!(o.parse_key(k, v)?, "{k} is a storage key");
        }
        Ok(o)
    }

    #[test]
    fn every_key_of_the_contract() {
        let o = parse(
            r#"{"io_concurrency": 32, "cache_bytes": 268435456,
                "s3": {"endpoint": "http://127.0.0.1:8333", "region": "us-east-1",
                       "anonymous": false, "path_style": true, "access_key_id": "AK",
                       "secret_access_key": "SK", "session_token": "ST", "profile": "default",
                       "checksum": "md5"},
                "gcs": {"endpoint": "http://127.0.0.1:4443", "anonymous": false,
                        "credentials_file": "/k.json", "token": "ya29"},
                "http": {"headers": {"Authorization": "Bearer xyz"}},
                "retry": {"max_attempts": 8, "max_seconds": 60, "request_timeout_seconds": 30}}"#,
        )
        .unwrap();
        assert_eq!(o.io_concurrency, Some(32));
        assert_eq!(o.s3.checksum, UploadChecksum::Md5);
        assert_eq!(parse("{}").unwrap().s3.checksum, UploadChecksum::Crc32c);
        assert_eq!(o.s3.secret_access_key.as_ref().unwrap().expose(), "SK");
        assert_eq!(o.gcs.token.as_ref().unwrap().expose(), "ya29");
        assert_eq!(o.http.headers[0].1.expose(), "Bearer xyz");
        assert_eq!(o.retry.request_timeout, Duration::from_secs(30));
        let debug = format!("{o:?}");
        for secret in ["SK", "ST", "ya29", "Bearer xyz"] {
            assert!(!debug.contains(secret), "{secret} in {debug}");
        }
    }

    #[test]
    fn errors_name_the_key_and_never_a_secret() {
        for (text, needle) in [
            (r#"{"s3": {"endpont": "x"}}"#, "s3.endpont"),
            (r#"{"s3": {"anonymous": "yes"}}"#, "s3.anonymous"),
            (r#"{"retry": {"max_attempts": 0}}"#, "retry.max_attempts"),
            (r#"{"retry": {"max_seconds": -1}}"#, "retry.max_seconds"),
            (r#"{"io_concurrency": 100000}"#, "io_concurrency"),
            (r#"{"http": {"headers": {"X": "a\r\nb"}}}"#, "line break"),
            (r#"{"http": {"headers": {"X Y": "a"}}}"#, "header name"),
            (r#"{"gcs": []}"#, "gcs"),
            (r#"{"s3": {"checksum": "sha1"}}"#, "s3.checksum"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.message().contains(needle), "{text}: {e}");
        }
        let e = parse(r#"{"s3": {"secret_access_key": 12345}}"#).unwrap_err();
        assert!(!e.message().contains("12345"), "{e}");
        // A secret nested in a value of the wrong kind (found by fuzzing).
        let e = parse(r#"{"cache_bytes": {"secret_access_key": "SK-123"}}"#).unwrap_err();
        assert!(!e.message().contains("SK-123"), "{e}");
    }
}
