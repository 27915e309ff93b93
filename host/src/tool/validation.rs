//! Values checked against a tool's schemas: its arguments against its `params_schema`
//! before the plugin runs, its output against its `output_schema` after.
//!
//! Each schema is compiled once, when its plugin loads: a schema that is not a valid JSON
//! Schema (or that refers to documents outside itself) is rejected there, so a call never
//! meets a broken validator. A call whose arguments fail the check never reaches the
//! plugin; an output that fails it fails the call. The error lists every problem (up to
//! [`MAX_LISTED`]) with the JSON pointer of the offending value, on one line.

use serde_json::Value;

use crate::base::wording::json_kind;

/// The most problems one error message lists; the rest are counted.
pub const MAX_LISTED: usize = 10;

/// Problems, shown on one line joined with "; ": at most [`MAX_LISTED`] of them, then
/// how many more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems {
    listed: Vec<String>,
    unlisted: usize,
}

impl Problems {
    fn new(mut all: Vec<String>) -> Self {
        let unlisted = all.len().saturating_sub(MAX_LISTED);
        all.truncate(MAX_LISTED);
        Problems {
            listed: all,
            unlisted,
        }
    }
}

impl std::fmt::Display for Problems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.listed.join("; "))?;
        if self.unlisted > 0 {
            write!(f, "; and {} more problems", self.unlisted)?;
        }
        Ok(())
    }
}

/// Why a schema cannot check arguments: each place where it breaks its draft's
/// meta-schema, or what compiling it stopped at, saying where in the schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnusableSchema(pub Problems);

/// What is wrong with a call's arguments or a tool's output: each problem with the JSON
/// pointer of the offending value, in the order of the pointers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueProblems(pub Problems);

/// A compiled `params_schema` or `output_schema`.
pub struct SchemaValidator {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SchemaValidator")
    }
}

/// The lazy DFA's cache of one compiled pattern, per thread that validates with it
/// (regex-automata's default is 2 MiB): validation never needs much, and a schema of
/// many patterns would otherwise keep megabytes per pattern once arguments exercised
/// them.
const PATTERN_CACHE_BYTES: usize = 256 * 1024;

/// Compiles the validators of one plugin's schemas. They share one cache of compiled
/// patterns (a pattern the plugin repeats is compiled once), and every pattern is
/// compiled under the engine's own size limit, behind the budget that measured it
/// (`schema_budget`).
pub struct ValidatorCompiler {
    patterns: jsonschema::PatternCache,
    pattern_bytes: usize,
}

impl ValidatorCompiler {
    /// A compiler whose patterns may each compile to `pattern_bytes`.
    pub fn new(pattern_bytes: usize) -> Self {
        ValidatorCompiler {
            patterns: jsonschema::PatternCache::new(),
            pattern_bytes,
        }
    }

    /// Compiles `schema`. The error says why the schema is unusable: not an object, not
    /// valid against its draft's meta-schema, an unknown `$schema`, a bad regular
    /// expression, a `$ref` to another document (toolcell fetches nothing for a plugin).
    pub fn compile(&self, schema: &Value) -> Result<SchemaValidator, UnusableSchema> {
        if !schema.is_object() {
            return Err(UnusableSchema(Problems::new(vec![format!(
                "a schema must be a JSON object, not {}",
                json_kind(schema)
            )])));
        }
        // The `regex` crate's engine: matching time linear in the value, whatever the
        // pattern (`schema_budget` refuses the patterns it cannot run).
        let patterns = jsonschema::PatternOptions::regex()
            .size_limit(self.pattern_bytes)
            .dfa_size_limit(PATTERN_CACHE_BYTES);
        jsonschema::options()
            .should_validate_formats(false)
            .with_pattern_options(patterns)
            .with_pattern_cache(self.patterns.clone())
            .build(schema)
            .map(|validator| SchemaValidator { validator })
            .map_err(|error| {
                let first = schema_problem(&error);
                let mut problems = meta_problems(schema);
                if !problems.contains(&first) {
                    problems.push(first);
                }
                UnusableSchema(Problems::new(problems))
            })
    }
}

impl SchemaValidator {
    /// Checks a call's `args`; the error lists each problem.
    pub fn check(&self, args: &Value) -> Result<(), ValueProblems> {
        self.problems(args, "the arguments")
    }

    /// Checks a tool's `output` against its output schema; the error lists each
    /// problem.
    pub fn check_output(&self, output: &Value) -> Result<(), ValueProblems> {
        self.problems(output, "the output")
    }

    /// Checks `value`, called `whole` where a problem concerns all of it.
    fn problems(&self, value: &Value, whole: &str) -> Result<(), ValueProblems> {
        let mut problems: Vec<(String, String)> = self
            .validator
            .iter_errors(value)
            .map(|error| {
                let pointer = error.instance_path().as_str().to_string();
                let problem = describe_problem(&error, &pointer, whole);
                (pointer, problem)
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        problems.sort();
        problems.dedup();
        Err(ValueProblems(Problems::new(
            problems.into_iter().map(|(_, problem)| problem).collect(),
        )))
    }
}

/// Every place where `schema` breaks its draft's meta-schema, so an author fixes them
/// all at once (compiling stops at the first). Nothing for a schema naming a
/// meta-schema this build does not know: compiling already said so.
fn meta_problems(schema: &Value) -> Vec<String> {
    if jsonschema::Draft::default().detect(schema) == jsonschema::Draft::Unknown {
        return Vec::new();
    }
    let Ok(meta) = jsonschema::meta::validator_for(schema) else {
        return Vec::new();
    };
    let mut problems: Vec<String> = meta
        .iter_errors(schema)
        .map(|e| schema_problem(&e))
        .collect();
    problems.dedup();
    problems
}

/// One problem of a schema, saying where in it.
fn schema_problem(error: &jsonschema::ValidationError<'_>) -> String {
    let at = error.instance_path().as_str();
    if at.is_empty() {
        one_line(&error.to_string())
    } else {
        one_line(&format!("at `{at}` in the schema: {error}"))
    }
}

/// One problem, naming where it is: ``value at `/path` is not of type "string"``. The
/// value itself is never quoted (it may be large, or secret).
fn describe_problem(error: &jsonschema::ValidationError<'_>, pointer: &str, whole: &str) -> String {
    let placeholder = if pointer.is_empty() {
        whole.to_string()
    } else {
        format!("value at `{pointer}`")
    };
    let message = error.masked_with(placeholder.as_str()).to_string();
    let message = if message.contains(&placeholder) || pointer.is_empty() {
        message
    } else {
        format!("{message} (at `{pointer}`)")
    };
    one_line(&message)
}

/// `text` with line breaks escaped, so that every message stays one line.
fn one_line(text: &str) -> String {
    text.replace('\r', "\\r").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn compile(schema: &Value) -> Result<SchemaValidator, UnusableSchema> {
        ValidatorCompiler::new(crate::base::limits::SchemaBudget::default().pattern_bytes)
            .compile(schema)
    }

    fn validator(schema: Value) -> SchemaValidator {
        compile(&schema).expect("the schema compiles")
    }

    #[test]
    fn a_wrong_type_names_the_pointer_and_not_the_value() {
        let schema = json!({
            "type": "object",
            "properties": { "name": { "type": "string" } }
        });
        let error = validator(schema)
            .check(&json!({ "name": 1234567 }))
            .unwrap_err()
            .to_string();
        assert_eq!(error, r#"value at `/name` is not of type "string""#);
    }

    #[test]
    fn every_problem_is_listed_on_one_line() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": { "type": "integer", "minimum": 1 },
                "tags": { "type": "array", "items": { "type": "string" } }
            },
            "required": ["name"],
            "additionalProperties": false
        });
        let error = validator(schema)
            .check(&json!({ "count": 0, "tags": ["a", 2], "extra": true }))
            .unwrap_err()
            .to_string();
        assert!(!error.contains('\n'), "{error}");
        for part in [
            r#""name" is a required property"#,
            "Additional properties are not allowed ('extra' was unexpected)",
            "value at `/count` is less than the minimum of 1",
            r#"value at `/tags/1` is not of type "string""#,
        ] {
            assert!(error.contains(part), "expected {part:?} in {error:?}");
        }
        assert_eq!(error.split("; ").count(), 4, "{error}");
    }

    #[test]
    fn a_problem_without_a_value_in_its_message_still_says_where() {
        let schema = json!({
            "type": "object",
            "properties": { "address": { "type": "object", "required": ["city"] } }
        });
        let error = validator(schema)
            .check(&json!({ "address": {} }))
            .unwrap_err()
            .to_string();
        assert_eq!(error, r#""city" is a required property (at `/address`)"#);
    }

    #[test]
    fn long_lists_are_cut_and_counted() {
        let schema =
            json!({ "type": "object", "properties": { "xs": { "items": { "type": "string" } } } });
        let error = validator(schema)
            .check(&json!({ "xs": (0..25).collect::<Vec<_>>() }))
            .unwrap_err()
            .to_string();
        assert_eq!(error.split("; ").count(), MAX_LISTED + 1, "{error}");
        assert!(error.ends_with("and 15 more problems"), "{error}");
    }

    #[test]
    fn a_schema_problem_says_where_in_the_schema() {
        let schema = json!({ "type": "object", "properties": { "n": { "minimum": "one" } } });
        assert_eq!(
            compile(&schema).unwrap_err().to_string(),
            r#"at `/properties/n/minimum` in the schema: "one" is not of type "number""#
        );
    }

    #[test]
    fn every_problem_of_a_schema_is_listed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": { "minimum": "one" },
                "s": { "type": "text" },
                "t": { "maxLength": -1 }
            }
        });
        let error = compile(&schema).unwrap_err().to_string();
        for part in [
            r#"at `/properties/n/minimum` in the schema: "one" is not of type "number""#,
            "at `/properties/s/type` in the schema:",
            "at `/properties/t/maxLength` in the schema:",
        ] {
            assert!(error.contains(part), "expected {part:?} in {error:?}");
        }
        assert_eq!(error.split("; ").count(), 3, "{error}");
    }

    #[test]
    fn valid_arguments_pass() {
        let schema = json!({ "type": "object", "properties": { "n": { "type": "number" } } });
        assert_eq!(validator(schema).check(&json!({ "n": 1.5 })), Ok(()));
    }

    #[test]
    fn unusable_schemas_are_rejected_with_a_reason() {
        for schema in [
            json!("string"),
            json!({ "type": "no-such-type" }),
            json!({ "type": "object", "properties": { "a": { "pattern": "(" } } }),
            json!({ "$ref": "https://example.com/schema.json" }),
        ] {
            let error = compile(&schema).unwrap_err().to_string();
            assert!(
                !error.is_empty() && !error.contains('\n'),
                "{schema}: {error}"
            );
        }
    }
}
