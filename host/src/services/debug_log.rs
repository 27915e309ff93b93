//! The debug log of clm(1): `ctx:log` and `print` append to one file (the command line
//! takes it from `CLM_DEBUG_LOG` or `TOOLCELL_DEBUG_LOG`). Without one the plugins are
//! told so at load time and never call the host for it.
//!
//! A plugin's step never waits on the disk: lines go to a queue that a thread of the
//! log's own writes to the file. The queue holds at most [`QUEUE_BYTES`]; what a slow
//! disk leaves no room for is dropped and counted in one line once the writer catches
//! up. How much each plugin may write at all is its log budget's business
//! (`sandbox::log`).

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::SystemTime;

/// The most text waiting for the disk.
pub const QUEUE_BYTES: usize = 8 * 1024 * 1024;

/// An append-only debug log file shared by every plugin.
#[derive(Debug)]
pub struct DebugLog {
    queue: Arc<Queue>,
    writer: Option<JoinHandle<()>>,
}

/// Text waiting for the writer thread.
#[derive(Debug, Default)]
struct Queue {
    pending: Mutex<Pending>,
    /// Text was queued, or the log is closing.
    ready: Condvar,
    /// The writer wrote everything it had.
    idle: Condvar,
}

#[derive(Debug, Default)]
struct Pending {
    texts: VecDeque<String>,
    bytes: usize,
    /// Bytes refused since the writer last caught up.
    dropped: usize,
    /// The writer is writing what it took from the queue.
    writing: bool,
    /// The log is closing: write what is left and stop.
    closing: bool,
}

impl DebugLog {
    /// Opens (creating if needed) `path` for appending, and starts its writer thread.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let queue = Arc::new(Queue::default());
        let writer = std::thread::Builder::new()
            .name("toolcell-log".to_string())
            .spawn({
                let queue = queue.clone();
                move || write_out(&queue, file)
            })?;
        Ok(DebugLog {
            queue,
            writer: Some(writer),
        })
    }

    /// Queues `text` (whole lines) for the file, or counts it as dropped when the
    /// queue is full.
    pub fn write(&self, text: String) {
        let mut pending = self
            .queue
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if pending.bytes + text.len() > QUEUE_BYTES {
            pending.dropped += text.len();
            return;
        }
        pending.bytes += text.len();
        pending.texts.push_back(text);
        drop(pending);
        self.queue.ready.notify_one();
    }
}

impl DebugLog {
    /// Waits until everything queued so far is in the file (what a process does before
    /// it exits).
    pub fn flush(&self) {
        let mut pending = self
            .queue
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while !pending.texts.is_empty() || pending.writing {
            if self.writer.as_ref().is_none_or(JoinHandle::is_finished) {
                return;
            }
            pending = self
                .queue
                .idle
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for DebugLog {
    fn drop(&mut self) {
        self.queue
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closing = true;
        self.queue.ready.notify_one();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer thread: appends queued text to `file` until the log closes.
fn write_out(queue: &Queue, mut file: File) {
    loop {
        let mut pending = queue.pending.lock().unwrap_or_else(PoisonError::into_inner);
        while pending.texts.is_empty() && !pending.closing {
            pending = queue
                .ready
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let texts: Vec<String> = pending.texts.drain(..).collect();
        pending.bytes = 0;
        let dropped = std::mem::take(&mut pending.dropped);
        let closing = pending.closing;
        pending.writing = true;
        drop(pending);
        let mut result = texts
            .iter()
            .try_for_each(|text| file.write_all(text.as_bytes()));
        if dropped > 0 && result.is_ok() {
            let stamp = humantime::format_rfc3339_millis(SystemTime::now());
            let line = format!(
                "{stamp} [toolcell] {dropped} bytes of log were dropped: the disk fell behind\n"
            );
            result = file.write_all(line.as_bytes());
        }
        if let Err(error) = result {
            tracing::debug!("could not write the debug log: {error}");
        }
        queue
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .writing = false;
        queue.idle.notify_all();
        if closing {
            return;
        }
    }
}
