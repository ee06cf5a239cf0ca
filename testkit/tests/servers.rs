//! Tests of the real servers on loopback: SeaweedFS signed and anonymous
//! (signatures, conditional writes, ranges, listings), fake-gcs-server
//! (buckets, uploads, generation preconditions, upload URLs through the
//! proxy), nginx over HTTP and HTTPS (ranges, keep-alive, the CA), private
//! instances stopped on drop, and servers killed with a killed test process.
//! Each test skips when its binary is missing, unless N5_REQUIRE_SERVERS=1.

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Raw;
use n5_testkit::client::Request;
use n5_testkit::{
    server_or_skip, Fault, GcsServer, HttpServer, Proxy, Rule, S3Mode, S3Server, Scheme,
};

/// Whether process `pid` is gone (or a zombie nobody has reaped yet).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_dead(pid: u32, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    dead(pid)
}

#[test]
fn s3_signed_checks_signatures_and_conditions() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    assert_eq!(s3.mode(), S3Mode::Signed);
    let creds = s3
        .credentials()
        .expect("signed mode has credentials")
        .clone();
    let bucket = s3.unique_bucket("signed").unwrap();
    let key = format!("/{bucket}/dir/a.bin");
    let data: Vec<u8> = (0..5000u32).map(|i| (i % 256) as u8).collect();

    let r = s3
        .send(Request::new("PUT", &key).body(data.clone()))
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.header("etag").unwrap().to_string();

    // Unsigned: denied.
    let r = Request::new("GET", &key).send(s3.addr()).unwrap();
    assert_eq!(r.status, 403);
    assert!(
        r.text().contains("<Code>AccessDenied</Code>"),
        "{}",
        r.text()
    );
    // Signed with a wrong secret: denied.
    let mut bad = Request::new("GET", &key);
    let wrong = n5_testkit::Credentials {
        access_key_id: creds.access_key_id.clone(),
        secret_access_key: "wrong".into(),
    };
    wrong.sign(&mut bad, s3.addr());
    let r = bad.send(s3.addr()).unwrap();
    assert_eq!(r.status, 403);
    assert!(
        r.text().contains("<Code>SignatureDoesNotMatch</Code>"),
        "{}",
        r.text()
    );

    // Conditional writes.
    let r = s3
        .send(
            Request::new("PUT", &key)
                .header("If-None-Match", "*")
                .body("x"),
        )
        .unwrap();
    assert_eq!(r.status, 412, "{}", r.text());
    assert!(r.text().contains("<Code>PreconditionFailed</Code>"));
    let r = s3
        .send(
            Request::new("PUT", &key)
                .header("If-Match", "\"0123\"")
                .body("x"),
        )
        .unwrap();
    assert_eq!(r.status, 412);
    let r = s3
        .send(
            Request::new("PUT", &format!("/{bucket}/missing"))
                .header("If-Match", &etag)
                .body("x"),
        )
        .unwrap();
    assert_eq!(r.status, 412, "If-Match on a missing key");
    let r = s3
        .send(
            Request::new("PUT", &format!("/{bucket}/new"))
                .header("If-None-Match", "*")
                .body("new"),
        )
        .unwrap();
    assert_eq!(r.status, 200);
    let r = s3
        .send(
            Request::new("PUT", &key)
                .header("If-Match", &etag)
                .body(data.clone()),
        )
        .unwrap();
    assert_eq!(r.status, 200);

    // Ranges.
    let r = s3
        .send(Request::new("GET", &key).header("Range", "bytes=100-199"))
        .unwrap();
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 100-199/5000"));
    assert_eq!(r.body, &data[100..200]);
    let r = s3
        .send(Request::new("GET", &key).header("Range", "bytes=9000-"))
        .unwrap();
    assert_eq!(r.status, 416);

    // Listing with a delimiter.
    let r = s3
        .send(Request::new(
            "GET",
            &format!("/{bucket}?list-type=2&delimiter=%2F"),
        ))
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(
        text.contains("<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>"),
        "{text}"
    );
    assert!(text.contains("<Key>new</Key>"), "{text}");
    assert!(!text.contains("<Key>dir/a.bin</Key>"), "{text}");

    // Missing keys.
    let r = s3
        .send(Request::new("GET", &format!("/{bucket}/nope")))
        .unwrap();
    assert_eq!(r.status, 404);
    assert!(r.text().contains("<Code>NoSuchKey</Code>"));
    let r = s3
        .send(Request::new("HEAD", &format!("/{bucket}/nope")))
        .unwrap();
    assert_eq!((r.status, r.body.len()), (404, 0));

    // Through the proxy: the signature (Host included) still holds, and the
    // faults reach the client.
    let proxy = Proxy::start(s3.addr());
    let mut req = Request::new("GET", &key).header("Range", "bytes=0-9");
    s3.sign(&mut req);
    let r = req.send(proxy.addr()).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (206, &data[..10]));
    proxy.set_fault(Rule::all().first(1), Fault::slow_down());
    let mut req = Request::new("GET", &key);
    s3.sign(&mut req);
    assert_eq!(req.send(proxy.addr()).unwrap().status, 503);
    assert_eq!(req.send(proxy.addr()).unwrap().status, 200);
    assert_eq!(proxy.counters().get, 3);
}

#[test]
fn s3_anonymous_accepts_unsigned_requests() {
    let s3 = server_or_skip!(n5_testkit::s3_anonymous());
    assert!(s3.credentials().is_none());
    let bucket = s3.unique_bucket("anon").unwrap();
    let r = Request::new("PUT", &format!("/{bucket}/k"))
        .body("value")
        .send(s3.addr())
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let r = Request::new("GET", &format!("/{bucket}/k"))
        .send(s3.addr())
        .unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "value"));
    let r = Request::new("PUT", &format!("/{bucket}/k"))
        .header("If-None-Match", "*")
        .body("v2")
        .send(s3.addr())
        .unwrap();
    assert_eq!(r.status, 412);
    let r = Request::new("DELETE", &format!("/{bucket}/k"))
        .send(s3.addr())
        .unwrap();
    assert_eq!(r.status, 204);
    let r = Request::new("DELETE", &format!("/{bucket}/k"))
        .send(s3.addr())
        .unwrap();
    assert_eq!(r.status, 204, "deleting a missing key");
}

#[test]
fn gcs_buckets_uploads_and_preconditions() {
    let gcs = server_or_skip!(n5_testkit::gcs());
    let bucket = gcs.unique_bucket("gcs").unwrap();
    assert!(
        matches!(gcs.create_bucket(&bucket), Err(n5_testkit::Error::Failed(m)) if m.contains("409"))
    );
    let upload = |name: &str, query: &str, body: &str| {
        gcs.send(
            Request::new(
                "POST",
                &format!("/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}{query}"),
            )
            .body(body),
        )
        .unwrap()
    };
    let r = upload("a%2Fx.bin", "", "hello world");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"generation\""));
    let r = gcs
        .send(
            Request::new(
                "GET",
                &format!("/storage/v1/b/{bucket}/o/a%2Fx.bin?alt=media"),
            )
            .header("Range", "bytes=6-10"),
        )
        .unwrap();
    assert_eq!((r.status, r.text().as_str()), (206, "world"));
    assert_eq!(r.header("content-range"), Some("bytes 6-10/11"));
    let r = gcs
        .send(Request::new(
            "GET",
            &format!("/storage/v1/b/{bucket}/o?delimiter=%2F"),
        ))
        .unwrap();
    assert!(r.text().contains("\"prefixes\":[\"a/\"]"), "{}", r.text());
    let r = gcs
        .send(Request::new(
            "GET",
            &format!("/storage/v1/b/{bucket}/o/nope?alt=media"),
        ))
        .unwrap();
    assert_eq!(r.status, 404);

    // ifGenerationMatch=0 is honoured by multipart uploads (412 on an
    // existing object), not by uploadType=media.
    let multipart = |name: &str| {
        let body = format!(
            "--b\r\nContent-Type: application/json\r\n\r\n{{\"name\":\"{name}\"}}\r\n--b\r\nContent-Type: application/octet-stream\r\n\r\nnew\r\n--b--\r\n"
        );
        Request::new(
            "POST",
            &format!("/upload/storage/v1/b/{bucket}/o?uploadType=multipart&ifGenerationMatch=0"),
        )
        .header("Content-Type", "multipart/related; boundary=b")
        .body(body)
    };
    assert_eq!(gcs.send(multipart("a/x.bin")).unwrap().status, 412);
    assert_eq!(gcs.send(multipart("a/fresh")).unwrap().status, 200);

    // A resumable upload through the proxy: the upload URL leads back
    // through it.
    let proxy = Proxy::start(gcs.addr());
    let r = Request::new(
        "POST",
        &format!("/upload/storage/v1/b/{bucket}/o?uploadType=resumable&name=r"),
    )
    .header("Content-Type", "application/json")
    .body("{}")
    .send(proxy.addr())
    .unwrap();
    let location = r.header("location").expect("an upload URL").to_string();
    let prefix = format!("http://{}", proxy.addr());
    assert!(location.starts_with(&prefix), "{location}");
    let r = Request::new("PUT", &location[prefix.len()..])
        .body("resumed")
        .send(proxy.addr())
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(proxy.counters().post + proxy.counters().put, 2);
    let r = gcs
        .send(Request::new(
            "GET",
            &format!("/storage/v1/b/{bucket}/o/r?alt=media"),
        ))
        .unwrap();
    assert_eq!(r.text(), "resumed");
}

#[test]
fn nginx_serves_ranges_with_keepalive() {
    let dir = tempdir("nginx");
    let data: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/block"), &data).unwrap();
    let site = server_or_skip!(n5_testkit::http(&dir));
    assert!(site.url().starts_with("http://127.0.0.1:"));
    let mut c = Raw::connect(site.addr());
    let path = format!("{}sub/block", site.path());
    for i in 0..50usize {
        let range = format!("bytes={}-{}", i * 1000, i * 1000 + 1999);
        let r = c.request("GET", &path, &[("Range", &range)], b"");
        assert_eq!(r.status, 206);
        assert_eq!(r.body, &data[i * 1000..i * 1000 + 2000]);
    }
    let r = c.request("GET", &path, &[], b"");
    assert_eq!((r.status, r.body.len()), (200, data.len()));
    let etag = r.header("etag").unwrap().to_string();
    assert_eq!(
        c.request("GET", &path, &[("If-None-Match", &etag)], b"")
            .status,
        304
    );
    assert_eq!(
        c.request("HEAD", &path, &[], b"").header("content-length"),
        Some("70000")
    );
    assert_eq!(
        c.request("GET", &format!("{}missing", site.path()), &[], b"")
            .status,
        404
    );
    // A second site on the same server, and the first goes away on drop.
    let other = tempdir("nginx-other");
    std::fs::write(other.join("f"), "other").unwrap();
    let site2 = n5_testkit::http(&other).unwrap();
    assert_eq!(site2.addr(), site.addr());
    assert_eq!(
        common::request(site2.addr(), "GET", &format!("{}f", site2.path()), &[], b"").text(),
        "other"
    );
    let first = site.path();
    drop(site);
    assert_eq!(
        common::request(site2.addr(), "GET", &format!("{first}sub/block"), &[], b"").status,
        404
    );
}

#[test]
fn nginx_https_is_trusted_only_with_its_ca() {
    let dir = tempdir("https");
    std::fs::write(dir.join("hello.txt"), "secure hello").unwrap();
    let site = server_or_skip!(n5_testkit::https(&dir));
    let ca = site.ca_pem().expect("HTTPS has a CA").to_path_buf();
    assert!(std::fs::read_to_string(&ca)
        .unwrap()
        .contains("BEGIN CERTIFICATE"));
    let Some(python) = python() else {
        eprintln!("skipped the TLS client part: no python3 for a TLS client");
        return;
    };
    let fetch = |cert_file: Option<&Path>| {
        let mut cmd = Command::new(&python);
        cmd.args(["-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())"])
            .arg(site.url_for("hello.txt"))
            .env_remove("SSL_CERT_DIR")
            .env_remove("SSL_CERT_FILE");
        if let Some(f) = cert_file {
            cmd.env("SSL_CERT_FILE", f);
        }
        cmd.output().unwrap()
    };
    let trusted = fetch(Some(&ca));
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&trusted.stdout), "secure hello");
    let untrusted = fetch(None);
    assert!(!untrusted.status.success());
    assert!(String::from_utf8_lossy(&untrusted.stderr).contains("CERTIFICATE_VERIFY_FAILED"));
}

fn python() -> Option<String> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    [venv.display().to_string(), "python3".to_string()]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .arg("-c")
                .arg("import ssl")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// A directory for a test, removed when dropped (also when the test skips).
struct TestDir(std::path::PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(name: &str) -> TestDir {
    let d = std::env::temp_dir().join(format!("n5-testkit-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TestDir(d)
}

#[test]
fn private_instances_stop_on_drop() {
    let Some(s3) = n5_testkit::or_skip(S3Server::start(S3Mode::Anonymous)) else {
        return;
    };
    let gcs = GcsServer::start().unwrap();
    let dir = tempdir("private");
    let http = HttpServer::start(&dir, Scheme::Https).unwrap();
    let pids = [s3.pid(), gcs.pid(), http.pid()];
    assert!(pids.iter().all(|&p| !dead(p)));
    let ca = http.ca_pem().unwrap().to_path_buf();
    assert!(ca.exists());
    let t = Instant::now();
    drop((s3, gcs, http));
    for p in pids {
        assert!(dead(p), "pid {p} still runs after drop");
    }
    assert!(!ca.exists(), "the temp dir is removed");
    eprintln!("stopping three servers took {:?}", t.elapsed());
}

/// Not a test on its own: run by `servers_die_with_a_killed_test_process`
/// in a child process, it starts servers, prints their pids and waits to be
/// killed.
#[test]
#[ignore = "helper run by servers_die_with_a_killed_test_process"]
fn helper_start_servers_and_wait() {
    let Some(dir) = std::env::var_os("N5_TESTKIT_HELPER") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let gcs = GcsServer::start().unwrap();
    let http = HttpServer::start(&dir, Scheme::Http).unwrap();
    let s3 = S3Server::start(S3Mode::Signed).unwrap();
    println!(
        "PIDS {} {} {} {}",
        std::process::id(),
        gcs.pid(),
        http.pid(),
        s3.pid()
    );
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn servers_die_with_a_killed_test_process() {
    for b in [
        n5_testkit::Binary::Weed,
        n5_testkit::Binary::FakeGcsServer,
        n5_testkit::Binary::Nginx,
    ] {
        if n5_testkit::or_skip(n5_testkit::find_binary(b)).is_none() {
            return;
        }
    }
    let dir = tempdir("helper");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "helper_start_servers_and_wait",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("N5_TESTKIT_HELPER", &*dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            // The harness prints the test's name on the same line first.
            if let Some(p) = line.split_once("PIDS ").map(|(_, p)| p.trim()) {
                let _ = tx.send(
                    p.split(' ')
                        .map(|x| x.parse::<u32>().unwrap())
                        .collect::<Vec<_>>(),
                );
            }
        }
    });
    let pids = rx.recv_timeout(Duration::from_secs(120));
    // SIGKILL: no destructor, no atexit; only the kernel's parent-death
    // signal can stop the servers.
    child.kill().unwrap();
    child.wait().unwrap();
    let pids = pids.expect("the helper printed its servers' pids");
    assert_eq!(pids.len(), 4);
    for &p in &pids[1..] {
        assert!(
            wait_dead(p, Duration::from_secs(10)),
            "server {p} survived its killed test process"
        );
    }
    // The helper's temp dirs (and SeaweedFS's sockets in /tmp) stay behind
    // until another process makes a temp dir of its own.
    let helper_dirs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("n5-testkit-{}-", pids[0]))
            })
            .collect()
    };
    let left = helper_dirs();
    assert_eq!(left.len(), 3, "{left:?}");
    let sockets: Vec<String> = left
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join(".n5-testkit-cleanup")).ok())
        .flat_map(|l| l.lines().map(str::to_string).collect::<Vec<_>>())
        .collect();
    assert!(
        sockets
            .iter()
            .any(|s| s.starts_with("/tmp/seaweedfs-master-grpc-")),
        "{sockets:?}"
    );
    drop(GcsServer::start().unwrap());
    assert_eq!(helper_dirs(), Vec::<std::path::PathBuf>::new());
    assert!(
        sockets.iter().all(|s| !Path::new(s).exists()),
        "{sockets:?}"
    );
}

/// Every fault kind once, through the proxy in front of real nginx.
#[test]
fn every_fault_through_the_proxy_in_front_of_nginx() {
    use common::Failure;
    use n5_testkit::StallAt;
    let dir = tempdir("faults");
    let data: Vec<u8> = (0..50_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(dir.join("blob"), &data).unwrap();
    let site = server_or_skip!(n5_testkit::http(&dir));
    let proxy = Proxy::start(site.addr());
    let path = format!("{}blob", site.path());
    let get = |range: Option<&str>| {
        let mut c = Raw::connect_timeout(proxy.addr(), Duration::from_secs(5));
        let headers: Vec<(&str, &str)> = range.map(|r| vec![("Range", r)]).unwrap_or_default();
        c.send("GET", &path, &headers, b"").unwrap();
        c.response("GET", 1 << 20)
    };
    // Nothing set: through.
    assert_eq!(get(Some("bytes=10-19")).unwrap().body, &data[10..20]);
    let cases: Vec<(Fault, &str)> = vec![
        (Fault::slow_down(), "503"),
        (Fault::status(500), "500"),
        (Fault::status(429), "429"),
        (Fault::status(403), "403"),
        (Fault::status_with_body(404, "gone"), "404"),
        (Fault::Close, "closed"),
        (Fault::Reset, "reset"),
        (Fault::ResetMidBody { after: 3 }, "reset"),
        (Fault::Truncate { after: 3 }, "short"),
        (
            Fault::Stall {
                at: StallAt::AfterHead,
                duration: Duration::from_millis(100),
                then_close: true,
            },
            "short",
        ),
        (
            Fault::Stall {
                at: StallAt::BeforeResponse,
                duration: Duration::from_millis(100),
                then_close: false,
            },
            "206",
        ),
        (Fault::WrongRange { shift: 5 }, "shifted"),
        (Fault::IgnoreRange, "200"),
        (Fault::HugeContentLength { claimed: 1 << 33 }, "short"),
        (
            Fault::EndlessBody {
                declare_length: false,
            },
            "endless",
        ),
        (Fault::RedirectLoop, "302"),
    ];
    for (fault, expected) in cases {
        proxy.set_fault(Rule::all(), fault.clone());
        let got = get(Some("bytes=10-19"));
        let outcome = match &got {
            Ok(r) if r.status == 206 && r.header("content-range") == Some("bytes 15-24/50000") => {
                "shifted".to_string()
            }
            Ok(r) if r.status == 200 && r.body.len() == 1 << 20 => "endless".to_string(),
            Ok(r) => r.status.to_string(),
            Err(Failure::Closed) => "closed".to_string(),
            Err(Failure::Reset { .. }) => "reset".to_string(),
            Err(Failure::Short { .. }) => "short".to_string(),
            Err(f) => format!("{f:?}"),
        };
        assert_eq!(outcome, expected, "{fault:?}: {got:?}");
    }
    proxy.clear_faults();
    proxy.set_latency(Duration::from_millis(100));
    let t = Instant::now();
    assert_eq!(get(None).unwrap().body, data);
    assert!(t.elapsed() >= Duration::from_millis(100));
    let n = proxy.counters();
    assert_eq!((n.requests, n.get, n.faults), (18, 18, 16));
}
