//! Google Cloud Storage as a [`Store`], over the JSON API (the API real
//! GCS and its emulators share): objects are read with `alt=media` (ranges
//! with `Range`), written with simple uploads (`uploadType=media`, atomic)
//! and, conditionally, with multipart uploads carrying `ifGenerationMatch`
//! (412: the condition failed); an object's version is its generation.
//! Directories are `/`-delimited listings with page-token continuation,
//! plus the empty marker objects (`a/`, `a/b/`) n5-google-cloud writes.
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

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;

use self::auth::Auth;
use super::http::{
    check_range, encode_query, range_body, status_text, Client, Method, Request, Response,
    Validator,
};
use super::listing;
use super::location::GcsLocation;
use super::options::{GcsOptions, StorageOptions};
use super::store::{ByteRange, Capabilities, Listing, Precondition, Store, Version};
use crate::error::{Error, ErrorKind, Result};
use crate::path::join;

/// The endpoint of Google Cloud Storage.
pub const DEFAULT_ENDPOINT: &str = "https://storage.googleapis.com";

/// Objects asked for per listing page (the most GCS sends).
const PAGE_SIZE: u32 = 1000;

/// The most entries (objects and prefixes) one listing page may hold; GCS
/// sends at most `PAGE_SIZE` (1000), emulators may send every prefix at once.
pub const MAX_PAGE_ENTRIES: usize = 100_000;

/// The most objects one `delete_dir` deletes (it holds one page at a time).
const MAX_DELETED: usize = 1 << 30;

/// The most pages one listing walks.
const MAX_PAGES: usize = 1 << 20;

/// A container root in a Google Cloud Storage bucket.
#[derive(Debug)]
pub struct GcsStore {
    bucket: String,
    /// The object name prefix of the root, no slash at either end.
    prefix: String,
    display: String,
    /// Scheme, host and port (and any path), no trailing slash.
    endpoint: String,
    client: Client,
    auth: Auth,
    io_concurrency: usize,
}

/// One page of an objects listing.
#[derive(Debug, Default, PartialEq)]
pub struct Page {
    /// The object names (`items[].name`).
    pub names: Vec<String>,
    /// The prefixes of a delimited listing.
    pub prefixes: Vec<String>,
    /// The token of the next page, `None` on the last.
    pub next: Option<String>,
}

impl GcsStore {
    /// The store of `location` (`display` names it in messages), with the
    /// endpoint and credentials of `options` and the environment. Reads a
    /// credentials file if one is named; sends nothing.
    pub fn new(location: &GcsLocation, display: &str, options: &StorageOptions) -> Result<Self> {
        GcsStore::with_env(location, display, options, &|name| std::env::var(name).ok())
    }

    fn with_env(
        location: &GcsLocation,
        display: &str,
        options: &StorageOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let (endpoint, emulator) = endpoint(&options.gcs, env)?;
        let auth = Auth::resolve(&options.gcs, emulator, env)?;
        let io_concurrency = options.io_concurrency_for(true);
        Ok(GcsStore {
            bucket: location.bucket.clone(),
            prefix: location.prefix.trim_matches('/').to_string(),
            display: display.to_string(),
            endpoint,
            client: Client::new(options.retry, io_concurrency)?,
            auth,
            io_concurrency,
        })
    }

    /// The object name of `key`.
    fn name(&self, key: &str) -> String {
        join(&self.prefix, key)
    }

    /// The object name prefix of the directory `dir`: `""` for the
    /// bucket's root, else its name and a slash.
    fn dir_prefix(&self, dir: &str) -> String {
        let name = self.name(dir);
        if name.is_empty() {
            name
        } else {
            name + "/"
        }
    }

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

    /// [`GcsStore::send`] reading the answer's body into `spare`
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

    /// `Ok` when a failed read of `key` means that the object is missing
    /// (404 from an existing bucket; 403 to an anonymous read), else the
    /// error.
    fn missing(&self, method: Method, key: &str, r: &Response) -> Result<()> {
        let missing = match r.status {
            404 => !bucket_missing(r),
            403 => self.auth.is_anonymous() && !key.is_empty(),
            _ => false,
        };
        if missing {
            Ok(())
        } else {
            Err(self.failure(method, &self.describe(key), r))
        }
    }

    /// The object metadata of `key` (`fields` selects what GCS sends),
    /// `None` when it is missing.
    fn metadata(&self, key: &str, fields: &str) -> Result<Option<Value>> {
        if key.is_empty() {
            return Ok(None);
        }
        let what = self.describe(key);
        let url = format!(
            "{}?fields={}",
            self.object_url(&self.name(key)),
            encode_query(fields)
        );
        let r = self.send(&what, Method::Get, &url, &[], b"", &|_| Ok(()))?;
        if r.status != 200 {
            self.missing(Method::Get, key, &r)?;
            return Ok(None);
        }
        serde_json::from_slice(&r.body)
            .map(Some)
            .map_err(|e| malformed(&what, &url, &format!("not valid JSON ({e})")))
    }

    /// `gs://bucket/name`, how the object `name` is named in messages.
    fn describe_name(&self, name: &str) -> String {
        format!("gs://{}/{name}", self.bucket)
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

    /// Walk the pages of the listing of `prefix` (`/`-delimited or flat),
    /// `max` objects a page, handing each to `visit` until it returns
    /// `false` or the pages end.
    fn walk(
        &self,
        what: &str,
        prefix: &str,
        delimiter: bool,
        max: u32,
        visit: &mut dyn FnMut(Page) -> Result<bool>,
    ) -> Result<()> {
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let url = self.list_url(prefix, delimiter, max, token.as_deref());
            let r = self.send(what, Method::Get, &url, &[], b"", &|_| Ok(()))?;
            if r.status != 200 {
                return Err(self.failure(Method::Get, what, &r));
            }
            let page = parse_page(&r.body).map_err(|why| malformed(what, &url, &why))?;
            let next = page.next.clone();
            if !visit(page)? {
                return Ok(());
            }
            match next {
                None => return Ok(()),
                Some(t) if token.as_deref() == Some(t.as_str()) => {
                    return Err(malformed(what, &url, "the same nextPageToken came back"))
                }
                Some(t) => token = Some(t),
            }
        }
        Err(Error::new(
            ErrorKind::Io,
            format!("{what}: the listing goes on beyond {MAX_PAGES} pages"),
        ))
    }

    /// Delete the objects `names`, `io_concurrency` at a time; objects
    /// already gone are fine.
    fn delete_names(&self, names: &[String]) -> Result<()> {
        let delete = |name: &String| -> Result<()> {
            let what = self.describe_name(name);
            let r = self.send(
                &what,
                Method::Delete,
                &self.object_url(name),
                &[],
                b"",
                &|_| Ok(()),
            )?;
            match r.status {
                200 | 204 => Ok(()),
                404 if !bucket_missing(&r) => Ok(()),
                _ => Err(self.failure(Method::Delete, &what, &r)),
            }
        };
        let threads = self.io_concurrency.min(names.len());
        if threads <= 1 {
            return names.iter().try_for_each(delete);
        }
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| -> Result<()> {
                        while !failed.load(Ordering::Relaxed) {
                            let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) else {
                                break;
                            };
                            delete(name).inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })
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

impl Store for GcsStore {
    fn location(&self) -> &str {
        &self.display
    }

    fn describe(&self, key: &str) -> String {
        self.describe_name(&self.name(key))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            writable: true,
            list: true,
            remote: true,
            exact_versions: true,
        }
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        if key.is_empty() {
            return Ok(false);
        }
        let url = format!("{}?alt=media", self.object_url(&self.name(key)));
        let r = self.send_into(
            &self.describe(key),
            Method::Get,
            &url,
            &[],
            b"",
            &|_| Ok(()),
            std::mem::take(buf),
        )?;
        if r.status != 200 {
            self.missing(Method::Get, key, &r)?;
            return Ok(false);
        }
        *buf = r.body;
        Ok(true)
    }

    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        if key.is_empty() {
            return Ok(None);
        }
        if matches!(range, ByteRange::Span { len: 0, .. } | ByteRange::Suffix(0)) {
            buf.clear();
            return Ok(self.size(key)?.map(|_| None));
        }
        let url = format!("{}?alt=media", self.object_url(&self.name(key)));
        let header = format!("bytes={range}");
        let validate = |r: &Response| check_range(range, r);
        let r = self.send_into(
            &self.describe(key),
            Method::Get,
            &url,
            &[("Range", &header)],
            b"",
            &validate,
            std::mem::take(buf),
        )?;
        let version = r
            .header("x-goog-generation")
            .map(str::trim)
            .filter(|g| !g.is_empty() && g.len() <= 20 && g.bytes().all(|b| b.is_ascii_digit()))
            .map(|g| Version(g.to_string()));
        match range_body(range, r) {
            Ok(body) => {
                *buf = body;
                Ok(Some(version))
            }
            Err(r) => {
                self.missing(Method::Get, key, &r)?;
                Ok(None)
            }
        }
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        if key.is_empty() {
            return Ok(None);
        }
        // The generation comes with the bytes (x-goog-generation), so the
        // two always belong together.
        let what = self.describe(key);
        let url = format!("{}?alt=media", self.object_url(&self.name(key)));
        let r = self.send(&what, Method::Get, &url, &[], b"", &|_| Ok(()))?;
        if r.status != 200 {
            self.missing(Method::Get, key, &r)?;
            return Ok(None);
        }
        let generation = r
            .header("x-goog-generation")
            .map(str::trim)
            .filter(|g| !g.is_empty() && g.len() <= 20 && g.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                malformed(
                    &what,
                    &url,
                    "no generation (x-goog-generation) with the object",
                )
            })?
            .to_string();
        Ok(Some((r.body, Version(generation))))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        let Some(metadata) = self.metadata(key, "size,generation")? else {
            return Ok(None);
        };
        json_u64(metadata.get("size")).map(Some).ok_or_else(|| {
            malformed(
                &self.describe(key),
                &self.object_url(&self.name(key)),
                "no size in the object's metadata",
            )
        })
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
        if key.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{}: the container root is not an object",
                self.describe(key)
            )));
        }
        let joined;
        let body: &[u8] = match parts {
            [one] => one,
            _ => {
                joined = parts.concat();
                &joined
            }
        };
        let url = format!(
            "{}&name={}&fields=generation",
            self.upload_url("media"),
            encode_query(&self.name(key))
        );
        let what = self.describe(key);
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

    fn put_if(&self, key: &str, data: &[u8], condition: &Precondition) -> Result<bool> {
        if key.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{}: the container root is not an object",
                self.describe(key)
            )));
        }
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
                    self.describe(key)
                )))
            }
        };
        self.upload_if(&self.name(key), data, generation)
    }

    fn delete(&self, key: &str) -> Result<bool> {
        if key.is_empty() {
            return Ok(false);
        }
        let what = self.describe(key);
        let r = self.send(
            &what,
            Method::Delete,
            &self.object_url(&self.name(key)),
            &[],
            b"",
            &|_| Ok(()),
        )?;
        match r.status {
            200 | 204 => Ok(true),
            404 if !bucket_missing(&r) => Ok(false),
            _ => Err(self.failure(Method::Delete, &what, &r)),
        }
    }

    fn delete_dir(&self, dir: &str) -> Result<bool> {
        let prefix = self.dir_prefix(dir);
        let what = self.describe_name(&prefix);
        let mut deleted = 0usize;
        self.walk(&what, &prefix, false, PAGE_SIZE, &mut |page| {
            deleted += page.names.len();
            if deleted > MAX_DELETED {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{what}: more than {MAX_DELETED} objects to delete"),
                ));
            }
            // The page token names where the next page starts, so deleting
            // what was listed does not disturb the walk.
            self.delete_names(&page.names)?;
            Ok(true)
        })?;
        Ok(deleted > 0)
    }

    fn list(&self, dir: &str) -> Result<Option<Listing>> {
        let prefix = self.dir_prefix(dir);
        let what = self.describe_name(&prefix);
        let mut level = listing::Level::new(&prefix, &what);
        self.walk(&what, &prefix, true, PAGE_SIZE, &mut |page| {
            level.add(&page.names, &page.prefixes)?;
            Ok(true)
        })?;
        Ok(level.finish())
    }

    fn list_keys(&self, dir: &str) -> Result<Vec<String>> {
        let prefix = self.dir_prefix(dir);
        let what = self.describe_name(&prefix);
        let mut keys = listing::Keys::new(&prefix, &what);
        self.walk(&what, &prefix, false, PAGE_SIZE, &mut |page| {
            keys.add(&page.names)?;
            Ok(true)
        })?;
        Ok(keys.finish())
    }

    fn is_dir(&self, dir: &str) -> Result<bool> {
        let prefix = self.dir_prefix(dir);
        let what = self.describe_name(&prefix);
        // A listing of the bucket's root answers when the bucket exists.
        let mut found = prefix.is_empty();
        self.walk(&what, &prefix, false, 1, &mut |page| {
            found |= !page.names.is_empty() || !page.prefixes.is_empty();
            Ok(!found)
        })?;
        Ok(found)
    }

    fn create_dir(&self, dir: &str) -> Result<()> {
        // The markers of every directory from the bucket's root down, as
        // n5-google-cloud writes them; an existing marker is left alone.
        let name = self.name(dir);
        let mut marker = String::new();
        for component in name.split('/').filter(|c| !c.is_empty()) {
            marker.push_str(component);
            marker.push('/');
            self.upload_if(&marker, b"", "0")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
