//! The resource limits every plugin runs under, with clm-tool(5)'s defaults.

use std::time::Duration;

/// One mebibyte.
pub const MIB: u64 = 1024 * 1024;

/// Limits for one plugin. The defaults are clm-tool(5)'s where it names one (8 MiB of
/// memory, 500 ms for load-time code, 30 s per call) and generous backstops elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The plugin's own heap (for Lua: the Lua allocator's limit). Exceeding it is an
    /// ordinary, catchable "not enough memory" error inside the plugin.
    pub memory: u64,
    /// Hard cap on the instance's linear memory, enforced by the host. Reaching it traps
    /// the instance, which is then discarded. Must leave room for the runtime itself
    /// and for transient copies beyond `memory`.
    pub linear_memory: u64,
    /// Deadline for a plugin's load-time code.
    pub load_timeout: Duration,
    /// Deadline of a call when the tool sets no `timeout_ms`.
    pub call_timeout: Duration,
    /// Wasm fuel (roughly: instructions) one call (or one load) may burn in all its steps.
    pub fuel: u64,
    /// How long past a deadline the host waits for the plugin to stop itself before the
    /// epoch backstop traps it (code that never returns to the Lua VM).
    pub deadline_grace: Duration,
    /// Largest accepted JSON arguments of a call (clm-tool(5)'s json.decode limit).
    pub max_args_bytes: usize,
    /// Operations (HTTP requests and timers) one plugin may have pending at once.
    pub max_pending_ops: usize,
    /// A plugin that crashes this many times within `crash_window` is disabled.
    pub max_crashes: usize,
    /// See `max_crashes`.
    pub crash_window: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 8 * MIB,
            linear_memory: 8 * MIB * 2 + 16 * MIB,
            load_timeout: Duration::from_millis(500),
            call_timeout: Duration::from_secs(30),
            fuel: 100_000_000_000,
            deadline_grace: Duration::from_millis(200),
            max_args_bytes: 2 * MIB as usize,
            max_pending_ops: 65_536,
            max_crashes: 5,
            crash_window: Duration::from_secs(60),
        }
    }
}

impl Limits {
    /// Sets the plugin heap limit and derives the hard linear-memory cap from it.
    pub fn with_memory(mut self, memory: u64) -> Self {
        self.memory = memory;
        self.linear_memory = memory.saturating_mul(2).saturating_add(16 * MIB);
        self
    }
}

/// Formats a byte count the way limits appear in messages ("8 MiB", "512 KiB").
pub fn format_bytes(bytes: u64) -> String {
    const KIB: u64 = 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The most of a failure message a plugin may hand the model (and the user): a
/// failure explains, it does not carry data, and a multi-megabyte one would flood the
/// model's context.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// `message`, cut to [`MAX_MESSAGE_BYTES`] (at a character boundary) with a note
/// saying how long it was, when it is longer.
pub fn bounded_message(message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [cut: the message was {} bytes; at most {} is kept]",
        &message[..end],
        message.len(),
        format_bytes(MAX_MESSAGE_BYTES as u64)
    )
}

/// The most tools one plugin may register: more would flood the model's tool list,
/// and no honest plugin comes near it.
pub const MAX_TOOLS_PER_PLUGIN: usize = 1000;

#[cfg(test)]
mod tests {
    use super::{MAX_MESSAGE_BYTES, bounded_message};

    #[test]
    fn short_messages_pass_and_long_ones_are_cut_at_a_character_boundary() {
        assert_eq!(bounded_message("short".to_string()), "short");
        let exact = "x".repeat(MAX_MESSAGE_BYTES);
        assert_eq!(bounded_message(exact.clone()), exact);
        // 'é' is two bytes: a cut at the limit would split one, so it moves back.
        let long = format!("a{}", "é".repeat(MAX_MESSAGE_BYTES));
        let cut = bounded_message(long.clone());
        let kept = format!("a{}", "é".repeat((MAX_MESSAGE_BYTES - 2) / 2));
        assert_eq!(
            cut,
            format!(
                "{kept}… [cut: the message was {} bytes; at most 64 KiB is kept]",
                long.len()
            )
        );
    }
}
