//! Owns HTTP/1.1 framing as testkit's client and proxy need it: reading a
//! request or response head, finding how its body is delimited
//! (Content-Length, chunked, until close, none), reading that body, and
//! writing a head back out.

use std::io::{self, BufRead, Read};

/// The largest head accepted (request or status line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// The largest body read into memory.
pub(crate) const MAX_BODY: u64 = 1 << 30;

/// A request or status line and its headers, in order and as received.
#[derive(Clone, Debug)]
pub(crate) struct Head {
    pub(crate) line: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl Head {
    pub(crate) fn new(line: impl Into<String>) -> Head {
        Head {
            line: line.into(),
            headers: Vec::new(),
        }
    }

    /// The first value of header `name` (case-insensitive).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether a comma-separated header `name` lists `token`.
    pub(crate) fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    pub(crate) fn remove(&mut self, name: &str) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }

    /// Replaces every header `name` with one of value `value`.
    pub(crate) fn set(&mut self, name: &str, value: impl Into<String>) {
        self.remove(name);
        self.headers.push((name.to_string(), value.into()));
    }

    /// The status of a response head (0 when the line is not one).
    pub(crate) fn status(&self) -> u16 {
        let mut parts = self.line.split(' ');
        match (parts.next(), parts.next()) {
            (Some(v), Some(code)) if v.starts_with("HTTP/") => code.parse().unwrap_or(0),
            _ => 0,
        }
    }

    /// The method and target of a request head.
    pub(crate) fn method_target(&self) -> (&str, &str) {
        let mut parts = self.line.split(' ');
        (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
    }

    /// The Content-Length header, if present and valid.
    pub(crate) fn content_length(&self) -> io::Result<Option<u64>> {
        let mut found: Option<u64> = None;
        for (n, v) in &self.headers {
            if n.eq_ignore_ascii_case("content-length") {
                let v = v.trim();
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid(format!("bad Content-Length {v:?}")));
                }
                let len: u64 = v
                    .parse()
                    .map_err(|_| invalid(format!("bad Content-Length {v:?}")))?;
                if found.is_some_and(|f| f != len) {
                    return Err(invalid("conflicting Content-Length headers"));
                }
                found = Some(len);
            }
        }
        Ok(found)
    }

    /// The head as sent on the wire, with the blank line that ends it.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(self.line.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (n, v) in &self.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

pub(crate) fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn read_line(r: &mut impl BufRead, budget: &mut usize) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = r.take(*budget as u64 + 1).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if n > *budget {
        return Err(invalid("HTTP head too large"));
    }
    *budget -= n;
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed in the middle of an HTTP head",
        ));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| invalid("HTTP head is not UTF-8"))
}

/// Reads a head; `None` when the connection ends cleanly before its first
/// byte (a keep-alive connection closed between requests).
pub(crate) fn read_head(r: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut budget = MAX_HEAD;
    let line = loop {
        match read_line(r, &mut budget)? {
            None => return Ok(None),
            // Tolerate empty lines before a request (RFC 9112 2.2).
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut head = Head::new(line);
    loop {
        let line = read_line(r, &mut budget)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed in the middle of an HTTP head",
            )
        })?;
        if line.is_empty() {
            return Ok(Some(head));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid(format!("bad header line {line:?}")))?;
        head.headers
            .push((name.trim().to_string(), value.trim().to_string()));
    }
}

/// How a message's body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    Empty,
    /// Content-Length bytes.
    Length(u64),
    /// Transfer-Encoding: chunked.
    Chunked,
    /// Until the connection closes (responses only).
    Close,
}

pub(crate) fn request_framing(head: &Head) -> io::Result<Framing> {
    if head.get("transfer-encoding").is_some() {
        return if head.has_token("transfer-encoding", "chunked") {
            Ok(Framing::Chunked)
        } else {
            Err(invalid("unsupported request Transfer-Encoding"))
        };
    }
    Ok(match head.content_length()? {
        Some(0) | None => Framing::Empty,
        Some(n) => Framing::Length(n),
    })
}

pub(crate) fn response_framing(request_method: &str, head: &Head) -> io::Result<Framing> {
    let status = head.status();
    if request_method.eq_ignore_ascii_case("HEAD")
        || (100..200).contains(&status)
        || status == 204
        || status == 304
    {
        return Ok(Framing::Empty);
    }
    if head.has_token("transfer-encoding", "chunked") {
        return Ok(Framing::Chunked);
    }
    Ok(match head.content_length()? {
        Some(n) => Framing::Length(n),
        None => Framing::Close,
    })
}

/// Reads a body framed as `framing`, decoded (chunks joined).
pub(crate) fn read_body(r: &mut impl BufRead, framing: Framing) -> io::Result<Vec<u8>> {
    match framing {
        Framing::Empty => Ok(Vec::new()),
        Framing::Length(n) => {
            if n > MAX_BODY {
                return Err(invalid(format!(
                    "body of {n} bytes is larger than testkit's limit"
                )));
            }
            let mut body = Vec::with_capacity(n.min(1 << 20) as usize);
            r.take(n).read_to_end(&mut body)?;
            if (body.len() as u64) < n {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("body ended after {} of {n} bytes", body.len()),
                ));
            }
            Ok(body)
        }
        Framing::Close => {
            let mut body = Vec::new();
            r.take(MAX_BODY + 1).read_to_end(&mut body)?;
            if body.len() as u64 > MAX_BODY {
                return Err(invalid("close-delimited body larger than testkit's limit"));
            }
            Ok(body)
        }
        Framing::Chunked => {
            let mut body = Vec::new();
            let mut budget = MAX_HEAD;
            loop {
                let line = read_line(r, &mut budget)?.ok_or_else(|| {
                    io::Error::new(io::ErrorKind::UnexpectedEof, "chunked body ended early")
                })?;
                let size = line.split(';').next().unwrap_or("").trim();
                let size = u64::from_str_radix(size, 16)
                    .map_err(|_| invalid(format!("bad chunk size {line:?}")))?;
                if size == 0 {
                    // Trailers, up to the blank line.
                    while !read_line(r, &mut budget)?.unwrap_or_default().is_empty() {}
                    return Ok(body);
                }
                if body.len() as u64 + size > MAX_BODY {
                    return Err(invalid("chunked body larger than testkit's limit"));
                }
                let before = body.len();
                r.take(size).read_to_end(&mut body)?;
                if ((body.len() - before) as u64) < size {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "chunked body ended inside a chunk",
                    ));
                }
                let end = read_line(r, &mut budget)?;
                if end.as_deref() != Some("") {
                    return Err(invalid("chunk not followed by CRLF"));
                }
                budget = MAX_HEAD;
            }
        }
    }
}
