//! Faults between libn5 and real servers: a proxy of the tests' own
//! (n5-testkit) in front of S3 (SeaweedFS), GCS (fake-gcs-server) and a
//! plain HTTP server (nginx) injects 503, 500 and 429 answers, resets,
//! closed connections, stalls, truncated bodies, wrong ranges, lying
//! lengths, endless bodies and redirect loops. Region reads (and, on the
//! object stores, region writes) under a share of faults return exactly the
//! right data; under faults on every request they fail with
//! `ErrorKind::Network` within the retry budget, naming the location, the
//! HTTP status and the server's error code; never wrong data.

mod common;

use std::time::{Duration, Instant};

use common::places::{object_stores, options_json, Kind, Place};
use common::{bytes, compression, Scratch};
use n5::{Container, DataType, DatasetAttributes, ErrorKind, Mode, Options};
use n5_testkit::{Fault, Proxy, Rule, StallAt};
use serde_json::{json, Value};

const DIMS: [u64; 3] = [48, 40, 24];
const BLOCK: [u32; 3] = [16, 16, 8];

/// The retry settings of the clients behind the proxy: a stall of a second
/// is abandoned.
fn retry() -> Value {
    json!({"max_attempts": 8, "max_seconds": 30, "request_timeout_seconds": 1})
}

/// A dataset with known content at `c`, returned with the content.
fn write_dataset(c: &Container) -> Vec<u8> {
    let a = DatasetAttributes::new(
        DIMS.to_vec(),
        BLOCK.to_vec(),
        DataType::U16,
        compression(r#"{"type":"gzip","level":1}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    let data = bytes(42, DIMS.iter().product::<u64>() as usize * 2);
    d.write_region(&[0; 3], &DIMS, &data).unwrap();
    data
}

/// A location and its options, through the proxy.
struct Target {
    name: &'static str,
    location: String,
    options: Value,
    writable: bool,
}

impl Target {
    fn open(&self) -> n5::Result<Container> {
        let mode = if self.writable {
            Mode::ReadWrite
        } else {
            Mode::Read
        };
        Container::open_with(
            &self.location,
            mode,
            Options::from_json(&self.options.to_string()).unwrap(),
        )
    }
}

/// The endpoint of `place`'s server swapped for the proxy's.
fn through(place: &Place, proxy: &Proxy) -> Target {
    let mut options = Value::Object(options_json(place));
    let backend = match place.kind {
        Kind::S3 => "s3",
        _ => "gcs",
    };
    options[backend]["endpoint"] = json!(proxy.url());
    options["retry"] = retry();
    Target {
        name: backend,
        location: place.location.clone(),
        options,
        writable: true,
    }
}

/// Read the whole dataset with `fault` on the requests `rule` selects: the
/// data must come back exact.
fn survives(t: &Target, proxy: &Proxy, rule: Rule, fault: Fault, want: &[u8], what: &str) {
    let c = t
        .open()
        .unwrap_or_else(|e| panic!("{}: {what}: open: {e}", t.name));
    let d = c.open_dataset("d").unwrap();
    proxy.set_fault(rule, fault);
    let mut out = vec![0u8; want.len()];
    let r = d.read_region(&[0; 3], &DIMS, &mut out);
    proxy.clear_faults();
    r.unwrap_or_else(|e| panic!("{}: {what}: {e}", t.name));
    assert!(out == want, "{}: {what}: wrong data", t.name);
    // A block's header is a range read.
    proxy.set_fault(Rule::all().first(2), Fault::WrongRange { shift: 3 });
    let header = d.block_header(&[1, 1, 1]);
    proxy.clear_faults();
    assert_eq!(
        header.unwrap().unwrap().size,
        vec![16, 16, 8],
        "{}: {what}",
        t.name
    );
}

/// Every fault the proxy has, on a share of the requests: all absorbed.
fn absorbed(t: &Target, proxy: &Proxy, want: &[u8]) {
    let cases: Vec<(&str, Rule, Fault)> = vec![
        ("503 SlowDown", Rule::fraction(0.3, 1), Fault::slow_down()),
        ("500", Rule::fraction(0.3, 2), Fault::status(500)),
        ("429", Rule::fraction(0.3, 3), Fault::status(429)),
        ("reset", Rule::fraction(0.2, 4), Fault::Reset),
        ("closed", Rule::fraction(0.2, 5), Fault::Close),
        (
            "reset mid-body",
            Rule::fraction(0.2, 6),
            Fault::ResetMidBody { after: 100 },
        ),
        (
            "truncated body",
            Rule::fraction(0.2, 7),
            Fault::Truncate { after: 50 },
        ),
        (
            "stalled body",
            Rule::fraction(0.1, 8),
            Fault::Stall {
                at: StallAt::AfterBodyBytes(10),
                duration: Duration::from_secs(3),
                then_close: false,
            },
        ),
        (
            "stalled answer",
            Rule::all().first(3),
            Fault::Stall {
                at: StallAt::BeforeResponse,
                duration: Duration::from_secs(3),
                then_close: true,
            },
        ),
        (
            "lying length",
            Rule::fraction(0.2, 9),
            Fault::HugeContentLength { claimed: 1 << 20 },
        ),
        ("range ignored", Rule::all(), Fault::IgnoreRange),
    ];
    for (what, rule, fault) in cases {
        let start = Instant::now();
        survives(t, proxy, rule, fault, want, what);
        eprintln!(
            "{}: {what}: exact data in {:.1} s",
            t.name,
            start.elapsed().as_secs_f64()
        );
    }
}

/// Faults on every request: a network error within the budget, naming the
/// location and the status; never data.
fn refused(t: &Target, proxy: &Proxy, want_in_message: &str) {
    let c = t.open().unwrap();
    let d = c.open_dataset("d").unwrap();
    let mut out = vec![0u8; DIMS.iter().product::<u64>() as usize * 2];
    for (what, fault, needle) in [
        ("503 on every request", Fault::slow_down(), "503"),
        ("reset on every request", Fault::Reset, "connection"),
        (
            "wrong range on every request",
            Fault::WrongRange { shift: 5 },
            "range",
        ),
        (
            "endless body",
            Fault::EndlessBody {
                declare_length: true,
            },
            "bytes",
        ),
        ("redirect loop", Fault::RedirectLoop, "302"),
    ] {
        proxy.set_fault(Rule::all(), fault);
        let start = Instant::now();
        let e = if what.starts_with("wrong range") {
            d.block_header(&[0, 0, 0]).unwrap_err()
        } else {
            d.read_region(&[0; 3], &DIMS, &mut out).unwrap_err()
        };
        proxy.clear_faults();
        let elapsed = start.elapsed();
        // An answer no retry can fix (a redirect where none belongs) is
        // an I/O error; the rest ran out of the retry budget.
        let kinds: &[ErrorKind] = if what == "redirect loop" {
            &[ErrorKind::Network, ErrorKind::Io]
        } else {
            &[ErrorKind::Network]
        };
        assert!(kinds.contains(&e.kind()), "{}: {what}: {e}", t.name);
        let m = e.message();
        assert!(m.contains(want_in_message), "{}: {what}: {m}", t.name);
        assert!(m.to_lowercase().contains(needle), "{}: {what}: {m}", t.name);
        assert!(
            elapsed < Duration::from_secs(60),
            "{}: {what}: took {elapsed:?}",
            t.name
        );
        eprintln!("{}: {what}: {m} ({:.1} s)", t.name, elapsed.as_secs_f64());
    }
}

#[test]
fn object_stores_absorb_faults_or_report_them() {
    for place in object_stores("faults") {
        let want = write_dataset(&place.open(Mode::Create).unwrap());
        let upstream = match place.kind {
            Kind::S3 => n5_testkit::s3_signed().unwrap().addr(),
            _ => n5_testkit::gcs().unwrap().addr(),
        };
        let proxy = Proxy::start(upstream);
        let t = through(&place, &proxy);
        absorbed(&t, &proxy, &want);
        // Writes under faults: every block lands whole.
        let c = t.open().unwrap();
        let d = c.open_dataset("d").unwrap();
        let new = bytes(7, want.len());
        proxy.set_fault(
            Rule::fraction(0.3, 11).methods(&["PUT", "POST"]),
            Fault::slow_down(),
        );
        d.write_region(&[0; 3], &DIMS, &new).unwrap();
        proxy.set_fault(
            Rule::fraction(0.2, 12).methods(&["PUT", "POST"]),
            Fault::Reset,
        );
        c.set_attribute("", "under-faults", json!(true)).unwrap();
        proxy.clear_faults();
        let mut out = vec![0u8; new.len()];
        place
            .open(Mode::Read)
            .unwrap()
            .open_dataset("d")
            .unwrap()
            .read_region(&[0; 3], &DIMS, &mut out)
            .unwrap();
        assert!(out == new, "{}: writes under faults", t.name);
        let prefix = place.location.split("://").next().unwrap().to_string() + "://";
        refused(&t, &proxy, &prefix);
        let counted = proxy.counters();
        eprintln!(
            "{}: {} requests through the proxy",
            t.name, counted.requests
        );
    }
}

#[test]
fn plain_http_absorbs_faults_or_reports_them() {
    let s = Scratch::new("http-faults");
    let want = write_dataset(&Container::open(s.join("c.n5"), Mode::Create).unwrap());
    let site = n5_testkit::server_or_skip!(n5_testkit::http(s.path()));
    let proxy = Proxy::start(site.addr());
    let t = Target {
        name: "http",
        location: format!("{}{}/c.n5", proxy.url(), site.path()),
        options: json!({ "retry": retry() }),
        writable: false,
    };
    absorbed(&t, &proxy, &want);
    refused(&t, &proxy, &proxy.url());
}
