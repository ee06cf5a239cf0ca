//! The peers (tensorstore, z5py): finding the Python interpreter, asking
//! bench/peers.py for their versions and running one measurement per Python
//! process. What the script times is described in its docstring.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::workload::{Job, Outcome};

/// bench/peers.py, next to this crate's manifest.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers.py")
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
pub fn versions(python: &Path) -> Result<Value, String> {
    let out = Command::new(python)
        .arg(script())
        .arg("--versions")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).map_err(|_| {
        format!(
            "{} {} --versions failed ({}): {}",
            python.display(),
            script().display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// Runs one peer measurement in a fresh Python process.
pub fn run(python: &Path, job: &Job) -> Outcome {
    match Command::new(python)
        .arg(script())
        .arg(job.to_json().to_string())
        .output()
    {
        Ok(out) => Outcome::from_output(&out),
        Err(e) => Outcome::Failed(format!("cannot run {}: {e}", python.display())),
    }
}
