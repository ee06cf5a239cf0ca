//! The S3 backend against a real SeaweedFS on 127.0.0.1 (n5-testkit starts
//! it, signed and anonymous; the tests skip, saying why, when `weed` is
//! missing, unless N5_REQUIRE_SERVERS=1): containers, groups, datasets,
//! regions and blocks through `s3://` locations with `s3.endpoint`; the
//! store contract (odd key names, ranges, ETags and conditional writes,
//! listings with continuation, directory markers as n5-aws-s3 writes
//! them); concurrent attribute merges; refused credentials, anonymous
//! requests and a missing bucket; faults and region answers injected by
//! testkit's proxy; credentials from the environment and from profile
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

use common::bytes;
use n5::storage::location::Location;
use n5::storage::{ByteRange, Precondition, Store, Version};
use n5::{Compression, Container, DataType, DatasetAttributes, ErrorKind, Mode, Options};
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

fn open_store(location: &str, options: &Options) -> Arc<dyn Store> {
    Location::parse(location)
        .unwrap()
        .open(&options.storage)
        .unwrap()
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

fn u16_attributes(dimensions: Vec<u64>, block: Vec<u32>, compression: Value) -> DatasetAttributes {
    DatasetAttributes::new(
        dimensions,
        block,
        DataType::U16,
        Compression::from_json(&compression).unwrap(),
    )
    .unwrap()
}

#[test]
fn containers_groups_datasets_and_blocks() {
    let Some(s3) = signed() else { return };
    let bucket = s3.bucket("containers");
    let location = format!("s3://{bucket}/data/x.n5");
    let c = s3.open(&location, Mode::Create).unwrap();
    assert_eq!(c.version().unwrap().as_deref(), Some("4.0.0"));
    c.create_group("a/b").unwrap();
    let ds = c
        .create_dataset(
            "a/ds",
            u16_attributes(vec![100, 70], vec![16, 16], json!({"type": "gzip"})),
        )
        .unwrap();
    let data = bytes(1, 100 * 70 * 2);
    ds.write_region(&[0, 0], &[100, 70], &data).unwrap();
    c.set_attributes("a", json!({"k": [1, 2], "s": "v"}).as_object().unwrap())
        .unwrap();

    // Markers below the container root, as n5-aws-s3 writes them.
    let keys = s3.keys(&bucket);
    for marker in ["data/x.n5/a/", "data/x.n5/a/b/", "data/x.n5/a/ds/"] {
        assert!(keys.contains(marker), "{marker} in {keys:?}");
    }
    assert!(
        !keys.contains("data/") && !keys.contains("data/x.n5/"),
        "{keys:?}"
    );
    assert!(keys.contains("data/x.n5/attributes.json"));
    assert!(keys.contains("data/x.n5/a/ds/6/4"));

    // A second handle reads everything back.
    let r = s3.open(&location, Mode::Read).unwrap();
    let ds = r.open_dataset("a/ds").unwrap();
    let mut out = vec![0; data.len()];
    ds.read_region(&[0, 0], &[100, 70], &mut out).unwrap();
    assert_eq!(out, data);
    let mut part = vec![0; 2 * 30 * 20];
    ds.read_region(&[5, 40], &[30, 20], &mut part).unwrap();
    for y in 0..20 {
        let row = (40 + y) * 100 + 5;
        assert_eq!(
            &part[y * 60..(y + 1) * 60],
            &data[row * 2..(row + 30) * 2],
            "row {y}"
        );
    }
    assert_eq!(ds.list_blocks().unwrap().len(), 7 * 5);
    assert!(ds.block_header(&[6, 4]).unwrap().is_some());
    assert_eq!(r.list("").unwrap(), ["a"]);
    assert_eq!(r.list("a").unwrap(), ["b", "ds"]);
    assert_eq!(r.deep_list("").unwrap(), ["a", "a/b", "a/ds"]);
    assert_eq!(r.get_attribute("a", "k[1]").unwrap(), Some(json!(2)));
    assert!(r.exists("a/b").unwrap() && !r.exists("a/nope").unwrap());
    assert!(r.dataset_exists("a/ds").unwrap() && !r.dataset_exists("a").unwrap());
    assert_eq!(r.remove("a").unwrap_err().kind(), ErrorKind::ReadOnly);

    // Raw blocks are read straight into the caller's buffer.
    let raw =
        DatasetAttributes::new(vec![8, 8], vec![4, 4], DataType::U16, Compression::Raw).unwrap();
    let rds = c.create_dataset("raw", raw).unwrap();
    let block = bytes(2, 32);
    rds.write_block(&[1, 1], &[4, 4], &block).unwrap();
    let mut out = vec![0; 32];
    assert!(rds.read_block_into(&[1, 1], &mut out).unwrap());
    assert_eq!(out, block);
    assert!(!rds.read_block_into(&[0, 1], &mut out).unwrap());
    assert_eq!(out, vec![0; 32]);
    assert!(rds.delete_block(&[1, 1]).unwrap() && !rds.delete_block(&[1, 1]).unwrap());

    // Attributes: remove, overwrite.
    assert_eq!(c.remove_attribute("a", "s").unwrap(), Some(json!("v")));
    assert_eq!(c.get_attribute("a", "s").unwrap(), None);

    // Removing a group removes its objects and markers.
    assert!(c.remove("a").unwrap());
    assert!(!c.exists("a").unwrap() && !c.exists("a/ds").unwrap());
    let keys = s3.keys(&bucket);
    assert!(
        keys.iter().all(|k| !k.starts_with("data/x.n5/a/")),
        "{keys:?}"
    );
    assert!(!c.remove("a").unwrap());
    assert_eq!(c.list("").unwrap(), ["raw"]);

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
        store_contract(&s3);
    }
}

fn store_contract(s3: &S3) {
    let bucket = s3.bucket("store");
    let s = s3.store(&format!("s3://{bucket}/root"));
    assert_eq!(s.location(), format!("s3://{bucket}/root"));
    assert_eq!(s.describe("a/b"), format!("s3://{bucket}/root/a/b"));
    let caps = s.capabilities();
    assert!(caps.writable && caps.list && caps.remote);
    assert!(!s.is_dir("").unwrap(), "nothing under the prefix yet");
    assert_eq!(s.list("").unwrap(), None);

    // Keys are encoded per component, whatever they hold.
    let odd = "odd name/ü+%#?&=;x~$'()*,!@[]";
    s.put(odd, &[b"head", b"-", b"tail"]).unwrap();
    assert_eq!(s.get(odd).unwrap().unwrap(), b"head-tail");
    assert_eq!(s.size(odd).unwrap(), Some(9));
    assert!(s.is_dir("").unwrap() && s.is_dir("odd name").unwrap());
    assert_eq!(
        s.list("odd name").unwrap().unwrap().files,
        ["ü+%#?&=;x~$'()*,!@[]"]
    );
    assert_eq!(s.list_keys("").unwrap(), [odd]);
    assert!(s3.keys(&bucket).contains(&format!("root/{odd}")));

    let key = "k/data";
    let content: Vec<u8> = (0..=255u8).collect();
    s.put(key, &[&content]).unwrap();
    let range = |r: ByteRange| s.get_range(key, r).unwrap().unwrap();
    assert_eq!(
        range(ByteRange::Span { offset: 10, len: 5 }),
        &content[10..15]
    );
    assert_eq!(
        range(ByteRange::Span {
            offset: 250,
            len: 50
        }),
        &content[250..]
    );
    assert_eq!(
        range(ByteRange::Span {
            offset: 300,
            len: 5
        }),
        b""
    );
    assert_eq!(range(ByteRange::Span { offset: 3, len: 0 }), b"");
    assert_eq!(range(ByteRange::From(200)), &content[200..]);
    assert_eq!(range(ByteRange::From(256)), b"");
    assert_eq!(range(ByteRange::Suffix(7)), &content[249..]);
    assert_eq!(range(ByteRange::Suffix(1000)), &content[..]);
    assert_eq!(range(ByteRange::Suffix(0)), b"");
    assert_eq!(s.get_range("k/none", ByteRange::From(0)).unwrap(), None);
    assert_eq!(s.get_range("k/none", ByteRange::Suffix(0)).unwrap(), None);
    let mut buf = vec![9; 3];
    assert!(s.get_into(key, &mut buf).unwrap());
    assert_eq!(buf, content);
    assert!(!s.get_into("k/none", &mut buf).unwrap());
    assert_eq!(s.get(""), Ok(None));
    assert_eq!(s.size(""), Ok(None));
    assert_eq!(s.size("k/none"), Ok(None));
    assert!(!s.exists("k").unwrap(), "a directory is not an object");
    let mut a = [0u8; 200];
    let mut b = [0u8; 56];
    assert_eq!(
        s.get_exact(key, &mut [&mut a, &mut b]).unwrap(),
        n5::storage::Exact::Read
    );
    assert_eq!([&a[..], &b[..]].concat(), content);
    s.put("k/empty", &[]).unwrap();
    assert_eq!(s.get("k/empty").unwrap().unwrap(), b"");
    assert_eq!(s.size("k/empty").unwrap(), Some(0));

    // Versions are ETags; conditional writes honour them.
    let (data, v1) = s.get_versioned(key).unwrap().unwrap();
    assert_eq!(data, content);
    assert!(v1.0.len() > 2, "{v1:?}");
    assert!(!s.put_if(key, b"x", &Precondition::Absent).unwrap());
    assert!(s
        .put_if(key, b"second", &Precondition::Matches(v1.clone()))
        .unwrap());
    assert!(!s
        .put_if(key, b"third", &Precondition::Matches(v1.clone()))
        .unwrap());
    let (data, v2) = s.get_versioned(key).unwrap().unwrap();
    assert_eq!((data.as_slice(), v2 != v1), (&b"second"[..], true));
    assert!(s.put_if("k/new", b"1", &Precondition::Absent).unwrap());
    assert!(!s.put_if("k/new", b"2", &Precondition::Absent).unwrap());
    assert_eq!(s.get("k/new").unwrap().unwrap(), b"1");
    assert!(!s
        .put_if(
            "k/gone",
            b"1",
            &Precondition::Matches(Version("\"0123456789abcdef0123456789abcdef\"".into()))
        )
        .unwrap());
    assert_eq!(s.get_versioned("k/gone").unwrap(), None);
    assert_eq!(
        s.put_if("k/x", b"1", &Precondition::Matches(Version("a\nb".into())))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    s.update("k/counter", &mut |old| {
        assert!(old.is_none());
        Ok(Some(b"1".to_vec()))
    })
    .unwrap();
    s.update("k/counter", &mut |old| {
        Ok(Some([old.unwrap(), b"+1"].concat()))
    })
    .unwrap();
    assert_eq!(s.get("k/counter").unwrap().unwrap(), b"1+1");

    // Listings: one level, markers and hidden names left out.
    s.create_dir("k/empty-dir/deeper").unwrap();
    s.put("k/.hidden", &[b"h"]).unwrap();
    s.put("k/.tmp/x", &[b"h"]).unwrap();
    let l = s.list("k").unwrap().unwrap();
    assert_eq!(l.dirs, ["empty-dir"]);
    assert_eq!(l.files, ["counter", "data", "empty", "new"]);
    assert_eq!(
        s.list_keys("k").unwrap(),
        ["counter", "data", "empty", "new"]
    );
    assert!(s.is_dir("k/empty-dir").unwrap() && s.is_dir("k/empty-dir/deeper").unwrap());
    assert_eq!(
        s.list("k/empty-dir/deeper").unwrap().unwrap(),
        Default::default()
    );
    assert_eq!(s.list("k/nothing").unwrap(), None);
    assert!(!s.is_dir("k/data").unwrap());
    assert!(
        !s.is_dir("k/dat").unwrap(),
        "a prefix of a name is no directory"
    );
    s.create_dir("").unwrap();
    assert!(
        !s3.keys(&bucket).contains("root/"),
        "no marker for the root"
    );

    // Deletes.
    assert!(s.delete("k/new").unwrap() && !s.delete("k/new").unwrap());
    assert!(!s.delete("").unwrap());
    assert!(s.delete_dir("k").unwrap());
    assert!(!s.is_dir("k").unwrap());
    assert!(!s.delete_dir("k").unwrap());
    assert_eq!(s.list("").unwrap().unwrap().dirs, ["odd name"]);
    assert!(s3.keys(&bucket).iter().all(|k| !k.starts_with("root/k")));
}

#[test]
fn listings_continue_over_pages() {
    let Some(s3) = anonymous() else { return };
    let bucket = s3.bucket("pages");
    let s = s3.store(&format!("s3://{bucket}/p"));
    let n = 1100;
    std::thread::scope(|scope| {
        for t in 0..16 {
            let s = &s;
            scope.spawn(move || {
                for i in (t..n).step_by(16) {
                    s.put(&format!("many/f{i:04}"), &[b"x"]).unwrap();
                    s.put(&format!("many/d{i:04}/x"), &[b"x"]).unwrap();
                }
            });
        }
    });
    let l = s.list("many").unwrap().unwrap();
    assert_eq!(l.files.len(), n);
    assert_eq!(l.dirs.len(), n);
    assert_eq!(l.files[n - 1], format!("f{:04}", n - 1));
    let keys = s.list_keys("many").unwrap();
    assert_eq!(keys.len(), 2 * n);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    assert!(s.delete_dir("many").unwrap());
    assert!(s3.keys(&bucket).is_empty());
}

#[test]
fn concurrent_attribute_merges_lose_nothing() {
    let Some(s3) = signed() else { return };
    let bucket = s3.bucket("merges");
    let location = format!("s3://{bucket}/m.n5");
    s3.open(&location, Mode::Create)
        .unwrap()
        .create_group("g")
        .unwrap();
    // Through a proxy that counts the PUTs, so the test can tell how often
    // writers collided (the signature covers the proxy's address as the
    // host, which the proxy passes on unchanged).
    let proxy = Proxy::start(s3.server.addr());
    let mut options = s3.options_json();
    options["s3"]["endpoint"] = json!(proxy.url());
    let options = Options::from_json(&options.to_string()).unwrap();
    let (writers, keys) = (8, 6);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let options = &options;
            let location = &location;
            scope.spawn(move || {
                // A handle (a store, a connection pool) of its own, as
                // another machine would have.
                let c = Container::open_with(location, Mode::ReadWrite, options.clone()).unwrap();
                for k in 0..keys {
                    c.set_attribute("g", &format!("w{w}/k{k}"), json!(w * 100 + k))
                        .unwrap();
                }
            });
        }
    });
    let refused = proxy.counters().put - (writers * keys) as u64;
    eprintln!("concurrent merges: {refused} conditional writes refused (412) and retried");
    let doc = s3
        .open(&location, Mode::Read)
        .unwrap()
        .attributes("g")
        .unwrap();
    for w in 0..writers {
        for k in 0..keys {
            assert_eq!(
                doc[format!("w{w}")][format!("k{k}")],
                json!(w * 100 + k),
                "{doc}"
            );
        }
    }
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
