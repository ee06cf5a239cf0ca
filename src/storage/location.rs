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

use std::path::PathBuf;

use super::http::{percent_decode, redact_url};
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
}
