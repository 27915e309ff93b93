//! The checks every incoming message passes before rmcp sees it, over both transports.
//!
//! rmcp drops what it cannot parse without a word (invalid JSON, invalid UTF-8, a lone
//! surrogate escape, nesting past serde_json's limit), answers a malformed request with
//! an error that has no `id` member, and turns a standard request whose params do not
//! fit its method into an unknown method ("method not found"). A client then waits
//! for an answer that never comes, or reads the wrong reason. Here every message is
//! checked first, and one that fails gets the JSON-RPC error that says what and where:
//!
//! - not UTF-8, not JSON, nested deeper than [`MAX_DEPTH`]: -32700, `"id": null`;
//! - over [`MAX_MESSAGE_BYTES`], not an object, no usable `id`/`jsonrpc`/`method`:
//!   -32600, with the `id` when it could be read, else `"id": null`;
//! - params that do not fit the method (a `tools/call` without a string `name`,
//!   `arguments` that are not an object, a string with a lone surrogate escape):
//!   -32602 with the request's `id` and the reason.
//!
//! A notification that fails gets no answer (JSON-RPC forbids one); it is dropped.

use std::borrow::Cow;

#[expect(deprecated, reason = "logging is part of the protocol versions served")]
use rmcp::model::SetLevelRequest;
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, ErrorCode,
    InitializeRequest, ListToolsRequest, PingRequest, RequestId, SubscriptionsListenRequest,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The largest message accepted: one stdio line or one HTTP request body.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The deepest nesting of arrays and objects accepted in a message, the message itself
/// included: serde_json's own limit, which rmcp parses HTTP bodies with.
pub const MAX_DEPTH: usize = 127;

/// The UTF-8 byte order mark, which JSON text may start with (RFC 8259 8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A message refused before rmcp saw it, and what to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// Whom to answer: the request's id; none when it could not be read, which the
    /// answer says with `"id": null`, or for a notification, which gets no answer.
    pub id: Option<RequestId>,
    /// The JSON-RPC error code.
    pub code: ErrorCode,
    /// What is wrong, and where.
    pub message: String,
    /// Whether the message was a notification: nothing is sent back.
    pub silent: bool,
}

impl Rejection {
    fn new(id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Rejection {
        Rejection {
            id,
            code,
            message: message.into(),
            silent: false,
        }
    }

    /// The refusal of a message longer than [`MAX_MESSAGE_BYTES`] (`size` if known).
    pub fn too_large(size: Option<usize>) -> Rejection {
        let size = size.map_or_else(|| "longer".to_string(), |size| format!("{size} bytes"));
        Rejection::new(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("the message is {size}; a message may be at most 16 MiB"),
        )
    }

    /// The error response, as JSON text (one line, no newline), its members in the
    /// usual order.
    pub fn to_json(&self) -> String {
        let id = match &self.id {
            Some(id) => serde_json::to_value(id).unwrap_or(Value::Null),
            None => Value::Null,
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{},"message":{}}}}}"#,
            self.code.0,
            Value::String(self.message.clone())
        )
    }
}

/// The methods protocol 2026-07-28 removed that this server still answers in older
/// sessions.
const REMOVED_IN_2026_07_28: [&str; 2] = ["initialize", "logging/setLevel"];

/// The refusal of a request of protocol 2026-07-28 or later (a client that said so in
/// its `MCP-Protocol-Version` header) for a method that protocol removed: "method not
/// found", as for any method the server lacks (over HTTP, status 404). None for any
/// other message, which goes on to [`check`].
pub fn removed_method(bytes: &[u8]) -> Option<Rejection> {
    #[derive(Deserialize)]
    struct Peek {
        id: Option<RequestId>,
        method: Option<String>,
    }
    let peek: Peek = serde_json::from_slice(bytes.strip_prefix(BOM).unwrap_or(bytes)).ok()?;
    let method = peek.method?;
    REMOVED_IN_2026_07_28.contains(&method.as_str()).then(|| {
        let instead = if method == "initialize" {
            "a client of that protocol discovers the server with server/discover"
        } else {
            "a client of that protocol sets io.modelcontextprotocol/logLevel in a request's _meta"
        };
        Rejection::new(
            peek.id,
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: '{method}' was removed in protocol 2026-07-28 ({instead})"),
        )
    })
}

/// Checks one message (a stdio line without its newline, or an HTTP body) and parses
/// it for rmcp.
pub fn check(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Rejection> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(Rejection::too_large(Some(bytes.len())));
    }
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|error| {
        parse_error(format!(
            "the message is not UTF-8: invalid byte at offset {}",
            error.valid_up_to()
        ))
    })?;
    if let Some(offset) = too_deep(bytes) {
        return Err(parse_error(format!(
            "the message nests arrays and objects deeper than {MAX_DEPTH} levels (at offset {offset})"
        )));
    }
    let value: Value = serde_json::from_str(text).map_err(|error| unparsable(text, &error))?;
    let Value::Object(object) = value else {
        let what = if value.is_array() {
            "an array (batches are not supported)"
        } else {
            "not an object"
        };
        return Err(Rejection::new(
            None,
            ErrorCode::INVALID_REQUEST,
            format!("a JSON-RPC message is an object; this one is {what}"),
        ));
    };
    let envelope = Envelope::read(&object)?;
    if let Some(method) = &envelope.method {
        check_params(method, &object)
            .map_err(|message| envelope.reject(ErrorCode::INVALID_PARAMS, message))?;
    }
    if let (Some(id), Some("tools/call")) = (&envelope.id, envelope.method.as_deref())
        && only_request_members(&object)
    {
        return tool_call(&envelope, id.clone(), object);
    }
    let message: ClientJsonRpcMessage =
        serde_json::from_value(Value::Object(object)).map_err(|error| {
            envelope.reject(
                ErrorCode::INVALID_REQUEST,
                format!("the message does not fit JSON-RPC: {error}"),
            )
        })?;
    match (&message, &envelope.method) {
        // rmcp takes a standard request whose params do not fit for an unknown one.
        (ClientJsonRpcMessage::Request(request), Some(method))
            if matches!(request.request, ClientRequest::CustomRequest(_)) =>
        {
            match standard_params_problem(method, &request.request) {
                Some(problem) => Err(envelope.reject(
                    ErrorCode::INVALID_PARAMS,
                    format!("invalid params for '{method}': {problem}"),
                )),
                None => Ok(message),
            }
        }
        _ => Ok(message),
    }
}

fn parse_error(message: String) -> Rejection {
    Rejection::new(None, ErrorCode::PARSE_ERROR, message)
}

/// The offset of the first bracket that opens a level past [`MAX_DEPTH`], if any.
/// Counted on the bytes, outside strings, before any parser recurses into them.
fn too_deep(bytes: &[u8]) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (offset, &byte) in bytes.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(offset);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The refusal of text serde_json could not parse. A lone surrogate escape (what
/// JavaScript's `JSON.stringify` makes of a cut emoji) is valid JSON grammar but no
/// Unicode string: when it sits in the params and the rest of the request can be
/// read, the request is answered with its id.
fn unparsable(text: &str, error: &serde_json::Error) -> Rejection {
    let message = error.to_string();
    let not_unicode = ["surrogate", "hex escape", "unicode code point"]
        .iter()
        .any(|problem| message.contains(problem));
    if not_unicode
        && let Ok(Identified {
            id: Some(id),
            method: Some(_),
        }) = serde_json::from_str::<Identified>(text)
        && let Ok(id) = serde_json::from_value::<RequestId>(id)
    {
        return Rejection::new(
            Some(id),
            ErrorCode::INVALID_PARAMS,
            format!(
                "the params hold a string that is not Unicode ({message}): a lone surrogate escape such as \\ud83d (half of an emoji) is not a character"
            ),
        );
    }
    if error.is_eof() {
        return parse_error(format!(
            "the message is not JSON: it ends too early ({message})"
        ));
    }
    parse_error(format!("the message is not JSON: {message}"))
}

/// A request's id and method. Members not named here (the params) are skipped, and
/// serde_json skips a string without decoding its escapes.
#[derive(Deserialize)]
struct Identified {
    id: Option<Value>,
    method: Option<String>,
}

/// The members every JSON-RPC message must get right.
struct Envelope {
    id: Option<RequestId>,
    method: Option<String>,
}

impl Envelope {
    fn read(object: &Map<String, Value>) -> Result<Envelope, Rejection> {
        let id = match object.get("id") {
            None => None,
            Some(id @ (Value::String(_) | Value::Number(_))) => Some(
                serde_json::from_value::<RequestId>(id.clone()).map_err(|_| {
                    Rejection::new(
                        None,
                        ErrorCode::INVALID_REQUEST,
                        format!("the id {id} is not a string or an integer"),
                    )
                })?,
            ),
            Some(other) => {
                return Err(Rejection::new(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    format!("the id must be a string or an integer, not {}", kind(other)),
                ));
            }
        };
        let method = match object.get("method") {
            None => None,
            Some(Value::String(method)) => Some(method.clone()),
            Some(other) => {
                return Err(Rejection::new(
                    id,
                    ErrorCode::INVALID_REQUEST,
                    format!("the method must be a string, not {}", kind(other)),
                ));
            }
        };
        let envelope = Envelope { id, method };
        if object.get("jsonrpc") != Some(&json!("2.0")) {
            return Err(envelope.reject(
                ErrorCode::INVALID_REQUEST,
                r#"the message must say "jsonrpc": "2.0""#,
            ));
        }
        if envelope.method.is_none()
            && !(object.contains_key("result") || object.contains_key("error"))
        {
            return Err(envelope.reject(
                ErrorCode::INVALID_REQUEST,
                "the message has no method (a request or notification) and no result or error (a response)",
            ));
        }
        Ok(envelope)
    }

    /// A rejection of this message: answered when it is a request (or a response with
    /// an id), dropped when it is a notification.
    fn reject(&self, code: ErrorCode, message: impl Into<String>) -> Rejection {
        Rejection {
            silent: self.method.is_some() && self.id.is_none(),
            ..Rejection::new(self.id.clone(), code, message)
        }
    }
}

/// A `tools/call` request, parsed as one: the message rmcp's parse makes of it, for a
/// fraction of the work. rmcp's parse tries each kind of message and then each method's
/// request in turn, and every miss builds an error message; a tool call, the request
/// that comes most, is tried fourteenth. Params that do not fit `CallToolRequest` are
/// invalid params (-32602) saying why, as for the other standard methods (see
/// [`standard_params_problem`]).
fn tool_call(
    envelope: &Envelope,
    id: RequestId,
    mut object: Map<String, Value>,
) -> Result<ClientJsonRpcMessage, Rejection> {
    // A request's own members, without the envelope's, as rmcp's flattened parse
    // sees them.
    let mut request = Map::new();
    for member in ["method", "params"] {
        if let Some(value) = object.remove(member) {
            request.insert(member.to_string(), value);
        }
    }
    match serde_json::from_value::<CallToolRequest>(Value::Object(request)) {
        Ok(request) => Ok(ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(request),
            id,
        )),
        Err(problem) => Err(envelope.reject(
            ErrorCode::INVALID_PARAMS,
            format!("invalid params for 'tools/call': {problem}"),
        )),
    }
}

/// Whether `object` has only a request's members: with others it could be another kind
/// of message, or none.
fn only_request_members(object: &Map<String, Value>) -> bool {
    object
        .keys()
        .all(|key| matches!(key.as_str(), "jsonrpc" | "id" | "method" | "params"))
}

/// What is wrong with a request's params that rmcp would not say itself.
fn check_params(method: &str, object: &Map<String, Value>) -> Result<(), String> {
    let params = match object.get("params") {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => Some(params),
        Some(other) => return Err(format!("params must be an object, not {}", kind(other))),
    };
    if method != "tools/call" {
        return Ok(());
    }
    let Some(params) = params else {
        return Err("tools/call needs params with the tool's name".to_string());
    };
    match params.get("name") {
        Some(Value::String(_)) => {}
        None => return Err("tools/call needs the tool's name (params.name)".to_string()),
        Some(other) => {
            return Err(format!(
                "the tool's name (params.name) must be a string, not {}",
                kind(other)
            ));
        }
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(format!(
            "the tool's arguments (params.arguments) must be an object, not {}",
            kind(other)
        )),
    }
}

/// Why rmcp did not take `request` for the standard method it names, one this server
/// serves: the error of parsing it as that method's request. None for other methods,
/// which the handler answers as unknown whatever their params.
fn standard_params_problem(method: &str, request: &ClientRequest) -> Option<String> {
    let ClientRequest::CustomRequest(custom) = request else {
        return None;
    };
    let value = json!({ "method": method, "params": custom.params });
    fn problem<T: serde::de::DeserializeOwned>(value: Value) -> Option<String> {
        serde_json::from_value::<T>(value)
            .err()
            .map(|error| error.to_string())
    }
    match method {
        "initialize" => problem::<InitializeRequest>(value),
        "ping" => problem::<PingRequest>(value),
        "server/discover" => problem::<DiscoverRequest>(value),
        "tools/list" => problem::<ListToolsRequest>(value),
        "tools/call" => problem::<CallToolRequest>(value),
        #[expect(deprecated, reason = "logging is part of the protocol versions served")]
        "logging/setLevel" => problem::<SetLevelRequest>(value),
        "subscriptions/listen" => problem::<SubscriptionsListenRequest>(value),
        _ => None,
    }
}

/// A JSON value's kind, for messages.
fn kind(value: &Value) -> Cow<'static, str> {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(number) if number.is_f64() => "a fractional number".into(),
        Value::Number(_) => "a number".into(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &[u8]) -> Rejection {
        check(text).expect_err("the message is refused")
    }

    fn answer(text: &[u8]) -> Value {
        serde_json::from_str(&refused(text).to_json()).expect("the answer is JSON")
    }

    #[test]
    fn what_is_not_json_gets_a_parse_error_with_a_null_id() {
        for text in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\""[..],
            b"hello",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\xff",
        ] {
            let answer = answer(text);
            assert_eq!(answer["error"]["code"], -32700, "{answer}");
            assert!(answer.as_object().unwrap().contains_key("id"), "{answer}");
            assert_eq!(answer["id"], Value::Null, "{answer}");
        }
        assert!(refused(b"{\"a\":\"\xc3\"}").message.contains("offset 6"));
    }

    #[test]
    fn a_tool_call_parses_as_rmcp_parses_it() {
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","arguments":{"a":[1,2.5,"s",null,{"b":true}]},"_meta":{"progressToken":3}}}"#,
        ] {
            let ours = check(text.as_bytes()).expect("a tool call is accepted");
            let ClientJsonRpcMessage::Request(request) = &ours else {
                panic!("{ours:?} is a request");
            };
            assert!(matches!(request.request, ClientRequest::CallToolRequest(_)));
            let rmcps: ClientJsonRpcMessage = serde_json::from_str(text).unwrap();
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&rmcps).unwrap()
            );
        }
    }

    #[test]
    fn a_tool_call_whose_params_do_not_fit_gets_invalid_params_with_its_id() {
        let rejection = refused(
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","_meta":5}}"#,
        );
        assert_eq!(rejection.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(rejection.id, Some(RequestId::Number(4)));
        assert!(
            rejection
                .message
                .starts_with("invalid params for 'tools/call': "),
            "{rejection:?}"
        );
    }

    #[test]
    fn nesting_up_to_the_limit_parses_and_one_level_more_does_not() {
        let nested = |depth: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"a":{}1{}}}}}}}"#,
                "[".repeat(depth - 3),
                "]".repeat(depth - 3)
            )
        };
        check(nested(MAX_DEPTH).as_bytes()).expect("127 levels are fine");
        let rejection = refused(nested(MAX_DEPTH + 1).as_bytes());
        assert_eq!(rejection.code, ErrorCode::PARSE_ERROR);
        assert!(
            rejection.message.contains("deeper than 127"),
            "{rejection:?}"
        );
        // Brackets inside strings do not count.
        let quoted = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{}"}}}}"#,
            "[".repeat(1000)
        );
        check(quoted.as_bytes()).expect("brackets in a string are text");
    }

    #[test]
    fn a_lone_surrogate_in_the_params_is_answered_with_the_requests_id() {
        let rejection = refused(
            br#"{"jsonrpc":"2.0","id":"a7","method":"tools/call","params":{"name":"t","arguments":{"s":"cut \ud83d"}}}"#,
        );
        assert_eq!(rejection.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(rejection.id, Some(RequestId::String("a7".into())));
        assert!(
            rejection.message.contains("lone surrogate"),
            "{rejection:?}"
        );
        // In the method, the request cannot be identified.
        let rejection = refused(br#"{"jsonrpc":"2.0","id":1,"method":"tools\udc00"}"#);
        assert_eq!(
            (rejection.code, rejection.id),
            (ErrorCode::PARSE_ERROR, None)
        );
    }

    #[test]
    fn malformed_tools_call_params_are_invalid_params_with_the_reason() {
        for (params, reason) in [
            (r#"{"arguments":{}}"#, "needs the tool's name"),
            (r#"{"name":5}"#, "must be a string, not a number"),
            (
                r#"{"name":"t","arguments":[1]}"#,
                "must be an object, not an array",
            ),
            (
                r#"{"name":"t","arguments":"x"}"#,
                "must be an object, not a string",
            ),
            (r#"[1]"#, "params must be an object"),
        ] {
            let text =
                format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{params}}}"#);
            let rejection = refused(text.as_bytes());
            assert_eq!(rejection.code, ErrorCode::INVALID_PARAMS, "{params}");
            assert_eq!(rejection.id, Some(RequestId::Number(9)), "{params}");
            assert!(
                rejection.message.contains(reason),
                "{params}: {rejection:?}"
            );
        }
    }

    #[test]
    fn a_standard_request_with_params_that_do_not_fit_says_why() {
        let rejection = refused(
            br#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"capabilities":{}}}"#,
        );
        assert_eq!(rejection.code, ErrorCode::INVALID_PARAMS);
        assert!(
            rejection
                .message
                .starts_with("invalid params for 'initialize': missing field"),
            "{rejection:?}"
        );
        // An unknown method is the handler's to answer.
        assert!(check(br#"{"jsonrpc":"2.0","id":2,"method":"no/such","params":{}}"#).is_ok());
    }

    #[test]
    fn invalid_envelopes_are_invalid_requests() {
        for (text, id) in [
            (
                &br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#[..],
                Value::Null,
            ),
            (br#"42"#, Value::Null),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                Value::Null,
            ),
            (br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
            (br#"{"jsonrpc":"2.0","id":3,"method":7}"#, json!(3)),
            (br#"{"jsonrpc":"2.0","id":3}"#, json!(3)),
        ] {
            let answer = answer(text);
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
            assert_eq!(answer["id"], id, "{answer}");
        }
    }

    #[test]
    fn a_bad_notification_is_dropped_silently() {
        let rejection = refused(br#"{"jsonrpc":"2.0","method":"notifications/x","params":[1]}"#);
        assert!(rejection.silent);
    }

    #[test]
    fn good_messages_pass_with_a_byte_order_mark_too() {
        for text in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
            br#"{"jsonrpc":"2.0","id":"x","result":{}}"#,
        ] {
            check(text).unwrap_or_else(|error| panic!("{error:?}"));
        }
    }

    #[test]
    fn an_oversized_message_is_an_invalid_request() {
        let text = vec![b' '; MAX_MESSAGE_BYTES + 1];
        let rejection = refused(&text);
        assert_eq!(
            (rejection.code, rejection.id),
            (ErrorCode::INVALID_REQUEST, None)
        );
        assert!(rejection.message.contains("16 MiB"));
    }

    #[test]
    fn methods_removed_in_2026_07_28_are_not_found_and_others_pass() {
        let rejection = removed_method(
            br#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"info"}}"#,
        )
        .expect("refused");
        assert_eq!(rejection.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(rejection.id, Some(RequestId::Number(7)));
        assert!(rejection.message.contains("removed in protocol 2026-07-28"));
        let answer = answer_of(&rejection);
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        assert!(removed_method(br#"{"jsonrpc":"2.0","id":"a","method":"initialize"}"#).is_some());
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
            b"not json",
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            assert_eq!(removed_method(other), None);
        }
    }

    fn answer_of(rejection: &Rejection) -> Value {
        serde_json::from_str(&rejection.to_json()).expect("JSON")
    }
}
