//! Hot reload: watch the plugin directories and swap a plugin whose file was added,
//! changed or removed into a shared [`Runtime`], leaving every other plugin alone.
//!
//! File events are debounced (an editor's save is several events; a copy takes a
//! while), then each plugin file concerned is loaded into a fresh sandbox outside the
//! lock ([`Runtime::load_file`]) and put in place under it ([`Runtime::apply`]), which
//! takes microseconds: calls keep starting meanwhile, and calls in flight on the old
//! sandbox finish there.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use notify_debouncer_mini::notify::{self, RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use tokio::sync::mpsc;

use crate::Runtime;

/// How long the files must be quiet before a change is acted on.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// Watches a runtime's plugin directories for as long as it lives.
pub struct Watcher {
    _debouncer: Debouncer<RecommendedWatcher>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Why hot reload could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The file system's notifications are not available.
    #[error("cannot watch the plugin directories: {0}")]
    Unavailable(notify::Error),
    /// One directory could not be watched.
    #[error("cannot watch {}: {source}", dir.display())]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: notify::Error,
    },
}

/// Starts watching the plugin directories of `runtime`. Around each batch of changes
/// it calls `reloading(true)` and, once the batch is applied, `reloading(false)` (a
/// server is not ready meanwhile); after a batch that changed the registered tools
/// (names, descriptions, schemas, flags), `tools_changed`. Must be called inside a
/// tokio runtime.
pub fn watch(
    runtime: Arc<RwLock<Runtime>>,
    tools_changed: impl Fn() + Send + 'static,
    reloading: impl Fn(bool) + Send + 'static,
) -> Result<Watcher, WatchError> {
    let dirs = runtime
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .plugin_dirs()
        .to_vec();
    let (events, mut batches) = mpsc::unbounded_channel();
    let mut debouncer = new_debouncer(DEBOUNCE, move |result: DebounceEventResult| {
        // The receiver is gone only when the watcher is being dropped.
        let _ = events.send(result);
    })
    .map_err(WatchError::Unavailable)?;
    for dir in &dirs {
        debouncer
            .watcher()
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|source| WatchError::Directory {
                dir: dir.clone(),
                source,
            })?;
    }
    let task = tokio::spawn(async move {
        while let Some(batch) = batches.recv().await {
            match batch {
                Ok(events) => {
                    let paths: BTreeSet<PathBuf> =
                        events.into_iter().map(|event| event.path).collect();
                    reloading(true);
                    let changed = reload(&runtime, paths).await;
                    reloading(false);
                    if changed {
                        tools_changed();
                    }
                }
                Err(error) => tracing::warn!("watching the plugin directories: {error}"),
            }
        }
    });
    Ok(Watcher {
        _debouncer: debouncer,
        task,
    })
}

/// Reloads the plugins of `paths`; true when the registered tools changed.
async fn reload(runtime: &RwLock<Runtime>, paths: BTreeSet<PathBuf>) -> bool {
    let mut changed = false;
    for path in paths {
        let load = runtime
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .load_file(&path);
        let Some(load) = load else {
            continue;
        };
        let update = load.await;
        let removal = update.is_removal();
        {
            let mut runtime = runtime.write().unwrap_or_else(PoisonError::into_inner);
            let before = runtime.tools().to_vec();
            runtime.apply(update);
            changed |= before != runtime.tools();
        }
        tracing::info!(
            "plugin file {} {}",
            path.display(),
            if removal { "removed" } else { "(re)loaded" }
        );
    }
    changed
}
