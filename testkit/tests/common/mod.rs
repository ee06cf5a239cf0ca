//! Owns what testkit's own tests share: a raw blocking HTTP/1.1 client on a
//! std TcpStream that reports exactly how a response ended (complete,
//! closed, reset, cut short, timed out), written apart from testkit's
//! parser so the two check each other, and a tiny upstream server.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A response as read, however far it got.
#[derive(Debug, Default)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// How reading a response went wrong.
#[derive(Debug)]
pub enum Failure {
    /// The connection ended (FIN) before a status line.
    Closed,
    /// The connection was reset; `head` when the head had arrived.
    Reset { head: Option<Resp> },
    /// FIN after the head, before the announced length; the partial body.
    Short { resp: Resp, expected: u64 },
    /// A read timed out; what had arrived.
    Timeout { head: Option<Resp> },
    /// Anything else.
    Other(String),
}

pub struct Raw {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

fn classify(e: io::Error, head: Option<Resp>) -> Failure {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => Failure::Reset { head },
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Failure::Timeout { head },
        _ => Failure::Other(e.to_string()),
    }
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        Self::connect_timeout(addr, Duration::from_secs(20))
    }

    pub fn connect_timeout(addr: SocketAddr, read_timeout: Duration) -> Raw {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        stream.set_read_timeout(Some(read_timeout)).unwrap();
        stream
            .set_write_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Raw { stream, reader }
    }

    pub fn set_read_timeout(&self, t: Duration) {
        self.stream.set_read_timeout(Some(t)).unwrap();
    }

    /// Sends a request with a Host header and, when there is a body or the
    /// method usually has one, a Content-Length.
    pub fn send(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut out = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\n",
            self.stream.peer_addr()?
        );
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        let has_framing = headers.iter().any(|(n, _)| {
            n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
        });
        if !has_framing && (!body.is_empty() || method == "PUT" || method == "POST") {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.write_all(&bytes)
    }

    fn line(&mut self) -> io::Result<Option<String>> {
        let mut buf = Vec::new();
        let n = self.reader.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            return Ok(None);
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
    }

    /// Reads one response to a request with `method`; `max_body` bounds a
    /// close-delimited body (read up to it, then stop).
    pub fn response(&mut self, method: &str, max_body: u64) -> Result<Resp, Failure> {
        let mut resp = Resp::default();
        let status_line = loop {
            match self.line() {
                Ok(Some(l)) => {
                    let status: u16 = l
                        .split(' ')
                        .nth(1)
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    if (100..200).contains(&status) {
                        // Interim response: skip its (empty) head.
                        while let Ok(Some(h)) = self.line() {
                            if h.is_empty() {
                                break;
                            }
                        }
                        continue;
                    }
                    break l;
                }
                Ok(None) => return Err(Failure::Closed),
                Err(e) => return Err(classify(e, None)),
            }
        };
        resp.status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Failure::Other(format!("status line {status_line:?}")))?;
        loop {
            match self.line() {
                Ok(Some(l)) if l.is_empty() => break,
                Ok(Some(l)) => {
                    let (n, v) = l
                        .split_once(':')
                        .ok_or_else(|| Failure::Other(format!("header {l:?}")))?;
                    resp.headers
                        .push((n.trim().to_string(), v.trim().to_string()));
                }
                Ok(None) => return Err(Failure::Closed),
                Err(e) => return Err(classify(e, None)),
            }
        }
        if method == "HEAD" || resp.status == 204 || resp.status == 304 {
            return Ok(resp);
        }
        let chunked = resp
            .header("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
        let length: Option<u64> = resp.header("content-length").and_then(|v| v.parse().ok());
        if chunked {
            loop {
                let size = match self.line() {
                    Ok(Some(l)) => {
                        u64::from_str_radix(l.split(';').next().unwrap_or("").trim(), 16)
                            .map_err(|_| Failure::Other(format!("chunk size {l:?}")))?
                    }
                    Ok(None) => {
                        return Err(Failure::Short {
                            resp,
                            expected: u64::MAX,
                        })
                    }
                    Err(e) => return Err(classify(e, Some(resp))),
                };
                if size == 0 {
                    while let Ok(Some(l)) = self.line() {
                        if l.is_empty() {
                            break;
                        }
                    }
                    return Ok(resp);
                }
                let mut chunk = vec![0; size as usize];
                if let Err(e) = self.reader.read_exact(&mut chunk) {
                    return Err(classify(e, Some(resp)));
                }
                resp.body.extend_from_slice(&chunk);
                let _ = self.line();
            }
        }
        let limit = length.unwrap_or(max_body);
        let mut buf = [0u8; 64 * 1024];
        while (resp.body.len() as u64) < limit {
            let want = buf.len().min((limit - resp.body.len() as u64) as usize);
            match self.reader.read(&mut buf[..want]) {
                Ok(0) => {
                    return match length {
                        Some(expected) => Err(Failure::Short { resp, expected }),
                        None => Ok(resp),
                    }
                }
                Ok(n) => resp.body.extend_from_slice(&buf[..n]),
                Err(e) => return Err(classify(e, Some(resp))),
            }
        }
        Ok(resp)
    }

    /// Sends and reads the response, panicking on any failure.
    pub fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        self.send(method, target, headers, body).expect("send");
        self.response(method, 64 << 20)
            .unwrap_or_else(|f| panic!("{method} {target}: {f:?}"))
    }

    /// Whether the peer has closed the connection (a read sees EOF or reset
    /// within `wait`).
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let mut b = [0u8; 1];
        match self.reader.read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
        }
    }
}

/// One request to `addr` on a fresh connection.
pub fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    Raw::connect(addr).request(method, target, headers, body)
}

/// The object the tiny upstream serves at `/obj`: bytes 0, 1, ... 255, 0...
pub fn object(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

pub const OBJECT_LEN: usize = 100_000;

/// A tiny upstream on 127.0.0.1 (one request per connection, then close):
/// - `GET|HEAD /obj...`: OBJECT_LEN bytes, honouring `Range: bytes=a-b`;
/// - `GET /chunked`: a chunked body `hello chunked world`;
/// - `GET /close`: a close-delimited body `until close`;
/// - `GET /empty`: 204;
/// - `GET /redirect-target`: 200 `target`;
/// - `PUT|POST ...`: 200 with the body `got N bytes`;
/// - anything else: 404.
///
/// Returns its address and the number of requests it has seen.
pub fn tiny_upstream() -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let _ = serve_one(stream, &s);
            });
        }
    });
    (addr, seen)
}

fn serve_one(stream: TcpStream, seen: &AtomicU64) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut w = stream;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut length = 0usize;
    let mut range = None;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':').unwrap_or((h, ""));
        match n.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = v.trim().parse().unwrap_or(0),
            "range" => range = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    seen.fetch_add(1, Ordering::SeqCst);
    let head_only = method == "HEAD";
    let reply = |w: &mut TcpStream, status: &str, headers: &str, body: &[u8]| -> io::Result<()> {
        let mut out = format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        if !head_only {
            out.extend_from_slice(body);
        }
        w.write_all(&out)
    };
    match (method.as_str(), target.as_str()) {
        ("GET" | "HEAD", t) if t.starts_with("/obj") => {
            let obj = object(OBJECT_LEN);
            if let Some(r) = range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
                let (a, b) = r.split_once('-').unwrap();
                let (a, b): (usize, usize) = if a.is_empty() {
                    let n: usize = b.parse().unwrap();
                    (OBJECT_LEN - n.min(OBJECT_LEN), OBJECT_LEN - 1)
                } else {
                    (a.parse().unwrap(), if b.is_empty() { OBJECT_LEN - 1 } else { b.parse::<usize>().unwrap().min(OBJECT_LEN - 1) })
                };
                if a >= OBJECT_LEN {
                    return reply(&mut w, "416 Range Not Satisfiable", &format!("Content-Range: bytes */{OBJECT_LEN}\r\n"), b"");
                }
                let cr = format!("Content-Range: bytes {a}-{b}/{OBJECT_LEN}\r\n");
                reply(&mut w, "206 Partial Content", &cr, &obj[a..=b])
            } else {
                reply(&mut w, "200 OK", "ETag: \"obj\"\r\n", &obj)
            }
        }
        ("GET", "/chunked") => w.write_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n6\r\nhello \r\n8\r\nchunked \r\n5\r\nworld\r\n0\r\n\r\n",
        ),
        ("GET", "/close") => {
            w.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close")?;
            w.shutdown(std::net::Shutdown::Write)
        }
        ("GET", "/empty") => w.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"),
        ("GET", "/redirect-target") => reply(&mut w, "200 OK", "", b"target"),
        ("PUT" | "POST", _) => reply(&mut w, "200 OK", "", format!("got {} bytes", body.len()).as_bytes()),
        _ => reply(&mut w, "404 Not Found", "", b"no such thing"),
    }
}
