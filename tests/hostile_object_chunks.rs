//! Hostile chunks of string, bytes, legacy object and struct arrays (nwb.md
//! §1, §3) read through the public API from a store in memory, in Zarr v2
//! and v3: variable-length chunks whose count or lengths lie, huge counts in
//! tiny chunks, every truncation of a good chunk, bytes left over, invalid
//! UTF-8, blosc frames that claim huge sizes or decode to far more than
//! the chunk can hold, struct chunks of the wrong size, json2 chunks of the
//! wrong length, and pickled chunks with forbidden opcodes. Each read gives
//! a specific error naming the chunk (`Codec`, `InvalidUtf8`,
//! `UnsafePickle`), never a crash, and the process's peak memory grows by
//! a bounded amount (checked per case on Linux: one test, so that nothing
//! else runs in the process meanwhile).

use std::sync::Arc;

use n5::storage::{MemoryStore, Store};
use n5::{Compression, Container, Dataset, ErrorKind, Mode, Options};
use serde_json::{json, Value};

/// The most the process's peak memory may grow by in one hostile read
/// beyond what the chunk really decodes to (a variable-length chunk is
/// decoded to whatever size its data has, up to 2 GiB, before its count
/// is checked; never to a size a header claims beyond its data).
const MEMORY_ALLOWANCE: u64 = 16 << 20;

/// An array at the root of a new store in memory, from its metadata
/// document (`zarr.json` or `.zarray`), with `chunk` stored at the key of
/// its first chunk.
fn array(doc: &Value, chunk: &[u8]) -> Dataset {
    try_array(doc, chunk).unwrap_or_else(|e| panic!("{doc}: {e}"))
}

/// [`array`], or the error opening it.
fn try_array(doc: &Value, chunk: &[u8]) -> n5::Result<Dataset> {
    let store = Arc::new(MemoryStore::new());
    let name = if doc["zarr_format"] == 2 {
        ".zarray"
    } else {
        "zarr.json"
    };
    store
        .put(name, &[doc.to_string().as_bytes()])
        .expect("memory store");
    let c = Container::open_store(store.clone(), "hostile", Mode::Read, Options::default())?;
    let d = c.open_dataset("")?;
    let zeros = vec![0u64; d.attributes().ndim()];
    store.put(&d.block_key(&zeros), &[chunk]).unwrap();
    Ok(d)
}

/// A field of /proc/self/status in bytes (0 where there is none).
fn status_bytes(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

/// Reads the first `n` elements of `d` as JSON and, for string and bytes
/// arrays, as bytes; each read must fail with `kind` and a message naming
/// `key`, the peak memory growing by at most [`MEMORY_ALLOWANCE`].
#[track_caller]
fn refused(what: &str, d: &Dataset, n: u64, kind: ErrorKind, key: &str) {
    refused_within(what, d, n, kind, key, 0);
}

/// [`refused`] of a chunk that decodes to `decoded` bytes.
#[track_caller]
fn refused_within(what: &str, d: &Dataset, n: u64, kind: ErrorKind, key: &str, decoded: u64) {
    let bytes_too = d.element_size() == 0
        && !matches!(
            d.dtype_json().unwrap()["object_codec"].as_str(),
            Some("pickle" | "json2")
        );
    let linux = cfg!(target_os = "linux");
    if linux {
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
    }
    let before = status_bytes("VmRSS:");
    let ndim = d.attributes().ndim();
    let (offset, shape) = (vec![0u64; ndim], {
        let mut s = vec![1u64; ndim];
        if ndim > 0 {
            s[0] = n;
        }
        s
    });
    let mut errors = vec![d.read_region_json(&offset, &shape).map(drop).unwrap_err()];
    if bytes_too {
        errors.push(d.read_region_bytes(&offset, &shape).map(drop).unwrap_err());
    }
    let growth = status_bytes("VmHWM:").saturating_sub(before);
    for e in errors {
        assert_eq!(e.kind(), kind, "{what}: {e}");
        assert!(e.message().contains(key), "{what}: {e} does not name {key}");
    }
    let bound = decoded + MEMORY_ALLOWANCE;
    assert!(
        growth <= bound,
        "{what}: peak memory grew by {growth} bytes, over {bound}"
    );
}

/// The vlen encoding of `elements`: a u32le count, then per element a
/// u32le length and its bytes.
fn vlen(elements: &[&[u8]]) -> Vec<u8> {
    let mut out = (elements.len() as u32).to_le_bytes().to_vec();
    for e in elements {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    out
}

/// A one-dimensional v3 array of `data_type` with `codecs`.
fn v3(shape: u64, chunk: u64, data_type: Value, fill: Value, codecs: Value) -> Value {
    json!({"zarr_format": 3, "node_type": "array", "shape": [shape], "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs})
}

/// A one-dimensional v2 array of `dtype` with `filters` and `compressor`.
fn v2(shape: u64, chunk: u64, dtype: Value, filters: Value, compressor: Value) -> Value {
    json!({"zarr_format": 2, "shape": [shape], "chunks": [chunk], "dtype": dtype,
        "compressor": compressor, "fill_value": null, "filters": filters, "order": "C"})
}

/// The string and bytes arrays of four elements (one chunk) in each
/// format: description, document, whether the elements are UTF-8 strings,
/// the first chunk's key.
fn vlen_arrays() -> Vec<(&'static str, Value, bool, &'static str)> {
    let blosc2 = json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0});
    vec![
        (
            "v3 vlen-utf8",
            v3(
                4,
                4,
                json!("string"),
                json!(""),
                json!([{"name": "vlen-utf8"}]),
            ),
            true,
            "c/0",
        ),
        (
            "v3 vlen-bytes",
            v3(
                4,
                4,
                json!("bytes"),
                json!(""),
                json!([{"name": "vlen-bytes"}]),
            ),
            false,
            "c/0",
        ),
        (
            "v2 vlen-utf8",
            v2(4, 4, json!("|O"), json!([{"id": "vlen-utf8"}]), Value::Null),
            true,
            "0",
        ),
        (
            "v2 vlen-bytes",
            v2(
                4,
                4,
                json!("|O"),
                json!([{"id": "vlen-bytes"}]),
                Value::Null,
            ),
            false,
            "0",
        ),
        (
            "v2 vlen-utf8 + blosc",
            v2(4, 4, json!("|O"), json!([{"id": "vlen-utf8"}]), blosc2),
            true,
            "0",
        ),
    ]
}

/// `raw` compressed by the chunk's compressor (blosc for the arrays that
/// have it).
fn stored(doc: &Value, raw: &[u8]) -> Vec<u8> {
    let v3_blosc = doc["codecs"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["name"] == "blosc"));
    if doc["compressor"].is_null() && !v3_blosc {
        return raw.to_vec();
    }
    let c = Compression::from_json(
        &json!({"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0}),
    )
    .unwrap();
    let mut out = Vec::new();
    c.encode(raw, 1, &mut out).unwrap();
    out
}

#[test]
fn hostile_object_and_struct_chunks_are_specific_errors_in_bounded_memory() {
    let good: [&[u8]; 4] = [b"a", b"", b"bc", "\u{e9}t\u{e9}".as_bytes()];
    let chunk = vlen(&good);
    for (what, doc, utf8, key) in vlen_arrays() {
        // The good chunk reads (so that the refusals below are of the lies).
        let d = array(&doc, &stored(&doc, &chunk));
        let text: Value = serde_json::from_str(&d.read_region_json(&[0], &[4]).unwrap()).unwrap();
        if utf8 {
            assert_eq!(text, json!(["a", "", "bc", "été"]), "{what}");
        }
        let (data, lengths) = d.read_region_bytes(&[0], &[4]).unwrap();
        assert_eq!((data, lengths), (good.concat(), vec![1, 0, 2, 5]), "{what}");

        // Counts that lie, lengths that lie, bytes left over.
        let mut lies: Vec<(String, Vec<u8>)> = Vec::new();
        for count in [0u32, 3, 5, 0x7fff_ffff, u32::MAX] {
            let mut c = chunk.clone();
            c[..4].copy_from_slice(&count.to_le_bytes());
            lies.push((format!("count {count}"), c));
        }
        // Element 2's length field is at 4 + (4 + 1) + 4.
        for len in [3u32, 1 << 20, u32::MAX] {
            let mut c = chunk.clone();
            c[13..17].copy_from_slice(&len.to_le_bytes());
            lies.push((format!("length {len}"), c));
        }
        let mut extra = chunk.clone();
        extra.push(0);
        lies.push(("a byte left over".into(), extra));
        for cut in 0..chunk.len() {
            lies.push((format!("cut at {cut}"), chunk[..cut].to_vec()));
        }
        for (lie, raw) in lies {
            let d = array(&doc, &stored(&doc, &raw));
            refused(&format!("{what}, {lie}"), &d, 4, ErrorKind::Codec, key);
        }
        if utf8 {
            // Invalid UTF-8 in a string chunk: the JSON and string reads
            // refuse it naming the element; the bytes read gives the
            // stored bytes (the way to see them).
            let bad = [&b"a"[..], b"\xff\xfe", b"", b""];
            let d = array(&doc, &stored(&doc, &vlen(&bad)));
            for e in [
                d.read_region_json(&[0], &[4]).map(drop).unwrap_err(),
                d.read_region_strings(&[0], &[4]).map(drop).unwrap_err(),
            ] {
                assert_eq!(e.kind(), ErrorKind::Codec, "{what}: {e}");
                assert!(e.message().contains("element 1"), "{what}: {e}");
            }
            assert_eq!(d.read_region_bytes(&[0], &[4]).unwrap().0, bad.concat());
        }
    }

    // Chunk shapes whose elements could not be held are refused when the
    // array opens; below that, a huge count in a tiny chunk is refused
    // before anything of its size is allocated, reading four elements.
    for huge in [1u64 << 40, 1 << 32] {
        let doc = v3(
            huge,
            huge,
            json!("string"),
            json!(""),
            json!([{"name": "vlen-utf8"}]),
        );
        let e = try_array(&doc, b"").map(drop).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{e}");
    }
    let big = 1u64 << 26;
    for (what, doc, key) in [
        (
            "v3 chunk of 2^26 strings",
            v3(
                big,
                big,
                json!("string"),
                json!(""),
                json!([{"name": "vlen-utf8"}]),
            ),
            "c/0",
        ),
        (
            "v2 chunk of 2^26 bytes",
            v2(
                big,
                big,
                json!("|O"),
                json!([{"id": "vlen-bytes"}]),
                Value::Null,
            ),
            "0",
        ),
    ] {
        for count in [u32::MAX, big as u32, 1 << 30] {
            let mut c = vlen(&[b"x"]);
            c[..4].copy_from_slice(&count.to_le_bytes());
            let d = array(&doc, &c);
            refused(
                &format!("{what}, count {count}"),
                &d,
                4,
                ErrorKind::Codec,
                key,
            );
        }
    }

    // Blosc frames that claim huge sizes (nothing allocated from the
    // claim), and a real bomb: 64 MiB of zeros (a count of 0 for a chunk
    // of four, then zeros).
    let blosc2 = json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0});
    let doc = v2(
        4,
        4,
        json!("|O"),
        json!([{"id": "vlen-utf8"}]),
        blosc2.clone(),
    );
    for nbytes in [0x7fff_ffffu32, u32::MAX, 1 << 30] {
        // Version 2, lz4 version 1, flags memcpy (0x02) + byte shuffle
        // off, typesize 1, nbytes, blocksize, cbytes: 16 + 8 bytes.
        let mut frame = vec![2u8, 1, 0x02, 1];
        frame.extend_from_slice(&nbytes.to_le_bytes());
        frame.extend_from_slice(&nbytes.to_le_bytes());
        frame.extend_from_slice(&24u32.to_le_bytes());
        frame.extend_from_slice(&chunk[..8]);
        let d = array(&doc, &frame);
        refused(
            &format!("blosc claiming {nbytes}"),
            &d,
            4,
            ErrorKind::Codec,
            "0",
        );
    }
    let mut bomb = Vec::new();
    Compression::from_json(&json!({"type": "blosc", "cname": "zstd", "clevel": 9, "shuffle": 0}))
        .unwrap()
        .encode(&vec![0u8; 64 << 20], 1, &mut bomb)
        .unwrap();
    assert!(bomb.len() < (64 << 20) / 256, "{} bytes", bomb.len());
    // Decoded one internal block at a time: memory follows the data.
    let d = array(&doc, &bomb);
    refused_within("a blosc bomb", &d, 4, ErrorKind::Codec, "0", 64 << 20);

    // Struct chunks of the wrong size (12-byte records: int32 and two
    // UTF-32 code units), with and without compression.
    let fields = json!({"name": "struct", "configuration": {"fields": [
        {"name": "a", "data_type": "int32"},
        {"name": "b", "data_type": {"name": "fixed_length_utf32",
                                    "configuration": {"length_bytes": 8}}}]}});
    let struct_v3 = v3(
        4,
        4,
        fields,
        json!({"a": 0, "b": ""}),
        json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
    );
    let struct_v2 = v2(
        4,
        4,
        json!([["a", "<i4"], ["b", "<U2"]]),
        Value::Null,
        Value::Null,
    );
    let mut struct_v2_blosc = struct_v2.clone();
    struct_v2_blosc["compressor"] = blosc2;
    let mut struct_v3_blosc = struct_v3.clone();
    struct_v3_blosc["codecs"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "blosc",
        "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "noshuffle", "typesize": 1,
                          "blocksize": 0}}));
    for (what, doc, key) in [
        ("v3 struct", &struct_v3, "c/0"),
        ("v3 struct + blosc", &struct_v3_blosc, "c/0"),
        ("v2 struct", &struct_v2, "0"),
        ("v2 struct + blosc", &struct_v2_blosc, "0"),
    ] {
        let good = vec![7u8; 48];
        let d = array(doc, &stored(doc, &good));
        assert_eq!(d.element_size(), 12, "{what}");
        let mut buf = vec![0u8; 48];
        // Code units of 0x07070707 are not characters: JSON refuses them,
        // the binary layout has them.
        d.read_region(&[0], &[4], &mut buf).unwrap();
        assert_eq!(buf, good, "{what}");
        for len in [0usize, 1, 11, 12, 47, 49, 96, 4096] {
            let d = array(doc, &stored(doc, &vec![0u8; len]));
            let e = d.read_region(&[0], &[4], &mut buf).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Codec, "{what}, {len} bytes: {e}");
            assert!(e.message().contains(key), "{what}, {len} bytes: {e}");
            refused(
                &format!("{what}, {len} bytes"),
                &d,
                4,
                ErrorKind::Codec,
                key,
            );
        }
    }

    // json2 chunks of the wrong length or shape, and that are not JSON.
    let json2 = v2(4, 4, json!("|O"), json!([{"id": "json2"}]), Value::Null);
    let d = array(&json2, br#"["a","b","c","d","|O",[4]]"#);
    let text = d.read_region_json(&[0], &[4]).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!(["a", "b", "c", "d"])
    );
    for lie in [
        &br#"["a","b","c","|O",[3]]"#[..],
        br#"["a","b","c","d","e","|O",[5]]"#,
        br#"["a","b","c","d","|O",[5]]"#,
        br#"["a","b","c","d"]"#,
        br#"["a","b","c","d","|O",[4]"#,
        br#"{"a": 1}"#,
        b"",
    ] {
        let d = array(&json2, lie);
        refused(
            &format!("json2 {}", String::from_utf8_lossy(lie)),
            &d,
            4,
            ErrorKind::Codec,
            "0",
        );
    }

    // Pickled chunks with forbidden opcodes: nothing runs, and the error
    // names the opcode or global and the chunk.
    let pickled = v2(
        1,
        1,
        json!("|O"),
        json!([{"id": "pickle", "protocol": 5}]),
        Value::Null,
    );
    let forbidden: [(&str, &[u8]); 7] = [
        ("GLOBAL", b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03."),
        (
            "os",
            b"\x80\x05\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c\x04true\x94\x85\x94R\x94.",
        ),
        ("INST", b"(ios\nsystem\n."),
        ("OBJ", b"(o."),
        ("PERSID", b"Pid\n."),
        ("BINPERSID", b"K\x01Q."),
        ("EXT1", b"\x80\x02\x82\x01."),
    ];
    for (name, p) in forbidden {
        let d = array(&pickled, p);
        refused(
            &format!("pickle {name}"),
            &d,
            1,
            ErrorKind::UnsafePickle,
            "0",
        );
        let e = d.read_region_json(&[0], &[1]).unwrap_err();
        assert!(e.message().contains(name), "pickle {name}: {e}");
    }
    // The same behind blosc, in a chunk of a larger array (key "1").
    let mut compressed = v2(4, 2, json!("|O"), json!([{"id": "pickle"}]), Value::Null);
    compressed["compressor"] =
        json!({"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 0, "blocksize": 0});
    let store = Arc::new(MemoryStore::new());
    store
        .put(".zarray", &[compressed.to_string().as_bytes()])
        .unwrap();
    store
        .put("1", &[&stored(&compressed, forbidden[0].1)])
        .unwrap();
    let c = Container::open_store(store, "hostile", Mode::Read, Options::default()).unwrap();
    let d = c.open_dataset("").unwrap();
    let e = d.read_region_json(&[0], &[4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsafePickle, "{e}");
    assert!(
        e.message().contains('1') && e.message().contains("GLOBAL"),
        "{e}"
    );
}

/// nwb.md §3: an element of a reference dataset that is no reference (a
/// number, a list, an object without a path) is `Codec`, naming its index
/// in the region and its chunk; the elements before it do not matter.
#[test]
fn an_element_that_is_no_reference_names_its_index_and_chunk() {
    let store = Arc::new(MemoryStore::new());
    let doc = v2(6, 3, json!("|O"), json!([{"id": "json2"}]), Value::Null);
    store.put(".zarray", &[doc.to_string().as_bytes()]).unwrap();
    store
        .put(".zattrs", &[br#"{"zarr_dtype": "object"}"#])
        .unwrap();
    store
        .put(
            "0",
            &[br#"[{"path": "/a", "source": "."}, "/b", null, "|O", [3]]"#],
        )
        .unwrap();
    store
        .put("1", &[br#"["/c", 7, {"source": "."}, "|O", [3]]"#])
        .unwrap();
    let c = Container::open_store(store, "refs", Mode::Read, Options::default()).unwrap();
    let d = c.open_dataset("").unwrap();
    let first = d.read_region_json(&[0], &[3]).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&first).unwrap(),
        json!([{"source": ".", "path": "/a"}, {"source": ".", "path": "/b"}, null])
    );
    let e = d.read_region_json(&[1], &[5]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Codec, "{e}");
    let m = e.message();
    assert!(
        m.contains("element 3 of the region") && m.contains("chunk [1], key '1'"),
        "{m}"
    );
    assert!(m.contains("not an object reference"), "{m}");
    let e = d.read_region_json(&[5], &[1]).unwrap_err();
    assert!(
        e.message()
            .contains("element 0 of the region (chunk [1], key '1')"),
        "{e}"
    );
}
