//! Questions a plugin asks the user during a call (`ctx:ask`, the WIT world's
//! `host.ask-start`), and who answers them.
//!
//! A question is a message and a small form: MCP's elicitation subset, a flat object
//! of string, number, integer, boolean and enum fields with optional defaults. The host
//! checks the form before anyone sees it and checks an accepted answer against it, so
//! a plugin gets either an object its form accepts or a reason. Whoever can ask
//! answers: an MCP client's user, the terminal for `toolcell call`, an embedder's
//! [`QuestionHandler`]; with nobody to ask, the plugin gets `unanswered`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::base::limits::{format_bytes, prefix_within};
use crate::output::envelope::Envelope;

/// The longest question message shown, in bytes; the rest is cut with a notice.
pub const MAX_MESSAGE: usize = 4 * 1024;

/// The largest form a question may carry, as JSON text.
pub const MAX_SCHEMA: usize = 16 * 1024;

/// The most fields one form may have.
pub const MAX_FIELDS: usize = 32;

/// The largest answer a plugin is given, as JSON text: a client that sends more is
/// refused rather than passed on into the plugin's memory.
pub const MAX_ANSWER: usize = 64 * 1024;

/// The form's keyword that names its question, for callers that key questions (an
/// MCP input-required result names each input request): 1-64 of `A-Z a-z 0-9 _ - .`.
/// Clients never see it.
pub const KEY_KEYWORD: &str = "x-toolcell-key";

/// The longest question key.
const MAX_KEY: usize = 64;

/// A question on its way to whoever answers it.
#[derive(Debug, Clone)]
pub struct Question {
    /// The call that asks.
    pub call: u64,
    /// The plugin's id.
    pub plugin: String,
    /// The tool called.
    pub tool: String,
    /// What the user reads (cut to [`MAX_MESSAGE`]; in the untrusted-output envelope
    /// when the plugin's output is untrusted).
    pub message: String,
    /// The form: an object schema the host checked ([`check_schema`]).
    pub schema: Map<String, Value>,
}

/// How a question was answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The user filled in the form.
    Accepted(Map<String, Value>),
    /// The user declined to answer.
    Declined,
    /// The user dismissed the question.
    Cancelled,
    /// Nobody could be asked, or asking failed; the text says why.
    Unanswered(String),
}

/// A boxed future that can move between threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Answers the questions plugins ask: a terminal, an MCP client's user, an embedder's
/// user interface. The wait is not counted against the call's deadline; dropping the
/// future means the call no longer waits (it was cancelled).
pub trait QuestionHandler: Send + Sync + 'static {
    /// Asks the user `question`.
    fn ask(&self, question: Question) -> BoxFuture<Reply>;
}

impl<F, Fut> QuestionHandler for F
where
    F: Fn(Question) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Reply> + Send + 'static,
{
    fn ask(&self, question: Question) -> BoxFuture<Reply> {
        Box::pin(self(question))
    }
}

/// Who answers a call's questions, or why nobody does.
#[derive(Clone)]
pub enum Questions {
    /// The plugin gets `unanswered` with this reason.
    Nobody(Arc<str>),
    /// A handler answers.
    Route(Arc<Route>),
}

/// Where one call's questions go.
pub struct Route {
    /// Who answers.
    pub handler: Arc<dyn QuestionHandler>,
    /// The tool called, which questions name.
    pub tool: String,
    /// The envelope of the plugin's untrusted text, which wraps each message.
    pub envelope: Option<Envelope>,
}

impl Default for Questions {
    fn default() -> Self {
        Questions::Nobody("nobody can be asked: the caller has no way to ask the user".into())
    }
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Questions::Route(route) => write!(f, "Questions::Route({:?})", route.tool),
            Questions::Nobody(reason) => write!(f, "Questions::Nobody({reason:?})"),
        }
    }
}

impl Questions {
    /// Asks the question of `plugin`'s call `call`: `message` (cut to [`MAX_MESSAGE`]
    /// and enveloped as the plugin's output is) with the checked form `schema`. An
    /// accepted answer the form does not accept is `unanswered`.
    pub async fn ask(
        &self,
        call: u64,
        plugin: String,
        message: &str,
        schema: Map<String, Value>,
    ) -> Reply {
        let route = match self {
            Questions::Nobody(reason) => return Reply::Unanswered(reason.to_string()),
            Questions::Route(route) => route,
        };
        let message = bounded_message(message);
        let message = match &route.envelope {
            Some(envelope) => envelope.wrap(&message),
            None => message,
        };
        let form = Value::Object(schema.clone());
        let question = Question {
            call,
            plugin,
            tool: route.tool.clone(),
            message,
            schema,
        };
        match route.handler.ask(question).await {
            Reply::Accepted(answer)
                if Value::Object(answer.clone()).to_string().len() > MAX_ANSWER =>
            {
                Reply::Unanswered(format!(
                    "the answer is larger than {}, the most a plugin is given",
                    format_bytes(MAX_ANSWER as u64)
                ))
            }
            Reply::Accepted(answer) => match check_answer(&form, &answer) {
                Ok(()) => Reply::Accepted(answer),
                Err(problem) => {
                    Reply::Unanswered(format!("the answer does not fit the form: {problem}"))
                }
            },
            other => other,
        }
    }
}

/// The message as the user reads it: at most [`MAX_MESSAGE`] bytes, cut at a character
/// boundary with a notice.
pub fn bounded_message(message: &str) -> String {
    if message.len() <= MAX_MESSAGE {
        return message.to_string();
    }
    format!(
        "{}… [cut: the question was {} bytes; at most {} is shown]",
        prefix_within(message, MAX_MESSAGE),
        message.len(),
        format_bytes(MAX_MESSAGE as u64)
    )
}

/// Reads a form (JSON text) and checks it is MCP's elicitation subset: an object
/// schema whose properties are flat fields, each a string (with an optional `enum`,
/// `oneOf` of titled constants, `format`, length bounds), a number or integer (with
/// bounds), a boolean, or an array of enum strings (a multiple choice); each may have
/// a `title`, a `description` and a `default` of its type. The error says what and
/// where.
pub fn check_schema(text: &str) -> Result<Map<String, Value>, String> {
    if text.len() > MAX_SCHEMA {
        return Err(format!(
            "the form is {}; at most {} is allowed",
            format_bytes(text.len() as u64),
            format_bytes(MAX_SCHEMA as u64)
        ));
    }
    let schema: Value =
        serde_json::from_str(text).map_err(|error| format!("the form is not JSON: {error}"))?;
    let Value::Object(schema) = schema else {
        return Err("the form must be an object schema".to_string());
    };
    for key in schema.keys() {
        if !matches!(
            key.as_str(),
            "type" | "properties" | "required" | "title" | "description" | "$schema" | KEY_KEYWORD
        ) {
            return Err(format!("the form has '{key}', which a form cannot have"));
        }
    }
    if let Some(key) = schema.get(KEY_KEYWORD) {
        let fits = key.as_str().is_some_and(|key| {
            (1..=MAX_KEY).contains(&key.len())
                && key
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"_-.".contains(&byte))
        });
        if !fits {
            return Err(format!(
                "the form's '{KEY_KEYWORD}' must be a string of 1-{MAX_KEY} letters, digits, '_', '-' or '.'"
            ));
        }
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the form must have \"type\": \"object\"".to_string());
    }
    let properties = match schema.get("properties") {
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err("the form's properties must be an object".to_string()),
        None => return Err("the form has no properties: nothing to ask".to_string()),
    };
    if properties.is_empty() {
        return Err("the form has no properties: nothing to ask".to_string());
    }
    if properties.len() > MAX_FIELDS {
        return Err(format!(
            "the form has {} fields; at most {MAX_FIELDS} are allowed",
            properties.len()
        ));
    }
    for (name, field) in properties {
        check_field(field).map_err(|problem| format!("field '{name}': {problem}"))?;
    }
    match schema.get("required") {
        None => {}
        Some(Value::Array(required)) => {
            for name in required {
                match name.as_str() {
                    Some(name) if properties.contains_key(name) => {}
                    Some(name) => return Err(format!("'{name}' is required but not a field")),
                    None => return Err("required must list field names".to_string()),
                }
            }
        }
        Some(_) => return Err("required must be an array of field names".to_string()),
    }
    Ok(schema)
}

/// The key the form names its question with ([`KEY_KEYWORD`]), if any.
#[cfg(feature = "mcp")]
pub fn question_key(schema: &Map<String, Value>) -> Option<&str> {
    schema.get(KEY_KEYWORD).and_then(Value::as_str)
}

/// The form as a client's user sees it: without [`KEY_KEYWORD`].
#[cfg(feature = "mcp")]
pub fn client_form(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut form = schema.clone();
    form.remove(KEY_KEYWORD);
    form
}

/// Checks one field of a form.
fn check_field(field: &Value) -> Result<(), String> {
    let Value::Object(field) = field else {
        return Err("must be a schema object".to_string());
    };
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .ok_or("has no type")?;
    let allowed: &[&str] = match kind {
        "string" => &[
            "enum",
            "enumNames",
            "oneOf",
            "format",
            "minLength",
            "maxLength",
        ],
        "number" | "integer" => &["minimum", "maximum"],
        "boolean" => &[],
        "array" => &["items", "minItems", "maxItems"],
        other => {
            return Err(format!(
                "has type '{other}'; a form's fields are strings, numbers, integers, \
                 booleans or arrays of choices"
            ));
        }
    };
    for key in field.keys() {
        let common = matches!(key.as_str(), "type" | "title" | "description" | "default");
        if !common && !allowed.contains(&key.as_str()) {
            return Err(format!("a {kind} field cannot have '{key}'"));
        }
    }
    if kind == "array" {
        let choices = field.get("items").and_then(|items| {
            items
                .get("enum")
                .or_else(|| items.get("anyOf"))
                .and_then(Value::as_array)
        });
        if choices.is_none_or(Vec::is_empty) {
            return Err("an array field must list its choices (items.enum or items.anyOf)".into());
        }
    }
    if let Some(default) = field.get("default") {
        let fits = match kind {
            "string" => default.is_string(),
            "number" => default.is_number(),
            "integer" => default.is_i64() || default.is_u64(),
            "boolean" => default.is_boolean(),
            _ => default.is_array(),
        };
        if !fits {
            return Err(format!("its default is not of type {kind}"));
        }
    }
    Ok(())
}

/// Checks an accepted answer against the form it answers.
fn check_answer(schema: &Value, answer: &Map<String, Value>) -> Result<(), String> {
    let validator = jsonschema::options()
        .should_validate_formats(false)
        .build(schema)
        .map_err(|error| error.to_string())?;
    let answer = Value::Object(answer.clone());
    let problems: Vec<String> = validator
        .iter_errors(&answer)
        .take(3)
        .map(|error| error.to_string())
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_form_with_defaults_and_choices_is_accepted() {
        let form = r#"{"type":"object","properties":{
            "name":{"type":"string","title":"Name","default":"Ada"},
            "size":{"type":"integer","minimum":1,"default":3},
            "ok":{"type":"boolean","default":true},
            "color":{"type":"string","enum":["red","blue"]},
            "tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},
            "required":["name"]}"#;
        assert!(check_schema(form).is_ok());
    }

    #[test]
    fn nested_objects_unknown_keys_and_bad_defaults_are_refused_with_where() {
        for (form, says) in [
            (
                r#"{"type":"object","properties":{"a":{"type":"object"}}}"#,
                "field 'a': has type 'object'",
            ),
            (
                r##"{"type":"object","properties":{"a":{"type":"string","$ref":"#"}}}"##,
                "field 'a': a string field cannot have '$ref'",
            ),
            (
                r#"{"type":"object","properties":{"a":{"type":"boolean","default":"yes"}}}"#,
                "field 'a': its default is not of type boolean",
            ),
            (
                r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}"#,
                "'b' is required but not a field",
            ),
            (r#"{"type":"object","properties":{}}"#, "nothing to ask"),
            ("[1]", "must be an object schema"),
        ] {
            let error = check_schema(form).expect_err(form);
            assert!(error.contains(says), "{error}");
        }
        let big = format!(
            r#"{{"type":"object","properties":{{"a":{{"type":"string","description":"{}"}}}}}}"#,
            "x".repeat(MAX_SCHEMA)
        );
        assert!(check_schema(&big).unwrap_err().contains("at most 16 KiB"));
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn a_form_names_its_question_for_the_host_alone() {
        let form = check_schema(
            r#"{"x-toolcell-key":"user_name","type":"object","properties":{"name":{"type":"string"}}}"#,
        )
        .unwrap();
        assert_eq!(question_key(&form), Some("user_name"));
        assert!(!client_form(&form).contains_key(KEY_KEYWORD));
        assert_eq!(client_form(&form).len(), form.len() - 1);
        for key in [
            r#""a b""#,
            r#""""#,
            "7",
            &format!(r#""{}""#, "k".repeat(65)),
        ] {
            let text = format!(
                r#"{{"x-toolcell-key":{key},"type":"object","properties":{{"n":{{"type":"string"}}}}}}"#
            );
            let error = check_schema(&text).expect_err(&text);
            assert!(
                error.contains("'x-toolcell-key' must be a string of 1-64"),
                "{error}"
            );
        }
    }

    #[tokio::test]
    async fn an_answer_larger_than_the_limit_never_reaches_the_plugin() {
        let schema =
            check_schema(r#"{"type":"object","properties":{"s":{"type":"string"}}}"#).unwrap();
        let handler = |_question: Question| async {
            let mut answer = Map::new();
            answer.insert("s".into(), Value::String("x".repeat(MAX_ANSWER)));
            Reply::Accepted(answer)
        };
        let questions = Questions::Route(Arc::new(Route {
            handler: Arc::new(handler),
            tool: "t".into(),
            envelope: None,
        }));
        assert_eq!(
            questions.ask(1, "p".into(), "say", schema).await,
            Reply::Unanswered(
                "the answer is larger than 64 KiB, the most a plugin is given".to_string()
            )
        );
    }

    #[tokio::test]
    async fn an_answer_the_form_does_not_accept_is_unanswered() {
        let schema = check_schema(
            r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#,
        )
        .unwrap();
        let handler = |_question: Question| async {
            let mut answer = Map::new();
            answer.insert("n".into(), Value::String("three".into()));
            Reply::Accepted(answer)
        };
        let questions = Questions::Route(Arc::new(Route {
            handler: Arc::new(handler),
            tool: "t".into(),
            envelope: None,
        }));
        match questions.ask(1, "p".into(), "how many?", schema).await {
            Reply::Unanswered(reason) => {
                assert!(
                    reason.starts_with("the answer does not fit the form"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_long_message_is_cut_with_a_notice() {
        let message = "é".repeat(MAX_MESSAGE);
        let shown = bounded_message(&message);
        assert!(shown.ends_with("[cut: the question was 8192 bytes; at most 4 KiB is shown]"));
        assert!(shown.len() < MAX_MESSAGE + 100);
    }
}
