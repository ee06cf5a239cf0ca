//! What servers answer: any bytes as an S3 ListObjectsV2 page (XML), a
//! Google Cloud Storage listing page (JSON), an S3 region error and any
//! error body whose code goes into a message. Every input gives a page or
//! an error, never a panic, within the pages' bounds, and an error code is
//! a short identifier or nothing, so a hostile body cannot flood a message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use n5::storage::{gcs, http, s3};

fuzz_target!(|data: &[u8]| {
    if let Ok(page) = s3::xml::parse_page(data) {
        assert!(page.names.len() + page.prefixes.len() <= s3::xml::MAX_PAGE_ENTRIES);
        assert!(page.names.iter().chain(&page.prefixes).all(|k| k.len() <= s3::xml::MAX_TEXT));
    }
    let _ = s3::xml::error_region(data);
    if let Ok(page) = gcs::parse_page(data) {
        assert!(page.names.len() + page.prefixes.len() <= 2 * gcs::MAX_PAGE_ENTRIES);
    }
    if let Some(code) = http::error_code(data) {
        assert!(code.len() <= 64 && code.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)));
    }
});
