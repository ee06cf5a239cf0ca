//! Owns the static HTTP and HTTPS servers: nginx run as the current user
//! with a generated configuration (single process, everything in a temp
//! dir, listening on 127.0.0.1 only), the CA and server certificate of the
//! HTTPS one (rcgen), and the sites mounted into the shared servers.

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::bins::{find_binary, Binary};
use crate::client::Request;
use crate::process::{free_port, ServerProcess, TempDir};
use crate::Error;

/// Plain HTTP or HTTPS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`
    Http,
    /// `https://`, with a certificate for 127.0.0.1 and localhost signed by
    /// a CA made for the server ([`HttpServer::ca_pem`]).
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// nginx serving a directory on 127.0.0.1 (GET and HEAD, Range requests,
/// ETag and Last-Modified with conditional requests, keep-alive), stopped
/// on drop.
pub struct HttpServer {
    addr: SocketAddr,
    scheme: Scheme,
    root: PathBuf,
    ca_pem: Option<PathBuf>,
    next_site: AtomicU64,
    process: ServerProcess,
}

impl HttpServer {
    /// Starts nginx serving the files under `root` (which must exist) and
    /// waits, at most 30 s, until it answers.
    pub fn start(root: &Path, scheme: Scheme) -> Result<HttpServer, Error> {
        let root = root
            .canonicalize()
            .map_err(|e| Error::Failed(format!("nginx: document root {}: {e}", root.display())))?;
        Self::start_in(Some(root), scheme)
    }

    /// A server for [`crate::http`] and [`crate::https`]: its root is an
    /// empty directory of its own, where sites are mounted.
    pub(crate) fn start_shared(scheme: Scheme) -> Result<HttpServer, Error> {
        Self::start_in(None, scheme)
    }

    fn start_in(root: Option<PathBuf>, scheme: Scheme) -> Result<HttpServer, Error> {
        let nginx = find_binary(Binary::Nginx)?;
        let mut last = None;
        for _ in 0..3 {
            match Self::start_once(&nginx, root.clone(), scheme) {
                Ok(s) => return Ok(s),
                Err(Error::Failed(m)) if m.contains("Address already in use") => {
                    last = Some(Error::Failed(m))
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Failed("nginx did not start".into())))
    }

    fn start_once(
        nginx: &Path,
        root: Option<PathBuf>,
        scheme: Scheme,
    ) -> Result<HttpServer, Error> {
        let fail = |e: &dyn std::fmt::Display| Error::Failed(format!("nginx: {e}"));
        let dir = TempDir::new().map_err(|e| fail(&e))?;
        let d = dir.path().to_path_buf();
        let root = match root {
            Some(r) => r,
            None => {
                let sites = d.join("sites");
                std::fs::create_dir(&sites).map_err(|e| fail(&e))?;
                sites
            }
        };
        std::fs::create_dir(d.join("tmp")).map_err(|e| fail(&e))?;
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let (listen, ca_pem) = match scheme {
            Scheme::Http => (format!("listen 127.0.0.1:{port};"), None),
            Scheme::Https => {
                let ca = write_certificates(&d).map_err(|e| fail(&e))?;
                let tls = format!(
                    "listen 127.0.0.1:{port} ssl;\n        ssl_certificate {};\n        ssl_certificate_key {};\n        \
                     ssl_protocols TLSv1.2 TLSv1.3;",
                    d.join("server.pem").display(),
                    d.join("server.key").display()
                );
                (tls, Some(ca))
            }
        };
        let conf = config(&d, &root, &listen);
        std::fs::write(d.join("nginx.conf"), conf).map_err(|e| fail(&e))?;
        let mut cmd = ServerProcess::command(nginx, &dir);
        cmd.arg("-p")
            .arg(&d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .args(["-e", "stderr"]);
        let process = ServerProcess::spawn("nginx", cmd, dir, Duration::from_secs(5))?;
        let server = HttpServer {
            addr,
            scheme,
            root,
            ca_pem,
            next_site: AtomicU64::new(0),
            process,
        };
        server
            .process
            .wait_ready(Duration::from_secs(30), || match scheme {
                // Any answer will do (the root may well be a 404).
                Scheme::Http => Request::new("HEAD", "/")
                    .send(addr)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Scheme::Https => TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            })?;
        Ok(server)
    }

    pub(crate) fn process(&self) -> &ServerProcess {
        &self.process
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// HTTP or HTTPS.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The URL of the document root, `http://127.0.0.1:PORT/` or
    /// `https://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("{}://{}/", self.scheme.as_str(), self.addr)
    }

    /// The directory it serves.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// HTTPS: the PEM file of the CA that signed the server's certificate,
    /// for `SSL_CERT_FILE` in a child process that should trust it.
    pub fn ca_pem(&self) -> Option<&Path> {
        self.ca_pem.as_deref()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The last `lines` lines of its error log.
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }

    /// Mounts `dir` at `/site-<n>/` of a shared server's root (a symlink).
    pub(crate) fn mount(&self, dir: &Path) -> Result<Site, Error> {
        let target = dir
            .canonicalize()
            .map_err(|e| Error::Failed(format!("serving {}: {e}", dir.display())))?;
        let name = format!("site-{}", self.next_site.fetch_add(1, Ordering::Relaxed));
        let link = self.root.join(&name);
        std::os::unix::fs::symlink(&target, &link).map_err(|e| {
            Error::Failed(format!(
                "linking {} to {}: {e}",
                link.display(),
                target.display()
            ))
        })?;
        Ok(Site {
            url: format!("{}{name}/", self.url()),
            addr: self.addr,
            link,
            ca_pem: self.ca_pem.clone(),
        })
    }
}

/// A directory served by the process-wide nginx ([`crate::http`],
/// [`crate::https`]) until dropped.
#[derive(Debug)]
pub struct Site {
    url: String,
    addr: SocketAddr,
    link: PathBuf,
    ca_pem: Option<PathBuf>,
}

impl Site {
    /// The URL of the directory, ending with `/`:
    /// `http://127.0.0.1:PORT/site-N/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of `path` (relative, no leading `/`) in the directory.
    pub fn url_for(&self, path: &str) -> String {
        format!("{}{}", self.url, path.trim_start_matches('/'))
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The request path of the directory, `/site-N/`.
    pub fn path(&self) -> String {
        let name = self
            .link
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("/{name}/")
    }

    /// HTTPS: the CA's PEM file (see [`HttpServer::ca_pem`]).
    pub fn ca_pem(&self) -> Option<&Path> {
        self.ca_pem.as_deref()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.link);
    }
}

fn config(d: &Path, root: &Path, listen: &str) -> String {
    let mut c = String::new();
    let p = |name: &str| d.join(name).display().to_string();
    // Single process, no privilege change, nothing outside the temp dir.
    let _ = writeln!(c, "daemon off;\nmaster_process off;\nworker_processes 1;");
    let _ = writeln!(c, "pid {};\nerror_log stderr notice;", p("nginx.pid"));
    let _ = writeln!(c, "events {{ worker_connections 1024; }}");
    let _ = writeln!(c, "http {{");
    let _ = writeln!(c, "    access_log {};", p("access.log"));
    for (directive, sub) in [
        ("client_body_temp_path", "tmp/body"),
        ("proxy_temp_path", "tmp/proxy"),
        ("fastcgi_temp_path", "tmp/fastcgi"),
        ("uwsgi_temp_path", "tmp/uwsgi"),
        ("scgi_temp_path", "tmp/scgi"),
    ] {
        let _ = writeln!(c, "    {directive} {};", p(sub));
    }
    let _ = writeln!(
        c,
        "    types {{ text/html html; text/plain txt; application/json json; }}\n    \
         default_type application/octet-stream;\n    \
         sendfile on;\n    tcp_nodelay on;\n    keepalive_timeout 75s;\n    keepalive_requests 1000000;"
    );
    let _ = writeln!(
        c,
        "    server {{\n        {listen}\n        server_name localhost 127.0.0.1;"
    );
    let _ = writeln!(
        c,
        "        root {};\n        location / {{ }}\n    }}\n}}",
        root.display()
    );
    c
}

/// Writes `ca.pem` (a fresh CA), `server.pem` and `server.key` (its
/// certificate for 127.0.0.1 and localhost) into `dir`; returns the CA's path.
fn write_certificates(dir: &Path) -> Result<PathBuf, String> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let e = |e: rcgen::Error| format!("generating certificates: {e}");
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "n5-testkit CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(e)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(e)?;
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    let leaf_key = KeyPair::generate().map_err(e)?;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(e)?;

    let write = |name: &str, text: String| {
        std::fs::write(dir.join(name), text).map_err(|err| format!("writing {name}: {err}"))
    };
    write("ca.pem", ca_cert.pem())?;
    write("server.pem", leaf_cert.pem())?;
    write("server.key", leaf_key.serialize_pem())?;
    Ok(dir.join("ca.pem"))
}
