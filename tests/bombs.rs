//! Decompression bombs and lying block headers in every codec, with the
//! memory and time each read takes measured in a child process.
//!
//! For every compression the parent writes a dataset of 64³-byte blocks
//! (256 KiB each) whose block files are hostile:
//! - a full-size block whose payload decompresses to 1 GiB of zeros (1024
//!   concatenated members, frames or streams; 64 MiB for lz4, and one
//!   64 MiB stream for zlib and blosc, which do not concatenate);
//! - a varlength block announcing 2^31-1 elements;
//! - a varlength block announcing exactly the limit a compressed one may
//!   hold (16 MiB here), over the same bomb;
//! - a block whose header shape is 2^31 in every dimension;
//! - in an object dataset, object blocks announcing 2^31-1 bytes and
//!   exactly the limit;
//! - a varlength block announcing 64 times the size of its file (when that
//!   is more than the limit), over the bomb.
//!
//! For each codec and each of these blocks (and two regions over them) a
//! child process opens the container read-only and makes one read. It must give the right data or a codec error naming the
//! block, within seconds, and the child's peak resident memory (VmHWM, reset
//! before the reads) may grow by at most what a varlength block may
//! legitimately decode to (16 MiB, or 64 times its file), plus 4 blocks and
//! a fixed codec allowance.

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{child_test, compression, Scratch};
use n5::block::{VARLENGTH_FACTOR, VARLENGTH_MIN_LIMIT, VARLENGTH_PER_FILE_BYTE};
use n5::{Compression, Container, DataType, DatasetAttributes, ErrorKind, Mode};

/// One dataset per codec: the directory name and the compression.
const CODECS: &[(&str, &str)] = &[
    ("raw", r#"{"type":"raw"}"#),
    ("gzip", r#"{"type":"gzip"}"#),
    ("zlib", r#"{"type":"gzip","useZlib":true}"#),
    ("bzip2", r#"{"type":"bzip2"}"#),
    ("xz", r#"{"type":"xz"}"#),
    ("lz4", r#"{"type":"lz4","blockSize":33554432}"#),
    ("zstd", r#"{"type":"zstd"}"#),
    (
        "blosc",
        r#"{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1}"#,
    ),
];

const BLOCK: u32 = 64;
/// Bytes in one nominal block (uint8).
const NOMINAL: u64 = (BLOCK as u64).pow(3);
/// What a compressed varlength or object block may decode to here.
const LIMIT: u64 = if NOMINAL * VARLENGTH_FACTOR > VARLENGTH_MIN_LIMIT {
    NOMINAL * VARLENGTH_FACTOR
} else {
    VARLENGTH_MIN_LIMIT
};
/// Decoder state beyond the output: bzip2 needs about 3.6 MiB at block size
/// 9, zstd and xz up to their window or dictionary (the bombs use 1 MiB
/// frames and preset 6), blosc a few internal blocks.
const CODEC_ALLOWANCE: u64 = 16 << 20;
/// Slowest any one read may be (debug builds, a loaded machine).
const MAX_READ: Duration = Duration::from_secs(20);

/// A payload that decodes to more zeros than any header here announces:
/// 1 GiB as 1024 concatenated streams; one 64 MiB stream where the format
/// has no concatenation (zlib, blosc); 64 MiB of lz4 pieces, whose 4 KiB per
/// MiB would otherwise make a file that may announce 256 MiB.
fn bomb(c: &Compression) -> Vec<u8> {
    if let Compression::Blosc { .. } | Compression::Gzip { use_zlib: true, .. } = c {
        let mut one = Vec::new();
        c.encode(&vec![0u8; 64 << 20], 1, &mut one).unwrap();
        return one;
    }
    let mut one = Vec::new();
    c.encode(&vec![0u8; 1 << 20], 1, &mut one).unwrap();
    if let Compression::Lz4 { .. } = c {
        // LZ4Block pieces run on without the end marker.
        one.truncate(one.len() - 21);
        return one.repeat(64);
    }
    one.repeat(1024)
}

fn header(mode: u16, shape: [u32; 3], count: Option<u32>) -> Vec<u8> {
    let mut h = mode.to_be_bytes().to_vec();
    h.extend_from_slice(&3u16.to_be_bytes());
    for s in shape {
        h.extend_from_slice(&s.to_be_bytes());
    }
    if let Some(n) = count {
        h.extend_from_slice(&n.to_be_bytes());
    }
    h
}

fn object_header(count: u32) -> Vec<u8> {
    [&2u16.to_be_bytes()[..], &count.to_be_bytes()].concat()
}

fn write_container(root: &std::path::Path) {
    let c = Container::open(root, Mode::Create).unwrap();
    for (name, json) in CODECS {
        let comp = compression(json);
        let attrs = DatasetAttributes::new(
            vec![u64::from(BLOCK) * 2; 3],
            vec![BLOCK; 3],
            DataType::U8,
            comp.clone(),
        )
        .unwrap();
        c.create_dataset(&format!("{name}/d"), attrs).unwrap();
        let objects = DatasetAttributes::new(
            vec![NOMINAL * 2],
            vec![NOMINAL as u32],
            DataType::Object,
            comp.clone(),
        )
        .unwrap();
        c.create_dataset(&format!("{name}/o"), objects).unwrap();
        let payload = match comp {
            // Raw blocks are bounded by their file: a real block, and
            // headers over payloads too short for what they announce.
            Compression::Raw => vec![0u8; NOMINAL as usize],
            _ => bomb(&comp),
        };
        let full = [BLOCK; 3];
        // A varlength header announcing what 64 bytes per byte of its file
        // allow, when that is more than the limit (gzip, lz4 here).
        let per_file = file_limit(header(1, full, Some(0)).len() + payload.len());
        let files: [(&str, Vec<u8>); 7] = [
            ("d/0/0/0", header(0, full, None)),
            ("d/1/1/1", header(1, full, Some(per_file as u32))),
            ("d/1/0/0", header(1, full, Some(i32::MAX as u32))),
            ("d/0/1/0", header(1, full, Some(LIMIT as u32))),
            ("d/1/1/0", header(0, [1 << 31; 3], None)),
            ("o/0", object_header(i32::MAX as u32)),
            ("o/1", object_header(LIMIT as u32)),
        ];
        for (key, head) in files {
            let path = root.join(name).join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, [&head[..], &payload].concat()).unwrap();
        }
    }
}

/// What a compressed varlength block in a file of `file_len` bytes may
/// announce here.
fn file_limit(file_len: usize) -> u64 {
    (file_len as u64 * VARLENGTH_PER_FILE_BYTE)
        .max(LIMIT)
        .min(i32::MAX as u64)
}

/// A field of /proc/self/status in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb << 10
}

/// Times one read and checks its outcome: `Ok` data that `good` accepts, or
/// (when `good` is `None`) a codec error naming the block.
fn expect<T>(
    what: &str,
    key: &str,
    r: impl FnOnce() -> n5::Result<T>,
    good: Option<&dyn Fn(&T) -> bool>,
) {
    let t = Instant::now();
    let result = r();
    let took = t.elapsed();
    assert!(took < MAX_READ, "{what} {key} took {took:?}");
    match (result, good) {
        (Ok(v), Some(ok)) => assert!(ok(&v), "{what} {key}: wrong data"),
        (Ok(_), None) => panic!("{what} {key}: read a hostile block without an error"),
        (Err(e), expected) => {
            assert!(expected.is_none(), "{what} {key}: {e}");
            assert_eq!(e.kind(), ErrorKind::Codec, "{what} {key}: {e}");
            assert!(e.message().contains(key), "{what} {key}: {e}");
        }
    }
}

/// The reads of each case, by number: what is read and what it must give.
const CASES: &[&str] = &[
    "block d/0/0/0 (a bomb behind a full-size header)",
    "region over block d/0/0/0",
    "block d/1/0/0 (varlength, 2^31-1 elements)",
    "block d/0/1/0 (varlength, the limit, over a bomb)",
    "block d/1/1/0 (header shape 2^31 in every dimension)",
    "region over all of d",
    "object block o/0 (2^31-1 bytes)",
    "object block o/1 (the limit, over a bomb)",
    "block d/1/1/1 (varlength, 64 times its file or the limit, over a bomb)",
];

/// The child: one read of one codec's hostile blocks, in a fresh process
/// so that its peak memory is its own.
fn read_bomb(root: &str, name: &str, case: usize) {
    let c = Container::open(root, Mode::Read).unwrap();
    let d = c.open_dataset(&format!("{name}/d")).unwrap();
    let o = c.open_dataset(&format!("{name}/o")).unwrap();
    let raw = name == "raw";
    let zeros = |n: u64| move |b: &Vec<u8>| b.len() as u64 == n && b.iter().all(|&x| x == 0);
    let full = zeros(NOMINAL);
    let at_limit = zeros(LIMIT);
    // Raw blocks cannot be bombs: their file is shorter than announced.
    let limit_ok = (!raw).then_some(&at_limit as &dyn Fn(&Vec<u8>) -> bool);
    let (dr, or) = (&d, &o);
    let block = |pos: [u64; 3]| move || dr.read_block(&pos).map(|b| b.unwrap().data);
    let object = |pos: u64| move || or.read_object_block(&[pos]).map(|b| b.unwrap());
    let mut region = vec![1u8; NOMINAL as usize];
    let mut whole = vec![1u8; (NOMINAL * 8) as usize];
    let key = |k: &str| format!("{name}/{k}");
    let what = format!("{name}: {}", CASES[case]);
    let file = std::path::Path::new(root).join(name).join("d/1/1/1");
    let announced = file_limit(std::fs::metadata(file).unwrap().len() as usize);

    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_bytes("VmRSS:");
    match case {
        0 => expect(&what, &key("d/0/0/0"), block([0, 0, 0]), Some(&full)),
        1 => {
            let mut read = || d.read_region(&[0, 0, 0], &[u64::from(BLOCK); 3], &mut region);
            expect(&what, &key("d/0/0/0"), &mut read, Some(&|_: &()| true));
            assert!(region.iter().all(|&x| x == 0), "{what}");
        }
        2 => expect(&what, &key("d/1/0/0"), block([1, 0, 0]), None),
        3 => expect(&what, &key("d/0/1/0"), block([0, 1, 0]), limit_ok),
        4 => expect(&what, &key("d/1/1/0"), block([1, 1, 0]), None),
        5 => {
            let read = || d.read_region(&[0, 0, 0], &[u64::from(BLOCK) * 2; 3], &mut whole);
            expect(&what, &key("d/1/"), read, None);
        }
        6 => expect(&what, &key("o/0"), object(0), None),
        7 => expect(&what, &key("o/1"), object(1), limit_ok),
        _ => {
            let per_file = zeros(announced);
            let ok = (!raw).then_some(&per_file as &dyn Fn(&Vec<u8>) -> bool);
            expect(&what, &key("d/1/1/1"), block([1, 1, 1]), ok);
        }
    }
    let growth = status_bytes("VmHWM:").saturating_sub(before);
    // What the block read may hold: the limit, or for the last case what
    // its file allows.
    let holds = if case == 8 {
        announced.max(LIMIT)
    } else {
        LIMIT
    };
    let bound = holds + 4 * NOMINAL + CODEC_ALLOWANCE;
    println!(
        "bombs: {what}: peak memory +{:.1} MiB (bound {:.0} MiB)",
        growth as f64 / 1048576.0,
        bound as f64 / 1048576.0
    );
    assert!(
        growth <= bound,
        "{what}: peak memory grew by {growth} bytes, over {bound}"
    );
}

#[test]
fn bombs_in_every_codec_take_bounded_memory_and_time() {
    if let Ok(job) = std::env::var("N5_BOMB_CHILD") {
        let mut parts = job.split('|');
        let (root, name, case) = (parts.next().unwrap(), parts.next().unwrap(), parts.next());
        read_bomb(root, name, case.unwrap().parse().unwrap());
        return;
    }
    let s = Scratch::new("bombs");
    let root = s.join("c.n5");
    write_container(&root);
    for ((name, _), case) in CODECS
        .iter()
        .flat_map(|c| (0..CASES.len()).map(move |i| (c, i)))
    {
        let out = child_test(
            "bombs_in_every_codec_take_bounded_memory_and_time",
            "N5_BOMB_CHILD",
            &format!("{}|{name}|{case}", root.display()),
        )
        .output()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        for line in stdout.lines().filter(|l| l.starts_with("bombs:")) {
            println!("{line}");
        }
        assert!(
            out.status.success(),
            "{name}, case {case}: the reading child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
