//! The process's resident set size, read from `/proc/self/status`.

/// The resident set size of this process in bytes, if the system reports it.
pub fn current() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
