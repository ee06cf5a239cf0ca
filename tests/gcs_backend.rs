//! The Google Cloud Storage backend against a real fake-gcs-server on
//! 127.0.0.1 (n5-testkit starts it; the tests skip, saying why, when its
//! binary is missing, unless N5_REQUIRE_SERVERS=1): containers, groups,
//! datasets, regions and blocks through `gs://` locations, listings with
//! page continuation, directory markers as n5-google-cloud writes them,
//! conditional writes, concurrent attribute merges, a missing bucket,
//! credentials on the wire, and the emulator variable.
//!
//! What the emulator can show about concurrent conditional writes:
//! fake-gcs-server checks `ifGenerationMatch` of a multipart upload and
//! stores the object under one lock, so a write whose generation is stale
//! gets 412 and concurrent writers serialise there; the merge test below
//! checks that every writer's key survives (the retry loop of
//! `Store::update` works against a server that really refuses stale
//! writes). It cannot show real GCS's behaviour under load across regions
//! (its per-object mutation rate limit, 429 and 503 answers under
//! contention), nor `ifGenerationMatch` on simple `uploadType=media`
//! uploads, which it ignores (which is why libn5's conditional writes use
//! multipart uploads).

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::bytes;
use n5::storage::location::Location;
use n5::storage::{ByteRange, Precondition, Store, Version};
use n5::{Compression, Container, DataType, DatasetAttributes, ErrorKind, Mode, Options};
use n5_testkit::client::Request as TkRequest;
use n5_testkit::{Fault, Proxy, Rule};
use serde_json::{json, Value};

/// The shared fake-gcs-server.
struct Gcs {
    server: &'static n5_testkit::GcsServer,
    endpoint: String,
}

fn gcs() -> Option<Gcs> {
    let server = n5_testkit::or_skip(n5_testkit::gcs())?;
    Some(Gcs {
        server,
        endpoint: server.endpoint(),
    })
}

impl Gcs {
    /// A new bucket of its own for a test.
    fn bucket(&self, name: &str) -> String {
        self.server.unique_bucket(name).unwrap()
    }

    /// Every object name in `bucket`, straight from the JSON API.
    fn names(&self, bucket: &str) -> BTreeSet<String> {
        let r = self
            .server
            .send(TkRequest::new("GET", &format!("/storage/v1/b/{bucket}/o")))
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        v["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| i["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn options(&self, extra: Value) -> Options {
        let mut o = json!({ "gcs": { "endpoint": self.endpoint, "anonymous": true } });
        if let Value::Object(m) = extra {
            for (k, v) in m {
                o[k] = v;
            }
        }
        Options::from_json(&o.to_string()).unwrap()
    }

    fn open(&self, location: &str, mode: Mode) -> n5::Result<Container> {
        Container::open_with(location, mode, self.options(json!({})))
    }

    fn store(&self, location: &str) -> Arc<dyn Store> {
        Location::parse(location)
            .unwrap()
            .open(&self.options(json!({})).storage)
            .unwrap()
    }
}

fn u16_bytes(n: usize, seed: u64) -> Vec<u8> {
    bytes(seed, n * 2)
}

#[test]
fn containers_groups_datasets_and_blocks() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("containers");
    let location = format!("gs://{bucket}/data/x.n5");
    let c = gcs.open(&location, Mode::Create).unwrap();
    assert_eq!(c.version().unwrap().as_deref(), Some("4.0.0"));
    c.create_group("a/b").unwrap();
    let attrs = DatasetAttributes::new(
        vec![100, 70],
        vec![16, 16],
        DataType::U16,
        Compression::from_json(&json!({"type": "gzip"})).unwrap(),
    )
    .unwrap();
    let ds = c.create_dataset("a/ds", attrs).unwrap();
    let data = u16_bytes(100 * 70, 1);
    ds.write_region(&[0, 0], &[100, 70], &data).unwrap();
    c.set_attributes("a", json!({"k": [1, 2], "s": "v"}).as_object().unwrap())
        .unwrap();

    // Markers from the bucket's root down, as n5-google-cloud writes them.
    let names = gcs.names(&bucket);
    for marker in [
        "data/",
        "data/x.n5/",
        "data/x.n5/a/",
        "data/x.n5/a/b/",
        "data/x.n5/a/ds/",
    ] {
        assert!(names.contains(marker), "{marker} in {names:?}");
    }
    assert!(names.contains("data/x.n5/a/ds/6/4"));

    // A second handle reads everything back.
    let r = gcs.open(&location, Mode::Read).unwrap();
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
    let block = u16_bytes(16, 2);
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
    let names = gcs.names(&bucket);
    assert!(
        names.iter().all(|n| !n.starts_with("data/x.n5/a/")),
        "{names:?}"
    );
    assert!(!c.remove("a").unwrap());
    assert_eq!(c.list("").unwrap(), ["raw"]);
}

#[test]
fn the_store_contract() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("store");
    let s = gcs.store(&format!("gs://{bucket}/root"));
    assert_eq!(s.location(), format!("gs://{bucket}/root"));
    assert_eq!(s.describe("a/b"), format!("gs://{bucket}/root/a/b"));
    assert!(!s.is_dir("").unwrap(), "nothing under the prefix yet");
    assert_eq!(s.list("").unwrap(), None);

    // Names travel as one path segment, whatever they hold.
    let odd = "odd name/ü+%#?&=;x";
    s.put(odd, &[b"head", b"-", b"tail"]).unwrap();
    assert_eq!(s.get(odd).unwrap().unwrap(), b"head-tail");
    assert_eq!(s.size(odd).unwrap(), Some(9));
    assert!(s.is_dir("").unwrap() && s.is_dir("odd name").unwrap());

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
    assert_eq!(range(ByteRange::Suffix(7)), &content[249..]);
    assert_eq!(range(ByteRange::Suffix(1000)), &content[..]);
    assert_eq!(s.get_range("k/none", ByteRange::From(0)).unwrap(), None);
    let mut buf = vec![9; 3];
    assert!(s.get_into(key, &mut buf).unwrap());
    assert_eq!(buf, content);
    assert!(!s.get_into("k/none", &mut buf).unwrap());
    assert_eq!(s.get(""), Ok(None));
    assert_eq!(s.size(""), Ok(None));
    assert!(!s.exists("k").unwrap(), "a directory is not an object");

    // Versions are generations; conditional writes honour them.
    let (data, v1) = s.get_versioned(key).unwrap().unwrap();
    assert_eq!(data, content);
    assert!(v1.0.bytes().all(|b| b.is_ascii_digit()), "{v1:?}");
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
    assert!(!s
        .put_if("k/gone", b"1", &Precondition::Matches(Version("1".into())))
        .unwrap());
    assert_eq!(s.get_versioned("k/gone").unwrap(), None);
    // The binary payload survives the multipart body, boundary-like bytes and all.
    let tricky: Vec<u8> = b"\r\n--libn5-\r\n--\r\n"
        .iter()
        .chain(content.iter())
        .copied()
        .collect();
    assert!(s
        .put_if("k/tricky", &tricky, &Precondition::Absent)
        .unwrap());
    assert_eq!(s.get("k/tricky").unwrap().unwrap(), tricky);

    // Listings: one level, markers and hidden names left out.
    s.create_dir("k/empty/deeper").unwrap();
    s.put("k/.hidden", &[b"h"]).unwrap();
    s.put("k/.tmp/x", &[b"h"]).unwrap();
    let l = s.list("k").unwrap().unwrap();
    assert_eq!(l.dirs, ["empty"]);
    assert_eq!(l.files, ["data", "new", "tricky"]);
    assert_eq!(s.list_keys("k").unwrap(), ["data", "new", "tricky"]);
    assert!(s.is_dir("k/empty").unwrap() && s.is_dir("k/empty/deeper").unwrap());
    assert_eq!(
        s.list("k/empty/deeper").unwrap().unwrap(),
        Default::default()
    );
    assert_eq!(s.list("k/nothing").unwrap(), None);
    assert!(!s.is_dir("k/data").unwrap());

    // Deletes.
    assert!(s.delete("k/new").unwrap() && !s.delete("k/new").unwrap());
    assert!(s.delete_dir("k").unwrap());
    assert!(!s.is_dir("k").unwrap());
    assert!(!s.delete_dir("k").unwrap());
    assert_eq!(s.list("").unwrap().unwrap().dirs, ["odd name"]);
}

#[test]
fn listings_continue_over_pages() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("pages");
    let s = gcs.store(&format!("gs://{bucket}/p"));
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
    assert!(gcs.names(&bucket).is_empty());
}

#[test]
fn concurrent_attribute_merges_lose_nothing() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("merges");
    let location = format!("gs://{bucket}/m.n5");
    gcs.open(&location, Mode::Create)
        .unwrap()
        .create_group("g")
        .unwrap();
    let (writers, keys) = (8, 6);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let gcs = &gcs;
            let location = &location;
            scope.spawn(move || {
                // A handle (a store, a connection pool) of its own, as
                // another machine would have.
                let c = gcs.open(location, Mode::ReadWrite).unwrap();
                for k in 0..keys {
                    c.set_attribute("g", &format!("w{w}/k{k}"), json!(w * 100 + k))
                        .unwrap();
                }
            });
        }
    });
    let doc = gcs
        .open(&location, Mode::Read)
        .unwrap()
        .attributes("g")
        .unwrap();
    // How often the emulator refused a stale write (412), so that writers
    // started over: usually many times, depending on timing.
    let refused = gcs
        .server
        .log_tail(1_000_000)
        .lines()
        .filter(|l| {
            l.contains(&format!("/b/{bucket}/o?uploadType=multipart")) && l.contains("\" 412 ")
        })
        .count();
    eprintln!("concurrent merges: {refused} conditional writes refused with 412 and retried");
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
fn a_missing_bucket_is_not_found() {
    let Some(gcs) = gcs() else { return };
    for mode in [Mode::Read, Mode::ReadWrite, Mode::Create] {
        let e = gcs.open("gs://no-such-bucket-n5/x.n5", mode).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{mode:?}: {e}");
        assert!(e.message().contains("no-such-bucket-n5"), "{e}");
    }
    let s = gcs.store("gs://no-such-bucket-n5");
    assert_eq!(s.is_dir("").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(s.put("a", &[b"x"]).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(s.list("").unwrap_err().kind(), ErrorKind::NotFound);
    // A container that is not there in an existing bucket.
    let bucket = gcs.bucket("missing");
    let e = gcs
        .open(&format!("gs://{bucket}/nothing.n5"), Mode::Read)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[test]
fn faults_are_retried_refused_or_reported() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("faults");
    let proxy = Proxy::start(gcs.server.addr());
    let options = |credentials: Value| {
        let mut gcs_options = json!({ "endpoint": proxy.url() });
        for (k, v) in credentials.as_object().unwrap() {
            gcs_options[k] = v.clone();
        }
        json!({ "gcs": gcs_options, "retry": { "max_attempts": 3, "max_seconds": 20 } })
    };
    let open = |credentials: Value| -> Arc<dyn Store> {
        let o = Options::from_json(&options(credentials).to_string()).unwrap();
        Location::parse(&format!("gs://{bucket}/f"))
            .unwrap()
            .open(&o.storage)
            .unwrap()
    };
    let s = open(json!({ "anonymous": true }));
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
    // A range answer that is not the range asked for is retried, never data.
    proxy.set_fault(Rule::all().first(1), Fault::WrongRange { shift: 3 });
    assert_eq!(s.get_range("obj", span).unwrap().unwrap(), &content[10..30]);
    proxy.set_fault(Rule::all(), Fault::WrongRange { shift: 3 });
    let e = s.get_range("obj", span).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    assert!(e.message().contains(&format!("gs://{bucket}/f/obj")), "{e}");
    // A server that ignores the range: the slice is cut from the whole.
    proxy.set_fault(Rule::all(), Fault::IgnoreRange);
    assert_eq!(s.get_range("obj", span).unwrap().unwrap(), &content[10..30]);
    assert_eq!(
        s.get_range("obj", ByteRange::Suffix(5)).unwrap().unwrap(),
        &content[95..]
    );

    // 403: missing to an anonymous read of a key, refused otherwise.
    proxy.set_fault(Rule::all().path_contains("alt=media"), Fault::status(403));
    assert_eq!(s.get("obj").unwrap(), None);
    let signed = open(json!({ "token": "ya29.test-token" }));
    let e = signed.get("obj").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    assert!(
        e.message().contains("options gcs.token") && !e.message().contains("ya29"),
        "{e}"
    );
    proxy.set_fault(Rule::all().path_contains("/o?"), Fault::status(403));
    let e = s.list("").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    assert!(e.message().contains("anonymous"), "{e}");
    proxy.set_fault(Rule::all().methods(&["POST"]), Fault::status(403));
    assert_eq!(
        s.put("x", &[b"1"]).unwrap_err().kind(),
        ErrorKind::AccessDenied
    );

    // A 404 that says the bucket is gone, as GCS words it.
    let gone = r#"{"error": {"code": 404, "message": "The specified bucket does not exist.",
                  "errors": [{"message": "The specified bucket does not exist.", "reason": "notFound"}]}}"#;
    proxy.set_fault(Rule::all(), Fault::status_with_body(404, gone));
    let e = s.get("obj").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.message().contains(&bucket), "{e}");

    // Malformed listings and metadata are errors naming the URL.
    for body in [
        "{not json",
        r#"{"items": [{"size": "1"}]}"#,
        r#"{"items": 5}"#,
    ] {
        proxy.set_fault(
            Rule::all().path_contains("/o?"),
            Fault::status_with_body(200, body),
        );
        let e = s.list("").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{body}: {e}");
        assert!(e.message().contains(&proxy.url()), "{e}");
    }
    proxy.set_fault(
        Rule::all().path_contains("/o?"),
        Fault::status_with_body(200, r#"{"nextPageToken": "same"}"#),
    );
    assert_eq!(s.list_keys("").unwrap_err().kind(), ErrorKind::Io);
    proxy.set_fault(
        Rule::all().path_contains("fields=size"),
        Fault::status_with_body(200, r#"{"size": "-1"}"#),
    );
    assert_eq!(s.size("obj").unwrap_err().kind(), ErrorKind::Io);
    proxy.clear_faults();
    assert_eq!(s.size("obj").unwrap(), Some(100));
}

/// Request lines and their `Authorization` headers.
type Log = Mutex<Vec<(String, Option<String>)>>;

/// A forwarding proxy of the test's own that records each request's line
/// and `Authorization` header (testkit's proxy counts requests but keeps no
/// headers). One request per connection, `Connection: close` both ways.
struct Recorder {
    addr: std::net::SocketAddr,
    seen: Arc<Log>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    fn start(upstream: std::net::SocketAddr) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopping) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let (Ok(client), log) = (client, log.clone()) else {
                    continue;
                };
                std::thread::spawn(move || Recorder::forward(client, upstream, &log));
            }
        });
        Recorder {
            addr,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn forward(client: TcpStream, upstream: std::net::SocketAddr, log: &Log) {
        client
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut reader = BufReader::new(client.try_clone().unwrap());
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut head = line.clone();
        let (mut length, mut authorization) = (0usize, None);
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            if header.trim_end().is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "authorization" => authorization = Some(value.trim().to_string()),
                "connection" => continue,
                _ => {}
            }
            head.push_str(&header);
        }
        head.push_str("Connection: close\r\n\r\n");
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        log.lock()
            .unwrap()
            .push((line.trim_end().to_string(), authorization));
        let mut up = TcpStream::connect(upstream).unwrap();
        up.write_all(head.as_bytes()).unwrap();
        up.write_all(&body).unwrap();
        let mut response = Vec::new();
        up.read_to_end(&mut response).unwrap();
        let mut client = client;
        let _ = client.write_all(&response);
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn take(&self) -> Vec<(String, Option<String>)> {
        std::mem::take(&mut self.seen.lock().unwrap())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a small container session sends: create, a group with an
/// attribute, a block, a listing.
fn session(location: &str, options: Options) {
    let c = Container::open_with(location, Mode::Create, options).unwrap();
    c.create_group("g").unwrap();
    c.set_attribute("g", "a", json!(1)).unwrap();
    let ds = c
        .create_dataset(
            "d",
            DatasetAttributes::new(vec![4], vec![4], DataType::U8, Compression::Raw).unwrap(),
        )
        .unwrap();
    ds.write_block(&[0], &[4], b"abcd").unwrap();
    assert_eq!(c.list("").unwrap(), ["d", "g"]);
    assert_eq!(c.get_attribute("g", "a").unwrap(), Some(json!(1)));
}

#[test]
fn credentials_on_the_wire() {
    if let Ok(bucket) = std::env::var("N5_GCS_TEST_EMULATOR_CHILD") {
        // The child process: STORAGE_EMULATOR_HOST names the parent's
        // recorder, GOOGLE_APPLICATION_CREDENTIALS a file that does not
        // exist (the emulator gets no credentials, so it is never read).
        session(&format!("gs://{bucket}/env.n5"), Options::default());
        return;
    }
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("wire");
    let recorder = Recorder::start(gcs.server.addr());

    // An explicit token goes with every request as a Bearer token.
    let options = Options::from_json(
        &json!({ "gcs": { "endpoint": recorder.endpoint(), "token": "ya29.wire-token" } })
            .to_string(),
    )
    .unwrap();
    session(&format!("gs://{bucket}/token.n5"), options);
    let seen = recorder.take();
    assert!(seen.len() > 5, "{seen:?}");
    for (line, authorization) in &seen {
        assert_eq!(
            authorization.as_deref(),
            Some("Bearer ya29.wire-token"),
            "{line}"
        );
    }

    // STORAGE_EMULATOR_HOST (host:port) is the endpoint, and the emulator
    // gets no credentials from the environment: in a child process, since
    // the environment is the process's.
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "credentials_on_the_wire", "--test-threads", "1"])
        .env("N5_GCS_TEST_EMULATOR_CHILD", &bucket)
        .env("STORAGE_EMULATOR_HOST", recorder.addr.to_string())
        .env(
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/nonexistent/n5-test-key.json",
        )
        .output()
        .unwrap();
    assert!(
        child.status.success(),
        "{}{}",
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    let seen = recorder.take();
    assert!(seen.len() > 5, "{seen:?}");
    for (line, authorization) in &seen {
        assert_eq!(authorization, &None, "{line}");
    }
    assert!(gcs.names(&bucket).contains("env.n5/d/0"));
}
