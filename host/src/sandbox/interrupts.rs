//! Cancellations that must reach a step while it runs.
//!
//! A call is cancelled through its plugin's actor, which can only act between steps. A
//! cancelled call whose code is running would run on until its deadline; so the
//! cancellation is also recorded here, where the guest's own deadline check finds it
//! (`host.interrupted`, asked every 10000 Lua VM instructions) and stops the call as
//! if its deadline had passed. The supervisor then words the failure as the
//! cancellation, and forgets the entry when the actor handles the cancel.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::operations::CallId;

/// The calls of one plugin cancelled and not yet handled by its actor, with why.
#[derive(Default)]
pub struct Interrupts {
    cancelled: Mutex<HashMap<CallId, String>>,
    /// Whether `cancelled` may be non-empty: the guest asks on every check, and almost
    /// always nothing is cancelled.
    any: AtomicBool,
}

impl Interrupts {
    /// Records that the caller cancelled `call`, with `reason`.
    pub fn request(&self, call: CallId, reason: &str) {
        self.lock().insert(call, reason.to_string());
        self.any.store(true, Ordering::Release);
    }

    /// Whether `call` was cancelled.
    pub fn is_requested(&self, call: CallId) -> bool {
        self.any.load(Ordering::Acquire) && self.lock().contains_key(&call)
    }

    /// Forgets `call`; returns the reason it was cancelled for, if it was.
    pub fn take(&self, call: CallId) -> Option<String> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let mut cancelled = self.lock();
        let reason = cancelled.remove(&call);
        if cancelled.is_empty() {
            self.any.store(false, Ordering::Release);
        }
        reason
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallId, String>> {
        // A poisoned lock only means a panic elsewhere while holding it; the map is whole.
        self.cancelled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
