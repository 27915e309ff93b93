//! The connection layer under both HTTP listeners (`serve --http`, `serve --metrics`):
//! what idle, slow or numerous clients can hold, bounded before hyper sees a byte.
//!
//! - accepting that fails (out of file descriptors, say) backs off, from
//!   [`FIRST_BACKOFF`] doubling to [`MAX_BACKOFF`], and is logged once per
//!   [`LOG_INTERVAL`] with how often it failed, not once per try;
//! - at most [`ConnectionLimits::max`] connections are open at once, and at most
//!   [`ConnectionLimits::per_peer`] from one peer address; one over either cap is
//!   answered `503` with what was reached and closed at once;
//! - a connection with no request in flight is closed when no complete request head
//!   arrives within [`REQUEST_HEAD_TIMEOUT`] of its opening, or [`KEEP_ALIVE_IDLE`] of
//!   its last response: a request counts from its complete head (hyper calls the
//!   service) to the end of its response body, for HTTP/1 and HTTP/2 alike, so a
//!   client that trickles a head or sends nothing holds its socket for seconds, not
//!   forever;
//! - a connection whose client reads nothing of what the server writes for
//!   [`WRITE_STALL_TIMEOUT`] (a write stays pending that long: the socket's buffers are
//!   full) is closed, so a client that sends requests and never reads the answers does
//!   not keep its place under the caps. A stream that writes nothing, such as an event
//!   stream waiting for its next event, has no write pending and is not affected.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_io_timeout::TimeoutStream;

/// How many connections a listener keeps open at once unless the user says otherwise:
/// under the 1024 file descriptors a process gets by default, with room for plugins,
/// the cache and the other listener.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 512;

/// How many connections one peer address may keep open at once unless the user says
/// otherwise.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: u32 = 64;

/// How long a new connection gets to send its first complete request head.
pub const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may stay open with no request after its last response.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(60);

/// How long a write to a client may stay pending (the client reading none of it)
/// before the connection is closed.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// An admitted connection's socket: writes that stall past [`WRITE_STALL_TIMEOUT`]
/// fail, which ends the connection.
pub type Stream = Pin<Box<TimeoutStream<TcpStream>>>;

/// The first pause after a failed accept.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);

/// The longest pause after failed accepts in a row.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// At most one line per this interval says that accepting failed, or that
/// connections were refused.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The caps on a listener's open connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections at once.
    pub max: u32,
    /// Open connections at once from one peer address.
    pub per_peer: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max: DEFAULT_MAX_CONNECTIONS,
            per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
        }
    }
}

/// A listening socket that admits connections within [`ConnectionLimits`].
pub struct Listener {
    socket: TcpListener,
    /// What the log lines call the listener's connections ("MCP", "metrics").
    what: &'static str,
    limits: ConnectionLimits,
    open: Arc<Mutex<OpenConnections>>,
    failures: Throttled,
    refusals: Throttled,
}

#[derive(Default)]
struct OpenConnections {
    total: u32,
    per_peer: HashMap<IpAddr, u32>,
}

impl Listener {
    /// Admits connections on `socket` within `limits`; `what` names them in log lines.
    pub fn new(socket: TcpListener, what: &'static str, limits: ConnectionLimits) -> Listener {
        Listener {
            socket,
            what,
            limits,
            open: Arc::default(),
            failures: Throttled::default(),
            refusals: Throttled::default(),
        }
    }

    /// The next connection within the caps. Failures back off and connections over a
    /// cap are refused here, so this returns only a connection to serve.
    pub async fn accept(&mut self) -> (Stream, Connection) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let (stream, peer) = match self.socket.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    if let Some(count) = self.failures.count() {
                        tracing::warn!(
                            "accepting {} connections failed {count} time(s) in the last {} s, \
                             retrying with pauses of up to {} ms: {error}",
                            self.what,
                            LOG_INTERVAL.as_secs(),
                            MAX_BACKOFF.as_millis()
                        );
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            backoff = FIRST_BACKOFF;
            match self.admit(peer) {
                Ok(connection) => {
                    let mut stream = TimeoutStream::new(stream);
                    stream.set_write_timeout(Some(WRITE_STALL_TIMEOUT));
                    return (Box::pin(stream), connection);
                }
                Err(why) => {
                    if let Some(count) = self.refusals.count() {
                        tracing::warn!(
                            "refused {count} {} connection(s) in the last {} s: {why}",
                            self.what,
                            LOG_INTERVAL.as_secs()
                        );
                    }
                    refuse(&stream, &why);
                }
            }
        }
    }

    /// Counts a connection from `peer` in, or says which cap it is over.
    fn admit(&self, peer: SocketAddr) -> Result<Connection, String> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.total >= self.limits.max {
            return Err(format!(
                "too many connections: {} are open and the server allows {} \
                 (--max-connections)",
                open.total, self.limits.max
            ));
        }
        let ip = peer.ip();
        let from_peer = open.per_peer.get(&ip).copied().unwrap_or(0);
        if from_peer >= self.limits.per_peer {
            return Err(format!(
                "too many connections from {ip}: {from_peer} are open and the server allows \
                 {} per address (--max-connections-per-peer)",
                self.limits.per_peer
            ));
        }
        open.total += 1;
        open.per_peer.insert(ip, from_peer + 1);
        let (activity, _) = watch::channel(Activity {
            in_flight: 0,
            idle_since: Instant::now(),
            served: false,
        });
        Ok(Connection {
            slot: Arc::new(Slot {
                open: self.open.clone(),
                peer: ip,
            }),
            activity: Arc::new(activity),
        })
    }
}

/// Answers a refused connection `503` and closes it. The write is one try on a fresh
/// socket (its buffer is empty); what the client already sent is read first so that
/// the close does not reset the connection before the answer is read.
fn refuse(stream: &TcpStream, why: &str) {
    let body = format!("{why}\n");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut sink = [0; 4096];
    while matches!(stream.try_read(&mut sink), Ok(read) if read > 0) {}
    let _ = stream.try_write(response.as_bytes());
}

/// Counts events and says when to log them: the first at once, then at most once per
/// [`LOG_INTERVAL`], with how many happened since the last line.
#[derive(Default)]
struct Throttled {
    last: Option<Instant>,
    count: u64,
}

impl Throttled {
    /// Records one event; the count to log, when a line is due.
    fn count(&mut self) -> Option<u64> {
        self.count += 1;
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < LOG_INTERVAL)
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.count))
    }
}

/// An admitted connection: its place under the caps, and whether it is serving.
#[derive(Clone)]
pub struct Connection {
    slot: Arc<Slot>,
    activity: Arc<watch::Sender<Activity>>,
}

/// A connection's place under the caps, given back when the connection ends.
struct Slot {
    open: Arc<Mutex<OpenConnections>>,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.total -= 1;
        if let Some(count) = open.per_peer.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                open.per_peer.remove(&self.peer);
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Activity {
    /// Requests whose response body has not ended.
    in_flight: usize,
    /// When the last request ended, or the connection opened.
    idle_since: Instant,
    /// Whether a request has been served (the idle limit is then [`KEEP_ALIVE_IDLE`]).
    served: bool,
}

impl Connection {
    /// `handler` as a hyper service whose requests count as this connection's
    /// activity until their response bodies end.
    pub fn service<F, Fut, B>(
        &self,
        handler: F,
    ) -> impl hyper::service::Service<
        Request<Incoming>,
        Response = Response<Busy<B>>,
        Error = Infallible,
        Future = impl Future<Output = Result<Response<Busy<B>>, Infallible>> + Send + 'static,
    > + Clone
    + Send
    + 'static
    where
        F: Fn(Request<Incoming>) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = Response<B>> + Send + 'static,
        B: Body + Unpin,
    {
        let activity = self.activity.clone();
        hyper::service::service_fn(move |request| {
            activity.send_modify(|activity| activity.in_flight += 1);
            let request_done = RequestDone(activity.clone());
            let response = handler(request);
            async move {
                Ok(response.await.map(|body| Busy {
                    body,
                    _request: request_done,
                }))
            }
        })
    }

    /// Runs `connection` (hyper's future serving it) until it ends or has been idle
    /// past its limit; either way the connection's place under the caps is given back.
    pub async fn serve<F, E>(self, connection: F)
    where
        F: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let what = self.slot.peer;
        tokio::select! {
            ended = connection => {
                if let Err(error) = ended {
                    tracing::debug!("a connection from {what} ended with an error: {error}");
                }
            }
            () = self.idle() => {
                tracing::debug!("closed an idle connection from {what}");
            }
        }
    }

    /// Resolves once the connection has had no request in flight for its idle limit.
    async fn idle(&self) {
        let mut changes = self.activity.subscribe();
        loop {
            let activity = *changes.borrow_and_update();
            if activity.in_flight > 0 {
                if changes.changed().await.is_err() {
                    return;
                }
                continue;
            }
            let limit = if activity.served {
                KEEP_ALIVE_IDLE
            } else {
                REQUEST_HEAD_TIMEOUT
            };
            tokio::select! {
                () = tokio::time::sleep_until(activity.idle_since + limit) => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// Marks a request ended when dropped: with its response body, or with the
/// connection.
struct RequestDone(Arc<watch::Sender<Activity>>);

impl Drop for RequestDone {
    fn drop(&mut self) {
        self.0.send_modify(|activity| {
            activity.in_flight -= 1;
            if activity.in_flight == 0 {
                activity.idle_since = Instant::now();
                activity.served = true;
            }
        });
    }
}

/// A response body that keeps its request counted in flight until it is dropped.
pub struct Busy<B> {
    body: B,
    _request: RequestDone,
}

impl<B: Body + Unpin> Body for Busy<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
