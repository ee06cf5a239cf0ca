//! Unit tests of the GCS backend's pure parts: endpoints, URLs, listing
//! pages, missing buckets. The protocol itself is tested against
//! fake-gcs-server in tests/gcs_backend.rs.

use super::*;
use crate::storage::store::Store;

fn store(prefix: &str, options: &StorageOptions, env: &dyn Fn(&str) -> Option<String>) -> GcsStore {
    let location = GcsLocation {
        bucket: "bkt".into(),
        prefix: prefix.into(),
    };
    GcsStore::with_env(&location, &format!("gs://bkt/{prefix}"), options, env).unwrap()
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn endpoints_from_options_the_emulator_variable_or_google() {
    let emulator = |value: &'static str| {
        move |name: &str| (name == "STORAGE_EMULATOR_HOST").then(|| value.to_string())
    };
    let mut options = GcsOptions::default();
    assert_eq!(
        endpoint(&options, &no_env).unwrap(),
        (DEFAULT_ENDPOINT.to_string(), false)
    );
    assert_eq!(
        endpoint(&options, &emulator("127.0.0.1:4443")).unwrap(),
        ("http://127.0.0.1:4443".to_string(), true)
    );
    assert_eq!(
        endpoint(&options, &emulator("https://gcs.local:8443/")).unwrap(),
        ("https://gcs.local:8443".to_string(), true)
    );
    options.endpoint = Some("http://[::1]:9000/".into());
    assert_eq!(
        endpoint(&options, &emulator("127.0.0.1:4443")).unwrap(),
        ("http://[::1]:9000".to_string(), false)
    );
    for bad in ["ftp://h", "http://", "http://u:p@h", "http://h/?x", "h h:1"] {
        options.endpoint = Some(bad.into());
        let e = endpoint(&options, &no_env).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        assert!(!e.message().contains("u:p"), "{e}");
    }
}

#[test]
fn urls_names_and_descriptions() {
    let mut options = StorageOptions::default();
    options.gcs.endpoint = Some("http://127.0.0.1:1".into());
    // Constructing sends nothing: port 1 is never asked.
    let s = store("data/x.n5", &options, &no_env);
    assert_eq!(s.location(), "gs://bkt/data/x.n5");
    assert_eq!(
        s.describe("a b/attributes.json"),
        "gs://bkt/data/x.n5/a b/attributes.json"
    );
    assert_eq!(
        s.protocol().object_url(&s.name("a b/0")),
        "http://127.0.0.1:1/storage/v1/b/bkt/o/data%2Fx.n5%2Fa%20b%2F0"
    );
    assert_eq!(
        s.protocol().upload_url("media"),
        "http://127.0.0.1:1/upload/storage/v1/b/bkt/o?uploadType=media"
    );
    assert_eq!(
        s.protocol()
            .list_url("data/x.n5/", true, 1000, Some("next/page")),
        "http://127.0.0.1:1/storage/v1/b/bkt/o?prefix=data%2Fx.n5%2F&maxResults=1000\
         &fields=items%28name%29%2Cprefixes%2CnextPageToken&delimiter=%2F&pageToken=next%2Fpage"
    );
    assert_eq!(s.dir_prefix(""), "data/x.n5/");
    assert_eq!(s.dir_prefix("g"), "data/x.n5/g/");
    let root = store("", &options, &no_env);
    assert_eq!(root.dir_prefix(""), "");
    assert_eq!(root.name("g/0"), "g/0");
    assert_eq!(root.describe("g/0"), "gs://bkt/g/0");
    let caps = s.capabilities();
    assert!(caps.writable && caps.list && caps.remote);
    assert!(!format!("{s:?}").contains("ya29"));
}

#[test]
fn listing_pages_are_parsed_strictly() {
    let page = parse_page(
        br#"{"kind": "storage#objects", "items": [{"name": "x/", "size": "0"}, {"name": "x/a"}],
             "prefixes": ["x/g/"], "nextPageToken": "tok"}"#,
    )
    .unwrap();
    assert_eq!(
        page,
        Page {
            names: vec!["x/".into(), "x/a".into()],
            prefixes: vec!["x/g/".into()],
            next: Some("tok".into()),
        }
    );
    assert_eq!(
        parse_page(br#"{"kind": "storage#objects"}"#).unwrap(),
        Page::default()
    );
    assert_eq!(parse_page(br#"{"nextPageToken": ""}"#).unwrap().next, None);
    for bad in [
        &b"{"[..],
        b"[]",
        br#"{"items": {}}"#,
        br#"{"items": [{"size": "1"}]}"#,
        br#"{"items": [{"name": 7}]}"#,
        br#"{"prefixes": [1]}"#,
        br#"{"nextPageToken": 5}"#,
    ] {
        assert!(parse_page(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
    let huge = format!(
        r#"{{"prefixes": [{}"x"]}}"#,
        r#""x","#.repeat(MAX_PAGE_ENTRIES)
    );
    assert!(parse_page(huge.as_bytes()).unwrap_err().contains("at most"));
    assert_eq!(
        json_u64(Some(&Value::from("18446744073709551615"))),
        Some(u64::MAX)
    );
    assert_eq!(json_u64(Some(&Value::from("18446744073709551616"))), None);
    assert_eq!(json_u64(Some(&Value::from("-1"))), None);
    assert_eq!(json_u64(Some(&Value::from(12u64))), Some(12));
}

#[test]
fn missing_buckets_are_told_from_missing_objects() {
    let answer = |body: &str| Response::of(404, &[], body);
    assert!(bucket_missing(&answer(
        r#"{"error": {"code": 404, "message": "The specified bucket does not exist."}}"#
    )));
    assert!(!bucket_missing(&answer("No such object: bkt/x")));
    assert!(!bucket_missing(&answer("Not Found")));
    assert!(contains(b"abcabd", b"abd") && !contains(b"ab", b"abc"));
}
