//! Location strings and storage options: any text parsed as the location
//! `n5_container_open` takes, and as its options JSON. Parsing must give a
//! location or an error, never a panic; a parsed location's bucket prefix
//! or URL path is normalised (no `..`, `.` or empty components, nothing
//! above its root), and a plain URL's origin holds no credentials; options
//! never show a secret's value in an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use n5::storage::location::Backend;
use n5::storage::Location;
use n5::Options;

fn normalised(prefix: &str) -> bool {
    prefix.is_empty()
        || prefix
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(location) = Location::parse(text) {
        match &location.backend {
            Backend::File(_) => {}
            Backend::S3(l) => assert!(normalised(&l.prefix), "{text:?} -> {l:?}"),
            Backend::Gcs(l) => assert!(normalised(&l.prefix), "{text:?} -> {l:?}"),
            Backend::Web(l) => {
                assert!(normalised(&l.prefix), "{text:?} -> {l:?}");
                assert!(!l.origin.contains('@'), "{text:?} -> {l:?}");
            }
        }
    }
    // The same text as options, with every secret's value replaced by a
    // marker: an error never shows it.
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(text) else {
        let _ = Options::from_json(text);
        return;
    };
    plant(&mut doc, false);
    if let Err(e) = Options::from_json(&doc.to_string()) {
        assert!(!e.message().contains(SECRET), "{doc}: {e}");
    }
});

const SECRET: &str = "S3CR3T-0f-fuzz";

/// Replace the values of secret keys (and of every header) by [`SECRET`].
fn plant(v: &mut serde_json::Value, secret: bool) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let is_secret = matches!(k.as_str(), "secret_access_key" | "session_token" | "token");
                if is_secret || secret {
                    *v = serde_json::Value::from(SECRET);
                } else {
                    plant(v, k == "headers");
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| plant(i, false)),
        _ => {}
    }
}
