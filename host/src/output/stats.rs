//! What happened to the calls of each tool: how many ended each way, how long they ran,
//! the fuel they burnt; and each plugin's peak memory. [`Runtime::stats`] reads them;
//! `serve --metrics` exposes them to Prometheus.
//!
//! Recording a call costs a few relaxed atomic additions on counters made when the
//! tool was registered: no allocation and no lock on the call path.
//!
//! [`Runtime::stats`]: crate::Runtime::stats

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::base::fast_map::FastMap;
use crate::output::outcome::CallOutcome;

/// Every outcome label a call is counted under, in a fixed order: the labels of
/// [`CallOutcome::label`].
pub const OUTCOMES: [&str; 12] = [
    "completed",
    "failed",
    "broke_rule",
    "timed_out",
    "out_of_memory",
    "crashed",
    "disabled",
    "cancelled",
    "stopped",
    "denied",
    "refused",
    "invalid_arguments",
];

/// The upper bounds of the latency histogram's buckets, in seconds (a last bucket,
/// `+Inf`, takes the rest): from a trivial call (tens of microseconds) to the default
/// deadline.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

/// Where an outcome is counted in [`OUTCOMES`].
fn slot(outcome: &CallOutcome) -> usize {
    match outcome {
        CallOutcome::Completed(_) | CallOutcome::Content(_) => 0,
        CallOutcome::Failed(_) => 1,
        CallOutcome::BrokeRule(_) => 2,
        CallOutcome::TimedOut(_) => 3,
        CallOutcome::OutOfMemory(_) => 4,
        CallOutcome::Crashed { .. } => 5,
        CallOutcome::Disabled(_) => 6,
        CallOutcome::Cancelled(_) => 7,
        CallOutcome::Stopped(_) => 8,
        CallOutcome::Denied(_) => 9,
        CallOutcome::Refused(_) => 10,
        CallOutcome::InvalidArguments(_) => 11,
    }
}

/// The slot of calls refused for invalid arguments before a `Call` existed.
const INVALID_ARGUMENTS: usize = 11;

/// One tool's counters.
#[derive(Debug, Default)]
pub(crate) struct ToolMeter {
    outcomes: [AtomicU64; OUTCOMES.len()],
    /// Calls per latency bucket (not cumulative); the last is `+Inf`.
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    nanos: AtomicU64,
    fuel: AtomicU64,
}

impl ToolMeter {
    /// Counts a call that ended with `outcome`; `ran` is how long it ran in its plugin,
    /// when it got there.
    pub fn record(&self, outcome: &CallOutcome, ran: Option<Duration>, fuel: u64) {
        self.outcomes[slot(outcome)].fetch_add(1, Ordering::Relaxed);
        if let Some(ran) = ran {
            let seconds = ran.as_secs_f64();
            let bucket = LATENCY_BUCKETS
                .iter()
                .position(|bound| seconds <= *bound)
                .unwrap_or(LATENCY_BUCKETS.len());
            self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
            let nanos = u64::try_from(ran.as_nanos()).unwrap_or(u64::MAX);
            self.nanos.fetch_add(nanos, Ordering::Relaxed);
        }
        if fuel > 0 {
            self.fuel.fetch_add(fuel, Ordering::Relaxed);
        }
    }

    /// Counts a call refused for its arguments before it started.
    pub fn invalid_arguments(&self) {
        self.outcomes[INVALID_ARGUMENTS].fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self, tool: &str, plugin: &str) -> ToolStats {
        let mut cumulative = 0;
        let buckets = LATENCY_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(&self.buckets)
            .map(|(bound, count)| {
                cumulative += count.load(Ordering::Relaxed);
                (bound, cumulative)
            })
            .collect();
        ToolStats {
            tool: tool.to_string(),
            plugin: plugin.to_string(),
            calls: OUTCOMES
                .iter()
                .zip(&self.outcomes)
                .map(|(label, count)| (*label, count.load(Ordering::Relaxed)))
                .collect(),
            latency: Histogram {
                buckets,
                count: cumulative,
                sum: Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
            },
            fuel_used: self.fuel.load(Ordering::Relaxed),
        }
    }
}

/// The meters of every tool a runtime has registered, kept across reloads so that the
/// counts of a reloaded plugin's tools go on.
#[derive(Debug, Default)]
pub(crate) struct Meters {
    tools: Mutex<Vec<(String, String, Arc<ToolMeter>)>>,
    index: Mutex<FastMap<(String, String), usize>>,
}

impl Meters {
    /// The meter of `tool` of `plugin`, made on first use (when the tool is
    /// registered, never on the call path).
    pub fn tool(&self, tool: &str, plugin: &str) -> Arc<ToolMeter> {
        let mut index = self.index.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (tool.to_string(), plugin.to_string());
        let position = *index.entry(key).or_insert_with(|| {
            tools.push((
                tool.to_string(),
                plugin.to_string(),
                Arc::new(ToolMeter::default()),
            ));
            tools.len() - 1
        });
        tools[position].2.clone()
    }

    /// Every tool's statistics, in the order the tools were first registered.
    pub fn read(&self) -> Vec<ToolStats> {
        let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        tools
            .iter()
            .map(|(tool, plugin, meter)| meter.read(tool, plugin))
            .collect()
    }
}

/// What a runtime has counted so far ([`Runtime::stats`](crate::Runtime::stats)).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Every tool that was ever registered, in the order of its first registration.
    pub tools: Vec<ToolStats>,
    /// Every plugin loaded now, in load order.
    pub plugins: Vec<PluginStats>,
}

impl Stats {
    /// The statistics of tool `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolStats> {
        self.tools.iter().find(|tool| tool.tool == name)
    }

    /// The statistics of plugin `id`.
    pub fn plugin(&self, id: &str) -> Option<&PluginStats> {
        self.plugins.iter().find(|plugin| plugin.plugin == id)
    }
}

/// One tool's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStats {
    /// The tool's name.
    pub tool: String,
    /// The id of its plugin.
    pub plugin: String,
    /// Calls by outcome label (every label of [`OUTCOMES`], zero or not).
    pub calls: Vec<(&'static str, u64)>,
    /// How long the calls that reached the plugin ran there: from the start in the
    /// plugin (after approval, interceptors and any wait for a concurrency cap) to
    /// the outcome.
    pub latency: Histogram,
    /// The fuel the tool's calls burnt, all together.
    pub fuel_used: u64,
}

impl ToolStats {
    /// The calls that ended with outcome `label` (`completed`, `denied`, ...).
    pub fn calls(&self, label: &str) -> u64 {
        self.calls
            .iter()
            .find(|(name, _)| *name == label)
            .map_or(0, |(_, count)| *count)
    }

    /// Every call counted, whatever its outcome.
    pub fn total(&self) -> u64 {
        self.calls.iter().map(|(_, count)| count).sum()
    }
}

/// A latency histogram, as Prometheus takes one.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// (upper bound in seconds, calls at most that long), cumulative; the last bound
    /// is infinite.
    pub buckets: Vec<(f64, u64)>,
    /// The calls observed.
    pub count: u64,
    /// Their durations, added up.
    pub sum: Duration,
}

/// One plugin's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginStats {
    /// The plugin's id.
    pub plugin: String,
    /// The most linear memory an instance of it has had, in bytes.
    pub peak_memory: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_lands_in_its_outcome_and_its_latency_bucket() {
        let meters = Meters::default();
        let meter = meters.tool("hello", "greet");
        meter.record(
            &CallOutcome::Completed("hi".into()),
            Some(Duration::from_micros(300)),
            1000,
        );
        meter.record(
            &CallOutcome::Completed("hi".into()),
            Some(Duration::from_secs(60)),
            500,
        );
        meter.record(&CallOutcome::Denied("no".into()), None, 0);
        meter.invalid_arguments();
        // The same tool of the same plugin keeps its meter.
        assert!(Arc::ptr_eq(&meter, &meters.tool("hello", "greet")));
        let stats = meters.read();
        let hello = &stats[0];
        assert_eq!((hello.calls("completed"), hello.calls("denied")), (2, 1));
        assert_eq!((hello.calls("invalid_arguments"), hello.total()), (1, 4));
        assert_eq!(hello.fuel_used, 1500);
        assert_eq!(hello.latency.count, 2);
        // 300 µs is above 250 µs and at most 500 µs; 60 s only fits +Inf.
        let at = |bound: f64| {
            hello
                .latency
                .buckets
                .iter()
                .find(|(b, _)| *b == bound)
                .map(|(_, count)| *count)
        };
        assert_eq!((at(0.00025), at(0.0005)), (Some(0), Some(1)));
        assert_eq!((at(30.0), at(f64::INFINITY)), (Some(1), Some(2)));
        assert_eq!(hello.latency.sum, Duration::from_micros(60_000_300));
    }

    #[test]
    fn every_outcome_label_has_its_slot() {
        let text = String::new;
        let outcomes = [
            CallOutcome::Completed(text()),
            CallOutcome::Failed(text()),
            CallOutcome::BrokeRule(text()),
            CallOutcome::TimedOut(text()),
            CallOutcome::OutOfMemory(text()),
            CallOutcome::Crashed {
                message: text(),
                cause: crate::CrashCause::Trap,
                fate: crate::PluginFate::Restarted,
                during_another_call: false,
            },
            CallOutcome::Disabled(text()),
            CallOutcome::Cancelled(text()),
            CallOutcome::Stopped(text()),
            CallOutcome::Denied(text()),
            CallOutcome::Refused(text()),
            CallOutcome::InvalidArguments(text()),
        ];
        for (index, outcome) in outcomes.iter().enumerate() {
            assert_eq!((OUTCOMES[index], slot(outcome)), (outcome.label(), index));
        }
    }
}
