//! How calls reach the plugin: in the order they were made, through the actor when the
//! plugin is busy; cancellations; operation outcomes; the end of the plugin.

use std::time::{Duration, Instant};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_made_while_a_step_runs_start_in_the_order_they_were_made() {
    let plugin = Plugin::load().await;
    // `busy` yields to the executor on the way (fuel yields), so it goes on as a task
    // holding the plugin while the notes queue for the actor.
    let (_, busy) = plugin.start("busy", "", None);
    let early: Vec<String> = (0..20).map(|n| format!("<{n}>")).collect();
    let early_notes: Vec<_> = early
        .iter()
        .map(|note| plugin.start("note", note, None).1)
        .collect();
    assert_eq!(completed(outcome(busy).await), "");
    // Made while the queue may still be draining: they come after it all the same.
    let late: Vec<String> = (20..40).map(|n| format!("<{n}>")).collect();
    let late_notes: Vec<_> = late
        .iter()
        .map(|note| plugin.start("note", note, None).1)
        .collect();
    for note in early_notes.into_iter().chain(late_notes) {
        assert_eq!(completed(outcome(note).await), "");
    }

    assert_eq!(plugin.journal().await, [early, late].concat().concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_is_cancelled_and_the_plugin_is_told_why() {
    let plugin = Plugin::load().await;
    let (call, waiting) = plugin.start("wait", "", Some(Duration::from_secs(60)));

    plugin.handle.cancel(call, "the user gave up");

    assert_eq!(
        outcome(waiting).await,
        CallOutcome::Cancelled("cancelled: the user gave up".to_string())
    );
    assert_eq!(
        plugin.journal().await,
        "|cancel:cancelled: the user gave up"
    );
    // A call that ended already is not cancelled again.
    plugin.handle.cancel(call, "again");
    assert_eq!(
        plugin.journal().await,
        "|cancel:cancelled: the user gave up"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operations_outcome_resumes_the_call_that_started_it() {
    let plugin = Plugin::load().await;
    let (_, sleeping) = plugin.start("sleep", "", None);
    // Other calls run while it waits.
    assert_eq!(completed(plugin.call("count", "").await), "1");
    assert_eq!(completed(outcome(sleeping).await), "woke");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_past_its_deadline_times_out_and_the_plugin_keeps_its_state() {
    let plugin = Plugin::load().await;
    assert_eq!(completed(plugin.call("count", "").await), "1");
    let started = Instant::now();
    let (_, waiting) = plugin.start("wait", "", Some(Duration::from_millis(100)));

    assert_eq!(
        outcome(waiting).await,
        CallOutcome::TimedOut("tool 'wait' timed out after 100 ms".to_string())
    );
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(
        plugin.journal().await,
        "|cancel:tool 'wait' timed out after 100 ms"
    );
    assert_eq!(completed(plugin.call("count", "").await), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_keeps_its_sandbox_after_every_other_handle_is_gone() {
    // A reload drops the old plugin's handle while its calls are in flight: they
    // finish in the sandbox they started in.
    let plugin = Plugin::load().await;
    let (_, sleeping) = plugin.start("sleep", "", None);
    drop(plugin);
    assert_eq!(completed(outcome(sleeping).await), "woke");
}
