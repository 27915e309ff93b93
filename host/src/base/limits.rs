//! The resource limits every plugin runs under, with clm-tool(5)'s defaults.

use std::time::Duration;

pub use toolcell_limits::{MAX_JSON_BYTES, MAX_TOOLS_PER_PLUGIN, MIB, format_bytes};

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
    /// How long past a deadline the host waits for the plugin to stop itself before it
    /// stops the step at its next fuel yield (code that never returns to the Lua VM).
    pub deadline_grace: Duration,
    /// Largest accepted JSON arguments of a call (clm-tool(5)'s json.decode limit).
    pub max_args_bytes: usize,
    /// Operations (HTTP requests and timers) one plugin may have pending at once.
    pub max_pending_ops: usize,
    /// Questions one call may ask the user (`ctx:ask`); 0: the plugin may not ask.
    pub questions_per_call: u32,
    /// A plugin that crashes this many times within `crash_window` is disabled.
    pub max_crashes: usize,
    /// See `max_crashes`.
    pub crash_window: Duration,
    /// What compiling the plugin's tool schemas may cost the host.
    pub schemas: SchemaBudget,
    /// How much the plugin may write to the log.
    pub log: LogBudget,
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
            max_args_bytes: MAX_JSON_BYTES,
            max_pending_ops: 65_536,
            questions_per_call: 16,
            max_crashes: 5,
            crash_window: Duration::from_secs(60),
            schemas: SchemaBudget::default(),
            log: LogBudget::default(),
        }
    }
}

/// What compiling one plugin's tool schemas (their validators) may cost the host: a
/// schema is the plugin's to write, but its validator lives in the host's memory and
/// its regular expressions are compiled on the host's threads. A tool over budget is
/// not registered (see `schema_budget`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaBudget {
    /// The most JSON text one tool's `params_schema` may have.
    pub schema_bytes: usize,
    /// The most JSON text all of a plugin's schemas may have together.
    pub plugin_schema_bytes: usize,
    /// The deepest nesting of objects and arrays in one schema.
    pub depth: usize,
    /// The most memory one regular expression (a `pattern`, a `patternProperties`
    /// key) may compile to.
    pub pattern_bytes: usize,
    /// The most memory all of a plugin's distinct regular expressions may compile to
    /// together.
    pub plugin_pattern_bytes: usize,
    /// The most time compiling all of a plugin's schemas may take.
    pub compile_time: Duration,
}

impl Default for SchemaBudget {
    fn default() -> Self {
        SchemaBudget {
            schema_bytes: 64 * 1024,
            plugin_schema_bytes: 256 * 1024,
            depth: 64,
            pattern_bytes: 2 * MIB as usize,
            plugin_pattern_bytes: 8 * MIB as usize,
            compile_time: Duration::from_secs(2),
        }
    }
}

/// How much one plugin may write to the log (`ctx:log`, `print`, `warn`): a budget per
/// call (and for its load) and a rate for the plugin as a whole, in bytes as written
/// (prefixes included). What goes over is dropped and counted in one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogBudget {
    /// The most one call (or the load) may write.
    pub call_bytes: usize,
    /// The plugin's sustained rate, in bytes per second.
    pub bytes_per_second: usize,
    /// What the plugin may write at once beyond its rate (the size of the bucket its
    /// rate refills).
    pub burst_bytes: usize,
}

impl Default for LogBudget {
    fn default() -> Self {
        LogBudget {
            call_bytes: MIB as usize,
            bytes_per_second: 256 * 1024,
            burst_bytes: 4 * MIB as usize,
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
    format!(
        "{}… [cut: the message was {} bytes; at most {} is kept]",
        prefix_within(&message, MAX_MESSAGE_BYTES),
        message.len(),
        format_bytes(MAX_MESSAGE_BYTES as u64)
    )
}

/// The longest start of `text` that is at most `limit` bytes and ends on a character
/// boundary.
pub fn prefix_within(text: &str, limit: usize) -> &str {
    let mut end = limit.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

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
