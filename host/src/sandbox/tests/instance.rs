//! The backstops of a step: fuel, the hard deadline, the memory cap; and what the
//! instance reports of its memory.

use std::time::{Duration, Instant};

use super::*;
use crate::base::limits::MIB;
use crate::output::outcome::{CrashCause, PluginFate};
use crate::sandbox::MemoryUse;

/// The crash of a call, as (cause, message); the plugin must have been restarted.
fn crash(outcome: CallOutcome) -> (CrashCause, String) {
    match outcome {
        CallOutcome::Crashed {
            message,
            cause,
            fate: PluginFate::Restarted,
            during_another_call: false,
        } => (cause, message),
        other => panic!("expected a crash of this call and a restart: {other:?}"),
    }
}

/// The message of a crash whose reason is `reason`, after which the plugin restarted.
fn restarted(reason: &str) -> String {
    format!(
        "plugin '{NAME}' crashed: {reason}; it was restarted in a fresh sandbox (its state \
         was lost)"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_burns_its_calls_fuel_is_stopped() {
    let limits = Limits {
        fuel: 1_000_000,
        ..Limits::default()
    };
    let plugin = Plugin::load_with(limits).await;

    assert_eq!(
        crash(plugin.call("loop", "").await),
        (
            CrashCause::OutOfFuel,
            restarted("it ran out of fuel (its budget is 1000000 per call)")
        )
    );
    // Each call has a budget of its own.
    assert_eq!(completed(plugin.call("count", "").await), "1");
    assert_eq!(completed(plugin.call("count", "").await), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_never_returns_is_stopped_at_its_hard_deadline() {
    let limits = Limits {
        deadline_grace: Duration::from_millis(100),
        ..Limits::default()
    };
    let plugin = Plugin::load_with(limits).await;
    let started = Instant::now();

    let (_, looping) = plugin.start("loop", "", Some(Duration::from_millis(100)));

    assert_eq!(
        crash(outcome(looping).await),
        (
            CrashCause::Deadline,
            restarted("it kept running past its deadline without returning control")
        )
    );
    // The deadline plus the grace; not the fuel, which would last for minutes.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < HANG_LIMIT / 2, "{took:?}");
    assert_eq!(completed(plugin.call("count", "").await), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn growing_past_the_memory_cap_crashes_the_instance_and_says_so() {
    // 1 MiB for the plugin makes a cap of 2 x 1 + 16 = 18 MiB of linear memory.
    let plugin = Plugin::load_with(Limits::default().with_memory(MIB)).await;

    assert_eq!(
        crash(plugin.call("grow", "").await),
        (
            CrashCause::MemoryCap,
            restarted("it exceeded its memory cap of 18 MiB")
        )
    );
    assert_eq!(completed(plugin.call("count", "").await), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_memory_after_the_cap_refused_names_the_cap_and_the_instance_survives() {
    let plugin = Plugin::load_with(Limits::default().with_memory(MIB)).await;
    assert_eq!(completed(plugin.call("count", "").await), "1");
    // The shell's one page of 64 KiB.
    let page = 64 * 1024;
    assert_eq!(
        plugin.handle.memory().await,
        Some(MemoryUse {
            lua: None,
            linear: page
        })
    );

    assert_eq!(
        plugin.call("oom", "").await,
        CallOutcome::OutOfMemory(
            "out of memory: the sandbox reached its memory cap of 18 MiB".to_string()
        )
    );

    assert_eq!(completed(plugin.call("count", "").await), "2");
    // Grown by 1 MiB at a time while within the 18 MiB cap: 17 times.
    assert_eq!(
        plugin.handle.memory().await,
        Some(MemoryUse {
            lua: None,
            linear: page + 17 * MIB
        })
    );
}
