//! Helpers shared by the integration tests: scratch directories that clean
//! up after themselves, and deterministic test data.
#![allow(dead_code)]

pub mod capi;
pub mod corpus_check;
pub mod nwb_check;
pub mod object_store;
pub mod places;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A scratch directory under the target directory, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic pseudo-random bytes (xorshift), `n` of them.
pub fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Low entropy in the high bits so that codecs have work to do.
            ((x >> 59) as u8).wrapping_mul(17)
        })
        .collect()
}

/// Every compression the library writes, as JSON texts.
pub const COMPRESSIONS: &[&str] = &[
    r#"{"type":"raw"}"#,
    r#"{"type":"gzip"}"#,
    r#"{"type":"gzip","level":-1}"#,
    r#"{"type":"gzip","level":5,"useZlib":true}"#,
    r#"{"type":"bzip2"}"#,
    r#"{"type":"bzip2","blockSize":1}"#,
    r#"{"type":"xz"}"#,
    r#"{"type":"xz","preset":1}"#,
    r#"{"type":"lz4"}"#,
    r#"{"type":"lz4","blockSize":64}"#,
    r#"{"type":"blosc","cname":"lz4","clevel":5,"shuffle":1}"#,
    r#"{"type":"blosc","cname":"blosclz","clevel":9,"shuffle":0}"#,
    r#"{"type":"blosc","cname":"zstd","clevel":3,"shuffle":2}"#,
    r#"{"type":"blosc","cname":"zlib","clevel":5,"shuffle":1}"#,
    r#"{"type":"blosc","cname":"lz4hc","clevel":5,"shuffle":1,"blocksize":256}"#,
    r#"{"type":"zstd"}"#,
    r#"{"type":"zstd","level":19}"#,
];

pub fn compression(json: &str) -> n5::Compression {
    n5::Compression::from_json(&serde_json::from_str(json).unwrap()).unwrap()
}

/// The peer-written corpus shared beside the repository.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

/// The corpus manifest.
pub fn manifest() -> serde_json::Value {
    let path = corpus_dir().join("manifest.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap()
}

/// The hdmf-zarr corpus (`shared/corpus-hdmf`: NWB files written by
/// hdmf-zarr with links and object references), found in `N5_SHARED_DIR`
/// or beside the repository, canonicalised (so that locations joined from
/// it compare as text); `None` with a message when absent, unless
/// `N5_REQUIRE_PEERS=1`, which makes that a failure.
pub fn hdmf_corpus_dir() -> Option<PathBuf> {
    let shared = std::env::var_os("N5_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let dir = shared.join("corpus-hdmf");
    if dir.join("manifest.json").is_file() {
        return Some(std::fs::canonicalize(dir).unwrap());
    }
    let why = format!(
        "the hdmf-zarr corpus is not at {} (set N5_SHARED_DIR to the shared folder)",
        dir.display()
    );
    assert!(
        std::env::var("N5_REQUIRE_PEERS").as_deref() != Ok("1"),
        "{why}; N5_REQUIRE_PEERS=1 requires it"
    );
    eprintln!("SKIPPED: {why}");
    None
}

/// Copy the directory `from` to `to` (made), every file and directory
/// writable whatever the source's modes.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

/// A JSON array of unsigned integers.
pub fn u64s(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// The sha256 of `bytes` as lowercase hex.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A command that runs the test `test` of this test binary again, in a child
/// process, with `var` set to `value` (the test runs its child part when it
/// sees `var`). Its stdout carries the test harness's lines too.
pub fn child_test(test: &str, var: &str, value: &str) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test, "--nocapture"])
        .env(var, value);
    command
}

/// Every file below `dir`, as paths relative to it.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(dir.join(&rel)).unwrap() {
            let entry = entry.unwrap();
            let rel = rel.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                stack.push(rel);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// The peers' Python (`N5_PEER_PYTHON`, with h5py, hdf5plugin, zarr and
/// tensorstore from tests/peers/requirements.txt), or `None` when it is not
/// set: then the test says so and passes, unless `N5_REQUIRE_PEERS=1` (set
/// by tests/run.sh), which makes it fail.
pub fn peer_python(test: &str) -> Option<PathBuf> {
    match std::env::var_os("N5_PEER_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            assert!(
                std::env::var("N5_REQUIRE_PEERS").as_deref() != Ok("1"),
                "N5_REQUIRE_PEERS=1 but N5_PEER_PYTHON is not set: {test} needs the peers' Python"
            );
            eprintln!("{test}: skipped: N5_PEER_PYTHON is not set; run ./tests/run.sh");
            None
        }
    }
}
