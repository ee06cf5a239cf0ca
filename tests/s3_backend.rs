//! The S3 backend against a real SeaweedFS on 127.0.0.1 (n5-testkit starts
//! it, signed and anonymous; the tests skip, saying why, when `weed` is
//! missing, unless N5_REQUIRE_SERVERS=1): containers, groups, datasets,
//! regions and blocks through `s3://` locations with `s3.endpoint`; the
//! store contract (odd key names, ranges, ETags and conditional writes,
//! listings with continuation, directory markers as n5-aws-s3 writes
//! them); concurrent attribute merges (these four are the checks of
//! `common::object_store`, shared with the GCS backend, and a container at
//! a bucket's root); refused credentials, anonymous
//! requests and a missing bucket; faults and region answers injected by
//! testkit's proxy; upload checksums against damaged bodies; credentials from the environment and from profile
//! files, in a child process.
//!
//! What SeaweedFS can show: it checks SigV4 signatures (signed mode),
//! enforces `If-Match` / `If-None-Match` on PUT (412), answers range GETs
//! with 206 and ListObjectsV2 with delimiters and continuation tokens. It
//! cannot show AWS's redirects to a bucket's region; those answers are
//! injected by the proxy, as AWS words them.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::object_store::{self, open_store, Bucket};
use n5::storage::{ByteRange, Precondition, Store, Version};
use n5::{Container, ErrorKind, Mode, Options};
use n5_testkit::client::Request as TkRequest;
use n5_testkit::{Fault, Proxy, Rule, S3Server};
use serde_json::{json, Value};

/// One of the shared SeaweedFS servers.
struct S3 {
    server: &'static S3Server,
}

fn signed() -> Option<S3> {
    Some(S3 {
        server: n5_testkit::or_skip(n5_testkit::s3_signed())?,
    })
}

fn anonymous() -> Option<S3> {
    Some(S3 {
        server: n5_testkit::or_skip(n5_testkit::s3_anonymous())?,
    })
}

impl S3 {
    /// A new bucket of its own for a test.
    fn bucket(&self, name: &str) -> String {
        self.server.unique_bucket(name).unwrap()
    }

    /// Every key in `bucket`, straight from the S3 API.
    fn keys(&self, bucket: &str) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        let mut token: Option<String> = None;
        for _ in 0..1000 {
            let mut target = format!("/{bucket}?list-type=2");
            if let Some(t) = &token {
                target.push_str(&format!("&continuation-token={}", encode(t)));
            }
            let r = self.server.send(TkRequest::new("GET", &target)).unwrap();
            assert_eq!(r.status, 200, "{}", r.text());
            let text = r.text();
            keys.extend(elements(&text, "Key"));
            token = elements(&text, "NextContinuationToken").into_iter().next();
            if !text.contains("<IsTruncated>true</IsTruncated>") {
                return keys;
            }
        }
        panic!("endless listing of {bucket}");
    }

    /// The storage options: the endpoint and, on the signed server, its
    /// credentials.
    fn options_json(&self) -> Value {
        let mut s3 = json!({ "endpoint": self.server.endpoint() });
        match self.server.credentials() {
            Some(c) => {
                s3["access_key_id"] = json!(c.access_key_id);
                s3["secret_access_key"] = json!(c.secret_access_key);
            }
            None => s3["anonymous"] = json!(true),
        }
        json!({ "s3": s3 })
    }

    fn options(&self) -> Options {
        Options::from_json(&self.options_json().to_string()).unwrap()
    }

    fn open(&self, location: &str, mode: Mode) -> n5::Result<Container> {
        Container::open_with(location, mode, self.options())
    }

    fn store(&self, location: &str) -> Arc<dyn Store> {
        open_store(location, &self.options())
    }
}

/// The texts of the elements `name` in `xml`, the usual entities resolved.
fn elements(xml: &str, name: &str) -> Vec<String> {
    let (open, close) = (format!("<{name}>"), format!("</{name}>"));
    let unescape = |v: &str| {
        v.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#34;", "\"")
            .replace("&apos;", "'")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    xml.split(&open)
        .skip(1)
        .filter_map(|rest| rest.split_once(&close).map(|(v, _)| unescape(v)))
        .collect()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

impl S3 {
    /// `bucket` as the shared checks of `common::object_store` see it.
    fn checked<'a>(&self, bucket: &str, names: &'a dyn Fn() -> BTreeSet<String>) -> Bucket<'a> {
        Bucket {
            url: format!("s3://{bucket}"),
            options: self.options(),
            names,
        }
    }
}

#[test]
fn containers_groups_datasets_and_blocks() {
    let Some(s3) = signed() else { return };
    let bucket = s3.bucket("containers");
    let names = || s3.keys(&bucket);
    let b = s3.checked(&bucket, &names);
    // Markers below the container root only, as n5-aws-s3 writes them.
    object_store::containers_groups_datasets_and_blocks(
        &b,
        &["data/x.n5/a/", "data/x.n5/a/b/", "data/x.n5/a/ds/"],
        &["data/", "data/x.n5/"],
    );

    // A container at the bucket's root.
    let root = s3.bucket("root");
    let c = s3.open(&format!("s3://{root}"), Mode::Create).unwrap();
    c.create_group("g").unwrap();
    assert_eq!(c.list("").unwrap(), ["g"]);
    assert_eq!(
        s3.keys(&root),
        BTreeSet::from(["attributes.json".into(), "g/".into()])
    );
    let again = s3.open(&format!("s3://{root}/"), Mode::Read).unwrap();
    assert!(again.exists("g").unwrap());
}

/// The store contract, on the signed server and the anonymous one.
#[test]
fn the_store_contract() {
    for s3 in [signed(), anonymous()].into_iter().flatten() {
        let bucket = s3.bucket("store");
        let names = || s3.keys(&bucket);
        let b = s3.checked(&bucket, &names);
        // Versions are ETags.
        object_store::store_contract(
            &b,
            &|v| v.0.len() > 2,
            Version("\"0123456789abcdef0123456789abcdef\"".into()),
        );
        // No marker for the store's root (n5-aws-s3 writes none).
        let s = b.store("root");
        s.create_dir("").unwrap();
        assert!(
            !s3.keys(&bucket).contains("root/"),
            "no marker for the root"
        );
        // A version that cannot travel in a header is refused before any
        // request.
        assert_eq!(
            s.put_if("k/x", b"1", &Precondition::Matches(Version("a\nb".into())))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidArgument
        );
    }
}

/// Every upload is typed binary/octet-stream, S3's own default, signed or
/// not: SeaweedFS gzips an untyped or application/octet-stream body it can
/// shrink and inflates the stored chunk again for every range read of it.
#[test]
fn uploads_are_typed_binary_octet_stream() {
    for s3 in [signed(), anonymous()].into_iter().flatten() {
        let bucket = s3.bucket("typed");
        let s = s3.store(&format!("s3://{bucket}/c"));
        // Compressible bytes, as raw and blosc blocks are.
        let body: Vec<u8> = (0..200_000u32).map(|i| (i / 64 % 7) as u8).collect();
        s.put("plain", &[&body]).unwrap();
        assert!(s.put_if("created", &body, &Precondition::Absent).unwrap());
        for key in ["plain", "created"] {
            let r = s3
                .server
                .send(TkRequest::new("HEAD", &format!("/{bucket}/c/{key}")))
                .unwrap();
            assert_eq!(r.status, 200, "HEAD {key}");
            assert_eq!(
                r.header("content-type"),
                Some("binary/octet-stream"),
                "{key}"
            );
            let part = s
                .get_range(
                    key,
                    ByteRange::Span {
                        offset: 70_000,
                        len: 1000,
                    },
                )
                .unwrap()
                .unwrap();
            assert_eq!(part, body[70_000..71_000], "{key}");
        }
    }
}

#[test]
fn listings_continue_over_pages() {
    let Some(s3) = anonymous() else { return };
    let bucket = s3.bucket("pages");
    let names = || s3.keys(&bucket);
    object_store::listings_continue_over_pages(&s3.checked(&bucket, &names));
}

#[test]
fn concurrent_attribute_merges_lose_nothing() {
    let Some(s3) = signed() else { return };
    let bucket = s3.bucket("merges");
    let names = || s3.keys(&bucket);
    let b = s3.checked(&bucket, &names);
    // The writers go through a proxy that counts the PUTs, so the test can
    // tell how often they collided (the signature covers the proxy's
    // address as the host, which the proxy passes on unchanged).
    let proxy = Proxy::start(s3.server.addr());
    let mut options = s3.options_json();
    options["s3"]["endpoint"] = json!(proxy.url());
    let options = Options::from_json(&options.to_string()).unwrap();
    let (writers, keys) = (8, 6);
    object_store::concurrent_attribute_merges(&b, "m.n5", &options, writers, keys);
    let refused = proxy.counters().put - (writers * keys) as u64;
    eprintln!("concurrent merges: {refused} conditional writes refused (412) and retried");
}

#[test]
fn refusals_and_a_missing_bucket() {
    let Some(s3) = signed() else { return };
    let bucket = s3.bucket("refusals");
    let location = format!("s3://{bucket}/r.n5");
    s3.open(&location, Mode::Create)
        .unwrap()
        .create_group("g")
        .unwrap();

    // A wrong secret: refused, naming the code and the credentials' source.
    let mut wrong = s3.options_json();
    wrong["s3"]["secret_access_key"] = json!("not-the-secret");
    let wrong = Options::from_json(&wrong.to_string()).unwrap();
    for mode in [Mode::Read, Mode::ReadWrite, Mode::Create] {
        let e = Container::open_with(&location, mode, wrong.clone()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AccessDenied, "{mode:?}: {e}");
        assert!(e.message().contains("SignatureDoesNotMatch"), "{e}");
        assert!(e.message().contains("options s3.access_key_id"), "{e}");
        assert!(!e.message().contains("not-the-secret"), "{e}");
    }
    let store = open_store(&location, &wrong);
    assert_eq!(
        store.put("x", &[b"1"]).unwrap_err().kind(),
        ErrorKind::AccessDenied
    );
    assert_eq!(
        store.size("g/attributes.json").unwrap_err().kind(),
        ErrorKind::AccessDenied
    );

    // Anonymous requests to a server that wants signatures: a read of a
    // key is "missing" (as public buckets answer), the root's listing and
    // writes are refused, saying that no credentials were found.
    let anon = Options::from_json(
        &json!({ "s3": { "endpoint": s3.server.endpoint(), "anonymous": true } }).to_string(),
    )
    .unwrap();
    let store = open_store(&location, &anon);
    assert_eq!(store.get("attributes.json").unwrap(), None);
    assert_eq!(store.size("attributes.json").unwrap(), None);
    let e = store.is_dir("").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    assert!(e.message().contains("anonymous"), "{e}");
    assert_eq!(
        store.put("x", &[b"1"]).unwrap_err().kind(),
        ErrorKind::AccessDenied
    );
    assert_eq!(
        store.delete("attributes.json").unwrap_err().kind(),
        ErrorKind::AccessDenied
    );
    let e = Container::open_with(&location, Mode::Read, anon.clone()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");

    // A missing bucket is NotFound naming it, whatever the mode.
    for mode in [Mode::Read, Mode::ReadWrite, Mode::Create] {
        let e = s3.open("s3://no-such-bucket-n5/x.n5", mode).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{mode:?}: {e}");
        assert!(e.message().contains("no-such-bucket-n5"), "{e}");
    }
    let s = s3.store("s3://no-such-bucket-n5");
    assert_eq!(s.is_dir("").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(s.list("").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(s.list_keys("").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(s.get("a").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(
        s.get_versioned("a").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // (No PUT: SeaweedFS creates a missing bucket on upload for the
    // credentials it was started with, -s3.autoCreateBucket.)
    // A container that is not there in an existing bucket.
    let e = s3
        .open(&format!("s3://{bucket}/nothing.n5"), Mode::Read)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn faults_and_region_answers() {
    let Some(s3) = anonymous() else { return };
    let bucket = s3.bucket("faults");
    let proxy = Proxy::start(s3.server.addr());
    let options = |extra: Value| {
        let mut s3_options = json!({ "endpoint": proxy.url() });
        for (k, v) in extra.as_object().unwrap() {
            s3_options[k] = v.clone();
        }
        let o = json!({ "s3": s3_options, "retry": { "max_attempts": 3, "max_seconds": 20 } });
        Options::from_json(&o.to_string()).unwrap()
    };
    let s = open_store(
        &format!("s3://{bucket}/f"),
        &options(json!({ "anonymous": true })),
    );
    let content: Vec<u8> = (0..100u8).collect();
    s.put("obj", &[&content]).unwrap();
    let span = ByteRange::Span {
        offset: 10,
        len: 20,
    };

    // 5xx and bodies that end early are retried.
    proxy.set_fault(Rule::all().methods(&["GET"]).first(2), Fault::status(503));
    assert_eq!(s.get("obj").unwrap().unwrap(), content);
    proxy.set_fault(
        Rule::all().methods(&["GET"]).first(1),
        Fault::Truncate { after: 10 },
    );
    assert_eq!(s.get("obj").unwrap().unwrap(), content);
    proxy.set_fault(Rule::all().methods(&["GET"]), Fault::status(503));
    let e = s.get("obj").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    assert!(
        e.message().contains(&format!("s3://{bucket}/f/obj")) && e.message().contains("SlowDown"),
        "{e}"
    );
    // A range answer that is not the range asked for is retried, never data.
    proxy.set_fault(Rule::all().first(1), Fault::WrongRange { shift: 3 });
    assert_eq!(s.get_range("obj", span).unwrap().unwrap(), &content[10..30]);
    proxy.set_fault(Rule::all(), Fault::WrongRange { shift: 3 });
    assert_eq!(
        s.get_range("obj", span).unwrap_err().kind(),
        ErrorKind::Network
    );
    // A server that ignores the range: the slice is cut from the whole.
    proxy.set_fault(Rule::all(), Fault::IgnoreRange);
    assert_eq!(s.get_range("obj", span).unwrap().unwrap(), &content[10..30]);
    assert_eq!(
        s.get_range("obj", ByteRange::Suffix(5)).unwrap().unwrap(),
        &content[95..]
    );

    // 403: missing to an anonymous read of a key, refused otherwise.
    proxy.set_fault(
        Rule::all().methods(&["GET", "HEAD"]).path_contains("/obj"),
        Fault::status(403),
    );
    assert_eq!(s.get("obj").unwrap(), None);
    assert_eq!(s.size("obj").unwrap(), None);
    let keyed = open_store(
        &format!("s3://{bucket}/f"),
        &options(json!({ "access_key_id": "AKID", "secret_access_key": "SUPERSECRET" })),
    );
    let e = keyed.get("obj").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    assert!(
        e.message().contains("options s3.access_key_id") && !e.message().contains("SUPERSECRET"),
        "{e}"
    );
    proxy.set_fault(Rule::all().path_contains("list-type=2"), Fault::status(403));
    let e = s.list("").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    assert!(e.message().contains("anonymous"), "{e}");
    proxy.set_fault(Rule::all().methods(&["PUT"]), Fault::status(403));
    assert_eq!(
        s.put("x", &[b"1"]).unwrap_err().kind(),
        ErrorKind::AccessDenied
    );
    proxy.set_fault(Rule::all().methods(&["PUT"]), Fault::status(401));
    assert_eq!(
        s.put("x", &[b"1"]).unwrap_err().kind(),
        ErrorKind::AccessDenied
    );

    // Malformed listings are errors naming the location, not retried.
    for body in [
        "<not xml",
        "<Error><Code>x</Code></Error>",
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
    ] {
        proxy.clear_faults();
        proxy.set_fault(
            Rule::all().path_contains("list-type=2"),
            Fault::status_with_body(200, body),
        );
        proxy.reset_counters();
        let e = s.list("").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{body}: {e}");
        assert!(
            e.message().contains("malformed ListObjectsV2 answer"),
            "{e}"
        );
        assert!(e.message().contains(&format!("s3://{bucket}/f/")), "{e}");
        assert_eq!(proxy.counters().requests, 1);
    }
    let same_token = "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken></ListBucketResult>";
    proxy.set_fault(
        Rule::all().path_contains("list-type=2"),
        Fault::status_with_body(200, same_token),
    );
    assert_eq!(s.list_keys("").unwrap_err().kind(), ErrorKind::Io);
    proxy.clear_faults();
    assert_eq!(s.size("obj").unwrap(), Some(100));

    // The bucket's region, named by a redirect (AWS's 301 with
    // x-amz-bucket-region) or a region error (400 with <Region>): the store
    // switches and sends the request once more.
    let region_answer = |status: u16, header: Option<&str>, body: &str| Fault::Status {
        status,
        headers: header
            .map(|r| vec![("x-amz-bucket-region".to_string(), r.to_string())])
            .unwrap_or_default(),
        body: body.to_string(),
    };
    let keyed = open_store(
        &format!("s3://{bucket}/f"),
        &options(json!({ "access_key_id": "AKID", "secret_access_key": "SK" })),
    );
    proxy.set_fault(
        Rule::all().first(1),
        region_answer(
            301,
            Some("eu-west-1"),
            "<Error><Code>PermanentRedirect</Code></Error>",
        ),
    );
    proxy.reset_counters();
    assert_eq!(keyed.get("obj").unwrap().unwrap(), content);
    assert_eq!(proxy.counters().requests, 2);
    proxy.set_fault(
        Rule::all().first(1),
        region_answer(
            400,
            None,
            "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'eu-west-1' is wrong; expecting 'ap-south-1'</Message><Region>ap-south-1</Region></Error>",
        ),
    );
    assert!(keyed.is_dir("").unwrap());
    // A HEAD's region error has no body, only the header.
    proxy.set_fault(
        Rule::all().first(1),
        region_answer(400, Some("sa-east-1"), ""),
    );
    assert_eq!(keyed.size("obj").unwrap(), Some(100));
    // The same region again, or none at all: an error that says what to do.
    proxy.set_fault(Rule::all(), region_answer(301, Some("us-west-2"), ""));
    let e = keyed.get("obj").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    proxy.set_fault(
        Rule::all(),
        region_answer(301, None, "<Error><Code>PermanentRedirect</Code></Error>"),
    );
    let e = keyed.get("obj").unwrap_err();
    assert!(e.message().contains("s3.region"), "{e}");
    proxy.clear_faults();
}

/// Every upload carries a checksum of its body (CRC-32C, or MD5 with
/// `s3.checksum: "md5"`); SeaweedFS checks it, so a body damaged on the way
/// is refused (400 BadDigest) rather than stored, and the store sends it
/// again within the retry budget.
#[test]
fn damaged_uploads_are_refused_and_sent_again() {
    let Some(s3) = anonymous() else { return };
    let bucket = s3.bucket("damaged");
    let proxy = Proxy::start(s3.server.addr());
    for checksum in ["crc32c", "md5"] {
        let o = json!({
            "s3": { "endpoint": proxy.url(), "anonymous": true, "checksum": checksum },
            "retry": { "max_attempts": 3, "max_seconds": 20 }
        });
        let s = open_store(
            &format!("s3://{bucket}/{checksum}"),
            &Options::from_json(&o.to_string()).unwrap(),
        );
        let old: Vec<u8> = (0..200u8).collect();
        let new: Vec<u8> = (0..200u8).rev().collect();
        s.put("obj", &[&old]).unwrap();

        // Damaged once: refused, sent again, stored whole.
        proxy.set_fault(
            Rule::all().methods(&["PUT"]).first(1),
            Fault::CorruptRequestBody,
        );
        proxy.reset_counters();
        s.put("obj", &[&new[..100], &new[100..]]).unwrap();
        assert_eq!(proxy.counters().put, 2, "{checksum}");
        assert_eq!(s.get("obj").unwrap().unwrap(), new, "{checksum}");
        // The same for a conditional write.
        let (_, version) = s.get_versioned("obj").unwrap().unwrap();
        proxy.set_fault(
            Rule::all().methods(&["PUT"]).first(1),
            Fault::CorruptRequestBody,
        );
        assert!(s
            .put_if("obj", &old, &Precondition::Matches(version))
            .unwrap());
        assert_eq!(s.get("obj").unwrap().unwrap(), old, "{checksum}");

        // Damaged every time: an error naming the key, and the old object
        // stays as it was.
        proxy.set_fault(Rule::all().methods(&["PUT"]), Fault::CorruptRequestBody);
        proxy.reset_counters();
        let e = s.put("obj", &[&new]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Network, "{e}");
        assert!(
            e.message()
                .contains(&format!("s3://{bucket}/{checksum}/obj"))
                && e.message().contains("BadDigest"),
            "{e}"
        );
        assert_eq!(
            proxy.counters().put,
            3,
            "{checksum}: every attempt of the budget"
        );
        proxy.clear_faults();
        assert_eq!(s.get("obj").unwrap().unwrap(), old, "{checksum}");
    }
}

/// Credentials from the environment (keys, then profile files) and the
/// endpoint from AWS_ENDPOINT_URL, in child processes (the environment is
/// the process's).
#[test]
fn credentials_from_the_environment() {
    if let Ok(location) = std::env::var("N5_S3_TEST_CHILD") {
        let c = Container::open_with(&location, Mode::Create, Options::default()).unwrap();
        c.create_group("g").unwrap();
        c.set_attribute("g", "a", json!(1)).unwrap();
        assert_eq!(c.list("").unwrap(), ["g"]);
        return;
    }
    let Some(s3) = signed() else { return };
    let credentials = s3.server.credentials().unwrap();
    let bucket = s3.bucket("environment");
    let dir = common::Scratch::new("s3-profiles");
    std::fs::write(
        dir.join("credentials"),
        format!(
            "[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n[n5]\n\
             aws_access_key_id = {}\naws_secret_access_key = {}\n",
            credentials.access_key_id, credentials.secret_access_key
        ),
    )
    .unwrap();
    std::fs::write(dir.join("config"), "[profile n5]\nregion = eu-central-1\n").unwrap();
    let child = |name: &str, vars: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "credentials_from_the_environment",
            "--test-threads",
            "1",
        ])
        .env("N5_S3_TEST_CHILD", format!("s3://{bucket}/{name}.n5"))
        .env("AWS_ENDPOINT_URL", s3.server.endpoint())
        .env("HOME", dir.path());
        for v in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "AWS_REGION",
            "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL_S3",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_CONFIG_FILE",
        ] {
            cmd.env_remove(v);
        }
        cmd.envs(vars.iter().copied());
        cmd.output().unwrap()
    };
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(child(
        "keys",
        &[
            ("AWS_ACCESS_KEY_ID", &credentials.access_key_id),
            ("AWS_SECRET_ACCESS_KEY", &credentials.secret_access_key),
        ],
    ));
    let files = [
        ("AWS_SHARED_CREDENTIALS_FILE", dir.join("credentials")),
        ("AWS_CONFIG_FILE", dir.join("config")),
    ];
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(k, v)| (*k, v.to_str().unwrap()))
        .collect();
    ok(child(
        "profile",
        &[&files[..], &[("AWS_PROFILE", "n5")]].concat(),
    ));
    // The default profile's keys are wrong: refused, naming the profile.
    let out = child("default", &files);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("AccessDenied") && text.contains("profile 'default'"),
        "{text}"
    );
    // No credentials at all: anonymous, and the refusal says so.
    let out = child("none", &[]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("no credentials were found"), "{text}");
    let keys = s3.keys(&bucket);
    assert!(keys.contains("keys.n5/g/attributes.json"), "{keys:?}");
    assert!(keys.contains("profile.n5/g/attributes.json"), "{keys:?}");
    assert!(
        keys.iter()
            .all(|k| !k.starts_with("default.n5") && !k.starts_with("none.n5")),
        "{keys:?}"
    );
}
