//! What the test crates that run the `toolcell` binary and its Python clients share:
//! where the workspace and the compiled-code cache are, and reading a child process's
//! output without hanging on it. A module (not a file directly in host/tests/), so it
//! is no test crate of its own.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A run taking longer than this is a hang.
pub const HANG_LIMIT: Duration = Duration::from_secs(180);

/// The compiled-code cache shared with the other test suites.
pub fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("toolcell-test-cache")
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host crate lives in the workspace")
        .to_path_buf()
}

/// Reads `reader` to its end on a thread of its own, so a child never blocks on a full
/// pipe; bytes that are not UTF-8 are replaced rather than dropping the whole text.
pub fn drain(mut reader: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        let _ = sender.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    receiver
}

/// What `drain` read; empty when the pipe stayed open past [`HANG_LIMIT`].
pub fn collect(receiver: mpsc::Receiver<String>) -> String {
    receiver.recv_timeout(HANG_LIMIT).unwrap_or_default()
}

/// Waits for `child` to exit and returns its exit code; kills it and returns None after
/// `limit` (None too when a signal ended it).
pub fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}
