//! Owns the S3 server: SeaweedFS (`weed mini`) on loopback, signed (it
//! checks SigV4 signatures against the credentials it was started with) or
//! anonymous, with every port chosen by testkit, and bucket creation and
//! signed requests through testkit's own client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::bins::{find_binary, Binary};
use crate::client::{Request, Response};
use crate::process::{free_ports, ServerProcess, TempDir};
use crate::{sigv4, Error};

/// Whether a SeaweedFS checks signatures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum S3Mode {
    /// Started with `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` in its
    /// environment: it accepts only requests signed (SigV4) with them, and
    /// answers others 403 (`AccessDenied`, or `SignatureDoesNotMatch` for a
    /// wrong signature).
    Signed,
    /// Started without credentials: it accepts unsigned requests.
    Anonymous,
}

/// An access key pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id (`AWS_ACCESS_KEY_ID`).
    pub access_key_id: String,
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`).
    pub secret_access_key: String,
}

impl Credentials {
    /// Signs `req` with these credentials as [`S3Server::sign`] does,
    /// setting `Host` to `addr` unless present: with wrong credentials, to
    /// check that a server rejects them.
    pub fn sign(&self, req: &mut Request, addr: SocketAddr) {
        if req.get_header("host").is_none() {
            req.headers.insert(0, ("Host".into(), addr.to_string()));
        }
        sigv4::sign(
            req,
            &self.access_key_id,
            &self.secret_access_key,
            REGION,
            SystemTime::now(),
        );
    }
}

/// A SeaweedFS S3 server on 127.0.0.1, stopped (and its data removed) on
/// drop. Path-style addressing: `http://127.0.0.1:PORT/BUCKET/KEY`.
pub struct S3Server {
    addr: SocketAddr,
    master: SocketAddr,
    volume: SocketAddr,
    mode: S3Mode,
    credentials: Option<Credentials>,
    // Declared last: stopped after the fields above are of no use.
    process: ServerProcess,
}

/// The region testkit signs for; SeaweedFS accepts any.
const REGION: &str = "us-east-1";
/// How long a start may take before it is an error.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// SeaweedFS's named services with a gRPC port, in the order of `ports`.
const SERVICES: [&str; 6] = ["master", "volume", "filer", "s3", "webdav", "admin"];

impl S3Server {
    /// The size at which SeaweedFS closes a volume to writes (its
    /// `-master.volumeSizeLimitMB`) and grows another.
    pub const VOLUME_SIZE_LIMIT: u64 = 64 << 20;

    /// Starts a SeaweedFS in a fresh temp dir and waits (at most 60 s) until
    /// its S3 API creates a bucket and stores and reads an object. Retries
    /// twice with other ports when one was taken in the meantime.
    pub fn start(mode: S3Mode) -> Result<S3Server, Error> {
        let weed = find_binary(Binary::Weed)?;
        let mut last = None;
        for _ in 0..3 {
            match Self::start_once(&weed, mode) {
                Ok(s) => return Ok(s),
                Err(Error::Failed(m))
                    if m.contains("not available") || m.contains("address already in use") =>
                {
                    last = Some(Error::Failed(m));
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Failed("SeaweedFS did not start".into())))
    }

    fn start_once(weed: &std::path::Path, mode: S3Mode) -> Result<S3Server, Error> {
        let dir = TempDir::new().map_err(|e| Error::Failed(format!("SeaweedFS: {e}")))?;
        // HTTP ports p with p + 10000 free too: SeaweedFS derives a service's
        // gRPC address from its HTTP port that way in places, so the gRPC
        // port is set to exactly that.
        let ports = free_ports(SERVICES.len(), Some(10_000))
            .map_err(|e| Error::Failed(format!("SeaweedFS: {e}")))?;
        let grpc = |i: usize| ports[i] + 10_000;
        // SeaweedFS puts its gRPC unix sockets in /tmp whatever TMPDIR says.
        let sockets: Vec<PathBuf> = SERVICES
            .iter()
            .enumerate()
            .map(|(i, s)| PathBuf::from(format!("/tmp/seaweedfs-{s}-grpc-{}.sock", grpc(i))))
            .collect();
        dir.also_remove(&sockets)
            .map_err(|e| Error::Failed(format!("SeaweedFS: {e}")))?;
        let d = dir.path();
        for sub in ["data", "logs", "config"] {
            std::fs::create_dir(d.join(sub))
                .map_err(|e| Error::Failed(format!("SeaweedFS: {e}")))?;
        }
        let mut cmd = ServerProcess::command(weed, &dir);
        // Global flags first: logs in the temp dir, and an empty directory
        // searched first for security.toml and the like.
        cmd.arg(format!("-logdir={}", d.join("logs").display()))
            .arg(format!("-config_dir={}", d.join("config").display()))
            .arg("mini")
            .arg(format!("-dir={}", d.join("data").display()))
            // The default -ip is the host's address: loopback only.
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            // No reports to the project's public telemetry address.
            .arg("-master.telemetry=false")
            .args([
                "-admin.ui=false",
                "-webdav=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
            ])
            .arg("-volume.preStopSeconds=0")
            // Each bucket is a collection with volumes of its own. Left to
            // itself, mini sizes volumes from the disk (up to 1 GiB) and
            // allows free space / size of them: about 65 buckets on a 70 GB
            // disk, after which PUTs fail with 500 InternalError ("no free
            // volumes"). Volumes are sparse files, so many small ones cost
            // nothing until written.
            .arg(format!(
                "-master.volumeSizeLimitMB={}",
                Self::VOLUME_SIZE_LIMIT >> 20
            ))
            .arg("-volume.max=2000")
            // As S3 does: a PUT into a missing bucket is NoSuchBucket (not a
            // new bucket), deleting a bucket with objects is BucketNotEmpty.
            .args([
                "-s3.autoCreateBucket=false",
                "-s3.allowDeleteBucketNotEmpty=false",
            ])
            .arg(format!(
                "-filer.localSocket={}",
                d.join("filer.sock").display()
            ))
            .arg(format!("-s3.localSocket={}", d.join("s3.sock").display()));
        for (i, service) in SERVICES.iter().enumerate() {
            cmd.arg(format!("-{service}.port={}", ports[i]));
            if *service != "webdav" {
                cmd.arg(format!("-{service}.port.grpc={}", grpc(i)));
            }
        }
        let credentials = match mode {
            S3Mode::Signed => {
                let c = Credentials {
                    access_key_id: "N5TESTKITACCESSKEY".into(),
                    secret_access_key: format!("n5-testkit-secret-{}", std::process::id()),
                };
                cmd.env("AWS_ACCESS_KEY_ID", &c.access_key_id)
                    .env("AWS_SECRET_ACCESS_KEY", &c.secret_access_key);
                Some(c)
            }
            S3Mode::Anonymous => None,
        };
        let process = ServerProcess::spawn("SeaweedFS", cmd, dir, Duration::from_secs(8))?;
        let server = S3Server {
            addr: SocketAddr::from(([127, 0, 0, 1], ports[3])),
            master: SocketAddr::from(([127, 0, 0, 1], ports[0])),
            volume: SocketAddr::from(([127, 0, 0, 1], ports[1])),
            mode,
            credentials,
            process,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&self) -> Result<(), Error> {
        let bucket = "n5-testkit-ready";
        let probe = || -> Result<(), String> {
            let get = |r: Request| self.send(r).map_err(|e| e.to_string());
            // The S3 port answers at all...
            get(Request::new("GET", "/"))?;
            // ...and the whole stack (master, volume, filer) stores and reads.
            let r = get(Request::new("PUT", &format!("/{bucket}")))?;
            if r.status != 200 && r.status != 409 {
                return Err(format!("PUT /{bucket}: {} {}", r.status, r.text()));
            }
            let r = get(Request::new("PUT", &format!("/{bucket}/probe")).body("ready"))?;
            if r.status != 200 {
                return Err(format!("PUT /{bucket}/probe: {} {}", r.status, r.text()));
            }
            let r = get(Request::new("GET", &format!("/{bucket}/probe")))?;
            if r.status != 200 || r.body != b"ready" {
                return Err(format!("GET /{bucket}/probe: {} {}", r.status, r.text()));
            }
            get(Request::new("DELETE", &format!("/{bucket}/probe")))?;
            get(Request::new("DELETE", &format!("/{bucket}")))?;
            Ok(())
        };
        self.process.wait_ready(START_TIMEOUT, probe)
    }

    pub(crate) fn process(&self) -> &ServerProcess {
        &self.process
    }

    /// The S3 API's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The master's HTTP address: volume administration
    /// (`/vol/status`, `/vol/grow?collection=BUCKET&count=N`; each bucket
    /// is a collection of volumes of its own), unsigned.
    pub fn master_addr(&self) -> SocketAddr {
        self.master
    }

    /// The volume server's HTTP address: its `/status` lists every volume
    /// with its size as it is now (the master's `/vol/status` has the sizes
    /// of the last heartbeat, seconds old), unsigned.
    pub fn volume_addr(&self) -> SocketAddr {
        self.volume
    }

    /// The endpoint URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Signed or anonymous.
    pub fn mode(&self) -> S3Mode {
        self.mode
    }

    /// The credentials it accepts (signed mode), `None` when anonymous.
    pub fn credentials(&self) -> Option<&Credentials> {
        self.credentials.as_ref()
    }

    /// The region to sign for (`us-east-1`; SeaweedFS accepts any).
    pub fn region(&self) -> &str {
        REGION
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The last `lines` lines of its output, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }

    /// Signs `req` with this server's credentials (SigV4, signed payload,
    /// every header present), setting `Host` to the server's address first
    /// unless present. Does nothing in anonymous mode.
    pub fn sign(&self, req: &mut Request) {
        if let Some(c) = &self.credentials {
            c.sign(req, self.addr);
        }
    }

    /// Signs `req` (see [`S3Server::sign`]) and sends it to the server.
    pub fn send(&self, mut req: Request) -> std::io::Result<Response> {
        self.sign(&mut req);
        req.send(self.addr)
    }

    /// Creates bucket `name` (a signed or anonymous `PUT /name`).
    pub fn create_bucket(&self, name: &str) -> Result<(), Error> {
        let r = self
            .send(Request::new("PUT", &format!("/{name}")))
            .map_err(|e| self.process.failure(format!("PUT /{name}: {e}")))?;
        match r.status {
            200 => Ok(()),
            status => Err(Error::Failed(format!(
                "SeaweedFS: creating bucket {name}: {status} {}",
                r.text()
            ))),
        }
    }

    /// Creates a bucket with a name of its own, `<prefix>-<pid>-<n>`
    /// (lowercased, other characters than letters, digits and `-` made `-`),
    /// and returns the name.
    pub fn unique_bucket(&self, prefix: &str) -> Result<String, Error> {
        let name = unique_name(prefix);
        self.create_bucket(&name)?;
        Ok(name)
    }
}

/// `<prefix>-<pid>-<n>`, a valid bucket name for S3 and GCS (3 to 63
/// characters).
pub(crate) fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut p: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    p = p.trim_matches('-').to_string();
    if p.is_empty() {
        p = "t".into();
    }
    let suffix = format!(
        "-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    p.truncate(63 - suffix.len());
    format!("{}{suffix}", p.trim_end_matches('-'))
}
