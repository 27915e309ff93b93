//! Interceptors: the embedder's code around a call. A `before` interceptor sees the call
//! (its arguments already validated) and lets it go on, refuses it, or replaces its
//! arguments (validated again); an `after` interceptor sees the typed outcome and may
//! replace its text.
//!
//! Order, for one call: the global `before` interceptors in the order they were added,
//! then those for the tool (by glob); the plugin; then the global `after` interceptors,
//! then those for the tool. Each runs under a timeout; one that fails or times out
//! refuses the call ("fail closed"): a `before` that fails stops it before it runs, an
//! `after` that fails replaces its outcome with the refusal.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;

use super::approval::BoxFuture;
use crate::config::permissions::{RuleError, ToolFacts, glob};
use crate::output::outcome::CallOutcome;
use crate::tool::names::ToolGlob;

/// How long an interceptor may take unless it says otherwise.
pub const DEFAULT_INTERCEPTOR_TIMEOUT: Duration = Duration::from_secs(10);

/// A call as an interceptor sees it.
#[derive(Debug, Clone)]
pub struct InterceptedCall {
    /// The call's id (as [`Call::id`](crate::Call::id)).
    pub call: u64,
    /// The tool's name.
    pub tool: String,
    /// The id of its plugin.
    pub plugin: String,
    /// The arguments: validated against the tool's schema, and as an earlier `before`
    /// interceptor left them.
    pub arguments: serde_json::Value,
}

/// What a `before` interceptor decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// The call goes on.
    Continue,
    /// The call is refused; the model reads `tool 'X' was refused: REASON`.
    Refuse(String),
    /// The call goes on with these arguments, which are validated against the tool's
    /// schema again.
    Replace(serde_json::Value),
}

/// What an `after` interceptor decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// The outcome stays.
    Keep,
    /// The outcome keeps its kind, with this text as its output (or failure message).
    Replace(String),
}

/// How an interceptor failed; the call is refused.
pub type InterceptorError = Box<dyn std::error::Error + Send + Sync>;

type BeforeFn =
    dyn Fn(InterceptedCall) -> BoxFuture<Result<Before, InterceptorError>> + Send + Sync;
type AfterFn = dyn Fn(InterceptedCall, CallOutcome) -> BoxFuture<Result<After, InterceptorError>>
    + Send
    + Sync;

#[derive(Clone)]
enum Hook {
    Before(Arc<BeforeFn>),
    After(Arc<AfterFn>),
}

/// An interceptor, to add with [`RuntimeBuilder::interceptor`](crate::RuntimeBuilder::interceptor).
///
/// ```
/// use toolcell::policy::{Before, Interceptor};
///
/// let guard = Interceptor::before("no-root", |call| async move {
///     let path = call.arguments["path"].as_str().unwrap_or_default();
///     Ok(if path.starts_with('/') {
///         Before::Refuse("absolute paths are not allowed".to_string())
///     } else {
///         Before::Continue
///     })
/// })
/// .tools("note_*");
/// # let _ = guard;
/// ```
#[derive(Clone)]
pub struct Interceptor {
    name: String,
    glob: Option<String>,
    timeout: Option<Duration>,
    hook: Hook,
}

impl std::fmt::Debug for Interceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interceptor")
            .field("name", &self.name)
            .field("glob", &self.glob)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Interceptor {
    /// A `before` interceptor named `name` (the name appears in refusals and logs), for
    /// every tool.
    pub fn before<F, Fut>(name: &str, run: F) -> Interceptor
    where
        F: Fn(InterceptedCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Before, InterceptorError>> + Send + 'static,
    {
        let run: Arc<BeforeFn> = Arc::new(move |call| Box::pin(run(call)));
        Interceptor {
            name: name.to_string(),
            glob: None,
            timeout: None,
            hook: Hook::Before(run),
        }
    }

    /// An `after` interceptor named `name`, for every tool.
    pub fn after<F, Fut>(name: &str, run: F) -> Interceptor
    where
        F: Fn(InterceptedCall, CallOutcome) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<After, InterceptorError>> + Send + 'static,
    {
        let run: Arc<AfterFn> = Arc::new(move |call, outcome| Box::pin(run(call, outcome)));
        Interceptor {
            name: name.to_string(),
            glob: None,
            timeout: None,
            hook: Hook::After(run),
        }
    }

    /// Only for the tools `glob` names by any of their names (an alias, the plain name a
    /// tool holds, its path `PLUGIN-ID/TOOL` or its wire name; `*` within a segment,
    /// `**` across).
    pub fn tools(mut self, glob: &str) -> Interceptor {
        self.glob = Some(glob.to_string());
        self
    }

    /// How long it may take (default: the runtime's interceptor timeout, 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Interceptor {
        self.timeout = Some(timeout);
        self
    }
}

/// An interceptor, checked and ready to match tools.
#[derive(Clone)]
pub(crate) struct Registered {
    name: Arc<str>,
    matcher: Option<ToolGlob>,
    timeout: Duration,
    hook: Hook,
}

/// Every interceptor of a runtime.
#[derive(Clone, Default)]
pub(crate) struct Interceptors {
    all: Vec<Registered>,
}

impl Interceptors {
    /// Checks each interceptor's glob.
    pub fn new(given: Vec<Interceptor>, timeout: Duration) -> Result<Interceptors, RuleError> {
        let mut all = Vec::with_capacity(given.len());
        for interceptor in given {
            let matcher = match &interceptor.glob {
                Some(text) => Some(glob(&format!("interceptor '{}'", interceptor.name), text)?),
                None => None,
            };
            all.push(Registered {
                name: interceptor.name.into(),
                matcher,
                timeout: interceptor.timeout.unwrap_or(timeout),
                hook: interceptor.hook,
            });
        }
        Ok(Interceptors { all })
    }

    /// The interceptors of `tool`, in the order they run.
    pub fn for_tool(&self, tool: &ToolFacts<'_>) -> ToolInterceptors {
        let applies = |registered: &&Registered| {
            registered
                .matcher
                .as_ref()
                .is_none_or(|glob| glob.matches(tool.names))
        };
        let (global, specific): (Vec<&Registered>, Vec<&Registered>) = self
            .all
            .iter()
            .filter(applies)
            .partition(|registered| registered.matcher.is_none());
        let ordered = || global.iter().chain(&specific).map(|r| (*r).clone());
        ToolInterceptors {
            before: ordered()
                .filter(|r| matches!(r.hook, Hook::Before(_)))
                .collect(),
            after: ordered()
                .filter(|r| matches!(r.hook, Hook::After(_)))
                .collect(),
        }
    }
}

/// The interceptors of one tool, in the order they run.
#[derive(Clone, Default)]
pub(crate) struct ToolInterceptors {
    before: Vec<Registered>,
    after: Vec<Registered>,
}

/// Why interceptors stopped a call.
pub(crate) enum Stop {
    /// An interceptor refused it or failed: the refusal's reason.
    Refused(String),
    /// The replaced arguments break the tool's schema (the check's message).
    Invalid(String),
}

impl ToolInterceptors {
    /// Whether the tool has none.
    pub fn is_empty(&self) -> bool {
        self.before.is_empty() && self.after.is_empty()
    }

    /// Runs the `before` interceptors over `call`; `check` validates replaced
    /// arguments and gives their text. Leaves the arguments to run with in `call`, and
    /// returns their text when an interceptor replaced them.
    pub async fn before(
        &self,
        call: &mut InterceptedCall,
        check: impl Fn(&serde_json::Value) -> Result<String, String>,
    ) -> Result<Option<String>, Stop> {
        let mut replaced = None;
        for registered in &self.before {
            let Hook::Before(run) = &registered.hook else {
                continue;
            };
            let decided = bounded(registered, run(call.clone())).await?;
            match decided {
                Before::Continue => {}
                Before::Refuse(reason) => return Err(Stop::Refused(reason)),
                Before::Replace(arguments) => {
                    let text = check(&arguments).map_err(|problems| {
                        Stop::Invalid(format!(
                            "interceptor '{}' replaced the arguments with invalid ones: {problems}",
                            registered.name
                        ))
                    })?;
                    call.arguments = arguments;
                    replaced = Some(text);
                }
            }
        }
        Ok(replaced)
    }

    /// Runs the `after` interceptors over `outcome`; an interceptor that fails
    /// refuses the call (its reason).
    pub async fn after(
        &self,
        call: &InterceptedCall,
        mut outcome: CallOutcome,
    ) -> Result<CallOutcome, String> {
        for registered in &self.after {
            let Hook::After(run) = &registered.hook else {
                continue;
            };
            match bounded(registered, run(call.clone(), outcome.clone()))
                .await
                .map_err(|stop| match stop {
                    Stop::Refused(reason) | Stop::Invalid(reason) => reason,
                })? {
                After::Keep => {}
                After::Replace(text) => outcome = outcome.with_text(text),
            }
        }
        Ok(outcome)
    }
}

/// Runs one interceptor under its timeout; a failure or a timeout refuses the call.
async fn bounded<T>(
    registered: &Registered,
    run: BoxFuture<Result<T, InterceptorError>>,
) -> Result<T, Stop> {
    let name = &registered.name;
    let run = AssertUnwindSafe(run).catch_unwind();
    match tokio::time::timeout(registered.timeout, run).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Err(_)) => {
            tracing::error!("interceptor '{name}' panicked");
            Err(Stop::Refused(format!(
                "interceptor '{name}' failed: it panicked"
            )))
        }
        Ok(Ok(Err(error))) => {
            tracing::warn!("interceptor '{name}' failed: {error}");
            Err(Stop::Refused(format!(
                "interceptor '{name}' failed: {error}"
            )))
        }
        Err(_) => {
            let ms = registered.timeout.as_millis();
            tracing::warn!("interceptor '{name}' timed out after {ms} ms");
            Err(Stop::Refused(format!(
                "interceptor '{name}' timed out after {ms} ms"
            )))
        }
    }
}
