//! The read-only HTTP(S) backend against a real nginx on 127.0.0.1
//! (n5-testkit starts it; the tests skip, saying why, when nginx is
//! missing, unless N5_REQUIRE_SERVERS=1): whole, range and suffix reads,
//! sizes, odd key names, missing keys, and what cannot be done over HTTP
//! (writes, listings); then answers nginx does not give on its own,
//! injected by testkit's proxy in front of it: 401 and 403 with and without
//! configured headers, 410, a server without HEAD, redirects to another
//! origin and endless redirect chains. HTTPS with a CA made for the test
//! runs in a child process, since `SSL_CERT_FILE` is read from the
//! environment.

mod common;

use common::{bytes, Scratch};
use n5::storage::location::Location;
use n5::storage::{ByteRange, Precondition, Store};
use n5::{ErrorKind, Options};
use n5_testkit::{server_or_skip, Fault, Proxy, Rule};
use serde_json::json;

/// The files every test serves, with their contents.
fn site_files(s: &Scratch) -> Vec<(&'static str, Vec<u8>)> {
    let files = vec![
        ("a", bytes(1, 1000)),
        ("empty", Vec::new()),
        ("dir/x y+z.bin", bytes(2, 77)),
    ];
    for (name, data) in &files {
        let path = s.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
    files
}

fn open(location: &str, options: serde_json::Value) -> std::sync::Arc<dyn Store> {
    let options = Options::from_json(&options.to_string()).unwrap();
    n5::storage::open(&Location::parse(location).unwrap(), &options.storage).unwrap()
}

/// The store contract for a read-only store over `url`, which serves
/// `site_files`.
fn check_contract(store: &dyn Store, files: &[(&str, Vec<u8>)]) {
    for (name, data) in files {
        assert_eq!(store.get(name).unwrap().as_ref(), Some(data), "{name}");
        assert_eq!(store.size(name).unwrap(), Some(data.len() as u64), "{name}");
        assert!(store.exists(name).unwrap(), "{name}");
    }
    let a = &files[0].1;
    let range = |r: ByteRange| store.get_range("a", r).unwrap().unwrap();
    assert_eq!(
        range(ByteRange::Span {
            offset: 10,
            len: 20
        }),
        a[10..30]
    );
    assert_eq!(
        range(ByteRange::Span {
            offset: 990,
            len: 100
        }),
        a[990..]
    );
    assert_eq!(
        range(ByteRange::Span {
            offset: 2000,
            len: 10
        }),
        b""
    );
    assert_eq!(range(ByteRange::Span { offset: 5, len: 0 }), b"");
    assert_eq!(range(ByteRange::From(990)), a[990..]);
    assert_eq!(range(ByteRange::Suffix(7)), a[993..]);
    assert_eq!(range(ByteRange::Suffix(5000)), a[..]);
    assert_eq!(
        store
            .get_range("empty", ByteRange::Suffix(5))
            .unwrap()
            .unwrap(),
        b""
    );
    assert_eq!(
        store.get_range("missing", ByteRange::Suffix(5)).unwrap(),
        None
    );
    assert_eq!(store.get("missing").unwrap(), None);
    assert_eq!(store.get("dir/missing/deeper").unwrap(), None);
    assert_eq!(store.size("missing").unwrap(), None);
    let (data, version) = store.get_versioned("a").unwrap().unwrap();
    assert_eq!(&data, a);
    assert!(!version.0.is_empty());

    assert!(store.is_dir("").unwrap(), "the root always exists");
    assert!(
        !store.is_dir("dir").unwrap(),
        "no attributes.json: not seen"
    );
    let caps = store.capabilities();
    assert!(!caps.writable && !caps.list && caps.remote);
    for e in [
        store.put("a", &[b"x"]).unwrap_err(),
        store
            .put_if("new", b"x", &Precondition::Absent)
            .unwrap_err(),
        store.delete("a").unwrap_err(),
        store.delete_dir("dir").unwrap_err(),
        store.create_dir("g").unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e}");
        assert!(
            e.message().contains(store.location().trim_end_matches('/')),
            "{e}"
        );
    }
    let e = store.list("dir").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("cannot list"), "{e}");
    assert_eq!(
        store.list_keys("").unwrap_err().kind(),
        ErrorKind::Unsupported
    );
}

#[test]
fn the_store_contract_over_http() {
    let s = Scratch::new("web-contract");
    let files = site_files(&s);
    let site = server_or_skip!(n5_testkit::http(s.path()));
    let store = open(site.url(), json!({}));
    check_contract(&*store, &files);
    assert_eq!(
        store.describe("dir/x y+z.bin"),
        site.url_for("dir/x%20y%2Bz.bin"),
        "keys are percent-encoded"
    );
}

/// HTTPS: with the test's CA in `SSL_CERT_FILE` the contract holds; without
/// it the server is refused at once (no retries), naming the URL and
/// `SSL_CERT_FILE`.
#[test]
fn https_with_a_trusted_ca_and_without() {
    const VAR: &str = "N5_TEST_WEB_HTTPS";
    if let Ok(case) = std::env::var(VAR) {
        let (mode, url) = case.split_once(' ').unwrap();
        let s = Scratch::new("web-https-child");
        let files = site_files(&s);
        let store = open(url, json!({}));
        if mode == "trusted" {
            check_contract(&*store, &files);
        } else {
            let start = std::time::Instant::now();
            let e = store.get("a").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Network, "{e}");
            assert!(e.message().contains("SSL_CERT_FILE"), "{e}");
            assert!(e.message().contains(url), "{e}");
            assert!(e.message().contains("1 attempt"), "not retried: {e}");
            assert!(start.elapsed() < std::time::Duration::from_secs(5));
        }
        return;
    }
    let s = Scratch::new("web-https");
    site_files(&s);
    let site = server_or_skip!(n5_testkit::https(s.path()));
    for (mode, ca) in [
        ("trusted", Some(site.ca_pem().unwrap())),
        ("untrusted", None),
    ] {
        let mut child = common::child_test(
            "https_with_a_trusted_ca_and_without",
            VAR,
            &format!("{mode} {}", site.url()),
        );
        child.env_remove("SSL_CERT_FILE").env_remove("SSL_CERT_DIR");
        if let Some(ca) = ca {
            child.env("SSL_CERT_FILE", ca);
        }
        let out = child.output().unwrap();
        assert!(
            out.status.success(),
            "{mode}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn refusals_missing_keys_and_servers_without_head() {
    let s = Scratch::new("web-refusals");
    let files = site_files(&s);
    let site = server_or_skip!(n5_testkit::http(s.path()));
    let proxy = Proxy::start(site.addr());
    let url = format!("{}{}", proxy.url(), site.path());
    let anonymous = open(&url, json!({}));
    let secret = "Bearer s3cr3t-t0ken";
    let with_headers = open(
        &url,
        json!({"http": {"headers": {"Authorization": secret}}}),
    );

    // 403 below the root: a missing key to an anonymous reader (buckets
    // that forbid listing answer so), refused credentials otherwise.
    proxy.set_fault(Rule::all(), Fault::status(403));
    assert_eq!(anonymous.get("a").unwrap(), None);
    assert_eq!(anonymous.size("a").unwrap(), None);
    let e = with_headers.get("a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    assert!(
        e.message().contains("403") && e.message().contains("Authorization"),
        "{e}"
    );
    assert!(
        !e.message().contains("s3cr3t"),
        "a secret in a message: {e}"
    );
    // 401 is always refused credentials.
    proxy.set_fault(Rule::all(), Fault::status(401));
    for store in [&anonymous, &with_headers] {
        let e = store.get("a").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
        assert!(e.message().contains(&format!("{url}a")), "{e}");
    }
    // 410 Gone is missing.
    proxy.set_fault(Rule::all(), Fault::status(410));
    assert_eq!(with_headers.get("a").unwrap(), None);
    // Another client error is an error naming the status, not "missing".
    proxy.set_fault(Rule::all(), Fault::status(400));
    let e = anonymous.get("a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("400"), "{e}");

    // A server that does not answer HEAD: sizes come from a range GET.
    proxy.set_fault(Rule::all().methods(&["HEAD"]), Fault::status(405));
    assert_eq!(anonymous.size("a").unwrap(), Some(1000));
    assert_eq!(anonymous.size("empty").unwrap(), Some(0));
    assert_eq!(anonymous.size("missing").unwrap(), None);
    proxy.clear_faults();
    check_contract(&*anonymous, &files);
}

#[test]
fn redirects_are_followed_within_bounds() {
    let s = Scratch::new("web-redirects");
    let files = site_files(&s);
    let site = server_or_skip!(n5_testkit::http(s.path()));
    let proxy = Proxy::start(site.addr());
    let url = format!("{}{}", proxy.url(), site.path());
    let store = open(&url, json!({"retry": {"max_attempts": 3}}));
    let redirect = |location: String| Fault::Status {
        status: 302,
        headers: vec![("Location".into(), location)],
        body: String::new(),
    };

    // To another origin (nginx itself, past the proxy): followed.
    proxy.set_fault(Rule::all(), redirect(site.url_for("a")));
    assert_eq!(store.get("x").unwrap().as_ref(), Some(&files[0].1));
    assert_eq!(
        store.get_range("x", ByteRange::Suffix(3)).unwrap().unwrap(),
        files[0].1[997..]
    );
    // Relative, within the site: followed.
    proxy.set_fault(Rule::all().first(1), redirect("dir/x%20y%2Bz.bin".into()));
    assert_eq!(store.get("elsewhere").unwrap().as_ref(), Some(&files[2].1));
    // A chain that never ends: at most 5 hops.
    proxy.set_fault(Rule::all(), redirect("deeper/a".into()));
    proxy.reset_counters();
    let e = store.get("a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("more than 5 redirects"), "{e}");
    assert_eq!(proxy.counters().requests, 6);
    // Nowhere to go, or somewhere that is not HTTP.
    for (target, needle) in [
        ("".to_string(), "no Location"),
        ("ftp://127.0.0.1/a".to_string(), "not http"),
    ] {
        proxy.set_fault(Rule::all(), redirect(target));
        let e = store.get("a").unwrap_err();
        assert!(e.message().contains(needle), "{e}");
    }
    proxy.clear_faults();
}
