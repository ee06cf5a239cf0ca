//! Region reads of sharded Zarr v3 arrays that read shards in part, on
//! every backend: random regions of arrays sharded with the index at the
//! end and at the start, with nested sharding and with a transposed inner
//! chain, against a model of what was written (shards missing, inner
//! chunks missing, a fill value other than zero); the requests such reads
//! send to S3, counted by a proxy in front of SeaweedFS (one for the index
//! and one per coalesced range, one per shard whose every inner chunk the
//! region touches, nothing beyond what the region touches); a shard
//! replaced by another writer between the read of its index and of its
//! inner chunks (the proxy holds the second request back), which the read
//! notices by the object's version and reads again whole, on S3 and GCS;
//! indexes kept by an open array on S3 and GCS (one request per inner
//! chunk once its shard's index is known) and shards replaced or filled in
//! since, which reads notice by the version or by the missing entry,
//! reading a replaced shard again once however many of its ranges find it
//! so; and a damaged index entry met by a partial or a whole-shard read
//! named with its shard and inner chunk.

mod common;

use common::places::{options_json, places, Kind, Place};
use n5::{Container, Mode, Options};
use std::time::Duration;

use n5_testkit::{server_or_skip, Fault, Proxy, Rule, StallAt};
use serde_json::{json, Value};

/// Copy the box `shape` at `offset` of the N5-order array `src` of shape
/// `dims` out (`to_region`) or in.
fn boxed(
    array: &mut [u8],
    dims: &[u64],
    region: &mut [u8],
    offset: &[u64],
    shape: &[u64],
    elem: usize,
    to_region: bool,
) {
    let n = dims.len();
    let count: u64 = shape[1..].iter().product();
    for r in 0..count {
        // The row's position in dimensions 1.. of the region.
        let mut rest = r;
        let mut src = offset[0];
        let mut stride = dims[0];
        let mut dst = 0u64;
        let mut dst_stride = shape[0];
        for d in 1..n {
            let p = rest % shape[d];
            rest /= shape[d];
            src += (offset[d] + p) * stride;
            dst += p * dst_stride;
            stride *= dims[d];
            dst_stride *= shape[d];
        }
        let (s, t, len) = (
            src as usize * elem,
            dst as usize * elem,
            shape[0] as usize * elem,
        );
        if to_region {
            region[t..t + len].copy_from_slice(&array[s..s + len]);
        } else {
            array[s..s + len].copy_from_slice(&region[t..t + len]);
        }
    }
}

/// The sharded layouts checked: name and zarr.json (C-order shape
/// [20, 18, 22], uint16, fill value 7).
fn layouts() -> Vec<(&'static str, Value)> {
    let le = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let index = json!([le.clone(), {"name": "crc32c"}]);
    let doc = |shard: Value, sharding: Value| {
        json!({
            "shape": [20, 18, 22], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
            "chunk_key_encoding": {"name": "default"},
            "fill_value": 7,
            "codecs": [{"name": "sharding_indexed", "configuration": sharding}]
        })
    };
    vec![
        (
            "end",
            doc(
                json!([8, 6, 10]),
                json!({"chunk_shape": [4, 3, 5], "codecs": [le.clone()],
                       "index_codecs": index.clone(), "index_location": "end"}),
            ),
        ),
        (
            "start-zstd-transposed",
            doc(
                json!([8, 6, 10]),
                json!({"chunk_shape": [2, 3, 5],
                       "codecs": [{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                                  {"name": "bytes", "configuration": {"endian": "big"}},
                                  {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
                                  {"name": "crc32c"}],
                       "index_codecs": index.clone(), "index_location": "start"}),
            ),
        ),
        (
            "nested",
            doc(
                json!([8, 12, 10]),
                json!({"chunk_shape": [4, 6, 5],
                       "codecs": [{"name": "sharding_indexed", "configuration": {
                           "chunk_shape": [2, 3, 5], "codecs": [le.clone()],
                           "index_codecs": index.clone(), "index_location": "end"}}],
                       "index_codecs": index.clone(), "index_location": "end"}),
            ),
        ),
    ]
}

fn zarr3(place: &Place, mode: Mode) -> Container {
    let options = place.options_with(r#"{"format": "zarr3", "threads": 2, "io_concurrency": 4}"#);
    place.open_with(mode, options).unwrap()
}

#[test]
fn partial_region_reads_match_a_model() {
    for place in places("zarr-partial") {
        let c = zarr3(&place, Mode::Create);
        for (name, doc) in layouts() {
            let d = c.create_dataset_json(name, &doc).unwrap();
            let dims = d.attributes().dimensions.clone();
            assert_eq!(dims, vec![22, 18, 20]);
            let n = dims.iter().product::<u64>() as usize;
            let mut model: Vec<u8> = std::iter::repeat_n(7u16.to_ne_bytes(), n)
                .flatten()
                .collect();
            // Most of the array written; then the first shard's corner and
            // a whole shard back to the fill value (inner chunks and a
            // shard left out), and the last shard never written.
            let writes: [([u64; 3], [u64; 3]); 3] = [
                ([0, 0, 0], [22, 18, 16]),
                ([0, 0, 0], [5, 6, 4]),
                ([10, 6, 8], [10, 6, 8]),
            ];
            for (k, (offset, shape)) in writes.iter().enumerate() {
                let len = shape.iter().product::<u64>() as usize;
                let data: Vec<u8> = if k == 0 {
                    common::bytes(k as u64 + 1, len * 2)
                } else {
                    std::iter::repeat_n(7u16.to_ne_bytes(), len)
                        .flatten()
                        .collect()
                };
                d.write_region(offset, shape, &data).unwrap();
                let mut data = data;
                boxed(&mut model, &dims, &mut data, offset, shape, 2, false);
            }
            let d = zarr3(&place, Mode::Read).open_dataset(name).unwrap();
            let mut seed = 0x5eed_u64 + name.len() as u64;
            let mut rand = |m: u64| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % m
            };
            for round in 0..30 {
                let offset: Vec<u64> = dims.iter().map(|&d| rand(d)).collect();
                let shape: Vec<u64> = dims
                    .iter()
                    .zip(&offset)
                    .map(|(&d, &o)| 1 + rand(d - o))
                    .collect();
                let len = shape.iter().product::<u64>() as usize * 2;
                let mut got = vec![0u8; len];
                d.read_region(&offset, &shape, &mut got)
                    .unwrap_or_else(|e| {
                        panic!("{:?} {name} {offset:?}+{shape:?}: {e}", place.kind)
                    });
                let mut want = vec![0u8; len];
                boxed(&mut model, &dims, &mut want, &offset, &shape, 2, true);
                assert!(
                    got == want,
                    "{:?} {name} round {round}: {offset:?}+{shape:?}",
                    place.kind
                );
            }
            let mut all = vec![0u8; model.len()];
            d.read_region(&[0, 0, 0], &dims, &mut all).unwrap();
            assert!(all == model, "{:?} {name}: whole", place.kind);
        }
    }
}

/// The container at `place` (S3 or GCS) reached through `proxy`.
fn through(place: &Place, proxy: &Proxy) -> Container {
    let mut options = Value::Object(options_json(place));
    let backend = if place.kind == Kind::S3 { "s3" } else { "gcs" };
    options[backend]["endpoint"] = json!(proxy.url());
    options["format"] = json!("zarr3");
    options["threads"] = json!(2);
    let options = Options::from_json(&options.to_string()).unwrap();
    Container::open_with(&place.location, Mode::Read, options).unwrap()
}

/// The server behind the object store `place` (S3 or GCS).
fn upstream(place: &Place) -> std::net::SocketAddr {
    match place.kind {
        Kind::S3 => n5_testkit::s3_signed().unwrap().addr(),
        _ => n5_testkit::gcs().unwrap().addr(),
    }
}

/// A uint16 array of `shape`³ in shards of `shard`³ holding inner chunks
/// of `chunk`³ with the bytes codec alone (every size known), index at
/// the end, fill value 0.
fn raw_shards(shape: u64, shard: u64, chunk: u64) -> Value {
    json!({
        "shape": [shape, shape, shape], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shard, shard, shard]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [chunk, chunk, chunk],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"}}]
    })
}

/// One shard of 32³ uint16 holding 8³ inner chunks compressed with zstd
/// (so that other data gives the inner chunks other sizes and places),
/// index at the end, fill value 0.
fn one_zstd_shard() -> Value {
    json!({
        "shape": [32, 32, 32], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32, 32]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [8, 8, 8],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": "end"}}]
    })
}

/// Reads of a uint16 dataset of shape `dims` through `proxy`, each checked
/// against `model` (the N5-order array), with what the proxy counted.
struct Counted<'a> {
    proxy: &'a Proxy,
    dims: [u64; 3],
}

impl Counted<'_> {
    /// The proxy counts an answer's bytes as it forwards them: a moment
    /// before resetting and before reading its counters lets the answers
    /// of one read be counted with that read.
    fn settle() {
        std::thread::sleep(Duration::from_millis(200));
    }

    fn counting(&self, read: impl FnOnce()) -> n5_testkit::Counters {
        Counted::settle();
        self.proxy.reset_counters();
        read();
        Counted::settle();
        self.proxy.counters()
    }

    /// Read the box `shape` at `offset` of `d`.
    fn region(
        &self,
        d: &n5::Dataset,
        offset: [u64; 3],
        shape: [u64; 3],
        model: &[u8],
    ) -> n5_testkit::Counters {
        let len = shape.iter().product::<u64>() as usize * 2;
        let mut got = vec![0u8; len];
        let counted = self.counting(|| d.read_region(&offset, &shape, &mut got).unwrap());
        let mut want = vec![0u8; len];
        let dims = self.dims;
        boxed(
            &mut model.to_vec(),
            &dims,
            &mut want,
            &offset,
            &shape,
            2,
            true,
        );
        assert!(got == want, "{offset:?}+{shape:?}");
        counted
    }

    /// Read the block (an inner chunk of 8³) at `pos` of `d`; its GETs.
    fn block(&self, d: &n5::Dataset, pos: [u64; 3], model: &[u8]) -> u64 {
        let mut got = vec![0u8; 8 * 8 * 8 * 2];
        let counted = self.counting(|| {
            d.read_block_into(&pos, &mut got).unwrap();
        });
        let mut want = vec![0u8; got.len()];
        let offset = pos.map(|p| p * 8);
        let dims = self.dims;
        boxed(
            &mut model.to_vec(),
            &dims,
            &mut want,
            &offset,
            &[8, 8, 8],
            2,
            true,
        );
        assert!(got == want, "block {pos:?}");
        counted.get
    }
}

#[test]
fn partial_reads_fetch_only_the_inner_chunks_they_touch() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let Some(place) = common::places::place(Kind::S3, "zarr-requests") else {
        return;
    };
    // uint16 of 64³ in shards of 32³ holding 8³ inner chunks of 1 KiB
    // (bytes codec only: every size is known), index at the end.
    let doc = raw_shards(64, 32, 8);
    let data = common::bytes(3, 64 * 64 * 64 * 2);
    {
        let c = zarr3(&place, Mode::Create);
        let d = c.create_dataset_json("a", &doc).unwrap();
        d.write_region(&[0, 0, 0], &[64, 64, 64], &data).unwrap();
    }
    let shard_bytes = 64 * 1024 + 64 * 16 + 4;
    let proxy = Proxy::start(s3.addr());
    let c = through(&place, &proxy);
    let d = c.open_dataset("a").unwrap();
    let counter = Counted {
        proxy: &proxy,
        dims: [64, 64, 64],
    };
    let read = |offset: [u64; 3], shape: [u64; 3]| {
        let counted = counter.region(&d, offset, shape, &data);
        eprintln!("{offset:?}+{shape:?}: {counted:?}");
        counted
    };
    // 2×2×2 inner chunks of one shard: its index, then one range from the
    // first to the last of them (22 inner chunks in C order).
    let counted = read([4, 4, 4], [8, 8, 8]);
    assert_eq!((counted.requests, counted.get), (2, 2));
    // Each answer's head is under 2 KiB.
    assert!(
        counted.bytes_to_client < 22 * 1024 + 1028 + 2 * 2048,
        "{counted:?}"
    );
    assert!(counted.bytes_to_client < shard_bytes / 2);
    // A corner of each of the 8 shards: 8 ranges and the indexes of the 7
    // shards whose index the read before did not keep.
    let counted = read([28, 28, 28], [8, 8, 8]);
    assert_eq!((counted.requests, counted.get), (15, 15));
    assert!(counted.bytes_to_client < 8 * 1024 + 7 * 1028 + 15 * 2048);
    // Two shards covered whole: one request each, no index read.
    let counted = read([0, 0, 32], [64, 32, 32]);
    assert_eq!((counted.requests, counted.get), (2, 2));
    // Every inner chunk of one shard touched, the shard not covered: the
    // shard whole in one request, its index with it.
    let counted = read([1, 1, 33], [30, 30, 30]);
    assert_eq!((counted.requests, counted.get), (1, 1));
    assert!(counted.bytes_to_client < shard_bytes + 2048, "{counted:?}");
    // One inner chunk of a shard whose index is kept: the chunk alone.
    let counted = read([8, 16, 24], [8, 8, 8]);
    assert_eq!((counted.requests, counted.get), (1, 1));
    // The whole array: every shard once.
    let counted = read([0, 0, 0], [64, 64, 64]);
    assert_eq!((counted.requests, counted.get), (8, 8));

    // Another open array keeps its own indexes: one inner chunk read by
    // block is its index and the chunk, the next of the same shard the
    // chunk alone, and so for a region of a few in that shard.
    let d = through(&place, &proxy).open_dataset("a").unwrap();
    assert_eq!(counter.block(&d, [4, 0, 0], &data), 2);
    assert_eq!(counter.block(&d, [5, 1, 2], &data), 1);
    assert_eq!(counter.block(&d, [0, 4, 0], &data), 2, "another shard");
    let region = counter.region(&d, [36, 4, 4], [8, 8, 8], &data);
    assert_eq!(region.get, 1);
}

#[test]
fn a_shard_replaced_during_a_partial_read_is_read_again_whole() {
    for place in common::places::object_stores("zarr-replaced") {
        let upstream = upstream(&place);
        // New data gives the inner chunks other sizes, so the old index's
        // offsets do not fit the new shard.
        let doc = one_zstd_shard();
        let n = 32 * 32 * 32;
        let old = common::bytes(11, n * 2);
        let new: Vec<u8> = (0..n as u32)
            .flat_map(|i| ((i / 7) as u16).to_ne_bytes())
            .collect();
        let writer = zarr3(&place, Mode::Create);
        writer
            .create_dataset_json("a", &doc)
            .unwrap()
            .write_region(&[0, 0, 0], &[32, 32, 32], &old)
            .unwrap();
        let proxy = Proxy::start(upstream);
        let d = through(&place, &proxy).open_dataset("a").unwrap();
        // The index goes through; the inner chunks' request waits while the
        // shard is replaced.
        proxy.set_fault(
            Rule::every_nth(2).methods(&["GET"]).first(1),
            Fault::Stall {
                at: StallAt::BeforeForwarding,
                duration: Duration::from_millis(1500),
                then_close: false,
            },
        );
        let replaced = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            writer
                .open_dataset("a")
                .unwrap()
                .write_region(&[0, 0, 0], &[32, 32, 32], &new)
                .unwrap();
            new
        });
        let (offset, shape) = ([4u64, 4, 4], [8u64, 8, 8]);
        let mut got = vec![0u8; 8 * 8 * 8 * 2];
        let read = d.read_region(&offset, &shape, &mut got);
        let mut new = replaced.join().unwrap();
        proxy.clear_faults();
        read.unwrap_or_else(|e| panic!("{:?}: {e}", place.kind));
        assert_eq!(proxy.counters().faults, 1, "{:?}", place.kind);
        let mut want = vec![0u8; got.len()];
        boxed(&mut new, &[32, 32, 32], &mut want, &offset, &shape, 2, true);
        assert!(got == want, "{:?}: not the new shard's data", place.kind);
        // The same for one block (index, then the inner chunk), the old
        // data written back meanwhile.
        proxy.set_fault(
            Rule::every_nth(2).methods(&["GET"]).first(1),
            Fault::Stall {
                at: StallAt::BeforeForwarding,
                duration: Duration::from_millis(1500),
                then_close: false,
            },
        );
        let writer = zarr3(&place, Mode::ReadWrite);
        let mut old_again = old.clone();
        let replaced = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            writer
                .open_dataset("a")
                .unwrap()
                .write_region(&[0, 0, 0], &[32, 32, 32], &old)
                .unwrap();
        });
        let read = d.read_block_into(&[1, 1, 1], &mut got);
        replaced.join().unwrap();
        proxy.clear_faults();
        assert!(read.unwrap_or_else(|e| panic!("{:?}: block: {e}", place.kind)));
        boxed(
            &mut old_again,
            &[32, 32, 32],
            &mut want,
            &[8, 8, 8],
            &shape,
            2,
            true,
        );
        assert!(got == want, "{:?}: block: not the old data", place.kind);
    }
}

#[test]
fn kept_indexes_notice_shards_replaced_since() {
    for place in common::places::object_stores("zarr-kept") {
        let upstream = upstream(&place);
        let doc = one_zstd_shard();
        let dims = [32u64, 32, 32];
        let n = 32 * 32 * 32;
        // Random data but for the last inner chunk, left to the fill value
        // (not stored).
        let mut old = common::bytes(21, n * 2);
        let zeros = vec![0u8; 8 * 8 * 8 * 2];
        boxed(
            &mut old,
            &dims,
            &mut zeros.clone(),
            &[24, 24, 24],
            &[8, 8, 8],
            2,
            false,
        );
        let new: Vec<u8> = (0..n as u32)
            .flat_map(|i| ((i / 5) as u16).to_ne_bytes())
            .collect();
        let writer = zarr3(&place, Mode::Create);
        let w = writer.create_dataset_json("a", &doc).unwrap();
        w.write_region(&[0, 0, 0], &dims, &old).unwrap();
        let proxy = Proxy::start(upstream);
        let d = through(&place, &proxy).open_dataset("a").unwrap();
        let kind = place.kind;
        let counter = Counted {
            proxy: &proxy,
            dims,
        };
        let block = |pos: [u64; 3], model: &[u8]| counter.block(&d, pos, model);
        let region = |offset: [u64; 3], shape: [u64; 3], model: &[u8]| {
            counter.region(&d, offset, shape, model).get
        };
        // The index once, then each inner chunk alone.
        assert_eq!(block([0, 0, 0], &old), 2, "{kind:?}");
        assert_eq!(block([1, 0, 0], &old), 1, "{kind:?}");
        assert_eq!(region([4, 4, 4], [8, 8, 8], &old), 1, "{kind:?}");

        // Replaced: the range read with the kept index comes with another
        // version, and the new shard is read whole (2 GETs: the range, then
        // the shard); the old index is forgotten, the new one read and kept.
        w.write_region(&[0, 0, 0], &dims, &new).unwrap();
        assert_eq!(block([0, 0, 0], &new), 2, "{kind:?}");
        assert_eq!(block([2, 1, 0], &new), 2, "{kind:?}");
        assert_eq!(block([3, 1, 0], &new), 1, "{kind:?}");
        // The same for a region read, replaced with the old data again.
        w.write_region(&[0, 0, 0], &dims, &old).unwrap();
        assert_eq!(region([4, 4, 4], [8, 8, 8], &old), 2, "{kind:?}");

        // An index kept while an inner chunk was missing does not say it
        // still is: the index is read again.
        assert_eq!(block([3, 3, 3], &old), 1, "{kind:?}: missing");
        let mut filled = old.clone();
        let chunk = common::bytes(22, 8 * 8 * 8 * 2);
        w.write_region(&[24, 24, 24], &[8, 8, 8], &chunk).unwrap();
        boxed(
            &mut filled,
            &dims,
            &mut chunk.clone(),
            &[24, 24, 24],
            &[8, 8, 8],
            2,
            false,
        );
        assert_eq!(block([3, 3, 3], &filled), 2, "{kind:?}: written since");
        assert_eq!(region([20, 20, 20], [12, 12, 12], &filled), 1, "{kind:?}");

        // Gone (written all fill value): a region read with the kept index
        // finds no range (or another version) and reads the shard whole,
        // which is not there (or has no inner chunks): the fill value; the
        // index is forgotten, and a block read reads it again.
        let zeros = vec![0u8; n * 2];
        w.write_region(&[0, 0, 0], &dims, &zeros).unwrap();
        assert_eq!(region([4, 4, 4], [8, 8, 8], &zeros), 2, "{kind:?}: gone");
        assert_eq!(block([1, 0, 0], &zeros), 1, "{kind:?}: gone");
    }
}

#[test]
fn a_replaced_shard_is_read_again_once_by_a_read_of_several_of_its_ranges() {
    let s3 = server_or_skip!(n5_testkit::s3_signed());
    let Some(place) = common::places::place(Kind::S3, "zarr-reread") else {
        return;
    };
    // One shard of 128³ holding 32³ inner chunks of 64 KiB (bytes codec):
    // inner chunks 0 and 16 (z 0 and 1) lie 960 KiB apart, further than
    // ranges are coalesced across, so a read of both is two ranges.
    let doc = raw_shards(128, 128, 32);
    let dims = [128u64, 128, 128];
    let n = 128 * 128 * 128;
    let old = common::bytes(31, n * 2);
    let new = common::bytes(32, n * 2);
    let writer = zarr3(&place, Mode::Create);
    let w = writer.create_dataset_json("a", &doc).unwrap();
    w.write_region(&[0, 0, 0], &dims, &old).unwrap();
    let proxy = Proxy::start(s3.addr());
    let d = through(&place, &proxy).open_dataset("a").unwrap();
    // N5 order: x 4..12, y 4..12, z 20..40 (inner chunks z 0 and 1).
    let counter = Counted {
        proxy: &proxy,
        dims,
    };
    let read = |model: &[u8]| counter.region(&d, [4, 4, 20], [8, 8, 20], model).get;
    // The index and two ranges; then the two ranges alone.
    assert_eq!(read(&old), 3);
    assert_eq!(read(&old), 2);
    // Replaced: both ranges come back with another version, and the shard
    // is read whole once, not once per range.
    w.write_region(&[0, 0, 0], &dims, &new).unwrap();
    assert_eq!(read(&new), 3);
}

#[test]
fn damaged_index_entries_met_by_partial_reads_are_named() {
    let dir = common::Scratch::new("zarr-partial-damaged");
    let root = dir.join("v.zarr");
    let c = Container::open_with(
        root.to_str().unwrap(),
        Mode::Create,
        Options::from_json(r#"{"format": "zarr3"}"#).unwrap(),
    )
    .unwrap();
    // One shard of 4×4 inner chunks of 2×2, index at the end without a
    // checksum (so a changed entry is taken as written).
    let doc = json!({
        "shape": [8, 8], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "end"}}]
    });
    let d = c.create_dataset_json("a", &doc).unwrap();
    let data: Vec<u8> = (1..=64).collect();
    d.write_region(&[0, 0], &[8, 8], &data).unwrap();
    let shard = root.join("a/c/0/0");
    let mut bytes = std::fs::read(&shard).unwrap();
    let index_at = bytes.len() - 16 * 16;
    // Inner chunk [1, 2] (number 6): 4 bytes from far beyond the end.
    let entry = index_at + 6 * 16;
    bytes[entry..entry + 8].copy_from_slice(&1_000_000u64.to_le_bytes());
    std::fs::write(&shard, &bytes).unwrap();
    let d = c.open_dataset("a").unwrap();
    let mut out = vec![0u8; 9];
    // N5 order: columns 3..6 (inner chunks 1 and 2 along C's last
    // dimension), rows 2..5 (inner chunks 1 and 2).
    let e = d.read_region(&[3, 2], &[3, 3], &mut out).unwrap_err();
    let m = e.message().to_string();
    assert!(m.contains("a/c/0/0") && m.contains("[1, 2]"), "{m}");
    // Read whole, the shard's index is checked against the shard as well.
    let mut all = vec![0u8; 64];
    let e = d.read_region(&[0, 0], &[8, 8], &mut all).unwrap_err();
    let m = e.message().to_string();
    assert!(m.contains("a/c/0/0") && m.contains("[1, 2]"), "{m}");
    // The chunks around it still read.
    let mut out = vec![0u8; 4];
    d.read_region(&[0, 0], &[2, 2], &mut out).unwrap();
    assert_eq!(out, vec![1, 2, 9, 10]);
}
