//! What one model sees: a [`Session`]'s scope (which tools it is shown and may call),
//! its description overrides, and the envelope of its untrusted output.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::CallOutcome;
use crate::config::grants::Grants;
use crate::output::envelope::Envelope;
use crate::policy::{Approvals, PermissionHandler};
use crate::tool::names::{GlobError, ToolGlob, ToolNames};

use super::registry::Listing;
use super::search::{self, Query, SEARCH_TOOLS};
use super::{Arguments, Call, CallOptions, InvokeError, ListedTool, Runtime, ToolInfo};

/// Which tools a session sees: a start (every tool, or none), then globs that add tools
/// to it or remove them, in order; the last glob that matches a tool decides. A glob
/// names a tool by any of its names: an alias, the plain name it holds, its path or its
/// wire name (see [`ToolGlob`]); the tool is then in or out under every name, listed
/// or called.
///
/// ```
/// # fn main() -> Result<(), toolcell::names::GlobError> {
/// use toolcell::Scope;
/// // Every tool of plugin acme/notes but note_delete, and hello.
/// let scope = Scope::none()
///     .with("acme/notes/*")?
///     .without("note_delete")?
///     .with("hello")?;
/// // The same from `serve --tools` arguments.
/// let same = Scope::parse(["acme/notes/*", "!note_delete", "hello"])?;
/// assert_eq!(scope, same);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Whether a tool no glob matches is in scope.
    everything: bool,
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    Add(ToolGlob),
    Remove(ToolGlob),
}

impl Rule {
    fn glob(&self) -> &ToolGlob {
        match self {
            Rule::Add(glob) | Rule::Remove(glob) => glob,
        }
    }
}

impl Default for Scope {
    fn default() -> Self {
        Scope::all()
    }
}

impl Scope {
    /// Every tool that is not hidden.
    pub fn all() -> Scope {
        Scope {
            everything: true,
            rules: Vec::new(),
        }
    }

    /// No tool, until globs add some.
    pub fn none() -> Scope {
        Scope {
            everything: false,
            rules: Vec::new(),
        }
    }

    /// Adds the tools `glob` matches.
    pub fn with(mut self, glob: &str) -> Result<Scope, GlobError> {
        self.rules.push(Rule::Add(ToolGlob::new(glob)?));
        Ok(self)
    }

    /// Removes the tools `glob` matches.
    pub fn without(mut self, glob: &str) -> Result<Scope, GlobError> {
        self.rules.push(Rule::Remove(ToolGlob::new(glob)?));
        Ok(self)
    }

    /// A scope from arguments as `serve --tools` takes them: `GLOB` adds, `!GLOB`
    /// removes. It starts from no tool when the first argument adds, and from every
    /// tool when it removes; no argument at all is every tool.
    pub fn parse<'a>(arguments: impl IntoIterator<Item = &'a str>) -> Result<Scope, GlobError> {
        let mut scope: Option<Scope> = None;
        for argument in arguments {
            let (remove, glob) = match argument.strip_prefix('!') {
                Some(glob) => (true, glob),
                None => (false, argument),
            };
            let current = scope
                .take()
                .unwrap_or(if remove { Scope::all() } else { Scope::none() });
            scope = Some(if remove {
                current.without(glob)?
            } else {
                current.with(glob)?
            });
        }
        Ok(scope.unwrap_or_default())
    }

    /// Whether the tool that answers to `names` is in scope.
    fn contains(&self, names: &ToolNames) -> bool {
        let mut inside = self.everything;
        for rule in &self.rules {
            if rule.glob().matches(names) {
                inside = matches!(rule, Rule::Add(_));
            }
        }
        inside
    }

    /// The globs as given, `!` before the removing ones.
    pub fn globs(&self) -> Vec<String> {
        self.rules
            .iter()
            .map(|rule| match rule {
                Rule::Add(glob) => glob.to_string(),
                Rule::Remove(glob) => format!("!{glob}"),
            })
            .collect()
    }
}

/// One conversation's view of a runtime: the tools in its scope under the names the
/// model sees, with descriptions it may override, and its own envelope nonce for
/// untrusted output (see [`crate::output::envelope`]). Cheap to clone; clones share the view.
///
/// A session holds no runtime: pass the one to use to [`Session::tools`] and
/// [`Session::call`], so that a runtime behind a lock can be reloaded while sessions
/// live. [`Runtime::call`] stays what it was, a call outside any session (every tool,
/// hidden ones too).
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// use toolcell::{Runtime, Scope, Session};
/// let runtime = Runtime::builder().plugin_dir("plugins").build().await?;
/// let session = Session::new().with_scope(Scope::none().with("acme/notes/*")?);
/// session.describe("note_read", "Read one note by its title.");
/// for tool in session.tools(&runtime) {
///     println!("{}: {}", tool.name, tool.description);
/// }
/// let outcome = session.invoke(&runtime, "note_read", r#"{"title":"todo"}"#).await?;
/// println!("{}", outcome.model_text());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Session {
    state: Arc<State>,
}

struct State {
    envelope: Envelope,
    view: RwLock<View>,
    /// Who answers the permission policy's `ask`, and the tools allowed for the rest
    /// of the session.
    approvals: Arc<Approvals>,
}

#[derive(Default)]
struct View {
    scope: Scope,
    /// Description overrides by name (alias, plain name or path).
    descriptions: HashMap<String, String>,
    /// The paths of the deferred tools `search_tools` found: listed and callable from
    /// then on.
    found: HashSet<String>,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("scope", &self.view().scope)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session that sees every tool, with a fresh envelope nonce.
    pub fn new() -> Session {
        Session::with_approvals(Approvals::new(None))
    }

    /// A session that sees every tool, whose calls the permission policy says to
    /// `ask` about are answered by `handler` (its "allow for the session" answers last
    /// as long as the session and its clones). Without a handler, `ask` allows the
    /// call; see docs/policy.md.
    pub fn with_permission_handler(handler: impl PermissionHandler) -> Session {
        Session::with_approvals(Approvals::new(Some(Arc::new(handler))))
    }

    /// A session that sees every tool, with `approvals` answering `ask`.
    pub fn with_approvals(approvals: Approvals) -> Session {
        Session {
            state: Arc::new(State {
                envelope: Envelope::fresh(),
                view: RwLock::new(View::default()),
                approvals: Arc::new(approvals),
            }),
        }
    }

    /// The session's approvals: who answers `ask`, and what it allowed for the rest of
    /// the session.
    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.state.approvals
    }

    /// This session, seeing `scope`.
    pub fn with_scope(self, scope: Scope) -> Session {
        self.set_scope(scope);
        self
    }

    /// Sees `scope` from now on.
    pub fn set_scope(&self, scope: Scope) {
        self.view_mut().scope = scope;
    }

    /// The scope it sees.
    pub fn scope(&self) -> Scope {
        self.view().scope.clone()
    }

    /// Shows the tool `name` calls (an alias, name or path; an alias changes only what
    /// that alias shows) with `description`, over the configuration's and the plugin's.
    pub fn describe(&self, name: &str, description: impl Into<String>) {
        self.view_mut()
            .descriptions
            .insert(name.to_string(), description.into());
    }

    /// Drops the override [`Session::describe`] set for `name`.
    pub fn forget_description(&self, name: &str) {
        self.view_mut().descriptions.remove(name);
    }

    /// The tag of this session's envelope, `untrusted_output_NONCE`: what a harness
    /// may tell its model to expect.
    pub fn envelope_tag(&self) -> &str {
        self.state.envelope.tag()
    }

    /// The tools this session's model sees, in load order: each tool in scope that
    /// is not hidden, once per name it is shown under; of the deferred tools, only
    /// those `search_tools` found, and `search_tools` itself (last) while any is left
    /// to find.
    pub fn tools(&self, runtime: &Runtime) -> Vec<ListedTool> {
        let view = self.view();
        let grants = runtime.grants_by_plugin();
        let mut undiscovered = false;
        let mut tools: Vec<ListedTool> = runtime
            .names
            .listed()
            .iter()
            .filter(|listing| view.offers(runtime, listing))
            .filter(|listing| {
                let found = view.discovered(runtime, listing);
                undiscovered |= !found;
                found
            })
            .map(|listing| {
                let tool = &runtime.tools[listing.tool];
                let description = view.description(runtime, listing);
                runtime.listed(tool, listing.name.clone(), description, &grants)
            })
            .collect();
        if undiscovered {
            let tool = search::search_tool();
            tools.push(ListedTool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                tool,
                read_only: true,
                open_world: false,
                enveloped: false,
            });
        }
        tools
    }

    /// Finds the deferred tools in scope that fit `query` best (at most `limit`; see
    /// docs/tool-search.md), best first, and adds them to the tools the session lists
    /// and may call: what the model's call of `search_tools` does.
    pub fn search_tools(&self, runtime: &Runtime, query: &str, limit: usize) -> Vec<ListedTool> {
        let mut view = self.view_mut();
        let grants = runtime.grants_by_plugin();
        let candidates: Vec<&Listing> = runtime
            .names
            .listed()
            .iter()
            .filter(|listing| view.offers(runtime, listing))
            .filter(|listing| runtime.deferral.defers(&runtime.tools[listing.tool].plugin))
            .collect();
        let descriptions: Vec<String> = candidates
            .iter()
            .map(|listing| view.description(runtime, listing))
            .collect();
        let documents: Vec<(&str, &str)> = candidates
            .iter()
            .zip(&descriptions)
            .map(|(listing, description)| (listing.name.as_str(), description.as_str()))
            .collect();
        search::rank(query, &documents, limit)
            .into_iter()
            .map(|hit| {
                let (listing, description) = (candidates[hit], &descriptions[hit]);
                let tool = &runtime.tools[listing.tool];
                view.found.insert(tool.path.clone());
                runtime.listed(tool, listing.name.clone(), description.clone(), &grants)
            })
            .collect()
    }

    /// The paths of the deferred tools `search_tools` found so far, sorted.
    pub fn found_tools(&self) -> Vec<String> {
        let mut found: Vec<String> = self.view().found.iter().cloned().collect();
        found.sort();
        found
    }

    /// The globs of the scope that match no tool of `runtime` (`!` before a removing
    /// one): a harness should warn about each.
    pub fn unmatched_globs(&self, runtime: &Runtime) -> Vec<String> {
        let view = self.view();
        view.scope
            .rules
            .iter()
            .filter(|rule| {
                !runtime
                    .names
                    .listed()
                    .iter()
                    .any(|listing| rule.glob().matches(runtime.names.of(listing.tool)))
            })
            .map(|rule| match rule {
                Rule::Add(glob) => glob.to_string(),
                Rule::Remove(glob) => format!("!{glob}"),
            })
            .collect()
    }

    /// Starts a call as this session's model makes it: `tool` is any name of a tool
    /// in scope (the name shown, its own name, its path); any other, hidden tools
    /// included, is an unknown tool, with the closest names in scope suggested.
    /// Otherwise as [`Runtime::call`], with this session's envelope.
    pub fn call(
        &self,
        runtime: &Runtime,
        tool: &str,
        args_json: &str,
    ) -> Result<Call, InvokeError> {
        self.call_with(runtime, tool, args_json, CallOptions::default())
    }

    /// As [`Session::call`], with the id `options` reserved (a session never calls a
    /// hidden tool, whatever `options.refuse_hidden` says).
    pub fn call_with<'a>(
        &self,
        runtime: &Runtime,
        tool: &str,
        args: impl Into<Arguments<'a>>,
        options: CallOptions,
    ) -> Result<Call, InvokeError> {
        let args = args.into();
        if tool == SEARCH_TOOLS && runtime.deferral.is_possible() {
            return self.call_search(runtime, args);
        }
        let view = self.view();
        let in_scope = |index: usize| {
            runtime.names.listed().iter().any(|listing| {
                listing.tool == index
                    && view.shows(runtime, listing)
                    && view.discovered(runtime, listing)
            })
        };
        match runtime.names.resolve(tool).filter(|&index| in_scope(index)) {
            Some(index) => {
                let approvals = options.approvals.as_ref().unwrap_or(&self.state.approvals);
                runtime.start(
                    index,
                    tool,
                    args,
                    &self.state.envelope,
                    options.id,
                    approvals,
                )
            }
            None => {
                let shown: Vec<&str> = runtime
                    .names
                    .listed()
                    .iter()
                    .filter(|listing| view.shows(runtime, listing))
                    .filter(|listing| view.discovered(runtime, listing))
                    .map(|listing| listing.name.as_str())
                    .collect();
                Err(match runtime.names.resolve(tool) {
                    // A tool outside the scope is as unknown as a tool that is not there.
                    Some(_) => InvokeError::UnknownTool {
                        name: tool.to_string(),
                        suggestions: super::error::closest(tool, shown.into_iter()),
                    },
                    None => runtime.not_found(tool, shown.into_iter(), &self.state.envelope),
                })
            }
        }
    }

    /// A call of `search_tools`: its outcome, the JSON text of the tools found
    /// (`{"tools": [{"name", "description", "input_schema"}]}`), is ready at once.
    fn call_search(&self, runtime: &Runtime, args: Arguments<'_>) -> Result<Call, InvokeError> {
        let query = Query::parse(args).map_err(|message| InvokeError::InvalidArguments {
            tool: SEARCH_TOOLS.to_string(),
            message,
        })?;
        let found: Vec<serde_json::Value> = self
            .search_tools(runtime, &query.text, query.limit)
            .into_iter()
            .map(|tool| {
                serde_json::json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": crate::tool::schema::parameters(&tool.tool),
                })
            })
            .collect();
        let text = serde_json::json!({ "tools": found }).to_string();
        Ok(Call::answered(
            runtime,
            &search::search_tool(),
            CallOutcome::Completed(text),
        ))
    }

    /// Calls `tool` as [`Session::call`] does and waits for its outcome.
    pub async fn invoke(
        &self,
        runtime: &Runtime,
        tool: &str,
        args_json: &str,
    ) -> Result<CallOutcome, InvokeError> {
        Ok(self.call(runtime, tool, args_json)?.await)
    }

    fn view(&self) -> RwLockReadGuard<'_, View> {
        self.state
            .view
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn view_mut(&self) -> RwLockWriteGuard<'_, View> {
        self.state
            .view
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Runtime {
    /// The hidden tools the permission policy does not deny, each under its own name:
    /// what no model sees, but a user looking at every tool (`toolcell list`) does.
    #[cfg(feature = "cli")]
    pub(crate) fn hidden_tools(&self) -> Vec<ListedTool> {
        let grants = self.grants_by_plugin();
        self.tools
            .iter()
            .enumerate()
            .filter(|(index, tool)| tool.hidden && self.permits_listing(*index))
            .map(|(_, tool)| tool)
            .map(|tool| self.listed(tool, tool.name.clone(), tool.description.clone(), &grants))
            .collect()
    }

    fn grants_by_plugin(&self) -> HashMap<&str, &Grants> {
        self.infos
            .iter()
            .map(|info| (info.manifest.id.as_str(), &info.grants))
            .collect()
    }

    /// `tool` as shown under `name` with `description`.
    fn listed(
        &self,
        tool: &ToolInfo,
        name: String,
        description: String,
        grants: &HashMap<&str, &Grants>,
    ) -> ListedTool {
        let grants = grants.get(tool.plugin.as_str());
        ListedTool {
            name,
            description,
            tool: tool.clone(),
            read_only: grants.is_none_or(|grants| grants.is_read_only()),
            open_world: grants.is_some_and(|grants| grants.may_use_http()),
            enveloped: self.untrusted.envelops(&tool.plugin),
        }
    }
}

impl View {
    /// Whether the tool of `listing` is in scope: a scope takes or leaves a tool
    /// whole, with every name it answers to.
    fn shows(&self, runtime: &Runtime, listing: &Listing) -> bool {
        self.scope.contains(runtime.names.of(listing.tool))
    }

    /// Whether the session may be shown `listing` at all: in scope, and not denied.
    fn offers(&self, runtime: &Runtime, listing: &Listing) -> bool {
        self.shows(runtime, listing) && runtime.permits_listing(listing.tool)
    }

    /// Whether `listing`'s tool is not deferred, or `search_tools` found it.
    fn discovered(&self, runtime: &Runtime, listing: &Listing) -> bool {
        let tool = &runtime.tools[listing.tool];
        !runtime.deferral.defers(&tool.plugin) || self.found.contains(&tool.path)
    }

    /// The session's override, else the configuration's, else the plugin's; an
    /// override for an alias wins over one for the tool's path, which wins over one for
    /// its own name (when it holds it).
    fn description(&self, runtime: &Runtime, listing: &Listing) -> String {
        let tool = &runtime.tools[listing.tool];
        let mut keys: Vec<&str> = Vec::with_capacity(3);
        if listing.alias {
            keys.push(&listing.name);
        }
        keys.push(&tool.path);
        if runtime.names.of(listing.tool).plain.is_some() {
            keys.push(&tool.name);
        }
        [&self.descriptions, &runtime.descriptions]
            .iter()
            .find_map(|overrides| keys.iter().find_map(|key| overrides.get(*key)))
            .cloned()
            .unwrap_or_else(|| tool.description.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of a tool that holds its plain name.
    fn holder(path: &str) -> ToolNames {
        let (_, name) = crate::tool::names::split_path(path).expect("a path");
        ToolNames {
            plain: Some(name.to_string()),
            ..ToolNames::of_path(path)
        }
    }

    #[test]
    fn the_last_matching_glob_decides() {
        let scope = Scope::parse(["acme/notes/*", "!note_delete", "hello"]).expect("scope");
        assert!(scope.contains(&holder("acme/notes/note_read")));
        assert!(!scope.contains(&holder("acme/notes/note_delete")));
        assert!(scope.contains(&holder("hello/hello")));
        assert!(!scope.contains(&holder("other/other")));
        assert_eq!(scope.globs(), ["acme/notes/*", "!note_delete", "hello"]);
    }

    #[test]
    fn a_removed_alias_removes_the_tool_under_every_name() {
        let scope = Scope::parse(["!safe_tool"]).expect("scope");
        let aliased = ToolNames {
            aliases: vec!["other_alias".to_string(), "safe_tool".to_string()],
            ..holder("a_web/danger_zone")
        };
        assert!(!scope.contains(&aliased));
        // A bare name takes only the tool that holds it.
        let scope = Scope::parse(["search"]).expect("scope");
        assert!(scope.contains(&holder("web/search")));
        assert!(!scope.contains(&ToolNames::of_path("b_evil/search")));
    }

    #[test]
    fn a_first_removal_starts_from_everything() {
        let scope = Scope::parse(["!danger*"]).expect("scope");
        assert!(scope.contains(&holder("p/safe")));
        assert!(!scope.contains(&holder("p/danger_zone")));
        assert_eq!(Scope::parse([]).expect("scope"), Scope::all());
        assert!(Scope::parse(["a["]).is_err());
    }
}
