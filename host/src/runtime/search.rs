//! Tool search for large sets: which tools are deferred (listed only once a search
//! finds them), the `search_tools` tool a session then offers, and the ranking of
//! deferred tools against a query (BM25 over their names and descriptions).

use std::collections::HashMap;

use super::arguments::Arguments;
use crate::tool::info::ToolInfo;

/// The name of the tool a session offers while some of its tools are deferred.
pub const SEARCH_TOOLS: &str = "search_tools";

/// How many tools one search returns unless it asks for another number.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The most tools one search returns.
pub const MAX_SEARCH_LIMIT: usize = 50;

/// Which tools are deferred: the runtime's default (`serve --deferred`, `[tools]
/// deferred`), and each plugin's own setting (`[plugins.ID] defer`), which wins.
#[derive(Debug, Clone, Default)]
pub(super) struct Deferral {
    pub default: bool,
    pub plugins: HashMap<String, bool>,
}

impl Deferral {
    /// Whether the tools of plugin `plugin` are deferred.
    pub fn defers(&self, plugin: &str) -> bool {
        self.plugins.get(plugin).copied().unwrap_or(self.default)
    }

    /// Whether any tool may be deferred, so that `search_tools` may be offered.
    pub fn is_possible(&self) -> bool {
        self.default || self.plugins.values().any(|&defer| defer)
    }
}

/// The `search_tools` tool as a session lists it.
pub(super) fn search_tool() -> ToolInfo {
    ToolInfo {
        name: SEARCH_TOOLS.to_string(),
        path: format!("toolcell/{SEARCH_TOOLS}"),
        description: format!(
            "Find tools that are not listed yet by what they do. Give a few words about the \
             tool you need; the best matches come back with their names, descriptions and \
             input schemas (at most {DEFAULT_SEARCH_LIMIT} unless you give a limit), and can \
             be called from then on."
        ),
        params_schema: Some(serde_json::json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "words describing the tool you need",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": "how many tools at most",
                },
            },
            "required": ["query"],
            "additionalProperties": false,
        })),
        timeout: None,
        no_prompt: true,
        hidden: false,
        title: Some("Search tools".to_string()),
        output_schema: None,
        plugin: "toolcell".to_string(),
    }
}

/// What a call of `search_tools` asks: its query and how many tools at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Query {
    pub text: String,
    pub limit: usize,
}

impl Query {
    /// Reads the arguments of a call of `search_tools`; what is wrong with them,
    /// otherwise.
    pub fn parse<'a>(args: impl Into<Arguments<'a>>) -> Result<Query, String> {
        let args = args.into().into_value()?;
        let Some(args) = args.as_object() else {
            return Err("expected a JSON object".to_string());
        };
        if let Some(key) = args
            .keys()
            .find(|key| !matches!(key.as_str(), "query" | "limit"))
        {
            return Err(format!(
                "unknown property {key:?} (give `query`, and `limit`)"
            ));
        }
        let text = match args.get("query") {
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(_) => return Err("`query` must be a string".to_string()),
            None => return Err("`query` is required".to_string()),
        };
        let limit = match args.get("limit") {
            None | Some(serde_json::Value::Null) => DEFAULT_SEARCH_LIMIT,
            Some(limit) => limit
                .as_u64()
                .filter(|limit| (1..=MAX_SEARCH_LIMIT as u64).contains(limit))
                .ok_or_else(|| {
                    format!("`limit` must be a whole number from 1 to {MAX_SEARCH_LIMIT}")
                })? as usize,
        };
        Ok(Query { text, limit })
    }
}

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's document-length normalisation.
const B: f64 = 0.75;
/// How many times a word of a tool's name counts, against once in its description: a
/// name says what a tool does in fewer words.
const NAME_WEIGHT: usize = 3;

/// Ranks `documents` (each a tool's name and description) against `query`, best first:
/// the indices of those that match at all, at most `limit`. Okapi BM25, each document
/// its name's distinct words [`NAME_WEIGHT`] times and its description's distinct words
/// once: a description that repeats the words a model may ask for gains nothing by it;
/// equal scores keep the documents' order.
pub(super) fn rank(query: &str, documents: &[(&str, &str)], limit: usize) -> Vec<usize> {
    let query: Vec<String> = {
        let mut words = words(query);
        words.sort();
        words.dedup();
        words
    };
    if query.is_empty() || documents.is_empty() {
        return Vec::new();
    }
    let bags: Vec<Vec<String>> = documents
        .iter()
        .map(|(name, description)| {
            let distinct = |text: &str| {
                let mut words = words(text);
                words.sort();
                words.dedup();
                words
            };
            let name = distinct(name);
            let mut bag = Vec::with_capacity(name.len() * NAME_WEIGHT);
            for _ in 0..NAME_WEIGHT {
                bag.extend(name.iter().cloned());
            }
            bag.extend(distinct(description));
            bag
        })
        .collect();
    let count = bags.len() as f64;
    let average = bags.iter().map(Vec::len).sum::<usize>() as f64 / count;
    let idf: Vec<f64> = query
        .iter()
        .map(|word| {
            let with = bags.iter().filter(|bag| bag.contains(word)).count() as f64;
            ((count - with + 0.5) / (with + 0.5) + 1.0).ln()
        })
        .collect();
    let mut scored: Vec<(f64, usize)> = bags
        .iter()
        .enumerate()
        .filter_map(|(index, bag)| {
            let length = bag.len() as f64;
            let score: f64 = query
                .iter()
                .zip(&idf)
                .map(|(word, idf)| {
                    let frequency = bag.iter().filter(|other| *other == word).count() as f64;
                    idf * frequency * (K1 + 1.0)
                        / (frequency + K1 * (1.0 - B + B * length / average.max(1.0)))
                })
                .sum();
            (score > 0.0).then_some((score, index))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, index)| index)
        .collect()
}

/// English words too common to tell tools apart; a query's "read a note" is about
/// reading and notes.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "its", "of",
    "on", "or", "that", "the", "this", "to", "with",
];

/// The words of `text` that tell tools apart, in lower case: runs of letters and
/// digits, a name's parts (`note_read`, `noteRead`, `acme/notes`) apart, without
/// [`STOP_WORDS`].
fn words(text: &str) -> Vec<String> {
    let mut words = split(text);
    words.retain(|word| !STOP_WORDS.contains(&word.as_str()));
    words
}

fn split(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            previous_lower = false;
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_names_and_text() {
        assert_eq!(
            words("note_read, noteWrite the acme/notes HTTP2 Größe"),
            [
                "note", "read", "note", "write", "acme", "notes", "http2", "größe"
            ]
        );
    }

    #[test]
    fn the_tool_whose_name_and_description_fit_best_comes_first() {
        let documents = [
            ("weather_now", "Current weather for a city"),
            ("note_read", "Read a note by its title"),
            ("note_write", "Write a note"),
            (
                "convert_length",
                "Convert a length between metric and imperial units",
            ),
        ];
        assert_eq!(rank("read a note", &documents, 5), [1, 2]);
        assert_eq!(rank("weather", &documents, 5), [0]);
        assert_eq!(rank("imperial units", &documents, 5), [3]);
        // Of two equal matches, the shorter document.
        assert_eq!(rank("note", &documents, 1), [2]);
        assert_eq!(rank("zebra", &documents, 5), Vec::<usize>::new());
        assert_eq!(rank("  ", &documents, 5), Vec::<usize>::new());
    }

    #[test]
    fn repeating_words_in_a_description_does_not_outrank_a_tool_named_for_them() {
        let stuffed = "convert imperial length ".repeat(600);
        let mut documents = vec![
            ("p0_t0", stuffed.as_str()),
            (
                "convert_length",
                "Convert a length between metric and imperial units",
            ),
        ];
        let filler: Vec<String> = (0..200).map(|index| format!("The tool {index}")).collect();
        documents.extend(filler.iter().map(|text| ("filler", text.as_str())));
        assert_eq!(rank("convert an imperial length", &documents, 2), [1, 0]);
    }

    #[test]
    fn a_query_is_checked() {
        assert_eq!(
            Query::parse(r#"{"query":"notes"}"#),
            Ok(Query {
                text: "notes".to_string(),
                limit: DEFAULT_SEARCH_LIMIT
            })
        );
        assert_eq!(
            Query::parse(r#"{"query":"notes","limit":50}"#).map(|query| query.limit),
            Ok(50)
        );
        for (args, problem) in [
            ("{}", "`query` is required"),
            (r#"{"query":1}"#, "`query` must be a string"),
            (r#"{"query":"a","limit":0}"#, "from 1 to 50"),
            (r#"{"query":"a","limit":51}"#, "from 1 to 50"),
            (r#"{"query":"a","limit":2.5}"#, "from 1 to 50"),
            (r#"{"query":"a","lmit":2}"#, "unknown property \"lmit\""),
            ("[]", "expected a JSON object"),
        ] {
            let error = Query::parse(args).expect_err(args);
            assert!(error.contains(problem), "{args}: {error}");
        }
    }
}
