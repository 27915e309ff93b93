//! MCP over stdio: JSON-RPC messages on stdin and stdout, one per line.
//!
//! The process's stdout belongs to the protocol alone. Before serving, the real stdout
//! is duplicated for the protocol and file descriptor 1 is pointed at stderr: whatever
//! else might write to "stdout" (a library, a stray print) lands in the log instead of
//! corrupting the channel. Plugins cannot write there anyway (their `print` goes to the
//! debug log, their WASI stdout is discarded). When stdin ends the server stops: calls
//! in flight are cancelled in their sandboxes and the process exits.
//!
//! Pipes (how MCP clients start servers) are driven by tokio's reactor; anything else
//! (a terminal, a file) through tokio's blocking stdio. The lines themselves are read
//! and written by `lines.rs`, which answers every line rmcp could not serve.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::service::ServerInitializeError;
use rmcp::{Service, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use super::ServerState;
use super::lines::LineTransport;
use super::server::ToolServer;

/// Serves MCP on stdin/stdout until stdin ends (or `shared` is shut down).
pub async fn serve_stdio(shared: ServerState) -> Result<(), String> {
    let (input, output) =
        protocol_channel().map_err(|error| format!("cannot set up stdio: {error}"))?;
    let input = EndSignal {
        inner: input,
        end: shared.shutdown.clone(),
    };
    let server = ToolServer::new(shared.clone());
    let transport = LineTransport::new(input, output, server.supported_protocol_versions());
    let result = match server.serve(transport).await {
        Ok(service) => service
            .waiting()
            .await
            .map(drop)
            .map_err(|error| format!("the MCP server stopped: {error}")),
        // The client went away before the session began: nothing to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(format!("the MCP session did not start: {error}")),
    };
    shared.shut_down();
    result
}

type Input = Box<dyn AsyncRead + Send + Unpin>;
type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// Takes stdin and the real stdout for the protocol and sends fd 1 to stderr.
fn protocol_channel() -> io::Result<(Input, Output)> {
    let output = rustix::io::dup(io::stdout().as_fd())?;
    rustix::stdio::dup2_stdout(io::stderr().as_fd())?;
    let output: Output = if is_fifo(&output)? {
        Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(output)?)
    } else {
        Box::new(tokio::fs::File::from_std(std::fs::File::from(output)))
    };
    let stdin = rustix::io::dup(io::stdin().as_fd())?;
    let input: Input = if is_fifo(&stdin)? {
        Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(stdin)?)
    } else {
        Box::new(tokio::io::stdin())
    };
    Ok((input, output))
}

fn is_fifo(fd: &OwnedFd) -> io::Result<bool> {
    let stat = rustix::fs::fstat(fd)?;
    Ok(rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Fifo)
}

/// A reader that cancels `end` when its input ends (or fails), so that the server stops
/// the calls in flight instead of waiting for them.
struct EndSignal<R> {
    inner: R,
    end: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EndSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &result {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.end.cancel();
        }
        result
    }
}
