//! Every error the core promises: escaping paths, writes through read-only
//! containers (which also create nothing), corrupt and truncated block
//! files, bad JSON, unknown compressions, wrong ranks, shapes and buffers.
//! Each is a specific error kind with a message naming what failed.

mod common;

use common::{compression, Scratch};
use n5::{Container, DataType, DatasetAttributes, ErrorKind, Mode};
use serde_json::json;

fn setup(s: &Scratch) -> Container {
    setup_with(s, r#"{"type":"gzip"}"#)
}

fn setup_with(s: &Scratch, comp: &str) -> Container {
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let a =
        DatasetAttributes::new(vec![10, 10], vec![4, 4], DataType::U16, compression(comp)).unwrap();
    let d = c.create_dataset("g/d", a).unwrap();
    d.write_region(&[0, 0], &[10, 10], &[3u8; 200]).unwrap();
    c.set_attribute("g", "k", json!(1)).unwrap();
    c
}

fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                out.push((e.path().display().to_string(), Vec::new()));
                stack.push(e.path());
            } else {
                out.push((
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn paths_cannot_escape_the_root() {
    let s = Scratch::new("escape");
    let c = setup(&s);
    std::fs::create_dir(s.join("outside")).unwrap();
    for p in [
        "..",
        "../outside",
        "g/../../outside",
        "/../c.n5",
        "a/b/../../../x",
    ] {
        assert_eq!(
            c.exists(p).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{p}"
        );
        assert_eq!(
            c.create_group(p).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{p}"
        );
        assert_eq!(
            c.attributes(p).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{p}"
        );
        assert_eq!(
            c.remove(p).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{p}"
        );
        assert_eq!(
            c.open_dataset(p).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{p}"
        );
    }
    assert!(s.join("outside").exists());
    assert!(!s.join("x").exists());
    // `..` inside the root resolves.
    assert!(c.dataset_exists("g/x/../d").unwrap());
}

#[test]
fn read_only_writes_nothing() {
    let s = Scratch::new("read-only");
    setup(&s);
    let before = snapshot(&s.join("c.n5"));
    let c = Container::open(s.join("c.n5"), Mode::Read).unwrap();
    let d = c.open_dataset("g/d").unwrap();
    let ro = |r: n5::Result<()>| assert_eq!(r.unwrap_err().kind(), ErrorKind::ReadOnly);
    ro(c.create_group("new"));
    ro(c.set_attributes("g", json!({"a": 1}).as_object().unwrap()));
    ro(c.set_attribute("g", "a", json!(1)));
    ro(c.remove_attribute("g", "k").map(|_| ()));
    ro(c.remove("g").map(|_| ()));
    let a = DatasetAttributes::new(
        vec![1],
        vec![1],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    ro(c.create_dataset("new", a).map(|_| ()));
    ro(d.write_block(&[0, 0], &[4, 4], &[0; 32]));
    ro(d.write_region(&[0, 0], &[1, 1], &[0; 2]));
    ro(d.delete_block(&[0, 0]).map(|_| ()));
    ro(d.set_dimensions(&[5, 5]));
    let mut buf = vec![0u8; 200];
    d.read_region(&[0, 0], &[10, 10], &mut buf).unwrap();
    assert_eq!(buf, vec![3u8; 200]);
    assert_eq!(snapshot(&s.join("c.n5")), before);
    // A container without root attributes stays without them.
    std::fs::create_dir(s.join("bare")).unwrap();
    Container::open(s.join("bare"), Mode::Read).unwrap();
    assert!(!s.join("bare/attributes.json").exists());
}

#[test]
fn corrupt_blocks_name_the_block() {
    for comp in [r#"{"type":"gzip"}"#, r#"{"type":"raw"}"#] {
        corrupt_blocks_with(comp);
    }
}

fn corrupt_blocks_with(comp: &str) {
    let s = Scratch::new(&format!("corrupt-{}", comp.len()));
    let c = setup_with(&s, comp);
    let d = c.open_dataset("g/d").unwrap();
    let block = s.join("c.n5/g/d/1/1");
    let good = std::fs::read(&block).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("truncated header", good[..5].to_vec()),
        ("truncated payload", good[..good.len() - 5].to_vec()),
        (
            "garbage payload",
            [&good[..12], &[0xde, 0xad, 0xbe, 0xef][..]].concat(),
        ),
        ("bad mode", [&[0u8, 9][..], &good[2..]].concat()),
        ("wrong rank", [&[0u8, 0, 0, 3][..], &good[4..]].concat()),
        (
            "oversized",
            [
                &[0u8, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 4][..],
                &good[12..],
            ]
            .concat(),
        ),
    ];
    for (what, bytes) in cases {
        std::fs::write(&block, &bytes).unwrap();
        let mut out = vec![0u8; 32];
        let e = d.read_block_into(&[1, 1], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Codec, "{comp} {what}: {e}");
        assert!(e.message().contains("g/d/1/1"), "{comp} {what}: {e}");
        let mut region = vec![0u8; 200];
        assert!(
            d.read_region(&[0, 0], &[10, 10], &mut region).is_err(),
            "{what}"
        );
    }
    // A directory where a block file should be.
    std::fs::remove_file(&block).unwrap();
    std::fs::create_dir(&block).unwrap();
    let mut out = vec![0u8; 32];
    let e = d.read_block_into(&[1, 1], &mut out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("g/d/1/1"), "{e}");
}

#[test]
fn bad_metadata_and_json() {
    let s = Scratch::new("bad-json");
    let c = setup(&s);
    let f = s.join("c.n5/g/d/attributes.json");
    std::fs::write(&f, "{\"dimensions\": [10, 10], ").unwrap();
    let e = c.open_dataset("g/d").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Json);
    assert!(e.message().contains("g/d/attributes.json"), "{e}");
    assert_eq!(c.attributes("g/d").unwrap_err().kind(), ErrorKind::Json);
    assert!(!c.dataset_exists("g/d").unwrap());
    std::fs::write(&f, r#"{"dimensions":[10,10],"blockSize":[4,4],"dataType":"uint16","compression":{"type":"snappy"}}"#).unwrap();
    let e = c.open_dataset("g/d").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(
        e.message().contains("snappy") && e.message().contains("g/d"),
        "{e}"
    );
    std::fs::write(&f, r#"{"dimensions":[10,10],"blockSize":[4],"dataType":"uint16","compression":{"type":"raw"}}"#).unwrap();
    assert_eq!(
        c.open_dataset("g/d").unwrap_err().kind(),
        ErrorKind::InvalidMetadata
    );
    std::fs::write(&f, r#"{"dimensions":[10,10],"blockSize":[4,4],"dataType":"complex64","compression":{"type":"raw"}}"#).unwrap();
    assert_eq!(
        c.open_dataset("g/d").unwrap_err().kind(),
        ErrorKind::InvalidMetadata
    );
    assert_eq!(c.open_dataset("g").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(
        c.open_dataset("nope").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(n5::Compression::from_json(&json!({"type": "brotli"})).is_err());
    assert!(n5::Options::from_json(r#"{"threads": "x"}"#).is_err());
}

#[test]
fn wrong_ranks_shapes_and_buffers() {
    let s = Scratch::new("shapes");
    let c = setup(&s);
    let d = c.open_dataset("g/d").unwrap();
    let k = |r: n5::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        k(d.write_block(&[0], &[4, 4], &[0; 32])),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        k(d.write_block(&[0, 0], &[4], &[0; 8])),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        k(d.write_block(&[0, 0], &[5, 4], &[0; 40])),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        k(d.write_block(&[0, 0], &[0, 4], &[])),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        k(d.write_block(&[0, 0], &[4, 4], &[0; 31])),
        ErrorKind::BufferSize
    );
    assert_eq!(
        k(d.write_block(&[0, 0], &[4, 4], &[0; 33])),
        ErrorKind::BufferSize
    );
    assert_eq!(
        k(d.write_block(&[3, 0], &[4, 4], &[0; 32])),
        ErrorKind::OutOfBounds
    );
    let mut buf = [0u8; 200];
    assert_eq!(
        k(d.read_region(&[0, 0], &[10, 11], &mut [0; 220])),
        ErrorKind::OutOfBounds
    );
    let e = d.read_region(&[9, 0], &[2, 1], &mut [0; 4]).unwrap_err();
    assert!(e.message().contains("dimension 0"), "{e}");
    assert_eq!(
        k(d.read_region(&[u64::MAX, 0], &[2, 1], &mut [0; 4])),
        ErrorKind::OutOfBounds
    );
    assert_eq!(
        k(d.read_region(&[0, 0], &[10, 10], &mut buf[..199])),
        ErrorKind::BufferSize
    );
    assert_eq!(
        k(d.read_region(&[0], &[10], &mut buf[..20])),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        k(d.read_block_into(&[0, 0], &mut buf[..31]).map(|_| ())),
        ErrorKind::BufferSize
    );
    assert_eq!(
        k(d.read_string_block(&[0, 0]).map(|_| ())),
        ErrorKind::DtypeMismatch
    );
    assert_eq!(
        k(d.write_object_block(&[0, 0], b"x")),
        ErrorKind::DtypeMismatch
    );
    // Rank 0 is for Zarr arrays: an N5 container refuses it.
    let rank0 = DatasetAttributes::new(
        vec![],
        vec![],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    let e = c.create_dataset("r0", rank0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[test]
fn concurrent_attribute_merges_lose_nothing() {
    let s = Scratch::new("concurrent-attrs");
    let root = s.join("c.n5");
    Container::open(&root, Mode::Create)
        .unwrap()
        .create_group("g")
        .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let root = root.clone();
            std::thread::spawn(move || {
                // Each thread has its own container, as separate processes would.
                let c = Container::open(&root, Mode::ReadWrite).unwrap();
                for i in 0..25 {
                    c.set_attribute("g", &format!("t{t}/k{i}"), json!(i))
                        .unwrap();
                    c.set_attributes("g", json!({format!("top{t}_{i}"): t}).as_object().unwrap())
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let doc = Container::open(&root, Mode::Read)
        .unwrap()
        .attributes("g")
        .unwrap();
    for t in 0..4 {
        for i in 0..25 {
            assert_eq!(doc[format!("t{t}")][format!("k{i}")], json!(i));
            assert_eq!(doc[format!("top{t}_{i}")], json!(t));
        }
    }
}

#[test]
fn concurrent_attribute_merges_across_processes() {
    if let Ok(spec) = std::env::var("N5_TEST_CHILD_MERGE") {
        // Child process: merge keys "p<id>_<i>" into the group.
        let (root, id) = spec.split_once('|').unwrap();
        let c = Container::open(root, Mode::ReadWrite).unwrap();
        for i in 0..40 {
            c.set_attributes("g", json!({format!("p{id}_{i}"): i}).as_object().unwrap())
                .unwrap();
        }
        return;
    }
    let s = Scratch::new("concurrent-procs");
    let root = s.join("c.n5");
    Container::open(&root, Mode::Create)
        .unwrap()
        .create_group("g")
        .unwrap();
    let children: Vec<_> = (0..3)
        .map(|id| {
            common::child_test(
                "concurrent_attribute_merges_across_processes",
                "N5_TEST_CHILD_MERGE",
                &format!("{}|{id}", root.display()),
            )
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut ch in children {
        assert!(ch.wait().unwrap().success());
    }
    let doc = Container::open(&root, Mode::Read)
        .unwrap()
        .attributes("g")
        .unwrap();
    for id in 0..3 {
        for i in 0..40 {
            assert_eq!(doc[format!("p{id}_{i}")], json!(i), "p{id}_{i}");
        }
    }
}
