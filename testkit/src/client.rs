//! Owns testkit's minimal blocking HTTP/1.1 client: one request per
//! connection (`Connection: close`), for creating buckets, probing servers
//! and setting up or checking objects in tests without an HTTP client crate.
//! Only plain HTTP; the HTTPS nginx is for the library's own client.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::wire::{self, Head};

/// An HTTP request to send with [`Request::send`].
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The request target: path and query, e.g. `/bucket/key?list-type=2`,
    /// sent as given (percent-encode it yourself).
    pub target: String,
    /// Headers in order; `Host`, `Content-Length` and `Connection` are added
    /// when sent unless present.
    pub headers: Vec<(String, String)>,
    /// The body (sent with a Content-Length).
    pub body: Vec<u8>,
}

impl Request {
    /// A request without headers or body.
    pub fn new(method: &str, target: &str) -> Request {
        Request {
            method: method.to_string(),
            target: target.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// The first value of header `name` (case-insensitive).
    pub fn get_header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Sends the request to `addr` on a new connection and reads the whole
    /// response, with a 30 s timeout on each read and write.
    pub fn send(&self, addr: SocketAddr) -> std::io::Result<Response> {
        self.send_timeout(addr, Duration::from_secs(30))
    }

    /// [`Request::send`] with a timeout of choice on each read and write
    /// (and on connecting).
    pub fn send_timeout(&self, addr: SocketAddr, timeout: Duration) -> std::io::Result<Response> {
        let mut head = Head::new(format!("{} {} HTTP/1.1", self.method, self.target));
        head.headers = self.headers.clone();
        if head.get("host").is_none() {
            head.headers.insert(0, ("Host".into(), addr.to_string()));
        }
        let sends_length =
            !self.body.is_empty() || matches!(self.method.as_str(), "PUT" | "POST" | "PATCH");
        if head.get("content-length").is_none()
            && head.get("transfer-encoding").is_none()
            && sends_length
        {
            head.set("Content-Length", self.body.len().to_string());
        }
        if head.get("connection").is_none() {
            head.set("Connection", "close");
        }
        let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        let mut out = head.to_bytes();
        out.extend_from_slice(&self.body);
        stream.write_all(&out)?;
        let mut reader = BufReader::new(stream);
        loop {
            let head = wire::read_head(&mut reader)?.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "connection closed before any response",
                )
            })?;
            let status = head.status();
            if status == 0 {
                return Err(wire::invalid(format!("bad status line {:?}", head.line)));
            }
            // Interim responses (100 Continue) come before the real one.
            if (100..200).contains(&status) {
                continue;
            }
            let framing = wire::response_framing(&self.method, &head)?;
            let body = wire::read_body(&mut reader, framing)?;
            return Ok(Response {
                status,
                headers: head.headers,
                body,
            });
        }
    }
}

/// A response read by [`Request::send`].
#[derive(Clone, Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers in order, as received.
    pub headers: Vec<(String, String)>,
    /// The decoded body (chunks joined).
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}
