//! The budget a plugin's tool schemas are compiled under.
//!
//! A `params_schema` is the plugin's to write, but its validator lives in the host: a
//! few bytes of `pattern` such as `^[\p{L}\p{N}]{0,120}$` compile to megabytes of
//! automaton, and a plugin may register a thousand tools. So before a schema is
//! compiled, [`Spending`] checks its size and depth, and what each of its regular
//! expressions will cost, against the plugin's [`SchemaBudget`]; a schema over budget
//! is refused with the reason, naming the pattern. The cost of a pattern is measured
//! by compiling it with the engine the validator uses (regex-automata, under
//! fancy-regex) and asking how much memory it took, with the engine's size limit set
//! to what the budget has left, so that a measurement never costs more than the budget
//! it checks: the per-plugin total bounds both the memory and the time spent. Patterns
//! a plugin repeats are compiled once (the validators share a cache) and charged once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use regex_automata::meta;
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
    /// The patterns charged, with their cost: a repeated one is compiled once.
    patterns: HashMap<String, usize>,
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
            if self.patterns.contains_key(pattern) {
                continue;
            }
            self.check_time()?;
            let left = self
                .budget
                .plugin_pattern_bytes
                .saturating_sub(self.pattern_bytes);
            let limit = self.budget.pattern_bytes.min(left);
            // With nothing left, even parsing the pattern is not for the plugin to ask.
            let measured = if limit == 0 {
                None
            } else {
                compiled_size(pattern, limit)
            };
            let (cost, fits) = match measured {
                Some(size) => (size, true),
                None => (limit, false),
            };
            self.pattern_bytes += cost;
            self.patterns.insert(pattern.to_string(), cost);
            if !fits {
                let pattern = pattern.to_string();
                return Err(if limit == self.budget.pattern_bytes {
                    OverBudget::PatternTooLarge { pattern, at, limit }
                } else {
                    OverBudget::PatternsTooLarge {
                        pattern,
                        at,
                        limit: self.budget.plugin_pattern_bytes,
                    }
                });
            }
        }
        Ok(())
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

/// The memory `pattern` compiles to, or `None` when it needs more than `limit`.
///
/// The validator translates the pattern (ECMA 262) to the Rust engines' syntax and
/// compiles it with fancy-regex, which hands everything but look-arounds and
/// backreferences to regex-automata; leading look-aheads it may instead compile as
/// separate expressions. Here each of those is measured with regex-automata, look-arounds
/// counted as the groups they contain and backreferences as nothing (the backtracking
/// machine that runs them is small). A pattern that cannot be measured that way is
/// charged the whole limit.
fn compiled_size(pattern: &str, limit: usize) -> Option<usize> {
    let mut pieces: Vec<String> = Vec::new();
    if let Ok(translated) = jsonschema_regex::to_rust_regex(pattern) {
        pieces.push(regular_part(&translated));
    }
    if let Some(parts) = jsonschema_regex::split_leading_lookaheads(pattern) {
        for part in parts {
            if let Ok(translated) = jsonschema_regex::to_rust_regex(&part) {
                pieces.push(regular_part(&translated));
            }
        }
    }
    let mut total = 0usize;
    for piece in pieces {
        let left = limit.checked_sub(total)?;
        let config = meta::Config::new().nfa_size_limit(Some(left));
        match meta::Regex::builder().configure(config).build(&piece) {
            Ok(regex) => total += regex.memory_usage(),
            // A syntax error here is the validator's to report (or the measure's to
            // miss): charge what it might have cost.
            Err(error) if error.size_limit().is_none() && error.syntax_error().is_some() => {
                total += limit.saturating_sub(total)
            }
            Err(_) => return None,
        }
    }
    (total <= limit).then_some(total)
}

/// `pattern` (Rust regex syntax) with what only a backtracking engine runs taken out:
/// each look-around becomes a plain group of what it looks for, each backreference is
/// dropped. What remains is what fancy-regex hands to regex-automata, or more.
fn regular_part(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut class_depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(escaped) = chars.next() else {
                    out.push(c);
                    break;
                };
                if class_depth == 0 && escaped.is_ascii_digit() && escaped != '0' {
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                } else if class_depth == 0 && escaped == 'k' && chars.peek() == Some(&'<') {
                    for skipped in chars.by_ref() {
                        if skipped == '>' {
                            break;
                        }
                    }
                } else {
                    out.push(c);
                    out.push(escaped);
                }
            }
            '[' => {
                class_depth += 1;
                out.push(c);
                // A `]` (or `^]`) right after the opening bracket is a literal.
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().unwrap_or('^'));
                }
                if chars.peek() == Some(&']') {
                    out.push(chars.next().unwrap_or(']'));
                }
            }
            ']' if class_depth > 0 => {
                class_depth -= 1;
                out.push(c);
            }
            '(' if class_depth == 0 && chars.peek() == Some(&'?') => {
                let rest: String = chars.clone().take(4).collect();
                let skip = ["?<=", "?<!", "?=", "?!", "?>"]
                    .into_iter()
                    .find(|prefix| rest.starts_with(prefix))
                    .map_or(0, str::len);
                if skip > 0 {
                    for _ in 0..skip {
                        chars.next();
                    }
                    out.push_str("(?:");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
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
            "^(?=.*[A-Z])(?=.*\\d).{8,64}$",
            "^(\\w+) \\1$",
            "(?<=@)[a-z]+",
        ] {
            // A backreference keeps `\w` Unicode-wide: about 380 KB.
            let size = compiled_size(pattern, usize::MAX).expect("measured");
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
    }

    #[test]
    fn a_huge_lookaround_or_property_pattern_is_refused_too() {
        for schema in [
            json!({ "pattern": "(?=[\\p{L}\\p{N}]{0,120}$)x" }),
            json!({ "pattern": "(?<![\\p{L}\\p{N}]{0,120})\\1" }),
            json!({ "patternProperties": { "^[\\p{L}\\p{N}]{0,120}$": {} } }),
        ] {
            assert!(
                matches!(
                    spending().admit(&schema),
                    Err(OverBudget::PatternTooLarge { .. })
                ),
                "{schema}"
            );
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

    #[test]
    fn the_regular_part_drops_only_what_backtracking_runs() {
        assert_eq!(
            regular_part("(?=a)(?!b)(?<=c)(?<!d)e"),
            "(?:a)(?:b)(?:c)(?:d)e"
        );
        assert_eq!(regular_part("(\\w+)\\s\\1\\k<x>"), "(\\w+)\\s");
        assert_eq!(regular_part("[(?=\\1]"), "[(?=\\1]");
        assert_eq!(regular_part("[]\\]]x\\\\1"), "[]\\]]x\\\\1");
        assert_eq!(regular_part("(?<name>a)"), "(?<name>a)");
    }
}
