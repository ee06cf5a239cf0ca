//! Owns the fault and latency proxy: an HTTP/1.1 proxy on 127.0.0.1 in
//! front of one upstream server (std threads, one per client connection),
//! the faults it injects and the rules that choose the requests they hit,
//! the added latency, and its request and byte counters.
//!
//! Each client request is read whole (Content-Length or chunked body), then
//! either answered by a fault without reaching the upstream, or sent to the
//! upstream on a fresh connection with `Connection: close` and its response
//! read whole (Content-Length, chunked or close-delimited; none for HEAD,
//! 1xx, 204 and 304) before it goes back to the client, changed by a fault
//! or not. The client connection stays open when the response is
//! length-delimited and neither side asked to close.

use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::wire::{self, Framing, Head};

/// Which requests a fault applies to.
///
/// A request *matches* when its method and path pass the filters
/// ([`Rule::methods`], [`Rule::path_contains`]); matching requests are
/// numbered 1, 2, 3... per rule, and the selector ([`Rule::all`],
/// [`Rule::every_nth`], [`Rule::fraction`]) picks among them, at most
/// [`Rule::first`] times.
#[derive(Clone, Debug)]
pub struct Rule {
    methods: Vec<String>,
    path_contains: Option<String>,
    select: Select,
    first: Option<u64>,
}

#[derive(Clone, Debug)]
enum Select {
    All,
    EveryNth(u64),
    Fraction { fraction: f64, seed: u64 },
}

impl Rule {
    /// Every matching request.
    pub fn all() -> Rule {
        Rule {
            methods: Vec::new(),
            path_contains: None,
            select: Select::All,
            first: None,
        }
    }

    /// The n-th, 2n-th, 3n-th... matching request (`n` of 0 counts as 1).
    pub fn every_nth(n: u64) -> Rule {
        Rule {
            select: Select::EveryNth(n.max(1)),
            ..Rule::all()
        }
    }

    /// A deterministic pseudo-random `fraction` (0.0 to 1.0) of the matching
    /// requests: whether the k-th is chosen depends on `seed` and k only.
    pub fn fraction(fraction: f64, seed: u64) -> Rule {
        Rule {
            select: Select::Fraction { fraction, seed },
            ..Rule::all()
        }
    }

    /// Only requests with one of these methods (case-insensitive).
    pub fn methods(mut self, methods: &[&str]) -> Rule {
        self.methods = methods.iter().map(|m| m.to_ascii_uppercase()).collect();
        self
    }

    /// Only requests whose target (path and query, as sent) contains `s`.
    pub fn path_contains(mut self, s: &str) -> Rule {
        self.path_contains = Some(s.to_string());
        self
    }

    /// Only the first `k` requests the rule selects: the fault applies at
    /// most `k` times, then the rule lets everything through.
    pub fn first(mut self, k: u64) -> Rule {
        self.first = Some(k);
        self
    }

    fn matches(&self, method: &str, target: &str) -> bool {
        (self.methods.is_empty() || self.methods.iter().any(|m| m.eq_ignore_ascii_case(method)))
            && self
                .path_contains
                .as_deref()
                .is_none_or(|s| target.contains(s))
    }

    fn selects(&self, k: u64) -> bool {
        match self.select {
            Select::All => true,
            Select::EveryNth(n) => k.is_multiple_of(n),
            Select::Fraction { fraction, seed } => {
                let x = splitmix64(seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                ((x >> 11) as f64 / (1u64 << 53) as f64) < fraction
            }
        }
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Where a [`Fault::Stall`] pauses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallAt {
    /// Before the request goes to the upstream (a write is not applied yet).
    BeforeForwarding,
    /// After the upstream answered, before anything goes to the client (a
    /// write has been applied, the client does not know).
    BeforeResponse,
    /// After the response head was sent.
    AfterHead,
    /// After the head and this many body bytes were sent.
    AfterBodyBytes(usize),
}

/// What the proxy does to a request its rule selects.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answers with this status, extra headers and body (Content-Type
    /// `application/xml` unless given), without forwarding. The connection
    /// stays open.
    Status {
        /// The status code.
        status: u16,
        /// Extra headers (e.g. `Retry-After`).
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// Closes the connection without answering (FIN); not forwarded.
    Close,
    /// Resets the connection without answering (RST); not forwarded.
    Reset,
    /// Forwards, sends the response head and the first `after` body bytes,
    /// then resets the connection (RST).
    ResetMidBody {
        /// Body bytes sent before the reset.
        after: usize,
    },
    /// Pauses for `duration` at `at`, then closes the connection
    /// (`then_close`) or goes on normally.
    Stall {
        /// Where.
        at: StallAt,
        /// How long.
        duration: Duration,
        /// Close (FIN) after the pause instead of going on.
        then_close: bool,
    },
    /// Forwards, sends the head with the response's real Content-Length but
    /// only the first `after` body bytes, then closes (FIN).
    Truncate {
        /// Body bytes sent.
        after: usize,
    },
    /// For a request with a `Range: bytes=...` header, forwards it as it is
    /// (a signed request stays valid) and labels the 206 that comes back
    /// with a `Content-Range` shifted by `shift` bytes, so the range the
    /// client gets is not, by its label, the one it asked for. Requests
    /// without a Range, and answers other than 206, pass unchanged.
    WrongRange {
        /// Bytes added to the range's start and end.
        shift: u64,
    },
    /// Forwards without the Range header, so a range request gets a 200
    /// with the whole object (as servers may do).
    IgnoreRange,
    /// Forwards, then sends the response with `Content-Length: claimed` but
    /// only the real (shorter) body, and closes.
    HugeContentLength {
        /// The Content-Length announced.
        claimed: u64,
    },
    /// Answers 200 with a body that never ends (zeros) until the client
    /// closes, bounded by 2 GiB or 120 s; not forwarded. With
    /// `declare_length`, announces `Content-Length: 2147483648`, else the
    /// body is delimited by the connection's close.
    EndlessBody {
        /// Send a Content-Length (of the 2 GiB cap).
        declare_length: bool,
    },
    /// Answers `302 Found` with a Location of the request's own URL.
    RedirectLoop,
    /// Forwards the request with one bit of its body flipped (the middle
    /// byte's lowest bit; a request without a body passes unchanged), as a
    /// network or a broken middlebox might damage an upload.
    CorruptRequestBody,
}

impl Fault {
    /// An S3-style error status, not forwarded: 503 `SlowDown`, 500
    /// `InternalError`, 429 `TooManyRequests`, 403 `AccessDenied`, 404
    /// `NoSuchKey`, others a code named after the status.
    pub fn status(status: u16) -> Fault {
        let code = match status {
            503 => "SlowDown",
            500 => "InternalError",
            429 => "TooManyRequests",
            403 => "AccessDenied",
            404 => "NoSuchKey",
            _ => "InjectedError",
        };
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
             <Message>{} (injected by the n5-testkit proxy)</Message></Error>",
            reason(status)
        );
        Fault::Status {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// `status` with a body of choice.
    pub fn status_with_body(status: u16, body: &str) -> Fault {
        Fault::Status {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// 503 with S3's `<Error><Code>SlowDown</Code>...` body.
    pub fn slow_down() -> Fault {
        Fault::status(503)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        302 => "Found",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        412 => "Precondition Failed",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Injected",
    }
}

/// What the proxy counted since it started or [`Proxy::reset_counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Requests received from clients (faulted ones included).
    pub requests: u64,
    /// GET requests.
    pub get: u64,
    /// PUT requests.
    pub put: u64,
    /// HEAD requests.
    pub head: u64,
    /// DELETE requests.
    pub delete: u64,
    /// POST requests.
    pub post: u64,
    /// Requests with any other method.
    pub other: u64,
    /// Requests a fault applied to.
    pub faults: u64,
    /// Bytes written to clients (heads and bodies).
    pub bytes_to_client: u64,
    /// Client connections accepted.
    pub connections: u64,
}

#[derive(Default)]
struct AtomicCounters {
    requests: AtomicU64,
    get: AtomicU64,
    put: AtomicU64,
    head: AtomicU64,
    delete: AtomicU64,
    post: AtomicU64,
    other: AtomicU64,
    faults: AtomicU64,
    bytes_to_client: AtomicU64,
    connections: AtomicU64,
}

impl AtomicCounters {
    fn all(&self) -> [&AtomicU64; 10] {
        [
            &self.requests,
            &self.get,
            &self.put,
            &self.head,
            &self.delete,
            &self.post,
            &self.other,
            &self.faults,
            &self.bytes_to_client,
            &self.connections,
        ]
    }
}

struct Entry {
    rule: Rule,
    fault: Fault,
    matched: u64,
    fired: u64,
}

#[derive(Default)]
struct State {
    faults: Vec<Entry>,
    latency: Duration,
}

struct Shared {
    addr: SocketAddr,
    upstream: SocketAddr,
    state: Mutex<State>,
    counters: AtomicCounters,
    stop: AtomicBool,
    conns: Mutex<HashMap<u64, TcpStream>>,
}

/// The largest endless body, and how long it may go on.
const ENDLESS_CAP: u64 = 2 << 30;
const ENDLESS_TIME: Duration = Duration::from_secs(120);
/// Timeouts towards the upstream.
const UPSTREAM_CONNECT: Duration = Duration::from_secs(10);
const UPSTREAM_IO: Duration = Duration::from_secs(120);

/// An HTTP/1.1 proxy on 127.0.0.1 in front of `upstream`, injecting the
/// faults and latency set through it (thread-safe, effective for the next
/// requests). Dropping it stops the listener and closes client connections.
///
/// Faults are tried in the order they were added; the first whose rule
/// selects a request applies to it (later rules do not see it).
pub struct Proxy {
    shared: Arc<Shared>,
    listener: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy to `upstream` on a free port of 127.0.0.1.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the proxy to 127.0.0.1:0");
        let addr = listener.local_addr().expect("the proxy's address");
        let shared = Arc::new(Shared {
            addr,
            upstream,
            state: Mutex::new(State::default()),
            counters: AtomicCounters::default(),
            stop: AtomicBool::new(false),
            conns: Mutex::new(HashMap::new()),
        });
        let s = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name(format!("n5-testkit-proxy-{}", addr.port()))
            .spawn(move || accept_loop(listener, s))
            .expect("starting the proxy thread");
        Proxy {
            shared,
            listener: Some(handle),
        }
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The upstream server's address.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `fault` for the requests `rule` selects, after the faults
    /// already set.
    pub fn add_fault(&self, rule: Rule, fault: Fault) {
        self.state().faults.push(Entry {
            rule,
            fault,
            matched: 0,
            fired: 0,
        });
    }

    /// Replaces every fault by `fault` for the requests `rule` selects.
    pub fn set_fault(&self, rule: Rule, fault: Fault) {
        let mut state = self.state();
        state.faults.clear();
        state.faults.push(Entry {
            rule,
            fault,
            matched: 0,
            fired: 0,
        });
    }

    /// Removes every fault: requests pass unchanged (latency stays).
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// Delays every request by `latency` before it is forwarded (time to
    /// first byte); zero for none.
    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counters {
            requests: get(&c.requests),
            get: get(&c.get),
            put: get(&c.put),
            head: get(&c.head),
            delete: get(&c.delete),
            post: get(&c.post),
            other: get(&c.other),
            faults: get(&c.faults),
            bytes_to_client: get(&c.bytes_to_client),
            connections: get(&c.connections),
        }
    }

    /// Sets every counter to zero.
    pub fn reset_counters(&self) {
        for c in self.shared.counters.all() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept() up.
        let _ = TcpStream::connect_timeout(&self.shared.addr, Duration::from_secs(1));
        if let Some(h) = self.listener.take() {
            let _ = h.join();
        }
        let conns =
            std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, c) in conns {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        shared.counters.connections.fetch_add(1, Ordering::Relaxed);
        next_id += 1;
        let id = next_id;
        let s = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name(format!("n5-testkit-proxy-conn-{id}"))
            .spawn(move || Connection::run(s, id, stream));
        if spawned.is_err() {
            // Out of threads: the stream was moved into the failed closure
            // and is closed; the client sees a reset connection.
            continue;
        }
    }
}

/// How a request's exchange ended for the client connection.
#[derive(PartialEq, Eq)]
enum End {
    KeepAlive,
    Close,
    Reset,
}

/// A response read from the upstream.
struct Upstream {
    head: Head,
    body: Vec<u8>,
    framing: Framing,
}

struct Connection {
    shared: Arc<Shared>,
    stream: TcpStream,
}

impl Connection {
    fn run(shared: Arc<Shared>, id: u64, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let (Ok(read_half), Ok(registered)) = (stream.try_clone(), stream.try_clone()) else {
            return;
        };
        shared
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, registered);
        let mut conn = Connection { shared, stream };
        let mut reader = BufReader::new(read_half);
        let end = loop {
            if conn.stopped() {
                break End::Close;
            }
            match conn.exchange(&mut reader) {
                Ok(End::KeepAlive) => continue,
                Ok(end) => break end,
                Err(_) => break End::Close,
            }
        };
        let registered = conn
            .shared
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        drop(registered);
        if end == End::Reset {
            set_linger_zero(&conn.stream);
        } else {
            let _ = conn.stream.shutdown(Shutdown::Write);
        }
        // Dropping the last descriptors closes the socket (with an RST when
        // lingering is off).
        drop(reader);
    }

    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Sleeps for `d`, waking early when the proxy is dropped.
    fn pause(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.stopped() {
            let now = Instant::now();
            if now >= until {
                return;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(25)));
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.shared
            .counters
            .bytes_to_client
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// One request and its response; `Ok(End::Close)` also when the client
    /// closed cleanly between requests.
    fn exchange(&mut self, reader: &mut BufReader<TcpStream>) -> io::Result<End> {
        let Some(mut head) = wire::read_head(reader)? else {
            return Ok(End::Close);
        };
        let (method, target) = {
            let (m, t) = head.method_target();
            (m.to_ascii_uppercase(), t.to_string())
        };
        self.count(&method);
        if head.has_token("expect", "100-continue") {
            self.write(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            head.remove("expect");
        }
        let framing = wire::request_framing(&head)?;
        let body = wire::read_body(reader, framing)?;
        let client_close = head.has_token("connection", "close") || head.line.ends_with("HTTP/1.0");

        let (fault, latency) = {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut chosen = None;
            for e in state.faults.iter_mut() {
                if !e.rule.matches(&method, &target) {
                    continue;
                }
                e.matched += 1;
                if e.rule.selects(e.matched) && e.rule.first.is_none_or(|k| e.fired < k) {
                    e.fired += 1;
                    chosen = Some(e.fault.clone());
                    break;
                }
            }
            (chosen, state.latency)
        };
        if fault.is_some() {
            self.shared.counters.faults.fetch_add(1, Ordering::Relaxed);
        }
        if !latency.is_zero() {
            self.pause(latency);
        }
        let keep = if client_close {
            End::Close
        } else {
            End::KeepAlive
        };

        let Some(fault) = fault else {
            let up = self.forward(&method, &head, &body)?;
            return self.respond(up, client_close);
        };
        match fault {
            Fault::Status {
                status,
                headers,
                body: text,
            } => {
                let mut h = Head::new(format!("HTTP/1.1 {status} {}", reason(status)));
                h.headers = headers;
                if h.get("content-type").is_none() {
                    h.set("Content-Type", "application/xml");
                }
                h.set("Content-Length", text.len().to_string());
                if client_close {
                    h.set("Connection", "close");
                }
                let mut out = h.to_bytes();
                if method != "HEAD" {
                    out.extend_from_slice(text.as_bytes());
                }
                self.write(&out)?;
                Ok(keep)
            }
            Fault::Close => Ok(End::Close),
            Fault::Reset => Ok(End::Reset),
            Fault::ResetMidBody { after } => {
                let up = self.forward(&method, &head, &body)?;
                self.send_partial(up, after)?;
                Ok(End::Reset)
            }
            Fault::Truncate { after } => {
                let up = self.forward(&method, &head, &body)?;
                self.send_partial(up, after)?;
                Ok(End::Close)
            }
            Fault::Stall {
                at,
                duration,
                then_close,
            } => {
                if at == StallAt::BeforeForwarding {
                    self.pause(duration);
                    if then_close {
                        return Ok(End::Close);
                    }
                }
                let up = self.forward(&method, &head, &body)?;
                let sent = match at {
                    StallAt::BeforeForwarding => return self.respond(up, client_close),
                    StallAt::BeforeResponse => {
                        self.pause(duration);
                        if then_close {
                            return Ok(End::Close);
                        }
                        return self.respond(up, client_close);
                    }
                    StallAt::AfterHead => 0,
                    StallAt::AfterBodyBytes(n) => n.min(up.body.len()),
                };
                let head = length_head(&up, client_close);
                let mut out = head.to_bytes();
                out.extend_from_slice(&up.body[..sent]);
                self.write(&out)?;
                self.stream.flush()?;
                self.pause(duration);
                if then_close {
                    return Ok(End::Close);
                }
                self.write(&up.body[sent..])?;
                Ok(keep)
            }
            Fault::WrongRange { shift } => {
                let mut up = self.forward(&method, &head, &body)?;
                if head.get("range").is_some() && up.head.status() == 206 {
                    if let Some(range) = up
                        .head
                        .get("content-range")
                        .and_then(|r| shift_content_range(r, shift))
                    {
                        up.head.set("Content-Range", range);
                    }
                }
                self.respond(up, client_close)
            }
            Fault::CorruptRequestBody => {
                let mut body = body;
                if !body.is_empty() {
                    let middle = body.len() / 2;
                    body[middle] ^= 1;
                }
                let up = self.forward(&method, &head, &body)?;
                self.respond(up, client_close)
            }
            Fault::IgnoreRange => {
                head.remove("range");
                head.remove("if-range");
                let up = self.forward(&method, &head, &body)?;
                self.respond(up, client_close)
            }
            Fault::HugeContentLength { claimed } => {
                let up = self.forward(&method, &head, &body)?;
                let mut h = length_head(&up, true);
                h.set("Content-Length", claimed.to_string());
                let mut out = h.to_bytes();
                out.extend_from_slice(&up.body);
                self.write(&out)?;
                Ok(End::Close)
            }
            Fault::EndlessBody { declare_length } => {
                let mut h = Head::new("HTTP/1.1 200 OK");
                h.set("Content-Type", "application/octet-stream");
                if declare_length {
                    h.set("Content-Length", ENDLESS_CAP.to_string());
                } else {
                    h.set("Connection", "close");
                }
                self.write(&h.to_bytes())?;
                let zeros = vec![0u8; 64 * 1024];
                let start = Instant::now();
                let mut sent = 0u64;
                while sent < ENDLESS_CAP && start.elapsed() < ENDLESS_TIME && !self.stopped() {
                    let n = zeros.len().min((ENDLESS_CAP - sent) as usize);
                    if self.write(&zeros[..n]).is_err() {
                        break;
                    }
                    sent += n as u64;
                }
                Ok(End::Close)
            }
            Fault::RedirectLoop => {
                let host = head
                    .get("host")
                    .map(str::to_string)
                    .unwrap_or_else(|| self.shared.addr.to_string());
                let mut h = Head::new("HTTP/1.1 302 Found");
                h.set("Location", format!("http://{host}{target}"));
                h.set("Content-Length", "0");
                if client_close {
                    h.set("Connection", "close");
                }
                self.write(&h.to_bytes())?;
                Ok(keep)
            }
        }
    }

    fn count(&self, method: &str) {
        let c = &self.shared.counters;
        c.requests.fetch_add(1, Ordering::Relaxed);
        let per = match method {
            "GET" => &c.get,
            "PUT" => &c.put,
            "HEAD" => &c.head,
            "DELETE" => &c.delete,
            "POST" => &c.post,
            _ => &c.other,
        };
        per.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends the request to the upstream on a fresh connection and reads the
    /// whole response. A failure to reach the upstream comes back as a 502.
    fn forward(&self, method: &str, client_head: &Head, body: &[u8]) -> io::Result<Upstream> {
        match self.try_forward(method, client_head, body) {
            Ok(up) => Ok(up),
            Err(e) => {
                let text = format!("n5-testkit proxy: upstream {}: {e}", self.shared.upstream);
                let mut head = Head::new("HTTP/1.1 502 Bad Gateway");
                head.set("Content-Type", "text/plain");
                head.set("Content-Length", text.len().to_string());
                let framing = Framing::Length(text.len() as u64);
                Ok(Upstream {
                    head,
                    body: text.into_bytes(),
                    framing,
                })
            }
        }
    }

    fn try_forward(&self, method: &str, client_head: &Head, body: &[u8]) -> io::Result<Upstream> {
        let mut head = client_head.clone();
        let had_length =
            head.get("content-length").is_some() || head.get("transfer-encoding").is_some();
        for h in [
            "connection",
            "keep-alive",
            "proxy-connection",
            "transfer-encoding",
            "content-length",
            "te",
            "upgrade",
        ] {
            head.remove(h);
        }
        if had_length || !body.is_empty() {
            head.set("Content-Length", body.len().to_string());
        }
        head.set("Connection", "close");
        let mut up = TcpStream::connect_timeout(&self.shared.upstream, UPSTREAM_CONNECT)?;
        up.set_read_timeout(Some(UPSTREAM_IO))?;
        up.set_write_timeout(Some(UPSTREAM_IO))?;
        up.set_nodelay(true)?;
        let mut out = head.to_bytes();
        out.extend_from_slice(body);
        up.write_all(&out)?;
        let mut reader = BufReader::new(up);
        loop {
            let mut head = wire::read_head(&mut reader)?.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "upstream closed without answering",
                )
            })?;
            let status = head.status();
            if status == 0 {
                return Err(wire::invalid(format!(
                    "bad status line from upstream {:?}",
                    head.line
                )));
            }
            if (100..200).contains(&status) {
                continue;
            }
            let framing = wire::response_framing(method, &head)?;
            let body = wire::read_body(&mut reader, framing)?;
            // Upload URLs (fake-gcs-server's resumable Location) lead back
            // through the proxy.
            let upstream_url = format!("http://{}", self.shared.upstream);
            if let Some(loc) = head
                .get("location")
                .filter(|l| l.starts_with(&upstream_url))
            {
                let loc = format!("http://{}{}", self.shared.addr, &loc[upstream_url.len()..]);
                head.set("Location", loc);
            }
            return Ok(Upstream {
                head,
                body,
                framing,
            });
        }
    }

    /// Sends the upstream's response as it came (same framing).
    fn respond(&mut self, up: Upstream, client_close: bool) -> io::Result<End> {
        let mut head = up.head;
        head.remove("connection");
        head.remove("keep-alive");
        let close = client_close || up.framing == Framing::Close;
        if close {
            head.set("Connection", "close");
        }
        let mut out = head.to_bytes();
        match up.framing {
            Framing::Empty => {}
            Framing::Length(_) | Framing::Close => out.extend_from_slice(&up.body),
            Framing::Chunked => {
                for chunk in up.body.chunks(16 * 1024) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        self.write(&out)?;
        Ok(if close { End::Close } else { End::KeepAlive })
    }

    /// The head (with the body's real Content-Length) and the first `after`
    /// body bytes.
    fn send_partial(&mut self, up: Upstream, after: usize) -> io::Result<()> {
        let head = length_head(&up, true);
        let mut out = head.to_bytes();
        out.extend_from_slice(&up.body[..after.min(up.body.len())]);
        self.write(&out)
    }
}

/// The upstream's head made Content-Length-delimited (for the body faults),
/// with `Connection: close` when `close`.
fn length_head(up: &Upstream, close: bool) -> Head {
    let mut head = up.head.clone();
    for h in ["connection", "keep-alive", "transfer-encoding"] {
        head.remove(h);
    }
    if up.framing != Framing::Empty {
        head.set("Content-Length", up.body.len().to_string());
    }
    if close {
        head.set("Connection", "close");
    }
    head
}

/// `bytes A-B/T` shifted by `shift`: `bytes (A+s)-(B+s)/T`.
fn shift_content_range(range: &str, shift: u64) -> Option<String> {
    let spec = range.trim().strip_prefix("bytes ")?;
    let (span, total) = spec.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
    Some(format!(
        "bytes {}-{}/{}",
        a + shift,
        b + shift,
        total.trim()
    ))
}

/// Makes the next close of `stream`'s socket send an RST instead of a FIN.
fn set_linger_zero(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt(2) on a descriptor `stream` owns and keeps open for
    // the call, with a pointer to a live `linger` and its exact size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_shift() {
        assert_eq!(
            shift_content_range("bytes 0-9/100", 3).as_deref(),
            Some("bytes 3-12/100")
        );
        assert_eq!(
            shift_content_range("bytes 5-5/*", 1).as_deref(),
            Some("bytes 6-6/*")
        );
        assert_eq!(shift_content_range("bytes */100", 2), None);
        assert_eq!(shift_content_range("items 0-1/2", 2), None);
    }

    #[test]
    fn rules_select() {
        let every = Rule::every_nth(3);
        let picked: Vec<u64> = (1..=9).filter(|&k| every.selects(k)).collect();
        assert_eq!(picked, [3, 6, 9]);
        let half = Rule::fraction(0.5, 7);
        let n = (1..=10_000).filter(|&k| half.selects(k)).count();
        assert!((4_500..5_500).contains(&n), "{n}");
        let again: Vec<bool> = (1..100)
            .map(|k| Rule::fraction(0.5, 7).selects(k))
            .collect();
        assert_eq!(again, (1..100).map(|k| half.selects(k)).collect::<Vec<_>>());
        assert!(!Rule::fraction(0.0, 1).selects(5));
        assert!(Rule::fraction(1.0, 1).selects(5));
        let r = Rule::all().methods(&["get"]).path_contains("/b/");
        assert!(r.matches("GET", "/b/x"));
        assert!(!r.matches("PUT", "/b/x"));
        assert!(!r.matches("GET", "/c/x"));
    }
}
