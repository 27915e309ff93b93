//! Concurrency caps: how many calls of one tool, of one plugin and of the whole runtime
//! may run at once (`[tools.NAME] max_concurrent`, `[plugins.ID] max_concurrent`,
//! `[limits] max_concurrent`; 0, the default, is no cap).
//!
//! A call beyond a cap waits, in order of arrival (tokio's semaphores are fair), before
//! it starts in its plugin: waiting does not count against its deadline, which starts
//! when the plugin starts the call. A waiting call that is cancelled (or dropped) leaves
//! the queue. A call takes its tool's permit, then its plugin's, then the runtime's, and
//! holds them until its plugin has answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::tool::names::ToolNames;

/// The caps of a runtime: one semaphore per capped tool and plugin, kept across
/// reloads so that calls in flight keep counting.
#[derive(Debug, Default)]
pub(crate) struct Caps {
    runtime: Option<Arc<Semaphore>>,
    tool_caps: HashMap<String, usize>,
    plugin_caps: HashMap<String, usize>,
    semaphores: Mutex<HashMap<(bool, String), Arc<Semaphore>>>,
}

impl Caps {
    /// Caps of `runtime` calls at once, and per tool and plugin (0: no cap).
    pub fn new(
        runtime: usize,
        tool_caps: HashMap<String, usize>,
        plugin_caps: HashMap<String, usize>,
    ) -> Caps {
        Caps {
            runtime: (runtime > 0).then(|| Arc::new(Semaphore::new(runtime))),
            tool_caps: tool_caps.into_iter().filter(|(_, n)| *n > 0).collect(),
            plugin_caps: plugin_caps.into_iter().filter(|(_, n)| *n > 0).collect(),
            semaphores: Mutex::new(HashMap::new()),
        }
    }

    /// The semaphores a call of the tool of `names` of `plugin` takes, in order; its
    /// cap is the one set for its path, else for another of its names.
    pub fn for_tool(&self, names: &ToolNames, plugin: &str) -> Vec<Arc<Semaphore>> {
        let mut semaphores = self
            .semaphores
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut taken = Vec::new();
        let tool_cap = [names.path.as_str()]
            .into_iter()
            .chain(names.iter())
            .find_map(|key| self.tool_caps.get_key_value(key));
        if let Some((key, cap)) = tool_cap {
            taken.push(
                semaphores
                    .entry((true, key.clone()))
                    .or_insert_with(|| Arc::new(Semaphore::new(*cap)))
                    .clone(),
            );
        }
        if let Some(cap) = self.plugin_caps.get(plugin) {
            taken.push(
                semaphores
                    .entry((false, plugin.to_string()))
                    .or_insert_with(|| Arc::new(Semaphore::new(*cap)))
                    .clone(),
            );
        }
        taken.extend(self.runtime.clone());
        taken
    }
}

/// Waits for a permit of each semaphore in turn; they are released when dropped.
pub(crate) async fn acquire(semaphores: &[Arc<Semaphore>]) -> Vec<OwnedSemaphorePermit> {
    let mut permits = Vec::with_capacity(semaphores.len());
    for semaphore in semaphores {
        // The semaphores are never closed.
        if let Ok(permit) = semaphore.clone().acquire_owned().await {
            permits.push(permit);
        }
    }
    permits
}
