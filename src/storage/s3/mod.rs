//! S3 and S3-compatible object stores (AWS, SeaweedFS, MinIO, Ceph RGW):
//! the S3 wire protocol under the bucket layer ([`S3Store`] is a
//! [`BucketStore`], which owns keys, listings, directories and the meaning
//! of "missing"). Objects are read with GET (ranges with `Range`, sizes
//! with HEAD), written with one PUT each (atomic), conditionally with
//! `If-None-Match: *` or `If-Match: <etag>` (412: the condition failed);
//! an object's version is its ETag. Listings are `/`-delimited or flat
//! ListObjectsV2 pages with continuation tokens, which deleting objects
//! invalidates; the directory markers are the empty objects (`a/`, `a/b/`)
//! n5-aws-s3 writes. Requests are signed with SigV4
//! (aws-sigv4; a body goes with its `x-amz-checksum-crc32c`, or its
//! `Content-MD5` with `s3.checksum: "md5"`, which the server checks, and
//! `x-amz-content-sha256: UNSIGNED-PAYLOAD`) unless the
//! credentials are anonymous. Credentials: explicit options, then the
//! environment (keys, then the profile of the shared files), else
//! anonymous (see `credentials.rs`).
//!
//! Addressing: AWS gets virtual-hosted URLs
//! (`https://bucket.s3.REGION.amazonaws.com/key`), or path-style ones
//! (`https://s3.REGION.amazonaws.com/bucket/key`) for the path-style URL
//! forms of a location, `s3.path_style: true`, and buckets whose names are
//! no DNS label (dots break the TLS wildcard certificate). An explicit
//! endpoint (`s3.endpoint`, else `AWS_ENDPOINT_URL_S3`, else
//! `AWS_ENDPOINT_URL`) gets path-style URLs (`endpoint/bucket/key`) unless
//! `s3.path_style: false`.
//!
//! Region: never required. The first guess is `s3.region`, the region of
//! an `https://` location, `AWS_REGION`, `AWS_DEFAULT_REGION`, the
//! profile's `region`, else `us-east-1`; when the server answers that the
//! bucket lives elsewhere (301/307 with `x-amz-bucket-region`, or a 400
//! whose body names the `<Region>`), the store switches to that region (and,
//! on AWS, to its host), keeps it, and sends the request once more.
//!
//! Status codes: 404 is a missing object, or [`ErrorKind::NotFound`] naming
//! the bucket when the bucket is missing (`NoSuchBucket`); a 403 to an
//! anonymous GET or HEAD of a key is a missing object too (public buckets
//! that allow GetObject but not ListBucket answer so); every other 401 and
//! 403 is [`ErrorKind::AccessDenied`] naming the credentials source; 5xx,
//! 429 and timeouts are retried by [`Client`], and so is a 400 `BadDigest`
//! to an upload (the body the server received is not the one sent).

mod credentials;
pub mod xml;

use std::sync::RwLock;
use std::time::SystemTime;

use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;

use self::credentials::Credentials;
use super::bucket::{BucketStore, Markers, ObjectProtocol, Page, PageRequest};
use super::http::{
    encode_key, encode_path_component, encode_query, status_text, Client, Method, Request,
    Response, Validator,
};
use super::location::S3Location;
use super::options::{StorageOptions, UploadChecksum};
use super::store::{Precondition, Version};
use crate::error::{Error, ErrorKind, Result};

/// The region assumed when nothing names one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// A container root in an S3 bucket.
pub type S3Store = BucketStore<S3Protocol>;

/// The S3 protocol to one bucket: its endpoint, region, credentials and
/// connection pool.
#[derive(Debug)]
pub struct S3Protocol {
    bucket: String,
    endpoint: Endpoint,
    /// The bucket's region as far as known (it changes when the server
    /// names another).
    region: RwLock<String>,
    credentials: Credentials,
    client: Client,
    checksum: UploadChecksum,
}

/// Where requests go.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Endpoint {
    /// AWS: the host follows the region (`s3.REGION.amazonaws.com`).
    Aws {
        /// `https://s3.REGION.amazonaws.com/bucket/key` rather than
        /// `https://bucket.s3.REGION.amazonaws.com/key`.
        path_style: bool,
    },
    /// An explicit endpoint, which the region never changes.
    Custom {
        /// `http` or `https`.
        scheme: String,
        /// Host and port.
        authority: String,
        /// A path below which the service lives (`""` or `/s3`).
        path: String,
        /// `endpoint/bucket/key` rather than `bucket.endpoint/key`.
        path_style: bool,
    },
}

/// Whether `region` can be a region name (and so a part of a host name).
pub(crate) fn valid_region(region: &str) -> bool {
    !region.is_empty()
        && region.len() <= 64
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `bucket` can be the first label of a host name under a TLS
/// wildcard certificate (no dots, no capitals, no underscores).
fn virtual_host_safe(bucket: &str) -> bool {
    (3..=63).contains(&bucket.len())
        && !bucket.starts_with('-')
        && !bucket.ends_with('-')
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// An endpoint URL as scheme, authority and path; `what` names where it
/// came from in the error.
fn parse_endpoint(text: &str, what: &str) -> Result<(String, String, String)> {
    let bad = || {
        Error::invalid_argument(format!(
            "{what}: '{}' is not an endpoint (http://host:port or https://host)",
            super::http::redact_url(text.trim())
        ))
    };
    let text = text.trim().trim_end_matches('/');
    let (scheme, rest) = text.split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let valid = matches!(scheme.as_str(), "http" | "https")
        && !authority.is_empty()
        && !authority.contains('@')
        && !text.contains(['?', '#'])
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    if !valid {
        return Err(bad());
    }
    Ok((scheme, authority.to_ascii_lowercase(), path.to_string()))
}

/// The headers that sign a request with SigV4 for S3 (`x-amz-date`,
/// `x-amz-content-sha256`, `x-amz-security-token`, `authorization`), to
/// send with `headers`, which are signed too.
fn sign_headers(
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    region: &str,
    credentials: &aws_credential_types::Credentials,
    time: SystemTime,
) -> Result<Vec<(String, String)>> {
    let failed = |e: &dyn std::fmt::Display| {
        Error::new(
            ErrorKind::Internal,
            format!("cannot sign the request {} {url}: {e}", method.as_str()),
        )
    };
    let identity = credentials.clone().into();
    let mut settings = SigningSettings::default();
    // S3 signs the path as sent (encoded once, not normalised) and wants
    // the payload's hash in x-amz-content-sha256: UNSIGNED-PAYLOAD for a
    // body, whose checksum (a signed header) the server checks instead.
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    let payload = if body.is_empty() {
        SignableBody::Bytes(body)
    } else {
        SignableBody::UnsignedPayload
    };
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("s3")
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| failed(&e))?
        .into();
    let request = SignableRequest::new(method.as_str(), url, headers.iter().copied(), payload)
        .map_err(|e| failed(&e))?;
    let (instructions, _) = sign(request, &params).map_err(|e| failed(&e))?.into_parts();
    Ok(instructions
        .headers()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect())
}

/// The Content-Type of every object libn5 uploads (blocks, shards, JSON).
const OBJECT_CONTENT_TYPE: &str = "binary/octet-stream";

/// The header that carries the checksum of `body`, and its value: the
/// CRC-32C (big-endian) or the MD5, base64.
fn checksum_header(kind: UploadChecksum, body: &[u8]) -> (&'static str, String) {
    use base64::Engine;
    let base64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    match kind {
        UploadChecksum::Crc32c => (
            "x-amz-checksum-crc32c",
            base64(&crc32c::crc32c(body).to_be_bytes()),
        ),
        UploadChecksum::Md5 => {
            use md5::Digest;
            ("content-md5", base64(&md5::Md5::digest(body)))
        }
    }
}

/// The region a redirect or region error names, when it names one.
fn named_region(r: &Response) -> Option<String> {
    let region_error = match r.status {
        301 | 307 => true,
        400 => {
            matches!(
                r.error_code().as_deref(),
                Some("AuthorizationHeaderMalformed" | "IllegalLocationConstraintException")
            ) || r.body.is_empty()
        }
        _ => false,
    };
    if !region_error {
        return None;
    }
    r.header("x-amz-bucket-region")
        .map(str::trim)
        .filter(|h| valid_region(h))
        .map(str::to_string)
        .or_else(|| xml::error_region(&r.body))
}

/// Whether an error answer says that the bucket is missing.
fn bucket_missing(r: &Response) -> bool {
    r.error_code().as_deref() == Some("NoSuchBucket")
}

/// An ETag as a header can carry it.
fn valid_etag(etag: &str) -> bool {
    !etag.is_empty() && etag.len() <= 1024 && etag.bytes().all(|b| (0x20..0x7f).contains(&b))
}

fn malformed(what: &str, why: &str) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {why}"))
}

impl S3Store {
    /// The store of `location` (`display` names it in messages), with the
    /// endpoint, region and credentials of `options` and the environment.
    /// Reads the shared credentials files if it needs them; sends nothing.
    pub fn new(location: &S3Location, display: &str, options: &StorageOptions) -> Result<Self> {
        S3Store::with_env(location, display, options, &|name| std::env::var(name).ok())
    }

    /// [`S3Store::new`] with the environment variables `env` gives.
    fn with_env(
        location: &S3Location,
        display: &str,
        options: &StorageOptions,
        env: credentials::Env,
    ) -> Result<Self> {
        let io_concurrency = options.io_concurrency_for(true);
        let protocol = S3Protocol::with_env(location, options, io_concurrency, env)?;
        Ok(BucketStore::with_protocol(
            protocol,
            &location.prefix,
            display,
            io_concurrency,
        ))
    }
}

impl S3Protocol {
    /// The protocol to the bucket of `location`, with the endpoint, region
    /// and credentials of `options` and of the environment variables `env`
    /// gives, and a pool of `connections` connections.
    fn with_env(
        location: &S3Location,
        options: &StorageOptions,
        connections: usize,
        env: credentials::Env,
    ) -> Result<Self> {
        let s3 = &options.s3;
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let endpoint = if let Some(e) = &s3.endpoint {
            custom(e, "options s3.endpoint", s3.path_style.unwrap_or(true))?
        } else if location.endpoint.is_some() {
            // The https:// forms of a location name AWS's hosts; the host
            // follows the region.
            Endpoint::Aws {
                path_style: s3.path_style.or(location.path_style).unwrap_or(false),
            }
        } else if let Some((e, name)) = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
            .iter()
            .find_map(|n| var(n).map(|e| (e, *n)))
        {
            custom(&e, name, s3.path_style.unwrap_or(true))?
        } else {
            Endpoint::Aws {
                path_style: s3.path_style.unwrap_or(false),
            }
        };
        let endpoint = match endpoint {
            Endpoint::Aws { path_style } => Endpoint::Aws {
                path_style: path_style || !virtual_host_safe(&location.bucket),
            },
            other => other,
        };
        let mut region = None;
        for (value, what) in [
            (s3.region.clone(), "options s3.region"),
            (location.region.clone(), "the location's region"),
            (var("AWS_REGION"), "AWS_REGION"),
            (var("AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION"),
        ] {
            if let Some(r) = value {
                let r = r.trim().to_string();
                if !valid_region(&r) {
                    return Err(Error::invalid_argument(format!(
                        "{what}: '{r}' is not a region name"
                    )));
                }
                region = Some(r);
                break;
            }
        }
        let resolved = credentials::resolve(s3, env, region.is_none())?;
        let region = region
            .or(resolved.profile_region)
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        Ok(S3Protocol {
            bucket: location.bucket.clone(),
            endpoint,
            region: RwLock::new(region),
            credentials: resolved.credentials,
            client: Client::new(options.retry, connections)?,
            checksum: s3.checksum,
        })
    }

    /// The region requests are signed for now.
    fn region(&self) -> String {
        self.region
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Scheme and host requests go to in `region`, and the path of the
    /// bucket's root resource below it.
    fn base(&self, region: &str) -> (String, String) {
        let mut bucket = String::new();
        encode_path_component(&self.bucket, &mut bucket);
        match &self.endpoint {
            Endpoint::Aws { path_style: true } => (
                format!("https://s3.{region}.amazonaws.com"),
                format!("/{bucket}"),
            ),
            Endpoint::Aws { path_style: false } => (
                format!("https://{bucket}.s3.{region}.amazonaws.com"),
                String::new(),
            ),
            Endpoint::Custom {
                scheme,
                authority,
                path,
                path_style: true,
            } => (
                format!("{scheme}://{authority}"),
                format!("{path}/{bucket}"),
            ),
            Endpoint::Custom {
                scheme,
                authority,
                path,
                path_style: false,
            } => (format!("{scheme}://{bucket}.{authority}"), path.clone()),
        }
    }

    /// The URL of the object `name` (`""`: the bucket) with `query`, in
    /// `region`.
    fn url(&self, region: &str, name: &str, query: &str) -> String {
        let (origin, path) = self.base(region);
        let mut url = origin + &path;
        if !name.is_empty() {
            url.push('/');
            url.push_str(&encode_key(name));
        } else if path.is_empty() {
            url.push('/');
        }
        if !query.is_empty() {
            url.push('?');
            url.push_str(query);
        }
        url
    }

    /// Send a request for the object `name` (`""`: the bucket) with the
    /// store's credentials; a redirect or region error naming another
    /// region switches the store to it and sends the request once more.
    fn send(
        &self,
        method: Method,
        name: &str,
        query: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        validate: Validator<'_>,
    ) -> Result<Response> {
        self.send_into(method, name, query, headers, body, validate, Vec::new())
    }

    /// [`S3Protocol::send`] reading the answer's body into `spare`
    /// ([`crate::storage::http::Client::send_into`]).
    #[allow(clippy::too_many_arguments)]
    fn send_into(
        &self,
        method: Method,
        name: &str,
        query: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        validate: Validator<'_>,
        mut spare: Vec<u8>,
    ) -> Result<Response> {
        // A body goes with its checksum, so that the server refuses it
        // damaged or cut short.
        let checksum = (!body.is_empty()).then(|| checksum_header(self.checksum, body));
        let mut with_checksum: Vec<(&str, &str)> = headers.to_vec();
        if let Some((name, value)) = &checksum {
            with_checksum.push((name, value));
        }
        let headers = &with_checksum[..];
        let mut switched = false;
        loop {
            let region = self.region();
            let url = self.url(&region, name, query);
            let what = format!("{} via {}", self.describe_name(name), self.base(&region).0);
            let response = self.client.send_into(
                &what,
                &mut || {
                    let mut all: Vec<(String, String)> = headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.to_string()))
                        .collect();
                    if let Some(credentials) = self.credentials.aws() {
                        all.extend(sign_headers(
                            method,
                            &url,
                            headers,
                            body,
                            &region,
                            credentials,
                            SystemTime::now(),
                        )?);
                    }
                    Ok(Request {
                        method,
                        url: url.clone(),
                        headers: all,
                        body,
                    })
                },
                validate,
                std::mem::take(&mut spare),
            )?;
            if !switched {
                if let Some(named) = named_region(&response).filter(|r| *r != region) {
                    *self.region.write().unwrap_or_else(|p| p.into_inner()) = named;
                    switched = true;
                    spare = response.body;
                    continue;
                }
            }
            return Ok(response);
        }
    }

    /// PUT `body` as the object `name` with `headers`; the answer's status
    /// when it is 200, 412 or 409, else the error.
    fn put_object(&self, name: &str, body: &[u8], headers: &[(&str, &str)]) -> Result<Response> {
        // BadDigest: the body arrived damaged or short; nothing was stored,
        // so sending it again is safe, conditional or not.
        let arrived_intact = |r: &Response| match r.status {
            400 if r.error_code().as_deref() == Some("BadDigest") => Err(format!(
                "{}: the server received other bytes than were sent",
                status_text(r)
            )),
            _ => Ok(()),
        };
        // The type S3 itself gives an object stored without one. Naming it
        // matters to S3-compatible servers that treat an untyped or
        // application/octet-stream body as possibly compressible: SeaweedFS
        // then gzips every such object it can shrink (server CPU on every
        // write), and each range read of it inflates the stored chunk first
        // (a 300 KB range of a blosc shard took 14 ms instead of 2.5).
        let mut typed: Vec<(&str, &str)> = Vec::with_capacity(headers.len() + 1);
        typed.push(("content-type", OBJECT_CONTENT_TYPE));
        typed.extend_from_slice(headers);
        let r = self.send(Method::Put, name, "", &typed, body, &arrived_intact)?;
        match r.status {
            200 | 201 | 204 | 404 | 409 | 412 => Ok(r),
            _ => Err(self.failure(Method::Put, &self.describe_name(name), &r)),
        }
    }

    /// The query of a ListObjectsV2 request.
    fn list_query(prefix: &str, delimiter: bool, max: u32, token: Option<&str>) -> String {
        let mut query = format!(
            "list-type=2&prefix={}&encoding-type=url&max-keys={max}",
            encode_query(prefix)
        );
        if delimiter {
            query.push_str("&delimiter=%2F");
        }
        if let Some(token) = token {
            query.push_str("&continuation-token=");
            query.push_str(&encode_query(token));
        }
        query
    }
}

/// An explicit endpoint.
fn custom(text: &str, what: &str, path_style: bool) -> Result<Endpoint> {
    let (scheme, authority, path) = parse_endpoint(text, what)?;
    Ok(Endpoint::Custom {
        scheme,
        authority,
        path,
        path_style,
    })
}

impl ObjectProtocol for S3Protocol {
    const SCHEME: &'static str = "s3";
    const STAT: Method = Method::Head;
    const MAX_PAGES: usize = 100_000;
    const TOKEN: &'static str = "continuation token";
    const DELETE_TELLS: bool = false;
    const TOKENS_SURVIVE_DELETION: bool = false;
    const MARKERS: Markers = Markers::BelowRoot;

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
        self.send_into(Method::Get, name, "", headers, b"", validate, spare)
    }

    fn version(&self, r: &Response) -> Option<Version> {
        // The ETag of a 206 is the whole object's.
        r.header("etag")
            .map(str::trim)
            .filter(|e| valid_etag(e))
            .map(|e| Version(e.to_string()))
    }

    fn unversioned(&self, name: &str) -> Error {
        malformed(&self.describe_name(name), "GET answered without an ETag")
    }

    fn stat(&self, name: &str) -> Result<Response> {
        self.send(Method::Head, name, "", &[], b"", &|_| Ok(()))
    }

    fn stat_size(&self, name: &str, r: &Response) -> Result<u64> {
        r.header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                malformed(
                    &self.describe_name(name),
                    "HEAD answered without a valid Content-Length",
                )
            })
    }

    fn put(&self, name: &str, body: &[u8]) -> Result<()> {
        let r = self.put_object(name, body, &[])?;
        match r.status {
            200 | 201 | 204 => Ok(()),
            _ => Err(self.failure(Method::Put, &self.describe_name(name), &r)),
        }
    }

    fn put_if(&self, name: &str, body: &[u8], condition: &Precondition) -> Result<bool> {
        let header = match condition {
            Precondition::Absent => ("if-none-match", "*"),
            Precondition::Matches(Version(etag)) if valid_etag(etag) => ("if-match", etag.as_str()),
            Precondition::Matches(Version(etag)) => {
                return Err(Error::invalid_argument(format!(
                    "{}: '{}' is not an ETag",
                    self.describe_name(name),
                    etag.escape_debug()
                )))
            }
        };
        let r = self.put_object(name, body, &[header])?;
        match r.status {
            200 | 201 | 204 => Ok(true),
            412 => Ok(false),
            // Another conditional write to the key was in flight.
            409 if r.error_code().as_deref() == Some("ConditionalRequestConflict") => Ok(false),
            // If-Match on an object that is gone.
            404 if matches!(condition, Precondition::Matches(_)) && !bucket_missing(&r) => {
                Ok(false)
            }
            _ => Err(self.failure(Method::Put, &self.describe_name(name), &r)),
        }
    }

    fn delete(&self, name: &str) -> Result<Response> {
        self.send(Method::Delete, name, "", &[], b"", &|_| Ok(()))
    }

    fn page(&self, what: &str, request: &PageRequest<'_>) -> Result<Page> {
        let query = S3Protocol::list_query(
            request.prefix,
            request.delimiter,
            request.max,
            request.token,
        );
        let r = self.send(Method::Get, "", &query, &[], b"", &|_| Ok(()))?;
        if r.status != 200 {
            return Err(self.failure(Method::Get, what, &r));
        }
        xml::parse_page(&r.body).map_err(|why| self.malformed_page(what, request, &why))
    }

    fn malformed_page(&self, what: &str, _request: &PageRequest<'_>, why: &str) -> Error {
        malformed(what, &format!("malformed ListObjectsV2 answer: {why}"))
    }

    fn keeps_directories(&self) -> bool {
        // AWS has no directories.
        matches!(self.endpoint, Endpoint::Custom { .. })
    }

    fn is_anonymous(&self) -> bool {
        self.credentials.is_anonymous()
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
                    "{method} {what}: {status}: access denied; credentials: {}",
                    self.credentials.source()
                ),
            ),
            404 if bucket_missing(r) || r.error_code().is_none() => Error::new(
                ErrorKind::NotFound,
                format!(
                    "{method} {what}: {status}: the bucket '{}' does not exist at {}",
                    self.bucket,
                    self.base(&self.region()).0
                ),
            ),
            404 => Error::new(ErrorKind::NotFound, format!("{method} {what}: {status}")),
            301 | 307 => Error::new(
                ErrorKind::Io,
                format!(
                    "{method} {what}: {status}: the bucket is elsewhere and the answer names no \
                     region; set s3.region (or s3.endpoint)"
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
