//! A small real HTTP/1.1 server on 127.0.0.1 for tests: an ephemeral port, a fixed
//! set of routes that exercise an HTTP client (slow, huge, endless, redirecting
//! responses), and counters the tests can read and wait on.
//!
//! The server runs on its own thread with its own tokio runtime, so it keeps serving
//! whatever the test's runtime does (a current-thread `#[tokio::test]` that blocks,
//! or a plain `#[test]`). Dropping the [`TestServer`] stops it and closes every
//! connection.
//!
//! Routes (any method on every path; query parameters as shown):
//! - `/hello` → 200 `hello`
//! - `/echo` → 200, JSON `{"method":..,"path":..,"query":..,"headers":{..},"body":".."}`,
//!   header names lower case (repeated headers joined with ", "), body as lossy UTF-8
//! - `/slow?ms=N` → waits N ms, then 200 `slow N`
//! - `/status?code=N` → status N with body `status N`
//! - `/redirect?to=URL[&code=C]` → redirect (302 unless C is another 3xx) to URL
//! - `/redirect-chain?n=N` → N redirects (302, relative), then 200 `chain done`
//! - `/big?bytes=N` → N bytes of `x`, with Content-Length
//! - `/big-chunked?bytes=N` → the same, chunked (no Content-Length)
//! - `/trickle?chunks=N&interval_ms=M` → N chunks `chunk I\n`, M ms apart, chunked
//! - `/never` → reads the request and never answers
//!
//! A request counts as in flight from its arrival until its response body is
//! finished or abandoned. A request to `/never` or `/slow` whose handler is dropped
//! before answering counts as a client close: hyper drops it when it reads EOF from
//! the client on that connection, i.e. when the client closed the connection.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, LOCATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, oneshot};

/// A running test server; dropping it shuts the server down.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// A snapshot of the server's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Requests received (all routes).
    pub requests: u64,
    /// Requests in flight now.
    pub in_flight: u64,
    /// The most requests that were in flight at once (see `reset_max_in_flight`).
    pub max_in_flight: u64,
    /// Requests to `/never` or `/slow` whose connection the client closed before
    /// the answer.
    pub client_closes: u64,
    /// TCP connections accepted.
    pub connections: u64,
}

impl TestServer {
    /// Starts a server on 127.0.0.1 and an ephemeral port, ready when this returns
    /// (the port is bound here; connections wait in its backlog until the serving
    /// thread accepts them). Async only so that async tests read naturally: it does
    /// not use the caller's runtime.
    pub async fn start() -> TestServer {
        TestServer::start_blocking()
    }

    /// [`TestServer::start`] for synchronous tests.
    pub fn start_blocking() -> TestServer {
        let listener = StdTcpListener::bind("127.0.0.1:0").expect("test server binds 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("test server sets its socket non-blocking");
        let addr = listener
            .local_addr()
            .expect("test server knows its address");
        let counters = Arc::new(Counters::default());
        let (shutdown, stop) = oneshot::channel();
        let thread_counters = counters.clone();
        let thread = std::thread::Builder::new()
            .name(format!("test-http-server-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("test server builds its runtime");
                runtime.block_on(serve(listener, thread_counters, stop));
            })
            .expect("test server starts its thread");
        TestServer {
            addr,
            counters,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT` followed by `path_and_query` (which starts with '/').
    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{}", self.addr, path_and_query)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address the server listens on (127.0.0.1:PORT).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters now.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// Starts a new "maximum in flight" measurement from the current count.
    pub fn reset_max_in_flight(&self) {
        let now = self.counters.in_flight.load(Ordering::SeqCst);
        self.counters.max_in_flight.store(now, Ordering::SeqCst);
    }

    /// Waits until `ready(stats)` holds; false if `timeout` passes first.
    pub async fn wait_until(&self, timeout: Duration, ready: impl Fn(&Stats) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if ready(&self.stats()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// [`TestServer::wait_until`] for synchronous tests.
    pub fn wait_until_blocking(&self, timeout: Duration, ready: impl Fn(&Stats) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if ready(&self.stats()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Waits until at least `count` requests to `/never` or `/slow` had their
    /// connection closed by the client; false if `timeout` passes first.
    pub async fn wait_for_client_closes(&self, count: u64, timeout: Duration) -> bool {
        self.wait_until(timeout, |s| s.client_closes >= count).await
    }

    /// Waits until at least `count` requests are in flight at once (e.g. a request
    /// to `/never` has arrived); false if `timeout` passes first.
    pub async fn wait_for_in_flight(&self, count: u64, timeout: Duration) -> bool {
        self.wait_until(timeout, |s| s.in_flight >= count).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often the waits look at the counters.
const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// Shared counters, updated by the serving thread.
#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    client_closes: AtomicU64,
    connections: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> Stats {
        Stats {
            requests: self.requests.load(Ordering::SeqCst),
            in_flight: self.in_flight.load(Ordering::SeqCst),
            max_in_flight: self.max_in_flight.load(Ordering::SeqCst),
            client_closes: self.client_closes.load(Ordering::SeqCst),
            connections: self.connections.load(Ordering::SeqCst),
        }
    }

    /// Counts a request arriving; the guard counts it leaving.
    fn enter(self: &Arc<Self>) -> InFlight {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(self.clone())
    }
}

/// Held while a request is in flight: by its handler, then by its response body.
#[derive(Debug)]
struct InFlight(Arc<Counters>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts a client close if dropped before `answered` (a handler is only dropped
/// unfinished when hyper saw its connection close).
struct CloseWatch {
    counters: Arc<Counters>,
    answered: bool,
}

impl CloseWatch {
    fn new(counters: &Arc<Counters>) -> Self {
        CloseWatch {
            counters: counters.clone(),
            answered: false,
        }
    }
}

impl Drop for CloseWatch {
    fn drop(&mut self) {
        if !self.answered {
            self.counters.client_closes.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Accepts connections until told to stop; stopping drops every connection.
async fn serve(listener: StdTcpListener, counters: Arc<Counters>, mut stop: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        counters.connections.fetch_add(1, Ordering::SeqCst);
        let counters = counters.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(counters.clone(), request));
            let _ = http1::Builder::new()
                .half_close(false)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Routes one request.
async fn handle(
    counters: Arc<Counters>,
    request: Request<Incoming>,
) -> Result<Response<TestBody>, Infallible> {
    let in_flight = counters.enter();
    let query = Query::parse(request.uri().query());
    let response = match request.uri().path() {
        "/hello" => text(StatusCode::OK, "hello"),
        "/echo" => echo(request).await,
        "/slow" => match query.number("ms") {
            Ok(ms) => {
                let mut watch = CloseWatch::new(&counters);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                watch.answered = true;
                text(StatusCode::OK, format!("slow {ms}"))
            }
            Err(why) => text(StatusCode::BAD_REQUEST, why),
        },
        "/status" => match query.number("code").map(u16::try_from) {
            Ok(Ok(code)) => match StatusCode::from_u16(code) {
                Ok(status) => text(status, format!("status {code}")),
                Err(_) => text(StatusCode::BAD_REQUEST, format!("bad status code {code}")),
            },
            Ok(Err(_)) => text(StatusCode::BAD_REQUEST, "bad status code"),
            Err(why) => text(StatusCode::BAD_REQUEST, why),
        },
        "/redirect" => redirect(&query),
        "/redirect-chain" => match query.number("n") {
            Ok(0) => text(StatusCode::OK, "chain done"),
            Ok(n) => redirect_to(StatusCode::FOUND, &format!("/redirect-chain?n={}", n - 1)),
            Err(why) => text(StatusCode::BAD_REQUEST, why),
        },
        "/big" => match query.number("bytes") {
            Ok(bytes) => with_body(
                StatusCode::OK,
                Kind::Repeat {
                    remaining: bytes,
                    exact: true,
                },
            ),
            Err(why) => text(StatusCode::BAD_REQUEST, why),
        },
        "/big-chunked" => match query.number("bytes") {
            Ok(bytes) => with_body(
                StatusCode::OK,
                Kind::Repeat {
                    remaining: bytes,
                    exact: false,
                },
            ),
            Err(why) => text(StatusCode::BAD_REQUEST, why),
        },
        "/trickle" => match (query.number("chunks"), query.number("interval_ms")) {
            (Ok(chunks), Ok(interval)) => trickle(chunks, Duration::from_millis(interval)),
            (Err(why), _) | (_, Err(why)) => text(StatusCode::BAD_REQUEST, why),
        },
        "/never" => {
            let _watch = CloseWatch::new(&counters);
            std::future::pending::<Response<TestBody>>().await
        }
        _ => text(StatusCode::NOT_FOUND, "not found"),
    };
    Ok(response.map(|body| body.holding(in_flight)))
}

/// `/echo`: the request as JSON.
async fn echo(request: Request<Incoming>) -> Response<TestBody> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("could not read the body: {e}"),
            );
        }
    };
    let mut headers = serde_json::Map::new();
    for name in parts.headers.keys() {
        let values: Vec<String> = parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        headers.insert(
            name.as_str().to_owned(),
            serde_json::Value::String(values.join(", ")),
        );
    }
    let json = serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query().unwrap_or(""),
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
    });
    let mut response = text(StatusCode::OK, json.to_string());
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
        .headers_mut()
        .insert("X-Echo", HeaderValue::from_static("Yes"));
    response
}

/// `/redirect?to=URL[&code=C]`.
fn redirect(query: &Query) -> Response<TestBody> {
    let Some(to) = query.get("to") else {
        return text(StatusCode::BAD_REQUEST, "missing to=URL");
    };
    let status = match query.get("code") {
        None => StatusCode::FOUND,
        Some(code) => match code
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(status) if status.is_redirection() => status,
            _ => return text(StatusCode::BAD_REQUEST, format!("bad redirect code {code}")),
        },
    };
    redirect_to(status, to)
}

/// A redirect response to `location`.
fn redirect_to(status: StatusCode, location: &str) -> Response<TestBody> {
    let mut response = text(status, format!("redirecting to {location}"));
    match HeaderValue::from_str(location) {
        Ok(value) => {
            response.headers_mut().insert(LOCATION, value);
            response
        }
        Err(_) => text(StatusCode::BAD_REQUEST, "bad redirect location"),
    }
}

/// `/trickle`: chunks sent by a task, which stops when the client goes away.
fn trickle(chunks: u64, interval: Duration) -> Response<TestBody> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        for i in 0..chunks {
            if i > 0 {
                tokio::time::sleep(interval).await;
            }
            if tx.send(Bytes::from(format!("chunk {i}\n"))).await.is_err() {
                return;
            }
        }
    });
    with_body(StatusCode::OK, Kind::Channel(rx))
}

/// A plain-text response.
fn text(status: StatusCode, body: impl Into<String>) -> Response<TestBody> {
    let mut response = with_body(status, Kind::Full(Some(Bytes::from(body.into()))));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A response with `status` and a body of `kind`.
fn with_body(status: StatusCode, kind: Kind) -> Response<TestBody> {
    let mut response = Response::new(TestBody {
        kind,
        _in_flight: None,
    });
    *response.status_mut() = status;
    response
}

/// Query parameters, decoded.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(query: Option<&str>) -> Self {
        let pairs = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .into_owned()
            .collect();
        Query(pairs)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The number in parameter `name`, or what is wrong with it.
    fn number(&self, name: &str) -> Result<u64, String> {
        match self.get(name).map(str::parse::<u64>) {
            Some(Ok(n)) => Ok(n),
            Some(Err(_)) => Err(format!("{name} must be a number")),
            None => Err(format!("missing {name}=N")),
        }
    }
}

/// The bytes `/big` sends, 64 KiB at a time.
static FILLER: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// Every response body; it keeps its request counted in flight until it is done.
struct TestBody {
    kind: Kind,
    _in_flight: Option<InFlight>,
}

/// What a body produces.
enum Kind {
    /// One chunk (taken when sent).
    Full(Option<Bytes>),
    /// `remaining` bytes of filler; `exact` announces the length (Content-Length).
    Repeat { remaining: u64, exact: bool },
    /// Whatever a task sends, until it stops.
    Channel(mpsc::Receiver<Bytes>),
}

impl TestBody {
    fn holding(mut self, in_flight: InFlight) -> Self {
        self._in_flight = Some(in_flight);
        self
    }
}

impl Body for TestBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let next = match &mut this.kind {
            Kind::Full(chunk) => chunk.take(),
            Kind::Repeat { remaining, .. } => {
                if *remaining == 0 {
                    None
                } else {
                    let n = (*remaining).min(FILLER.len() as u64);
                    *remaining -= n;
                    Some(Bytes::from_static(&FILLER[..n as usize]))
                }
            }
            Kind::Channel(rx) => match rx.poll_recv(cx) {
                Poll::Ready(chunk) => chunk,
                Poll::Pending => return Poll::Pending,
            },
        };
        if next.is_none() {
            // Done: the request is no longer in flight.
            this._in_flight = None;
        }
        Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        matches!(
            self.kind,
            Kind::Full(None) | Kind::Repeat { remaining: 0, .. }
        )
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(chunk)) => SizeHint::with_exact(chunk.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Repeat {
                remaining,
                exact: true,
            } => SizeHint::with_exact(*remaining),
            Kind::Repeat { exact: false, .. } | Kind::Channel(_) => SizeHint::default(),
        }
    }
}
