//! Owns the GCS server: fake-gcs-server on loopback (GCS JSON API, in-memory
//! backend, no authentication), with the upload URLs it returns pointing at
//! its own loopback address, and bucket creation.

use std::net::SocketAddr;
use std::time::Duration;

use crate::bins::{find_binary, Binary};
use crate::client::{Request, Response};
use crate::process::{free_port, ServerProcess, TempDir};
use crate::s3::unique_name;
use crate::Error;

/// A fake-gcs-server on 127.0.0.1, stopped on drop. JSON API at
/// `http://127.0.0.1:PORT/storage/v1/...`, uploads at
/// `http://127.0.0.1:PORT/upload/storage/v1/...`; it accepts any or no
/// `Authorization` header.
pub struct GcsServer {
    addr: SocketAddr,
    process: ServerProcess,
}

impl GcsServer {
    /// Starts a fake-gcs-server (memory backend) and waits, at most 30 s,
    /// until it lists buckets. Retries twice on another port when its port
    /// was taken in the meantime.
    pub fn start() -> Result<GcsServer, Error> {
        let bin = find_binary(Binary::FakeGcsServer)?;
        let mut last = None;
        for _ in 0..3 {
            let dir = TempDir::new().map_err(|e| Error::Failed(format!("fake-gcs-server: {e}")))?;
            let port = free_port();
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let mut cmd = ServerProcess::command(&bin, &dir);
            cmd.args([
                "-scheme",
                "http",
                "-host",
                "127.0.0.1",
                "-port",
                &port.to_string(),
                "-backend",
                "memory",
            ])
            // Upload URLs (Location of resumable uploads) and the
            // objects' selfLink/mediaLink name this address.
            .args([
                "-public-host",
                &addr.to_string(),
                "-external-url",
                &format!("http://{addr}"),
            ])
            // A data directory that does not exist: nothing preloaded.
            .args([
                "-data",
                &dir.path().join("no-preload").display().to_string(),
            ])
            .args(["-log-level", "info"]);
            let process =
                ServerProcess::spawn("fake-gcs-server", cmd, dir, Duration::from_secs(5))?;
            let server = GcsServer { addr, process };
            let ready = server.process.wait_ready(Duration::from_secs(30), || {
                let r = Request::new("GET", "/storage/v1/b")
                    .send(addr)
                    .map_err(|e| e.to_string())?;
                if r.status == 200 {
                    Ok(())
                } else {
                    Err(format!("GET /storage/v1/b: {} {}", r.status, r.text()))
                }
            });
            match ready {
                Ok(()) => return Ok(server),
                Err(Error::Failed(m)) if m.contains("address already in use") => {
                    last = Some(Error::Failed(m))
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Failed("fake-gcs-server did not start".into())))
    }

    pub(crate) fn process(&self) -> &ServerProcess {
        &self.process
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The last `lines` lines of its output (one line per request).
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }

    /// Sends `req` to the server.
    pub fn send(&self, req: Request) -> std::io::Result<Response> {
        req.send(self.addr)
    }

    /// Creates bucket `name` (`POST /storage/v1/b` with `{"name": ...}`).
    pub fn create_bucket(&self, name: &str) -> Result<(), Error> {
        let body = format!("{{\"name\":\"{name}\"}}");
        let r = self
            .send(
                Request::new("POST", "/storage/v1/b")
                    .header("Content-Type", "application/json")
                    .body(body),
            )
            .map_err(|e| self.process.failure(format!("POST /storage/v1/b: {e}")))?;
        match r.status {
            200 => Ok(()),
            status => Err(Error::Failed(format!(
                "fake-gcs-server: creating bucket {name}: {status} {}",
                r.text()
            ))),
        }
    }

    /// Creates a bucket with a name of its own, `<prefix>-<pid>-<n>`, and
    /// returns the name.
    pub fn unique_bucket(&self, prefix: &str) -> Result<String, Error> {
        let name = unique_name(prefix);
        self.create_bucket(&name)?;
        Ok(name)
    }
}
