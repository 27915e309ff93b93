//! Who answers the questions plugins ask (`ctx:ask`) in an MCP session: the client's
//! user, through an `elicitation/create` request carrying the plugin's form, when the
//! client declared form elicitation; otherwise nobody, and the plugin is told why.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;

use crate::services::ask::{BoxFuture, Question, QuestionHandler, Reply, client_form};

/// Why a session's questions go unanswered when its client cannot be asked.
const CANNOT_ASK: &str = "the MCP client cannot ask its user (it did not declare form \
     elicitation)";

/// The handler of a session with the client behind `peer`.
pub(super) fn for_session(peer: &Peer<RoleServer>) -> Arc<dyn QuestionHandler> {
    if super::approval::can_ask(peer) {
        Arc::new(Elicitor { peer: peer.clone() })
    } else {
        nobody()
    }
}

/// The handler of a client that cannot be asked.
pub(super) fn nobody() -> Arc<dyn QuestionHandler> {
    Arc::new(|_question: Question| async { Reply::Unanswered(CANNOT_ASK.to_string()) })
}

/// Asks the client's user with the plugin's form.
struct Elicitor {
    peer: Peer<RoleServer>,
}

impl QuestionHandler for Elicitor {
    fn ask(&self, question: Question) -> BoxFuture<Reply> {
        let peer = self.peer.clone();
        Box::pin(async move {
            let schema: ElicitationSchema = match serde_json::from_value(serde_json::Value::Object(
                client_form(&question.schema),
            )) {
                Ok(schema) => schema,
                Err(error) => {
                    return Reply::Unanswered(format!(
                        "the form cannot be sent to the MCP client: {error}"
                    ));
                }
            };
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: question.message,
                requested_schema: schema,
            };
            match peer.create_elicitation(params).await {
                Ok(result) => match result.action {
                    ElicitationAction::Accept => match result.content {
                        Some(serde_json::Value::Object(answer)) => Reply::Accepted(answer),
                        None => Reply::Accepted(serde_json::Map::new()),
                        Some(_) => Reply::Unanswered(
                            "the MCP client's answer is not an object".to_string(),
                        ),
                    },
                    ElicitationAction::Decline => Reply::Declined,
                    _ => Reply::Cancelled,
                },
                Err(error) => Reply::Unanswered(format!("asking the MCP client failed: {error}")),
            }
        })
    }
}
