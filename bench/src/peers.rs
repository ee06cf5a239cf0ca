//! The peers (tensorstore, z5py; zarr-python 3 for the sharded layout):
//! finding the Python interpreters, asking bench/peers.py (and
//! bench/peers_zarr3.py, run by the second venv's Python) for their versions
//! and running one measurement per Python process. What the scripts time is
//! described in their docstrings.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::workload::{Impl, Job, Outcome};

/// bench/peers.py, next to this crate's manifest.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers.py")
}

/// bench/peers_zarr3.py (zarr-python 3), next to this crate's manifest.
pub fn script_zarr3() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers_zarr3.py")
}

/// The default interpreter of zarr-python 3: `<repo>/.venv-zarr3/bin/python`
/// (made by `tests/setup.sh zarr3py`).
pub fn default_python_zarr3() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(".venv-zarr3")
        .join("bin")
        .join("python")
}

/// The default interpreter: the project's venv, `<repo>/.venv/bin/python`.
pub fn default_python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(".venv")
        .join("bin")
        .join("python")
}

/// The peers' versions (`{"tensorstore": "0.1.86", "z5py": ..., "numpy":
/// ..., "python": ...}`, null for a peer that does not import), or why the
/// script could not run at all.
pub fn versions(python: &Path, script: &Path) -> Result<Value, String> {
    let out = Command::new(python)
        .arg(script)
        .arg("--versions")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).map_err(|_| {
        format!(
            "{} {} --versions failed ({}): {}",
            python.display(),
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// Runs one peer measurement in a fresh Python process: `python` runs
/// peers_zarr3.py for zarr-python 3, peers.py for the others.
pub fn run(python: &Path, job: &Job) -> Outcome {
    let script = match job.imp {
        Impl::ZarrPython => script_zarr3(),
        _ => script(),
    };
    match Command::new(python)
        .arg(script)
        .arg(job.to_json().to_string())
        .output()
    {
        Ok(out) => Outcome::from_output(&out),
        Err(e) => Outcome::Failed(format!("cannot run {}: {e}", python.display())),
    }
}
