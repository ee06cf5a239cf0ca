//! The Google Cloud Storage backend against a real fake-gcs-server on
//! 127.0.0.1 (n5-testkit starts it; the tests skip, saying why, when its
//! binary is missing, unless N5_REQUIRE_SERVERS=1): containers, groups,
//! datasets, regions and blocks through `gs://` locations, listings with
//! page continuation, directory markers as n5-google-cloud writes them,
//! conditional writes, concurrent attribute merges (these are the checks
//! of `common::object_store`, shared with the S3 backend), a missing bucket,
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

use common::object_store::{self, Bucket};
use n5::storage::location::Location;
use n5::storage::{ByteRange, Store, Version};
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
        object_store::open_store(location, &self.options(json!({})))
    }
}

impl Gcs {
    /// `bucket` as the shared checks of `common::object_store` see it.
    fn checked<'a>(&self, bucket: &str, names: &'a dyn Fn() -> BTreeSet<String>) -> Bucket<'a> {
        Bucket {
            url: format!("gs://{bucket}"),
            options: self.options(json!({})),
            names,
        }
    }
}

#[test]
fn containers_groups_datasets_and_blocks() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("containers");
    let names = || gcs.names(&bucket);
    // Markers from the bucket's root down, as n5-google-cloud writes them.
    object_store::containers_groups_datasets_and_blocks(
        &gcs.checked(&bucket, &names),
        &[
            "data/",
            "data/x.n5/",
            "data/x.n5/a/",
            "data/x.n5/a/b/",
            "data/x.n5/a/ds/",
        ],
        &[],
    );
}

#[test]
fn the_store_contract() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("store");
    let names = || gcs.names(&bucket);
    // Versions are generations.
    object_store::store_contract(
        &gcs.checked(&bucket, &names),
        &|v| !v.0.is_empty() && v.0.bytes().all(|b| b.is_ascii_digit()),
        Version("1".into()),
    );
}

#[test]
fn listings_continue_over_pages() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("pages");
    let names = || gcs.names(&bucket);
    object_store::listings_continue_over_pages(&gcs.checked(&bucket, &names));
}

#[test]
fn concurrent_attribute_merges_lose_nothing() {
    let Some(gcs) = gcs() else { return };
    let bucket = gcs.bucket("merges");
    let names = || gcs.names(&bucket);
    let (writers, keys) = (8, 6);
    object_store::concurrent_attribute_merges(
        &gcs.checked(&bucket, &names),
        "m.n5",
        &gcs.options(json!({})),
        writers,
        keys,
    );
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
        n5::storage::open(
            &Location::parse(&format!("gs://{bucket}/f")).unwrap(),
            &o.storage,
        )
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
