//! The HTTP client the network backends share: one connection pool per
//! store (connections are reused), TLS with the system's roots
//! (`SSL_CERT_FILE` and `SSL_CERT_DIR` honoured), and every request sent
//! within a retry budget: 5xx, 429, resets, timeouts and bodies that end
//! early or do not match what was asked are retried with full-jitter
//! exponential backoff until `max_attempts` or `max_seconds` run out, then
//! reported as [`ErrorKind::Network`] naming the URL, the HTTP status and
//! the server's error code. A request that sends or receives nothing for
//! `request_timeout_seconds` is abandoned. Bodies are read into memory that
//! grows with what actually arrives, never with what a header announces,
//! up to [`MAX_BODY`]. Redirects are not followed here: the backends
//! decide (S3 learns the bucket's region from them).

use std::io::Read;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ureq::tls::{Certificate, RootCerts, TlsConfig};

use super::options::RetryOptions;
use super::store::{backoff, ByteRange};
use crate::error::{Error, ErrorKind, Result};

/// The largest response body read into memory (1 GiB): a longer or endless
/// body is an error, not an allocation.
pub const MAX_BODY: u64 = 1 << 30;

/// The largest error body kept to find the server's error code in.
const MAX_ERROR_BODY: u64 = 64 << 10;

/// An HTTP method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// PUT
    Put,
    /// POST
    Post,
    /// DELETE
    Delete,
}

impl Method {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// One request, built afresh for every attempt (signatures carry the time).
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The method.
    pub method: Method,
    /// The whole URL, percent-encoded.
    pub url: String,
    /// Header names and values (authorization included).
    pub headers: Vec<(String, String)>,
    /// The body (PUT and POST).
    pub body: &'a [u8],
}

/// A response, its body read whole.
#[derive(Clone, Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The server's error code, from an S3-style XML body
    /// (`<Code>NoSuchKey</Code>`) or a JSON one (`{"error": {"status": ...}}`),
    /// cleaned of anything but a short identifier.
    pub fn error_code(&self) -> Option<String> {
        error_code(&self.body)
    }
}

#[cfg(test)]
impl Response {
    /// An answer with `status`, `headers` (names in lower case) and
    /// `body`, as a server might give it.
    pub(crate) fn of(status: u16, headers: &[(&str, &str)], body: impl AsRef<[u8]>) -> Response {
        Response {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.as_ref().to_vec(),
        }
    }
}

/// What a validator thinks of a response ([`Client::send`]).
pub type Validator<'v> = &'v dyn Fn(&Response) -> std::result::Result<(), String>;

/// The HTTP client of one store.
#[derive(Clone, Debug)]
pub struct Client {
    agent: ureq::Agent,
    retry: RetryOptions,
}

impl Client {
    /// A client with its own connection pool for up to `connections`
    /// requests in flight, retrying as `retry` says.
    pub fn new(retry: RetryOptions, connections: usize) -> Result<Client> {
        let tls = TlsConfig::builder().root_certs(system_roots()?).build();
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("libn5/", env!("CARGO_PKG_VERSION")))
            // Responses are read as they came: no transparent decompression
            // that would change lengths and ranges.
            .accept_encoding("identity")
            .timeout_connect(Some(retry.request_timeout))
            .timeout_per_read(Some(retry.request_timeout))
            .timeout_per_write(Some(retry.request_timeout))
            // Half of ureq's default buffers: tens of connections are open
            // at once, and bodies are read in pieces anyway.
            .input_buffer_size(64 << 10)
            .output_buffer_size(64 << 10)
            .max_idle_connections(connections.max(1) * 2)
            .max_idle_connections_per_host(connections.max(1))
            .tls_config(tls)
            .build();
        Ok(Client {
            agent: config.into(),
            retry,
        })
    }

    /// The retry settings.
    pub fn retry(&self) -> &RetryOptions {
        &self.retry
    }

    /// Send the request `build` makes (called again for every attempt) and
    /// read the whole answer, retrying within the budget when the request
    /// fails, the answer is a 5xx, 408 or 429, its body ends early, or
    /// `validate` refuses it (such as a range that is not the one asked
    /// for). Any other answer, 3xx and 4xx included, is returned for the
    /// caller to interpret. `describe` is how the request is named in
    /// messages (its URL without credentials).
    pub fn send<'b>(
        &self,
        describe: &str,
        build: &mut dyn FnMut() -> Result<Request<'b>>,
        validate: Validator<'_>,
    ) -> Result<Response> {
        self.send_into(describe, build, validate, Vec::new())
    }

    /// [`Client::send`], reading the body into `spare` (cleared first), so
    /// that a caller reading many objects reuses one allocation: the
    /// response's body is `spare`, grown only if the body is larger than
    /// its capacity.
    pub fn send_into<'b>(
        &self,
        describe: &str,
        build: &mut dyn FnMut() -> Result<Request<'b>>,
        validate: Validator<'_>,
        mut spare: Vec<u8>,
    ) -> Result<Response> {
        let start = Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let request = build()?;
            let method = request.method;
            let remaining = self.retry.max_time.saturating_sub(start.elapsed());
            let failure = match self.attempt(&request, remaining, &mut spare) {
                Ok(response) if retryable_status(response.status) => {
                    let retry_after = response
                        .header("retry-after")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let what = status_text(&response);
                    // The next attempt reads into the same memory.
                    spare = response.body;
                    Failure {
                        what,
                        retry_after,
                        retry: true,
                    }
                }
                Ok(response) => match validate(&response) {
                    Ok(()) => return Ok(response),
                    Err(why) => {
                        spare = response.body;
                        Failure {
                            what: why,
                            retry_after: None,
                            retry: true,
                        }
                    }
                },
                Err(f) => f,
            };
            let elapsed = start.elapsed();
            let pause = failure
                .retry_after
                .unwrap_or_else(|| {
                    backoff(
                        attempt - 1,
                        Duration::from_millis(100),
                        Duration::from_secs(5),
                    )
                })
                .min(Duration::from_secs(30));
            let out_of_budget =
                attempt >= self.retry.max_attempts || elapsed + pause >= self.retry.max_time;
            if !failure.retry || out_of_budget {
                return Err(Error::new(
                    ErrorKind::Network,
                    format!(
                        "{} {describe}: {} ({attempt} attempt{} in {:.1} s)",
                        method.as_str(),
                        failure.what,
                        if attempt == 1 { "" } else { "s" },
                        elapsed.as_secs_f64()
                    ),
                ));
            }
            std::thread::sleep(pause);
        }
    }

    /// One attempt, within `remaining` of the budget; the body is read into
    /// `spare`, which is taken when the attempt returns a response.
    fn attempt(
        &self,
        request: &Request,
        remaining: Duration,
        spare: &mut Vec<u8>,
    ) -> std::result::Result<Response, Failure> {
        if remaining.is_zero() {
            return Err(Failure {
                what: "the retry budget (max_seconds) ran out".into(),
                retry_after: None,
                retry: false,
            });
        }
        let result = match request.method {
            Method::Get | Method::Head | Method::Delete => {
                let mut r = match request.method {
                    Method::Get => self.agent.get(&request.url),
                    Method::Head => self.agent.head(&request.url),
                    _ => self.agent.delete(&request.url),
                };
                for (name, value) in &request.headers {
                    r = r.header(name.as_str(), value.as_str());
                }
                r.config().timeout_global(Some(remaining)).build().call()
            }
            Method::Put | Method::Post => {
                let mut r = if request.method == Method::Put {
                    self.agent.put(&request.url)
                } else {
                    self.agent.post(&request.url)
                };
                for (name, value) in &request.headers {
                    r = r.header(name.as_str(), value.as_str());
                }
                r.config()
                    .timeout_global(Some(remaining))
                    .build()
                    .send(request.body)
            }
        };
        let mut response = result.map_err(request_failure)?;
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let limit = if (200..300).contains(&status) {
            MAX_BODY
        } else {
            MAX_ERROR_BODY
        };
        let announced = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.trim().parse::<u64>().ok());
        // The spare buffer's bytes are overwritten, not cleared: memory that
        // is already there is neither zeroed nor faulted in again.
        let body = spare;
        if request.method == Method::Head || status == 204 || status == 304 {
            body.clear();
        } else {
            if let Some(n) = announced {
                if n > MAX_BODY && (200..300).contains(&status) {
                    return Err(Failure {
                        what: format!("HTTP {status} announces {n} bytes, more than the {MAX_BODY} libn5 reads"),
                        retry_after: None,
                        retry: false,
                    });
                }
            }
            let mut reader = response.body_mut().as_reader();
            match read_body(&mut reader, body, announced, limit) {
                Ok(_) if body.len() as u64 > limit && limit == MAX_BODY => {
                    return Err(Failure {
                        what: format!("HTTP {status}: the body goes on beyond {MAX_BODY} bytes"),
                        retry_after: None,
                        retry: false,
                    })
                }
                Ok(_) => body.truncate(limit as usize),
                Err(e) => {
                    return Err(Failure {
                        what: format!(
                            "HTTP {status}: the body ended early or stalled after {} bytes: {e}",
                            body.len()
                        ),
                        retry_after: None,
                        retry: true,
                    })
                }
            }
            if let Some(n) = announced {
                if body.len() as u64 != n && (200..300).contains(&status) {
                    return Err(Failure {
                        what: format!(
                            "HTTP {status}: the body has {} bytes but Content-Length says {n}",
                            body.len()
                        ),
                        retry_after: None,
                        retry: true,
                    });
                }
            }
        }
        Ok(Response {
            status,
            headers,
            body: std::mem::take(body),
        })
    }
}

/// Read `reader` to its end into `body`, at most `limit` + 1 bytes. The
/// bytes `body` already holds are overwritten (a reused buffer is not
/// zeroed again), and it grows only with what arrives: to the announced
/// size at first (at most 8 MiB at a time), doubling beyond it. `body`
/// ends as exactly what was read, also after an error.
fn read_body(
    reader: &mut dyn Read,
    body: &mut Vec<u8>,
    announced: Option<u64>,
    limit: u64,
) -> std::io::Result<()> {
    let cap = limit.saturating_add(1);
    let mut filled = 0usize;
    let result = loop {
        if filled == body.len() {
            let have = filled as u64;
            if have >= cap {
                break Ok(());
            }
            if announced == Some(have) {
                // All that was announced is here: any more is one too many,
                // which one byte shows without growing the buffer.
                let mut probe = [0u8; 1];
                match reader.read(&mut probe) {
                    Ok(0) => break Ok(()),
                    Ok(_) => {
                        body.push(probe[0]);
                        filled += 1;
                        continue;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => break Err(e),
                }
            }
            let step = match announced {
                Some(n) if n > have => (n - have).min(8 << 20),
                _ => have.max(64 << 10),
            };
            body.resize(have.saturating_add(step).min(cap) as usize, 0);
        }
        match reader.read(&mut body[filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    body.truncate(filled);
    result
}

/// Why an attempt failed, and whether another attempt may succeed.
struct Failure {
    what: String,
    retry_after: Option<Duration>,
    retry: bool,
}

fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// "HTTP 503 (SlowDown)" for a response.
pub fn status_text(response: &Response) -> String {
    match response.error_code() {
        Some(code) => format!("HTTP {} ({code})", response.status),
        None => format!("HTTP {}", response.status),
    }
}

fn request_failure(e: ureq::Error) -> Failure {
    let (what, retry) = match &e {
        ureq::Error::Timeout(t) => (format!("no answer within the request timeout ({t})"), true),
        // A refused certificate reaches ureq as an I/O error of rustls.
        ureq::Error::Io(io) => match io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
            Some(tls) => (tls_message(tls), false),
            None => (format!("connection failed: {io}"), true),
        },
        ureq::Error::ConnectionFailed => ("connection failed".to_string(), true),
        ureq::Error::HostNotFound => ("host not found".to_string(), true),
        ureq::Error::Protocol(p) => (format!("malformed HTTP answer: {p}"), true),
        ureq::Error::Tls(t) => (format!("TLS: {t}"), false),
        ureq::Error::Rustls(r) => (tls_message(r), false),
        ureq::Error::BadUri(u) => (format!("bad URL: {u}"), false),
        other => (other.to_string(), false),
    };
    Failure {
        what,
        retry_after: None,
        retry,
    }
}

fn tls_message(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => format!(
            "TLS: the server's certificate is not trusted ({c:?}); \
             trust a private CA with SSL_CERT_FILE=/path/to/ca.pem"
        ),
        other => format!("TLS: {other}"),
    }
}

/// The server's error code in an error body: `<Code>X</Code>` (S3) or
/// `"reason": "X"` / `"status": "X"` in a JSON error (GCS); only short
/// identifiers are returned, so a hostile body cannot flood a message.
pub fn error_code(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(&body[..body.len().min(MAX_ERROR_BODY as usize)]).ok()?;
    let clean = |s: &str| {
        let s = s.trim();
        (!s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)))
        .then(|| s.to_string())
    };
    if let Some(start) = text.find("<Code>") {
        let rest = &text[start + 6..];
        return rest.find("</Code>").and_then(|end| clean(&rest[..end]));
    }
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let error = json.get("error")?;
    let reason = error
        .get("errors")
        .and_then(|e| e.get(0))
        .and_then(|e| e.get("reason"))
        .or_else(|| error.get("status"))
        .and_then(|r| r.as_str());
    reason.and_then(clean)
}

/// The trusted root certificates: the system's (rustls-native-certs reads
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` first), loaded once per process and
/// again when those variables change.
fn system_roots() -> Result<RootCerts> {
    type Loaded = (Option<String>, Option<String>, RootCerts);
    static ROOTS: OnceLock<std::sync::Mutex<Option<Arc<Loaded>>>> = OnceLock::new();
    let key = (
        std::env::var("SSL_CERT_FILE").ok(),
        std::env::var("SSL_CERT_DIR").ok(),
    );
    let cell = ROOTS.get_or_init(Default::default);
    let mut cached = cell.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(loaded) = cached.as_ref() {
        if (loaded.0.as_ref(), loaded.1.as_ref()) == (key.0.as_ref(), key.1.as_ref()) {
            return Ok(loaded.2.clone());
        }
    }
    // No roots is not an error here: plain http needs none, and an https
    // request then fails with an untrusted certificate naming SSL_CERT_FILE.
    let found = rustls_native_certs::load_native_certs();
    let certs: Vec<Certificate<'static>> = found
        .certs
        .iter()
        .map(|c| Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    let roots = RootCerts::new_with_certs(&certs);
    *cached = Some(Arc::new((key.0, key.1, roots.clone())));
    Ok(roots)
}

/// `url` with any user and password taken out, for messages.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..scheme_end + 3], &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Characters left as they are in a path component of a URL (RFC 3986
/// unreserved); everything else is percent-encoded.
pub fn encode_path_component(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A `/`-separated key as a URL path: each component percent-encoded.
pub fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    for (i, component) in key.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        encode_path_component(component, &mut out);
    }
    out
}

/// A query parameter value, percent-encoded (RFC 3986 unreserved kept).
pub fn encode_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    encode_path_component(s, &mut out);
    out
}

/// Decode percent-escapes once (`%20` to a space); an invalid escape is an
/// error naming `what`.
pub fn percent_decode(s: &str, what: &str) -> Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    Error::invalid_argument(format!("{what}: invalid percent-escape in '{s}'"))
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        Error::new(
            ErrorKind::InvalidUtf8,
            format!("{what}: '{s}' does not decode to UTF-8"),
        )
    })
}

/// A `Content-Range: bytes START-END/TOTAL` header's start, end
/// (exclusive) and total (`None` for `*`).
pub fn parse_content_range(value: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (start, end) = span.split_once('-')?;
    let start: u64 = start.trim().parse().ok()?;
    let end: u64 = end.trim().parse().ok()?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    (end >= start).then_some((start, end + 1, total))
}

/// Whether a 206 answer holds exactly the `range` asked for: its
/// `Content-Range` is that range (clipped at the object's end) and its body
/// has that many bytes. Other statuses pass; [`range_body`] handles them.
pub fn check_range(range: ByteRange, r: &Response) -> std::result::Result<(), String> {
    if r.status != 206 {
        return Ok(());
    }
    let header = r.header("content-range").unwrap_or("");
    let Some((start, end, total)) = parse_content_range(header) else {
        return Err(format!("HTTP 206 with Content-Range '{header}'"));
    };
    let fits = match range {
        ByteRange::Span { offset, len } => {
            let want = offset.saturating_add(len);
            start == offset && (end == want || (end < want && total == Some(end)))
        }
        ByteRange::From(offset) => start == offset && total.is_none_or(|t| t == end),
        ByteRange::Suffix(n) => total.is_some_and(|t| end == t && start == t.saturating_sub(n)),
    };
    if !fits || r.body.len() as u64 != end - start {
        return Err(format!(
            "HTTP 206 with Content-Range '{header}' and {} bytes for the range bytes={range}",
            r.body.len()
        ));
    }
    Ok(())
}

/// The bytes of `range` in an answer to a range GET that passed
/// [`check_range`]: a 206's body, the range cut from a 200's whole object
/// (a server that ignores ranges), nothing for a 416 (the range starts
/// beyond the end); any other answer comes back for the caller to read.
pub fn range_body(range: ByteRange, r: Response) -> std::result::Result<Vec<u8>, Response> {
    match r.status {
        206 => Ok(r.body),
        200 => {
            let mut body = r.body;
            let span = range.resolve(body.len() as u64);
            body.truncate(span.end as usize);
            body.drain(..span.start as usize);
            Ok(body)
        }
        416 => {
            let mut body = r.body;
            body.clear();
            Ok(body)
        }
        _ => Err(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_from_s3_and_gcs_bodies() {
        assert_eq!(
            error_code(
                b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>x</Message></Error>"
            ),
            Some("NoSuchKey".into())
        );
        assert_eq!(
            error_code(br#"{"error": {"code": 404, "errors": [{"reason": "notFound"}]}}"#),
            Some("notFound".into())
        );
        assert_eq!(error_code(b"<Code>not an identifier at all!</Code>"), None);
        assert_eq!(error_code(b"plain text"), None);
        assert_eq!(error_code(&[0xff, 0xfe]), None);
    }

    #[test]
    fn urls_are_redacted_encoded_and_decoded() {
        assert_eq!(
            redact_url("https://user:pw@example.org/a@b"),
            "https://example.org/a@b"
        );
        assert_eq!(redact_url("http://h/x"), "http://h/x");
        assert_eq!(encode_key("a b/ü/x+y"), "a%20b/%C3%BC/x%2By");
        assert_eq!(percent_decode("my%20vol.n5", "x").unwrap(), "my vol.n5");
        assert!(percent_decode("%zz", "x").is_err());
        assert!(percent_decode("%ff", "x").is_err());
    }

    /// A reader giving `data` in pieces of at most `piece` bytes.
    struct Pieces<'a> {
        data: &'a [u8],
        piece: usize,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.piece).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn bodies_are_read_into_reused_buffers() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let read = |body: &mut Vec<u8>, len: usize, announced: Option<u64>, limit: u64| {
            let mut r = Pieces {
                data: &data[..len],
                piece: 7000,
            };
            read_body(&mut r, body, announced, limit).unwrap();
        };
        // Announced, into a fresh buffer: exactly its size, one allocation.
        let mut body = Vec::new();
        read(&mut body, 200_000, Some(200_000), MAX_BODY);
        assert_eq!(body, data[..200_000]);
        assert_eq!(body.capacity(), 200_000);
        // A shorter body into that buffer: overwritten and cut, same memory.
        let at = body.as_ptr();
        read(&mut body, 1000, Some(1000), MAX_BODY);
        assert_eq!(body, data[..1000]);
        assert_eq!((body.as_ptr(), body.capacity()), (at, 200_000));
        // Not announced (chunked): grows with what arrives.
        let mut body = vec![9u8; 10];
        read(&mut body, 300_000, None, MAX_BODY);
        assert_eq!(body, data);
        // More than announced is read (and then refused by the caller).
        let mut body = Vec::new();
        read(&mut body, 5000, Some(4000), MAX_BODY);
        assert_eq!(body.len(), 5000);
        // Never more than limit + 1 bytes.
        let mut body = Vec::new();
        read(&mut body, 300_000, None, 1000);
        assert_eq!(body.len(), 1001);
        let mut body = Vec::new();
        read(&mut body, 300_000, Some(300_000), 1000);
        assert_eq!(body.len(), 1001);
        // An empty body empties the buffer.
        let mut body = vec![1u8; 100];
        read(&mut body, 0, Some(0), MAX_BODY);
        assert!(body.is_empty());
    }

    #[test]
    fn range_answers_are_checked() {
        let answer = |range: &str, body: &str| Response::of(206, &[("content-range", range)], body);
        let span = ByteRange::Span { offset: 2, len: 3 };
        assert!(check_range(span, &answer("bytes 2-4/10", "abc")).is_ok());
        assert!(check_range(span, &answer("bytes 2-3/4", "ab")).is_ok());
        assert!(check_range(span, &answer("bytes 0-2/10", "abc")).is_err());
        assert!(check_range(span, &answer("bytes 2-4/10", "ab")).is_err());
        assert!(check_range(ByteRange::Suffix(4), &answer("bytes 6-9/10", "abcd")).is_ok());
        assert!(check_range(ByteRange::Suffix(40), &answer("bytes 0-9/10", "abcdefghij")).is_ok());
        assert!(check_range(ByteRange::Suffix(4), &answer("bytes 0-3/10", "abcd")).is_err());
        assert!(check_range(ByteRange::From(8), &answer("bytes 8-9/10", "ab")).is_ok());
        assert!(check_range(ByteRange::From(8), &answer("bytes 8-9/*", "ab")).is_ok());
        assert!(check_range(span, &answer("garbage", "abc")).is_err());
        assert!(check_range(span, &Response::of(200, &[], "whole")).is_ok());
    }

    #[test]
    fn range_answers_must_be_the_range_asked_for() {
        let answer =
            |range: &str, len: usize| Response::of(206, &[("content-range", range)], vec![0; len]);
        let span = ByteRange::Span { offset: 10, len: 5 };
        assert!(check_range(span, &answer("bytes 10-14/100", 5)).is_ok());
        assert!(
            check_range(span, &answer("bytes 10-11/12", 2)).is_ok(),
            "clipped at the end"
        );
        assert!(
            check_range(span, &answer("bytes 10-11/100", 2)).is_err(),
            "short"
        );
        assert!(
            check_range(span, &answer("bytes 0-4/100", 5)).is_err(),
            "elsewhere"
        );
        assert!(
            check_range(span, &answer("bytes 10-14/100", 4)).is_err(),
            "body and header differ"
        );
        assert!(check_range(span, &answer("garbage", 5)).is_err());
        assert!(check_range(ByteRange::From(90), &answer("bytes 90-99/100", 10)).is_ok());
        assert!(check_range(ByteRange::From(90), &answer("bytes 90-98/100", 9)).is_err());
        assert!(check_range(ByteRange::Suffix(3), &answer("bytes 97-99/100", 3)).is_ok());
        assert!(check_range(ByteRange::Suffix(300), &answer("bytes 0-99/100", 100)).is_ok());
        assert!(check_range(ByteRange::Suffix(3), &answer("bytes 96-98/100", 3)).is_err());
        assert!(check_range(ByteRange::Suffix(3), &answer("bytes 97-99/*", 3)).is_err());
        let whole = Response::of(200, &[], [1; 3]);
        assert!(
            check_range(span, &whole).is_ok(),
            "a 200 is cut by the caller"
        );
    }

    #[test]
    fn content_ranges() {
        assert_eq!(
            parse_content_range("bytes 0-9/100"),
            Some((0, 10, Some(100)))
        );
        assert_eq!(parse_content_range("bytes 5-5/*"), Some((5, 6, None)));
        assert_eq!(parse_content_range("bytes 9-0/100"), None);
        assert_eq!(parse_content_range("items 0-9/100"), None);
    }
}
