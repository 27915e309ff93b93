//! Who answers `ask` in an MCP session: the client's user, through an
//! `elicitation/create` request, when the client declared form elicitation when it
//! initialized; otherwise `--ask-fallback` (deny by default). Requests of protocol
//! 2026-07-28 ask with the same form through input-required results (`input`).

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::service::{ElicitationMode, Peer};

use crate::policy::{Answer, Approvals, BoxFuture, PermissionHandler, PermissionPrompt};

/// What `ask` does in a session whose client cannot be asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum AskFallback {
    /// The call runs.
    Allow,
    /// The call is denied.
    #[default]
    Deny,
}

/// The reason of a call denied because the client cannot be asked.
const CANNOT_ASK: &str = "it needs approval, and the MCP client cannot ask the user \
     (the session has no elicitation; the server runs with --ask-fallback deny)";

/// Whether the client behind `peer` can be asked (it declared form elicitation).
pub(super) fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
}

/// The approvals of a session with the client behind `peer`.
pub(super) fn for_session(peer: &Peer<RoleServer>, fallback: AskFallback) -> Approvals {
    if can_ask(peer) {
        return Approvals::new(Some(Arc::new(Elicitor {
            peer: peer.clone(),
            fallback,
        })));
    }
    without_asking(fallback)
}

/// The approvals of a client that cannot be asked: `--ask-fallback` decides.
pub(super) fn without_asking(fallback: AskFallback) -> Approvals {
    match fallback {
        AskFallback::Allow => Approvals::new(None),
        AskFallback::Deny => Approvals::refusing(CANNOT_ASK),
    }
}

/// Asks the client's user with a form: allow once, allow for the session, or deny
/// with optional feedback.
struct Elicitor {
    peer: Peer<RoleServer>,
    fallback: AskFallback,
}

/// The form's choices, as the client's user sees them; the second lasts for the
/// session, which requests without one (protocol 2026-07-28) do not offer.
const CHOICES: [(&str, &str); 3] = [
    ("allow_once", "Allow once"),
    ("allow_session", "Allow for this session"),
    ("deny", "Deny"),
];

impl PermissionHandler for Elicitor {
    fn ask(&self, prompt: PermissionPrompt) -> BoxFuture<Answer> {
        let peer = self.peer.clone();
        let fallback = self.fallback;
        Box::pin(async move {
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message(&prompt),
                requested_schema: form_schema(),
            };
            match peer.create_elicitation(params).await {
                Ok(result) => match result.action {
                    ElicitationAction::Accept => read_form(result.content.as_ref()),
                    // Declined, cancelled, or an action this server does not know.
                    _ => Answer::Deny { feedback: None },
                },
                Err(error) => {
                    tracing::warn!(
                        "cannot ask the MCP client about tool '{}': {error}",
                        prompt.tool.name
                    );
                    match fallback {
                        AskFallback::Allow => Answer::AllowOnce,
                        AskFallback::Deny => Answer::Unanswered(format!(
                            "it needs approval, and asking the MCP client failed ({error})"
                        )),
                    }
                }
            }
        })
    }
}

/// What the user reads: the tool, what its plugin may do, the arguments (cut as the
/// terminal's question cuts them).
pub(super) fn message(prompt: &PermissionPrompt) -> String {
    let grants = &prompt.plugin.grants;
    format!(
        "Allow tool '{}' of plugin '{}' (files: {}, HTTP: {}) to run with {}?",
        prompt.tool.name,
        prompt.plugin.manifest.id,
        grants.files(),
        if grants.may_use_http() { "yes" } else { "no" },
        prompt.shown_arguments()
    )
}

/// The form of a session's approval.
fn form_schema() -> ElicitationSchema {
    let choices: Vec<_> = CHOICES.iter().collect();
    schema_of(&choices)
}

/// The form of an approval without a session, as JSON: allow once or deny.
pub(super) fn form_once() -> serde_json::Map<String, serde_json::Value> {
    let choices: Vec<_> = CHOICES
        .iter()
        .filter(|(value, _)| *value != "allow_session")
        .collect();
    match serde_json::to_value(schema_of(&choices)) {
        Ok(serde_json::Value::Object(form)) => form,
        _ => serde_json::Map::new(),
    }
}

/// The form: a required choice among `choices`, and optional feedback for the model.
fn schema_of(choices: &[&(&str, &str)]) -> ElicitationSchema {
    let decision =
        EnumSchema::builder(choices.iter().map(|(value, _)| value.to_string()).collect())
            .title("Decision")
            .enum_titles(choices.iter().map(|(_, title)| title.to_string()).collect());
    let builder = ElicitationSchema::builder();
    let builder = match decision {
        Ok(decision) => builder.required_enum_schema("decision", decision.build()),
        // The titles match the values by construction.
        Err(_) => builder,
    };
    builder
        .optional_string("feedback")
        .build()
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()))
}

/// The answer in an accepted form; anything else denies.
pub(super) fn read_form(content: Option<&serde_json::Value>) -> Answer {
    let field = |name: &str| {
        content
            .and_then(|content| content.get(name))
            .and_then(serde_json::Value::as_str)
    };
    match field("decision") {
        Some("allow_once") => Answer::AllowOnce,
        Some("allow_session") => Answer::AllowForSession,
        _ => Answer::Deny {
            feedback: field("feedback")
                .filter(|text| !text.trim().is_empty())
                .map(str::to_string),
        },
    }
}
