//! The checks every writable object-store backend passes, written once and
//! run by `tests/s3_backend.rs` (SeaweedFS) and `tests/gcs_backend.rs`
//! (fake-gcs-server) against their real servers: containers, groups,
//! datasets and blocks through a location; the `Store` contract (names,
//! ranges, versions and conditional writes, listings, deletes); listings
//! that continue over pages; and concurrent attribute merges. What differs
//! between the backends (how markers are laid out, what a version looks
//! like, how the server is asked for its raw object names) comes in a
//! [`Bucket`].

use std::collections::BTreeSet;
use std::sync::Arc;

use n5::storage::location::Location;
use n5::storage::{ByteRange, Exact, Precondition, Store, Version};
use n5::{Compression, Container, DataType, DatasetAttributes, ErrorKind, Mode, Options};
use serde_json::json;

use super::bytes;

/// One bucket of a real server, for one test.
pub struct Bucket<'a> {
    /// The bucket's location, `s3://name` or `gs://name`.
    pub url: String,
    /// The options that reach the server.
    pub options: Options,
    /// Every object name in the bucket, asked of the server's own API.
    pub names: &'a dyn Fn() -> BTreeSet<String>,
}

impl Bucket<'_> {
    /// The container at `path` in the bucket.
    pub fn open(&self, path: &str, mode: Mode) -> n5::Result<Container> {
        Container::open_with(format!("{}/{path}", self.url), mode, self.options.clone())
    }

    /// The store at `path` in the bucket.
    pub fn store(&self, path: &str) -> Arc<dyn Store> {
        open_store(&format!("{}/{path}", self.url), &self.options)
    }
}

/// The store at `location`, reached with `options`.
pub fn open_store(location: &str, options: &Options) -> Arc<dyn Store> {
    n5::storage::open(&Location::parse(location).unwrap(), &options.storage).unwrap()
}

/// Upload the directory `dir` to `prefix` of `store`, one object per
/// file, 16 at a time; no directory markers.
pub fn upload_dir(store: &dyn Store, prefix: &str, dir: &std::path::Path) {
    let todo = std::sync::Mutex::new(super::files(dir));
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| loop {
                let Some(rel) = todo.lock().unwrap().pop() else {
                    return;
                };
                let key = format!("{prefix}/{}", rel.to_str().unwrap());
                let bytes = std::fs::read(dir.join(&rel)).unwrap();
                store.put(&key, &[&bytes]).unwrap();
            });
        }
    });
}

/// A uint16 dataset's attributes.
fn u16_attributes(
    dimensions: Vec<u64>,
    block: Vec<u32>,
    compression: Compression,
) -> DatasetAttributes {
    DatasetAttributes::new(dimensions, block, DataType::U16, compression).unwrap()
}

/// A container at `data/x.n5` of the bucket: groups, a gzip dataset written
/// as a region and read back whole and in part, listings, attributes, raw
/// blocks read straight into the caller's buffer, removal. `markers` are
/// the directory markers the backend leaves (as the Java backend of the
/// same store writes them), `no_markers` names that must not be objects.
pub fn containers_groups_datasets_and_blocks(b: &Bucket, markers: &[&str], no_markers: &[&str]) {
    let c = b.open("data/x.n5", Mode::Create).unwrap();
    assert_eq!(c.version().unwrap().as_deref(), Some("4.0.0"));
    c.create_group("a/b").unwrap();
    let gzip = Compression::from_json(&json!({"type": "gzip"})).unwrap();
    let ds = c
        .create_dataset("a/ds", u16_attributes(vec![100, 70], vec![16, 16], gzip))
        .unwrap();
    let data = bytes(1, 100 * 70 * 2);
    ds.write_region(&[0, 0], &[100, 70], &data).unwrap();
    c.set_attributes("a", json!({"k": [1, 2], "s": "v"}).as_object().unwrap())
        .unwrap();

    let names = (b.names)();
    for marker in markers {
        assert!(names.contains(*marker), "{marker} in {names:?}");
    }
    for name in no_markers {
        assert!(!names.contains(*name), "{name} in {names:?}");
    }
    assert!(names.contains("data/x.n5/attributes.json"));
    assert!(names.contains("data/x.n5/a/ds/6/4"));

    // A second handle reads everything back.
    let r = b.open("data/x.n5", Mode::Read).unwrap();
    let ds = r.open_dataset("a/ds").unwrap();
    let mut out = vec![0; data.len()];
    ds.read_region(&[0, 0], &[100, 70], &mut out).unwrap();
    assert_eq!(out, data);
    let mut part = vec![0; 2 * 30 * 20];
    ds.read_region(&[5, 40], &[30, 20], &mut part).unwrap();
    for y in 0..20 {
        let row = (40 + y) * 100 + 5;
        assert_eq!(
            &part[y * 60..(y + 1) * 60],
            &data[row * 2..(row + 30) * 2],
            "row {y}"
        );
    }
    assert_eq!(ds.list_blocks().unwrap().len(), 7 * 5);
    assert!(ds.block_header(&[6, 4]).unwrap().is_some());
    assert_eq!(r.list("").unwrap(), ["a"]);
    assert_eq!(r.list("a").unwrap(), ["b", "ds"]);
    assert_eq!(r.deep_list("").unwrap(), ["a", "a/b", "a/ds"]);
    assert_eq!(r.get_attribute("a", "k[1]").unwrap(), Some(json!(2)));
    assert!(r.exists("a/b").unwrap() && !r.exists("a/nope").unwrap());
    assert!(r.dataset_exists("a/ds").unwrap() && !r.dataset_exists("a").unwrap());
    assert_eq!(r.remove("a").unwrap_err().kind(), ErrorKind::ReadOnly);

    // Raw blocks are read straight into the caller's buffer.
    let rds = c
        .create_dataset(
            "raw",
            u16_attributes(vec![8, 8], vec![4, 4], Compression::Raw),
        )
        .unwrap();
    let block = bytes(2, 32);
    rds.write_block(&[1, 1], &[4, 4], &block).unwrap();
    let mut out = vec![0; 32];
    assert!(rds.read_block_into(&[1, 1], &mut out).unwrap());
    assert_eq!(out, block);
    assert!(!rds.read_block_into(&[0, 1], &mut out).unwrap());
    assert_eq!(out, vec![0; 32]);
    assert!(rds.delete_block(&[1, 1]).unwrap() && !rds.delete_block(&[1, 1]).unwrap());

    // Region reads of raw blocks (copied by the I/O threads as they
    // arrive): whole, across blocks, with a missing block, and with a
    // corrupt one, which fails naming its key and leaves nothing half-read
    // unnoticed.
    let vol = bytes(4, 8 * 8 * 2);
    rds.write_region(&[0, 0], &[8, 8], &vol).unwrap();
    assert!(rds.delete_block(&[0, 1]).unwrap());
    let mut out = vec![7; 2 * 6 * 5];
    rds.read_region(&[1, 2], &[6, 5], &mut out).unwrap();
    for y in 0..5 {
        for x in 0..6 {
            let (gx, gy) = (1 + x, 2 + y);
            let want = if gx < 4 && gy >= 4 {
                [0, 0]
            } else {
                let i = (gy * 8 + gx) * 2;
                [vol[i], vol[i + 1]]
            };
            let i = (y * 6 + x) * 2;
            assert_eq!(out[i..i + 2], want, "voxel {gx},{gy}");
        }
    }
    let store = open_store(&b.url, &b.options);
    let key = "data/x.n5/raw/1/0";
    // A header for a 4×5 block holding the bytes of a 4×4 one.
    let mut bad = vec![0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 5];
    bad.extend_from_slice(&bytes(5, 32));
    store.put(key, &[&bad]).unwrap();
    let e = rds
        .read_region(&[0, 0], &[8, 8], &mut [0; 128])
        .unwrap_err();
    assert!(e.message().contains("raw/1/0"), "{e}");

    // Region reads of compressed blocks (decoded by the I/O threads that
    // received them, as many at a time as the container has threads):
    // across blocks, with a missing block, and with a corrupt one, which
    // fails naming its key.
    let gds = c
        .create_dataset(
            "gz",
            u16_attributes(
                vec![8, 8],
                vec![4, 4],
                Compression::Gzip {
                    level: 6,
                    use_zlib: false,
                },
            ),
        )
        .unwrap();
    gds.write_region(&[0, 0], &[8, 8], &vol).unwrap();
    assert!(gds.delete_block(&[1, 0]).unwrap());
    let mut out = vec![7; 2 * 7 * 6];
    gds.read_region(&[1, 1], &[7, 6], &mut out).unwrap();
    for y in 0..6 {
        for x in 0..7 {
            let (gx, gy) = (1 + x, 1 + y);
            let want = if gx >= 4 && gy < 4 {
                [0, 0]
            } else {
                let i = (gy * 8 + gx) * 2;
                [vol[i], vol[i + 1]]
            };
            let i = (y * 7 + x) * 2;
            assert_eq!(out[i..i + 2], want, "voxel {gx},{gy}");
        }
    }
    // A valid header before bytes that are not gzip.
    let mut bad = vec![0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 4];
    bad.extend_from_slice(&bytes(6, 40));
    store.put("data/x.n5/gz/0/1", &[&bad]).unwrap();
    let e = gds
        .read_region(&[0, 0], &[8, 8], &mut [0; 128])
        .unwrap_err();
    assert!(e.message().contains("gz/0/1"), "{e}");

    // Attributes: remove, overwrite.
    assert_eq!(c.remove_attribute("a", "s").unwrap(), Some(json!("v")));
    assert_eq!(c.get_attribute("a", "s").unwrap(), None);

    // Removing a group removes its objects and markers.
    assert!(c.remove("a").unwrap());
    assert!(!c.exists("a").unwrap() && !c.exists("a/ds").unwrap());
    let names = (b.names)();
    assert!(
        names.iter().all(|n| !n.starts_with("data/x.n5/a/")),
        "{names:?}"
    );
    assert!(!c.remove("a").unwrap());
    assert_eq!(c.list("").unwrap(), ["gz", "raw"]);
}

/// The `Store` contract on the store at `root` of the bucket. `is_version`
/// says whether a version has the backend's form (an ETag, a generation);
/// `stale` is a well-formed version no object has.
pub fn store_contract(b: &Bucket, is_version: &dyn Fn(&Version) -> bool, stale: Version) {
    let s = b.store("root");
    assert_eq!(s.location(), format!("{}/root", b.url));
    assert_eq!(s.describe("a/b"), format!("{}/root/a/b", b.url));
    let caps = s.capabilities();
    assert!(caps.writable && caps.list && caps.remote);
    assert!(!s.is_dir("").unwrap(), "nothing under the prefix yet");
    assert_eq!(s.list("").unwrap(), None);

    // Names reach the server whole, whatever they hold.
    let odd = "odd name/ü+%#?&=;x~$'()*,!@[]";
    s.put(odd, &[b"head", b"-", b"tail"]).unwrap();
    assert_eq!(s.get(odd).unwrap().unwrap(), b"head-tail");
    assert_eq!(s.size(odd).unwrap(), Some(9));
    assert!(s.is_dir("").unwrap() && s.is_dir("odd name").unwrap());
    assert_eq!(
        s.list("odd name").unwrap().unwrap().files,
        ["ü+%#?&=;x~$'()*,!@[]"]
    );
    assert_eq!(s.list_keys("").unwrap(), [odd]);
    assert!((b.names)().contains(&format!("root/{odd}")));

    // Whole objects and ranges.
    let key = "k/data";
    let content: Vec<u8> = (0..=255u8).collect();
    s.put(key, &[&content]).unwrap();
    let range = |r: ByteRange| s.get_range(key, r).unwrap().unwrap();
    assert_eq!(
        range(ByteRange::Span { offset: 10, len: 5 }),
        &content[10..15]
    );
    assert_eq!(
        range(ByteRange::Span {
            offset: 250,
            len: 50
        }),
        &content[250..]
    );
    assert_eq!(
        range(ByteRange::Span {
            offset: 300,
            len: 5
        }),
        b""
    );
    assert_eq!(range(ByteRange::Span { offset: 3, len: 0 }), b"");
    assert_eq!(range(ByteRange::From(200)), &content[200..]);
    assert_eq!(range(ByteRange::From(256)), b"");
    assert_eq!(range(ByteRange::Suffix(7)), &content[249..]);
    assert_eq!(range(ByteRange::Suffix(1000)), &content[..]);
    assert_eq!(range(ByteRange::Suffix(0)), b"");
    assert_eq!(s.get_range("k/none", ByteRange::From(0)).unwrap(), None);
    assert_eq!(s.get_range("k/none", ByteRange::Suffix(0)).unwrap(), None);
    let mut buf = vec![9; 3];
    assert!(s.get_into(key, &mut buf).unwrap());
    assert_eq!(buf, content);
    assert!(!s.get_into("k/none", &mut buf).unwrap());
    assert_eq!(s.get(""), Ok(None));
    assert_eq!(s.size(""), Ok(None));
    assert_eq!(s.size("k/none"), Ok(None));
    assert!(!s.exists("k").unwrap(), "a directory is not an object");
    let (mut front, mut back) = ([0u8; 200], [0u8; 56]);
    assert_eq!(
        s.get_exact(key, &mut [&mut front, &mut back]).unwrap(),
        Exact::Read
    );
    assert_eq!([&front[..], &back[..]].concat(), content);
    s.put("k/empty", &[]).unwrap();
    assert_eq!(s.get("k/empty").unwrap().unwrap(), b"");
    assert_eq!(s.size("k/empty").unwrap(), Some(0));

    // Versions; conditional writes honour them.
    let (data, v1) = s.get_versioned(key).unwrap().unwrap();
    assert_eq!(data, content);
    assert!(is_version(&v1), "{v1:?}");
    assert!(!s.put_if(key, b"x", &Precondition::Absent).unwrap());
    assert!(s
        .put_if(key, b"second", &Precondition::Matches(v1.clone()))
        .unwrap());
    assert!(!s
        .put_if(key, b"third", &Precondition::Matches(v1.clone()))
        .unwrap());
    let (data, v2) = s.get_versioned(key).unwrap().unwrap();
    assert_eq!((data.as_slice(), v2 != v1), (&b"second"[..], true));
    assert!(s.put_if("k/new", b"1", &Precondition::Absent).unwrap());
    assert!(!s.put_if("k/new", b"2", &Precondition::Absent).unwrap());
    assert_eq!(s.get("k/new").unwrap().unwrap(), b"1");
    assert!(!s
        .put_if("k/gone", b"1", &Precondition::Matches(stale))
        .unwrap());
    assert_eq!(s.get_versioned("k/gone").unwrap(), None);
    // A payload that looks like the framing of a request body survives.
    let tricky: Vec<u8> = b"\r\n--libn5-\r\n--\r\n"
        .iter()
        .chain(content.iter())
        .copied()
        .collect();
    assert!(s
        .put_if("k/tricky", &tricky, &Precondition::Absent)
        .unwrap());
    assert_eq!(s.get("k/tricky").unwrap().unwrap(), tricky);
    s.update("k/counter", &mut |old| {
        assert!(old.is_none());
        Ok(Some(b"1".to_vec()))
    })
    .unwrap();
    s.update("k/counter", &mut |old| {
        Ok(Some([old.unwrap(), b"+1"].concat()))
    })
    .unwrap();
    assert_eq!(s.get("k/counter").unwrap().unwrap(), b"1+1");

    // Listings: one level, markers and hidden names left out.
    s.create_dir("k/empty-dir/deeper").unwrap();
    s.put("k/.hidden", &[b"h"]).unwrap();
    s.put("k/.tmp/x", &[b"h"]).unwrap();
    let files = ["counter", "data", "empty", "new", "tricky"];
    let l = s.list("k").unwrap().unwrap();
    assert_eq!(l.dirs, ["empty-dir"]);
    assert_eq!(l.files, files);
    assert_eq!(s.list_keys("k").unwrap(), files);
    assert!(s.is_dir("k/empty-dir").unwrap() && s.is_dir("k/empty-dir/deeper").unwrap());
    assert_eq!(
        s.list("k/empty-dir/deeper").unwrap().unwrap(),
        Default::default()
    );
    assert_eq!(s.list("k/nothing").unwrap(), None);
    assert!(!s.is_dir("k/data").unwrap());
    assert!(
        !s.is_dir("k/dat").unwrap(),
        "a prefix of a name is no directory"
    );
    s.create_dir("").unwrap();
    assert!(s.is_dir("").unwrap());

    // Deletes.
    assert!(s.delete("k/new").unwrap() && !s.delete("k/new").unwrap());
    assert!(!s.delete("").unwrap());
    assert!(s.delete_dir("k").unwrap());
    assert!(!s.is_dir("k").unwrap());
    assert!(!s.delete_dir("k").unwrap());
    assert_eq!(s.list("").unwrap().unwrap().dirs, ["odd name"]);
    assert!((b.names)().iter().all(|n| !n.starts_with("root/k")));
}

/// A directory of 1100 objects and 1100 subdirectories, more than one page
/// of the server's listing: every name comes back once, in order.
pub fn listings_continue_over_pages(b: &Bucket) {
    let s = b.store("p");
    let n = 1100;
    std::thread::scope(|scope| {
        for t in 0..16 {
            let s = &s;
            scope.spawn(move || {
                for i in (t..n).step_by(16) {
                    s.put(&format!("many/f{i:04}"), &[b"x"]).unwrap();
                    s.put(&format!("many/d{i:04}/x"), &[b"x"]).unwrap();
                }
            });
        }
    });
    let l = s.list("many").unwrap().unwrap();
    assert_eq!(l.files.len(), n);
    assert_eq!(l.dirs.len(), n);
    assert_eq!(l.files[n - 1], format!("f{:04}", n - 1));
    let keys = s.list_keys("many").unwrap();
    assert_eq!(keys.len(), 2 * n);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    assert!(s.delete_dir("many").unwrap());
    assert!((b.names)().is_empty());
}

/// `writers` handles of their own (as on as many machines) set `keys`
/// attributes each on one group of the container at `path` at once: every
/// key survives. The writers reach the server with `options` (through a
/// counting proxy, say).
pub fn concurrent_attribute_merges(
    b: &Bucket,
    path: &str,
    options: &Options,
    writers: usize,
    keys: usize,
) {
    b.open(path, Mode::Create)
        .unwrap()
        .create_group("g")
        .unwrap();
    let location = format!("{}/{path}", b.url);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let location = &location;
            scope.spawn(move || {
                let c = Container::open_with(location, Mode::ReadWrite, options.clone()).unwrap();
                for k in 0..keys {
                    c.set_attribute("g", &format!("w{w}/k{k}"), json!(w * 100 + k))
                        .unwrap();
                }
            });
        }
    });
    let doc = b.open(path, Mode::Read).unwrap().attributes("g").unwrap();
    for w in 0..writers {
        for k in 0..keys {
            assert_eq!(
                doc[format!("w{w}")][format!("k{k}")],
                json!(w * 100 + k),
                "{doc}"
            );
        }
    }
}
