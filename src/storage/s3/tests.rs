//! Unit tests of the S3 backend that need no server: addressing, regions,
//! signatures, status mapping, listing queries. The real-server tests are in
//! tests/s3_backend.rs.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::storage::http_reads::HttpReads;
use crate::storage::location::{Backend, Location};
use crate::storage::options::{S3Options, Secret};
use crate::storage::store::Store;

fn location(text: &str) -> S3Location {
    match Location::parse(text).unwrap().backend {
        Backend::S3(l) => l,
        other => panic!("{text} is {other:?}"),
    }
}

fn store_with(text: &str, s3: S3Options, vars: &[(&str, &str)]) -> Result<S3Store> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let options = StorageOptions {
        s3,
        ..StorageOptions::default()
    };
    S3Store::with_env(&location(text), text, &options, &move |n| {
        map.get(n).cloned()
    })
}

fn store(text: &str, s3: S3Options, vars: &[(&str, &str)]) -> S3Store {
    store_with(text, s3, vars).unwrap()
}

fn object_url(s: &S3Store, key: &str) -> String {
    s.protocol().url(&s.protocol().region(), &s.name(key), "")
}

fn error_body(code: &str) -> String {
    format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>m</Message></Error>")
}

#[test]
fn aws_addressing() {
    let none = S3Options::default;
    let s = store("s3://bucket/x.n5", none(), &[]);
    assert_eq!(s.protocol().region(), "us-east-1");
    assert_eq!(
        object_url(&s, "a b/attributes.json"),
        "https://bucket.s3.us-east-1.amazonaws.com/x.n5/a%20b/attributes.json"
    );
    assert_eq!(
        s.protocol().url("eu-west-1", "", "list-type=2"),
        "https://bucket.s3.eu-west-1.amazonaws.com/?list-type=2"
    );
    assert_eq!(s.describe("a/b"), "s3://bucket/x.n5/a/b");
    assert_eq!(s.describe(""), "s3://bucket/x.n5");
    assert_eq!(s.location(), "s3://bucket/x.n5");

    // Dots (TLS wildcard certificates) and capitals force path-style.
    for bucket in ["my.dotted.bucket", "Legacy_Bucket"] {
        let s = store(&format!("s3://{bucket}/k"), none(), &[]);
        assert_eq!(
            object_url(&s, "x"),
            format!("https://s3.us-east-1.amazonaws.com/{bucket}/k/x")
        );
    }

    // The https forms of a location keep their addressing and region.
    let s = store("https://s3.eu-west-2.amazonaws.com/bucket/p", none(), &[]);
    assert_eq!(
        object_url(&s, "k"),
        "https://s3.eu-west-2.amazonaws.com/bucket/p/k"
    );
    let s = store("https://bucket.s3.eu-west-2.amazonaws.com/p", none(), &[]);
    assert_eq!(
        object_url(&s, "k"),
        "https://bucket.s3.eu-west-2.amazonaws.com/p/k"
    );
    let s = store(
        "https://s3.amazonaws.com/janelia-cosem-datasets/jrc_hela-2",
        none(),
        &[],
    );
    assert_eq!(
        object_url(&s, "k"),
        "https://s3.us-east-1.amazonaws.com/janelia-cosem-datasets/jrc_hela-2/k"
    );
    let s = store(
        "s3://bucket",
        S3Options {
            path_style: Some(true),
            ..none()
        },
        &[],
    );
    assert_eq!(
        object_url(&s, "k"),
        "https://s3.us-east-1.amazonaws.com/bucket/k"
    );
    assert_eq!(
        s.protocol().url("us-east-1", "", "q=1"),
        "https://s3.us-east-1.amazonaws.com/bucket?q=1"
    );
    assert_eq!(s.describe(""), "s3://bucket/");
}

#[test]
fn explicit_endpoints() {
    let with_endpoint = |e: &str| S3Options {
        endpoint: Some(e.into()),
        ..S3Options::default()
    };
    let s = store("s3://b/x.n5", with_endpoint("http://127.0.0.1:8333/"), &[]);
    assert_eq!(object_url(&s, "k"), "http://127.0.0.1:8333/b/x.n5/k");
    assert_eq!(
        s.protocol().url("us-east-1", "", "list-type=2"),
        "http://127.0.0.1:8333/b?list-type=2"
    );

    let s = store(
        "s3://b/x.n5",
        with_endpoint("https://Minio.Example.org/s3"),
        &[],
    );
    assert_eq!(object_url(&s, "k"), "https://minio.example.org/s3/b/x.n5/k");
    let s = store(
        "s3://b/x.n5",
        S3Options {
            path_style: Some(false),
            ..with_endpoint("https://minio.example.org")
        },
        &[],
    );
    assert_eq!(object_url(&s, "k"), "https://b.minio.example.org/x.n5/k");
    assert_eq!(
        s.protocol().url("r", "", "q"),
        "https://b.minio.example.org/?q"
    );

    // The environment's endpoints, AWS_ENDPOINT_URL_S3 first.
    let s = store(
        "s3://b",
        S3Options::default(),
        &[
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
            ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2"),
        ],
    );
    assert_eq!(object_url(&s, "k"), "http://127.0.0.1:2/b/k");
    let s = store(
        "s3://b",
        S3Options::default(),
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:1")],
    );
    assert_eq!(object_url(&s, "k"), "http://127.0.0.1:1/b/k");
    // Options win over the environment.
    let s = store(
        "s3://b",
        with_endpoint("http://127.0.0.1:3"),
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:1")],
    );
    assert_eq!(object_url(&s, "k"), "http://127.0.0.1:3/b/k");

    for bad in [
        "127.0.0.1:8333",
        "ftp://h",
        "http://",
        "http://u:p@h",
        "http://h/?x",
        "http://h x",
    ] {
        let e = store_with("s3://b", with_endpoint(bad), &[]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        assert!(e.message().contains("s3.endpoint"), "{e}");
        assert!(!e.message().contains("u:p"), "{e}");
    }
    let e = store_with(
        "s3://b",
        S3Options::default(),
        &[("AWS_ENDPOINT_URL_S3", "nonsense")],
    )
    .unwrap_err();
    assert!(e.message().contains("AWS_ENDPOINT_URL_S3"), "{e}");
}

#[test]
fn region_defaults_in_order() {
    let region =
        |s3: S3Options, loc: &str, vars: &[(&str, &str)]| store(loc, s3, vars).protocol().region();
    let opt = S3Options {
        region: Some("ca-central-1".into()),
        ..S3Options::default()
    };
    let env = [
        ("AWS_REGION", "eu-north-1"),
        ("AWS_DEFAULT_REGION", "eu-south-1"),
    ];
    assert_eq!(
        region(opt.clone(), "https://s3.eu-west-2.amazonaws.com/b", &env),
        "ca-central-1"
    );
    assert_eq!(
        region(
            S3Options::default(),
            "https://s3.eu-west-2.amazonaws.com/b",
            &env
        ),
        "eu-west-2"
    );
    assert_eq!(region(S3Options::default(), "s3://b", &env), "eu-north-1");
    assert_eq!(
        region(S3Options::default(), "s3://b", &env[1..]),
        "eu-south-1"
    );
    assert_eq!(region(S3Options::default(), "s3://b", &[]), "us-east-1");

    let dir = std::env::temp_dir().join(format!("libn5-s3-region-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config");
    std::fs::write(&config, "[default]\nregion = ap-northeast-1\n").unwrap();
    let vars = [
        ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ("HOME", "/nonexistent"),
    ];
    assert_eq!(
        region(S3Options::default(), "s3://b", &vars),
        "ap-northeast-1"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let e = store_with(
        "s3://b",
        S3Options {
            region: Some("eu-west-1.evil.com/".into()),
            ..S3Options::default()
        },
        &[],
    )
    .unwrap_err();
    assert!(e.message().contains("s3.region"), "{e}");
}

#[test]
fn regions_named_by_answers() {
    let header = |status| Response::of(status, &[("x-amz-bucket-region", "eu-west-1")], "");
    assert_eq!(named_region(&header(301)).as_deref(), Some("eu-west-1"));
    assert_eq!(named_region(&header(307)).as_deref(), Some("eu-west-1"));
    // A HEAD has no body: its 400 names the region in the header only.
    assert_eq!(named_region(&header(400)).as_deref(), Some("eu-west-1"));
    let malformed_auth = Response::of(
        400,
        &[],
        "<Error><Code>AuthorizationHeaderMalformed</Code><Message>wrong region</Message><Region>ap-southeast-2</Region></Error>",
    );
    assert_eq!(
        named_region(&malformed_auth).as_deref(),
        Some("ap-southeast-2")
    );
    let redirect_body = Response::of(
        301,
        &[],
        "<Error><Code>PermanentRedirect</Code><Region>sa-east-1</Region></Error>",
    );
    assert_eq!(named_region(&redirect_body).as_deref(), Some("sa-east-1"));
    // Neither other errors nor successes nor bad names switch regions.
    assert_eq!(
        named_region(&Response::of(
            400,
            &[("x-amz-bucket-region", "eu-west-1")],
            error_body("InvalidArgument")
        )),
        None
    );
    assert_eq!(named_region(&header(200)), None);
    assert_eq!(named_region(&header(403)), None);
    assert_eq!(
        named_region(&Response::of(301, &[("x-amz-bucket-region", "a.b/c")], "")),
        None
    );
    assert_eq!(named_region(&Response::of(301, &[], "")), None);
}

#[test]
fn status_mapping() {
    let signed = store(
        "s3://b/root",
        S3Options {
            access_key_id: Some("AKID".into()),
            secret_access_key: Some(Secret::new("TOPSECRET")),
            ..S3Options::default()
        },
        &[],
    );
    let anonymous = store(
        "s3://b/root",
        S3Options::default(),
        &[("HOME", "/nonexistent")],
    );
    let no_key = Response::of(404, &[], error_body("NoSuchKey"));
    let no_bucket = Response::of(404, &[], error_body("NoSuchBucket"));
    let denied = Response::of(403, &[], error_body("AccessDenied"));
    let signature = Response::of(403, &[], error_body("SignatureDoesNotMatch"));

    for s in [&signed, &anonymous] {
        assert!(s.missing(Method::Get, "a/attributes.json", &no_key).is_ok());
        assert!(s
            .missing(Method::Head, "k", &Response::of(404, &[], ""))
            .is_ok());
        let e = s.missing(Method::Get, "k", &no_bucket).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(
            e.message().contains("bucket 'b'") && e.message().contains("s3://b/root/k"),
            "{e}"
        );
        let e = s
            .missing(Method::Get, "k", &Response::of(500, &[], ""))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        let e = s.protocol().failure(
            Method::Get,
            "s3://b/root/",
            &Response::of(301, &[], error_body("PermanentRedirect")),
        );
        assert!(e.message().contains("s3.region"), "{e}");
    }
    // A 403 to an anonymous read of a key is "missing"; to a signed one,
    // or for the root, it is a refusal naming the credentials' source.
    assert!(anonymous.missing(Method::Get, "k", &denied).is_ok());
    let e = anonymous.missing(Method::Get, "", &denied).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied);
    assert!(e.message().contains("no credentials were found"), "{e}");
    let e = signed.missing(Method::Get, "k", &signature).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied);
    assert!(e.message().contains("SignatureDoesNotMatch"), "{e}");
    assert!(e.message().contains("options s3.access_key_id"), "{e}");
    assert!(!e.message().contains("TOPSECRET"), "{e}");
    let e = signed
        .protocol()
        .failure(Method::Put, "s3://b/root/k", &Response::of(401, &[], ""));
    assert_eq!(e.kind(), ErrorKind::AccessDenied);
    assert!(!format!("{signed:?}").contains("TOPSECRET"));
}

#[test]
fn signatures_match_the_aws_examples() {
    // The examples of the S3 SigV4 documentation ("Signature Calculations
    // for the Authorization Header: Transferring Payload in a Single
    // Chunk").
    let credentials = aws_credential_types::Credentials::new(
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        None,
        None,
        "test",
    );
    let time = UNIX_EPOCH + Duration::from_secs(1_369_353_600); // 2013-05-24T00:00:00Z
    let authorization = |headers: &[(String, String)]| {
        headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    let get = sign_headers(
        Method::Get,
        "https://examplebucket.s3.amazonaws.com/test.txt",
        &[("range", "bytes=0-9")],
        b"",
        "us-east-1",
        &credentials,
        time,
    )
    .unwrap();
    assert_eq!(
        authorization(&get),
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
         SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
         Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    );
    assert!(get.contains(&(
        "x-amz-content-sha256".into(),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into()
    )));
    assert!(get.contains(&("x-amz-date".into(), "20130524T000000Z".into())));

    // A PUT with a key that needs encoding ('$') and a body: the payload
    // is UNSIGNED-PAYLOAD, and the body's checksum is a signed header
    // (the server checks the body against it).
    let url = format!(
        "https://examplebucket.s3.amazonaws.com/{}",
        encode_key("test$file.text")
    );
    let body = b"Welcome to Amazon S3.";
    for (kind, name, value) in [
        (UploadChecksum::Crc32c, "x-amz-checksum-crc32c", "5G2V+Q=="),
        (
            UploadChecksum::Md5,
            "content-md5",
            "1EfQ6PKJ8WoS/2AnznfCWA==",
        ),
    ] {
        let (header, checksum) = checksum_header(kind, body);
        assert_eq!(
            (header, checksum.as_str()),
            (name, value),
            "{kind:?} of the example body, base64"
        );
        let put = |checksum: &str| {
            sign_headers(
                Method::Put,
                &url,
                &[
                    (header, checksum),
                    ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ],
                body,
                "us-east-1",
                &credentials,
                time,
            )
            .unwrap()
        };
        let signed = put(&checksum);
        assert!(signed.contains(&("x-amz-content-sha256".into(), "UNSIGNED-PAYLOAD".into())));
        let mut names = [
            header,
            "host",
            "x-amz-content-sha256",
            "x-amz-date",
            "x-amz-storage-class",
        ];
        names.sort();
        assert!(
            authorization(&signed).contains(&format!("SignedHeaders={}", names.join(";"))),
            "{}",
            authorization(&signed)
        );
        assert_eq!(authorization(&signed), authorization(&put(&checksum)));
        assert_ne!(authorization(&signed), authorization(&put("AAAAAA==")));
    }

    // A session token is sent and signed; the secret never is.
    let temporary =
        aws_credential_types::Credentials::new("AK", "SECRETKEY", Some("TOKEN".into()), None, "t");
    let headers = sign_headers(
        Method::Head,
        "http://127.0.0.1:8333/b/k",
        &[],
        b"",
        "us-east-1",
        &temporary,
        time,
    )
    .unwrap();
    assert!(headers.contains(&("x-amz-security-token".into(), "TOKEN".into())));
    assert!(authorization(&headers).contains("x-amz-security-token"));
    assert!(headers.iter().all(|(_, v)| !v.contains("SECRETKEY")));
}

#[test]
fn listing_queries() {
    assert_eq!(
        S3Protocol::list_query("x y/+", true, 1000, Some("a+b/=")),
        "list-type=2&prefix=x%20y%2F%2B&encoding-type=url&max-keys=1000&delimiter=%2F&continuation-token=a%2Bb%2F%3D"
    );
}
