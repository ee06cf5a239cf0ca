//! Counterparts of the Java reference test suite (saalfeldlab/n5
//! `AbstractN5Test`), one test per Java case, each run in every backend the
//! library writes to, as the Java suite is bound to each of its backends: a
//! directory, memory, S3 (SeaweedFS) and Google Cloud Storage
//! (fake-gcs-server); see `common::places`. The Java fixture: group
//! `/test/group`, dataset `/test/group/dataset` of dimensions [6, 15, 35]
//! and blockSize [3, 5, 7].

mod common;

use common::places::{places, Kind, Place};
use common::{bytes, compression, COMPRESSIONS};
use n5::{Container, DataType, DatasetAttributes, ErrorKind, Mode};
use serde_json::{json, Map, Value};

const GROUP: &str = "/test/group";
const DATASET: &str = "/test/group/dataset";
const DIMS: [u64; 3] = [6, 15, 35];
const BLOCK: [u32; 3] = [3, 5, 7];

/// Run `test` with a new container in every backend.
fn each(name: &str, test: impl Fn(&Place, Container)) {
    for place in places(name) {
        eprintln!("-- {:?}: {}", place.kind, place.location);
        let c = place.open(Mode::Create).unwrap();
        test(&place, c);
    }
}

/// The text of the object at `key` of the container's store.
fn read_text(c: &Container, key: &str) -> String {
    String::from_utf8(c.store().get(key).unwrap().unwrap()).unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn attrs(t: DataType, comp: &str) -> DatasetAttributes {
    DatasetAttributes::new(DIMS.to_vec(), BLOCK.to_vec(), t, compression(comp)).unwrap()
}

#[test]
fn test_create_group() {
    each("create-group", |_, c| {
        c.create_group(GROUP).unwrap();
        for p in ["test", "/test", "test/group", "/test/group/"] {
            assert!(c.exists(p).unwrap(), "{p}");
        }
        assert!(!c.exists("test/group/nope").unwrap());
    });
}

#[test]
fn test_set_attribute_doesnt_create_group() {
    each("set-attr-no-group", |_, c| {
        let e = c.set_attribute("/nope", "key", json!("value")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        let e = c
            .set_attributes("/nope", &obj(json!({"a": 1})))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(!c.exists("/nope").unwrap());
    });
}

#[test]
fn test_create_dataset() {
    each("create-dataset", |_, c| {
        c.create_dataset(DATASET, attrs(DataType::U64, r#"{"type":"raw"}"#))
            .unwrap();
        assert!(c.dataset_exists(DATASET).unwrap());
        let d = c.open_dataset(DATASET).unwrap();
        let a = d.attributes();
        assert_eq!(a.dimensions, DIMS);
        assert_eq!(a.block_size, BLOCK);
        assert_eq!(a.data_type, DataType::U64);
        // Creating over an existing dataset is refused.
        let e = c
            .create_dataset(DATASET, attrs(DataType::U8, r#"{"type":"raw"}"#))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        assert_eq!(c.open_dataset(DATASET).unwrap().data_type(), DataType::U64);
    });
}

#[test]
fn test_blocks_larger_than_dimensions() {
    each("larger-blocks", |_, c| {
        let a = DatasetAttributes::new(
            vec![5, 3],
            vec![8, 8],
            DataType::I16,
            compression(r#"{"type":"gzip"}"#),
        )
        .unwrap();
        let d = c.create_dataset("small", a).unwrap();
        assert_eq!(d.block_shape(&[0, 0]).unwrap(), vec![5, 3]);
        let data = bytes(1, 5 * 3 * 2);
        d.write_block(&[0, 0], &[5, 3], &data).unwrap();
        let mut out = vec![0u8; data.len()];
        assert!(d.read_block_into(&[0, 0], &mut out).unwrap());
        assert_eq!(out, data);
        assert_eq!(
            d.read_block(&[0, 0]).unwrap().unwrap().header.size,
            vec![5, 3]
        );
    });
}

#[test]
fn test_unaligned_blocks_truncated_at_end() {
    each("truncated-end", |_, c| {
        let d = c
            .create_dataset(DATASET, attrs(DataType::U8, r#"{"type":"raw"}"#))
            .unwrap();
        // Grid [2, 3, 5]; the last block in dimension 2 is 35 - 4*7 = 7 (exact), so
        // use a dataset with a real remainder too.
        let a = DatasetAttributes::new(
            vec![7, 16, 36],
            BLOCK.to_vec(),
            DataType::U8,
            compression(r#"{"type":"raw"}"#),
        )
        .unwrap();
        let e = c.create_dataset("edge", a).unwrap();
        for (ds, pos, want) in [
            (&d, [1u64, 2, 4], vec![3u64, 5, 7]),
            (&e, [2, 0, 0], vec![1, 5, 7]),
            (&e, [0, 3, 0], vec![3, 1, 7]),
            (&e, [0, 0, 5], vec![3, 5, 1]),
            (&e, [2, 3, 5], vec![1, 1, 1]),
        ] {
            let shape = ds.block_shape(&pos).unwrap();
            assert_eq!(shape, want);
            let n = shape.iter().product::<u64>() as usize;
            let data = bytes(pos[0] + 7 * pos[2], n);
            ds.write_block(&pos, &shape, &data).unwrap();
            let stored = ds.read_block(&pos).unwrap().unwrap();
            assert_eq!(
                stored.header.size,
                shape.iter().map(|&x| x as u32).collect::<Vec<_>>(),
                "truncated in the header"
            );
            assert_eq!(stored.data, data);
        }
    });
}

fn write_read_numeric(t: DataType) {
    each(&format!("rw-{t}"), |p, c| {
        for (i, comp) in COMPRESSIONS.iter().enumerate() {
            let path = format!("{DATASET}{i}");
            let d = c.create_dataset(&path, attrs(t.clone(), comp)).unwrap();
            let shape = d.block_shape(&[0, 0, 0]).unwrap();
            let n = shape.iter().product::<u64>() as usize * t.size();
            let data = bytes(i as u64, n);
            d.write_block(&[0, 0, 0], &shape, &data).unwrap();
            let c2 = p.open(Mode::Read).unwrap();
            let d2 = c2.open_dataset(&path).unwrap();
            let mut out = vec![0u8; n];
            assert!(d2.read_block_into(&[0, 0, 0], &mut out).unwrap());
            assert_eq!(out, data, "{t} {comp}");
            assert_eq!(d2.read_block(&[0, 0, 0]).unwrap().unwrap().data, data);
        }
    });
}

#[test]
fn test_write_read_byte_block() {
    write_read_numeric(DataType::U8);
    write_read_numeric(DataType::I8);
}

#[test]
fn test_write_read_short_block() {
    write_read_numeric(DataType::U16);
    write_read_numeric(DataType::I16);
}

#[test]
fn test_write_read_int_block() {
    write_read_numeric(DataType::U32);
    write_read_numeric(DataType::I32);
}

#[test]
fn test_write_read_long_block() {
    write_read_numeric(DataType::U64);
    write_read_numeric(DataType::I64);
}

#[test]
fn test_write_read_float_block() {
    write_read_numeric(DataType::F32);
}

#[test]
fn test_write_read_double_block() {
    write_read_numeric(DataType::F64);
}

#[test]
fn test_write_read_string_block() {
    each("strings", |_, c| {
        let strings = [
            "",
            "a",
            "þ",
            "Grüße",
            "日本語",
            "🧪",
            "a longer string",
            "",
            "x",
            "",
            "",
            "y",
        ];
        for (i, comp) in COMPRESSIONS.iter().enumerate() {
            let path = format!("strings{i}");
            let a = DatasetAttributes::new(vec![12], vec![12], DataType::String, compression(comp))
                .unwrap();
            let d = c.create_dataset(&path, a).unwrap();
            d.write_string_block(&[0], &[12], &strings).unwrap();
            let (shape, got) = d.read_string_block(&[0]).unwrap().unwrap();
            assert_eq!(shape, vec![12]);
            assert_eq!(got, strings, "{comp}");
            let raw = d.read_block(&[0]).unwrap().unwrap();
            assert_eq!(raw.header.mode, n5::BlockMode::Varlength);
        }
    });
}

#[test]
fn test_read_chunk_vs_block() {
    // Unsharded N5: a chunk is a block; reading the whole block and reading
    // its region give the same data.
    each("chunk-vs-block", |_, c| {
        let d = c
            .create_dataset(DATASET, attrs(DataType::U16, r#"{"type":"gzip"}"#))
            .unwrap();
        let data = bytes(3, 3 * 5 * 7 * 2);
        d.write_block(&[1, 1, 1], &[3, 5, 7], &data).unwrap();
        let mut region = vec![0u8; data.len()];
        d.read_region(&[3, 5, 7], &[3, 5, 7], &mut region).unwrap();
        assert_eq!(region, data);
    });
}

#[test]
fn test_mode1_write_read_byte_block() {
    each("mode1", |_, c| {
        for comp in COMPRESSIONS {
            let path = format!("m1-{}", comp.len());
            let _ = c.remove(&path);
            let d = c.create_dataset(&path, attrs(DataType::U8, comp)).unwrap();
            for n in [0usize, 1, 104, 105, 106, 5000] {
                let data = bytes(n as u64, n);
                d.write_varlength_block(&[0, 0, 0], &[3, 5, 7], &data)
                    .unwrap();
                let b = d.read_block(&[0, 0, 0]).unwrap().unwrap();
                let mode = if n == 105 {
                    n5::BlockMode::Default
                } else {
                    n5::BlockMode::Varlength
                };
                assert_eq!(b.header.mode, mode, "{comp} n={n}");
                assert_eq!(b.header.num_elements, n as u64);
                assert_eq!(b.data, data);
            }
        }
    });
}

#[test]
fn test_write_read_serializable_block() {
    each("object", |_, c| {
        for (i, comp) in COMPRESSIONS.iter().enumerate() {
            let a = DatasetAttributes::new(vec![40], vec![10], DataType::Object, compression(comp))
                .unwrap();
            let d = c.create_dataset(&format!("obj{i}"), a).unwrap();
            for (pos, n) in [(0u64, 0usize), (1, 2), (3, 3000)] {
                let data = bytes(pos, n);
                d.write_object_block(&[pos], &data).unwrap();
                assert_eq!(
                    d.read_object_block(&[pos]).unwrap().unwrap(),
                    data,
                    "{comp}"
                );
            }
            assert_eq!(d.read_object_block(&[2]).unwrap(), None);
        }
    });
}

#[test]
fn test_overwrite_block() {
    each("overwrite", |_, c| {
        let d = c
            .create_dataset(DATASET, attrs(DataType::I32, r#"{"type":"gzip"}"#))
            .unwrap();
        let big = bytes(7, 3 * 5 * 7 * 4);
        d.write_block(&[0, 0, 0], &[3, 5, 7], &big).unwrap();
        let small = vec![0u8; big.len()]; // compresses to far fewer bytes
        d.write_block(&[0, 0, 0], &[3, 5, 7], &small).unwrap();
        let mut out = vec![1u8; big.len()];
        d.read_block_into(&[0, 0, 0], &mut out).unwrap();
        assert_eq!(out, small);
    });
}

#[test]
fn test_attributes() {
    each("attributes", |p, c| {
        c.create_group(GROUP).unwrap();
        c.set_attribute(GROUP, "key1", json!("value1")).unwrap();
        assert_eq!(
            c.get_attribute(GROUP, "key1").unwrap(),
            Some(json!("value1"))
        );
        c.set_attributes(
            GROUP,
            &obj(json!({"key1": "value1", "key2": "value2", "key3": 3})),
        )
        .unwrap();
        assert_eq!(
            c.attributes(GROUP).unwrap(),
            json!({"key1": "value1", "key2": "value2", "key3": 3})
        );
        // Overwrite with a shorter value: the file shrinks, no stale bytes remain.
        c.set_attribute(GROUP, "key1", json!("v")).unwrap();
        assert_eq!(c.get_attribute(GROUP, "key1").unwrap(), Some(json!("v")));
        c.set_attributes(GROUP, &obj(json!({"key2": null})))
            .unwrap();
        assert_eq!(c.get_attribute(GROUP, "key2").unwrap(), Some(Value::Null));
        assert_eq!(c.get_attribute(GROUP, "missing").unwrap(), None);
        // Numbers survive exactly.
        let numbers = json!({
            "i64min": -9223372036854775808i64, "i64max": 9223372036854775807i64,
            "u64max": 18446744073709551615u64, "p53": 9007199254740993u64,
        });
        c.set_attributes(GROUP, &obj(numbers)).unwrap();
        let text = read_text(&c, "test/group/attributes.json");
        for n in [
            "-9223372036854775808",
            "9223372036854775807",
            "18446744073709551615",
            "9007199254740993",
        ] {
            assert!(text.contains(n), "{n} in {text}");
        }
        c.set_attributes(
            GROUP,
            &obj(serde_json::from_str(
                r#"{"neg0": -0.0, "tiny": 5e-324, "huge": 1.797e308, "two": 2.0}"#,
            )
            .unwrap()),
        )
        .unwrap();
        let reread = p.open(Mode::Read).unwrap();
        for (key, want) in [
            ("neg0", -0.0f64),
            ("tiny", 5e-324),
            ("huge", 1.797e308),
            ("two", 2.0),
        ] {
            let got = reread
                .get_attribute(GROUP, key)
                .unwrap()
                .unwrap()
                .as_f64()
                .unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{key}");
        }
        let text = read_text(&c, "test/group/attributes.json");
        assert!(text.contains("-0.0") && text.contains("2.0"), "{text}");
    });
}

#[test]
fn test_dataset_attributes_keep_user_attributes() {
    each("dataset-attrs", |_, c| {
        // The root itself as a dataset, as Java's test does with "".
        c.set_attributes("", &obj(json!({"user": [1, 2], "n5": "4.0.0"})))
            .unwrap();
        let d = c
            .create_dataset("", attrs(DataType::F32, r#"{"type":"raw"}"#))
            .unwrap();
        assert_eq!(d.path(), "");
        let doc = c.attributes("").unwrap();
        assert_eq!(doc["user"], json!([1, 2]));
        assert_eq!(doc["n5"], json!("4.0.0"));
        assert_eq!(doc["dimensions"], json!(DIMS));
        assert!(c.dataset_exists("/").unwrap());
    });
}

#[test]
fn test_null_attributes() {
    each("null-attrs", |_, c| {
        c.create_group(GROUP).unwrap();
        c.set_attribute(GROUP, "nullValue", Value::Null).unwrap();
        assert_eq!(
            c.get_attribute(GROUP, "nullValue").unwrap(),
            Some(Value::Null)
        );
        c.set_attribute(GROUP, "array[3]", json!("x")).unwrap();
        assert_eq!(
            c.get_attribute(GROUP, "array").unwrap(),
            Some(json!([null, null, null, "x"]))
        );
        c.set_attribute(GROUP, "numbers[2]", json!(5)).unwrap();
        assert_eq!(
            c.get_attribute(GROUP, "numbers").unwrap(),
            Some(json!([0, 0, 5]))
        );
    });
}

#[test]
fn test_remove_attributes() {
    each("remove-attrs", |_, c| {
        c.create_group(GROUP).unwrap();
        c.set_attributes(
            GROUP,
            &obj(json!({"a": {"b": {"c": 1}, "d": 2}, "list": [0, 1, 2, 3], "a/b": 9})),
        )
        .unwrap();
        assert_eq!(c.remove_attribute(GROUP, "a/b/c").unwrap(), Some(json!(1)));
        assert_eq!(c.get_attribute(GROUP, "a/b").unwrap(), Some(json!({})));
        assert_eq!(
            c.remove_attribute(GROUP, "a").unwrap(),
            Some(json!({"b": {}, "d": 2}))
        );
        assert_eq!(
            c.remove_attribute(GROUP, "list[1]").unwrap(),
            Some(json!(1))
        );
        assert_eq!(
            c.get_attribute(GROUP, "list").unwrap(),
            Some(json!([0, 2, 3]))
        );
        assert_eq!(c.remove_attribute(GROUP, "a\\/b").unwrap(), Some(json!(9)));
        assert_eq!(c.remove_attribute(GROUP, "missing").unwrap(), None);
        assert_eq!(
            c.remove_attribute(GROUP, "/./list/../list[0]").unwrap(),
            Some(json!(0))
        );
        assert_eq!(c.attributes(GROUP).unwrap(), json!({"list": [2, 3]}));
        // A group without attributes.json: nothing to remove, nothing created.
        c.create_group("bare").unwrap();
        assert_eq!(c.remove_attribute("bare", "x").unwrap(), None);
        assert!(!c.store().exists("bare/attributes.json").unwrap());
    });
}

#[test]
fn test_remove_container() {
    each("remove-container", |p, c| {
        c.create_group(GROUP).unwrap();
        c.store().delete_dir("").unwrap();
        if p.kind == Kind::Memory {
            // A memory store is its own root: it cannot go away.
            assert!(p.open(Mode::Read).unwrap().list("").unwrap().is_empty());
            return;
        }
        let e = p.open(Mode::Read).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        let e = p.open(Mode::ReadWrite).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    });
}

#[test]
fn test_uri() {
    each("uri", |p, w| {
        let r = p.open(Mode::Read).unwrap();
        assert_eq!(w.location(), r.location());
        if p.kind != Kind::Memory {
            assert_eq!(w.location(), p.location);
        }
    });
}

#[test]
fn test_remove_group() {
    each("remove-group", |_, c| {
        c.create_dataset(DATASET, attrs(DataType::U8, r#"{"type":"raw"}"#))
            .unwrap()
            .write_block(&[0, 0, 0], &[3, 5, 7], &[1; 105])
            .unwrap();
        assert!(c.remove("test").unwrap());
        assert!(!c.exists(GROUP).unwrap());
        assert!(!c.exists("test").unwrap());
        assert!(!c.remove("test").unwrap());
        assert_eq!(
            c.remove("/").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            c.remove("a/..").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    });
}

#[test]
fn test_list() {
    each("list", |p, c| {
        for g in ["b", "a", "c"] {
            c.create_group(&format!("{GROUP}/{g}")).unwrap();
        }
        assert_eq!(c.list(GROUP).unwrap(), vec!["a", "b", "c"]);
        assert_eq!(c.list("").unwrap(), vec!["test"]);
        assert_eq!(c.list("/").unwrap(), c.list("").unwrap());
        assert_eq!(c.list("/nope").unwrap_err().kind(), ErrorKind::NotFound);
        let fresh = p.open(Mode::Read).unwrap();
        assert_eq!(fresh.list(GROUP).unwrap(), vec!["a", "b", "c"]);
        // A dataset's block directories are not children.
        let d = c
            .create_dataset(
                &format!("{GROUP}/d"),
                attrs(DataType::U8, r#"{"type":"raw"}"#),
            )
            .unwrap();
        d.write_block(&[0, 0, 0], &[3, 5, 7], &[0; 105]).unwrap();
        assert_eq!(c.list(&format!("{GROUP}/d")).unwrap(), Vec::<String>::new());
    });
}

#[test]
fn test_deep_list() {
    each("deep-list", |_, c| {
        for g in ["a/x", "b", "c/y/z"] {
            c.create_group(&format!("{GROUP}/{g}")).unwrap();
        }
        let d = c
            .create_dataset(
                &format!("{GROUP}/a/ds"),
                attrs(DataType::U8, r#"{"type":"raw"}"#),
            )
            .unwrap();
        d.write_block(&[0, 0, 0], &[3, 5, 7], &[0; 105]).unwrap();
        assert_eq!(
            c.deep_list(GROUP).unwrap(),
            vec!["a", "a/ds", "a/x", "b", "c", "c/y", "c/y/z"]
        );
        assert_eq!(c.deep_list("").unwrap()[0], "test");
        let datasets: Vec<String> = c
            .deep_list("")
            .unwrap()
            .into_iter()
            .filter(|p| c.dataset_exists(p).unwrap())
            .collect();
        assert_eq!(datasets, vec!["test/group/a/ds"]);
    });
}

#[test]
fn test_exists() {
    each("exists", |_, c| {
        c.create_dataset(DATASET, attrs(DataType::U8, r#"{"type":"raw"}"#))
            .unwrap();
        assert!(c.exists(DATASET).unwrap());
        assert!(c.dataset_exists(DATASET).unwrap());
        assert!(c.exists(GROUP).unwrap());
        assert!(!c.dataset_exists(GROUP).unwrap());
        assert!(!c.exists("nope").unwrap());
        assert!(!c.dataset_exists("nope").unwrap());
    });
}

#[test]
fn test_version() {
    each("version", |p, c| {
        assert_eq!(c.version().unwrap().as_deref(), Some("4.0.0"));
        // An existing compatible version is never rewritten.
        let put = |text: &str| {
            c.store()
                .put("attributes.json", &[text.as_bytes()])
                .unwrap()
        };
        put(r#"{"n5":"2.1.3","x":1}"#);
        let c = p.open(Mode::ReadWrite).unwrap();
        assert_eq!(c.version().unwrap().as_deref(), Some("2.1.3"));
        // An incompatible major version is refused by readers and writers.
        put(r#"{"n5":"5.0.0"}"#);
        for mode in [Mode::Read, Mode::ReadWrite, Mode::Create] {
            let e = p.open(mode).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported);
            assert!(e.message().contains("5.0.0"), "{e}");
        }
        // No version at all: readable; a writer adds 4.0.0 and keeps the rest.
        put(r#"{"x":1}"#);
        assert_eq!(p.open(Mode::Read).unwrap().version().unwrap(), None);
        p.open(Mode::ReadWrite).unwrap();
        let doc: Value = serde_json::from_str(&read_text(&c, "attributes.json")).unwrap();
        assert_eq!(doc, json!({"x": 1, "n5": "4.0.0"}));
    });
}

#[test]
fn test_reader_creation() {
    for kind in [Kind::Fs, Kind::Memory, Kind::S3, Kind::Gcs] {
        let Some(p) = common::places::place(kind, "reader-creation") else {
            continue;
        };
        eprintln!("-- {kind:?}: {}", p.location);
        // Missing location: error (the memory store always exists).
        if kind != Kind::Memory {
            assert_eq!(p.open(Mode::Read).unwrap_err().kind(), ErrorKind::NotFound);
        }
        // An empty directory: readable, and the reader writes nothing.
        let w = p.open(Mode::Create).unwrap();
        w.store().delete("attributes.json").unwrap();
        w.store().create_dir("").unwrap();
        w.store().put("other/x", &[b"x"]).unwrap();
        let r = p.open(Mode::Read).unwrap();
        assert_eq!(r.version().unwrap(), None);
        assert_eq!(w.store().list_keys("").unwrap(), ["other/x"]);
        // Attributes without a version: fine.
        let put = |text: &str| {
            w.store()
                .put("attributes.json", &[text.as_bytes()])
                .unwrap()
        };
        put(r#"{"foo":"bar"}"#);
        p.open(Mode::Read).unwrap();
        // A bad version: refused.
        put(r#"{"n5":"10.0.0"}"#);
        assert_eq!(
            p.open(Mode::Read).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
        // Not JSON: a specific error naming the file.
        put("{not json");
        let e = p.open(Mode::Read).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Json);
        assert!(e.message().contains("attributes.json"), "{e}");
    }
    // A file, not a directory.
    let s = common::Scratch::new("reader-creation-file");
    std::fs::write(s.join("file"), "x").unwrap();
    assert!(Container::open(s.join("file"), Mode::Read).is_err());
}

#[test]
fn test_delete() {
    each("delete", |_, c| {
        let d = c
            .create_dataset(DATASET, attrs(DataType::U8, r#"{"type":"raw"}"#))
            .unwrap();
        assert!(!d.delete_block(&[0, 0, 0]).unwrap());
        d.write_block(&[0, 0, 0], &[3, 5, 7], &[1; 105]).unwrap();
        assert!(d.block_exists(&[0, 0, 0]).unwrap());
        assert!(d.delete_block(&[0, 0, 0]).unwrap());
        assert!(!d.block_exists(&[0, 0, 0]).unwrap());
        assert_eq!(d.read_block(&[0, 0, 0]).unwrap(), None);
        let mut out = vec![9u8; 105];
        assert!(!d.read_block_into(&[0, 0, 0], &mut out).unwrap());
        assert_eq!(out, vec![0; 105]);
    });
}

#[test]
fn test_custom_object() {
    each("custom-object", |_, c| {
        c.create_group(GROUP).unwrap();
        let t = json!({"name": "a", "value": 1.5, "list": [1, 2]});
        c.set_attribute(GROUP, "objects[1]", t.clone()).unwrap();
        c.set_attribute(GROUP, "objects[0]", json!({"name": "b"}))
            .unwrap();
        assert_eq!(c.get_attribute(GROUP, "objects[1]").unwrap(), Some(t));
        assert_eq!(
            c.get_attribute(GROUP, "objects[1]/list[1]").unwrap(),
            Some(json!(2))
        );
        assert_eq!(
            c.get_attribute(GROUP, "objects[0]/name").unwrap(),
            Some(json!("b"))
        );
    });
}

#[test]
fn test_root_leaves() {
    each("root-leaves", |_, c| {
        c.create_group(GROUP).unwrap();
        c.set_attribute(GROUP, "/", json!("a string root")).unwrap();
        assert_eq!(c.attributes(GROUP).unwrap(), json!("a string root"));
        assert_eq!(
            c.get_attribute(GROUP, "").unwrap(),
            Some(json!("a string root"))
        );
        c.set_attribute(GROUP, "/", json!([1, 2, 3])).unwrap();
        assert_eq!(c.get_attribute(GROUP, "[1]").unwrap(), Some(json!(2)));
        c.set_attribute(GROUP, "key", json!(true)).unwrap();
        assert_eq!(c.attributes(GROUP).unwrap(), json!({"key": true}));
        assert_eq!(
            c.remove_attribute(GROUP, "/").unwrap(),
            Some(json!({"key": true}))
        );
        assert_eq!(c.attributes(GROUP).unwrap(), Value::Null);
    });
}

#[test]
fn test_writer_separation() {
    for kind in [Kind::Fs, Kind::Memory, Kind::S3, Kind::Gcs] {
        let (Some(pa), Some(pb)) = (
            common::places::place(kind, "separation-a"),
            common::places::place(kind, "separation-b"),
        ) else {
            continue;
        };
        let a = pa.open(Mode::Create).unwrap();
        let b = pb.open(Mode::Create).unwrap();
        a.create_group("only-a").unwrap();
        assert!(!b.exists("only-a").unwrap(), "{kind:?}");
    }
}

#[test]
fn test_paths_with_illegal_uri_characters() {
    each("uri-chars", |p, c| {
        for name in [
            "with space",
            "hash#tag",
            "per%25cent",
            "ünïcödé/日本",
            "q?x=1&y",
        ] {
            c.create_group(name).unwrap();
            c.set_attribute(name, "k", json!(name)).unwrap();
            assert_eq!(c.get_attribute(name, "k").unwrap(), Some(json!(name)));
            let ds = format!("{name}/ds");
            let d = c
                .create_dataset(&ds, attrs(DataType::U8, r#"{"type":"gzip"}"#))
                .unwrap();
            d.write_block(&[0, 0, 0], &[3, 5, 7], &[7; 105]).unwrap();
            let r = p.open(Mode::Read).unwrap().open_dataset(&ds).unwrap();
            let mut out = vec![0; 105];
            assert!(r.read_block_into(&[0, 0, 0], &mut out).unwrap());
            assert_eq!(out, vec![7; 105]);
        }
    });
}

#[test]
fn test_backward_reads_of_java_1_x_containers() {
    // The layout of saalfeldlab/n5's backward-compatibility fixtures
    // (data-1.5.0.n5): legacy `compressionType`, root version 1.5.0, and a
    // truncated 2x1 end block (the golden bytes of raw/1/1).
    each("backward", |p, w| {
        let store = w.store();
        store
            .put("attributes.json", &[br#"{"n5":"1.5.0"}"#])
            .unwrap();
        store
            .put(
                "raw/attributes.json",
                &[br#"{"dataType":"uint8","compressionType":"raw","blockSize":[5,4],"dimensions":[7,5]}"#],
            )
            .unwrap();
        store
            .put("raw/1/1", &[&[0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1, 3, 3]])
            .unwrap();
        let c = p.open(Mode::Read).unwrap();
        assert_eq!(c.version().unwrap().as_deref(), Some("1.5.0"));
        let d = c.open_dataset("raw").unwrap();
        assert_eq!(d.attributes().compression, compression(r#"{"type":"raw"}"#));
        let mut out = vec![9u8; 35];
        d.read_region(&[0, 0], &[7, 5], &mut out).unwrap();
        let mut want = vec![0u8; 35];
        want[4 * 7 + 5] = 3;
        want[4 * 7 + 6] = 3;
        assert_eq!(out, want);
        // Opening it for writing keeps the old version and the legacy metadata.
        let w = p.open(Mode::ReadWrite).unwrap();
        assert_eq!(w.version().unwrap().as_deref(), Some("1.5.0"));
        w.open_dataset("raw")
            .unwrap()
            .write_block(&[0, 0], &[5, 4], &[1; 20])
            .unwrap();
        assert_eq!(
            w.attributes("raw").unwrap()["compressionType"],
            json!("raw")
        );
    });
}
