//! A server's life as load balancers and orchestrators see it: loading its plugins,
//! ready, briefly not ready while a reload is applied, then draining on SIGTERM (no
//! new calls; requests in flight, tool calls among them, finish within the grace
//! period).
//!
//! `/healthz` says the process answers; `/readyz` says it should be sent traffic.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// What `/readyz` reports, and the calls a drain waits for. Cheap to clone; every
/// clone is the same state.
#[derive(Clone, Default)]
pub struct Lifecycle(Arc<State>);

#[derive(Default)]
struct State {
    loaded: AtomicBool,
    reloads: AtomicUsize,
    draining: AtomicBool,
    requests: AtomicUsize,
    /// Woken when the last request in flight ends.
    idle: Notify,
}

impl Lifecycle {
    /// A server still loading its plugins.
    pub fn new() -> Lifecycle {
        Lifecycle::default()
    }

    /// The plugins are loaded.
    pub fn loaded(&self) {
        self.0.loaded.store(true, Ordering::SeqCst);
    }

    /// A reload starts (`true`) or has been applied (`false`).
    pub fn reloading(&self, started: bool) {
        if started {
            self.0.reloads.fetch_add(1, Ordering::SeqCst);
        } else {
            self.0.reloads.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// SIGTERM: no new calls from now on.
    pub fn drain(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the server is draining.
    pub fn is_draining(&self) -> bool {
        self.0.draining.load(Ordering::SeqCst)
    }

    /// `Ok` when the server should get traffic, else why not.
    pub fn readiness(&self) -> Result<(), &'static str> {
        if self.is_draining() {
            Err("shutting down")
        } else if !self.0.loaded.load(Ordering::SeqCst) {
            Err("loading plugins")
        } else if self.0.reloads.load(Ordering::SeqCst) > 0 {
            Err("applying a reload")
        } else {
            Ok(())
        }
    }

    /// Counts a request in flight (until its response has been sent) for as long as
    /// the guard lives.
    pub fn request(&self) -> RequestGuard {
        self.0.requests.fetch_add(1, Ordering::SeqCst);
        RequestGuard(self.clone())
    }

    /// The requests in flight.
    pub fn in_flight(&self) -> usize {
        self.0.requests.load(Ordering::SeqCst)
    }

    /// Resolves when no request is in flight.
    pub async fn idle(&self) {
        loop {
            let woken = self.0.idle.notified();
            if self.in_flight() == 0 {
                return;
            }
            woken.await;
        }
    }
}

/// One request in flight.
pub struct RequestGuard(Lifecycle);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if self.0.0.requests.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_loading_reloads_and_draining() {
        let life = Lifecycle::new();
        assert_eq!(life.readiness(), Err("loading plugins"));
        life.loaded();
        assert_eq!(life.readiness(), Ok(()));
        life.reloading(true);
        assert_eq!(life.readiness(), Err("applying a reload"));
        life.reloading(false);
        assert_eq!(life.readiness(), Ok(()));
        life.drain();
        assert_eq!(life.readiness(), Err("shutting down"));
    }

    #[tokio::test]
    async fn idle_waits_for_the_requests_in_flight() {
        let life = Lifecycle::new();
        let request = life.request();
        life.drain();
        assert_eq!(life.in_flight(), 1);
        let waiter = tokio::spawn({
            let life = life.clone();
            async move { life.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(request);
        waiter.await.expect("idle once the request ended");
    }
}
