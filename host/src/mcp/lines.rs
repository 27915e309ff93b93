//! The stdio transport: one JSON-RPC message per line, in front of rmcp's service.
//!
//! It replaces rmcp's own line transport, which drops a line it cannot parse without an
//! answer and hands the service whatever comes first, so that a notification sent
//! before `initialize` ends the session (rmcp insists on `initialize` first). Here:
//!
//! - each line is checked (`jsonrpc::check`); a line that fails is answered with the
//!   error saying why, a line longer than [`MAX_MESSAGE_BYTES`] too (its bytes are
//!   skipped, never held);
//! - until the session has begun, notifications and responses are dropped: they
//!   belong to no session yet. The session begins with `initialize`, or, for clients
//!   of protocol 2026-07-28 that do without it, with a request that carries the
//!   protocol version and client capabilities in its `_meta`.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, ProtocolVersion, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::jsonrpc::{self, MAX_MESSAGE_BYTES, Rejection};

/// The stdio transport over `R` (stdin) and `W` (the real stdout).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far; kept here because rmcp may drop a `receive` midway.
    line: Vec<u8>,
    /// Bytes of an oversized line skipped so far; none while reading a normal line.
    skipping: Option<usize>,
    write: Arc<Mutex<W>>,
    /// Whether the session has begun (see the module docs).
    begun: bool,
    /// The protocol versions the server speaks: an inline request naming another
    /// one is refused by rmcp and does not begin the session.
    versions: Cow<'static, [ProtocolVersion]>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading `read` and writing `write`, for a server that speaks
    /// `versions`.
    pub fn new(read: R, write: W, versions: Cow<'static, [ProtocolVersion]>) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: None,
            write: Arc::new(Mutex::new(write)),
            begun: false,
            versions,
        }
    }

    /// Reads up to the end of the next line into `self.line`. Returns false at the
    /// end of input (or on a read error). A line longer than the limit is skipped,
    /// answered, and the next one read.
    async fn read_line(&mut self) -> bool {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return false,
                Ok(available) => available,
                Err(error) => {
                    tracing::debug!("cannot read stdin: {error}");
                    return false;
                }
            };
            let newline = available.iter().position(|&byte| byte == b'\n');
            let take = newline.map_or(available.len(), |end| end + 1);
            match &mut self.skipping {
                Some(skipped) => *skipped += take,
                None if self.line.len() + take > MAX_MESSAGE_BYTES + 2 => {
                    self.skipping = Some(self.line.len() + take);
                    self.line = Vec::new();
                }
                None => self.line.extend_from_slice(&available[..take]),
            }
            self.read.consume(take);
            if newline.is_none() {
                continue;
            }
            match self.skipping.take() {
                Some(size) => self.answer(&Rejection::too_large(Some(size - 1))),
                None => return true,
            }
        }
    }

    /// Sends `rejection`'s error response, unless it is for a notification. The write
    /// runs on its own task, so that a `receive` dropped midway cannot cut it short.
    fn answer(&self, rejection: &Rejection) {
        tracing::debug!("refused a message: {}", rejection.message);
        if rejection.silent {
            return;
        }
        let mut bytes = rejection.to_json().into_bytes();
        bytes.push(b'\n');
        tokio::spawn(write_line(self.write.clone(), bytes));
    }

    /// Whether `message` may reach the service: everything once the session has
    /// begun; before, requests only.
    fn admit(&mut self, message: &ClientJsonRpcMessage) -> bool {
        if self.begun {
            return true;
        }
        let ClientJsonRpcMessage::Request(request) = message else {
            tracing::debug!("dropped a message that came before the session began");
            return false;
        };
        self.begun = match &request.request {
            ClientRequest::InitializeRequest(_) => true,
            ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
            other => {
                let meta = other.get_meta();
                meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
                    && meta
                        .protocol_version()
                        .is_some_and(|version| self.versions.contains(&version))
            }
        };
        true
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            write_line(write, bytes).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if !self.read_line().await {
                return None;
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match jsonrpc::check(text) {
                Ok(message) if self.admit(&message) => return Some(message),
                Ok(_) => {}
                Err(rejection) => self.answer(&rejection),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}

/// Writes one whole line and flushes it.
async fn write_line<W: AsyncWrite + Unpin>(
    write: Arc<Mutex<W>>,
    bytes: Vec<u8>,
) -> std::io::Result<()> {
    let mut write = write.lock().await;
    write.write_all(&bytes).await?;
    write.flush().await
}
