//! Helpers of the `n5` integration tests: running the built binary,
//! parsing its JSON, temporary directories, and finding the peer corpus.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// What one run of `n5` gave.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error, as text.
    pub stderr: String,
}

impl Run {
    /// Standard output as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Run `n5 args...` with standard input closed.
pub fn run(args: &[&str]) -> Run {
    run_in(args, None)
}

/// Run `n5 args...` in `dir` (the current directory when `None`).
pub fn run_in(args: &[&str], dir: Option<&Path>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_n5"));
    cmd.args(args).stdin(Stdio::null());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().expect("the n5 binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The environment variables that carry storage credentials, endpoints or
/// trusted CAs, which [`run_env`] keeps from the child unless given.
pub const STORAGE_ENV: [&str; 16] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "STORAGE_EMULATOR_HOST",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
];

/// Run `n5 args...` in `dir` (the current directory when `None`) with
/// `env` set and every other variable of [`STORAGE_ENV`] removed, and no
/// credential files (`~/.aws` of a home that does not exist).
pub fn run_env(args: &[&str], env: &[(&str, &str)], dir: Option<&Path>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_n5"));
    cmd.args(args).stdin(Stdio::null());
    for k in STORAGE_ENV {
        cmd.env_remove(k);
    }
    cmd.env("HOME", "/nonexistent/n5-cli-test-home");
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.output().expect("the n5 binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run `n5 args...` and check that it succeeds.
pub fn ok(args: &[&str]) -> Run {
    let r = run(args);
    assert_eq!(
        r.code,
        0,
        "n5 {args:?} failed with {}: {}{}",
        r.code,
        r.stderr,
        r.text()
    );
    r
}

/// Run `n5 args...`, check that it succeeds and parse its output as JSON.
pub fn json(args: &[&str]) -> Value {
    let r = ok(args);
    serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|e| panic!("n5 {args:?} printed no JSON ({e}): {}", r.text()))
}

/// Check that a failed run exited with `code` and said one line
/// `n5: ...` that mentions `needle`.
pub fn fails(args: &[&str], code: i32, needle: &str) -> Run {
    let r = run(args);
    assert_eq!(r.code, code, "n5 {args:?}: {} {}", r.stderr, r.text());
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "n5 {args:?}: not one line: {:?}", r.stderr);
    assert!(
        lines[0].starts_with("n5: ") && lines[0].contains(needle),
        "n5 {args:?}: {:?} does not mention {needle:?}",
        lines[0]
    );
    r
}

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory named after `name`.
    pub fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "n5-cli-test-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    /// `name` inside the directory, as a string argument.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The peer corpus (`../shared/corpus` beside the repository).
pub fn corpus() -> Option<PathBuf> {
    shared("corpus", "peer corpus")
}

/// The directory `name` of `../shared` beside the repository, holding a
/// manifest.json, or `None` with a message when it is absent; absent with
/// `N5_REQUIRE_PEERS=1` (as `tests/run.sh` sets), the test fails.
pub fn shared(name: &str, what: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(name);
    if p.join("manifest.json").is_file() {
        return Some(p);
    }
    let why = format!(
        "the {what} is not at {} (clone shared/ beside the repository)",
        p.display()
    );
    if std::env::var_os("N5_REQUIRE_PEERS").is_some_and(|v| v == "1") {
        panic!("{why}; N5_REQUIRE_PEERS=1 requires it");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// The corpus manifest.
pub fn manifest(corpus: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(corpus.join("manifest.json")).unwrap()).unwrap()
}

/// Little-endian bytes of u16 values.
pub fn le_u16(values: &[u16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The Python interpreter named by the environment variable `var`, else
/// `venv`/bin/python in the repository, when it imports `modules`; `None`
/// (what needs it skipped, with a message naming `what`) otherwise, unless
/// `N5_REQUIRE_PEERS=1`, which makes it a failure.
pub fn python_with(var: &str, venv: &str, modules: &str, what: &str) -> Option<PathBuf> {
    let python = match std::env::var_os(var).filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(venv)
            .join("bin/python"),
    };
    let has = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if has {
        return Some(python);
    }
    assert!(
        std::env::var("N5_REQUIRE_PEERS").as_deref() != Ok("1"),
        "{what}: required (N5_REQUIRE_PEERS=1), but {} cannot import {modules}",
        python.display()
    );
    eprintln!(
        "skipped: {what} ({} cannot import {modules}; set {var} or run tests/setup.sh)",
        python.display()
    );
    None
}

/// Writes an ImageJ hyperstack with tifffile (`python` imports tifffile
/// and numpy): `hs.tif` in `dir`, uint16 `[x, y, c, z, t]` = `[45, 37, 2,
/// 5, 3]` in N5 order (numpy `TZCYX`), pixels 0.25 × 0.5 µm, slices 2 µm
/// apart, frames 1.5 s apart, no element 0; beside it `hs-ngff.raw`, its
/// elements in OME-NGFF's order (numpy `TCZYX`, C order, little-endian),
/// and `hs.raw`, in the file's own (`TZCYX`). Returns the TIFF's path.
pub fn hyperstack_tiff(python: &Path, dir: &TempDir) -> String {
    const MAKE: &str = r#"
import os, sys
import numpy as np
import tifffile
d = sys.argv[1]
v = np.random.default_rng(23).integers(1, 60000, size=(3, 5, 2, 37, 45), dtype=np.uint16)
tifffile.imwrite(os.path.join(d, "hs.tif"), v, imagej=True, resolution=(1 / 0.25, 1 / 0.5),
    metadata={"axes": "TZCYX", "spacing": 2.0, "unit": "micron", "finterval": 1.5})
v.astype("<u2").tofile(os.path.join(d, "hs.raw"))
np.ascontiguousarray(v.transpose(0, 2, 1, 3, 4)).astype("<u2").tofile(os.path.join(d, "hs-ngff.raw"))
"#;
    let out = Command::new(python)
        .args(["-c", MAKE, &dir.path("")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tifffile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.path("hs.tif")
}
