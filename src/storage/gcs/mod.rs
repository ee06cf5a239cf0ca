//! Google Cloud Storage over the JSON API (the API real GCS and its
//! emulators share): the wire protocol under the bucket layer
//! ([`GcsStore`] is a [`BucketStore`], which owns keys, listings,
//! directories and the meaning of "missing"). Objects are read with
//! `alt=media` (ranges with `Range`), written with simple uploads
//! (`uploadType=media`, atomic) and, conditionally, with multipart uploads
//! carrying `ifGenerationMatch` (412: the condition failed); an object's
//! version is its generation. Listings are `/`-delimited or flat pages with
//! page-token continuation, which deleting objects does not disturb; the
//! directory markers are the empty objects (`a/`, `a/b/`) n5-google-cloud
//! writes, from the bucket's root down.
//!
//! The endpoint is `gcs.endpoint`, else `STORAGE_EMULATOR_HOST` (`host:port`
//! or a URL; the emulator gets no credentials unless the options give
//! some), else `https://storage.googleapis.com`. Credentials (auth.rs):
//! `gcs.anonymous`, `gcs.token`, `gcs.credentials_file`, then
//! `GOOGLE_APPLICATION_CREDENTIALS` (a service-account key or an
//! authorized-user file), else anonymous. One [`Client`] per store, with
//! `io_concurrency` connections.
//!
//! Status codes: 404 is a missing object, or [`ErrorKind::NotFound`] when the
//! bucket is missing (said by the answer, or on a listing); a 403 on an
//! anonymous read of a key is a missing object too (public buckets answer
//! so); other 401 and 403 answers are [`ErrorKind::AccessDenied`] naming the
//! credentials source; 5xx and 429 are retried by [`Client`].

mod auth;

use serde_json::Value;

use self::auth::Auth;
use super::bucket::{BucketStore, Markers, ObjectProtocol, Page, PageRequest};
use super::http::{encode_query, status_text, Client, Method, Request, Response, Validator};
use super::location::GcsLocation;
use super::options::{GcsOptions, StorageOptions};
use super::store::{Precondition, Version};
use crate::error::{Error, ErrorKind, Result};

/// The endpoint of Google Cloud Storage.
pub const DEFAULT_ENDPOINT: &str = "https://storage.googleapis.com";

/// The most entries (objects and prefixes) one listing page may hold; GCS
/// sends at most [`PAGE_SIZE`](super::bucket::PAGE_SIZE) (1000), emulators may
/// send every prefix at once.
pub const MAX_PAGE_ENTRIES: usize = 100_000;

/// A container root in a Google Cloud Storage bucket.
pub type GcsStore = BucketStore<GcsProtocol>;

/// The JSON API to one bucket: its endpoint, credentials and connection
/// pool.
#[derive(Debug)]
pub struct GcsProtocol {
    bucket: String,
    /// Scheme, host and port (and any path), no trailing slash.
    endpoint: String,
    client: Client,
    auth: Auth,
}

impl GcsStore {
    /// The store of `location` (`display` names it in messages), with the
    /// endpoint and credentials of `options` and the environment. Reads a
    /// credentials file if one is named; sends nothing.
    pub fn new(location: &GcsLocation, display: &str, options: &StorageOptions) -> Result<Self> {
        GcsStore::with_env(location, display, options, &|name| std::env::var(name).ok())
    }

    /// [`GcsStore::new`] with the environment variables `env` gives.
    fn with_env(
        location: &GcsLocation,
        display: &str,
        options: &StorageOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let (endpoint, emulator) = endpoint(&options.gcs, env)?;
        let auth = Auth::resolve(&options.gcs, emulator, env)?;
        let io_concurrency = options.io_concurrency_for(true);
        let protocol = GcsProtocol {
            bucket: location.bucket.clone(),
            endpoint,
            client: Client::new(options.retry, io_concurrency)?,
            auth,
        };
        Ok(BucketStore::with_protocol(
            protocol,
            &location.prefix,
            display,
            io_concurrency,
        ))
    }
}

impl GcsProtocol {
    fn bucket_url(&self) -> String {
        format!(
            "{}/storage/v1/b/{}",
            self.endpoint,
            encode_query(&self.bucket)
        )
    }

    /// The URL of an object's resource (its name as one path segment).
    fn object_url(&self, name: &str) -> String {
        format!("{}/o/{}", self.bucket_url(), encode_query(name))
    }

    fn upload_url(&self, kind: &str) -> String {
        format!(
            "{}/upload/storage/v1/b/{}/o?uploadType={kind}",
            self.endpoint,
            encode_query(&self.bucket)
        )
    }

    fn list_url(&self, prefix: &str, delimiter: bool, max: u32, token: Option<&str>) -> String {
        let mut url = format!(
            "{}/o?prefix={}&maxResults={max}&fields={}",
            self.bucket_url(),
            encode_query(prefix),
            encode_query("items(name),prefixes,nextPageToken")
        );
        if delimiter {
            url.push_str("&delimiter=%2F");
        }
        if let Some(token) = token {
            url.push_str("&pageToken=");
            url.push_str(&encode_query(token));
        }
        url
    }

    /// The URL of the listing page `request` asks for.
    fn page_url(&self, request: &PageRequest<'_>) -> String {
        self.list_url(
            request.prefix,
            request.delimiter,
            request.max,
            request.token,
        )
    }

    /// Send a request with the store's credentials; a 401 to a token that
    /// can be renewed is tried once more with a new one.
    fn send(
        &self,
        what: &str,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        validate: Validator<'_>,
    ) -> Result<Response> {
        self.send_into(what, method, url, headers, body, validate, Vec::new())
    }

    /// [`GcsProtocol::send`] reading the answer's body into `spare`
    /// ([`crate::storage::http::Client::send_into`]).
    #[allow(clippy::too_many_arguments)]
    fn send_into(
        &self,
        what: &str,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        validate: Validator<'_>,
        mut spare: Vec<u8>,
    ) -> Result<Response> {
        let mut renewed = false;
        loop {
            let response = self.client.send_into(
                what,
                &mut || {
                    let mut all: Vec<(String, String)> = headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.to_string()))
                        .collect();
                    if let Some(value) = self.auth.authorization(&self.client)? {
                        all.push(("Authorization".into(), value.expose().to_string()));
                    }
                    Ok(Request {
                        method,
                        url: url.to_string(),
                        headers: all,
                        body,
                    })
                },
                validate,
                std::mem::take(&mut spare),
            )?;
            if response.status == 401 && !renewed && self.auth.refreshable() {
                self.auth.invalidate();
                renewed = true;
                spare = response.body;
                continue;
            }
            return Ok(response);
        }
    }

    /// The URL of the metadata of the object `name` that [`GcsProtocol::stat`]
    /// asks for (its size and generation).
    fn metadata_url(&self, name: &str) -> String {
        format!(
            "{}?fields={}",
            self.object_url(name),
            encode_query("size,generation")
        )
    }

    /// Upload `body` to the object `name` as a multipart upload with
    /// `ifGenerationMatch=generation`; whether the condition held.
    fn upload_if(&self, name: &str, body: &[u8], generation: &str) -> Result<bool> {
        let what = self.describe_name(name);
        let metadata = serde_json::json!({ "name": name }).to_string();
        let mut boundary = String::new();
        for _ in 0..8 {
            boundary = format!(
                "libn5-{:016x}{:016x}",
                (super::store::random_fraction() * 2f64.powi(53)) as u64,
                (super::store::random_fraction() * 2f64.powi(53)) as u64
            );
            if !contains(body, boundary.as_bytes()) {
                break;
            }
        }
        if contains(body, boundary.as_bytes()) {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("{what}: no multipart boundary found"),
            ));
        }
        let mut multipart = Vec::with_capacity(body.len() + metadata.len() + 256);
        multipart.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n\
                 --{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        multipart.extend_from_slice(body);
        multipart.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let url = format!(
            "{}&ifGenerationMatch={generation}&fields=generation",
            self.upload_url("multipart")
        );
        let content_type = format!("multipart/related; boundary={boundary}");
        let r = self.send(
            &what,
            Method::Post,
            &url,
            &[("Content-Type", &content_type)],
            &multipart,
            &|_| Ok(()),
        )?;
        match r.status {
            200 | 201 => Ok(true),
            412 => Ok(false),
            _ => Err(self.failure(Method::Post, &what, &r)),
        }
    }
}

/// The endpoint and whether it is an emulator's (`STORAGE_EMULATOR_HOST`).
fn endpoint(options: &GcsOptions, env: &dyn Fn(&str) -> Option<String>) -> Result<(String, bool)> {
    if let Some(e) = &options.endpoint {
        return Ok((parse_endpoint(e, "options gcs.endpoint")?, false));
    }
    match env("STORAGE_EMULATOR_HOST").filter(|h| !h.trim().is_empty()) {
        Some(host) => Ok((parse_endpoint(&host, "STORAGE_EMULATOR_HOST")?, true)),
        None => Ok((DEFAULT_ENDPOINT.to_string(), false)),
    }
}

/// An endpoint as a base URL: `host:port` means `http://host:port`.
fn parse_endpoint(text: &str, what: &str) -> Result<String> {
    let text = text.trim();
    let (scheme, rest) = text.split_once("://").unwrap_or(("http", text));
    let rest = rest.trim_end_matches('/');
    let authority = rest.split('/').next().unwrap_or("");
    let valid = matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
        && !authority.is_empty()
        && !authority.contains('@')
        && !rest.contains(['?', '#'])
        && !rest.chars().any(char::is_whitespace);
    if valid {
        Ok(format!("{scheme}://{rest}"))
    } else {
        Err(Error::invalid_argument(format!(
            "{what}: '{}' is not an endpoint (http://host:port, https://host, or host:port)",
            super::http::redact_url(text)
        )))
    }
}

/// Whether a 404 says that the bucket, not the object, is missing.
fn bucket_missing(r: &Response) -> bool {
    let text = String::from_utf8_lossy(&r.body[..r.body.len().min(4096)]).to_ascii_lowercase();
    text.contains("bucket does not exist")
}

fn malformed(what: &str, url: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("{what}: malformed answer from {url}: {why}"),
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A number GCS sends as a decimal string (int64 fields), or as a number.
fn json_u64(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        other => other.as_u64(),
    }
}

/// Parse an objects listing page (`items[].name`, `prefixes`,
/// `nextPageToken`); the error says what is wrong. Bounded: at most
/// [`MAX_PAGE_ENTRIES`] entries, nothing allocated by a number it holds.
pub fn parse_page(body: &[u8]) -> std::result::Result<Page, String> {
    let json: Value = serde_json::from_slice(body).map_err(|e| format!("not valid JSON ({e})"))?;
    let object = json.as_object().ok_or("not a JSON object")?;
    let array = |field: &str| -> std::result::Result<&[Value], String> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) if a.len() <= MAX_PAGE_ENTRIES => Ok(a),
            Some(Value::Array(a)) => Err(format!(
                "{} {field} in one page (at most {MAX_PAGE_ENTRIES} are accepted)",
                a.len()
            )),
            Some(_) => Err(format!("{field} is not an array")),
        }
    };
    let names = array("items")?
        .iter()
        .map(|item| {
            item.get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| "an item without a name".to_string())
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let prefixes = array("prefixes")?
        .iter()
        .map(|p| {
            p.as_str()
                .map(str::to_string)
                .ok_or_else(|| "a prefix that is not a string".to_string())
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let next = match object.get("nextPageToken") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if t.is_empty() => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(_) => return Err("nextPageToken is not a string".into()),
    };
    Ok(Page {
        names,
        prefixes,
        next,
    })
}

impl ObjectProtocol for GcsProtocol {
    const SCHEME: &'static str = "gs";
    const STAT: Method = Method::Get;
    const MAX_PAGES: usize = 1 << 20;
    const TOKEN: &'static str = "nextPageToken";
    const DELETE_TELLS: bool = true;
    const TOKENS_SURVIVE_DELETION: bool = true;
    const MARKERS: Markers = Markers::FromBucketRoot;

    fn bucket(&self) -> &str {
        &self.bucket
    }

    fn get(
        &self,
        name: &str,
        headers: &[(&str, &str)],
        validate: Validator<'_>,
        spare: Vec<u8>,
    ) -> Result<Response> {
        let url = format!("{}?alt=media", self.object_url(name));
        self.send_into(
            &self.describe_name(name),
            Method::Get,
            &url,
            headers,
            b"",
            validate,
            spare,
        )
    }

    fn version(&self, r: &Response) -> Option<Version> {
        r.header("x-goog-generation")
            .map(str::trim)
            .filter(|g| !g.is_empty() && g.len() <= 20 && g.bytes().all(|b| b.is_ascii_digit()))
            .map(|g| Version(g.to_string()))
    }

    fn unversioned(&self, name: &str) -> Error {
        malformed(
            &self.describe_name(name),
            &format!("{}?alt=media", self.object_url(name)),
            "no generation (x-goog-generation) with the object",
        )
    }

    fn stat(&self, name: &str) -> Result<Response> {
        let what = self.describe_name(name);
        self.send(
            &what,
            Method::Get,
            &self.metadata_url(name),
            &[],
            b"",
            &|_| Ok(()),
        )
    }

    fn stat_size(&self, name: &str, r: &Response) -> Result<u64> {
        let metadata: Value = serde_json::from_slice(&r.body).map_err(|e| {
            malformed(
                &self.describe_name(name),
                &self.metadata_url(name),
                &format!("not valid JSON ({e})"),
            )
        })?;
        json_u64(metadata.get("size")).ok_or_else(|| {
            malformed(
                &self.describe_name(name),
                &self.object_url(name),
                "no size in the object's metadata",
            )
        })
    }

    fn put(&self, name: &str, body: &[u8]) -> Result<()> {
        let url = format!(
            "{}&name={}&fields=generation",
            self.upload_url("media"),
            encode_query(name)
        );
        let what = self.describe_name(name);
        let r = self.send(
            &what,
            Method::Post,
            &url,
            &[("Content-Type", "application/octet-stream")],
            body,
            &|_| Ok(()),
        )?;
        match r.status {
            200 | 201 => Ok(()),
            _ => Err(self.failure(Method::Post, &what, &r)),
        }
    }

    fn put_if(&self, name: &str, body: &[u8], condition: &Precondition) -> Result<bool> {
        let generation = match condition {
            Precondition::Absent => "0",
            Precondition::Matches(Version(g))
                if !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()) =>
            {
                g
            }
            Precondition::Matches(Version(g)) => {
                return Err(Error::invalid_argument(format!(
                    "{}: '{g}' is not a GCS generation",
                    self.describe_name(name)
                )))
            }
        };
        self.upload_if(name, body, generation)
    }

    fn delete(&self, name: &str) -> Result<Response> {
        self.send(
            &self.describe_name(name),
            Method::Delete,
            &self.object_url(name),
            &[],
            b"",
            &|_| Ok(()),
        )
    }

    fn page(&self, what: &str, request: &PageRequest<'_>) -> Result<Page> {
        let url = self.page_url(request);
        let r = self.send(what, Method::Get, &url, &[], b"", &|_| Ok(()))?;
        if r.status != 200 {
            return Err(self.failure(Method::Get, what, &r));
        }
        parse_page(&r.body).map_err(|why| malformed(what, &url, &why))
    }

    fn malformed_page(&self, what: &str, request: &PageRequest<'_>, why: &str) -> Error {
        malformed(what, &self.page_url(request), why)
    }

    fn keeps_directories(&self) -> bool {
        false
    }

    fn is_anonymous(&self) -> bool {
        self.auth.is_anonymous()
    }

    fn bucket_missing(&self, r: &Response) -> bool {
        bucket_missing(r)
    }

    /// The error of an answer that is neither success nor "missing".
    fn failure(&self, method: Method, what: &str, r: &Response) -> Error {
        let status = status_text(r);
        let method = method.as_str();
        match r.status {
            401 | 403 => Error::new(
                ErrorKind::AccessDenied,
                format!(
                    "{method} {what}: {status}: access denied to the credentials of {}",
                    self.auth.source()
                ),
            ),
            404 => Error::new(
                ErrorKind::NotFound,
                format!(
                    "{method} {what}: {status}: the bucket '{}' does not exist at {}",
                    self.bucket, self.endpoint
                ),
            ),
            _ => Error::new(
                ErrorKind::Io,
                format!("{method} {what}: unexpected answer {status}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests;
