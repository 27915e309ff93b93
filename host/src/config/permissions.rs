//! The user's permission rules: `[permissions]` in the configuration file and `--allow`,
//! `--ask`, `--deny` on the command line; globs over tool names and paths, and presets.
//!
//! A rule's glob names tools by any of their names ([`ToolGlob::matches`]): an alias,
//! the plain name a tool holds (`note_write`; another plugin's tool of that name is
//! matched by its path), its path (`notes/note_write`, `PLUGIN-ID/TOOL`) or its wire
//! name; `*` and `?` stay within one `/`-separated segment, `**` crosses them. The rule
//! then applies to the tool whatever name a call uses. An entry that starts with `$`
//! names a preset: `$readonly`, `$sandboxed`, or one of `[permissions.presets]`.
//!
//! A leaf module: the configuration compiles these rules when it reads the file (so a bad
//! glob is an error at load), and the policy applies them per call.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Deserialize;

use crate::tool::names::{ToolGlob, ToolNames};

/// What a rule says: `allow`, `ask` or `deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The call runs.
    Allow,
    /// Someone is asked first.
    Ask,
    /// The call is refused, and the tool is not listed.
    Deny,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        })
    }
}

impl std::str::FromStr for Verdict {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "allow" => Ok(Verdict::Allow),
            "ask" => Ok(Verdict::Ask),
            "deny" => Ok(Verdict::Deny),
            other => Err(format!("expected allow, ask or deny, got {other:?}")),
        }
    }
}

/// What the policy says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call runs.
    Allow,
    /// The session's permission handler is asked (`on_permission`, the terminal, the
    /// MCP client).
    Ask,
    /// The call is refused, for the reason given (the model reads
    /// `tool 'X' was denied: REASON`).
    Deny(String),
}

/// `[permissions]`: the rules of the configuration file.
///
/// ```toml
/// [permissions]
/// default = "ask"                  # allow | ask | deny
/// allow = ["hello", "units/*", "$readonly"]
/// ask = ["*_write"]
/// deny = ["danger*"]
///
/// [permissions.presets]
/// "$notes" = ["note_read", "notes/*"]
/// ```
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSection {
    /// The decision for a tool no rule, preset or `no_prompt` decides.
    pub default: Option<Verdict>,
    /// Globs and presets of tools that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs and presets of tools that ask first.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Globs and presets of tools that are refused and not listed.
    #[serde(default)]
    pub deny: Vec<String>,
    /// User-defined presets: `"$NAME" = [globs and presets]`; they replace a built-in
    /// preset of the same name.
    #[serde(default)]
    pub presets: BTreeMap<String, Vec<String>>,
}

impl PermissionsSection {
    /// Whether the section says anything at all.
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.has_no_rules()
    }

    /// Whether the section has no rule and no preset (a default alone is no rule).
    fn has_no_rules(&self) -> bool {
        self.allow.is_empty()
            && self.ask.is_empty()
            && self.deny.is_empty()
            && self.presets.is_empty()
    }
}

/// Rules given on the command line (`--allow`, `--ask`, `--deny`), or by an embedder in
/// their place; they come before the configuration file's.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommandLineRules {
    /// `--allow GLOB`.
    pub allow: Vec<String>,
    /// `--ask GLOB`.
    pub ask: Vec<String>,
    /// `--deny GLOB`.
    pub deny: Vec<String>,
}

impl CommandLineRules {
    /// Whether no rule is given.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }
}

/// A rule or preset that cannot be used; the text says which and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// A glob that does not parse.
    #[error("{place}: {glob:?} is not a valid glob: {reason}")]
    BadGlob {
        /// Where it was given (`[permissions] deny`, `--allow`).
        place: String,
        /// The glob.
        glob: String,
        /// Why it does not parse.
        reason: String,
    },
    /// A `$name` that is no preset.
    #[error("{place}: unknown preset {name:?} (the presets are {known})")]
    UnknownPreset {
        /// Where it was given.
        place: String,
        /// The name.
        name: String,
        /// The presets there are.
        known: String,
    },
    /// A user-defined preset whose name does not start with `$`.
    #[error("[permissions.presets] {name:?}: a preset's name starts with '$'")]
    PresetName {
        /// The name.
        name: String,
    },
    /// A user-defined preset that includes itself.
    #[error("[permissions.presets] {name:?} includes itself")]
    PresetCycle {
        /// The name.
        name: String,
    },
}

/// What a rule is matched against.
pub(crate) struct ToolFacts<'a> {
    /// Every name the tool answers to.
    pub names: &'a ToolNames,
    /// The plugin is granted no file writes and no HTTP.
    pub read_only: bool,
}

/// One member of a preset, or a plain rule.
#[derive(Debug, Clone)]
enum Member {
    Glob(Box<ToolGlob>),
    /// `$readonly`: tools whose plugin may neither write files nor use HTTP, by its
    /// grants (never by what the plugin says of itself, such as `no_prompt`).
    ReadOnly,
    /// `$sandboxed`: every tool.
    Everything,
}

impl Member {
    fn matches(&self, tool: &ToolFacts<'_>) -> bool {
        match self {
            Member::Glob(glob) => glob.matches(tool.names),
            Member::ReadOnly => tool.read_only,
            Member::Everything => true,
        }
    }
}

/// A rule: the text the user wrote, and what it matches.
#[derive(Debug, Clone)]
struct Rule {
    text: String,
    members: Vec<Member>,
}

impl Rule {
    fn matches(&self, tool: &ToolFacts<'_>) -> bool {
        self.members.iter().any(|member| member.matches(tool))
    }
}

/// The rules of one source (the command line, or the configuration file), split into
/// plain globs and presets: globs decide before presets.
#[derive(Debug, Clone, Default)]
struct RuleSet {
    /// How a reason names the source of a rule: `--deny`, `[permissions] deny`.
    flag_style: bool,
    globs: Vec<(Verdict, Rule)>,
    presets: Vec<(Verdict, Rule)>,
}

impl RuleSet {
    /// The first rule of `rules` that matches `tool`, the most restrictive verdict
    /// first (deny, then ask, then allow).
    fn decide(&self, rules: &[(Verdict, Rule)], tool: &ToolFacts<'_>) -> Option<Decision> {
        [Verdict::Deny, Verdict::Ask, Verdict::Allow]
            .into_iter()
            .find_map(|verdict| {
                rules
                    .iter()
                    .find(|(v, rule)| *v == verdict && rule.matches(tool))
                    .map(|(_, rule)| self.decision(verdict, rule))
            })
    }

    fn decision(&self, verdict: Verdict, rule: &Rule) -> Decision {
        match verdict {
            Verdict::Allow => Decision::Allow,
            Verdict::Ask => Decision::Ask,
            Verdict::Deny if self.flag_style => {
                Decision::Deny(format!("it matches --deny {:?}", rule.text))
            }
            Verdict::Deny => {
                Decision::Deny(format!("it matches {:?} in [permissions] deny", rule.text))
            }
        }
    }
}

/// The user's rules, checked and compiled: what the configuration layer and the preset
/// layer of the resolver chain decide for each tool, and the default.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    /// The command line's rules, then the configuration file's.
    sets: Vec<RuleSet>,
    /// Every glob the user wrote (in a rule or a preset), with where: for the warning
    /// about one that matches no tool.
    written: Vec<(String, ToolGlob)>,
    /// `[permissions] default`.
    pub default: Option<Verdict>,
}

impl Rules {
    /// Compiles the configuration file's section and the command line's rules.
    pub fn new(
        section: &PermissionsSection,
        command_line: &CommandLineRules,
    ) -> Result<Rules, RuleError> {
        // Most runtimes have no rules: then there is nothing to compile, and no rule set
        // to consult on each call.
        if command_line.is_empty() && section.has_no_rules() {
            return Ok(Rules {
                default: section.default,
                ..Rules::default()
            });
        }
        let mut presets = Presets::new(&section.presets)?;
        let command_line_set = presets.rule_set(
            true,
            [
                ("--allow", Verdict::Allow, &command_line.allow),
                ("--ask", Verdict::Ask, &command_line.ask),
                ("--deny", Verdict::Deny, &command_line.deny),
            ],
        )?;
        let file_set = presets.rule_set(
            false,
            [
                ("[permissions] allow", Verdict::Allow, &section.allow),
                ("[permissions] ask", Verdict::Ask, &section.ask),
                ("[permissions] deny", Verdict::Deny, &section.deny),
            ],
        )?;
        Ok(Rules {
            sets: vec![command_line_set, file_set],
            written: presets.written,
            default: section.default,
        })
    }

    /// Each glob the user wrote that matches none of `tools` (every tool's names), as
    /// `WHERE "GLOB"`, with the glob.
    pub fn unmatched<'a>(&'a self, tools: &[ToolNames]) -> Vec<(String, &'a ToolGlob)> {
        self.written
            .iter()
            .filter(|(_, glob)| !tools.iter().any(|names| glob.matches(names)))
            .map(|(place, glob)| (format!("{place} {:?}", glob.as_str()), glob))
            .collect()
    }

    /// What the plain globs decide for `tool` (the configuration layer).
    pub fn by_glob(&self, tool: &ToolFacts<'_>) -> Option<Decision> {
        self.sets
            .iter()
            .find_map(|set| set.decide(&set.globs, tool))
    }

    /// What the presets decide for `tool` (the preset layer).
    pub fn by_preset(&self, tool: &ToolFacts<'_>) -> Option<Decision> {
        self.sets
            .iter()
            .find_map(|set| set.decide(&set.presets, tool))
    }
}

/// The presets there are: the built-ins, and the user's over them.
struct Presets {
    members: HashMap<String, Vec<Member>>,
    /// The user's presets resolved so far.
    resolved: HashSet<String>,
    /// Every glob written in a preset or a rule so far, with where.
    written: Vec<(String, ToolGlob)>,
}

impl Presets {
    fn new(defined: &BTreeMap<String, Vec<String>>) -> Result<Presets, RuleError> {
        let mut presets = Presets {
            members: HashMap::from([
                ("$readonly".to_string(), vec![Member::ReadOnly]),
                ("$sandboxed".to_string(), vec![Member::Everything]),
            ]),
            resolved: HashSet::new(),
            written: Vec::new(),
        };
        if let Some(name) = defined.keys().find(|name| !name.starts_with('$')) {
            return Err(RuleError::PresetName { name: name.clone() });
        }
        // A user preset may name another; resolve them in dependency order.
        let mut resolving = Vec::new();
        for name in defined.keys() {
            presets.resolve(name, defined, &mut resolving)?;
        }
        Ok(presets)
    }

    fn resolve(
        &mut self,
        name: &str,
        defined: &BTreeMap<String, Vec<String>>,
        resolving: &mut Vec<String>,
    ) -> Result<(), RuleError> {
        let Some(entries) = defined.get(name) else {
            return Ok(());
        };
        if self.resolved.contains(name) {
            return Ok(());
        }
        if resolving.iter().any(|open| open == name) {
            return Err(RuleError::PresetCycle {
                name: name.to_string(),
            });
        }
        resolving.push(name.to_string());
        let place = format!("[permissions.presets] {name:?}");
        let mut members = Vec::new();
        for entry in entries {
            if entry.starts_with('$') && defined.contains_key(entry) {
                self.resolve(entry, defined, resolving)?;
            }
            members.extend(self.members_of(&place, entry, defined)?);
        }
        resolving.pop();
        self.members.insert(name.to_string(), members);
        self.resolved.insert(name.to_string());
        Ok(())
    }

    /// What `entry` matches: a glob, or a preset's members.
    fn members_of(
        &mut self,
        place: &str,
        entry: &str,
        defined: &BTreeMap<String, Vec<String>>,
    ) -> Result<Vec<Member>, RuleError> {
        if !entry.starts_with('$') {
            let glob = glob(place, entry)?;
            self.written.push((place.to_string(), glob.clone()));
            return Ok(vec![Member::Glob(Box::new(glob))]);
        }
        match self.members.get(entry) {
            Some(members) => Ok(members.clone()),
            None => {
                let mut known: Vec<&str> = self
                    .members
                    .keys()
                    .map(String::as_str)
                    .chain(defined.keys().map(String::as_str))
                    .collect();
                known.sort_unstable();
                known.dedup();
                Err(RuleError::UnknownPreset {
                    place: place.to_string(),
                    name: entry.to_string(),
                    known: known.join(", "),
                })
            }
        }
    }

    fn rule_set(
        &mut self,
        flag_style: bool,
        lists: [(&str, Verdict, &Vec<String>); 3],
    ) -> Result<RuleSet, RuleError> {
        let mut set = RuleSet {
            flag_style,
            ..RuleSet::default()
        };
        let none = BTreeMap::new();
        for (place, verdict, entries) in lists {
            for entry in entries {
                let rule = Rule {
                    text: entry.clone(),
                    members: self.members_of(place, entry, &none)?,
                };
                if entry.starts_with('$') {
                    set.presets.push((verdict, rule));
                } else {
                    set.globs.push((verdict, rule));
                }
            }
        }
        Ok(set)
    }
}

/// A glob over tools by their names: `*` and `?` within a segment, `**` across.
pub(crate) fn glob(place: &str, text: &str) -> Result<ToolGlob, RuleError> {
    ToolGlob::new(text).map_err(|error| RuleError::BadGlob {
        place: place.to_string(),
        glob: text.to_string(),
        reason: error.reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of a tool that holds its plain name.
    fn names(name: &str, path: &str) -> ToolNames {
        ToolNames {
            plain: Some(name.to_string()),
            ..ToolNames::of_path(path)
        }
    }

    fn facts(names: &ToolNames) -> ToolFacts<'_> {
        ToolFacts {
            names,
            read_only: false,
        }
    }

    fn section(text: &str) -> PermissionsSection {
        toml::from_str(text).expect("a valid section")
    }

    #[test]
    fn globs_match_names_and_paths_within_segments() {
        let rules = Rules::new(
            &section(
                r#"allow = ["hello", "units/*"]
ask = ["*_write"]
deny = ["danger*"]"#,
            ),
            &CommandLineRules::default(),
        )
        .expect("rules");
        assert_eq!(
            rules.by_glob(&facts(&names("hello", "greet/hello"))),
            Some(Decision::Allow)
        );
        assert_eq!(
            rules.by_glob(&facts(&names("convert", "units/convert"))),
            Some(Decision::Allow)
        );
        assert_eq!(
            rules.by_glob(&facts(&names("note_write", "notes/note_write"))),
            Some(Decision::Ask)
        );
        assert_eq!(
            rules.by_glob(&facts(&names("danger_zone", "x/danger_zone"))),
            Some(Decision::Deny(
                "it matches \"danger*\" in [permissions] deny".to_string()
            ))
        );
        // `*` stays within a segment: "danger*" does not match the path of plugin
        // "dangerous"'s tool "safe".
        assert_eq!(
            rules.by_glob(&facts(&names("safe", "dangerous/safe"))),
            None
        );
        assert_eq!(
            rules.by_preset(&facts(&names("hello", "greet/hello"))),
            None
        );
    }

    #[test]
    fn a_rule_names_a_tool_by_any_of_its_names_and_a_bare_name_only_its_holder() {
        let command_line = CommandLineRules {
            deny: vec!["safe_tool".to_string(), "b_evil__search".to_string()],
            ..CommandLineRules::default()
        };
        let rules = Rules::new(&section(r#"allow = ["search"]"#), &command_line).expect("rules");
        let aliased = ToolNames {
            aliases: vec!["safe_tool".to_string()],
            ..ToolNames::of_path("a_web/danger_zone")
        };
        assert!(matches!(
            rules.by_glob(&facts(&aliased)),
            Some(Decision::Deny(_))
        ));
        assert!(matches!(
            rules.by_glob(&facts(&ToolNames::of_path("b_evil/search"))),
            Some(Decision::Deny(_))
        ));
        // "search" is web/search's; b_evil/search only registers the same name.
        assert_eq!(
            rules.by_glob(&facts(&names("search", "web/search"))),
            Some(Decision::Allow)
        );
        assert_eq!(rules.by_glob(&facts(&ToolNames::of_path("c/search"))), None);
    }

    #[test]
    fn globs_matching_no_tool_are_named_with_where_they_were_written() {
        let command_line = CommandLineRules {
            deny: vec!["serch".to_string()],
            ..CommandLineRules::default()
        };
        let rules = Rules::new(
            &section("allow = [\"search\", \"$mine\"]\n[presets]\n\"$mine\" = [\"nothing_*\"]"),
            &command_line,
        )
        .expect("rules");
        let tools = [names("search", "web/search")];
        let unmatched: Vec<String> = rules
            .unmatched(&tools)
            .into_iter()
            .map(|(place, _)| place)
            .collect();
        assert_eq!(
            unmatched,
            [
                "[permissions.presets] \"$mine\" \"nothing_*\"",
                "--deny \"serch\""
            ]
        );
    }

    #[test]
    fn deny_wins_within_a_source_and_the_command_line_before_the_file() {
        let file = section(
            r#"allow = ["note_*"]
deny = ["note_write"]"#,
        );
        let rules = Rules::new(&file, &CommandLineRules::default()).expect("rules");
        assert!(matches!(
            rules.by_glob(&facts(&names("note_write", "notes/note_write"))),
            Some(Decision::Deny(_))
        ));
        let command_line = CommandLineRules {
            allow: vec!["note_write".to_string()],
            ..CommandLineRules::default()
        };
        let rules = Rules::new(&file, &command_line).expect("rules");
        assert_eq!(
            rules.by_glob(&facts(&names("note_write", "notes/note_write"))),
            Some(Decision::Allow)
        );
    }

    #[test]
    fn presets_decide_after_globs_and_may_name_each_other() {
        let rules = Rules::new(
            &section(
                r#"allow = ["$mine"]
deny = ["note_*"]
[presets]
"$mine" = ["$readonly", "extra"]"#,
            ),
            &CommandLineRules::default(),
        )
        .expect("rules");
        let note_read = names("note_read", "notes/note_read");
        let read_only = ToolFacts {
            names: &note_read,
            read_only: true,
        };
        assert!(matches!(rules.by_glob(&read_only), Some(Decision::Deny(_))));
        assert_eq!(rules.by_preset(&read_only), Some(Decision::Allow));
        assert_eq!(
            rules.by_preset(&facts(&names("extra", "p/extra"))),
            Some(Decision::Allow)
        );
        assert_eq!(rules.by_preset(&facts(&names("other", "p/other"))), None);
    }

    #[test]
    fn bad_rules_say_where_and_why() {
        let error = |text: &str| {
            Rules::new(&section(text), &CommandLineRules::default())
                .expect_err("refused")
                .to_string()
        };
        assert_eq!(
            error(r#"deny = ["[a"]"#),
            "[permissions] deny: \"[a\" is not a valid glob: unclosed character class; missing ']'"
        );
        assert_eq!(
            error(r#"allow = ["$nope"]"#),
            "[permissions] allow: unknown preset \"$nope\" (the presets are $readonly, $sandboxed)"
        );
        assert_eq!(
            error("[presets]\nmine = []"),
            "[permissions.presets] \"mine\": a preset's name starts with '$'"
        );
        assert_eq!(
            error("[presets]\n\"$a\" = [\"$b\"]\n\"$b\" = [\"$a\"]"),
            "[permissions.presets] \"$a\" includes itself"
        );
        let command_line = CommandLineRules {
            ask: vec!["$nope".to_string()],
            ..CommandLineRules::default()
        };
        assert_eq!(
            Rules::new(&PermissionsSection::default(), &command_line)
                .expect_err("refused")
                .to_string(),
            "--ask: unknown preset \"$nope\" (the presets are $readonly, $sandboxed)"
        );
    }
}
