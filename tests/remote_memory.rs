//! Memory of region reads from S3 is bounded whatever `io_concurrency` is:
//! a 300³ uint16 region (51.5 MiB) of a 320³ dataset of raw 64³ blocks on
//! SeaweedFS is read in a child process with 8, 64 and 256 requests in
//! flight; the child's peak resident memory (VmHWM, reset before the read,
//! with the output buffer already resident) may grow by at most 64 MiB, and
//! the data must be exact. The fetch pipeline holds at most 24 MiB of blocks
//! between the I/O threads and the decoding threads.

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
    let d = c.create_dataset("d", a).unwrap();
    let mut data = Vec::with_capacity((N * N * N * 2) as usize);
    for z in 0..N {
        for y in 0..N {
            for x in 0..N {
                data.extend_from_slice(&value(x, y, z).to_ne_bytes());
            }
        }
    }
    d.write_region(&[0; 3], &[N; 3], &data).unwrap();
    drop(data);
    for io in [8, 64, 256] {
        let mut options = options_json(&p);
        options.insert("io_concurrency".into(), io.into());
        options.insert("threads".into(), 2.into());
        let spec = format!("{}|{}", p.location, serde_json::Value::Object(options));
        let out = common::child_test(
            "region_reads_from_s3_stay_within_64_mib_beyond_their_output",
            "N5_TEST_MEMORY_CHILD",
            &spec,
        )
        .output()
        .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines().filter(|l| l.starts_with("remote_memory:")) {
            eprintln!("{line}");
        }
        assert!(
            out.status.success(),
            "io_concurrency {io}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
