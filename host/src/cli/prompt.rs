//! Asking on the terminal (`toolcell call`): whether a tool may run, when the
//! permission policy says `ask`, and the questions plugins ask (`ctx:ask`). The
//! question goes to stderr, the answer comes from stdin.

use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use crate::base::wording::terminal_safe;
use crate::policy::{Answer, PermissionPrompt};
use crate::{Question, Reply};

/// Asks whether the call of `prompt` may run.
pub(super) async fn on_terminal(prompt: PermissionPrompt) -> Answer {
    let question = describe(&prompt);
    tokio::task::spawn_blocking(move || ask(&question))
        .await
        .unwrap_or(Answer::Deny { feedback: None })
}

/// The call in one line: the tool, what its plugin may do, the arguments.
fn describe(prompt: &PermissionPrompt) -> String {
    let grants = &prompt.plugin.grants;
    let question = format!(
        "toolcell: tool '{}' of plugin '{}' (files: {}, HTTP: {}) asks to run with {}",
        prompt.tool.name,
        prompt.plugin.manifest.id,
        grants.files(),
        if grants.may_use_http() { "yes" } else { "no" },
        prompt.shown_arguments(),
    );
    terminal_safe(&question).into_owned()
}

/// Asks until the answer is one of the choices; the end of input denies.
fn ask(question: &str) -> Answer {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "{question}");
    loop {
        let _ = write!(
            stderr,
            "Allow it? [y]es, this once / [a]lways, for this session / [n]o: "
        );
        let _ = stderr.flush();
        let Some(line) = read_line(&mut input) else {
            return Answer::Deny { feedback: None };
        };
        match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => return Answer::AllowOnce,
            "a" | "always" => return Answer::AllowForSession,
            "n" | "no" => {
                let _ = write!(stderr, "Why? (optional; the model reads it): ");
                let _ = stderr.flush();
                let feedback = read_line(&mut input).filter(|text| !text.is_empty());
                return Answer::Deny { feedback };
            }
            _ => {}
        }
    }
}

/// One line without its end, or `None` at the end of input.
fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

/// Asks a plugin's question: its message, then each field of its form in turn. An
/// empty line takes the field's default (or leaves an optional field out); `!decline`
/// declines; the end of input cancels.
pub(super) async fn question_on_terminal(question: Question) -> Reply {
    tokio::task::spawn_blocking(move || {
        let stdin = std::io::stdin();
        answer_form(&question, &mut stdin.lock(), &mut std::io::stderr())
    })
    .await
    .unwrap_or(Reply::Cancelled)
}

/// Reads the answer to `question` from `input`, asking on `output`.
fn answer_form(question: &Question, input: &mut impl BufRead, output: &mut impl Write) -> Reply {
    // The message, the field names, titles and choices are the plugin's words.
    let _ = writeln!(
        output,
        "toolcell: tool '{}' of plugin '{}' asks: {}\n(an empty line takes the default; \
         !decline declines; end of input cancels)",
        question.tool,
        question.plugin,
        terminal_safe(&question.message)
    );
    let required: Vec<&str> = (question.schema.get("required"))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = Map::new();
    let fields = (question.schema.get("properties"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut answer = Map::new();
    for (name, field) in fields {
        let is_required = required.contains(&name.as_str());
        loop {
            let _ = write!(
                output,
                "{}: ",
                terminal_safe(&field_prompt(name, field, is_required))
            );
            let _ = output.flush();
            let Some(line) = read_line(input) else {
                return Reply::Cancelled;
            };
            if line == "!decline" {
                return Reply::Declined;
            }
            match field_value(field, &line) {
                Ok(Some(value)) => {
                    answer.insert(name.clone(), value);
                    break;
                }
                Ok(None) if !is_required => break,
                Ok(None) => {
                    let _ = writeln!(output, "{} is required", terminal_safe(name));
                }
                Err(problem) => {
                    let _ = writeln!(output, "{}", terminal_safe(&problem));
                }
            }
        }
    }
    Reply::Accepted(answer)
}

/// `NAME (TYPE[, one of A, B][, default D][, required])`, with its title when it has one.
fn field_prompt(name: &str, field: &Value, required: bool) -> String {
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let mut prompt = match field.get("title").and_then(Value::as_str) {
        Some(title) => format!("{title} [{name}] ({kind}"),
        None => format!("{name} ({kind}"),
    };
    let choices = choices(field);
    if !choices.is_empty() {
        prompt.push_str(&format!(", one of {}", choices.join(", ")));
    }
    if let Some(default) = field.get("default") {
        prompt.push_str(&format!(", default {default}"));
    }
    if required {
        prompt.push_str(", required");
    }
    prompt.push(')');
    prompt
}

/// The choices of an enum field, or of each item of a multiple-choice field.
fn choices(field: &Value) -> Vec<String> {
    let list = |schema: &Value| -> Vec<String> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        (schema.get("oneOf").or_else(|| schema.get("anyOf")))
            .and_then(Value::as_array)
            .map(|options| {
                options
                    .iter()
                    .filter_map(|option| option.get("const").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    match field.get("items") {
        Some(items) => list(items),
        None => list(field),
    }
}

/// The value `line` gives a field: none for an empty line without a default; the error
/// says what the field takes.
fn field_value(field: &Value, line: &str) -> Result<Option<Value>, String> {
    if line.is_empty() {
        return Ok(field.get("default").cloned());
    }
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let choices = choices(field);
    let pick = |text: &str| -> Result<Value, String> {
        if choices.is_empty() || choices.iter().any(|choice| choice == text) {
            Ok(Value::String(text.to_string()))
        } else {
            Err(format!("'{text}' is not one of {}", choices.join(", ")))
        }
    };
    let value = match kind {
        "number" => line
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or("a number, please")?,
        "integer" => Value::from(line.parse::<i64>().map_err(|_| "a whole number, please")?),
        "boolean" => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("yes or no, please".to_string()),
        },
        "array" => Value::Array(
            line.split(',')
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(pick)
                .collect::<Result<_, _>>()?,
        ),
        _ => pick(line)?,
    };
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(schema: &str) -> Question {
        Question {
            call: 1,
            plugin: "p".into(),
            tool: "t".into(),
            message: "Which?".into(),
            schema: crate::services::ask::check_schema(schema).unwrap(),
        }
    }

    #[test]
    fn each_field_is_asked_read_by_its_type_and_asked_again_when_wrong() {
        let question = question(
            r#"{"type":"object","properties":{
                "color":{"type":"string","enum":["red","blue"]},
                "count":{"type":"integer","default":2},
                "ok":{"type":"boolean"}},"required":["color","ok"]}"#,
        );
        let mut input = "green\nblue\n\nmaybe\ny\n".as_bytes();
        let mut shown = Vec::new();
        let reply = answer_form(&question, &mut input, &mut shown);
        let expected = serde_json::json!({"color": "blue", "count": 2, "ok": true});
        assert_eq!(
            reply,
            Reply::Accepted(expected.as_object().unwrap().clone())
        );
        let shown = String::from_utf8(shown).unwrap();
        assert!(shown.contains("asks: Which?"), "{shown}");
        assert!(shown.contains("'green' is not one of red, blue"), "{shown}");
        assert!(shown.contains("count (integer, default 2): "), "{shown}");
        assert!(shown.contains("yes or no, please"), "{shown}");
    }

    #[test]
    fn decline_and_the_end_of_input_are_answers_too() {
        let question = question(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
        let reply = answer_form(&question, &mut "!decline\n".as_bytes(), &mut Vec::new());
        assert_eq!(reply, Reply::Declined);
        assert_eq!(
            answer_form(&question, &mut "".as_bytes(), &mut Vec::new()),
            Reply::Cancelled
        );
    }
}
