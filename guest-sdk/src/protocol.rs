//! The four steps of toolcell's protocol, implemented for a [`Plugin`]; the
//! [`export!`](crate::export) macro forwards the component's exports here.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::Error;
use crate::bindings::{CallState, LoadError, LoadRequest, OpOutcome, ToolSpec};
use crate::ctx::Ctx;
use crate::executor::{self, CallId, OpId, Stop};
use crate::tool::{Output, Plugin};

/// What the plugin knows after `load`.
struct Loaded {
    plugin: Plugin,
    name: String,
    debug_log: bool,
}

/// A call in flight: its deadline and where its handler leaves the result.
struct Running {
    deadline: u64,
    result: Rc<RefCell<Option<Result<Output, Error>>>>,
}

thread_local! {
    static LOADED: RefCell<Option<Rc<Loaded>>> = const { RefCell::new(None) };
    static RUNNING: RefCell<HashMap<CallId, Running>> = RefCell::new(HashMap::new());
}

/// The `host.config` key that answers with the path of the plugin's file root.
pub(crate) const DATA_DIR_KEY: &str = "toolcell:data_dir";

/// The plugin's id, as the host gave it in `load`.
pub(crate) fn plugin_name() -> String {
    LOADED.with_borrow(|loaded| {
        loaded
            .as_ref()
            .map(|loaded| loaded.name.clone())
            .unwrap_or_default()
    })
}

/// Whether the user enabled the debug log.
pub(crate) fn debug_log_enabled() -> bool {
    LOADED.with_borrow(|loaded| loaded.as_ref().is_some_and(|loaded| loaded.debug_log))
}

/// The manifest text as a byte array of its own length (for `manifest!`).
pub const fn manifest_bytes<const N: usize>(text: &str) -> [u8; N] {
    let bytes = text.as_bytes();
    let mut out = [0u8; N];
    let mut index = 0;
    while index < N {
        out[index] = bytes[index];
        index += 1;
    }
    out
}

/// `load`: builds the plugin and returns its tools.
pub fn load(request: LoadRequest, plugin: fn() -> Plugin) -> Result<Vec<ToolSpec>, LoadError> {
    if LOADED.with_borrow(Option::is_some) {
        return Err(LoadError::Failed(
            "the plugin is already loaded".to_string(),
        ));
    }
    let plugin = plugin();
    let mut specs = Vec::with_capacity(plugin.tools.len());
    for tool in &plugin.tools {
        check_name(&tool.name).map_err(LoadError::Failed)?;
        if specs.iter().any(|spec: &ToolSpec| spec.name == tool.name) {
            return Err(LoadError::Failed(format!(
                "tool '{}' is registered twice",
                tool.name
            )));
        }
        let timeout_ms = tool
            .timeout
            .map(|timeout| u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX));
        specs.push(ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            params_schema: tool.schema.as_ref().map(ToString::to_string),
            timeout_ms,
            no_prompt: tool.no_prompt,
            hidden: tool.hidden,
            title: tool.title.clone(),
            output_schema: tool.output_schema.as_ref().map(ToString::to_string),
            task_support: tool.task_support,
        });
    }
    LOADED.set(Some(Rc::new(Loaded {
        plugin,
        name: request.name,
        debug_log: request.debug_log,
    })));
    Ok(specs)
}

/// Tool names are 1 to 64 letters, digits, `_` or `-`, as every model provider accepts.
fn check_name(name: &str) -> Result<(), String> {
    if toolcell_limits::is_valid_tool_name(name) {
        Ok(())
    } else {
        Err(format!(
            "tool name {name:?} must be 1 to {} letters, digits, '_' or '-'",
            toolcell_limits::MAX_TOOL_NAME
        ))
    }
}

/// `start`: decodes the arguments, starts the handler and runs it until it waits.
pub fn start(call: CallId, tool: String, args_json: String, deadline: u64) -> CallState {
    let Some(loaded) = LOADED.with_borrow(Clone::clone) else {
        return CallState::Failed("the plugin is not loaded".to_string());
    };
    let Some(entry) = loaded.plugin.tools.iter().find(|entry| entry.name == tool) else {
        return CallState::Failed(format!("the plugin has no tool named '{tool}'"));
    };
    let ctx = Ctx::new(call, &tool, &args_json);
    let future = match (entry.handler)(&args_json, ctx) {
        Ok(future) => future,
        Err(error) => return CallState::Failed(error.message().to_string()),
    };
    let result = Rc::new(RefCell::new(None));
    let slot = result.clone();
    RUNNING.with_borrow_mut(|running| running.insert(call, Running { deadline, result }));
    executor::begin(call, async move {
        let outcome = future.await;
        *slot.borrow_mut() = Some(outcome);
    });
    step(call)
}

/// `resume`: delivers an operation's outcome and runs the call until it waits again,
/// under `deadline` (which the host moves later by the time the call waited for
/// answers).
pub fn resume(call: CallId, op: OpId, outcome: OpOutcome, deadline: u64) -> CallState {
    let known = RUNNING.with_borrow_mut(|running| {
        running
            .get_mut(&call)
            .map(|running| running.deadline = deadline)
    });
    if known.is_none() {
        return CallState::Failed("the invocation is unknown to the plugin".to_string());
    }
    executor::deliver(call, op, outcome);
    step(call)
}

/// `cancel`: drops the call's tasks; their pending operations are cancelled.
pub fn cancel(call: CallId, _reason: &str) {
    finish(call);
}

fn step(call: CallId) -> CallState {
    let Some((deadline, result)) = RUNNING.with_borrow(|running| {
        running
            .get(&call)
            .map(|running| (running.deadline, running.result.clone()))
    }) else {
        return CallState::Failed("the invocation is unknown to the plugin".to_string());
    };
    let stop = executor::run(call, deadline, || result.borrow().is_some());
    let taken = result.borrow_mut().take();
    let state = match (taken, stop) {
        (Some(Ok(Output::Text(output))), _) => CallState::Completed(output),
        (Some(Ok(Output::Content(parts))), _) => CallState::CompletedContent(parts),
        (Some(Err(error)), _) => CallState::Failed(error.message().to_string()),
        (None, Stop::TimedOut) => CallState::TimedOut,
        (None, Stop::Stuck) => CallState::BrokeRule(
            "the handler waits for something that can never happen (no host operation is pending)"
                .to_string(),
        ),
        (None, Stop::Waiting | Stop::Done) => return CallState::Pending,
    };
    finish(call);
    state
}

/// Forgets a call and drops whatever tasks it still has.
fn finish(call: CallId) {
    let running = RUNNING.with_borrow_mut(|running| running.remove(&call));
    drop(running);
    executor::end(call);
}
