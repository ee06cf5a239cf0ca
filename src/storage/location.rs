//! Location strings, as `n5_container_open`, `Container::open` and every
//! `n5` subcommand take them, parsed into a description of where a
//! container's bytes are ([`Location`], [`Backend`]); opening the store it
//! names is [`crate::storage::open`]'s. The forms:
//!
//! | location | backend |
//! |---|---|
//! | `/data/vol.n5`, `vol.n5`, `file:///data/vol.n5` | the local file system |
//! | `s3://bucket/prefix` | S3 and S3-compatible stores |
//! | `https://bucket.s3.REGION.amazonaws.com/prefix`, `https://s3.REGION.amazonaws.com/bucket/prefix`, `https://s3.amazonaws.com/bucket/prefix` | S3 |
//! | `gs://bucket/prefix`, `https://storage.googleapis.com/bucket/prefix` | Google Cloud Storage |
//! | any other `http://` or `https://` URL | plain HTTP(S), read-only |
//!
//! A format prefix (`n5:`, `zarr:`, `zarr2:`, `zarr3:`, `h5:`, `hdf5:`, as
//! in N5Factory) may stand before any of them. Percent-escapes in URLs are decoded once;
//! `..` in a location resolves as in paths, and a location that would go
//! above its bucket or host root is an error.
//!
//! This file also joins a location with a relative reference to another
//! container, as hdmf-zarr links name their targets
//! ([`Location::resolve_relative`], and back, [`Location::relative_reference`]):
//! a directory join for file-system paths, RFC 3986 resolution for URLs,
//! never above the file-system root, the bucket or the host's root.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::http::{encode_path_component, percent_decode, redact_url};
use crate::error::{Error, ErrorKind, Result};

/// A format named in front of a location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatHint {
    /// `n5:`
    N5,
    /// `zarr:` (version 2 or 3, whichever is there)
    Zarr,
    /// `zarr2:`
    Zarr2,
    /// `zarr3:`
    Zarr3,
    /// `h5:` or `hdf5:` (an HDF5 file; local only)
    Hdf5,
}

/// Where an S3 location points, as its string says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Location {
    /// The bucket.
    pub bucket: String,
    /// The key prefix of the container root (normalised, no slashes at
    /// either end, `""` for the bucket's root).
    pub prefix: String,
    /// The endpoint an `https://...amazonaws.com` URL names (scheme and
    /// host), `None` for `s3://`.
    pub endpoint: Option<String>,
    /// The region an `https://` URL names.
    pub region: Option<String>,
    /// Whether an `https://` URL addresses the bucket in its path.
    pub path_style: Option<bool>,
}

/// Where a Google Cloud Storage location points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcsLocation {
    /// The bucket.
    pub bucket: String,
    /// The object name prefix of the container root (normalised).
    pub prefix: String,
}

/// Where a plain HTTP(S) location points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebLocation {
    /// Scheme, authority (without credentials only in messages) and no
    /// trailing slash: `https://example.org:8443`.
    pub origin: String,
    /// The decoded path of the container root below the origin
    /// (normalised, `""` for the host's root).
    pub prefix: String,
}

/// The backend a location names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The local file system.
    File(PathBuf),
    /// S3 or an S3-compatible store.
    S3(S3Location),
    /// Google Cloud Storage.
    Gcs(GcsLocation),
    /// Plain HTTP(S), read-only.
    Web(WebLocation),
}

/// A parsed location string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The format prefix, when one was given.
    pub format: Option<FormatHint>,
    /// Where the container's bytes are.
    pub backend: Backend,
    /// The location as given, without a format prefix and without
    /// credentials, for messages.
    pub display: String,
}

impl Location {
    /// Parse a location string.
    pub fn parse(text: &str) -> Result<Location> {
        if text.is_empty() {
            return Err(Error::invalid_argument("the location is empty"));
        }
        if text.contains('\0') {
            return Err(Error::invalid_argument(
                "the location contains a NUL character",
            ));
        }
        let (format, rest) = split_format(text);
        let backend = parse_backend(rest)?;
        let display = match &backend {
            Backend::File(_) => rest.to_string(),
            _ => redact_url(rest),
        };
        Ok(Location {
            format,
            backend,
            display,
        })
    }

    /// Whether the location is on the local file system.
    pub fn is_local(&self) -> bool {
        matches!(self.backend, Backend::File(_))
    }

    /// The path of a location on the local file system, `None` for the
    /// other backends.
    pub fn local_path(&self) -> Option<&std::path::Path> {
        match &self.backend {
            Backend::File(path) => Some(path),
            _ => None,
        }
    }
}

/// The format prefix of a location string (`zarr3:`, `n5:`...), if any,
/// and the location after it.
pub fn split_format(text: &str) -> (Option<FormatHint>, &str) {
    for (prefix, hint) in [
        ("zarr2:", FormatHint::Zarr2),
        ("zarr3:", FormatHint::Zarr3),
        ("zarr:", FormatHint::Zarr),
        ("n5:", FormatHint::N5),
        ("hdf5:", FormatHint::Hdf5),
        ("h5:", FormatHint::Hdf5),
    ] {
        if let Some(rest) = text.strip_prefix(prefix) {
            // `n5://...` is not a format prefix but a scheme nobody uses;
            // keep the split only when a location follows.
            if !rest.is_empty() {
                return (Some(hint), rest);
            }
        }
    }
    (None, text)
}

fn parse_backend(text: &str) -> Result<Backend> {
    let lower = text
        .get(..text.find("://").unwrap_or(0))
        .map(str::to_ascii_lowercase);
    match lower.as_deref() {
        Some("file") => file_url(text),
        Some("s3") => {
            let (bucket, path) = bucket_and_path(&text[5..], text)?;
            Ok(Backend::S3(S3Location {
                bucket,
                prefix: path,
                endpoint: None,
                region: None,
                path_style: None,
            }))
        }
        Some("gs") => {
            let (bucket, prefix) = bucket_and_path(&text[5..], text)?;
            Ok(Backend::Gcs(GcsLocation { bucket, prefix }))
        }
        Some(scheme @ ("http" | "https")) => http_url(scheme, &text[scheme.len() + 3..], text),
        Some(other) if !other.is_empty() && other.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) => {
            Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "location '{}': the scheme '{other}' is not supported (file, s3, gs, http, https)",
                    redact_url(text)
                ),
            ))
        }
        _ => Ok(Backend::File(PathBuf::from(text))),
    }
}

fn file_url(text: &str) -> Result<Backend> {
    let rest = &text[7..];
    let path = if let Some(p) = rest.strip_prefix("localhost/") {
        format!("/{p}")
    } else if rest.starts_with('/') {
        rest.to_string()
    } else {
        return Err(Error::invalid_argument(format!(
            "location '{text}': a file URL needs an absolute path (file:///data/vol.n5)"
        )));
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    Ok(Backend::File(PathBuf::from(percent_decode(
        path, "location",
    )?)))
}

/// `bucket/path...` of an `s3://` or `gs://` URL: the bucket and the
/// normalised, decoded path.
fn bucket_and_path(rest: &str, text: &str) -> Result<(String, String)> {
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
    check_bucket(bucket, text)?;
    Ok((bucket.to_string(), normalize_url_path(path, text)?))
}

fn check_bucket(bucket: &str, text: &str) -> Result<()> {
    let valid = !bucket.is_empty()
        && bucket.len() <= 222
        && bucket.bytes().all(|b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || b"-._".contains(&b)
                || b.is_ascii_uppercase()
        });
    if valid {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "location '{}': '{bucket}' is not a bucket name",
            redact_url(text)
        )))
    }
}

/// Decode a URL path once and normalise it as a container path: `..`
/// resolves, going above the root is an error.
fn normalize_url_path(path: &str, text: &str) -> Result<String> {
    let decoded = percent_decode(path, "location")?;
    crate::path::normalize(&decoded).map_err(|_| {
        Error::invalid_argument(format!(
            "location '{}' goes above its root",
            redact_url(text)
        ))
    })
}

fn http_url(scheme: &str, rest: &str, text: &str) -> Result<Backend> {
    let rest = rest.split('#').next().unwrap_or("");
    if rest.contains('?') {
        return Err(Error::invalid_argument(format!(
            "location '{}': a query string cannot name a container root",
            redact_url(text)
        )));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(Error::invalid_argument(format!(
            "location '{}': credentials in a URL are not accepted; pass them in the options \
             (http.headers.Authorization, or the s3 and gcs credentials)",
            redact_url(text)
        )));
    }
    let host_port = authority;
    if host_port.is_empty() {
        return Err(Error::invalid_argument(format!(
            "location '{}' has no host",
            redact_url(text)
        )));
    }
    let host = host_port
        .rsplit_once(':')
        .filter(|(h, port)| !h.ends_with(']') || port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host_port, |(h, _)| h)
        .to_ascii_lowercase();
    let origin = format!("{scheme}://{}", host_port.to_ascii_lowercase());
    if host == "storage.googleapis.com" {
        let (bucket, prefix) = bucket_and_path(path, text)?;
        return Ok(Backend::Gcs(GcsLocation { bucket, prefix }));
    }
    if let Some(s3) = aws_host(&host) {
        let endpoint = Some(origin);
        return Ok(Backend::S3(match s3 {
            AwsHost::PathStyle { region } => {
                let (bucket, prefix) = bucket_and_path(path, text)?;
                S3Location {
                    bucket,
                    prefix,
                    endpoint,
                    region,
                    path_style: Some(true),
                }
            }
            AwsHost::Virtual { bucket, region } => {
                check_bucket(&bucket, text)?;
                let endpoint = Some(format!("{scheme}://{}", &host_port[bucket.len() + 1..]));
                S3Location {
                    bucket,
                    prefix: normalize_url_path(path, text)?,
                    endpoint,
                    region,
                    path_style: Some(false),
                }
            }
        }));
    }
    Ok(Backend::Web(WebLocation {
        origin: format!("{scheme}://{authority}"),
        prefix: normalize_url_path(path, text)?,
    }))
}

enum AwsHost {
    PathStyle {
        region: Option<String>,
    },
    Virtual {
        bucket: String,
        region: Option<String>,
    },
}

/// S3 endpoints of AWS: `s3.amazonaws.com`, `s3.REGION.amazonaws.com`,
/// `s3-REGION.amazonaws.com`, and the same behind `BUCKET.`.
fn aws_host(host: &str) -> Option<AwsHost> {
    let stem = host.strip_suffix(".amazonaws.com")?;
    let region_of = |s3: &str| -> Option<Option<String>> {
        if s3 == "s3" {
            Some(None)
        } else if let Some(r) = s3.strip_prefix("s3.").or_else(|| s3.strip_prefix("s3-")) {
            (!r.is_empty() && !r.contains('.') || r.starts_with("dualstack."))
                .then(|| Some(r.trim_start_matches("dualstack.").to_string()))
        } else {
            None
        }
    };
    if let Some(region) = region_of(stem) {
        return Some(AwsHost::PathStyle { region });
    }
    // BUCKET.s3[.-]REGION: the bucket may hold dots, the region does not.
    for marker in [".s3.", ".s3-"] {
        if let Some(i) = stem.rfind(marker) {
            let (bucket, s3) = (&stem[..i], &stem[i + 1..]);
            if let Some(region) = region_of(s3) {
                return Some(AwsHost::Virtual {
                    bucket: bucket.to_string(),
                    region,
                });
            }
        }
    }
    stem.strip_suffix(".s3").map(|bucket| AwsHost::Virtual {
        bucket: bucket.to_string(),
        region: None,
    })
}

/// Whether a relative container reference (a link's `source`) is in fact
/// absolute: it starts with `/` or `\`, or with a scheme (`s3:`, `file:`,
/// or a drive letter such as `C:`).
fn is_absolute_reference(reference: &str) -> bool {
    if reference.starts_with('/') || reference.starts_with('\\') {
        return true;
    }
    let first = reference.split('/').next().unwrap_or("");
    match first.split_once(':') {
        Some((scheme, _)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        }
        None => false,
    }
}

/// One component of a file-system path being joined.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// `..` that a relative path keeps (it climbs above where it starts).
    Up,
    /// A name.
    Name(OsString),
}

/// A file-system path taken apart lexically: whether it is absolute, and
/// its components with `.` dropped and `..` applied (`/..` is `/`).
fn path_parts(path: &Path) -> (bool, Vec<Part>) {
    let mut absolute = false;
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => climb(&mut parts, absolute),
            Component::Normal(name) => parts.push(Part::Name(name.to_os_string())),
        }
    }
    (absolute, parts)
}

/// Apply `..` to `parts`: drop the last name; above the start of a
/// relative path, keep the `..`; above the root of an absolute one, stay
/// (callers that must refuse that check first).
fn climb(parts: &mut Vec<Part>, absolute: bool) {
    match parts.last() {
        Some(Part::Name(_)) => {
            parts.pop();
        }
        _ if absolute => {}
        _ => parts.push(Part::Up),
    }
}

/// The path of `parts`, absolute or not.
fn path_of(absolute: bool, parts: &[Part]) -> PathBuf {
    let mut out = PathBuf::from(if absolute { "/" } else { "" });
    for p in parts {
        match p {
            Part::Up => out.push(".."),
            Part::Name(n) => out.push(n),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// A URL location taken apart: `scheme://authority`, and the path's
/// segments (as written, percent-escapes kept) with dot segments applied.
fn url_parts(text: &str) -> Option<(String, Vec<String>)> {
    let scheme_end = text.find("://")?;
    let rest = &text[scheme_end + 3..];
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let head = format!(
        "{}://{}",
        text[..scheme_end].to_ascii_lowercase(),
        &rest[..authority_end]
    );
    let mut segments: Vec<String> = Vec::new();
    for s in rest[authority_end..].split('/') {
        match percent_decode(s, "location").ok().as_deref() {
            Some("" | ".") => {}
            Some("..") => {
                segments.pop();
            }
            _ => segments.push(s.to_string()),
        }
    }
    Some((head, segments))
}

impl Location {
    /// Whether the location is written as a URL (`file://`, `s3://`,
    /// `gs://`, `http(s)://`) rather than as a file-system path.
    fn is_url(&self) -> bool {
        self.display
            .get(..self.display.find("://").unwrap_or(0))
            .is_some_and(|scheme| !scheme.is_empty())
    }

    /// How many leading segments of the URL's path are no part of the
    /// container's place but name its bucket (S3 and GCS addressed by
    /// path over `https://`): `..` never removes them.
    fn url_floor(&self) -> usize {
        let https = !self.display.to_ascii_lowercase().starts_with("s3://")
            && !self.display.to_ascii_lowercase().starts_with("gs://");
        match &self.backend {
            Backend::S3(l) if https && l.path_style == Some(true) => 1,
            Backend::Gcs(_) if https => 1,
            _ => 0,
        }
    }

    /// What the root a URL location's `..` cannot climb above is, for
    /// messages.
    fn root_name(&self) -> &'static str {
        match &self.backend {
            Backend::S3(_) | Backend::Gcs(_) => "its bucket",
            Backend::Web(_) => "the host's root",
            Backend::File(_) => "the file-system root",
        }
    }

    /// The location of the container that `reference` names relative to
    /// the container at this location, as hdmf-zarr links name their
    /// targets (`"../b.nwb.zarr"` from `/d/a.nwb.zarr` is
    /// `/d/b.nwb.zarr`): for file-system paths a directory join, for URLs
    /// (`file://`, `s3://`, `gs://`, `http(s)://`) RFC 3986 resolution
    /// against the location with a `/` appended; dot segments are removed
    /// lexically (symlinks are not resolved) and names are taken as they
    /// are (percent-encoded into URLs). With `from_parent`, the reference
    /// is relative to the directory that holds the container instead (the
    /// form hdmf-zarr 0.10.0 wrote). The result has no format prefix.
    ///
    /// An absolute reference (`/x`, `//host/x`, `s3://b/x`) is
    /// [`ErrorKind::Unsupported`]; one whose `..` climbs above the
    /// file-system root, the bucket (S3, GCS) or the host's root (HTTP) is
    /// [`ErrorKind::InvalidArgument`], never clamped.
    pub fn resolve_relative(&self, reference: &str, from_parent: bool) -> Result<Location> {
        if reference.is_empty() || reference.contains('\0') {
            return Err(Error::invalid_argument(format!(
                "the container reference '{}' is empty or holds a NUL character",
                reference.escape_default()
            )));
        }
        if is_absolute_reference(reference) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "the container reference '{reference}' is absolute; only references relative \
                     to the linking container are followed"
                ),
            ));
        }
        let above = || {
            Error::invalid_argument(format!(
                "the container reference '{reference}' climbs above {} of '{}'",
                self.root_name(),
                self.display
            ))
        };
        if !self.is_url() {
            let Backend::File(base) = &self.backend else {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("'{}' is neither a URL nor a path", self.display),
                ));
            };
            let (absolute, mut parts) = path_parts(base);
            let steps = from_parent.then_some("..").into_iter();
            for step in steps.chain(reference.split('/')) {
                match step {
                    "" | "." => {}
                    ".." if absolute && parts.is_empty() => return Err(above()),
                    ".." => climb(&mut parts, absolute),
                    name => parts.push(Part::Name(name.into())),
                }
            }
            let path = path_of(absolute, &parts);
            let display = path.to_string_lossy().into_owned();
            return Ok(Location {
                format: None,
                backend: Backend::File(path),
                display,
            });
        }
        let (head, mut segments) = url_parts(&self.display).ok_or_else(above)?;
        let floor = self.url_floor();
        let steps = from_parent.then_some("..").into_iter();
        for step in steps.chain(reference.split('/')) {
            match step {
                "" | "." => {}
                ".." if segments.len() <= floor => return Err(above()),
                ".." => {
                    segments.pop();
                }
                name => {
                    let mut encoded = String::new();
                    encode_path_component(name, &mut encoded);
                    segments.push(encoded);
                }
            }
        }
        Location::parse(&format!("{head}/{}", segments.join("/")))
    }

    /// The relative reference from the container at this location to the
    /// one at `target` that [`Location::resolve_relative`] resolves back
    /// to it (`"../b.nwb.zarr"`; `"."` for the same place); `None` when no
    /// relative reference reaches it (another backend, bucket or host, or
    /// a relative path that climbs above where this one starts).
    pub fn relative_reference(&self, target: &Location) -> Option<String> {
        let (from, to): (Vec<String>, Vec<String>) = match (self.is_url(), target.is_url()) {
            (false, false) => {
                let (Backend::File(a), Backend::File(b)) = (&self.backend, &target.backend) else {
                    return None;
                };
                let ((abs_a, a), (abs_b, b)) = (path_parts(a), path_parts(b));
                if abs_a != abs_b {
                    return None;
                }
                let text = |parts: Vec<Part>| -> Option<Vec<String>> {
                    parts
                        .into_iter()
                        .map(|p| match p {
                            Part::Up => Some("..".to_string()),
                            Part::Name(n) => n.into_string().ok(),
                        })
                        .collect()
                };
                (text(a)?, text(b)?)
            }
            (true, true) => {
                let ((head_a, a), (head_b, b)) =
                    (url_parts(&self.display)?, url_parts(&target.display)?);
                let floor = self.url_floor();
                if head_a != head_b
                    || a.len() < floor
                    || b.len() < floor
                    || a[..floor] != b[..floor]
                {
                    return None;
                }
                let decoded = |segments: Vec<String>| -> Option<Vec<String>> {
                    segments
                        .iter()
                        .map(|s| percent_decode(s, "location").ok())
                        .collect()
                };
                (decoded(a)?, decoded(b)?)
            }
            _ => return None,
        };
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if from[common..].iter().any(|s| s == "..") {
            return None;
        }
        let mut steps: Vec<&str> = vec![".."; from.len() - common];
        steps.extend(to[common..].iter().map(String::as_str));
        Some(if steps.is_empty() {
            ".".to_string()
        } else {
            steps.join("/")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(text: &str) -> Backend {
        Location::parse(text).unwrap().backend
    }

    fn s3(
        bucket: &str,
        prefix: &str,
        endpoint: Option<&str>,
        region: Option<&str>,
        path_style: Option<bool>,
    ) -> Backend {
        Backend::S3(S3Location {
            bucket: bucket.into(),
            prefix: prefix.into(),
            endpoint: endpoint.map(Into::into),
            region: region.map(Into::into),
            path_style,
        })
    }

    #[test]
    fn every_form_of_the_contract() {
        assert_eq!(
            backend("/data/vol.n5"),
            Backend::File("/data/vol.n5".into())
        );
        assert_eq!(backend("vol.n5"), Backend::File("vol.n5".into()));
        assert_eq!(
            backend("file:///data/my%20vol.n5"),
            Backend::File("/data/my vol.n5".into())
        );
        assert_eq!(
            backend("s3://bucket/prefix/vol.n5"),
            s3("bucket", "prefix/vol.n5", None, None, None)
        );
        assert_eq!(backend("s3://bucket"), s3("bucket", "", None, None, None));
        assert_eq!(
            backend("https://bucket.s3.eu-west-2.amazonaws.com/prefix"),
            s3(
                "bucket",
                "prefix",
                Some("https://s3.eu-west-2.amazonaws.com"),
                Some("eu-west-2"),
                Some(false)
            )
        );
        assert_eq!(
            backend("https://s3.eu-west-2.amazonaws.com/bucket/prefix"),
            s3(
                "bucket",
                "prefix",
                Some("https://s3.eu-west-2.amazonaws.com"),
                Some("eu-west-2"),
                Some(true)
            )
        );
        assert_eq!(
            backend("https://s3.amazonaws.com/janelia-cosem-datasets/jrc_hela-2/jrc_hela-2.n5"),
            s3(
                "janelia-cosem-datasets",
                "jrc_hela-2/jrc_hela-2.n5",
                Some("https://s3.amazonaws.com"),
                None,
                Some(true)
            )
        );
        assert_eq!(
            backend("https://my.dotted.bucket.s3.amazonaws.com/x"),
            s3(
                "my.dotted.bucket",
                "x",
                Some("https://s3.amazonaws.com"),
                None,
                Some(false)
            )
        );
        assert_eq!(
            backend("gs://bucket/prefix"),
            Backend::Gcs(GcsLocation {
                bucket: "bucket".into(),
                prefix: "prefix".into()
            })
        );
        assert_eq!(
            backend("https://storage.googleapis.com/bucket/a/b"),
            Backend::Gcs(GcsLocation {
                bucket: "bucket".into(),
                prefix: "a/b".into()
            })
        );
        assert_eq!(
            backend("https://uk1s3.embassy.ebi.ac.uk/idr/zarr/v0.4/x.n5/"),
            Backend::Web(WebLocation {
                origin: "https://uk1s3.embassy.ebi.ac.uk".into(),
                prefix: "idr/zarr/v0.4/x.n5".into()
            })
        );
        assert_eq!(
            backend("http://127.0.0.1:8080"),
            Backend::Web(WebLocation {
                origin: "http://127.0.0.1:8080".into(),
                prefix: "".into()
            })
        );
    }

    #[test]
    fn format_prefixes() {
        let l = Location::parse("zarr3:s3://b/v.zarr").unwrap();
        assert_eq!(l.format, Some(FormatHint::Zarr3));
        assert_eq!(l.backend, s3("b", "v.zarr", None, None, None));
        assert_eq!(
            Location::parse("n5:/data/v.n5").unwrap().format,
            Some(FormatHint::N5)
        );
        assert_eq!(
            Location::parse("zarr:x").unwrap().format,
            Some(FormatHint::Zarr)
        );
        assert_eq!(
            Location::parse("zarr2:x").unwrap().format,
            Some(FormatHint::Zarr2)
        );
        assert_eq!(Location::parse("plain").unwrap().format, None);
        for text in ["h5:vol.bin", "hdf5:vol.bin", "hdf5:file:///d/vol.bin"] {
            let l = Location::parse(text).unwrap();
            assert_eq!(l.format, Some(FormatHint::Hdf5), "{text}");
            assert!(l.local_path().is_some(), "{text}");
        }
        assert_eq!(
            Location::parse("h5:s3://b/v.h5").unwrap().format,
            Some(FormatHint::Hdf5)
        );
        assert_eq!(Location::parse("s3://b/v.h5").unwrap().local_path(), None);
    }

    #[test]
    fn decoding_dots_and_errors() {
        assert_eq!(backend("s3://b/a%20b/../c"), s3("b", "c", None, None, None));
        assert_eq!(
            backend("s3://b/a/./b//c/"),
            s3("b", "a/b/c", None, None, None)
        );
        for bad in [
            "s3://b/..",
            "s3://b/a/../..",
            "gs://b/%2e%2e",
            "https://h/../x",
            "s3:///x",
            "s3://b a/x",
            "file://relative",
            "",
            "https://h/x?y=1",
            "ftp://h/x",
        ] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Location::parse("ftp://h/x").unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        let e = Location::parse("https://user:secret@example.org/v.n5").unwrap_err();
        assert!(!e.message().contains("secret"), "{e}");
    }

    fn joined(base: &str, reference: &str) -> Result<String> {
        Location::parse(base)?
            .resolve_relative(reference, false)
            .map(|l| l.display)
    }

    #[test]
    fn relative_references_join_on_every_backend() {
        let cases = [
            ("/d/a.nwb.zarr", "../b.nwb.zarr", "/d/b.nwb.zarr"),
            ("/d/a.nwb.zarr/", "../b.nwb.zarr", "/d/b.nwb.zarr"),
            ("/d/x/../a.zarr", "./../b.zarr", "/d/b.zarr"),
            ("/d/a.zarr", "sub/inner.zarr", "/d/a.zarr/sub/inner.zarr"),
            ("/d/a.zarr", "../../e/b.zarr", "/e/b.zarr"),
            ("a.zarr", "../b.zarr", "b.zarr"),
            ("a.zarr", "../../b.zarr", "../b.zarr"),
            ("../c/a.zarr", "../b.zarr", "../c/b.zarr"),
            ("file:///d/a.zarr", "../my b.zarr", "file:///d/my%20b.zarr"),
            (
                "file://localhost/d/a.zarr",
                "../b.zarr",
                "file://localhost/d/b.zarr",
            ),
            ("s3://bucket/p/a.zarr", "../b.zarr", "s3://bucket/p/b.zarr"),
            ("s3://bucket/a.zarr", "../b.zarr", "s3://bucket/b.zarr"),
            (
                "gs://bucket/p/q/a.zarr",
                "../../b.zarr",
                "gs://bucket/p/b.zarr",
            ),
            (
                "http://127.0.0.1:8080/c/a.zarr",
                "../b.zarr",
                "http://127.0.0.1:8080/c/b.zarr",
            ),
            (
                "https://h/a%20b/a.zarr",
                "../ü.zarr",
                "https://h/a%20b/%C3%BC.zarr",
            ),
            (
                "https://s3.amazonaws.com/bucket/a.zarr",
                "../b.zarr",
                "https://s3.amazonaws.com/bucket/b.zarr",
            ),
            (
                "https://storage.googleapis.com/bucket/p/a.zarr",
                "../b.zarr",
                "https://storage.googleapis.com/bucket/p/b.zarr",
            ),
        ];
        for (base, reference, want) in cases {
            assert_eq!(
                joined(base, reference).unwrap(),
                want,
                "{base} + {reference}"
            );
        }
        // The parent-relative form of hdmf-zarr 0.10.0.
        let l = Location::parse("/d/a.zarr").unwrap();
        assert_eq!(
            l.resolve_relative("b.zarr", true).unwrap().display,
            "/d/b.zarr"
        );
        let l = Location::parse("s3://b/p/a.zarr").unwrap();
        assert_eq!(
            l.resolve_relative("b.zarr", true).unwrap().display,
            "s3://b/p/b.zarr"
        );
        // The joined location opens the same backend.
        let l = Location::parse("s3://bucket/p/a.zarr").unwrap();
        let b = l.resolve_relative("../b.zarr", false).unwrap();
        assert_eq!(b.backend, s3("bucket", "p/b.zarr", None, None, None));
    }

    #[test]
    fn relative_references_never_climb_above_a_root_nor_start_absolute() {
        for (base, reference) in [
            ("/a.zarr", "../../b.zarr"),
            ("/d/a.zarr", "../../../b.zarr"),
            ("file:///a.zarr", "../../b.zarr"),
            ("s3://bucket/a.zarr", "../../b.zarr"),
            ("s3://bucket/p/a.zarr", "../../../b.zarr"),
            ("gs://bucket/a.zarr", "../../x"),
            ("http://127.0.0.1:1/a.zarr", "../../x"),
            ("https://s3.amazonaws.com/bucket/a.zarr", "../../other/x"),
        ] {
            let e = joined(base, reference).unwrap_err();
            assert_eq!(
                e.kind(),
                ErrorKind::InvalidArgument,
                "{base} + {reference}: {e}"
            );
            assert!(e.message().contains(reference), "{e}");
        }
        for reference in [
            "/abs.zarr",
            "//host/x",
            "s3://b/x",
            "file:///x",
            "C:x",
            "\\x",
        ] {
            let e = joined("/d/a.zarr", reference).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{reference}: {e}");
        }
        for reference in ["", "a\0b"] {
            let e = joined("/d/a.zarr", reference).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{reference:?}");
        }
        // A name with a colon after the first segment is relative.
        assert_eq!(joined("/d/a.zarr", "../x/b:c").unwrap(), "/d/x/b:c");
    }

    #[test]
    fn relative_references_back_from_a_target() {
        let reference = |a: &str, b: &str| {
            Location::parse(a)
                .unwrap()
                .relative_reference(&Location::parse(b).unwrap())
        };
        assert_eq!(
            reference("/d/a.zarr", "/d/b.zarr").as_deref(),
            Some("../b.zarr")
        );
        assert_eq!(reference("/d/a.zarr", "/d/a.zarr/").as_deref(), Some("."));
        assert_eq!(
            reference("/d/a.zarr", "/e/f/b.zarr").as_deref(),
            Some("../../e/f/b.zarr")
        );
        assert_eq!(
            reference("a.zarr", "../b.zarr").as_deref(),
            Some("../../b.zarr")
        );
        assert_eq!(
            reference("s3://k/p/a.zarr", "s3://k/p/my%20b.zarr").as_deref(),
            Some("../my b.zarr")
        );
        assert_eq!(
            reference("http://h:1/a/x.zarr", "http://h:1/b/y.zarr").as_deref(),
            Some("../../b/y.zarr")
        );
        for (a, b) in [
            ("s3://k/a.zarr", "s3://other/a.zarr"),
            ("s3://k/a.zarr", "gs://k/a.zarr"),
            ("/d/a.zarr", "file:///d/b.zarr"),
            ("/d/a.zarr", "b.zarr"),
            ("../x/a.zarr", "b.zarr"),
            (
                "https://s3.amazonaws.com/k/a.zarr",
                "https://s3.amazonaws.com/other/a.zarr",
            ),
        ] {
            assert_eq!(reference(a, b), None, "{a} -> {b}");
        }
        // Every reference resolves back to its target.
        for (a, b) in [
            ("/d/a.zarr", "/e/b.zarr"),
            ("a.zarr", "../b.zarr"),
            ("gs://k/p/q/a.zarr", "gs://k/z/b.zarr"),
        ] {
            let (la, lb) = (Location::parse(a).unwrap(), Location::parse(b).unwrap());
            let r = la.relative_reference(&lb).unwrap();
            assert_eq!(
                la.resolve_relative(&r, false).unwrap().display,
                b,
                "{a} {r}"
            );
        }
    }
}
