//! `Ctx`: what a tool's handler can do while it runs.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::Error;
use crate::bindings::{Answer, HttpRequest, OpOutcome, Question, host};
use crate::executor::{self, CallId, JoinSlot, Operation, SharedSlot, TaskId};
use crate::protocol;

/// How the user answered [`Ctx::ask`].
#[derive(Debug, Clone, PartialEq)]
pub enum UserAnswer {
    /// The user filled in the form: an object the form accepts.
    Accepted(serde_json::Map<String, serde_json::Value>),
    /// The user declined to answer.
    Declined,
    /// The user dismissed the question.
    Cancelled,
}

/// The context of one tool invocation. Cheap to clone: move clones into spawned tasks.
#[derive(Clone)]
pub struct Ctx {
    call: CallId,
    tool: Rc<str>,
    args_json: Rc<str>,
}

/// An HTTP request (GET or POST).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// "GET" or "POST".
    pub method: String,
    /// An absolute http or https URL.
    pub url: String,
    /// Header names and values, sent in this order.
    pub headers: Vec<(String, String)>,
    /// The body; none for GET.
    pub body: Option<Vec<u8>>,
}

impl Request {
    /// A GET of `url`.
    pub fn get(url: impl Into<String>) -> Request {
        Request {
            method: "GET".to_string(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// A POST of `body` to `url`.
    pub fn post(url: impl Into<String>, body: impl Into<Vec<u8>>) -> Request {
        Request {
            method: "POST".to_string(),
            url: url.into(),
            headers: Vec::new(),
            body: Some(body.into()),
        }
    }

    /// The same request with one more header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Request {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A complete HTTP response, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body)
            .map_err(|error| Error::new(format!("the response is not the expected JSON: {error}")))
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

impl Ctx {
    pub(crate) fn new(call: CallId, tool: &str, args_json: &str) -> Ctx {
        Ctx {
            call,
            tool: Rc::from(tool),
            args_json: Rc::from(args_json),
        }
    }

    /// The name of the tool being invoked.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The arguments exactly as the caller sent them (JSON text).
    pub fn raw_args(&self) -> &str {
        &self.args_json
    }

    /// The plugin's id.
    pub fn plugin(&self) -> String {
        protocol::plugin_name()
    }

    /// Performs an HTTP request. Fails when the host refuses it (the plugin's policy,
    /// its capabilities, a limit) or the exchange fails; 4xx and 5xx are responses.
    pub async fn http(&self, request: Request) -> Result<Response, Error> {
        let request = HttpRequest {
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: request.body,
        };
        let op = host::http_start(self.call, &request).map_err(Error::new)?;
        match Operation::new(self.call, op).await {
            OpOutcome::HttpResponse(response) => Ok(Response {
                status: response.status,
                headers: response.headers,
                body: response.body,
            }),
            OpOutcome::HttpError(message) => Err(Error::new(message)),
            _ => Err(Error::new(
                "the host answered an HTTP request with something else",
            )),
        }
    }

    /// Asks the user of the caller a question: `message`, and the form of the answer,
    /// a JSON Schema object of flat fields (string, number, integer, boolean, or a
    /// string enum, each with an optional default: MCP's elicitation subset). The
    /// wait does not count against the call's deadline. Fails when nobody can be
    /// asked, the host refuses the question, or the answer cannot be read.
    pub async fn ask(&self, message: &str, schema: serde_json::Value) -> Result<UserAnswer, Error> {
        let question = Question {
            message: message.to_string(),
            schema: schema.to_string(),
        };
        let op = host::ask_start(self.call, &question).map_err(Error::new)?;
        match Operation::new(self.call, op).await {
            OpOutcome::Answered(Answer::Accepted(json)) => serde_json::from_str(&json)
                .map(UserAnswer::Accepted)
                .map_err(|error| Error::new(format!("the answer could not be read: {error}"))),
            OpOutcome::Answered(Answer::Declined) => Ok(UserAnswer::Declined),
            OpOutcome::Answered(Answer::Cancelled) => Ok(UserAnswer::Cancelled),
            OpOutcome::Answered(Answer::Unanswered(reason)) => Err(Error::new(reason)),
            _ => Err(Error::new(
                "the host answered a question with something else",
            )),
        }
    }

    /// GETs `url`.
    pub async fn http_get(&self, url: &str) -> Result<Response, Error> {
        self.http(Request::get(url)).await
    }

    /// Waits for `duration` without blocking the plugin's other work.
    pub async fn sleep(&self, duration: Duration) -> Result<(), Error> {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let op = host::timer_start(self.call, ms).map_err(Error::new)?;
        match Operation::new(self.call, op).await {
            OpOutcome::TimerFired => Ok(()),
            _ => Err(Error::new("the host answered a timer with something else")),
        }
    }

    /// Runs `future` as a child task of this invocation, concurrently with the rest
    /// of it. Await the [`JoinHandle`] for its result. Child tasks end with their
    /// invocation: whatever is still running when the handler returns is cancelled.
    pub fn spawn<T: 'static>(&self, future: impl Future<Output = T> + 'static) -> JoinHandle<T> {
        let slot: SharedSlot<T> = Rc::new(RefCell::new(JoinSlot {
            value: None,
            waker: None,
        }));
        let filled = slot.clone();
        let task = async move {
            let value = future.await;
            let waker = {
                let mut slot = filled.borrow_mut();
                slot.value = Some(value);
                slot.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        };
        let task = executor::spawn(self.call, Box::pin(task));
        JoinHandle {
            call: self.call,
            task,
            slot,
        }
    }

    /// Reads a whole file below the granted root.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, Error> {
        host::read_file(path).map_err(Error::new)
    }

    /// Reads a whole UTF-8 text file below the granted root.
    pub fn read_to_string(&self, path: &str) -> Result<String, Error> {
        String::from_utf8(self.read_file(path)?)
            .map_err(|_| Error::new(format!("{path} is not UTF-8 text")))
    }

    /// Replaces (or creates) a whole file below the granted root.
    pub fn write_file(&self, path: &str, content: impl AsRef<[u8]>) -> Result<(), Error> {
        host::write_file(path, content.as_ref()).map_err(Error::new)
    }

    /// The absolute path of the plugin's file root, which relative paths are taken
    /// from: its own directory unless the user granted a root (created on its first
    /// write); `None` when the plugin may not use files.
    pub fn data_dir(&self) -> Option<String> {
        host::config(protocol::DATA_DIR_KEY)
    }

    /// The user's configuration for this plugin: `[tools.ID]` of the config file (the
    /// plugin's id), else `[tools.TOOL]` (this tool's name); `None` when neither exists.
    pub fn config<T: DeserializeOwned>(&self) -> Result<Option<T>, Error> {
        let text = host::config(&protocol::plugin_name()).or_else(|| host::config(&self.tool));
        match text {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|error| Error::new(format!("the plugin's configuration: {error}"))),
        }
    }

    /// Reports how far the call has come: `done` units of work, out of `total` when
    /// known, with an optional message. The host forwards the latest report to the
    /// caller (an MCP client that asked for progress, an embedder), at most one every
    /// 100 ms. The error says which value is out of range (`done` must be finite and
    /// 0 or more, `total` finite and more than 0).
    pub fn progress(
        &self,
        done: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), Error> {
        host::progress(self.call, done, total, message).map_err(Error::new)
    }

    /// Appends a line to the debug log (nothing when the user did not enable it).
    pub fn log(&self, message: &str) {
        if protocol::debug_log_enabled() {
            host::log(message);
        }
    }
}

/// The result of a spawned task, as a future. Dropping the handle lets the task run
/// on; [`JoinHandle::abort`] cancels it (and consumes the handle, since an aborted
/// task has no result to wait for).
pub struct JoinHandle<T> {
    call: CallId,
    /// None when the invocation had already ended.
    task: Option<TaskId>,
    slot: SharedSlot<T>,
}

impl<T> JoinHandle<T> {
    /// Cancels the task (and its host operations) if it has not finished.
    pub fn abort(self) {
        if let Some(task) = self.task {
            executor::abort(self.call, task);
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut slot = self.slot.borrow_mut();
        match slot.value.take() {
            Some(value) => Poll::Ready(value),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
