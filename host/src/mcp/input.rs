//! Input-required results (SEP-2322): how a request of protocol 2026-07-28 asks the
//! client's user. Such a protocol has no server-to-client requests, so when a call's
//! plugin asks (`ctx:ask`) or the policy's `ask` needs the user, the `tools/call` is
//! answered with an input-required result: the elicitation requests, keyed, and a
//! `requestState`. The call itself waits in this process ([`Waiting`]), keyed by an
//! unguessable id inside the state; the client calls again with its responses and the
//! state, and the call goes on until its result or its next question.
//!
//! - The state is the waiting call's random id, its round (each input-required result
//!   is a new round) and a keyed BLAKE3 MAC of both under a key drawn when the server
//!   starts. A call waits bound to its tool's name and the digest of its arguments: a
//!   state that does not verify, that names a call no longer waiting, an earlier
//!   round, or another tool or other arguments, is refused with -32602 saying which.
//! - A waiting call gives up after [`ServeOptions::waiting_call_ttl`] and is
//!   cancelled; at most [`ServeOptions::max_waiting_calls`] wait at once, and a call
//!   that would wait past that gets its question unanswered (its approval denied),
//!   with the reason. The wait does not count against the call's deadline.
//! - Responses a round did not ask for are ignored; a question without a response is
//!   asked again. A fresh call may carry responses already (a client that knows the
//!   keys): a question whose key has one is answered at once.
//! - State lives in the process: a restart forgets every waiting call.
//!
//! The table is touched only when a call asks; a plain call never sees it.
//!
//! [`ServeOptions::waiting_call_ttl`]: super::ServeOptions::waiting_call_ttl
//! [`ServeOptions::max_waiting_calls`]: super::ServeOptions::max_waiting_calls

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand_core::{OsRng, RngCore};
use rmcp::model::{ElicitRequest, InputRequest, InputRequests, InputRequiredResult, JsonObject};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::approval;
use super::logging::CallLog;
use crate::Call;
use crate::policy::{Answer, Approvals, BoxFuture, PermissionHandler, PermissionPrompt};
use crate::services::ask::{Question, QuestionHandler, Reply, client_form, question_key};

/// How many calls may wait for input at once, by default (`serve --max-waiting-calls`).
pub const DEFAULT_MAX_WAITING_CALLS: u32 = 64;

/// How long a call waits for the client to answer, by default
/// (`serve --waiting-call-ttl`).
pub const DEFAULT_WAITING_CALL_TTL: Duration = Duration::from_secs(300);

/// The key of the input request for the policy's `ask`.
pub const APPROVAL_KEY: &str = "approval";

/// A waiting call's id: 128 random bits.
type CallKey = [u8; 16];

/// Something a call asks, on its way to the request that answers it.
pub(super) struct Asked {
    /// Its key in `inputRequests` and `inputResponses`.
    pub key: String,
    message: String,
    form: Map<String, Value>,
    reply: Replier,
}

/// Where the answer goes.
enum Replier {
    Question(oneshot::Sender<Reply>),
    Approval(oneshot::Sender<Answer>),
}

/// A client's response to one input request: an elicitation result.
pub(super) enum Response {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Response {
    /// Reads `value`, the response under `key`; the error says what is wrong.
    pub fn read(key: &str, value: &Value) -> Result<Response, String> {
        let Value::Object(result) = value else {
            return Err(format!(
                "inputResponses.{key} must be an elicitation result (an object with an action)"
            ));
        };
        match result.get("action").and_then(Value::as_str) {
            Some("accept") => match result.get("content") {
                None | Some(Value::Null) => Ok(Response::Accept(Map::new())),
                Some(Value::Object(content)) => Ok(Response::Accept(content.clone())),
                Some(_) => Err(format!("inputResponses.{key}.content must be an object")),
            },
            Some("decline") => Ok(Response::Decline),
            Some("cancel") => Ok(Response::Cancel),
            _ => Err(format!(
                "inputResponses.{key}.action must be \"accept\", \"decline\" or \"cancel\""
            )),
        }
    }
}

impl Asked {
    /// Gives the call its answer.
    pub fn answer(self, response: Response) {
        // A receiver gone means the call ended meanwhile: nobody to tell.
        match self.reply {
            Replier::Question(reply) => {
                let _ = reply.send(match response {
                    Response::Accept(answer) => Reply::Accepted(answer),
                    Response::Decline => Reply::Declined,
                    Response::Cancel => Reply::Cancelled,
                });
            }
            Replier::Approval(reply) => {
                let _ = reply.send(match response {
                    Response::Accept(form) => approval::read_form(Some(&Value::Object(form))),
                    Response::Decline | Response::Cancel => Answer::Deny { feedback: None },
                });
            }
        }
    }

    /// Tells the call nobody answers, for `reason`.
    pub fn unanswered(self, reason: &str) {
        match self.reply {
            Replier::Question(reply) => {
                let _ = reply.send(Reply::Unanswered(reason.to_string()));
            }
            Replier::Approval(reply) => {
                let _ = reply.send(Answer::Unanswered(reason.to_string()));
            }
        }
    }

    /// The input request the client fulfils.
    fn request(&self) -> Result<InputRequest, serde_json::Error> {
        let request: ElicitRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": self.message,
                "requestedSchema": self.form,
            }
        }))?;
        Ok(InputRequest::Elicitation(request))
    }
}

/// One call's way of asking through input-required results: its question handler
/// and approvals send what they ask to the request serving the call.
pub(super) struct Asking {
    sender: mpsc::UnboundedSender<Asked>,
    /// Questions asked so far, for the keys of those whose form names none.
    asked: AtomicU32,
}

impl Asking {
    /// The approvals of one call whose client can be asked, and the receiving end.
    pub fn approvals() -> (Approvals, mpsc::UnboundedReceiver<Asked>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let asking = Arc::new(Asking {
            sender,
            asked: AtomicU32::new(0),
        });
        let approvals = Approvals::new(Some(asking.clone())).with_questions(asking);
        (approvals, receiver)
    }

    /// Sends what `make` makes on, and waits for the answer.
    fn send<T: Send + 'static>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Asked,
        gone: impl FnOnce() -> T + Send + 'static,
    ) -> BoxFuture<T> {
        let (reply, answer) = oneshot::channel();
        let sent = self.sender.send(make(reply)).is_ok();
        Box::pin(async move {
            if !sent {
                return gone();
            }
            answer.await.unwrap_or_else(|_| gone())
        })
    }
}

/// Why an ask went unanswered when the request serving the call went away.
const GONE: &str = "the MCP client's request ended before the question was answered";

impl QuestionHandler for Asking {
    fn ask(&self, question: Question) -> BoxFuture<Reply> {
        let number = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        let key = question_key(&question.schema)
            .map(str::to_string)
            .unwrap_or_else(|| format!("question-{number}"));
        let form = client_form(&question.schema);
        let message = question.message;
        self.send(
            move |reply| Asked {
                key,
                message,
                form,
                reply: Replier::Question(reply),
            },
            || Reply::Unanswered(GONE.to_string()),
        )
    }
}

impl PermissionHandler for Asking {
    fn ask(&self, prompt: PermissionPrompt) -> BoxFuture<Answer> {
        let message = approval::message(&prompt);
        let form = approval::form_once();
        self.send(
            move |reply| Asked {
                key: APPROVAL_KEY.to_string(),
                message,
                form,
                reply: Replier::Approval(reply),
            },
            || Answer::Unanswered(GONE.to_string()),
        )
    }
}

/// A call that waits for the client's input, with what its request was serving.
pub(super) struct Parked {
    pub call: Call,
    /// What the call asks, when it may ask by input-required results.
    pub asks: Option<mpsc::UnboundedReceiver<Asked>>,
    /// The questions the client was asked and has not answered.
    pub open: Vec<Asked>,
    pub log: Option<CallLog>,
    pub binding: Binding,
}

/// What a waiting call is bound to: its tool and the digest of its arguments.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Binding {
    pub tool: String,
    pub arguments: blake3::Hash,
}

impl Binding {
    /// The binding of a call that never waits (it cannot ask by input-required
    /// results), made without hashing anything.
    pub fn none() -> Binding {
        Binding {
            tool: String::new(),
            arguments: blake3::Hash::from_bytes([0; 32]),
        }
    }

    pub fn new(tool: &str, arguments: &JsonObject) -> Binding {
        let mut hasher = blake3::Hasher::new();
        digest_object(&mut hasher, arguments);
        Binding {
            tool: tool.to_string(),
            arguments: hasher.finalize(),
        }
    }
}

/// Feeds `value` to `hasher` with every object's keys in order, so that a client
/// that sends the same arguments in another key order is bound to the same call.
fn digest_value(hasher: &mut blake3::Hasher, value: &Value) {
    match value {
        Value::Object(object) => digest_object(hasher, object),
        Value::Array(items) => {
            hasher.update(format!("[{}", items.len()).as_bytes());
            for item in items {
                digest_value(hasher, item);
            }
        }
        scalar => {
            let text = scalar.to_string();
            hasher.update(format!("{}:", text.len()).as_bytes());
            hasher.update(text.as_bytes());
        }
    }
}

fn digest_object(hasher: &mut blake3::Hasher, object: &Map<String, Value>) {
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort();
    hasher.update(format!("{{{}", keys.len()).as_bytes());
    for key in keys {
        hasher.update(format!("{}:", key.len()).as_bytes());
        hasher.update(key.as_bytes());
        digest_value(hasher, &object[key]);
    }
}

/// Why a `requestState` is refused.
#[derive(Debug, thiserror::Error)]
pub(super) enum StateError {
    #[error(
        "the requestState was not issued by this server (it is altered, or from another server)"
    )]
    Forged,
    #[error(
        "no call waits on this requestState: it ended, it waited longer than {0} s, another request is answering it, or the server restarted"
    )]
    NotWaiting(u64),
    #[error("the requestState is of an earlier round of its call: send the latest one")]
    Replayed,
    #[error("the requestState belongs to a call of tool '{0}', not of this one")]
    OtherTool(String),
    #[error("the requestState belongs to a call with other arguments: send the same arguments")]
    OtherArguments,
}

/// The calls waiting for input, shared by every session of a server.
pub(super) struct Waiting {
    key: [u8; 32],
    calls: Mutex<HashMap<CallKey, Entry>>,
    max: usize,
    ttl: Duration,
    shutdown: CancellationToken,
}

struct Entry {
    round: u32,
    parked: Parked,
}

/// A call's place in the table, as a `requestState` names it.
#[derive(Clone, Copy)]
pub(super) struct Ticket {
    id: CallKey,
    round: u32,
}

impl Ticket {
    /// A new call's first round.
    fn first() -> Ticket {
        let mut id = [0; 16];
        OsRng.fill_bytes(&mut id);
        Ticket { id, round: 0 }
    }

    fn next(self) -> Ticket {
        Ticket {
            id: self.id,
            round: self.round.wrapping_add(1),
        }
    }
}

/// The bytes of a state: id, round, MAC.
const STATE_BYTES: usize = 16 + 4 + 32;

impl Waiting {
    /// An empty table of at most `max` calls, each waiting at most `ttl`; `shutdown`
    /// cancels them all.
    pub fn new(max: u32, ttl: Duration, shutdown: CancellationToken) -> Waiting {
        let mut key = [0; 32];
        OsRng.fill_bytes(&mut key);
        Waiting {
            key,
            calls: Mutex::new(HashMap::new()),
            max: max as usize,
            ttl,
            shutdown,
        }
    }

    fn mac(&self, ticket: Ticket) -> blake3::Hash {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        hasher.update(b"toolcell requestState 1");
        hasher.update(&ticket.id);
        hasher.update(&ticket.round.to_le_bytes());
        hasher.finalize()
    }

    fn seal(&self, ticket: Ticket) -> String {
        let mut bytes = Vec::with_capacity(STATE_BYTES);
        bytes.extend_from_slice(&ticket.id);
        bytes.extend_from_slice(&ticket.round.to_le_bytes());
        bytes.extend_from_slice(self.mac(ticket).as_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    fn open(&self, state: &str) -> Result<Ticket, StateError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(state)
            .map_err(|_| StateError::Forged)?;
        if bytes.len() != STATE_BYTES {
            return Err(StateError::Forged);
        }
        let mut id = [0; 16];
        id.copy_from_slice(&bytes[..16]);
        let mut round = [0; 4];
        round.copy_from_slice(&bytes[16..20]);
        let ticket = Ticket {
            id,
            round: u32::from_le_bytes(round),
        };
        let mut mac = [0; 32];
        mac.copy_from_slice(&bytes[20..]);
        // `blake3::Hash`'s equality takes the same time whatever the bytes.
        if self.mac(ticket) != blake3::Hash::from_bytes(mac) {
            return Err(StateError::Forged);
        }
        Ok(ticket)
    }

    /// Takes the call `state` names out of the table, if it waits bound to `binding`.
    pub(super) fn take(
        &self,
        state: &str,
        binding: &Binding,
    ) -> Result<(Ticket, Parked), StateError> {
        let ticket = self.open(state)?;
        let mut calls = self.lock();
        let entry = calls
            .get(&ticket.id)
            .ok_or(StateError::NotWaiting(self.ttl.as_secs()))?;
        if entry.round != ticket.round {
            return Err(StateError::Replayed);
        }
        if entry.parked.binding.tool != binding.tool {
            return Err(StateError::OtherTool(entry.parked.binding.tool.clone()));
        }
        if entry.parked.binding.arguments != binding.arguments {
            return Err(StateError::OtherArguments);
        }
        let entry = calls.remove(&ticket.id).ok_or(StateError::Replayed)?;
        Ok((ticket, entry.parked))
    }

    /// Puts `parked` back under `ticket` unchanged (the request that took it was
    /// refused), so the same state answers it.
    pub(super) fn restore(self: &Arc<Self>, ticket: Ticket, parked: Parked) {
        self.lock().insert(
            ticket.id,
            Entry {
                round: ticket.round,
                parked,
            },
        );
    }

    /// Parks `parked` for its next round (after `previous`, or as a new call) and
    /// gives the input-required result that asks its open questions; when the table
    /// is full, gives the call back.
    pub(super) fn park(
        self: &Arc<Self>,
        previous: Option<Ticket>,
        parked: Parked,
    ) -> Result<InputRequiredResult, Box<Parked>> {
        let mut requests = InputRequests::new();
        for asked in &parked.open {
            match asked.request() {
                Ok(request) => {
                    requests.insert(asked.key.clone(), request);
                }
                Err(error) => {
                    tracing::warn!("cannot make the input request '{}': {error}", asked.key);
                }
            }
        }
        let ticket = previous.map_or_else(Ticket::first, Ticket::next);
        {
            let mut calls = self.lock();
            if previous.is_none() && calls.len() >= self.max {
                return Err(Box::new(parked));
            }
            calls.insert(
                ticket.id,
                Entry {
                    round: ticket.round,
                    parked,
                },
            );
        }
        let waiting = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(waiting.ttl) => {}
                () = waiting.shutdown.cancelled() => {}
            }
            waiting.expire(ticket);
        });
        Ok(InputRequiredResult::new(
            Some(requests),
            Some(self.seal(ticket)),
        ))
    }

    /// Cancels the call under `ticket` if it still waits in that round.
    fn expire(&self, ticket: Ticket) {
        let expired = {
            let mut calls = self.lock();
            match calls.get(&ticket.id) {
                Some(entry) if entry.round == ticket.round => calls.remove(&ticket.id),
                _ => None,
            }
        };
        if let Some(entry) = expired {
            let reason = format!(
                "the MCP client did not answer within {} s",
                self.ttl.as_secs()
            );
            entry.parked.call.cancel(&reason);
        }
    }

    /// The reason a question goes unanswered when the table is full.
    pub(super) fn full_reason(&self) -> String {
        format!(
            "too many calls wait for their MCP client's input: {} are waiting and the server allows {} (--max-waiting-calls)",
            self.max, self.max
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CallKey, Entry>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting() -> Waiting {
        Waiting::new(4, Duration::from_secs(60), CancellationToken::new())
    }

    #[test]
    fn a_state_opens_only_as_sealed_and_only_on_its_server() {
        let (server, other) = (waiting(), waiting());
        let ticket = Ticket::first().next();
        let state = server.seal(ticket);
        let opened = server.open(&state).expect("its own state");
        assert_eq!((opened.id, opened.round), (ticket.id, 1));
        assert!(matches!(other.open(&state), Err(StateError::Forged)));
        for altered in [
            format!("{state}-TAMPERED"),
            state[1..].to_string(),
            String::new(),
            "not base64!".to_string(),
        ] {
            assert!(
                matches!(server.open(&altered), Err(StateError::Forged)),
                "{altered}"
            );
        }
        // Each byte matters: the id, the round and the MAC.
        let bytes = URL_SAFE_NO_PAD.decode(&state).unwrap();
        for index in [0, 17, 40] {
            let mut flipped = bytes.clone();
            flipped[index] ^= 1;
            let flipped = URL_SAFE_NO_PAD.encode(flipped);
            assert!(matches!(server.open(&flipped), Err(StateError::Forged)));
        }
    }

    #[test]
    fn arguments_bind_by_value_whatever_their_key_order() {
        let object = |text: &str| -> JsonObject { serde_json::from_str(text).unwrap() };
        let one = Binding::new("t", &object(r#"{"a":1,"b":{"c":[1,"2"],"d":null}}"#));
        let reordered = Binding::new("t", &object(r#"{"b":{"d":null,"c":[1,"2"]},"a":1}"#));
        assert!(one == reordered);
        for other in [
            r#"{"a":1,"b":{"c":[1,2],"d":null}}"#,
            r#"{"a":1,"b":{"c":["1","2"],"d":null}}"#,
            r#"{"a":1}"#,
            r#"{"a":1,"b":{"c":[1,"2"],"d":null},"e":0}"#,
        ] {
            assert!(one != Binding::new("t", &object(other)), "{other}");
        }
        assert!(one != Binding::new("u", &object(r#"{"a":1,"b":{"c":[1,"2"],"d":null}}"#)));
    }
}
