//! Whether a call may run: the resolver chain, and asking someone when it says `ask`.
//!
//! The chain, highest priority first; the first resolver that decides wins, and one
//! that fails is skipped (and logged):
//!
//! | priority | resolver |
//! |---|---|
//! | any (default [`EMBEDDER_PRIORITY`]) | the embedder's ([`RuntimeBuilder::resolver`](crate::RuntimeBuilder::resolver)) |
//! | [`RULES_PRIORITY`] | the user's rules: `--allow`/`--ask`/`--deny`, then `[permissions]` |
//! | [`PRESETS_PRIORITY`] | the same rules' presets (`$readonly`, `$sandboxed`, user-defined) |
//! | [`NO_PROMPT_PRIORITY`] | the tool's own `no_prompt = true`: allow, when the default is `ask` |
//! | last | the default: `[permissions] default`, else the runtime's |
//!
//! A plugin's `no_prompt` only spares the prompt the default would ask: a rule, a
//! preset or a default of `deny` the user set stays a deny, and an `ask` rule still asks.
//!
//! Everything but the embedder's resolvers depends on the tool alone, so it is decided
//! once per tool when the registry is built ([`Verdicts`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use crate::base::limits::prefix_within;
use crate::config::grants::Grants;
use crate::config::permissions::Decision;
use crate::policy::plugin_info::PluginInfo;
use crate::services::ask::QuestionHandler;
use crate::tool::info::ToolInfo;

/// The priority of an embedder's resolver unless it says otherwise: before the user's
/// rules.
pub const EMBEDDER_PRIORITY: i32 = 200;
/// The priority of the user's rules.
pub const RULES_PRIORITY: i32 = 100;
/// The priority of the presets the user's rules name.
pub const PRESETS_PRIORITY: i32 = 75;
/// The priority of a tool's own `no_prompt` (which allows only where the default asks).
pub const NO_PROMPT_PRIORITY: i32 = 50;

/// What a resolver sees: the tool, its plugin (manifest and grants), and the call's
/// arguments.
#[derive(Debug, Clone, Copy)]
pub struct PermissionRequest<'a> {
    /// The tool.
    pub tool: &'a ToolInfo,
    /// Its plugin: the manifest and what it was granted.
    pub plugin: &'a PluginInfo,
    /// The call's arguments; `None` when the question is whether to list the tool at
    /// all (a tool whose chain denies it without arguments is not listed).
    pub arguments: Option<&'a serde_json::Value>,
}

/// How a resolver failed; the chain logs it and asks the next resolver.
pub type ResolverError = Box<dyn std::error::Error + Send + Sync>;

/// A resolver of the chain: decides a call, or passes (`Ok(None)`) to the next one.
///
/// Any `Fn(&PermissionRequest) -> Result<Option<Decision>, ResolverError>` is one.
pub trait Resolver: Send + Sync + 'static {
    /// The decision for `request`, or `None` to let the next resolver decide.
    fn resolve(&self, request: &PermissionRequest<'_>) -> Result<Option<Decision>, ResolverError>;
}

impl<F> Resolver for F
where
    F: Fn(&PermissionRequest<'_>) -> Result<Option<Decision>, ResolverError>
        + Send
        + Sync
        + 'static,
{
    fn resolve(&self, request: &PermissionRequest<'_>) -> Result<Option<Decision>, ResolverError> {
        self(request)
    }
}

/// A call waiting for someone's answer (what `on_permission` receives).
#[derive(Debug, Clone)]
pub struct PermissionPrompt {
    /// The call's id (as [`Call::id`](crate::Call::id)).
    pub call: u64,
    /// The tool.
    pub tool: ToolInfo,
    /// Its plugin, with what it was granted: what the tool could do.
    pub plugin: Arc<PluginInfo>,
    /// The arguments, as validated against the tool's schema.
    pub arguments: serde_json::Value,
}

/// The most of a call's arguments a question about it shows, in bytes: enough to judge
/// the call, and never a flood (the terminal's and the MCP client's question alike).
pub const SHOWN_ARGUMENTS: usize = 500;

impl PermissionPrompt {
    /// The arguments as a question shows them: their JSON text, cut after
    /// [`SHOWN_ARGUMENTS`] bytes (at a character boundary) with `...`.
    pub fn shown_arguments(&self) -> String {
        shown(&self.arguments)
    }
}

/// `arguments`' JSON text, cut after [`SHOWN_ARGUMENTS`] bytes with `...`.
fn shown(arguments: &serde_json::Value) -> String {
    let text = arguments.to_string();
    if text.len() <= SHOWN_ARGUMENTS {
        return text;
    }
    format!("{}...", prefix_within(&text, SHOWN_ARGUMENTS))
}

/// An answer to a [`PermissionPrompt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This call runs; the next call of the tool asks again.
    AllowOnce,
    /// This call runs, and so does every later call of the tool in the same session.
    AllowForSession,
    /// The call is refused; the model reads the feedback, when there is some.
    Deny {
        /// What the user wants the model to know.
        feedback: Option<String>,
    },
    /// Nobody could answer (the user was not reachable); the call is refused for this
    /// reason.
    Unanswered(String),
}

/// A boxed future, as permission handlers (and question handlers) return.
pub use crate::services::ask::BoxFuture;

/// Who answers `ask`: the embedder's `on_permission`, the terminal, an MCP client.
///
/// Any `Fn(PermissionPrompt) -> impl Future<Output = Answer>` is one.
pub trait PermissionHandler: Send + Sync + 'static {
    /// Asks about `prompt`.
    fn ask(&self, prompt: PermissionPrompt) -> BoxFuture<Answer>;
}

impl<F, Fut> PermissionHandler for F
where
    F: Fn(PermissionPrompt) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    fn ask(&self, prompt: PermissionPrompt) -> BoxFuture<Answer> {
        Box::pin(self(prompt))
    }
}

/// One session's approvals: who answers `ask`, and the tools allowed for the rest of
/// the session. Calls of the embedding API without a session of their own share the
/// runtime's.
pub struct Approvals {
    asker: Asker,
    /// Who answers the questions plugins ask during the session's calls (`ctx:ask`).
    questions: Option<Arc<dyn QuestionHandler>>,
    /// Tools (by path) answered "allow for the session", with what the answer saw of
    /// their plugin.
    allowed: Mutex<HashMap<String, Approved>>,
}

/// What an "allow for the session" was given to: the plugin's code and grants. A
/// reload that changes either is another plugin to the user, and asks again.
#[derive(Debug)]
struct Approved {
    digest: String,
    grants: Grants,
}

impl Approved {
    fn of(plugin: &PluginInfo) -> Approved {
        Approved {
            digest: plugin.digest.clone(),
            grants: plugin.grants.clone(),
        }
    }

    fn covers(&self, plugin: &PluginInfo) -> bool {
        self.digest == plugin.digest && self.grants == plugin.grants
    }
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let asker = match &self.asker {
            Asker::Nobody => "nobody (ask allows)",
            Asker::Handler(_) => "a handler",
            Asker::Refuse(_) => "nobody (ask denies)",
        };
        f.debug_struct("Approvals")
            .field("asker", &asker)
            .field("allowed", &self.allowed)
            .finish()
    }
}

impl Approvals {
    /// A session whose `ask` decisions go to `handler`; without one, `ask` allows the
    /// call (clm-tool(5): the prompt is the agent's, and an agent without one runs
    /// every tool).
    pub fn new(handler: Option<Arc<dyn PermissionHandler>>) -> Approvals {
        let asker = match handler {
            Some(handler) => Asker::Handler(handler),
            None => Asker::Nobody,
        };
        Approvals {
            asker,
            questions: None,
            allowed: Mutex::new(HashMap::new()),
        }
    }

    /// The same approvals, with `handler` answering the questions plugins ask
    /// (`ctx:ask`) during the session's calls.
    pub fn with_questions(mut self, handler: Arc<dyn QuestionHandler>) -> Approvals {
        self.questions = Some(handler);
        self
    }

    /// Who answers the questions plugins ask, if anyone.
    pub fn question_handler(&self) -> Option<&Arc<dyn QuestionHandler>> {
        self.questions.as_ref()
    }

    /// A session where nobody can be asked: `ask` denies the call for `reason` (the
    /// model reads `tool 'X' was denied: REASON`).
    pub fn refusing(reason: &str) -> Approvals {
        Approvals {
            asker: Asker::Refuse(reason.to_string()),
            questions: None,
            allowed: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `ask` needs more than allowing the call: a handler to ask, or a refusal.
    pub fn handles_ask(&self) -> bool {
        !matches!(self.asker, Asker::Nobody)
    }

    /// Whether the tool at `path` of `plugin` was allowed for the rest of this session:
    /// the answer was given to a plugin of the same code and grants as `plugin`.
    pub fn allowed_for_session(&self, path: &str, plugin: &PluginInfo) -> bool {
        self.lock()
            .get(path)
            .is_some_and(|approved| approved.covers(plugin))
    }

    /// Asks about `prompt` (the tool at `path`); the decision, remembered when the
    /// answer was "allow for the session".
    pub(crate) async fn ask(&self, path: &str, prompt: PermissionPrompt) -> Decision {
        if self.allowed_for_session(path, &prompt.plugin) {
            return Decision::Allow;
        }
        let handler = match &self.asker {
            Asker::Nobody => return Decision::Allow,
            Asker::Refuse(reason) => return Decision::Deny(reason.clone()),
            Asker::Handler(handler) => handler,
        };
        let approved = Approved::of(&prompt.plugin);
        match handler.ask(prompt).await {
            Answer::AllowOnce => Decision::Allow,
            Answer::AllowForSession => {
                self.lock().insert(path.to_string(), approved);
                Decision::Allow
            }
            Answer::Deny { feedback: None } => Decision::Deny("the user denied it".to_string()),
            Answer::Deny {
                feedback: Some(feedback),
            } => Decision::Deny(format!("the user denied it: {feedback}")),
            Answer::Unanswered(reason) => Decision::Deny(reason),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Approved>> {
        self.allowed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Who answers `ask` in a session.
enum Asker {
    /// Nobody: `ask` allows.
    Nobody,
    /// A handler.
    Handler(Arc<dyn PermissionHandler>),
    /// Nobody can be asked, and `ask` denies for this reason.
    Refuse(String),
}

/// An embedder's resolver in the chain.
pub(crate) struct RegisteredResolver {
    pub name: String,
    pub priority: i32,
    pub resolver: Arc<dyn Resolver>,
}

/// What the resolvers that depend on the tool alone decide about it, decided when the
/// registry is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdicts {
    pub rules: Option<Decision>,
    pub presets: Option<Decision>,
    pub no_prompt: Option<Decision>,
    pub default: Decision,
}

impl Verdicts {
    /// The chain's decision when no embedder resolver decides.
    pub fn decision(&self) -> &Decision {
        self.rules
            .as_ref()
            .or(self.presets.as_ref())
            .or(self.no_prompt.as_ref())
            .unwrap_or(&self.default)
    }
}

/// A step of the chain.
enum Step {
    Embedder(usize),
    Rules,
    Presets,
    NoPrompt,
}

/// The resolver chain of a runtime, in the order it is asked.
pub(crate) struct Chain {
    resolvers: Vec<RegisteredResolver>,
    steps: Vec<Step>,
}

impl Chain {
    /// The chain of the embedder's `resolvers` and the built-in ones, by priority (an
    /// embedder's resolver goes before a built-in one of the same priority, and
    /// resolvers of the same priority keep their order).
    pub fn new(resolvers: Vec<RegisteredResolver>) -> Chain {
        let mut ordered: Vec<(i32, Step)> = resolvers
            .iter()
            .enumerate()
            .map(|(index, resolver)| (resolver.priority, Step::Embedder(index)))
            .collect();
        ordered.extend([
            (RULES_PRIORITY, Step::Rules),
            (PRESETS_PRIORITY, Step::Presets),
            (NO_PROMPT_PRIORITY, Step::NoPrompt),
        ]);
        ordered.sort_by_key(|(priority, _)| std::cmp::Reverse(*priority));
        Chain {
            resolvers,
            steps: ordered.into_iter().map(|(_, step)| step).collect(),
        }
    }

    /// Whether the embedder registered resolvers (otherwise a tool's [`Verdicts`]
    /// decide alone).
    pub fn has_resolvers(&self) -> bool {
        !self.resolvers.is_empty()
    }

    /// The decision for `request`, given what the built-in resolvers say of its tool.
    pub fn decide(&self, verdicts: &Verdicts, request: &PermissionRequest<'_>) -> Decision {
        for step in &self.steps {
            let decided = match step {
                Step::Embedder(index) => {
                    let registered = &self.resolvers[*index];
                    match registered.resolver.resolve(request) {
                        Ok(decision) => decision,
                        Err(error) => {
                            tracing::warn!(
                                "permission resolver '{}' failed for tool '{}' (skipped): {error}",
                                registered.name,
                                request.tool.name
                            );
                            None
                        }
                    }
                }
                Step::Rules => verdicts.rules.clone(),
                Step::Presets => verdicts.presets.clone(),
                Step::NoPrompt => verdicts.no_prompt.clone(),
            };
            if let Some(decision) = decided {
                return decision;
            }
        }
        verdicts.default.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_shows_at_most_500_bytes_of_the_arguments() {
        assert_eq!(shown(&json!({"path": "a.txt"})), r#"{"path":"a.txt"}"#);
        // `{"s":"` is 6 bytes; then 2-byte characters, cut at a character boundary.
        let text = shown(&json!({ "s": "é".repeat(1_000_000) }));
        assert_eq!(text.len(), 6 + 494 + 3, "{}", text.len());
        assert!(text.ends_with("é..."));
    }
}
