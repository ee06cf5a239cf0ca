//! Memory of region reads from S3 is bounded whatever `io_concurrency` is:
//! a 300³ uint16 region (51.5 MiB) of a 320³ dataset of raw 64³ blocks on
//! SeaweedFS, and of a Zarr v3 array of the same shape in 256³ shards of
//! raw 64³ inner chunks (read as coalesced ranges of up to 2 MiB, which the
//! I/O threads decode themselves), is read in a child process with 8, 64
//! and 256 requests in flight; the child's peak resident memory (VmHWM,
//! reset before the read, with the output buffer already resident) may
//! grow by at most 64 MiB, and the data must be exact. The fetch pipeline
//! holds at most 24 MiB of blocks or ranges between the store and the
//! threads that decode them.

#![cfg(target_os = "linux")]

mod common;

use common::places::{options_json, place, Kind};
use n5::{Container, DataType, DatasetAttributes, Mode, Options};

const N: u64 = 320;
const REGION: u64 = 300;
const OFFSET: u64 = 10;
const LIMIT: u64 = 64 << 20;

/// The value at `(x, y, z)`.
fn value(x: u64, y: u64, z: u64) -> u16 {
    (x * 7 + y * 13 + z * 31) as u16
}

fn status_bytes(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

fn child(location: &str, options: &str) {
    let options = Options::from_json(options).unwrap();
    let io = options.storage.io_concurrency.unwrap();
    let c = Container::open_with(location, Mode::Read, options).unwrap();
    let d = c.open_dataset("d").unwrap();
    let n = REGION as usize;
    // The output, resident before the measurement starts.
    let mut out = vec![1u8; n * n * n * 2];
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_bytes("VmRSS:");
    d.read_region(&[OFFSET; 3], &[REGION; 3], &mut out).unwrap();
    let growth = status_bytes("VmHWM:").saturating_sub(before);
    println!(
        "remote_memory: io_concurrency {io}: peak memory +{:.1} MiB beyond the output (bound {} MiB)",
        growth as f64 / 1048576.0,
        LIMIT >> 20
    );
    for z in (0..REGION).step_by(7) {
        for y in (0..REGION).step_by(5) {
            for x in 0..REGION {
                let k = (((z * REGION + y) * REGION + x) * 2) as usize;
                let got = u16::from_ne_bytes([out[k], out[k + 1]]);
                assert_eq!(
                    got,
                    value(x + OFFSET, y + OFFSET, z + OFFSET),
                    "at ({x}, {y}, {z})"
                );
            }
        }
    }
    assert!(growth <= LIMIT, "io_concurrency {io}: +{growth} bytes");
}

/// The whole volume, N5 order.
fn volume() -> Vec<u8> {
    let mut data = Vec::with_capacity((N * N * N * 2) as usize);
    for z in 0..N {
        for y in 0..N {
            for x in 0..N {
                data.extend_from_slice(&value(x, y, z).to_ne_bytes());
            }
        }
    }
    data
}

#[test]
fn region_reads_from_s3_stay_within_64_mib_beyond_their_output() {
    if let Ok(spec) = std::env::var("N5_TEST_MEMORY_CHILD") {
        let (location, options) = spec.split_once('|').unwrap();
        child(location, options);
        return;
    }
    let Some(p) = place(Kind::S3, "memory") else {
        return;
    };
    let c = p.open(Mode::Create).unwrap();
    let a = DatasetAttributes::new(
        vec![N; 3],
        vec![64; 3],
        DataType::U16,
        common::compression(r#"{"type":"raw"}"#),
    )
    .unwrap();
    c.create_dataset("d", a)
        .unwrap()
        .write_region(&[0; 3], &[N; 3], &volume())
        .unwrap();
    read_in_children(
        &p,
        serde_json::Map::new(),
        "region_reads_from_s3_stay_within_64_mib_beyond_their_output",
    );
}

#[test]
fn sharded_region_reads_from_s3_stay_within_64_mib_beyond_their_output() {
    if let Ok(spec) = std::env::var("N5_TEST_MEMORY_CHILD") {
        let (location, options) = spec.split_once('|').unwrap();
        child(location, options);
        return;
    }
    let Some(p) = place(Kind::S3, "memory-sharded") else {
        return;
    };
    let format: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(r#"{"format": "zarr3"}"#).unwrap();
    let c = p
        .open_with(Mode::Create, p.options_with(r#"{"format": "zarr3"}"#))
        .unwrap();
    let le = r#"{"name": "bytes", "configuration": {"endian": "little"}}"#;
    let doc = format!(
        r#"{{"shape": [{N}, {N}, {N}], "data_type": "uint16",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [256, 256, 256]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
            "codecs": [{{"name": "sharding_indexed", "configuration": {{
                "chunk_shape": [64, 64, 64], "codecs": [{le}],
                "index_codecs": [{le}, {{"name": "crc32c"}}], "index_location": "end"}}}}]}}"#
    );
    c.create_dataset_json("d", &serde_json::from_str(&doc).unwrap())
        .unwrap()
        .write_region(&[0; 3], &[N; 3], &volume())
        .unwrap();
    read_in_children(
        &p,
        format,
        "sharded_region_reads_from_s3_stay_within_64_mib_beyond_their_output",
    );
}

/// Read the region of dataset `d` at `p` in a child process (the test
/// `test` run again) with 8, 64 and 256 requests in flight, the options of
/// `p` merged with `extra`.
fn read_in_children(
    p: &common::places::Place,
    extra: serde_json::Map<String, serde_json::Value>,
    test: &str,
) {
    for io in [8, 64, 256] {
        let mut options = options_json(p);
        options.extend(extra.clone());
        options.insert("io_concurrency".into(), io.into());
        options.insert("threads".into(), 2.into());
        let spec = format!("{}|{}", p.location, serde_json::Value::Object(options));
        let out = common::child_test(test, "N5_TEST_MEMORY_CHILD", &spec)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines().filter(|l| l.starts_with("remote_memory:")) {
            eprintln!("{line}");
        }
        assert!(
            out.status.success(),
            "{test}, io_concurrency {io}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
