//! The pickle reader and the json2 decoder: the corpus's pickled and json2
//! chunks against its manifest, pickles numpy and Python wrote for the
//! data opcodes the corpus lacks, and hostile pickles (every forbidden
//! opcode, globals that would run code, allowed globals called in other
//! ways, deep nesting, huge lengths, memo abuse, cut and damaged chunks),
//! all built here as bytes.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::*;
use crate::format::zarr2::metadata::Compressor;

// ---------------------------------------------------------------------------
// Building pickles.

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// SHORT_BINUNICODE `s`.
fn s(text: &str) -> Vec<u8> {
    let mut out = vec![op::SHORT_BINUNICODE, text.len() as u8];
    out.extend_from_slice(text.as_bytes());
    out
}

/// BININT1 `v`.
fn k(v: u8) -> Vec<u8> {
    vec![op::BININT1, v]
}

/// STACK_GLOBAL of `module`.`name`.
fn global(module: &str, name: &str) -> Vec<u8> {
    [s(module), s(name), vec![op::STACK_GLOBAL]].concat()
}

/// PROTO 5, `body`, STOP.
fn pickle(body: &[u8]) -> Vec<u8> {
    [&[op::PROTO, 5][..], body, &[op::STOP]].concat()
}

/// `_reconstruct(numpy.ndarray, (0,), b'b')`.
fn reconstruct() -> Vec<u8> {
    [
        global("numpy._core.multiarray", "_reconstruct"),
        global("numpy", "ndarray"),
        k(0),
        vec![
            op::TUPLE1,
            op::SHORT_BINBYTES,
            1,
            b'b',
            op::TUPLE3,
            op::REDUCE,
        ],
    ]
    .concat()
}

/// `numpy.dtype(code, False, True)` built with a version-3 state of byte
/// order `order` and no fields.
fn dtype(code: &str, order: &str) -> Vec<u8> {
    [
        global("numpy", "dtype"),
        s(code),
        vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
        k(3),
        s(order),
        vec![op::NONE, op::NONE, op::NONE],
        vec![
            op::BININT,
            0xff,
            0xff,
            0xff,
            0xff,
            op::BININT,
            0xff,
            0xff,
            0xff,
            0xff,
        ],
        k(63),
        vec![op::TUPLE, op::BUILD],
    ]
    .concat()
}

/// A pickled numpy array of `dtype_bytes`, C-order shape tuple `shape`
/// (bytes that push it) and elements `items` (bytes that push them).
fn array_with(dtype_bytes: &[u8], shape: &[u8], items: &[u8]) -> Vec<u8> {
    pickle(
        &[
            reconstruct(),
            vec![op::MARK],
            k(1),
            shape.to_vec(),
            dtype_bytes.to_vec(),
            vec![op::NEWFALSE, op::EMPTY_LIST, op::MARK],
            items.to_vec(),
            vec![op::APPENDS, op::TUPLE, op::BUILD],
        ]
        .concat(),
    )
}

/// A 1-d object array of `n` elements pushed by `items`.
fn object_array(n: u8, items: &[u8]) -> Vec<u8> {
    array_with(&dtype("O8", "|"), &[k(n), vec![op::TUPLE1]].concat(), items)
}

/// A ZarrReference `{"source": ".", "path": path}`.
fn reference(path: &str) -> Vec<u8> {
    [
        global("hdmf_zarr.utils", "ZarrReference"),
        vec![op::EMPTY_TUPLE, op::NEWOBJ, op::MARK],
        s("source"),
        s("."),
        s("path"),
        s(path),
        vec![op::SETITEMS],
    ]
    .concat()
}

fn kind_of<T: std::fmt::Debug>(r: Result<T>) -> ErrorKind {
    r.expect_err("an error").kind()
}

/// Asserts that `r` is an error of `kind` whose message holds every one of
/// `words`.
#[track_caller]
fn assert_error<T: std::fmt::Debug>(r: Result<T>, kind: ErrorKind, words: &[&str]) {
    let e = r.expect_err("an error");
    assert_eq!(e.kind(), kind, "{}", e.message());
    for w in words {
        assert!(e.message().contains(w), "{:?} lacks {w:?}", e.message());
    }
}

/// The first chunk of `acquisition/images/order_of_images` in
/// `nwb-links-v2.nwb.zarr`, after blosc: three ZarrReferences.
fn order_of_images() -> Vec<u8> {
    hex("
        80059587010000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e737472756374
        9493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b014b03859468038c0564747970
        659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d94288c0f68646d66
        5f7a6172722e7574696c73948c0d5a6172725265666572656e6365949394298194288c06736f75726365948c012e948c0470
        617468948c182f6163717569736974696f6e2f696d616765732f696d6732948c096f626a6563745f6964944e8c10736f7572
        63655f6f626a6563745f6964948c2436383666646139392d383530622d343730642d393661612d3961633934613639366432
        6294756815298194286817681868198c182f6163717569736974696f6e2f696d616765732f696d673094681b4e681c681d75
        6815298194286817681868198c182f6163717569736974696f6e2f696d616765732f696d673194681b4e681c681d75657494
        622e")
}

fn order_of_images_values() -> Vec<Value> {
    ["img2", "img0", "img1"]
        .iter()
        .map(|name| {
            json!({"source": ".", "path": format!("/acquisition/images/{name}"), "object_id": null,
                   "source_object_id": "686fda99-850b-470d-96aa-9ac94a696d2b"})
        })
        .collect()
}

fn trials_dtype() -> Value {
    json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]])
}

// ---------------------------------------------------------------------------
// The corpus.

fn corpus_dir() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus-hdmf"
    ))
    .to_path_buf()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A stored Zarr v2 chunk after the `.zarray`'s compressor.
fn decompress(zarray: &Value, stored: &[u8]) -> Vec<u8> {
    match Compressor::from_json(&zarray["compressor"]).unwrap() {
        Compressor::None => stored.to_vec(),
        Compressor::Shared { id, codec, .. } => {
            assert_eq!(id, "blosc", "the corpus's object chunks are blosc's");
            // The Blosc1 header's uncompressed size.
            let n = u32::from_le_bytes(stored[4..8].try_into().unwrap()) as usize;
            let mut out = vec![0u8; n];
            codec.decode(stored, &mut out).unwrap();
            out
        }
        other => panic!("unexpected compressor {other:?}"),
    }
}

/// The manifest's values of a reference dataset's elements, as
/// `decode_object_chunk` gives them: the reference as stored, and for a
/// compound an object of its fields in declared order.
fn manifest_elements(entry: &Value) -> Vec<Value> {
    entry["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| match entry.get("fields") {
            None => e["raw"].clone(),
            Some(fields) => {
                let mut row = serde_json::Map::new();
                for f in fields.as_array().unwrap() {
                    let f = f.as_str().unwrap();
                    let v = e["fields"]
                        .get(f)
                        .cloned()
                        .unwrap_or_else(|| e["references"][f]["raw"].clone());
                    row.insert(f.to_owned(), v);
                }
                Value::Object(row)
            }
        })
        .collect()
}

/// `json.dumps(values, ensure_ascii=False)` of a list of strings, as the
/// manifest's `sha256_json_values` hashes it.
fn python_json_dumps(values: &[Value]) -> String {
    let items: Vec<String> = values.iter().map(Value::to_string).collect();
    format!("[{}]", items.join(", "))
}

#[test]
fn corpus_pickle_and_json2_chunks_decode_to_the_manifest_values() {
    let dir = corpus_dir();
    let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
        eprintln!("skipped: no corpus at {}", dir.display());
        return;
    };
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let (mut pickled, mut json2) = (0, 0);
    for (name, c) in manifest["containers"].as_object().unwrap() {
        if c["zarr_format"] != 2 {
            continue;
        }
        for a in c["arrays"].as_array().unwrap() {
            let codec_id = a["zarray"]["filters"][0]["id"].as_str().unwrap_or("");
            if codec_id != "pickle" && codec_id != "json2" {
                continue;
            }
            let path = a["path"].as_str().unwrap().trim_start_matches('/');
            let base = dir.join(name).join(path);
            let zarray: Value =
                serde_json::from_slice(&std::fs::read(base.join(".zarray")).unwrap()).unwrap();
            let elements: usize = zarray["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap() as usize)
                .product();
            let mut values = Vec::new();
            for key in a["chunk_keys"].as_array().unwrap() {
                let key = key.as_str().unwrap();
                let stored = std::fs::read(base.join(key)).unwrap();
                let bytes = decompress(&zarray, &stored);
                let what = format!("chunk '{name}/{path}/{key}'");
                let decoded = if codec_id == "pickle" {
                    decode_object_chunk(&bytes, &what, &zarray["dtype"], elements)
                } else {
                    decode_json2_chunk(&bytes, &what, &zarray["dtype"], elements)
                };
                values.extend(decoded.unwrap_or_else(|e| panic!("{what}: {e}")));
                if codec_id == "pickle" {
                    let entry = c["reference_datasets"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|r| r["path"] == a["path"])
                        .unwrap();
                    if entry["first_chunk"]["key"] == key {
                        assert_eq!(
                            sha256_hex(&bytes),
                            entry["first_chunk"]["decompressed_sha256"],
                            "{what}"
                        );
                    }
                }
            }
            if codec_id == "pickle" {
                let entry = c["reference_datasets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["path"] == a["path"])
                    .unwrap();
                assert_eq!(values, manifest_elements(entry), "{name}/{path}");
                pickled += 1;
            } else {
                assert!(values.iter().all(Value::is_string), "{name}/{path}");
                assert_eq!(
                    sha256_hex(python_json_dumps(&values).as_bytes()),
                    a["sha256_json_values"],
                    "{name}/{path}"
                );
                json2 += 1;
            }
        }
    }
    // The three reference datasets of nwb-links-v2, and the cached
    // specifications (21 arrays) of the three v2 containers.
    assert_eq!(pickled, 3);
    assert_eq!(json2, 63);
}

#[test]
fn the_corpus_fill_value_of_a_compound_is_a_zero_record() {
    assert_eq!(decode(&hex("80054b002e"), "fill").unwrap(), Pickled::Int(0));
    assert_eq!(
        fill_value_json(
            "gAVLAC4=",
            "fill value of 'intervals/trials/timeseries'",
            &trials_dtype()
        )
        .unwrap(),
        json!({"idx_start": 0, "count": 0, "timeseries": 0})
    );
    let dir = corpus_dir().join("nwb-links-v2.nwb.zarr/intervals/trials/timeseries/.zarray");
    if let Ok(bytes) = std::fs::read(&dir) {
        let zarray: Value = serde_json::from_slice(&bytes).unwrap();
        let fill = fill_value_json(
            zarray["fill_value"].as_str().unwrap(),
            "fill",
            &zarray["dtype"],
        );
        assert_eq!(
            fill.unwrap(),
            json!({"idx_start": 0, "count": 0, "timeseries": 0})
        );
    }
    // A tuple fills field by field, a scalar is cast to each field's type.
    let tuple = pickle(&[k(1), k(2), vec![op::NONE, op::TUPLE3]].concat());
    let text = base64::engine::general_purpose::STANDARD.encode(&tuple);
    assert_eq!(
        fill_value_json(&text, "fill", &trials_dtype()).unwrap(),
        json!({"idx_start": 1, "count": 2, "timeseries": null})
    );
    let floats = json!([["x", "<f8"], ["ok", "|b1"], ["o", "|O"]]);
    assert_eq!(
        fill_value_json("gAVLAC4=", "fill", &floats).unwrap(),
        json!({"x": 0.0, "ok": false, "o": 0})
    );
    assert_eq!(
        fill_value_json("gAVOLg==", "fill", &json!("|O")).unwrap(),
        Value::Null
    );
    assert_error(
        fill_value_json("gAVOLg==", "fill value of 'x'", &trials_dtype()),
        ErrorKind::Codec,
        &["fill value of 'x'", "None"],
    );
    assert_error(
        fill_value_json("not base64!", "fill value of 'x'", &trials_dtype()),
        ErrorKind::Codec,
        &["base64"],
    );
    let system = pickle(
        &[
            global("os", "system"),
            s("id"),
            vec![op::TUPLE1, op::REDUCE],
        ]
        .concat(),
    );
    let text = base64::engine::general_purpose::STANDARD.encode(&system);
    assert_error(
        fill_value_json(&text, "fill value of 'x'", &trials_dtype()),
        ErrorKind::UnsafePickle,
        &["fill value of 'x'", "os.system"],
    );
}

// ---------------------------------------------------------------------------
// What numpy and Python write.

#[test]
fn a_real_chunk_decodes_to_its_references() {
    let bytes = order_of_images();
    let values = decode_object_chunk(&bytes, "chunk", &json!("|O"), 3).unwrap();
    assert_eq!(values, order_of_images_values());
    let Pickled::Array {
        dtype,
        shape,
        items,
    } = decode(&bytes, "chunk").unwrap()
    else {
        panic!("not an array");
    };
    assert_eq!((*dtype).clone(), Dtype::Object);
    assert_eq!(shape, [3]);
    assert_eq!(
        items[1],
        Pickled::Reference(vec![
            ("source".into(), Some(".".into())),
            ("path".into(), Some("/acquisition/images/img0".into())),
            ("object_id".into(), None),
            (
                "source_object_id".into(),
                Some("686fda99-850b-470d-96aa-9ac94a696d2b".into())
            ),
        ])
    );
}

#[test]
fn numpy_1_module_names_and_pickles_without_frames_decode() {
    let bytes = order_of_images();
    // Take the FRAME (9 bytes after PROTO) out, and name numpy 1's module.
    let mut old = bytes[..2].to_vec();
    old.extend_from_slice(&bytes[11..]);
    let from = s("numpy._core.multiarray");
    let to = s("numpy.core.multiarray");
    let at = old.windows(from.len()).position(|w| w == from).unwrap();
    old.splice(at..at + from.len(), to);
    assert_eq!(
        decode_object_chunk(&old, "chunk", &json!("|O"), 3).unwrap(),
        order_of_images_values()
    );
}

#[test]
fn data_opcodes_of_larger_arrays_decode() {
    // np.empty(1, object) holding 'x' * 300: APPEND, BINUNICODE.
    let one = hex("
        800595bb010000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e73747275
        63749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b014b01859468038c05
        64747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d9458
        2c010000");
    let mut one = one;
    one.extend(std::iter::repeat_n(b'x', 300));
    one.extend(hex("94617494622e"));
    assert_eq!(
        decode_object_chunk(&one, "chunk", &json!("|O"), 1).unwrap(),
        [json!("x".repeat(300))]
    );

    // np.array([[1.5, 2**70], [None, 'é']], object): BINFLOAT, LONG1, a
    // shape of two dimensions.
    let two = hex("
        800595a6000000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e73747275
        63749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b014b024b0286946803
        8c0564747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d
        9428473ff80000000000008a090000000000000000404e8c02c3a994657494622e");
    let values = decode_object_chunk(&two, "chunk", &json!("|O"), 4).unwrap();
    assert_eq!(
        Value::Array(values).to_string(),
        r#"[1.5,1180591620717411303424,null,"é"]"#
    );
    assert_eq!(
        decode(&two, "chunk")
            .unwrap()
            .to_json()
            .unwrap()
            .to_string(),
        r#"[[1.5,1180591620717411303424],[null,"é"]]"#
    );

    // A 0-d array holding b'xy': shape (), SHORT_BINBYTES as base64.
    let scalar = hex("
        8005958b000000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e73747275
        63749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b012968038c05647479
        70659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d9443027879
        94617494622e");
    assert_eq!(
        decode_object_chunk(&scalar, "chunk", &json!("|O"), 1).unwrap(),
        [json!("eHk=")]
    );

    // [{'k': 1}, [1, 2], (3,), b'\x00\xff', True, -5, 70000, -2**63,
    // 2**64-1, 1e-7, inf]: EMPTY_DICT and SETITEM, lists and tuples in
    // elements, BININT, LONG1 of 8 and 9 bytes.
    let mixed = hex("
        800595d6000000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e73747275
        63749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b014b0b859468038c05
        64747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d9428
        7d948c016b944b01735d94284b014b02654b038594430200ff94884afbffffff4a701101008a0800000000000000808a
        09ffffffffffffffff00473e7ad7f29abcaf48477ff0000000000000657494622e");
    let values = decode_object_chunk(&mixed, "chunk", &json!("|O"), 11).unwrap();
    assert_eq!(
        Value::Array(values).to_string(),
        r#"[{"k":1},[1,2],[3],"AP8=",true,-5,70000,-9223372036854775808,18446744073709551615,1e-7,"Infinity"]"#
    );
}

#[test]
fn records_with_object_fields_decode_as_objects_of_their_fields() {
    // np.array([(1, 2.5, 's'), (400, nan, None)],
    //          [('a', '<u8'), ('b', '>f8'), ('c', 'O')]): BININT2, a
    // field dtype named twice through the memo.
    let bytes = hex("
        80059537010000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e73747275
        63749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b014b02859468038c05
        64747970659493948c0356323494898887945294284b038c017c944e8c0161948c0162948c01639487947d9428681168
        0c8c02753894898887945294284b038c013c944e4e4e4affffffff4affffffff4b007494624b0086946812680c8c0266
        3894898887945294284b038c013e944e4e4e4affffffff4affffffff4b007494624b0886946813680c8c024f38948988
        87945294284b0368104e4e4e4affffffff4affffffff4b3f7494624b108694754b184b014b1b749462895d94284b0147
        40040000000000008c01739487944d9001477ff80000000000004e8794657494622e");
    let fields = json!([["a", "<u8"], ["b", ">f8"], ["c", "|O"]]);
    assert_eq!(
        Value::Array(decode_object_chunk(&bytes, "chunk", &fields, 2).unwrap()).to_string(),
        r#"[{"a":1,"b":2.5,"c":"s"},{"a":400,"b":"NaN","c":null}]"#
    );
    let Pickled::Array { dtype: found, .. } = decode(&bytes, "chunk").unwrap() else {
        panic!("not an array");
    };
    let Dtype::Record(r) = &*found else {
        panic!("not a record");
    };
    assert_eq!(r.size, 24);
    let fields: Vec<(&str, u64, String)> = r
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.dtype.describe()))
        .collect();
    assert_eq!(
        fields,
        [
            ("a", 0, "\"<u8\"".to_owned()),
            ("b", 8, "\">f8\"".to_owned()),
            ("c", 16, "\"|O\"".to_owned())
        ]
    );
    assert_eq!(
        found.describe(),
        r#"[["a", "<u8"], ["b", ">f8"], ["c", "|O"]]"#
    );

    // Field values must be what numpy gives for the field's type.
    let record = |a: &[u8]| {
        let d = [
            global("numpy", "dtype"),
            s("V16"),
            vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
            k(3),
            s("|"),
            vec![op::NONE],
            s("a"),
            s("o"),
            vec![op::TUPLE2, op::EMPTY_DICT, op::MARK],
            s("a"),
            dtype("u1", "|"),
            k(0),
            vec![op::TUPLE2],
            s("o"),
            dtype("O8", "|"),
            k(8),
            vec![op::TUPLE2, op::SETITEMS],
            k(16),
            k(1),
            k(27),
            vec![op::TUPLE, op::BUILD],
        ]
        .concat();
        array_with(
            &d,
            &[k(1), vec![op::TUPLE1]].concat(),
            &[a.to_vec(), vec![op::NONE, op::TUPLE2]].concat(),
        )
    };
    let dtype = json!([["a", "|u1"], ["o", "|O"]]);
    assert_eq!(
        decode_object_chunk(&record(&k(255)), "chunk", &dtype, 1).unwrap(),
        [json!({"a": 255, "o": null})]
    );
    assert_error(
        decode_object_chunk(&record(&[op::BININT2, 0, 1]), "chunk 'x/0'", &dtype, 1),
        ErrorKind::Codec,
        &["chunk 'x/0'", "element 0", "field 'a'", "|u1"],
    );
    assert_error(
        decode_object_chunk(&record(&s("1")), "chunk", &dtype, 1),
        ErrorKind::Codec,
        &["a str where a |u1 belongs"],
    );
}

#[test]
fn chunks_of_another_type_or_size_are_errors() {
    let bytes = order_of_images();
    assert_error(
        decode_object_chunk(&bytes, "chunk 'a/0'", &json!("|O"), 4),
        ErrorKind::Codec,
        &["chunk 'a/0'", "3 elements", "4"],
    );
    // More elements than the chunk holds: found at BUILD.
    assert_error(
        decode_object_chunk(&bytes, "chunk 'a/0'", &json!("|O"), 2),
        ErrorKind::Codec,
        &["3 elements, the chunk holds 2"],
    );
    assert_error(
        decode_object_chunk(&bytes, "chunk", &trials_dtype(), 3),
        ErrorKind::Codec,
        &["\"|O\"", "idx_start"],
    );
    assert_error(
        decode_object_chunk(&hex("80054b002e"), "chunk", &json!("|O"), 1),
        ErrorKind::Codec,
        &["an int, not a numpy array"],
    );
    let wrong_field = json!([["idx_start", "<i8"], ["count", "<i4"], ["timeseries", "|O"]]);
    let trials = array_with(
        &{
            let mut d = global("numpy", "dtype");
            d.extend(s("V16"));
            d.extend([op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK]);
            d.extend(k(3));
            d.extend(s("|"));
            d.push(op::NONE);
            d.extend(s("idx_start"));
            d.extend(s("count"));
            d.extend(s("timeseries"));
            d.extend([op::TUPLE3, op::EMPTY_DICT, op::MARK]);
            d.extend(s("idx_start"));
            d.extend(dtype("i4", "<"));
            d.extend(k(0));
            d.push(op::TUPLE2);
            d.extend(s("count"));
            d.extend(dtype("i4", "<"));
            d.extend(k(4));
            d.push(op::TUPLE2);
            d.extend(s("timeseries"));
            d.extend(dtype("O8", "|"));
            d.extend(k(8));
            d.extend([op::TUPLE2, op::SETITEMS]);
            d.extend(k(16));
            d.extend(k(1));
            d.extend(k(27));
            d.extend([op::TUPLE, op::BUILD]);
            d
        },
        &[k(1), vec![op::TUPLE1]].concat(),
        &[k(0), k(8), reference("/acquisition/ts_a"), vec![op::TUPLE3]].concat(),
    );
    assert_eq!(
        decode_object_chunk(&trials, "chunk", &trials_dtype(), 1).unwrap(),
        [
            json!({"idx_start": 0, "count": 8, "timeseries": {"source": ".", "path": "/acquisition/ts_a"}})
        ]
    );
    assert_error(
        decode_object_chunk(&trials, "chunk", &wrong_field, 1),
        ErrorKind::Codec,
        &["<i4", "<i8"],
    );
    assert_error(
        decode_object_chunk(&trials, "chunk", &json!("|O"), 1),
        ErrorKind::Codec,
        &["idx_start"],
    );
}

// ---------------------------------------------------------------------------
// json2.

#[test]
fn json2_chunks_decode_in_c_order() {
    let d = |text: &str, n| decode_json2_chunk(text.as_bytes(), "chunk 'j/0'", &json!("|O"), n);
    assert_eq!(d(r#"["abc","|O",[1]]"#, 1).unwrap(), [json!("abc")]);
    assert_eq!(
        d(
            r#"[[1.5,1180591620717411303424],[null,"\u00e9"],"|O",[2,2]]"#,
            4
        )
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>(),
        ["1.5", "1180591620717411303424", "null", "\"é\""]
    );
    assert_eq!(d(r#"["abc","|O",[]]"#, 1).unwrap(), [json!("abc")]);
    // Python's bare constants, but not inside strings.
    assert_eq!(
        d(
            r#"[NaN,Infinity,-Infinity,1e-07,"NaN Infinity \" -Infinity","|O",[5]]"#,
            5
        )
        .unwrap(),
        [
            json!("NaN"),
            json!("Infinity"),
            json!("-Infinity"),
            serde_json::from_str::<Value>("1e-07").unwrap(),
            json!("NaN Infinity \" -Infinity")
        ]
    );
    // A list element of a 1-d array stays whole.
    assert_eq!(d(r#"[[1,2],"|O",[1]]"#, 1).unwrap(), [json!([1, 2])]);
    // References, and records as lists of their fields.
    let refs = r#"[{"object_id":null,"path":"/a","source":".","source_object_id":"x"},"|O",[1]]"#;
    assert_eq!(
        d(refs, 1).unwrap(),
        [json!({"object_id": null, "path": "/a", "source": ".", "source_object_id": "x"})]
    );
    let rows = r#"[[0,8,{"path":"/a","source":"."}],[10,8,null],"|V16",[2]]"#;
    assert_eq!(
        decode_json2_chunk(rows.as_bytes(), "chunk", &trials_dtype(), 2).unwrap(),
        [
            json!({"idx_start": 0, "count": 8, "timeseries": {"path": "/a", "source": "."}}),
            json!({"idx_start": 10, "count": 8, "timeseries": null})
        ]
    );
}

#[test]
fn malformed_json2_chunks_are_errors() {
    let d = |bytes: &[u8], dtype: &Value, n| decode_json2_chunk(bytes, "chunk 'j/0'", dtype, n);
    let o = json!("|O");
    for (text, words) in [
        (&br#"["abc","|O",[1]"#[..], &["chunk 'j/0'", "not JSON"][..]),
        (br#"{"a":1}"#, &["not a list"]),
        (br#"["abc"]"#, &["dtype and shape"]),
        (br#"["abc","|O",1]"#, &["dtype and shape"]),
        (br#"["abc","<i4",[1]]"#, &["\"<i4\""]),
        (br#"["abc","|O",[2]]"#, &["[2]", "1 elements"]),
        (br#"["abc","|O",[-1]]"#, &["shape"]),
        (br#"["a","b","|O",[]]"#, &["0-d array has 2 elements"]),
        (
            br#"[["a"],"b","|O",[1,1]]"#,
            &["list of 2 elements where the shape has 1"],
        ),
        (
            br#"["a","|O",[1,1]]"#,
            &["\"a\" where the shape has a list of 1"],
        ),
        (b"[\"\xff\",\"|O\",[1]]", &["not UTF-8"]),
    ] {
        assert_error(d(text, &o, 1), ErrorKind::Codec, words);
    }
    assert_error(
        d(br#"[[1,2],"|V16",[1]]"#, &trials_dtype(), 1),
        ErrorKind::Codec,
        &["element 0", "3 fields"],
    );
    assert_error(
        d(br#"[[1,2,3],"|O",[1]]"#, &trials_dtype(), 1),
        ErrorKind::Codec,
        &["\"|O\""],
    );
    // Nesting beyond serde_json's recursion limit is an error, not a crash.
    let deep = format!(
        "[{}1{},\"|O\",[1]]",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_eq!(kind_of(d(deep.as_bytes(), &o, 1)), ErrorKind::Codec);
}

// ---------------------------------------------------------------------------
// Hostile pickles.

/// The opcodes the reader runs (nwb.md §3).
const ALLOWED: &[u8] = &[
    op::PROTO,
    op::FRAME,
    op::SHORT_BINUNICODE,
    op::MEMOIZE,
    op::BINGET,
    op::STACK_GLOBAL,
    op::BININT1,
    op::BININT,
    op::NONE,
    op::NEWTRUE,
    op::NEWFALSE,
    op::SHORT_BINBYTES,
    op::MARK,
    op::TUPLE,
    op::TUPLE1,
    op::TUPLE2,
    op::TUPLE3,
    op::EMPTY_TUPLE,
    op::EMPTY_LIST,
    op::EMPTY_DICT,
    op::APPENDS,
    op::SETITEMS,
    op::REDUCE,
    op::BUILD,
    op::NEWOBJ,
    op::STOP,
    op::APPEND,
    op::BININT2,
    op::LONG1,
    op::BINFLOAT,
    op::BINUNICODE,
    op::LONG_BINGET,
    op::SETITEM,
];

#[test]
fn every_opcode_outside_the_subset_is_refused_before_it_runs() {
    let mut refused = 0;
    for code in 0..=255u8 {
        if ALLOWED.contains(&code) {
            continue;
        }
        // After a valid start, and as the very first opcode.
        for input in [
            [
                &[op::PROTO, 5, op::NONE, op::MEMOIZE, code][..],
                b"os\nsystem\n(tR.",
            ]
            .concat(),
            vec![code, b'.'],
        ] {
            let name = opcode_name(code).map_or_else(|| format!("0x{code:02x}"), str::to_owned);
            assert_error(
                decode(&input, "chunk 'x/0'"),
                ErrorKind::UnsafePickle,
                &["chunk 'x/0'", &format!("opcode {name} ")],
            );
        }
        refused += 1;
    }
    assert_eq!(refused, 256 - ALLOWED.len());
    // Among them every opcode that names a global or calls something.
    for name in [
        "GLOBAL",
        "INST",
        "OBJ",
        "NEWOBJ_EX",
        "EXT1",
        "EXT2",
        "EXT4",
        "PERSID",
        "BINPERSID",
        "PUT",
        "BINPUT",
        "LONG_BINPUT",
        "GET",
        "DUP",
        "POP",
        "POP_MARK",
        "ADDITEMS",
        "FROZENSET",
        "NEXT_BUFFER",
        "BYTEARRAY8",
    ] {
        let code = (0..=255u8).find(|&c| opcode_name(c) == Some(name)).unwrap();
        assert!(!ALLOWED.contains(&code), "{name}");
    }
}

#[test]
fn globals_that_would_run_code_are_refused() {
    // os.system('echo pwned') by STACK_GLOBAL and REDUCE.
    let system = pickle(
        &[
            global("os", "system"),
            s("echo pwned"),
            vec![op::TUPLE1, op::REDUCE],
        ]
        .concat(),
    );
    assert_error(
        decode(&system, "chunk 'x/0'"),
        ErrorKind::UnsafePickle,
        &[
            "chunk 'x/0'",
            "STACK_GLOBAL",
            "os.system",
            "nothing was run",
        ],
    );
    // The same by GLOBAL, in protocols 0 and 2, and by INST.
    for input in [
        &b"cos\nsystem\n(S'echo pwned'\ntR."[..],
        b"\x80\x02cposix\nsystem\nX\x0a\x00\x00\x00echo pwned\x85R.",
        b"(S'echo pwned'\nios\nsystem\n.",
        b"\x80\x05\x8c\x02os\x94\x8c\x06system\x94\x93.",
    ] {
        let e = decode(input, "chunk 'x/0'").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnsafePickle, "{}", e.message());
    }
    assert_error(
        decode(b"cos\nsystem\n(S'echo pwned'\ntR.", "chunk"),
        ErrorKind::UnsafePickle,
        &["opcode GLOBAL at byte 0"],
    );
    for (module, name) in [
        ("builtins", "eval"),
        ("builtins", "exec"),
        ("builtins", "getattr"),
        ("__builtin__", "eval"),
        ("subprocess", "Popen"),
        ("numpy", "load"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "dtype.__init__"),
        ("numpy.core.multiarray ", "_reconstruct"),
        ("hdmf_zarr.utils", "ZarrReference.__init__"),
        ("hdmf_zarr.utils", "ZarrReferenc"),
        ("copyreg", "_reconstructor"),
    ] {
        let input =
            pickle(&[global(module, name), s("1+1"), vec![op::TUPLE1, op::REDUCE]].concat());
        assert_error(
            decode(&input, "chunk"),
            ErrorKind::UnsafePickle,
            &[&format!("{module}.{name}")],
        );
    }
    // A real chunk with its class renamed.
    let mut renamed = order_of_images();
    let at = renamed
        .windows(13)
        .position(|w| w == b"ZarrReference")
        .unwrap();
    renamed[at + 12] = b'f';
    assert_error(
        decode_object_chunk(&renamed, "chunk", &json!("|O"), 3),
        ErrorKind::UnsafePickle,
        &["hdmf_zarr.utils.ZarrReferencf"],
    );
    // STACK_GLOBAL of values that are not strings.
    let input = pickle(&[k(1), k(2), vec![op::STACK_GLOBAL]].concat());
    assert_eq!(kind_of(decode(&input, "chunk")), ErrorKind::Codec);
}

#[test]
fn allowed_globals_called_in_other_ways_are_refused() {
    let o8 = dtype("O8", "|");
    let shape1 = [k(1), vec![op::TUPLE1]].concat();
    let items1 = vec![op::NONE];
    let nd = global("numpy", "ndarray");
    let rec = global("numpy._core.multiarray", "_reconstruct");
    let dt = global("numpy", "dtype");
    let zr = global("hdmf_zarr.utils", "ZarrReference");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "dtype(O8, True, True)",
            pickle(
                &[
                    dt.clone(),
                    s("O8"),
                    vec![op::NEWTRUE, op::NEWTRUE, op::TUPLE3, op::REDUCE],
                ]
                .concat(),
            ),
            "numpy.dtype with arguments other than",
        ),
        (
            "dtype(M8, False, True)",
            pickle(
                &[
                    dt.clone(),
                    s("M8"),
                    vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE],
                ]
                .concat(),
            ),
            "not an allowed type code",
        ),
        (
            "dtype(b'O8', False, True)",
            pickle(
                &[
                    dt.clone(),
                    vec![
                        op::SHORT_BINBYTES,
                        2,
                        b'O',
                        b'8',
                        op::NEWFALSE,
                        op::NEWTRUE,
                        op::TUPLE3,
                        op::REDUCE,
                    ],
                ]
                .concat(),
            ),
            "bytes, not an allowed type code",
        ),
        (
            "dtype(O8, False, True, 1)",
            pickle(
                &[
                    dt.clone(),
                    vec![op::MARK],
                    s("O8"),
                    vec![op::NEWFALSE, op::NEWTRUE],
                    k(1),
                    vec![op::TUPLE, op::REDUCE],
                ]
                .concat(),
            ),
            "numpy.dtype with arguments other than",
        ),
        (
            "dtype('O8')",
            pickle(&[dt.clone(), s("O8"), vec![op::TUPLE1, op::REDUCE]].concat()),
            "numpy.dtype with arguments other than",
        ),
        (
            "_reconstruct(ndarray, (1,), b'b')",
            pickle(
                &[
                    rec.clone(),
                    nd.clone(),
                    k(1),
                    vec![
                        op::TUPLE1,
                        op::SHORT_BINBYTES,
                        1,
                        b'b',
                        op::TUPLE3,
                        op::REDUCE,
                    ],
                ]
                .concat(),
            ),
            "_reconstruct with arguments other than",
        ),
        (
            "_reconstruct(dtype, (0,), b'b')",
            pickle(
                &[
                    rec.clone(),
                    dt.clone(),
                    k(0),
                    vec![
                        op::TUPLE1,
                        op::SHORT_BINBYTES,
                        1,
                        b'b',
                        op::TUPLE3,
                        op::REDUCE,
                    ],
                ]
                .concat(),
            ),
            "_reconstruct with arguments other than",
        ),
        (
            "_reconstruct(ndarray, (0,), b'c')",
            pickle(
                &[
                    rec.clone(),
                    nd.clone(),
                    k(0),
                    vec![
                        op::TUPLE1,
                        op::SHORT_BINBYTES,
                        1,
                        b'c',
                        op::TUPLE3,
                        op::REDUCE,
                    ],
                ]
                .concat(),
            ),
            "_reconstruct with arguments other than",
        ),
        (
            "_reconstruct(ndarray, (0,), 'b')",
            pickle(
                &[
                    rec.clone(),
                    nd.clone(),
                    k(0),
                    vec![op::TUPLE1],
                    s("b"),
                    vec![op::TUPLE3, op::REDUCE],
                ]
                .concat(),
            ),
            "_reconstruct with arguments other than",
        ),
        (
            "ndarray((3,))",
            pickle(&[nd.clone(), k(3), vec![op::TUPLE1, op::TUPLE1, op::REDUCE]].concat()),
            "calls numpy.ndarray",
        ),
        (
            "ZarrReference() by REDUCE",
            pickle(&[zr.clone(), vec![op::EMPTY_TUPLE, op::REDUCE]].concat()),
            "calls hdmf_zarr.utils.ZarrReference",
        ),
        (
            "REDUCE of a str",
            pickle(&[s("os.system"), vec![op::EMPTY_TUPLE, op::REDUCE]].concat()),
            "calls a str",
        ),
        (
            "NEWOBJ ndarray",
            pickle(&[nd.clone(), k(3), vec![op::TUPLE1, op::TUPLE1, op::NEWOBJ]].concat()),
            "NEWOBJ at byte",
        ),
        (
            "NEWOBJ ZarrReference('x')",
            pickle(&[zr.clone(), s("x"), vec![op::TUPLE1, op::NEWOBJ]].concat()),
            "ZarrReference with arguments",
        ),
        (
            "NEWOBJ of a list",
            pickle(&[vec![op::EMPTY_LIST, op::EMPTY_TUPLE, op::NEWOBJ]].concat()),
            "NEWOBJ at byte 4 of a list",
        ),
        (
            "ZarrReference with an int value",
            pickle(
                &[
                    zr.clone(),
                    vec![op::EMPTY_TUPLE, op::NEWOBJ, op::MARK],
                    s("path"),
                    k(1),
                    vec![op::SETITEMS],
                ]
                .concat(),
            ),
            "ZarrReference an int for a str",
        ),
        (
            "ZarrReference with an int key",
            pickle(
                &[
                    zr.clone(),
                    vec![op::EMPTY_TUPLE, op::NEWOBJ],
                    k(1),
                    s("x"),
                    vec![op::SETITEM],
                ]
                .concat(),
            ),
            "ZarrReference a str for an int",
        ),
        (
            "ZarrReference with a list value",
            pickle(
                &[
                    zr.clone(),
                    vec![op::EMPTY_TUPLE, op::NEWOBJ],
                    s("path"),
                    vec![op::EMPTY_LIST, op::SETITEM],
                ]
                .concat(),
            ),
            "a list for a str",
        ),
        (
            "ZarrReference with a state",
            pickle(
                &[
                    zr.clone(),
                    vec![op::EMPTY_TUPLE, op::NEWOBJ, op::EMPTY_DICT, op::BUILD],
                ]
                .concat(),
            ),
            "BUILD at byte",
        ),
        (
            "APPENDS to a dict",
            pickle(&[op::EMPTY_DICT, op::MARK, op::NONE, op::APPENDS]),
            "APPENDS at byte 5 to a dict",
        ),
        (
            "APPEND to a tuple",
            pickle(&[op::EMPTY_TUPLE, op::NONE, op::APPEND]),
            "APPEND at byte 4 to a tuple",
        ),
        (
            "APPEND to a ZarrReference",
            pickle(
                &[
                    zr.clone(),
                    vec![op::EMPTY_TUPLE, op::NEWOBJ, op::NONE, op::APPEND],
                ]
                .concat(),
            ),
            "to a ZarrReference",
        ),
        (
            "SETITEMS on a list",
            pickle(&[op::EMPTY_LIST, op::MARK, op::NONE, op::NONE, op::SETITEMS]),
            "on a list",
        ),
        (
            "SETITEM on a str",
            pickle(&[s("x"), vec![op::NONE, op::NONE, op::SETITEM]].concat()),
            "on a str",
        ),
        (
            "BUILD of a list",
            pickle(&[op::EMPTY_LIST, op::EMPTY_DICT, op::BUILD]),
            "BUILD at byte 4 of a list",
        ),
        (
            "BUILD of a str",
            pickle(&[s("x"), vec![op::EMPTY_DICT, op::BUILD]].concat()),
            "of a str",
        ),
        (
            "BUILD of a dtype twice",
            pickle(&[o8.clone(), vec![op::EMPTY_TUPLE, op::BUILD]].concat()),
            "already has its state",
        ),
        (
            "dtype state of version 4",
            pickle(
                &[
                    dt.clone(),
                    s("O8"),
                    vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
                    k(4),
                    s("|"),
                    vec![op::NONE; 3],
                    k(0),
                    k(0),
                    k(63),
                    vec![op::NONE, op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "not the 8 items of version 3",
        ),
        (
            "dtype state with a sub-array",
            pickle(
                &[
                    dt.clone(),
                    s("V8"),
                    vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
                    k(3),
                    s("|"),
                    o8.clone(),
                    k(1),
                    vec![op::TUPLE2, op::NONE, op::NONE],
                    k(8),
                    k(1),
                    k(0),
                    vec![op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "of a sub-array",
        ),
        (
            "dtype state with names and no fields",
            pickle(
                &[
                    dt.clone(),
                    s("V8"),
                    vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
                    k(3),
                    s("|"),
                    vec![op::NONE],
                    s("a"),
                    vec![op::TUPLE1, op::NONE],
                    k(8),
                    k(1),
                    k(0),
                    vec![op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "names and fields",
        ),
        (
            "dtype state with a field of no dtype",
            pickle(
                &[
                    dt.clone(),
                    s("V8"),
                    vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
                    k(3),
                    s("|"),
                    vec![op::NONE],
                    s("a"),
                    vec![op::TUPLE1, op::EMPTY_DICT],
                    s("a"),
                    s("x"),
                    k(0),
                    vec![op::TUPLE2, op::SETITEM],
                    k(8),
                    k(1),
                    k(0),
                    vec![op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "field 'a' is not a built dtype",
        ),
        (
            "dtype state with a byte order of '!'",
            pickle(
                &[
                    dt.clone(),
                    s("O8"),
                    vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
                    k(3),
                    s("!"),
                    vec![op::NONE; 3],
                    k(0),
                    k(0),
                    k(63),
                    vec![op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "byte order",
        ),
        (
            "array of i4 (raw bytes)",
            array_with(&dtype("i4", "<"), &shape1, &items1),
            "holds no objects",
        ),
        (
            "array state with bytes for elements",
            pickle(
                &[
                    reconstruct(),
                    vec![op::MARK],
                    k(1),
                    shape1.clone(),
                    o8.clone(),
                    vec![op::NEWFALSE, op::SHORT_BINBYTES, 0, op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "elements are not a list",
        ),
        (
            "array state of version 2",
            pickle(
                &[
                    reconstruct(),
                    vec![op::MARK],
                    k(2),
                    shape1.clone(),
                    o8.clone(),
                    vec![op::NEWFALSE, op::EMPTY_LIST, op::TUPLE, op::BUILD],
                ]
                .concat(),
            ),
            "another version than 1",
        ),
        (
            "array state with an unbuilt dtype",
            pickle(
                &[
                    reconstruct(),
                    vec![op::MARK],
                    k(1),
                    shape1.clone(),
                    dt.clone(),
                    s("O8"),
                    vec![
                        op::NEWFALSE,
                        op::NEWTRUE,
                        op::TUPLE3,
                        op::REDUCE,
                        op::NEWFALSE,
                        op::EMPTY_LIST,
                        op::TUPLE,
                        op::BUILD,
                    ],
                ]
                .concat(),
            ),
            "not a built numpy.dtype",
        ),
        (
            "a global as a value",
            pickle(&nd),
            "numpy.ndarray is used as a value",
        ),
        (
            "a dtype as a value",
            pickle(&o8),
            "numpy.dtype('O8') is used as a value",
        ),
        (
            "a dtype inside a list",
            pickle(&[vec![op::EMPTY_LIST], o8.clone(), vec![op::APPEND]].concat()),
            "used as a value",
        ),
    ];
    for (name, input, words) in cases {
        let e = decode(&input, "chunk 'x/0'").expect_err(name);
        assert_eq!(e.kind(), ErrorKind::UnsafePickle, "{name}: {}", e.message());
        assert!(
            e.message().contains(words) && e.message().starts_with("chunk 'x/0': "),
            "{name}: {:?} lacks {words:?}",
            e.message()
        );
    }
    // The same shapes are fine as hdmf-zarr uses them.
    assert_eq!(
        decode_object_chunk(&object_array(1, &reference("/a")), "chunk", &json!("|O"), 1).unwrap(),
        [json!({"source": ".", "path": "/a"})]
    );
}

#[test]
fn nesting_is_bounded() {
    // 10^5 MARKs.
    let marks = pickle(&vec![op::MARK; 100_000]);
    assert_error(
        decode(&marks, "chunk 'x/0'"),
        ErrorKind::Codec,
        &["chunk 'x/0'", "more than 64 marks"],
    );
    assert!(decode(
        &pickle(&[vec![op::MARK; 64], vec![op::TUPLE; 63]].concat()),
        "c"
    )
    .is_err());
    // 64 marks may be open.
    let ok = pickle(&[vec![op::MARK; 64], vec![op::TUPLE; 64]].concat());
    assert!(matches!(decode(&ok, "c").unwrap(), Pickled::Tuple(_)));

    // Lists nested by APPEND: 64 deep decode, 65 and 10^5 do not.
    let lists = |n: usize| pickle(&[vec![op::EMPTY_LIST; n], vec![op::APPEND; n - 1]].concat());
    assert!(decode(&lists(64), "c").is_ok());
    for n in [65, 100_000] {
        assert_error(
            decode(&lists(n), "c"),
            ErrorKind::Codec,
            &["nested more than 64 deep"],
        );
    }
    // Tuples nested without any MARK.
    let tuples = pickle(&[vec![op::NONE], vec![op::TUPLE1; 100_000]].concat());
    assert_error(
        decode(&tuples, "c"),
        ErrorKind::Codec,
        &["nested more than 64 deep"],
    );
    // A list that holds itself.
    let cycle = pickle(&[op::EMPTY_LIST, op::MEMOIZE, op::BINGET, 0, op::APPEND]);
    assert_error(
        decode(&cycle, "c"),
        ErrorKind::Codec,
        &["nested more than 64 deep"],
    );
    // Records nested in records, 65 deep, each built alone (one MARK open
    // at a time) and named in the next through the memo.
    let mut d = [dtype("O8", "|"), vec![op::MEMOIZE]].concat();
    for level in 0..65u8 {
        d.extend(
            [
                global("numpy", "dtype"),
                s("V8"),
                vec![op::NEWFALSE, op::NEWTRUE, op::TUPLE3, op::REDUCE, op::MARK],
                k(3),
                s("|"),
                vec![op::NONE],
                s("a"),
                vec![op::TUPLE1, op::EMPTY_DICT],
                s("a"),
                vec![op::BINGET, level],
                k(0),
                vec![op::TUPLE2, op::SETITEM],
                k(8),
                k(1),
                k(27),
                vec![op::TUPLE, op::BUILD, op::MEMOIZE],
            ]
            .concat(),
        );
    }
    assert_error(
        decode(&pickle(&d), "c"),
        ErrorKind::Codec,
        &["records nested more than 64 deep"],
    );
}

#[test]
fn lengths_beyond_the_input_are_errors_before_anything_is_allocated() {
    for (input, words) in [
        (
            vec![
                op::PROTO,
                5,
                op::BINUNICODE,
                0xff,
                0xff,
                0xff,
                0xff,
                b'a',
                b'b',
                b'c',
            ],
            &["BINUNICODE at byte 2 needs 4294967295 bytes, 3 remain"][..],
        ),
        (
            [&[op::PROTO, 5, op::SHORT_BINUNICODE, 255][..], &[b'a'; 10]].concat(),
            &["SHORT_BINUNICODE", "needs 255 bytes, 10 remain"],
        ),
        (
            vec![op::PROTO, 5, op::SHORT_BINBYTES, 200],
            &["SHORT_BINBYTES"],
        ),
        (
            vec![op::PROTO, 5, op::LONG1, 255, 1],
            &["LONG1", "needs 255 bytes, 1 remain"],
        ),
        (
            [
                &[op::PROTO, 5, op::FRAME][..],
                &[0xff; 8],
                &[op::NONE, op::STOP],
            ]
            .concat(),
            &["FRAME of 18446744073709551615 bytes"],
        ),
        (
            vec![op::PROTO, 5, op::FRAME, 1, 0],
            &["FRAME at byte 2 needs 8 bytes"],
        ),
        (
            vec![op::PROTO, 5, op::BININT, 1, 2],
            &["BININT at byte 2 needs 4 bytes, 2 remain"],
        ),
        (vec![op::PROTO, 5, op::BINFLOAT, 1], &["BINFLOAT"]),
        (vec![op::PROTO, 5, op::LONG_BINGET, 0], &["LONG_BINGET"]),
        (vec![op::PROTO], &["PROTO"]),
        (
            [&[op::PROTO, 5, op::LONG1, 17][..], &[1; 17], &[op::STOP]].concat(),
            &["17 bytes, more than 128 bits"],
        ),
        (vec![op::PROTO, 6, op::NONE, op::STOP], &["protocol 6"]),
        (
            vec![op::PROTO, 5, op::SHORT_BINUNICODE, 1, 0xff, op::STOP],
            &["not UTF-8"],
        ),
    ] {
        assert_error(decode(&input, "chunk 'x/0'"), ErrorKind::Codec, words);
    }
    // An integer of 16 bytes is read whole.
    let long = [
        &[op::PROTO, 5, op::LONG1, 16][..],
        &[0xff; 15],
        &[0x7f, op::STOP],
    ]
    .concat();
    assert_eq!(decode(&long, "c").unwrap(), Pickled::Int(i128::MAX));
}

#[test]
fn the_memo_is_bounded() {
    assert_error(
        decode(&pickle(&[op::BINGET, 0]), "chunk 'x/0'"),
        ErrorKind::Codec,
        &["chunk 'x/0'", "memo entry 0 was never set"],
    );
    assert_error(
        decode(
            &pickle(&[
                op::NONE,
                op::MEMOIZE,
                op::LONG_BINGET,
                0xff,
                0xff,
                0xff,
                0xff,
            ]),
            "c",
        ),
        ErrorKind::Codec,
        &["memo entry 4294967295 was never set"],
    );
    assert_error(
        decode(&pickle(&[op::MEMOIZE]), "c"),
        ErrorKind::Codec,
        &["MEMOIZE at byte 2 finds too few values"],
    );
    // 2^20 entries may be made, not one more.
    let memo = |n: usize| pickle(&[vec![op::NONE], vec![op::MEMOIZE; n]].concat());
    assert_eq!(decode(&memo(MAX_MEMO), "c").unwrap(), Pickled::None);
    assert_error(
        decode(&memo(MAX_MEMO + 1), "c"),
        ErrorKind::Codec,
        &["more than 1048576 memo entries"],
    );
    // LONG_BINGET of an entry past 255.
    let far = pickle(
        &[
            vec![op::NONE],
            vec![op::MEMOIZE; 300],
            vec![op::LONG_BINGET, 43, 1, 0, 0, op::TUPLE2],
        ]
        .concat(),
    );
    assert_eq!(
        decode(&far, "c").unwrap(),
        Pickled::Tuple(vec![Pickled::None, Pickled::None])
    );
    // A value named through the memo 2^40 times (x = (x, x), 40 times) is
    // refused by its size, in a moment.
    let mut laughs = vec![op::NONE];
    for i in 0..40u32 {
        laughs.push(op::MEMOIZE);
        laughs.push(op::LONG_BINGET);
        laughs.extend(i.to_le_bytes());
        laughs.push(op::TUPLE2);
    }
    assert_error(
        decode(&pickle(&laughs), "c"),
        ErrorKind::Codec,
        &["more than 64 times the pickle's"],
    );
    // The same for a long string named many times.
    let mut strings = [
        vec![op::EMPTY_LIST, op::MARK, op::BINUNICODE],
        100_000u32.to_le_bytes().to_vec(),
        vec![b'x'; 100_000],
        vec![op::MEMOIZE],
    ]
    .concat();
    for _ in 0..20_000 {
        strings.extend([op::BINGET, 0]);
    }
    strings.push(op::APPENDS);
    assert_error(
        decode(&pickle(&strings), "c"),
        ErrorKind::Codec,
        &["more than 64 times"],
    );
}

#[test]
fn malformed_pickles_are_errors() {
    for (input, words) in [
        (vec![], &["ends at byte 0 without STOP"][..]),
        (
            vec![op::PROTO, 5, op::NONE],
            &["ends at byte 3 without STOP"],
        ),
        (
            vec![op::PROTO, 5, op::STOP],
            &["STOP at byte 2 finds too few values"],
        ),
        (
            vec![op::PROTO, 5, op::NONE, op::NONE, op::STOP],
            &["leaves 1 values and 0 marks"],
        ),
        (
            vec![op::PROTO, 5, op::MARK, op::NONE, op::STOP],
            &["leaves 0 values and 1 marks"],
        ),
        (
            vec![op::PROTO, 5, op::NONE, op::MARK, op::NONE, op::TUPLE2],
            &["TUPLE2 at byte 5 finds too few values"],
        ),
        (
            vec![op::PROTO, 5, op::NONE, op::TUPLE],
            &["TUPLE at byte 3 has no MARK"],
        ),
        (
            vec![op::PROTO, 5, op::MARK, op::NONE, op::APPENDS],
            &["APPENDS at byte 4 finds too few values"],
        ),
        (
            vec![
                op::PROTO,
                5,
                op::EMPTY_DICT,
                op::MARK,
                op::NONE,
                op::SETITEMS,
            ],
            &["odd number of values (1)"],
        ),
        (
            vec![op::PROTO, 5, op::EMPTY_TUPLE, op::REDUCE],
            &["REDUCE at byte 3 finds too few values"],
        ),
    ] {
        assert_error(decode(&input, "chunk 'x/0'"), ErrorKind::Codec, words);
    }
    // Bytes after STOP are left, as Python's pickle.loads leaves them.
    assert_eq!(
        decode(&[op::PROTO, 5, op::NONE, op::STOP, 0xff], "c").unwrap(),
        Pickled::None
    );
    // An array never given its state, one whose list grew after its state
    // was given, and one whose shape does not hold its elements.
    assert_error(
        decode(&pickle(&reconstruct()), "c"),
        ErrorKind::Codec,
        &["never given its state"],
    );
    let grown = pickle(
        &[
            reconstruct(),
            vec![op::MARK],
            k(1),
            k(1),
            vec![op::TUPLE1],
            dtype("O8", "|"),
            vec![
                op::NEWFALSE,
                op::EMPTY_LIST,
                op::MEMOIZE,
                op::NONE,
                op::APPEND,
                op::TUPLE,
                op::BUILD,
            ],
            // The list again, through the memo, one element longer.
            vec![op::BINGET, 0, op::NONE, op::APPEND, op::TUPLE2],
        ]
        .concat(),
    );
    assert_error(
        decode(&grown, "c"),
        ErrorKind::Codec,
        &["shape [1] has 2 elements"],
    );
    assert_error(
        decode(
            &array_with(
                &dtype("O8", "|"),
                &[k(2), vec![op::TUPLE1]].concat(),
                &[op::NONE],
            ),
            "c",
        ),
        ErrorKind::Codec,
        &["shape [2] with 1 elements"],
    );
    // A dict key that is not a string has no JSON form.
    let dict = pickle(&[op::EMPTY_DICT, op::NONE, op::NONE, op::SETITEM]);
    assert_eq!(
        decode(&dict, "c").unwrap(),
        Pickled::Dict(vec![(Pickled::None, Pickled::None)])
    );
    assert!(decode(&dict, "c")
        .unwrap()
        .to_json()
        .unwrap_err()
        .contains("key that is None"));
    assert_error(
        decode_object_chunk(
            &object_array(1, &[op::EMPTY_DICT, op::NONE, op::NONE, op::SETITEM]),
            "chunk 'x/0'",
            &json!("|O"),
            1,
        ),
        ErrorKind::Codec,
        &["chunk 'x/0'", "element 0", "key that is None"],
    );
}

#[test]
fn cut_and_damaged_real_chunks_give_errors_not_panics() {
    let bytes = order_of_images();
    for n in 0..bytes.len() {
        let cut = &bytes[..n];
        assert_eq!(kind_of(decode(cut, "c")), ErrorKind::Codec, "cut at {n}");
        assert_eq!(
            kind_of(decode_object_chunk(cut, "c", &json!("|O"), 3)),
            ErrorKind::Codec,
            "cut at {n}"
        );
    }
    // Every byte changed to a few other values: data or an error of the
    // two kinds, never a panic.
    let mut decoded = 0;
    for i in 0..bytes.len() {
        for v in [0x00, 0x01, 0x7f, 0x80, 0xff, bytes[i] ^ 0x20] {
            let mut damaged = bytes.clone();
            damaged[i] = v;
            match decode_object_chunk(&damaged, "c", &json!("|O"), 3) {
                Ok(values) => {
                    assert_eq!(values.len(), 3);
                    decoded += 1;
                }
                Err(e) => assert!(
                    matches!(e.kind(), ErrorKind::Codec | ErrorKind::UnsafePickle),
                    "byte {i} = {v}: {e:?}"
                ),
            }
        }
    }
    // Changes inside strings still decode.
    assert!(decoded > 100, "{decoded}");
}
