//! What becomes of a plugin whose instance crashes: restarted in a fresh instance, its
//! calls in flight failed, and disabled when it crashes too often.

use std::time::Duration;

use super::*;
use crate::output::outcome::{CrashCause, PluginFate};

/// What a trap in the plugin's own code reads as.
const TRAP: &str = "it aborted (a trap in the plugin's own code)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_restarts_the_plugin_afresh_and_fails_every_call_it_had_in_flight() {
    let plugin = Plugin::load().await;
    assert_eq!(completed(plugin.call("count", "").await), "1");
    let (_, waiting) = plugin.start("wait", "", Some(Duration::from_secs(60)));

    assert_eq!(
        plugin.call("trap", "").await,
        CallOutcome::Crashed {
            message: format!(
                "plugin '{NAME}' crashed: {TRAP}; it was restarted in a fresh sandbox (its \
                 state was lost)"
            ),
            cause: CrashCause::Trap,
            fate: PluginFate::Restarted,
            during_another_call: false,
        }
    );
    assert_eq!(
        outcome(waiting).await,
        CallOutcome::Crashed {
            message: format!(
                "plugin '{NAME}' crashed during another call: {TRAP}; it was restarted in a \
                 fresh sandbox (its state was lost)"
            ),
            cause: CrashCause::Trap,
            fate: PluginFate::Restarted,
            during_another_call: true,
        }
    );
    // The fresh instance counts from the start again.
    assert_eq!(completed(plugin.call("count", "").await), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_crashes_too_often_is_disabled_and_runs_no_more_calls() {
    let limits = Limits {
        max_crashes: 2,
        ..Limits::default()
    };
    let plugin = Plugin::load_with(limits).await;
    let CallOutcome::Crashed { fate, .. } = plugin.call("trap", "").await else {
        panic!("a trap crashes");
    };
    assert_eq!(fate, PluginFate::Restarted);

    assert_eq!(
        plugin.call("trap", "").await,
        CallOutcome::Crashed {
            message: format!(
                "plugin '{NAME}' crashed: {TRAP}; it is now disabled: it crashed 2 times \
                 within 60 s"
            ),
            cause: CrashCause::Trap,
            fate: PluginFate::Disabled,
            during_another_call: false,
        }
    );
    assert_eq!(
        plugin.call("count", "").await,
        CallOutcome::Disabled(format!(
            "plugin '{NAME}' is disabled: it crashed 2 times within 60 s (last: {TRAP})"
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_further_apart_than_the_window_do_not_add_up() {
    let limits = Limits {
        max_crashes: 2,
        crash_window: Duration::from_millis(50),
        ..Limits::default()
    };
    let plugin = Plugin::load_with(limits).await;
    for _ in 0..3 {
        let CallOutcome::Crashed { fate, .. } = plugin.call("trap", "").await else {
            panic!("a trap crashes");
        };
        assert_eq!(fate, PluginFate::Restarted);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(completed(plugin.call("count", "").await), "1");
}
