//! Tests of the fault and latency proxy against the tiny upstream of
//! common/mod.rs (no server binaries needed): forwarding with keep-alive and
//! every framing, each fault kind, the rules, latency under 64 concurrent
//! connections, the counters and the stop on drop.

mod common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{object, tiny_upstream, Failure, Raw, OBJECT_LEN};
use n5_testkit::{Fault, Proxy, Rule, StallAt};

#[test]
fn forwards_many_requests_on_one_keepalive_connection() {
    let (up, seen) = tiny_upstream();
    let proxy = Proxy::start(up);
    let mut c = Raw::connect(proxy.addr());
    let obj = object(OBJECT_LEN);
    for i in 0..20usize {
        let r = c.request("GET", "/obj", &[], b"");
        assert_eq!(r.status, 200);
        assert_eq!(r.body, obj);
        assert_eq!(r.header("etag"), Some("\"obj\""));
        let range = format!("bytes={}-{}", i * 10, i * 10 + 99);
        let r = c.request("GET", "/obj", &[("Range", &range)], b"");
        assert_eq!(r.status, 206);
        assert_eq!(r.body, &obj[i * 10..i * 10 + 100]);
        assert_eq!(
            r.header("content-range").unwrap(),
            format!("bytes {}-{}/{OBJECT_LEN}", i * 10, i * 10 + 99)
        );
    }
    let r = c.request("HEAD", "/obj", &[], b"");
    assert_eq!(
        (r.status, r.header("content-length")),
        (200, Some("100000"))
    );
    assert!(r.body.is_empty());
    let r = c.request("PUT", "/x", &[], &[7u8; 12345]);
    assert_eq!(r.text(), "got 12345 bytes");
    let r = c.request("PUT", "/empty-put", &[], b"");
    assert_eq!(r.text(), "got 0 bytes");
    let r = c.request("POST", "/x", &[], b"abc");
    assert_eq!(r.text(), "got 3 bytes");
    let r = c.request("DELETE", "/gone", &[], b"");
    assert_eq!(r.status, 404);
    // Chunked from the upstream stays chunked, and the connection alive.
    let r = c.request("GET", "/chunked", &[], b"");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.text(), "hello chunked world");
    let r = c.request("GET", "/empty", &[], b"");
    assert_eq!((r.status, r.body.len()), (204, 0));
    // Still the same connection, 47 requests so far.
    assert_eq!(proxy.counters().connections, 1);
    // Close-delimited from the upstream: the proxy closes after it.
    let r = c.request("GET", "/close", &[], b"");
    assert_eq!(r.text(), "until close");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed_within(Duration::from_secs(5)));

    let n = proxy.counters();
    assert_eq!(n.requests, 48);
    assert_eq!(
        (n.get, n.head, n.put, n.post, n.delete, n.other),
        (43, 1, 2, 1, 1, 0)
    );
    assert_eq!(n.faults, 0);
    assert!(n.bytes_to_client > 20 * OBJECT_LEN as u64, "{n:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 48);
    proxy.reset_counters();
    assert_eq!(proxy.counters(), n5_testkit::Counters::default());
}

#[test]
fn chunked_request_body_with_expect_continue() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    let mut c = Raw::connect(proxy.addr());
    c.send(
        "PUT",
        "/x",
        &[("Transfer-Encoding", "chunked"), ("Expect", "100-continue")],
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    )
    .unwrap();
    let r = c.response("PUT", 1 << 20).unwrap();
    assert_eq!(r.text(), "got 11 bytes");
    // The connection goes on.
    assert_eq!(
        c.request("GET", "/obj", &[("Range", "bytes=0-0")], b"")
            .body,
        [0]
    );
}

#[test]
fn status_faults_answer_without_forwarding() {
    let (up, seen) = tiny_upstream();
    let proxy = Proxy::start(up);
    proxy.set_fault(Rule::all().methods(&["GET"]).first(2), Fault::slow_down());
    let mut c = Raw::connect(proxy.addr());
    for _ in 0..2 {
        let r = c.request("GET", "/obj", &[], b"");
        assert_eq!(r.status, 503);
        assert!(r.text().contains("<Code>SlowDown</Code>"), "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/xml"));
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    assert_eq!(c.request("GET", "/obj", &[], b"").status, 200);
    assert_eq!(proxy.counters().faults, 2);

    for (status, code) in [
        (500, "InternalError"),
        (429, "TooManyRequests"),
        (403, "AccessDenied"),
        (404, "NoSuchKey"),
    ] {
        proxy.set_fault(Rule::all(), Fault::status(status));
        let r = c.request("GET", "/obj", &[], b"");
        assert_eq!(r.status, status);
        assert!(r.text().contains(&format!("<Code>{code}</Code>")));
    }
    proxy.set_fault(Rule::all(), Fault::status_with_body(500, "custom text"));
    let r = c.request("PUT", "/x", &[], b"data");
    assert_eq!((r.status, r.text().as_str()), (500, "custom text"));
    let r = c.request("HEAD", "/obj", &[], b"");
    assert_eq!((r.status, r.body.len()), (500, 0));
    proxy.set_fault(
        Rule::all(),
        Fault::Status {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: String::new(),
        },
    );
    let r = c.request("GET", "/obj", &[], b"");
    assert_eq!((r.status, r.header("retry-after")), (429, Some("1")));
    proxy.clear_faults();
    assert_eq!(c.request("GET", "/obj", &[], b"").status, 200);
    assert_eq!(
        proxy.counters().connections,
        1,
        "status faults keep the connection"
    );
}

#[test]
fn close_and_reset_without_answering() {
    let (up, seen) = tiny_upstream();
    let proxy = Proxy::start(up);
    proxy.set_fault(Rule::all(), Fault::Close);
    let mut c = Raw::connect(proxy.addr());
    c.send("GET", "/obj", &[], b"").unwrap();
    assert!(matches!(c.response("GET", 1 << 20), Err(Failure::Closed)));

    proxy.set_fault(Rule::all(), Fault::Reset);
    let mut c = Raw::connect(proxy.addr());
    c.send("GET", "/obj", &[], b"").unwrap();
    match c.response("GET", 1 << 20) {
        Err(Failure::Reset { head: None }) => {}
        other => panic!("expected a reset, got {other:?}"),
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0, "not forwarded");
}

#[test]
fn reset_and_truncate_mid_body() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    proxy.set_fault(Rule::all(), Fault::Truncate { after: 500 });
    let mut c = Raw::connect(proxy.addr());
    c.send("GET", "/obj", &[], b"").unwrap();
    match c.response("GET", 1 << 20) {
        Err(Failure::Short { resp, expected }) => {
            assert_eq!(expected, OBJECT_LEN as u64);
            assert_eq!(resp.status, 200);
            assert_eq!(resp.body, &object(OBJECT_LEN)[..500]);
        }
        other => panic!("expected a short body, got {other:?}"),
    }

    proxy.set_fault(Rule::all(), Fault::ResetMidBody { after: 1000 });
    let mut c = Raw::connect(proxy.addr());
    c.send("GET", "/obj", &[], b"").unwrap();
    match c.response("GET", 1 << 20) {
        // The kernel may drop what arrived before the RST, head included.
        Err(Failure::Reset { head }) => {
            if let Some(h) = head {
                assert!(h.body.len() <= 1000);
            }
        }
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[test]
fn stalls() {
    let (up, seen) = tiny_upstream();
    let proxy = Proxy::start(up);
    let obj = object(OBJECT_LEN);

    // Before forwarding, then go on: slow but complete.
    proxy.set_fault(
        Rule::all().first(1),
        Fault::Stall {
            at: StallAt::BeforeForwarding,
            duration: Duration::from_millis(400),
            then_close: false,
        },
    );
    let t = Instant::now();
    let r = common::request(proxy.addr(), "GET", "/obj", &[], b"");
    assert!(t.elapsed() >= Duration::from_millis(400));
    assert_eq!(r.body, obj);

    // Before forwarding, then close: the upstream never sees the PUT.
    let before = seen.load(Ordering::SeqCst);
    proxy.set_fault(
        Rule::all(),
        Fault::Stall {
            at: StallAt::BeforeForwarding,
            duration: Duration::from_millis(50),
            then_close: true,
        },
    );
    let mut c = Raw::connect(proxy.addr());
    c.send("PUT", "/x", &[], b"data").unwrap();
    assert!(matches!(c.response("PUT", 1024), Err(Failure::Closed)));
    assert_eq!(seen.load(Ordering::SeqCst), before);

    // Before the response, then close: the upstream applied the PUT.
    proxy.set_fault(
        Rule::all(),
        Fault::Stall {
            at: StallAt::BeforeResponse,
            duration: Duration::from_millis(50),
            then_close: true,
        },
    );
    let mut c = Raw::connect(proxy.addr());
    c.send("PUT", "/x", &[], b"data").unwrap();
    assert!(matches!(c.response("PUT", 1024), Err(Failure::Closed)));
    assert_eq!(seen.load(Ordering::SeqCst), before + 1);

    // After the head: a client with a short read timeout gives up.
    proxy.set_fault(
        Rule::all(),
        Fault::Stall {
            at: StallAt::AfterHead,
            duration: Duration::from_secs(3),
            then_close: true,
        },
    );
    let mut c = Raw::connect_timeout(proxy.addr(), Duration::from_millis(500));
    c.send("GET", "/obj", &[], b"").unwrap();
    match c.response("GET", 1 << 20) {
        Err(Failure::Timeout { head: Some(h) }) => assert_eq!((h.status, h.body.len()), (200, 0)),
        other => panic!("expected a timeout after the head, got {other:?}"),
    }

    // Mid-body, then go on: complete and right, just late.
    proxy.set_fault(
        Rule::all(),
        Fault::Stall {
            at: StallAt::AfterBodyBytes(100),
            duration: Duration::from_millis(300),
            then_close: false,
        },
    );
    let t = Instant::now();
    let mut c = Raw::connect(proxy.addr());
    let r = c.request("GET", "/obj", &[], b"");
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.body, obj);
    // And the connection is kept.
    proxy.clear_faults();
    assert_eq!(c.request("GET", "/obj", &[], b"").body, obj);

    // Mid-body, then close: a short body.
    proxy.set_fault(
        Rule::all(),
        Fault::Stall {
            at: StallAt::AfterBodyBytes(100),
            duration: Duration::from_millis(50),
            then_close: true,
        },
    );
    let mut c = Raw::connect(proxy.addr());
    c.send("GET", "/obj", &[], b"").unwrap();
    match c.response("GET", 1 << 20) {
        Err(Failure::Short { resp, .. }) => assert_eq!(resp.body.len(), 100),
        other => panic!("expected a short body, got {other:?}"),
    }
}

#[test]
fn wrong_and_ignored_ranges() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    let obj = object(OBJECT_LEN);
    proxy.set_fault(Rule::all(), Fault::WrongRange { shift: 7 });
    let mut c = Raw::connect(proxy.addr());
    let r = c.request("GET", "/obj", &[("Range", "bytes=10-19")], b"");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 17-26/100000"));
    assert_eq!(
        r.body,
        &obj[10..20],
        "the bytes asked for, labelled as others"
    );
    // No Range: unchanged.
    assert_eq!(c.request("GET", "/obj", &[], b"").body, obj);

    proxy.set_fault(Rule::all(), Fault::IgnoreRange);
    let r = c.request("GET", "/obj", &[("Range", "bytes=10-19")], b"");
    assert_eq!((r.status, r.body.len()), (200, OBJECT_LEN));
}

#[test]
fn huge_content_length_and_endless_bodies() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    proxy.set_fault(Rule::all(), Fault::HugeContentLength { claimed: 1 << 40 });
    let mut c = Raw::connect(proxy.addr());
    c.send("GET", "/obj", &[], b"").unwrap();
    match c.response("GET", 1 << 20) {
        Err(Failure::Short { resp, expected }) => {
            assert_eq!(expected, 1 << 40);
            assert_eq!(resp.body.len(), OBJECT_LEN);
        }
        other => panic!("expected a short body, got {other:?}"),
    }

    for declare_length in [false, true] {
        proxy.set_fault(Rule::all(), Fault::EndlessBody { declare_length });
        let mut c = Raw::connect(proxy.addr());
        c.send("GET", "/obj", &[], b"").unwrap();
        // A close-delimited body is read up to 8 MiB; of the one with a
        // 2 GiB Content-Length only the head is read.
        let limit = 8 << 20;
        let r = if declare_length {
            c.response("HEAD", 0).unwrap()
        } else {
            c.response("GET", limit).unwrap()
        };
        assert_eq!(r.status, 200);
        if declare_length {
            assert_eq!(r.header("content-length"), Some("2147483648"));
        } else {
            assert_eq!(r.body.len() as u64, limit);
            assert!(r.body.iter().all(|&b| b == 0));
        }
        drop(c);
    }
    // Once the clients are gone, the proxy stops writing.
    std::thread::sleep(Duration::from_millis(500));
    let a = proxy.counters().bytes_to_client;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(proxy.counters().bytes_to_client, a);
}

#[test]
fn redirect_loop() {
    let (up, seen) = tiny_upstream();
    let proxy = Proxy::start(up);
    proxy.set_fault(Rule::all(), Fault::RedirectLoop);
    let mut c = Raw::connect(proxy.addr());
    let own = format!("http://{}/obj?x=1", proxy.addr());
    for _ in 0..3 {
        let r = c.request("GET", "/obj?x=1", &[], b"");
        assert_eq!(r.status, 302);
        assert_eq!(r.header("location"), Some(own.as_str()));
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}

#[test]
fn rules_select_requests() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    let mut c = Raw::connect(proxy.addr());

    proxy.set_fault(Rule::every_nth(3), Fault::status(500));
    let statuses: Vec<u16> = (0..9)
        .map(|_| {
            c.request("GET", "/obj", &[("Range", "bytes=0-0")], b"")
                .status
        })
        .collect();
    assert_eq!(statuses, [206, 206, 500, 206, 206, 500, 206, 206, 500]);

    proxy.set_fault(
        Rule::all().path_contains("/obj").methods(&["PUT"]),
        Fault::status(403),
    );
    assert_eq!(c.request("PUT", "/obj/a", &[], b"x").status, 403);
    assert_eq!(c.request("PUT", "/other", &[], b"x").status, 200);
    assert_eq!(
        c.request("GET", "/obj", &[("Range", "bytes=0-0")], b"")
            .status,
        206
    );

    // The same seed picks the same requests.
    let run = |seed: u64| -> Vec<bool> {
        let proxy = Proxy::start(up);
        proxy.set_fault(Rule::fraction(0.3, seed), Fault::status(503));
        let mut c = Raw::connect(proxy.addr());
        (0..200)
            .map(|_| {
                c.request("GET", "/obj", &[("Range", "bytes=0-0")], b"")
                    .status
                    == 503
            })
            .collect()
    };
    let a = run(42);
    let picked = a.iter().filter(|&&x| x).count();
    assert!((30..=90).contains(&picked), "{picked} of 200");
    assert_eq!(a, run(42));
    assert_ne!(a, run(43));

    // Faults in order: the first rule that selects wins.
    proxy.set_fault(Rule::all().first(1), Fault::status(500));
    proxy.add_fault(Rule::all().first(1), Fault::status(404));
    let statuses: Vec<u16> = (0..3)
        .map(|_| {
            c.request("GET", "/obj", &[("Range", "bytes=0-0")], b"")
                .status
        })
        .collect();
    assert_eq!(statuses, [500, 404, 206]);
}

#[test]
fn latency_does_not_serialise_64_connections() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    proxy.set_latency(Duration::from_millis(250));
    let addr = proxy.addr();
    let t = Instant::now();
    let threads: Vec<_> = (0..64)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                let a = Instant::now();
                let r = c.request("GET", "/obj", &[("Range", "bytes=0-99")], b"");
                assert_eq!(r.status, 206);
                a.elapsed()
            })
        })
        .collect();
    let each: Vec<Duration> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let total = t.elapsed();
    assert!(
        each.iter().all(|d| *d >= Duration::from_millis(250)),
        "{each:?}"
    );
    // Serialised it would take 16 s.
    assert!(total < Duration::from_secs(5), "{total:?}");
    assert_eq!(proxy.counters().requests, 64);
    assert_eq!(proxy.counters().connections, 64);
}

#[test]
fn unreachable_upstream_is_a_502() {
    let port = n5_testkit::free_port();
    let proxy = Proxy::start(([127, 0, 0, 1], port).into());
    let r = common::request(proxy.addr(), "GET", "/x", &[], b"");
    assert_eq!(r.status, 502);
    assert!(r.text().contains("upstream"));
}

#[test]
fn drop_stops_the_listener_and_closes_connections() {
    let (up, _) = tiny_upstream();
    let proxy = Proxy::start(up);
    let addr = proxy.addr();
    let mut idle = Raw::connect(addr);
    assert_eq!(
        idle.request("GET", "/obj", &[("Range", "bytes=0-0")], b"")
            .status,
        206
    );
    drop(proxy);
    assert!(idle.closed_within(Duration::from_secs(5)));
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}
