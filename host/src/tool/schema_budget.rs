//! The budget a plugin's tool schemas are compiled and matched under.
//!
//! A `params_schema` is the plugin's to write, but its validator lives in the host: a
//! few bytes of `pattern` such as `^[\p{L}\p{N}]{0,120}$` compile to megabytes of
//! automaton, and a plugin may register a thousand tools. So before a schema is
//! compiled, [`Spending`] checks its size and depth, and what each of its regular
//! expressions will cost, against the plugin's [`SchemaBudget`]; a schema over budget
//! is refused with the reason, naming the pattern. The cost of a pattern is measured
//! by compiling it with the engine the validator uses (the `regex` crate's,
//! regex-automata) and asking how much memory it took, with the engine's size limit
//! set to what the budget has left, so that a measurement never costs more than the
//! budget it checks: the per-plugin total bounds both the memory and the time spent.
//! A pattern's verdict holds for every schema of the plugin that repeats it: it is
//! compiled and charged once, and one refused is refused wherever it appears.
//!
//! Matching costs time linear in the value matched, whatever the pattern: that engine
//! has no look-around and no back-references, whose backtracking can take seconds of
//! host CPU on a few kilobytes of arguments or output, outside any call's deadline. A
//! pattern that uses them is refused here, saying which and why.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use regex_automata::meta;
use regex_syntax::ast;
use serde_json::Value;

use crate::base::limits::{SchemaBudget, format_bytes};

/// Why a schema was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverBudget {
    /// The schema's text is too long.
    #[error("its schema is {bytes} bytes of JSON; the limit is {}", format_bytes(*limit as u64))]
    SchemaTooLarge { bytes: usize, limit: usize },
    /// The plugin's schemas together are too long.
    #[error("the plugin's schemas would exceed {} of JSON in all", format_bytes(*limit as u64))]
    SchemasTooLarge { limit: usize },
    /// The schema nests too deep.
    #[error("its schema nests deeper than {limit} levels")]
    TooDeep { limit: usize },
    /// One pattern compiles to too much.
    #[error("the pattern {} at `{at}` compiles to more than {} (the limit per pattern)", quoted(pattern), format_bytes(*limit as u64))]
    PatternTooLarge {
        pattern: String,
        at: String,
        limit: usize,
    },
    /// The plugin's patterns together compile to too much.
    #[error("the pattern {} at `{at}` would take the plugin's patterns past {} of compiled size in all", quoted(pattern), format_bytes(*limit as u64))]
    PatternsTooLarge {
        pattern: String,
        at: String,
        limit: usize,
    },
    /// A pattern needs a backtracking engine, whose matching time is not linear.
    #[error(
        "the pattern {} at `{at}` uses {feature}, which cannot be matched in time linear in the value (the limit for every pattern): look-around and back-references are refused",
        quoted(pattern)
    )]
    NotLinear {
        pattern: String,
        at: String,
        feature: &'static str,
    },
    /// Compiling the plugin's schemas took too long.
    #[error("compiling the plugin's schemas took longer than {} ms", limit.as_millis())]
    OutOfTime { limit: Duration },
}

/// At most this much of a pattern is quoted in a message.
const QUOTED_CHARS: usize = 80;

/// `pattern` as a message shows it: quoted, escaped, and cut when long.
fn quoted(pattern: &str) -> String {
    let mut shown: String = pattern.chars().take(QUOTED_CHARS).collect();
    if shown.len() < pattern.len() {
        shown.push('…');
    }
    format!("\"{}\"", shown.escape_debug())
}

/// What one plugin's schemas have spent so far.
#[derive(Debug)]
pub struct Spending {
    budget: SchemaBudget,
    schema_bytes: usize,
    pattern_bytes: usize,
    /// The patterns measured, with their verdict: a repeated one is compiled once, and
    /// one refused stays refused.
    patterns: HashMap<String, Result<(), OverBudget>>,
    started: Instant,
}

impl Spending {
    /// Starts spending `budget`, and its time from now.
    pub fn new(budget: SchemaBudget) -> Self {
        Spending {
            budget,
            schema_bytes: 0,
            pattern_bytes: 0,
            patterns: HashMap::new(),
            started: Instant::now(),
        }
    }

    /// Whether the plugin's time for compiling schemas is spent.
    pub fn check_time(&self) -> Result<(), OverBudget> {
        if self.started.elapsed() > self.budget.compile_time {
            return Err(OverBudget::OutOfTime {
                limit: self.budget.compile_time,
            });
        }
        Ok(())
    }

    /// Charges a schema's text, before it is parsed.
    pub fn admit_text(&mut self, text: &str) -> Result<(), OverBudget> {
        let bytes = text.len();
        if bytes > self.budget.schema_bytes {
            return Err(OverBudget::SchemaTooLarge {
                bytes,
                limit: self.budget.schema_bytes,
            });
        }
        if self.schema_bytes + bytes > self.budget.plugin_schema_bytes {
            return Err(OverBudget::SchemasTooLarge {
                limit: self.budget.plugin_schema_bytes,
            });
        }
        self.schema_bytes += bytes;
        Ok(())
    }

    /// Checks a parsed schema's depth and charges its patterns. A pattern over budget
    /// is charged what measuring it cost, so a plugin cannot make the host compile
    /// more than its budget by failing over and over.
    pub fn admit(&mut self, schema: &Value) -> Result<(), OverBudget> {
        if depth(schema) > self.budget.depth {
            return Err(OverBudget::TooDeep {
                limit: self.budget.depth,
            });
        }
        let mut found = Vec::new();
        patterns(schema, &mut String::new(), &mut found);
        for (pattern, at) in found {
            let verdict = match self.patterns.get(pattern) {
                Some(verdict) => verdict.clone(),
                None => {
                    self.check_time()?;
                    let verdict = self.measure(pattern);
                    self.patterns.insert(pattern.to_string(), verdict.clone());
                    verdict
                }
            };
            verdict.map_err(|refusal| refusal.at(at))?;
        }
        Ok(())
    }

    /// Compiles `pattern` within what the budget has left and charges what it cost; a
    /// pattern over budget is charged what measuring it cost, so a plugin cannot make
    /// the host compile more than its budget by failing over and over. The refusal's
    /// place is filled in by the caller.
    fn measure(&mut self, pattern: &str) -> Result<(), OverBudget> {
        let left = self
            .budget
            .plugin_pattern_bytes
            .saturating_sub(self.pattern_bytes);
        let limit = self.budget.pattern_bytes.min(left);
        // With nothing left, even parsing the pattern is not for the plugin to ask.
        let measured = if limit == 0 {
            Measured::TooLarge
        } else {
            compiled_size(pattern, limit)
        };
        let pattern = pattern.to_string();
        let at = String::new();
        match measured {
            Measured::Fits(size) => {
                self.pattern_bytes += size;
                Ok(())
            }
            Measured::NotLinear(feature) => Err(OverBudget::NotLinear {
                pattern,
                at,
                feature,
            }),
            Measured::TooLarge => {
                self.pattern_bytes += limit;
                Err(if limit == self.budget.pattern_bytes {
                    OverBudget::PatternTooLarge { pattern, at, limit }
                } else {
                    OverBudget::PatternsTooLarge {
                        pattern,
                        at,
                        limit: self.budget.plugin_pattern_bytes,
                    }
                })
            }
        }
    }
}

impl OverBudget {
    /// The refusal of a pattern, placed at `place` in the schema that has it.
    fn at(mut self, place: String) -> OverBudget {
        match &mut self {
            OverBudget::PatternTooLarge { at, .. }
            | OverBudget::PatternsTooLarge { at, .. }
            | OverBudget::NotLinear { at, .. } => *at = place,
            _ => {}
        }
        self
    }
}

/// The nesting depth of `value`: 0 for a scalar, 1 for a flat object or array.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Every regular expression `value` may make a validator compile, with its JSON
/// pointer: the string of each `pattern` member and the keys of each
/// `patternProperties` member, wherever they are. A member that is data rather than a
/// keyword (inside an `enum`, say) is charged too: finding every real one matters more.
fn patterns<'v>(value: &'v Value, at: &mut String, found: &mut Vec<(&'v str, String)>) {
    let length = at.len();
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                at.push('/');
                at.push_str(&pointer_token(key));
                match (key.as_str(), member) {
                    ("pattern", Value::String(pattern)) => found.push((pattern, at.clone())),
                    ("patternProperties", Value::Object(properties)) => {
                        for name in properties.keys() {
                            found.push((name, format!("{at}/{}", pointer_token(name))));
                        }
                    }
                    _ => {}
                }
                patterns(member, at, found);
                at.truncate(length);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                at.push_str(&format!("/{index}"));
                patterns(item, at, found);
                at.truncate(length);
            }
        }
        _ => {}
    }
}

/// `key` as one token of a JSON pointer (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What measuring a pattern found.
#[derive(Debug, PartialEq, Eq)]
enum Measured {
    /// It compiles to this many bytes, within the limit.
    Fits(usize),
    /// It compiles to more than the limit.
    TooLarge,
    /// It uses a feature of backtracking engines (named): it cannot be matched in
    /// linear time.
    NotLinear(&'static str),
}

/// The memory `pattern` (ECMA 262, as a schema has it) compiles to, translated to the
/// `regex` crate's syntax as the validator translates it, with the engine's size limit
/// set to `limit`. A pattern that does not parse is charged the whole limit, one that
/// does not translate nothing: the validator reports what is wrong with either.
fn compiled_size(pattern: &str, limit: usize) -> Measured {
    // A pattern that does not translate is measured as written, to name what made it
    // fail when that is look-around or a back-reference; else it costs nothing here.
    let (translated, translates) = match jsonschema_regex::to_rust_regex(pattern) {
        Ok(translated) => (translated, true),
        Err(()) => (pattern.into(), false),
    };
    let config = meta::Config::new().nfa_size_limit(Some(limit));
    let measured = match meta::Regex::builder().configure(config).build(&translated) {
        Ok(regex) if regex.memory_usage() <= limit => Measured::Fits(regex.memory_usage()),
        Ok(_) => Measured::TooLarge,
        Err(error) => match error.syntax_error() {
            Some(regex_syntax::Error::Parse(parse)) => match parse.kind() {
                ast::ErrorKind::UnsupportedLookAround => Measured::NotLinear("look-around"),
                ast::ErrorKind::UnsupportedBackreference => Measured::NotLinear("a back-reference"),
                // A named one (`\k<name>`) is no escape the parser knows.
                ast::ErrorKind::EscapeUnrecognized
                    if parse.pattern()[parse.span().start.offset..].starts_with("\\k<") =>
                {
                    Measured::NotLinear("a back-reference")
                }
                _ => Measured::Fits(limit),
            },
            Some(_) => Measured::Fits(limit),
            None => Measured::TooLarge,
        },
    };
    match measured {
        Measured::NotLinear(_) => measured,
        _ if !translates => Measured::Fits(0),
        _ => measured,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spending() -> Spending {
        Spending::new(SchemaBudget::default())
    }

    #[test]
    fn honest_patterns_cost_far_less_than_the_limit() {
        for pattern in [
            "^[a-z]+$",
            "^[a-zA-Z0-9_.-]+@[a-z]+\\.[a-z]{2,}$",
            "^\\d{4}-\\d{2}-\\d{2}$",
            "^[a-z]+(-[a-z]+)*$",
            "^\\w{1,64}$",
        ] {
            let Measured::Fits(size) = compiled_size(pattern, usize::MAX) else {
                panic!("{pattern} is measured");
            };
            assert!(size < 512 * 1024, "{pattern}: {size}");
        }
    }

    #[test]
    fn a_huge_pattern_is_refused_and_named_with_its_place() {
        let schema = json!({
            "type": "object",
            "properties": { "name": { "type": "string", "pattern": "^[\\p{L}\\p{N}]{0,120}$" } }
        });
        let error = spending().admit(&schema).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"the pattern "^[\\p{L}\\p{N}]{0,120}$" at `/properties/name/pattern` compiles to more than 2 MiB (the limit per pattern)"#
        );
        let schema = json!({ "patternProperties": { "^[\\p{L}\\p{N}]{0,120}$": {} } });
        assert!(
            matches!(
                spending().admit(&schema),
                Err(OverBudget::PatternTooLarge { .. })
            ),
            "{schema}"
        );
    }

    #[test]
    fn look_around_and_back_references_are_refused_naming_the_pattern() {
        let error = spending()
            .admit(&json!({ "items": { "pattern": "^(a|a)*\\1b" } }))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"the pattern "^(a|a)*\\1b" at `/items/pattern` uses a back-reference, which cannot be matched in time linear in the value (the limit for every pattern): look-around and back-references are refused"#
        );
        for (pattern, feature) in [
            ("^(?=.*[A-Z])(?=.*\\d).{8,64}$", "look-around"),
            ("(?<=@)[a-z]+", "look-around"),
            ("x(?!y)", "look-around"),
            ("^(?<w>\\w+) \\k<w>$", "a back-reference"),
        ] {
            assert_eq!(
                spending().admit(&json!({ "pattern": pattern })),
                Err(OverBudget::NotLinear {
                    pattern: pattern.to_string(),
                    at: "/pattern".to_string(),
                    feature
                }),
                "{pattern}"
            );
        }
    }

    #[test]
    fn a_refused_pattern_is_refused_wherever_it_appears_again() {
        let mut spending = spending();
        let huge = "^[\\p{L}\\p{N}]{0,120}$";
        for at in ["/pattern", "/items/pattern"] {
            let schema = if at == "/pattern" {
                json!({ "pattern": huge })
            } else {
                json!({ "items": { "pattern": huge } })
            };
            assert_eq!(
                spending.admit(&schema),
                Err(OverBudget::PatternTooLarge {
                    pattern: huge.to_string(),
                    at: at.to_string(),
                    limit: 2 * 1024 * 1024
                })
            );
        }
        for _ in 0..2 {
            assert!(matches!(
                spending.admit(&json!({ "pattern": "(a)\\1" })),
                Err(OverBudget::NotLinear { .. })
            ));
        }
    }

    #[test]
    fn the_plugin_total_is_spent_once_per_distinct_pattern() {
        let budget = SchemaBudget {
            pattern_bytes: 2 * 1024 * 1024,
            plugin_pattern_bytes: 5 * 1024 * 1024 / 2,
            ..SchemaBudget::default()
        };
        let mut spending = Spending::new(budget);
        // About 1 MiB each.
        let one = json!({ "pattern": "^\\p{L}{0,20}$" });
        spending.admit(&one).expect("the first fits");
        spending
            .admit(&one)
            .expect("the same pattern again is free");
        let two = json!({ "pattern": "^\\p{L}{0,21}$" });
        spending.admit(&two).expect("the second fits");
        let three = json!({ "items": [{ "pattern": "^\\p{L}{0,22}$" }] });
        assert!(matches!(
            spending.admit(&three),
            Err(OverBudget::PatternsTooLarge { at, .. }) if at == "/items/0/pattern"
        ));
    }

    #[test]
    fn size_depth_and_the_plugin_total_of_text_are_bounded() {
        let budget = SchemaBudget {
            schema_bytes: 100,
            plugin_schema_bytes: 150,
            depth: 3,
            ..SchemaBudget::default()
        };
        let mut spending = Spending::new(budget);
        assert_eq!(
            spending.admit_text(&" ".repeat(101)),
            Err(OverBudget::SchemaTooLarge {
                bytes: 101,
                limit: 100
            })
        );
        spending.admit_text(&" ".repeat(100)).expect("fits");
        assert_eq!(
            spending.admit_text(&" ".repeat(51)),
            Err(OverBudget::SchemasTooLarge { limit: 150 })
        );
        spending
            .admit(&json!({ "a": { "b": [1] } }))
            .expect("depth 3");
        assert_eq!(
            spending.admit(&json!({ "a": { "b": [[1]] } })),
            Err(OverBudget::TooDeep { limit: 3 })
        );
    }
}
