//! Plain HTTP(S) as a read-only [`Store`]: any static web server or
//! public bucket website that answers GET, range GET and HEAD. Keys become
//! URLs below the location (`https://host/data/vol.n5` + `s0/0/0`), each
//! path component percent-encoded; the `http.headers` option (for example
//! an `Authorization` header) goes with every request to the location's own
//! origin.
//!
//! What the server says: 200 (and 206 for a range, whose `Content-Range`
//! must be the range asked for) is data; 404 and 410 are missing keys, and
//! so is a 403 below the root when no headers were configured (buckets
//! that allow reading objects but not listing answer so); other 401 and
//! 403 answers are [`ErrorKind::AccessDenied`]. Redirects are followed, at
//! most [`MAX_REDIRECTS`] of them, never in a loop and never from `https`
//! down to plain `http`; configured headers are not sent to another
//! origin. A server that does not answer HEAD is asked for one byte
//! instead.
//!
//! HTTP cannot list or write: [`Store::list`] is [`ErrorKind::Unsupported`]
//! and writes are [`ErrorKind::ReadOnly`]. A directory exists when its
//! `attributes.json` does; the root always does.

use super::http::{
    encode_key, parse_content_range, redact_url, status_text, Client, Method, Request, Response,
    Validator,
};
use super::http_reads::HttpReads;
use super::location::WebLocation;
use super::options::{Secret, StorageOptions};
use super::store::{ByteRange, Capabilities, Listing, Precondition, Store, UpdateFn, Version};
use crate::error::{Error, ErrorKind, Result};

/// How many redirects one request follows.
pub const MAX_REDIRECTS: usize = 5;

/// A container on a plain HTTP(S) server, read-only.
#[derive(Debug)]
pub struct WebStore {
    display: String,
    origin: String,
    prefix: String,
    headers: Vec<(String, Secret)>,
    client: Client,
}

impl WebStore {
    /// The store of `location` (`display` names it in messages) with the
    /// `http.headers`, retry and concurrency settings of `options`. Sends
    /// nothing.
    pub fn new(location: &WebLocation, display: &str, options: &StorageOptions) -> Result<Self> {
        Ok(WebStore {
            display: display.to_string(),
            origin: location.origin.clone(),
            prefix: location.prefix.clone(),
            headers: options.http.headers.clone(),
            client: Client::new(options.retry, options.io_concurrency_for(true))?,
        })
    }

    /// The URL of `key`.
    fn url(&self, key: &str) -> String {
        let path = crate::path::join(&self.prefix, key);
        if path.is_empty() {
            format!("{}/", self.origin)
        } else {
            format!("{}/{}", self.origin, encode_key(&path))
        }
    }

    /// Send `method` for `key` with `extra` headers, following redirects;
    /// the final answer (anything but a redirect).
    fn fetch(
        &self,
        method: Method,
        key: &str,
        extra: &[(&str, &str)],
        validate: Validator<'_>,
    ) -> Result<Response> {
        self.fetch_into(method, key, extra, validate, Vec::new())
    }

    /// [`WebStore::fetch`] reading the final answer's body into `spare`
    /// ([`crate::storage::http::Client::send_into`]).
    fn fetch_into(
        &self,
        method: Method,
        key: &str,
        extra: &[(&str, &str)],
        validate: Validator<'_>,
        mut spare: Vec<u8>,
    ) -> Result<Response> {
        let mut url = self.url(key);
        let mut visited = vec![url.clone()];
        loop {
            let own_origin = origin_of(&url) == Some(self.origin.as_str());
            let shown = redact_url(&url);
            let mut build = || {
                let mut headers: Vec<(String, String)> = extra
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect();
                if own_origin {
                    headers.extend(
                        self.headers
                            .iter()
                            .map(|(n, v)| (n.clone(), v.expose().to_string())),
                    );
                }
                Ok(Request {
                    method,
                    url: url.clone(),
                    headers,
                    body: b"",
                })
            };
            let r =
                self.client
                    .send_into(&shown, &mut build, validate, std::mem::take(&mut spare))?;
            if !matches!(r.status, 301 | 302 | 303 | 307 | 308) {
                return Ok(r);
            }
            let next = next_hop(&url, r.header("location"), &visited)
                .map_err(|why| redirect_error(method, &shown, &r, why))?;
            visited.push(next.clone());
            url = next;
            spare = r.body;
        }
    }

    /// What credentials the requests carry, for messages: header names,
    /// never their values.
    fn credentials_source(&self) -> String {
        if self.headers.is_empty() {
            "none (anonymous; set http.headers, e.g. Authorization)".to_string()
        } else {
            let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
            format!("the http.headers option ({})", names.join(", "))
        }
    }

    /// The size of `key` from a one-byte range GET, for servers that do
    /// not answer HEAD with a length.
    fn size_by_range(&self, key: &str) -> Result<Option<u64>> {
        let r = self.fetch(Method::Get, key, &[("range", "bytes=0-0")], &|_| Ok(()))?;
        match r.status {
            200 => Ok(Some(r.body.len() as u64)),
            206 => r
                .header("content-range")
                .and_then(parse_content_range)
                .and_then(|(_, _, total)| total)
                .map(Some)
                .ok_or_else(|| {
                    malformed(
                        &self.describe(key),
                        "a range answer without the object's size",
                    )
                }),
            // An empty object has no first byte.
            416 => Ok(Some(0)),
            _ => {
                self.missing(Method::Get, key, &r)?;
                Ok(None)
            }
        }
    }

    fn unsupported_listing(&self, dir: &str) -> Error {
        Error::new(
            ErrorKind::Unsupported,
            format!(
                "{}: plain HTTP(S) cannot list directories (open the data through s3:// or \
                 gs:// to list it)",
                self.describe(dir)
            ),
        )
    }
}

/// The scheme and authority of `url`: `https://host:port`.
fn origin_of(url: &str) -> Option<&str> {
    let scheme_end = url.find("://")? + 3;
    let end = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| scheme_end + i);
    Some(&url[..end])
}

/// Where a redirect from `url` with the `Location` header `location` goes,
/// as an absolute URL.
fn redirect_target(url: &str, location: Option<&str>) -> std::result::Result<String, String> {
    let location = location
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .ok_or("the redirect has no Location")?;
    if location.len() > 8192 || location.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("the redirect's Location is not a URL".into());
    }
    let location = location.split('#').next().unwrap_or_default();
    let lower = location.to_ascii_lowercase();
    let origin = origin_of(url).ok_or("the request URL has no origin")?;
    let target = if lower.starts_with("http://") {
        format!("http://{}", &location[7..])
    } else if lower.starts_with("https://") {
        format!("https://{}", &location[8..])
    } else if location.starts_with("//") {
        format!("{}:{location}", &origin[..origin.find(':').unwrap_or(0)])
    } else if location.contains("://") {
        return Err(format!(
            "the redirect goes to '{}', which is not http or https",
            redact_url(location)
        ));
    } else if location.starts_with('/') {
        format!("{origin}{location}")
    } else {
        let path_end = url.find(['?', '#']).unwrap_or(url.len());
        let base = &url[..path_end];
        let dir_end = base
            .rfind('/')
            .filter(|&i| i >= origin.len())
            .map_or(base.len(), |i| i + 1);
        let sep = if dir_end == base.len() && !base.ends_with('/') {
            "/"
        } else {
            ""
        };
        format!("{}{sep}{location}", &base[..dir_end])
    };
    // A location with credentials in it would put them into messages.
    let authority = origin_of(&target).unwrap_or_default();
    if authority.contains('@') {
        return Err("the redirect's Location holds credentials".into());
    }
    Ok(target)
}

/// Where the redirect from `url` (the last of `visited`) with the
/// `Location` header `location` goes, or why it is not followed: a target
/// that is no http(s) URL, a step from https down to http, a loop, or more
/// than [`MAX_REDIRECTS`] redirects.
fn next_hop(
    url: &str,
    location: Option<&str>,
    visited: &[String],
) -> std::result::Result<String, String> {
    let next = redirect_target(url, location)?;
    if url.starts_with("https://") && next.starts_with("http://") {
        return Err(format!(
            "refused to follow it from https down to plain http ({})",
            redact_url(&next)
        ));
    }
    if visited.contains(&next) {
        return Err(format!("a redirect loop back to {}", redact_url(&next)));
    }
    if visited.len() > MAX_REDIRECTS {
        return Err(format!("more than {MAX_REDIRECTS} redirects"));
    }
    Ok(next)
}

fn redirect_error(method: Method, shown: &str, r: &Response, why: String) -> Error {
    Error::new(
        ErrorKind::Io,
        format!(
            "{} {shown}: HTTP {} redirect: {why}",
            method.as_str(),
            r.status
        ),
    )
}

fn malformed(what: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("{what}: the server's answer is malformed: {why}"),
    )
}

/// An [`ErrorKind::ReadOnly`] error for a write to `store`, which cannot be
/// written (plain HTTP).
fn read_only(store: &dyn Store, key: &str) -> Error {
    Error::new(
        ErrorKind::ReadOnly,
        format!(
            "{}: plain HTTP(S) locations are read-only (open S3 or GCS data through s3:// or gs://)",
            store.describe(key)
        ),
    )
}

impl HttpReads for WebStore {
    fn send_get(
        &self,
        key: &str,
        headers: &[(&str, &str)],
        validate: Validator<'_>,
        spare: Vec<u8>,
    ) -> Result<Response> {
        self.fetch_into(Method::Get, key, headers, validate, spare)
    }

    fn answer_version(&self, r: &Response) -> Option<Version> {
        // The ETag when there is one, else the content's age (a 206's
        // length is the range's, not the object's).
        r.header("etag")
            .or_else(|| r.header("last-modified"))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| Version(v.to_string()))
    }

    /// 404 and 410 mean that the object is missing, and so does a 403 to
    /// a read of a key when no headers were configured.
    fn missing(&self, method: Method, key: &str, r: &Response) -> Result<()> {
        let missing = match r.status {
            404 | 410 => true,
            403 => self.headers.is_empty() && !key.is_empty(),
            _ => false,
        };
        if missing {
            return Ok(());
        }
        let what = self.describe(key);
        let status = status_text(r);
        let method = method.as_str();
        Err(match r.status {
            401 | 403 => Error::new(
                ErrorKind::AccessDenied,
                format!(
                    "{method} {what}: {status}: access denied; credentials: {}",
                    self.credentials_source()
                ),
            ),
            _ => Error::new(
                ErrorKind::Io,
                format!("{method} {what}: unexpected answer {status}"),
            ),
        })
    }
}

impl Store for WebStore {
    fn location(&self) -> &str {
        &self.display
    }

    fn describe(&self, key: &str) -> String {
        redact_url(&self.url(key))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            writable: false,
            list: false,
            remote: true,
            exact_versions: false,
        }
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        self.read_into(key, buf)
    }

    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        self.read_range_into(key, range, buf)
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        let Some(r) = self.get_whole(key, Vec::new())? else {
            return Ok(None);
        };
        // The ETag when there is one, else what the server says of the
        // content's age and size.
        let version = match r.header("etag") {
            Some(etag) => etag.trim().to_string(),
            None => format!(
                "{}/{}",
                r.header("last-modified").unwrap_or_default().trim(),
                r.body.len()
            ),
        };
        Ok(Some((r.body, Version(version))))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        if key.is_empty() {
            return Ok(None);
        }
        let r = self.fetch(Method::Head, key, &[], &|_| Ok(()))?;
        match r.status {
            200 => match r
                .header("content-length")
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                Some(n) => Ok(Some(n)),
                None => self.size_by_range(key),
            },
            // Servers that do not implement HEAD.
            405 | 501 => self.size_by_range(key),
            _ => {
                self.missing(Method::Head, key, &r)?;
                Ok(None)
            }
        }
    }

    fn put(&self, key: &str, _parts: &[&[u8]]) -> Result<()> {
        Err(read_only(self, key))
    }

    fn put_if(&self, key: &str, _data: &[u8], _condition: &Precondition) -> Result<bool> {
        Err(read_only(self, key))
    }

    fn delete(&self, key: &str) -> Result<bool> {
        Err(read_only(self, key))
    }

    fn delete_dir(&self, dir: &str) -> Result<bool> {
        Err(read_only(self, dir))
    }

    fn list(&self, dir: &str) -> Result<Option<Listing>> {
        Err(self.unsupported_listing(dir))
    }

    fn list_keys(&self, dir: &str) -> Result<Vec<String>> {
        Err(self.unsupported_listing(dir))
    }

    fn is_dir(&self, dir: &str) -> Result<bool> {
        if dir.is_empty() {
            return Ok(true);
        }
        self.exists(&crate::path::join(dir, "attributes.json"))
    }

    fn create_dir(&self, dir: &str) -> Result<()> {
        Err(read_only(self, dir))
    }

    fn update(&self, key: &str, _f: &mut UpdateFn<'_>) -> Result<()> {
        Err(read_only(self, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(url: &str) -> WebStore {
        let location = super::super::location::Location::parse(url).unwrap();
        let super::super::location::Backend::Web(web) = location.backend else {
            panic!("{url} is not a web location");
        };
        WebStore::new(&web, &location.display, &StorageOptions::default()).unwrap()
    }

    #[test]
    fn keys_become_encoded_urls() {
        let s = store("https://example.org/data/my%20vol.n5");
        assert_eq!(
            s.url("s0/0/1"),
            "https://example.org/data/my%20vol.n5/s0/0/1"
        );
        assert_eq!(s.url(""), "https://example.org/data/my%20vol.n5");
        assert_eq!(
            s.describe("a b/attributes.json"),
            "https://example.org/data/my%20vol.n5/a%20b/attributes.json"
        );
        let root = store("http://127.0.0.1:8080");
        assert_eq!(
            root.url("attributes.json"),
            "http://127.0.0.1:8080/attributes.json"
        );
        assert_eq!(root.url(""), "http://127.0.0.1:8080/");
    }

    #[test]
    fn it_can_neither_write_nor_list() {
        let s = store("https://example.org/v.n5");
        let caps = s.capabilities();
        assert!(!caps.writable && !caps.list && caps.remote);
        assert_eq!(s.put("a", &[b"x"]).unwrap_err().kind(), ErrorKind::ReadOnly);
        assert_eq!(s.delete("a").unwrap_err().kind(), ErrorKind::ReadOnly);
        assert_eq!(s.create_dir("a").unwrap_err().kind(), ErrorKind::ReadOnly);
        assert_eq!(
            s.put_if("a", b"x", &Precondition::Absent)
                .unwrap_err()
                .kind(),
            ErrorKind::ReadOnly
        );
        let e = s.list("g").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("https://example.org/v.n5/g"), "{e}");
        assert_eq!(s.list_keys("").unwrap_err().kind(), ErrorKind::Unsupported);
        assert!(s.is_dir("").unwrap());
    }

    #[test]
    fn redirect_targets() {
        let from = "https://a.org/x/y/attributes.json";
        let t = |l: &str| redirect_target(from, Some(l));
        assert_eq!(t("https://b.org/z").unwrap(), "https://b.org/z");
        assert_eq!(t("//c.org/z").unwrap(), "https://c.org/z");
        assert_eq!(t("/root/z").unwrap(), "https://a.org/root/z");
        assert_eq!(t("other.json").unwrap(), "https://a.org/x/y/other.json");
        assert_eq!(
            t("other.json#frag").unwrap(),
            "https://a.org/x/y/other.json"
        );
        assert_eq!(
            redirect_target("http://h:1", Some("a")).unwrap(),
            "http://h:1/a"
        );
        assert!(t("").is_err());
        assert!(redirect_target(from, None).is_err());
        assert!(t("ftp://b.org/z").is_err());
        assert_eq!(t("HTTP://b.org/Z").unwrap(), "http://b.org/Z");
        assert!(t("https://user:pw@b.org/z").is_err());
        assert!(t("https://b.org/a b").is_err());
        assert_eq!(origin_of("https://h:8443/a?b"), Some("https://h:8443"));
        let visited =
            |n: usize| -> Vec<String> { (0..n).map(|i| format!("https://a.org/{i}")).collect() };
        assert_eq!(
            next_hop("https://a.org/0", Some("/1"), &visited(1)).unwrap(),
            "https://a.org/1"
        );
        let e = next_hop("https://a.org/0", Some("http://a.org/1"), &visited(1)).unwrap_err();
        assert!(e.contains("https down to plain http"), "{e}");
        assert_eq!(
            next_hop("http://a.org/0", Some("https://a.org/1"), &[]).unwrap(),
            "https://a.org/1"
        );
        assert!(next_hop("https://a.org/1", Some("/0"), &visited(2))
            .unwrap_err()
            .contains("loop"));
        let e = next_hop("https://a.org/5", Some("/x"), &visited(MAX_REDIRECTS + 1)).unwrap_err();
        assert!(e.contains("more than 5 redirects"), "{e}");
        assert_eq!(origin_of("http://h"), Some("http://h"));
    }
}
