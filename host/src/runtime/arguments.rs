//! A call's arguments, as the caller has them (JSON text, or a value an MCP server's
//! client library already parsed), and the checks they pass before any plugin code
//! runs. They are parsed once, here; the plugin gets them as text, the policy as the
//! value.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::base::limits::format_bytes;
use crate::base::wording::json_kind;
use crate::tool::info::ToolInfo;
use crate::tool::strict_schema::drop_optional_nulls;
use crate::tool::validation::SchemaValidator;

/// The arguments of a call ([`Runtime::call_with`](crate::Runtime::call_with)): JSON
/// text (`"{}"` for none), or a JSON value already parsed. Either must be a JSON object
/// that satisfies the tool's `params_schema`.
///
/// ```
/// use toolcell::Arguments;
///
/// let text: Arguments = r#"{"name":"world"}"#.into();
/// let value: Arguments = serde_json::json!({ "name": "world" }).into();
/// # let _ = (text, value);
/// ```
#[derive(Debug, Clone)]
pub struct Arguments<'a>(Given<'a>);

#[derive(Debug, Clone)]
enum Given<'a> {
    Text(Cow<'a, str>),
    Value(Value),
}

impl<'a> From<&'a str> for Arguments<'a> {
    fn from(text: &'a str) -> Self {
        Arguments(Given::Text(Cow::Borrowed(text)))
    }
}

impl From<String> for Arguments<'_> {
    fn from(text: String) -> Self {
        Arguments(Given::Text(Cow::Owned(text)))
    }
}

impl From<Value> for Arguments<'_> {
    fn from(value: Value) -> Self {
        Arguments(Given::Value(value))
    }
}

impl From<Map<String, Value>> for Arguments<'_> {
    fn from(object: Map<String, Value>) -> Self {
        Arguments(Given::Value(Value::Object(object)))
    }
}

/// Arguments that passed their checks: as the plugin gets them (JSON object text), and
/// parsed.
pub(super) struct Checked {
    pub text: String,
    pub value: Value,
}

impl Arguments<'_> {
    /// The arguments parsed, for what the host answers itself (`search_tools`); or
    /// why text is not JSON.
    pub(super) fn into_value(self) -> Result<Value, String> {
        match self.0 {
            Given::Text(text) => {
                serde_json::from_str(&text).map_err(|error| format!("not valid JSON: {error}"))
            }
            Given::Value(value) => Ok(value),
        }
    }

    /// Checks the arguments of a call of the tool `info`: a JSON object of at most
    /// `max_bytes` (as text) that satisfies the tool's schema. The text the plugin
    /// gets is the text given, or without the `null`s a model held to OpenAI's strict
    /// mode sends for optional properties, when only those broke the schema (see
    /// [`crate::tool::strict_schema`]). Otherwise, what is wrong with them.
    pub(super) fn check(
        self,
        max_bytes: usize,
        info: &ToolInfo,
        validator: Option<&SchemaValidator>,
    ) -> Result<Checked, String> {
        let (text, value) = match self.0 {
            Given::Text(text) => {
                within(max_bytes, &text)?;
                match serde_json::from_str::<Value>(&text) {
                    Ok(value) => (text.into_owned(), value),
                    Err(error) => return Err(format!("not valid JSON: {error}")),
                }
            }
            Given::Value(value) => {
                let text = value.to_string();
                within(max_bytes, &text)?;
                (text, value)
            }
        };
        if !value.is_object() {
            return Err(format!("expected a JSON object, got {}", json_kind(&value)));
        }
        let Some(validator) = validator else {
            return Ok(Checked { text, value });
        };
        let problems = match validator.check(&value) {
            Ok(()) => return Ok(Checked { text, value }),
            Err(problems) => problems,
        };
        let mut without_nulls = value;
        if let Some(schema) = &info.params_schema
            && drop_optional_nulls(&mut without_nulls, schema)
            && validator.check(&without_nulls).is_ok()
        {
            return Ok(Checked {
                text: without_nulls.to_string(),
                value: without_nulls,
            });
        }
        Err(problems.to_string())
    }
}

/// Whether arguments of `text` fit in `max_bytes`, or what the limit is.
fn within(max_bytes: usize, text: &str) -> Result<(), String> {
    if text.len() > max_bytes {
        return Err(format!(
            "they are {} bytes; the limit is {}",
            text.len(),
            format_bytes(max_bytes as u64)
        ));
    }
    Ok(())
}
