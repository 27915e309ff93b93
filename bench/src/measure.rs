//! Small measuring helpers: medians, wall time, and the process's memory.

use std::time::{Duration, Instant};

/// The median of `samples` (which it sorts).
pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `f` `runs` times after one warm-up run and returns the median duration of `f`
/// alone: what it returns is dropped after the clock stops, as the toolcell side drops
/// its runtime outside the measured load.
pub fn median_of<T, E: std::fmt::Debug>(
    runs: usize,
    mut f: impl FnMut() -> Result<T, E>,
) -> Duration {
    drop(f().expect("warm-up run"));
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let made = f().expect("measured run");
            let elapsed = start.elapsed();
            drop(made);
            elapsed
        })
        .collect();
    median(&mut samples)
}

/// The process's resident set size now and at its peak, in KiB (Linux `/proc`).
pub fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    (kib_field(&status, "VmRSS:"), kib_field(&status, "VmHWM:"))
}

/// The process's proportional set size now, in KiB (Linux `/proc`): resident pages,
/// each shared one divided among the mappings that share it. RSS counts a page of a
/// memory image once per plugin instance that maps it, although it is in memory once
/// (and the kernel maps image pages 64 KiB at a time, read or not), so PSS is what the
/// plugins really cost.
pub fn pss_kib() -> u64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    kib_field(&rollup, "Pss:")
}

/// The number after `name` in a `/proc` file of "Name:  123 kB" lines (0 if absent).
fn kib_field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// A duration in the unit that reads best.
pub fn show(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos < 10_000 {
        format!("{:.2} µs", nanos as f64 / 1_000.0)
    } else if nanos < 10_000_000 {
        format!("{:.1} µs", nanos as f64 / 1_000.0)
    } else {
        format!("{:.1} ms", nanos as f64 / 1_000_000.0)
    }
}
