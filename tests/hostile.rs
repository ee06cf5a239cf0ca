//! Hostile containers on disk: attribute documents that are absurdly deep or
//! not objects, names that are not UTF-8, directories where files are
//! expected and files where directories are, and symlinks, including ones
//! that point out of the container or nowhere. Each gives a specific answer
//! or error, never a crash, in bounded time.
//!
//! The symlink policy these tests pin down: a symlink inside a container is
//! followed wherever it points (a container's owner may keep datasets on
//! other disks that way); a dangling one is skipped by listings and reads as
//! missing. libn5 never creates symlinks, and paths given to the API cannot
//! climb out of the root with `..` (tests/errors.rs).

mod common;

use std::time::Instant;

use common::{compression, Scratch};
use n5::{Container, DataType, DatasetAttributes, ErrorKind, Mode};
use serde_json::json;

#[test]
fn absurdly_deep_attributes_are_json_errors_naming_the_file() {
    let s = Scratch::new("deep");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    c.create_group("g").unwrap();
    let file = s.join("c.n5/g/attributes.json");
    // 100 MB of nesting, as arrays and as objects.
    let arrays = vec![b'['; 100 << 20];
    let objects: Vec<u8> = b"{\"a\":".repeat(20 << 20);
    for (what, doc) in [("arrays", arrays), ("objects", objects)] {
        std::fs::write(&file, &doc).unwrap();
        let t = Instant::now();
        let e = c.attributes("g").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Json, "{what}: {e}");
        assert!(e.message().contains("g/attributes.json"), "{what}: {e}");
        let e = c.get_attribute("g", "a").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Json, "{what}: {e}");
        // A dataset cannot be opened through it either.
        assert!(c.open_dataset("g").is_err(), "{what}");
        // Writing refuses to replace a document it cannot read.
        let e = c.set_attribute("g", "k", json!(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Json, "{what}: {e}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            doc,
            "{what}: the file is untouched"
        );
        assert!(t.elapsed().as_secs() < 20, "{what}: {:?}", t.elapsed());
    }
}

#[test]
fn attribute_documents_that_are_not_objects() {
    let s = Scratch::new("not-object");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    c.create_group("g").unwrap();
    let file = s.join("c.n5/g/attributes.json");
    for doc in ["[1, 2]", "3", "\"text\"", "null", "true"] {
        std::fs::write(&file, doc).unwrap();
        let value: serde_json::Value = serde_json::from_str(doc).unwrap();
        // Read as they are; a key names nothing in them.
        assert_eq!(c.attributes("g").unwrap(), value, "{doc}");
        assert_eq!(c.get_attribute("g", "k").unwrap(), None, "{doc}");
        assert!(!c.dataset_exists("g").unwrap(), "{doc}");
        assert!(c.open_dataset("g").is_err(), "{doc}");
        // Writing a key replaces the document by an object, as Java does.
        c.set_attribute("g", "k", json!(1)).unwrap();
        assert_eq!(c.attributes("g").unwrap(), json!({"k": 1}), "{doc}");
    }
}

#[cfg(unix)]
#[test]
fn names_that_are_not_utf8_are_skipped() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let s = Scratch::new("non-utf8");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    c.create_group("ok").unwrap();
    let odd = s.join("c.n5").join(OsStr::from_bytes(b"bad\xff\xfename"));
    std::fs::create_dir(&odd).unwrap();
    std::fs::write(odd.join("attributes.json"), "{}").unwrap();
    std::fs::create_dir(odd.join("inner")).unwrap();
    assert_eq!(c.list("").unwrap(), vec!["ok".to_string()]);
    assert_eq!(c.deep_list("").unwrap(), vec!["ok".to_string()]);
    // A dataset whose block directories have such names: they are not blocks.
    let a = DatasetAttributes::new(
        vec![8],
        vec![4],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    d.write_region(&[0], &[8], &[7u8; 8]).unwrap();
    std::fs::write(s.join("c.n5/d").join(OsStr::from_bytes(b"\xff")), b"junk").unwrap();
    assert_eq!(d.list_blocks().unwrap(), vec![vec![0], vec![1]]);
}

#[cfg(unix)]
#[test]
fn symlinks_are_followed_and_dangling_ones_read_as_missing() {
    use std::os::unix::fs::symlink;
    let s = Scratch::new("symlinks");
    // A dataset in another container, outside this one.
    let other = Container::open(s.join("other.n5"), Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![6, 4],
        vec![3, 2],
        DataType::U16,
        compression(r#"{"type":"gzip"}"#),
    )
    .unwrap();
    let values: Vec<u8> = (0..24u16).flat_map(|v| v.to_ne_bytes()).collect();
    other
        .create_dataset("far", a)
        .unwrap()
        .write_region(&[0, 0], &[6, 4], &values)
        .unwrap();
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    symlink(s.join("other.n5/far"), s.join("c.n5/linked")).unwrap();
    symlink(s.join("nowhere"), s.join("c.n5/dangling")).unwrap();
    assert_eq!(c.list("").unwrap(), vec!["linked".to_string()]);
    let d = c.open_dataset("linked").unwrap();
    let mut out = vec![0u8; 48];
    d.read_region(&[0, 0], &[6, 4], &mut out).unwrap();
    assert_eq!(out, values);
    assert!(!c.exists("dangling").unwrap());
    assert!(c.open_dataset("dangling").is_err());
    // A block file that is a dangling symlink reads as a missing block.
    let block = s.join("other.n5/far/1/1");
    std::fs::remove_file(&block).unwrap();
    symlink(s.join("nowhere"), &block).unwrap();
    assert!(!d.read_block_into(&[1, 1], &mut [0u8; 12]).unwrap());
    d.read_region(&[0, 0], &[6, 4], &mut out).unwrap();
    for y in 0..4 {
        for x in 0..6 {
            let k = (y * 6 + x) * 2;
            let want = if x >= 3 && y >= 2 {
                [0, 0]
            } else {
                [values[k], values[k + 1]]
            };
            assert_eq!(out[k..k + 2], want, "({x}, {y})");
        }
    }
}

#[test]
fn directories_and_files_in_each_others_places() {
    let s = Scratch::new("kinds");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![4, 4],
        vec![2, 2],
        DataType::U8,
        compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    d.write_region(&[0, 0], &[4, 4], &[9u8; 16]).unwrap();
    c.create_group("g").unwrap();

    // attributes.json that is a directory: an Io error naming it, for reads
    // and writes alike; the directory is left alone.
    let attrs = s.join("c.n5/g/attributes.json");
    std::fs::remove_file(&attrs).ok();
    std::fs::create_dir(&attrs).unwrap();
    for e in [
        c.attributes("g").unwrap_err(),
        c.set_attribute("g", "k", json!(1)).unwrap_err(),
        c.remove_attribute("g", "k").unwrap_err(),
        c.dataset_exists("g").unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(e.message().contains("g/attributes.json"), "{e}");
    }
    assert!(attrs.is_dir());

    // A file where a block's parent directory should be: the block is
    // missing when read, and writing it is an Io error naming the path.
    std::fs::remove_dir_all(s.join("c.n5/d/1")).unwrap();
    std::fs::write(s.join("c.n5/d/1"), b"not a directory").unwrap();
    let mut out = [0u8; 4];
    assert!(!d.read_block_into(&[1, 0], &mut out).unwrap());
    let mut all = [1u8; 16];
    d.read_region(&[0, 0], &[4, 4], &mut all).unwrap();
    assert_eq!(all[..2], [9, 9]);
    assert_eq!(all[2..4], [0, 0]);
    let e = d.write_block(&[1, 0], &[2, 2], &[5; 4]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("d/1"), "{e}");
    assert_eq!(
        std::fs::read(s.join("c.n5/d/1")).unwrap(),
        b"not a directory"
    );

    // A file where a dataset's directory should be: not a group or dataset.
    std::fs::write(s.join("c.n5/f"), b"x").unwrap();
    assert!(!c.exists("f").unwrap());
    assert_eq!(c.open_dataset("f").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(c.list("").unwrap(), vec!["d".to_string(), "g".to_string()]);
}

#[cfg(unix)]
#[test]
fn stale_temporary_cleanup_stays_inside_the_container() {
    use std::os::unix::fs::symlink;
    let s = Scratch::new("clean-links");
    let c = Container::open(s.join("c.n5"), Mode::Create).unwrap();
    c.create_group("g").unwrap();
    // A directory outside, reachable through a symlinked directory, and a
    // symlink named like a temporary: neither is followed or removed.
    std::fs::create_dir(s.join("outside")).unwrap();
    std::fs::write(s.join("outside/.n5tmp.x.1.1"), b"theirs").unwrap();
    symlink(s.join("outside"), s.join("c.n5/linked")).unwrap();
    symlink(
        s.join("outside/.n5tmp.x.1.1"),
        s.join("c.n5/g/.n5tmp.link.1.2"),
    )
    .unwrap();
    std::fs::write(s.join("c.n5/g/.n5tmp.mine.1.3"), b"ours").unwrap();
    let removed = c
        .remove_stale_temporaries(std::time::Duration::ZERO)
        .unwrap();
    assert_eq!(removed, (1, 4));
    assert!(s.join("outside/.n5tmp.x.1.1").exists());
    assert!(s.join("c.n5/g/.n5tmp.link.1.2").symlink_metadata().is_ok());
    assert!(!s.join("c.n5/g/.n5tmp.mine.1.3").exists());
}
