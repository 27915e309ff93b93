//! Plugin instances are created one at a time in a process: instantiation and the
//! plugin's load-time code take turns.
//!
//! Creating an instance is mostly page faults on its fresh memory (the copy-on-write
//! memory image, the heap its load grows). While another thread of the process runs on
//! another core, every copy-on-write fault on a page the kernel had already mapped
//! read-only flushes that core's TLB by an inter-processor interrupt, which a VM makes
//! expensive: many plugins load markedly faster taking turns than from parallel load
//! tasks (docs/performance.md).
//!
//! A turn is short: a creation still running after `TURN` gives it up at its next
//! yield to the executor (fuel yields come every few milliseconds of running code) and
//! goes on beside the others, so a slow or hostile plugin never holds up the rest.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// How long one creation keeps the turn before others may start beside it.
const TURN: Duration = Duration::from_millis(2);

/// The single turn, process-wide: the cost it avoids is per address space.
static TURNS: Semaphore = Semaphore::const_new(1);

/// Runs `creation` when it is its turn, giving the turn up once `creation` has run
/// (or waited) for longer than `TURN`.
pub async fn in_turn<F: Future>(creation: F) -> F::Output {
    // The semaphore is never closed; were it, running without a turn is still correct.
    let mut turn = TURNS.acquire().await.ok();
    let started = Instant::now();
    let mut creation = std::pin::pin!(creation);
    std::future::poll_fn(|cx| {
        let poll = creation.as_mut().poll(cx);
        if poll.is_pending() && turn.is_some() && started.elapsed() >= TURN {
            turn = None;
        }
        poll
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// A creation that keeps running gives up the turn, so the next one starts and
    /// finishes while the first is still going.
    #[tokio::test]
    async fn a_long_creation_lets_the_next_one_run_beside_it() {
        let first_done = Arc::new(AtomicBool::new(false));
        let long = {
            let first_done = first_done.clone();
            tokio::spawn(in_turn(async move {
                // 100 turns long, yielding to the executor as running wasm does.
                let mut ticks = tokio::time::interval(TURN / 2);
                for _ in 0..200 {
                    ticks.tick().await;
                }
                first_done.store(true, Ordering::SeqCst);
            }))
        };
        // Let the long creation take the turn first.
        tokio::time::sleep(Duration::from_millis(1)).await;
        let first_was_done = in_turn(async { first_done.load(Ordering::SeqCst) }).await;
        assert!(
            !first_was_done,
            "the second creation waited for the whole first one"
        );
        long.await.expect("the long creation finishes");
    }
}
