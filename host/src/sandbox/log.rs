//! A plugin's log: what `ctx:log`, `print` and `warn` write (the `log` host import)
//! passes here, the one way to every sink (the debug log file and the embedder's
//! [`LogListener`], such as the MCP server), under the plugin's
//! log budget: so many bytes per call (and for the load), and a rate for the plugin as
//! a whole. Bytes are counted as written, each line with its prefix, so a message of
//! newlines costs what it fills. What goes over is dropped whole line by whole line;
//! when the call ends, one line says how much was dropped and why.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use super::operations::CallId;
use crate::base::limits::{LogBudget, format_bytes};
use crate::services::debug_log::DebugLog;
use crate::services::log_listener::LogListener;

/// One plugin's log.
pub struct PluginLog {
    plugin: String,
    budget: LogBudget,
    sink: Option<Arc<DebugLog>>,
    listener: Option<Arc<dyn LogListener>>,
    spent: Mutex<Spent>,
}

/// What the plugin has written: per call (`None`: the load), and its rate's bucket.
#[derive(Debug)]
struct Spent {
    calls: HashMap<Option<CallId>, CallSpent>,
    /// Bytes the rate allows now, up to the burst.
    bucket: f64,
    refilled: Instant,
}

#[derive(Debug, Default)]
struct CallSpent {
    written: usize,
    dropped_bytes: usize,
    dropped_messages: usize,
    /// Whether the call's own budget cut it (else the plugin's rate did), or both.
    over_call: bool,
    over_rate: bool,
}

impl PluginLog {
    /// The log of plugin `plugin`, writing to the debug log `sink` and to `listener`
    /// (neither: the log is off) within `budget`.
    pub fn new(
        plugin: &str,
        budget: LogBudget,
        sink: Option<Arc<DebugLog>>,
        listener: Option<Arc<dyn LogListener>>,
    ) -> Self {
        let bucket = budget.burst_bytes as f64;
        PluginLog {
            plugin: plugin.to_string(),
            budget,
            sink,
            listener,
            spent: Mutex::new(Spent {
                calls: HashMap::new(),
                bucket,
                refilled: Instant::now(),
            }),
        }
    }

    /// Whether anything is written at all (the plugin is told at load).
    pub fn is_on(&self) -> bool {
        self.sink.is_some() || self.listener.is_some()
    }

    /// Writes `message` for `call` (`None`: the load), one stamped line per line, as
    /// far as the budget allows.
    pub fn write(&self, call: Option<CallId>, message: &str) {
        if !self.is_on() {
            return;
        }
        let prefix = self.prefix();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent.refill(&self.budget);
        let bucket = spent.bucket as usize;
        let entry = spent.calls.entry(call).or_default();
        let call_left = self.budget.call_bytes.saturating_sub(entry.written);
        let allowed = call_left.min(bucket);
        let mut text = String::new();
        let mut taken = 0;
        // An empty message is one empty line.
        let pieces = message
            .split_inclusive('\n')
            .chain(message.is_empty().then_some(""));
        for piece in pieces {
            let line = piece
                .strip_suffix('\n')
                .map_or(piece, |line| line.strip_suffix('\r').unwrap_or(line));
            if text.len() + prefix.len() + line.len() + 1 > allowed {
                break;
            }
            text.push_str(&prefix);
            text.push_str(line);
            text.push('\n');
            taken += piece.len();
        }
        let rest = &message[taken..];
        let written_all = !text.is_empty() && rest.is_empty();
        let cut_bytes = if written_all {
            0
        } else {
            formatted_size(rest, prefix.len())
        };
        entry.written += text.len();
        if !written_all {
            entry.dropped_bytes += cut_bytes;
            entry.dropped_messages += 1;
            if call_left <= bucket {
                entry.over_call = true;
            } else {
                entry.over_rate = true;
            }
        }
        spent.bucket -= text.len() as f64;
        drop(spent);
        if text.is_empty() {
            return;
        }
        if let Some(listener) = &self.listener {
            let kept = if written_all {
                message
            } else {
                &message[..taken]
            };
            listener.log(&self.plugin, call, kept.strip_suffix('\n').unwrap_or(kept));
        }
        if let Some(sink) = &self.sink {
            sink.write(text);
        }
    }

    /// The call (`None`: the load) has ended: says how much of its log was dropped,
    /// if any, in one line.
    pub fn end(&self, call: Option<CallId>) {
        if !self.is_on() {
            return;
        }
        let ended = self
            .spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .calls
            .remove(&call);
        let Some(ended) = ended.filter(|ended| ended.dropped_bytes > 0) else {
            return;
        };
        let of = match call {
            Some(call) => format!("call {call}"),
            None => "the load".to_string(),
        };
        let mut limits = Vec::new();
        if ended.over_call {
            limits.push(format!(
                "a call may write {}",
                format_bytes(self.budget.call_bytes as u64)
            ));
        }
        if ended.over_rate {
            limits.push(format!(
                "the plugin may write {}/s, {} at once",
                format_bytes(self.budget.bytes_per_second as u64),
                format_bytes(self.budget.burst_bytes as u64)
            ));
        }
        let notice = format!(
            "[log cut: {} bytes in {} messages of {of} were dropped; {}]",
            ended.dropped_bytes,
            ended.dropped_messages,
            limits.join("; ")
        );
        if let Some(listener) = &self.listener {
            listener.log(&self.plugin, call, &notice);
        }
        if let Some(sink) = &self.sink {
            sink.write(format!("{}{notice}\n", self.prefix()));
        }
    }

    fn prefix(&self) -> String {
        let stamp = humantime::format_rfc3339_millis(SystemTime::now());
        format!("{stamp} [{}] ", self.plugin)
    }
}

/// The bytes `text` takes once written as lines of `prefix_len` bytes of prefix, counted
/// without going through its lines one by one (a message of millions of newlines).
fn formatted_size(text: &str, prefix_len: usize) -> usize {
    let newlines = text.bytes().filter(|&byte| byte == b'\n').count();
    let lines = (newlines + usize::from(!text.ends_with('\n'))).max(1);
    text.len() - newlines + lines * (prefix_len + 1)
}

impl Spent {
    /// Adds what the rate allowed since the last refill, up to the burst.
    fn refill(&mut self, budget: &LogBudget) {
        let now = Instant::now();
        let earned =
            now.duration_since(self.refilled).as_secs_f64() * budget.bytes_per_second as f64;
        self.bucket = (self.bucket + earned).min(budget.burst_bytes as f64);
        self.refilled = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_when_closed(dir: &tempfile::TempDir, log: PluginLog, sink: Arc<DebugLog>) -> String {
        drop(log);
        drop(Arc::into_inner(sink).expect("the only reference"));
        std::fs::read_to_string(dir.path().join("debug.log")).expect("log")
    }

    fn logged(budget: LogBudget, write: impl FnOnce(&PluginLog)) -> String {
        let dir = tempfile::tempdir().expect("temp dir");
        let sink = Arc::new(DebugLog::open(&dir.path().join("debug.log")).expect("log"));
        let log = PluginLog::new("p", budget, Some(sink.clone()), None);
        write(&log);
        read_when_closed(&dir, log, sink)
    }

    /// The lines without their time stamps.
    fn unstamped(text: &str) -> Vec<&str> {
        text.lines()
            .map(|line| line.split_once(' ').map_or(line, |(_, rest)| rest))
            .collect()
    }

    #[test]
    fn each_line_is_stamped_and_an_empty_message_is_one_line() {
        let text = logged(LogBudget::default(), |log| {
            log.write(Some(1), "one\ntwo");
            log.write(Some(1), "");
        });
        assert_eq!(unstamped(&text), ["[p] one", "[p] two", "[p] "]);
    }

    #[test]
    fn a_call_over_its_budget_is_cut_and_the_cut_is_counted_once() {
        let budget = LogBudget {
            call_bytes: 200,
            ..LogBudget::default()
        };
        let text = logged(budget, |log| {
            // Each line is the prefix (about 30 bytes), 40 bytes and a newline.
            for _ in 0..10 {
                log.write(Some(7), &"x".repeat(40));
            }
            log.write(Some(8), "other call");
            log.end(Some(7));
            log.end(Some(8));
        });
        assert!(text.len() < 400, "{text}");
        let lines = unstamped(&text);
        let x_lines = lines.iter().filter(|line| line.contains("xxxx")).count();
        assert!((2..=3).contains(&x_lines), "{lines:?}");
        assert!(lines.contains(&"[p] other call"), "{lines:?}");
        let cut = lines.last().expect("a last line");
        assert!(
            cut.starts_with("[p] [log cut: ")
                && cut.ends_with(&format!(
                    " bytes in {} messages of call 7 were dropped; a call may write 200 bytes]",
                    10 - x_lines
                )),
            "{cut}"
        );
    }

    #[test]
    fn the_plugin_rate_holds_across_calls() {
        let budget = LogBudget {
            bytes_per_second: 1,
            burst_bytes: 300,
            ..LogBudget::default()
        };
        let text = logged(budget, |log| {
            for call in 0..10 {
                log.write(Some(call), &"y".repeat(40));
                log.end(Some(call));
            }
        });
        let lines = unstamped(&text);
        let written = lines.iter().filter(|line| line.contains("yyyy")).count();
        assert!((3..=4).contains(&written), "{lines:?}");
        assert!(
            lines.last().expect("a line").ends_with(
                "messages of call 9 were dropped; the plugin may write 1 byte/s, 300 bytes at once]"
            ),
            "{lines:?}"
        );
    }

    #[test]
    fn a_flood_of_newlines_costs_what_it_writes() {
        let budget = LogBudget {
            call_bytes: 1024,
            ..LogBudget::default()
        };
        let text = logged(budget, |log| {
            log.write(None, &"\n".repeat(3_000_000));
            log.end(None);
        });
        assert!(text.len() <= 1024 + 200, "{} bytes", text.len());
        assert!(text.contains("messages of the load were dropped"), "{text}");
    }
}
