//! Decoding real block payloads of every codec and every lz4 framing from the
//! peer-written corpus (`shared/corpus` beside the repository), checked
//! against the manifest: whole-array SHA-256 for array datasets, payload
//! SHA-256 for per-block (varlength, string) datasets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Compression;

fn corpus_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus")).to_path_buf()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn elem_size(data_type: &str) -> Option<usize> {
    Some(match data_type {
        "uint8" | "int8" | "string" => 1,
        "uint16" | "int16" => 2,
        "uint32" | "int32" | "float32" => 4,
        "uint64" | "int64" | "float64" => 8,
        _ => return None,
    })
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// A block file split into its header fields and payload.
struct BlockFile {
    size: Vec<u64>,
    num_elements: u64,
    payload: Vec<u8>,
}

fn read_block(path: &Path) -> BlockFile {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let be16 = |at: usize| u16::from_be_bytes([bytes[at], bytes[at + 1]]);
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    let mode = be16(0);
    assert!(mode <= 1, "{}: mode {mode}", path.display());
    let ndim = be16(2) as usize;
    let size: Vec<u64> = (0..ndim).map(|d| u64::from(be32(4 + 4 * d))).collect();
    let mut at = 4 + 4 * ndim;
    let num_elements = if mode == 1 {
        at += 4;
        u64::from(be32(at - 4))
    } else {
        size.iter().product()
    };
    BlockFile {
        size,
        num_elements,
        payload: bytes[at..].to_vec(),
    }
}

/// Which lz4 framing a payload uses (as the decoder has to work it out).
fn lz4_framing(payload: &[u8], out_len: usize) -> &'static str {
    if payload.starts_with(b"LZ4Block") {
        "LZ4Block"
    } else if payload.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        "frame"
    } else if payload.len() >= 4
        && u32::from_le_bytes(payload[..4].try_into().unwrap()) as usize == out_len
    {
        "numcodecs"
    } else {
        "bare"
    }
}

#[derive(Default)]
struct Coverage {
    /// (container, compression type) pairs decoded.
    types: BTreeSet<(String, String)>,
    /// lz4 framing → container that used it.
    lz4: BTreeMap<&'static str, BTreeSet<String>>,
    blocks: usize,
    datasets: usize,
}

/// Decodes one block payload, recording coverage.
fn decode_block(
    c: &Compression,
    container: &str,
    file: &BlockFile,
    elem: usize,
    what: &str,
    cov: &mut Coverage,
) -> Vec<u8> {
    let mut out = vec![0u8; file.num_elements as usize * elem];
    c.decode(&file.payload, &mut out)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Compression::Lz4 { .. } = c {
        cov.lz4
            .entry(lz4_framing(&file.payload, out.len()))
            .or_default()
            .insert(container.to_string());
    }
    cov.types
        .insert((container.to_string(), c.type_name().to_string()));
    cov.blocks += 1;
    out
}

/// Decodes every block of an array dataset and compares the assembled array
/// (N5 order, little-endian, missing blocks zero) with the manifest.
fn check_array_dataset(ds: &Value, c: &Compression, elem: usize, cov: &mut Coverage) {
    let container = ds["container"].as_str().unwrap();
    let path = ds["path"].as_str().unwrap();
    let dims = u64s(&ds["dimensions"]);
    let block_size = u64s(&ds["blockSize"]);
    let total: u64 = dims.iter().product();
    let mut array = vec![0u8; total as usize * elem];
    for block in ds["blocks"].as_array().unwrap() {
        let grid = u64s(&block["grid"]);
        let mut file_path = corpus_dir().join(container).join(path);
        for g in &grid {
            file_path.push(g.to_string());
        }
        let file = read_block(&file_path);
        let what = format!("{container}/{path} block {grid:?}");
        assert_eq!(
            file.num_elements,
            file.size.iter().product::<u64>(),
            "{what}: array blocks are mode 0"
        );
        let data = decode_block(c, container, &file, elem, &what, cov);
        for (i, value) in data.chunks_exact(elem).enumerate() {
            let mut rest = i as u64;
            let mut linear = 0u64;
            let mut stride = 1u64;
            let mut inside = true;
            for d in 0..dims.len() {
                let local = rest % file.size[d];
                rest /= file.size[d];
                let global = grid[d] * block_size[d] + local;
                inside &= global < dims[d];
                linear += global * stride;
                stride *= dims[d];
            }
            if inside {
                let at = linear as usize * elem;
                for (k, byte) in value.iter().rev().enumerate() {
                    array[at + k] = *byte;
                }
            }
        }
    }
    assert_eq!(
        hex(&Sha256::digest(&array)),
        ds["array_sha256"].as_str().unwrap(),
        "{container}/{path}: array checksum"
    );
    cov.datasets += 1;
}

/// Decodes every block of a per-block dataset and compares each payload's
/// checksum with the manifest.
fn check_per_block_dataset(ds: &Value, c: &Compression, elem: usize, cov: &mut Coverage) {
    let container = ds["container"].as_str().unwrap();
    let path = ds["path"].as_str().unwrap();
    for expected in ds["expected_blocks"].as_array().unwrap() {
        let grid = u64s(&expected["grid"]);
        let mut file_path = corpus_dir().join(container).join(path);
        for g in &grid {
            file_path.push(g.to_string());
        }
        let file = read_block(&file_path);
        let what = format!("{container}/{path} block {grid:?}");
        let data = decode_block(c, container, &file, elem, &what, cov);
        if let Some(sum) = expected.get("payload_sha256").and_then(Value::as_str) {
            assert_eq!(hex(&Sha256::digest(&data)), sum, "{what}");
        } else if let Some(strings) = expected.get("strings").and_then(Value::as_array) {
            let mut joined = Vec::new();
            for s in strings {
                joined.extend_from_slice(s.as_str().unwrap().as_bytes());
                joined.push(0);
            }
            // Java drops trailing empty strings; compare what it keeps.
            assert!(
                data.starts_with(&joined) || joined.starts_with(&data),
                "{what}"
            );
        } else {
            panic!("{what}: no expectation in the manifest");
        }
    }
    cov.datasets += 1;
}

#[test]
fn every_peer_block_of_every_codec_decodes() {
    let manifest_path = corpus_dir().join("manifest.json");
    let Ok(text) = std::fs::read_to_string(&manifest_path) else {
        eprintln!("skipped: no corpus at {}", manifest_path.display());
        return;
    };
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let mut cov = Coverage::default();
    for ds in manifest["datasets"].as_array().unwrap() {
        let Some(compression) = ds.get("compression").filter(|v| v.is_object()) else {
            continue;
        };
        let Some(elem) = elem_size(ds["dataType"].as_str().unwrap()) else {
            continue; // object data (mode 2 blocks) is the block layer's business
        };
        let c =
            Compression::from_json(compression).unwrap_or_else(|e| panic!("{}: {e}", ds["path"]));
        if ds.get("expected_blocks").is_some() {
            check_per_block_dataset(ds, &c, elem, &mut cov);
        } else if ds.get("array_sha256").is_some() {
            check_array_dataset(ds, &c, elem, &mut cov);
        }
    }
    eprintln!(
        "decoded {} blocks of {} datasets; lz4 framings: {:?}",
        cov.blocks, cov.datasets, cov.lz4
    );
    // Every codec from every peer that writes it.
    for (container, types) in [
        (
            "java-n5.n5",
            &["raw", "gzip", "bzip2", "xz", "lz4", "blosc", "zstd"][..],
        ),
        ("rust-n5.n5", &["raw", "gzip", "bzip2", "xz", "lz4"]),
        (
            "z5py.n5",
            &["raw", "gzip", "bzip2", "xz", "lz4", "blosc", "zstd"],
        ),
        (
            "zarr2.n5",
            &["raw", "gzip", "bzip2", "xz", "lz4", "blosc", "zstd"],
        ),
        (
            "tensorstore.n5",
            &["raw", "gzip", "bzip2", "xz", "blosc", "zstd"],
        ),
    ] {
        for t in types {
            assert!(
                cov.types.contains(&(container.to_string(), t.to_string())),
                "{container} {t} not decoded"
            );
        }
    }
    // Each lz4 framing, from the peer that writes it.
    let framings = |f: &str| cov.lz4.get(f).cloned().unwrap_or_default();
    assert_eq!(
        framings("LZ4Block"),
        BTreeSet::from(["java-n5.n5".to_string()])
    );
    assert_eq!(
        framings("frame"),
        BTreeSet::from(["rust-n5.n5".to_string()])
    );
    assert_eq!(
        framings("numcodecs"),
        BTreeSet::from(["zarr2.n5".to_string()])
    );
    assert_eq!(framings("bare"), BTreeSet::from(["z5py.n5".to_string()]));
}

#[test]
fn a_peer_payload_decodes_to_a_prefix_and_not_beyond() {
    // One block of each lz4 framing and of blosc: a shorter `out` gets the
    // start of the data, a longer one is an error.
    let corpus = corpus_dir();
    if !corpus.join("manifest.json").exists() {
        eprintln!("skipped: no corpus");
        return;
    }
    for (container, key) in [
        ("java-n5.n5", "lz4"),
        ("java-n5.n5", "lz4-b64"),
        ("rust-n5.n5", "lz4"),
        ("zarr2.n5", "lz4"),
        ("z5py.n5", "lz4"),
        ("java-n5.n5", "blosc-zstd-bitshuffle"),
        ("zarr2.n5", "blosc-lz4-shuffle"),
        ("tensorstore.n5", "blosc-lz4hc-bs256"),
        ("z5py.n5", "zstd"),
        ("java-n5.n5", "xz"),
    ] {
        let dir = corpus
            .join(container)
            .join("compression")
            .join(key)
            .join("float64");
        let attrs: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("attributes.json")).unwrap())
                .unwrap();
        let c = Compression::from_json(&attrs["compression"]).unwrap();
        let file = read_block(&dir.join("0").join("0"));
        let n = file.num_elements as usize * 8;
        let mut full = vec![0u8; n];
        c.decode(&file.payload, &mut full)
            .unwrap_or_else(|e| panic!("{container} {key}: {e}"));
        for want in [1, 8, 100, n / 2, n - 1] {
            let mut part = vec![0u8; want];
            c.decode(&file.payload, &mut part)
                .unwrap_or_else(|e| panic!("{container} {key} prefix {want}: {e}"));
            assert_eq!(part, full[..want], "{container} {key} prefix {want}");
        }
        let mut more = vec![0u8; n + 8];
        let err = c.decode(&file.payload, &mut more).unwrap_err();
        assert_eq!(
            err.kind(),
            crate::error::ErrorKind::Codec,
            "{container} {key}: {err}"
        );
        // Truncated peer payloads.
        for cut in [
            file.payload.len() / 2,
            file.payload.len().saturating_sub(30),
        ] {
            let err = c.decode(&file.payload[..cut], &mut full).unwrap_err();
            assert_eq!(
                err.kind(),
                crate::error::ErrorKind::Codec,
                "{container} {key} cut {cut}"
            );
        }
    }
}
