//! The data of a plugin's `Store`, and the host services (`toolcell:plugin/host`) the
//! plugin imports.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::PluginContext;
use super::limiter::MemoryCap;
use super::operations::{OpKind, Operations};
use crate::base::fast_map::FastMap;
use crate::base::limits::prefix_within;
use crate::output::progress::{Progress, ProgressSender};
use crate::sandbox::wit::{
    Answer, HttpRequest, HttpResponse, OpOutcome, Plugin, Question, toolcell,
};
use crate::sandbox::wit::{v0_1, v0_2};
use crate::services::ask::{self, Questions, Reply};
use crate::services::clock;
use crate::services::http::{self, Method};

/// The longest `timeout-note` kept: a sentence, not a payload.
const MAX_TIMEOUT_NOTE: usize = 1024;

/// What a plugin's store holds.
pub struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// The hard memory cap.
    pub(super) cap: MemoryCap,
    /// The plugin this store runs.
    pub(super) plugin: Arc<PluginContext>,
    /// The plugin's pending operations.
    pub(super) operations: Operations,
    /// The call whose step runs now (none while the plugin loads).
    pub(super) running: Option<u64>,
    /// What the guest said was running when it stopped the step (`timeout-note`).
    pub(super) timeout_note: Option<String>,
    /// Where the progress each call in flight reports goes.
    pub(super) progress: FastMap<u64, ProgressSender>,
    /// Who answers the questions of each call in flight that has someone to ask.
    pub(super) questions: FastMap<u64, Questions>,
}

impl StoreState {
    /// A fresh state for `plugin` (its operations report nowhere until connected).
    pub(super) fn new(plugin: Arc<PluginContext>) -> Self {
        // The guest's WASI is empty: no preopened directories, no environment, no
        // arguments, no network, stdin empty and stdout/stderr discarded. Plugins reach
        // the outside world only through `toolcell:plugin/host`.
        let wasi = WasiCtx::builder()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let cap = MemoryCap::new(
            plugin.grants.limits.linear_memory,
            plugin.peak_memory.clone(),
        );
        let operations = Operations::new(
            plugin.grants.limits.max_pending_ops,
            plugin.grants.limits.questions_per_call,
        );
        StoreState {
            wasi,
            table: ResourceTable::new(),
            cap,
            plugin,
            operations,
            running: None,
            timeout_note: None,
            progress: FastMap::default(),
            questions: FastMap::default(),
        }
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Adds the WASI interfaces (empty, see `StoreState::new`) and the toolcell host
/// services to `linker`, in the current world and in 0.2's and 0.1's (a different minor
/// version of a 0.x package is a different interface to the linker).
pub fn add_to_linker(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    Plugin::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_2::Plugin::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    v0_1::Plugin::add_to_linker::<_, HasSelf<_>>(linker, |state| state)?;
    Ok(())
}

/// A reply as the WIT world's answer: an accepted form as JSON object text.
fn answer(reply: Reply) -> Answer {
    match reply {
        Reply::Accepted(form) => Answer::Accepted(serde_json::Value::Object(form).to_string()),
        Reply::Declined => Answer::Declined,
        Reply::Cancelled => Answer::Cancelled,
        Reply::Unanswered(reason) => Answer::Unanswered(reason),
    }
}

impl toolcell::plugin::types::Host for StoreState {}

impl toolcell::plugin::host::Host for StoreState {
    fn log(&mut self, message: String) {
        self.plugin.log.write(self.running, &message);
    }

    fn now(&mut self) -> u64 {
        clock::now()
    }

    fn interrupted(&mut self, deadline: u64) -> bool {
        clock::now() > deadline
            || self
                .running
                .is_some_and(|call| self.plugin.interrupts.is_requested(call))
    }

    fn timeout_note(&mut self, mut note: String) {
        note.truncate(prefix_within(&note, MAX_TIMEOUT_NOTE).len());
        self.timeout_note = Some(note);
    }

    fn config(&mut self, key: String) -> Option<String> {
        if key == super::DATA_DIR_KEY {
            return self.plugin.data_dir.clone();
        }
        if self.plugin.withheld_config.contains(&key) {
            return None;
        }
        self.plugin.tool_config.get(&key).cloned()
    }

    async fn read_file(&mut self, path: String) -> Result<Vec<u8>, String> {
        if !self.plugin.grants.files.can_read() {
            return Err(format!(
                "cannot read {path}: {}",
                self.plugin.grants.hints.files
            ));
        }
        let files = self.plugin.files.clone();
        let max_bytes = self.plugin.grants.limits.memory;
        let read = tokio::task::spawn_blocking(move || {
            let Some(root) = files
                .reading()
                .map_err(|reason| format!("cannot read {path}: {reason}"))?
            else {
                // The plugin's own directory before its first write: nothing is there.
                return Err(format!("cannot read {path}: no such file or directory"));
            };
            root.read(&path, max_bytes)
                .map_err(|error| error.to_string())
        })
        .await;
        match read {
            Ok(read) => read,
            Err(error) => Err(format!("the read was interrupted: {error}")),
        }
    }

    async fn write_file(&mut self, path: String, content: Vec<u8>) -> Result<(), String> {
        if !self.plugin.grants.files.can_write() {
            return Err(format!(
                "cannot write {path}: {}",
                self.plugin.grants.hints.files
            ));
        }
        let files = self.plugin.files.clone();
        let written = tokio::task::spawn_blocking(move || {
            // Creating the plugin's own directory touches the disk too.
            let root = files
                .writing()
                .map_err(|reason| format!("cannot write {path}: {reason}"))?;
            root.write(&path, &content)
                .map_err(|error| error.to_string())
        })
        .await;
        match written {
            Ok(written) => written,
            Err(error) => Err(format!("the write was interrupted: {error}")),
        }
    }

    fn http_start(&mut self, call: u64, request: HttpRequest) -> Result<u64, String> {
        let method: Method = request
            .method
            .parse()
            .map_err(|error: http::HttpError| error.to_string())?;
        self.operations
            .admit(call, OpKind::Http)
            .map_err(|refused| refused.to_string())?;
        let client = self.plugin.http()?;
        let request = http::Request {
            method,
            url: request.url,
            headers: request.headers,
            body: request.body,
        };
        Ok(self.operations.spawn(call, OpKind::Http, async move {
            match client.fetch(request).await {
                Ok(response) => OpOutcome::HttpResponse(HttpResponse {
                    status: response.status,
                    headers: response.headers,
                    body: response.body,
                }),
                Err(error) => OpOutcome::HttpError(error.to_string()),
            }
        }))
    }

    fn timer_start(&mut self, call: u64, ms: u64) -> Result<u64, String> {
        self.operations
            .admit(call, OpKind::Timer)
            .map_err(|refused| refused.to_string())?;
        Ok(self.operations.spawn(call, OpKind::Timer, async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            OpOutcome::TimerFired
        }))
    }

    fn ask_start(&mut self, call: u64, question: Question) -> Result<u64, String> {
        self.operations
            .admit(call, OpKind::Ask)
            .map_err(|refused| refused.to_string())?;
        let schema = ask::check_schema(&question.schema)?;
        let questions = self.questions.get(&call).cloned().unwrap_or_default();
        let plugin = self.plugin.name.clone();
        Ok(self.operations.spawn(call, OpKind::Ask, async move {
            let reply = questions.ask(call, plugin, &question.message, schema).await;
            OpOutcome::Answered(answer(reply))
        }))
    }

    fn progress(
        &mut self,
        call: u64,
        done: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Result<(), String> {
        let progress = Progress::new(done, total, message).map_err(|bad| bad.to_string())?;
        if let Some(sender) = self.progress.get(&call) {
            sender.report(progress);
        }
        Ok(())
    }

    fn cancel_op(&mut self, op: u64) {
        self.operations.abort(op);
    }
}

/// The host services of an older world (`$world`): the current ones, with the HTTP
/// request converted; `$more` are the services it has beyond those of 0.1.
macro_rules! older_world_host {
    ($world:ident { $($more:item)* }) => {
        impl $world::toolcell::plugin::types::Host for StoreState {}

        impl $world::toolcell::plugin::host::Host for StoreState {
            fn log(&mut self, message: String) {
                toolcell::plugin::host::Host::log(self, message);
            }

            fn now(&mut self) -> u64 {
                toolcell::plugin::host::Host::now(self)
            }

            fn interrupted(&mut self, deadline: u64) -> bool {
                toolcell::plugin::host::Host::interrupted(self, deadline)
            }

            fn timeout_note(&mut self, note: String) {
                toolcell::plugin::host::Host::timeout_note(self, note);
            }

            fn config(&mut self, key: String) -> Option<String> {
                toolcell::plugin::host::Host::config(self, key)
            }

            async fn read_file(&mut self, path: String) -> Result<Vec<u8>, String> {
                toolcell::plugin::host::Host::read_file(self, path).await
            }

            async fn write_file(&mut self, path: String, content: Vec<u8>) -> Result<(), String> {
                toolcell::plugin::host::Host::write_file(self, path, content).await
            }

            fn http_start(
                &mut self,
                call: u64,
                request: $world::toolcell::plugin::types::HttpRequest,
            ) -> Result<u64, String> {
                toolcell::plugin::host::Host::http_start(self, call, $world::http_request(request))
            }

            fn timer_start(&mut self, call: u64, ms: u64) -> Result<u64, String> {
                toolcell::plugin::host::Host::timer_start(self, call, ms)
            }

            fn cancel_op(&mut self, op: u64) {
                toolcell::plugin::host::Host::cancel_op(self, op);
            }

            $($more)*
        }
    };
}

older_world_host!(v0_2 {
    fn progress(
        &mut self,
        call: u64,
        done: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Result<(), String> {
        toolcell::plugin::host::Host::progress(self, call, done, total, message)
    }
});

older_world_host!(v0_1 {});
