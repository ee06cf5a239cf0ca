//! The data-only pickle reader of legacy hdmf-zarr object chunks and the
//! numcodecs `json2` decoder (`n5::fuzzing`, which calls
//! `format::zarr2::pickle`). The first byte picks what the rest of the
//! input is: a pickle decoded alone (and shown as JSON), the pickled chunk
//! of a `|O` array or of a compound with an object field (hdmf-zarr's
//! `idx_start`, `count`, `timeseries`), a json2 chunk of either, or the
//! pickle of a fill value (base64-encoded here, as a `.zarray` stores it);
//! the second byte, the number of elements the chunk holds. Every input
//! must give data or an error of the kinds bad data has (`Codec`,
//! `UnsafePickle`), never a panic, in memory and time bounded by its size;
//! a chunk's elements must be as many as it holds, and a compound's each an
//! object of its three fields in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use n5::{fuzzing, ErrorKind};
use serde_json::{json, Value};

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Checks a compound's decoded elements: objects of its fields in order.
fn check_records(values: &[Value]) {
    for v in values {
        let keys: Vec<&str> = v
            .as_object()
            .expect("a record is an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["idx_start", "count", "timeseries"]);
    }
}

fuzz_target!(|data: &[u8]| {
    let [selector, count, bytes @ ..] = data else {
        return;
    };
    let expected = usize::from(*count);
    let compound = selector & 1 == 1;
    let dtype = if compound {
        json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]])
    } else {
        json!("|O")
    };
    let chunk = |values: Vec<Value>| {
        assert_eq!(values.len(), expected);
        if compound {
            check_records(&values);
        }
    };
    let result = match (selector >> 1) % 4 {
        0 => fuzzing::pickle_decode(bytes).map(drop),
        1 => fuzzing::pickle_object_chunk(bytes, &dtype, expected).map(chunk),
        2 => fuzzing::json2_object_chunk(bytes, &dtype, expected).map(chunk),
        _ => fuzzing::pickle_fill_value(&base64(bytes), &dtype).map(|v| {
            if compound {
                check_records(&[v]);
            }
        }),
    };
    if let Err(e) = result {
        assert!(
            matches!(e.kind(), ErrorKind::Codec | ErrorKind::UnsafePickle),
            "{e:?}"
        );
        assert!(e.message().starts_with("fuzz input: "), "{e:?}");
    }
});
