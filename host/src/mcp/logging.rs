//! MCP logging: what a plugin logs during a call (`ctx:log`, `print`, `warn`, the
//! SDKs' log calls, all through the host's `log` import) reaches the client that made
//! the call, as `notifications/message`.
//!
//! A call is forwarded when its client asked for logs: with `logging/setLevel` for the
//! session, or (protocol 2026-07-28) with a log level in the request's `_meta`. Lines
//! below that level are not sent; `warn` is `warning`, everything else `info`. Each
//! session may send [`RATE`] lines a second, [`BURST`] at once; what goes over is
//! dropped and counted in one `warning` line when the call ends. A line longer than
//! [`MESSAGE_BYTES`] is cut. Lines written while a plugin loads belong to no call and
//! go to the debug log only. When the plugin's output is untrusted, each line's
//! `message` is inside the call's envelope, as its output is.
//!
//! The [`LogRouter`] is the runtime's log listener: it finds the call's [`CallLog`]
//! and queues the line there; the handler of the `tools/call` request sends what is
//! queued on the request's own stream, before the call's result.

// rmcp marks logging deprecated for protocol 2026-07-28 (SEP-2577); the protocol
// versions this server speaks have it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use serde_json::json;
use tokio::sync::mpsc;

use crate::LogListener;
use crate::base::limits::prefix_within;
use crate::output::envelope::Envelope;

/// Lines a session may be sent per second, on average.
pub const RATE: f64 = 100.0;

/// Lines a session may be sent at once (the rate's bucket).
pub const BURST: f64 = 200.0;

/// The longest line sent; the rest is cut.
pub const MESSAGE_BYTES: usize = 16 * 1024;

/// What `warn` puts before its text (lua-guest/src/environment.rs).
const WARNING_PREFIX: &str = "warning: ";

/// Routes what plugins log to the calls whose clients listen.
#[derive(Default)]
pub struct LogRouter {
    calls: Mutex<HashMap<u64, Listening>>,
}

/// One call whose client listens.
struct Listening {
    tool: String,
    level: LoggingLevel,
    rate: Arc<Rate>,
    dropped: Arc<AtomicU64>,
    lines: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
}

impl LogRouter {
    /// Starts listening to call `call` of `tool` for lines at `level` or above,
    /// within the session's `rate`. Dropping the [`CallLog`] stops.
    pub fn listen(
        self: &Arc<Self>,
        call: u64,
        tool: &str,
        level: LoggingLevel,
        rate: Arc<Rate>,
    ) -> CallLog {
        let (lines, receiver) = mpsc::unbounded_channel();
        let dropped = Arc::new(AtomicU64::new(0));
        self.lock().insert(
            call,
            Listening {
                tool: tool.to_string(),
                level,
                rate,
                dropped: dropped.clone(),
                lines,
            },
        );
        CallLog {
            router: self.clone(),
            call,
            receiver,
            dropped,
            envelope: None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Listening>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LogListener for LogRouter {
    fn log(&self, plugin: &str, call: Option<u64>, message: &str) {
        let Some(call) = call else {
            return;
        };
        let calls = self.lock();
        let Some(listening) = calls.get(&call) else {
            return;
        };
        let (level, text) = match message.strip_prefix(WARNING_PREFIX) {
            Some(text) => (LoggingLevel::Warning, text),
            None => (LoggingLevel::Info, message),
        };
        if rank(level) < rank(listening.level) {
            return;
        }
        if !listening.rate.take() {
            listening.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let data = json!({ "tool": listening.tool, "call": call, "message": cut(text) });
        let mut line = LoggingMessageNotificationParam::new(level, data);
        line.logger = Some(plugin.to_string());
        // The receiver lives as long as the entry: the send cannot fail.
        let _ = listening.lines.send(line);
    }
}

/// The log of one call, as its `tools/call` handler receives it.
pub struct CallLog {
    router: Arc<LogRouter>,
    call: u64,
    receiver: mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    dropped: Arc<AtomicU64>,
    /// The call's envelope, when its plugin's output is untrusted.
    envelope: Option<Envelope>,
}

impl CallLog {
    /// Puts each line's message inside `envelope` from now on, queued lines included:
    /// set once the call (which knows whether its plugin is trusted) has started.
    pub fn envelop(&mut self, envelope: Option<&Envelope>) {
        self.envelope = envelope.cloned();
    }

    /// The next line (waits for one).
    pub async fn next(&mut self) -> Option<LoggingMessageNotificationParam> {
        let line = self.receiver.recv().await?;
        Some(self.delivered(line))
    }

    /// `line` as the client gets it: its message in the envelope, if any.
    fn delivered(
        &self,
        mut line: LoggingMessageNotificationParam,
    ) -> LoggingMessageNotificationParam {
        if let Some(envelope) = &self.envelope
            && let Some(message) = line.data.get_mut("message")
            && let Some(text) = message.as_str()
        {
            *message = json!(envelope.wrap(text));
        }
        line
    }

    /// The lines queued and not taken yet, and, if the rate dropped some, a line
    /// saying how many: what to send before the call's result.
    pub fn rest(&mut self) -> Vec<LoggingMessageNotificationParam> {
        let mut rest = Vec::new();
        while let Ok(line) = self.receiver.try_recv() {
            rest.push(self.delivered(line));
        }
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let message = format!(
                "{dropped} log lines of call {} were dropped: a session is sent at most {RATE} lines a second, {BURST} at once",
                self.call
            );
            let mut line =
                LoggingMessageNotificationParam::new(LoggingLevel::Warning, json!(message));
            line.logger = Some("toolcell".to_string());
            rest.push(line);
        }
        rest
    }
}

impl Drop for CallLog {
    fn drop(&mut self) {
        self.router.lock().remove(&self.call);
    }
}

/// A session's allowance of log lines: a bucket of [`BURST`] refilled at [`RATE`].
pub struct Rate {
    bucket: Mutex<(f64, Instant)>,
}

impl Default for Rate {
    fn default() -> Self {
        Rate {
            bucket: Mutex::new((BURST, Instant::now())),
        }
    }
}

impl Rate {
    /// Takes one line from the bucket, if it holds one.
    fn take(&self) -> bool {
        let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let (tokens, refilled) = &mut *bucket;
        let now = Instant::now();
        *tokens = (*tokens + now.duration_since(*refilled).as_secs_f64() * RATE).min(BURST);
        *refilled = now;
        if *tokens < 1.0 {
            return false;
        }
        *tokens -= 1.0;
        true
    }
}

/// The severity order of MCP's (syslog's) levels.
pub fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// `text`, cut on a character boundary to at most [`MESSAGE_BYTES`].
fn cut(text: &str) -> String {
    if text.len() <= MESSAGE_BYTES {
        return text.to_string();
    }
    format!(
        "{}… [cut: the line was {} bytes; at most 16 KiB is sent]",
        prefix_within(text, MESSAGE_BYTES),
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listening(router: &Arc<LogRouter>, level: LoggingLevel) -> CallLog {
        router.listen(7, "t", level, Arc::new(Rate::default()))
    }

    #[test]
    fn lines_of_a_listened_call_at_its_level_or_above_are_queued() {
        let router = Arc::new(LogRouter::default());
        let mut log = listening(&router, LoggingLevel::Warning);
        router.log("p", Some(7), "plain line");
        router.log("p", Some(7), "warning: careful");
        router.log("p", Some(8), "warning: another call");
        router.log("p", None, "warning: at load");
        let rest = log.rest();
        assert_eq!(rest.len(), 1, "{rest:?}");
        assert_eq!(rest[0].level, LoggingLevel::Warning);
        assert_eq!(rest[0].logger.as_deref(), Some("p"));
        assert_eq!(
            rest[0].data,
            json!({ "tool": "t", "call": 7, "message": "careful" })
        );
        drop(log);
        assert!(router.lock().is_empty(), "the call is forgotten");
    }

    #[tokio::test]
    async fn an_untrusted_plugins_lines_come_inside_the_envelope() {
        let router = Arc::new(LogRouter::default());
        let mut log = listening(&router, LoggingLevel::Info);
        let envelope = Envelope::fresh();
        let tag = envelope.tag().to_string();
        // Logged before the call's envelope is known, and after.
        router.log("p", Some(7), &format!("early</{tag}>"));
        log.envelop(Some(&envelope));
        router.log("p", Some(7), "warning: late <b>");
        let first = log.next().await.expect("a line");
        assert_eq!(
            first.data,
            json!({ "tool": "t", "call": 7, "message": format!("<{tag}>early&lt;/{tag}></{tag}>") })
        );
        let rest = log.rest();
        assert_eq!(
            rest[0].data["message"],
            json!(format!("<{tag}>late &lt;b></{tag}>"))
        );
    }

    #[test]
    fn the_rate_drops_what_goes_over_and_says_how_much() {
        let router = Arc::new(LogRouter::default());
        let mut log = listening(&router, LoggingLevel::Debug);
        for _ in 0..(BURST as usize + 50) {
            router.log("p", Some(7), "line");
        }
        let rest = log.rest();
        // The bucket refills a little while the loop runs.
        assert!(rest.len() > BURST as usize && rest.len() < BURST as usize + 50);
        let last = rest.last().expect("a notice");
        assert_eq!(last.level, LoggingLevel::Warning);
        assert!(
            last.data
                .as_str()
                .is_some_and(|text| text.contains("were dropped")),
            "{last:?}"
        );
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let text = "é".repeat(MESSAGE_BYTES);
        let cut = cut(&text);
        assert!(cut.starts_with(&"é".repeat(MESSAGE_BYTES / 2)));
        assert!(
            cut.ends_with("at most 16 KiB is sent]"),
            "{}",
            &cut[cut.len() - 80..]
        );
    }
}
