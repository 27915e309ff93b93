//! The names a registered tool answers to, and the names the model sees: one table in
//! which every name has exactly one owner.
//!
//! A tool answers to its path (`OWNER/TOOL`: a plugin id, or whatever else registers
//! tools) and to the wire name of its path ([`crate::tool::names::wire_name`]); the
//! first tool registered under a plain name also answers to it, unless the embedder
//! reserved it; and each `[aliases]` entry adds a name, which wins over a plain name.
//!
//! The kinds of names never meet, so no order of lookup decides who a name calls:
//! paths hold `/`, which no other name does; wire names hold `__` (the separator of
//! their parts), which no plain name a tool holds and no alias may; plain names and
//! aliases share one space, where the user's alias wins. A tool registered under a name
//! with `__` (which is, or could become, another tool's wire name) answers to its path
//! only: `tool_name_refused`.
//!
//! The model sees each tool that is not hidden once per alias; without an alias, under
//! its plain name when it holds it, else under the wire name of its path.
//!
//! A plugin tool that cannot have its plain name (another plugin's tool has it, or the
//! embedder reserved it) breaks clm-tool(5)'s rule that names are unique: an error,
//! although the tool stays reachable by its path. A tool that loses its plain name to
//! an alias the user wrote is only a warning.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::base::fast_map::FastMap;
use crate::base::wording::file_name;
use crate::runtime::diagnostic::{Diagnostic, DiagnosticKind, Severity};
use crate::tool::names::{ToolNames, has_wire_separator};

use super::ToolInfo;

/// How the user and the embedder name tools: aliases and reserved names.
#[derive(Debug, Clone, Default)]
pub(super) struct Naming {
    /// `[aliases]`: alias → target (a path, a wire name or a plain name), in alias
    /// order.
    pub aliases: Vec<(String, String)>,
    /// Names the embedder keeps for its own tools.
    pub reserved: HashSet<String>,
    /// The configuration file the aliases come from, for diagnostics.
    pub config_file: PathBuf,
}

/// A name the model sees, and the tool it calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Listing {
    /// The name shown.
    pub name: String,
    /// The tool, by index into the runtime's tools.
    pub tool: usize,
    /// Whether `name` is an alias.
    pub alias: bool,
}

/// Every name of every registered tool, each with its one owner.
#[derive(Debug, Default)]
pub(super) struct Names {
    /// Name → the tool it calls, by index.
    owners: FastMap<String, usize>,
    /// Every name each tool answers to, parallel to the tools.
    of_tool: Vec<ToolNames>,
    listed: Vec<Listing>,
}

impl Names {
    /// The names of `tools` (in load order; `files[i]` is where `tools[i]` comes from),
    /// and what is worth telling about them: names refused, plain names taken twice or
    /// reserved, aliases that name nothing, more than one tool, or take a name.
    pub fn build(tools: &[ToolInfo], files: &[&Path], naming: &Naming) -> (Names, Vec<Diagnostic>) {
        let mut names = Names::default();
        let mut diagnostics = Vec::new();
        let mut report = |index: usize, kind, severity, message| {
            diagnostics.push(Diagnostic {
                file: files[index].to_path_buf(),
                kind,
                severity,
                message,
            });
        };
        for (index, tool) in tools.iter().enumerate() {
            let own = ToolNames::of_path(&tool.path);
            for name in [&own.path, &own.wire] {
                if let Some(&other) = names.owners.get(name) {
                    report(
                        index,
                        DiagnosticKind::ToolCollision,
                        Severity::Warning,
                        format!(
                            "tool {} answers to '{name}', as tool {} does, which keeps it; \
                             give it an alias",
                            tool.path, tools[other].path
                        ),
                    );
                } else {
                    names.owners.insert(name.clone(), index);
                }
            }
            names.of_tool.push(own);
        }
        for (index, tool) in tools.iter().enumerate() {
            let file = file_name(files[index]);
            if has_wire_separator(&tool.name) {
                report(
                    index,
                    DiagnosticKind::ToolNameRefused,
                    Severity::Error,
                    format!(
                        "tool '{}' of plugin {file} has '__' in its name, which joins the \
                         parts of a wire name, so the name is, or could become, another \
                         tool's; call it as {}",
                        tool.name, tool.path
                    ),
                );
            } else if naming.reserved.contains(&tool.name) {
                report(
                    index,
                    DiagnosticKind::ToolCollision,
                    Severity::Error,
                    format!(
                        "tool '{}' of plugin {file} has a name reserved for a built-in tool; \
                         call it as {}",
                        tool.name, tool.path
                    ),
                );
            } else if let Some(&first) = names.owners.get(&tool.name) {
                report(
                    index,
                    DiagnosticKind::ToolCollision,
                    Severity::Error,
                    format!(
                        "tool '{}' of plugin {file} ({}) is also registered by plugin {} ({}), \
                         loaded first, which keeps the name; call it as {}",
                        tool.name,
                        tool.path,
                        file_name(files[first]),
                        tools[first].path,
                        tool.path
                    ),
                );
            } else {
                names.owners.insert(tool.name.clone(), index);
                names.of_tool[index].plain = Some(tool.name.clone());
            }
        }
        names.add_aliases(tools, files, naming, &mut diagnostics);
        names.list(tools);
        (names, diagnostics)
    }

    /// The tool `target` names, as an alias's target: a path or wire name, or a plain
    /// name exactly one tool registers (whether or not it holds it); never an alias.
    fn alias_target(&self, tools: &[ToolInfo], target: &str) -> Result<usize, Vec<usize>> {
        if target.contains('/') || has_wire_separator(target) {
            return self.owners.get(target).copied().ok_or_else(Vec::new);
        }
        let registering: Vec<usize> = tools
            .iter()
            .enumerate()
            .filter(|(_, tool)| tool.name == target)
            .map(|(index, _)| index)
            .collect();
        match registering.as_slice() {
            [only] => Ok(*only),
            _ => Err(registering),
        }
    }

    fn add_aliases(
        &mut self,
        tools: &[ToolInfo],
        files: &[&Path],
        naming: &Naming,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let config = |severity, kind, message| Diagnostic {
            file: naming.config_file.clone(),
            kind,
            severity,
            message,
        };
        // Targets are found before any alias is added: an alias never names another.
        let targets: Vec<Result<usize, Vec<usize>>> = naming
            .aliases
            .iter()
            .map(|(_, target)| self.alias_target(tools, target))
            .collect();
        for ((alias, target), found) in naming.aliases.iter().zip(targets) {
            let index = match found {
                Ok(index) => index,
                Err(registering) if registering.is_empty() => {
                    let known = self.of_tool.iter().flat_map(ToolNames::iter);
                    diagnostics.push(config(
                        Severity::Warning,
                        DiagnosticKind::AliasUnresolved,
                        format!(
                            "alias '{alias}' names '{target}', which no loaded tool answers \
                             to{}",
                            super::did_you_mean(&super::closest(target, known))
                        ),
                    ));
                    continue;
                }
                Err(registering) => {
                    let paths: Vec<&str> = registering
                        .iter()
                        .map(|&index| tools[index].path.as_str())
                        .collect();
                    diagnostics.push(config(
                        Severity::Warning,
                        DiagnosticKind::AliasAmbiguous,
                        format!(
                            "alias '{alias}' names '{target}', which {} tools register ({}); \
                             it is not used: name one by its path",
                            paths.len(),
                            paths.join(", ")
                        ),
                    ));
                    continue;
                }
            };
            if naming.reserved.contains(alias) {
                diagnostics.push(config(
                    Severity::Error,
                    DiagnosticKind::ToolCollision,
                    format!(
                        "alias '{alias}' (for {}) is a name reserved for a built-in tool; \
                         it is not used",
                        tools[index].path
                    ),
                ));
                continue;
            }
            if let Some(&holder) = self.owners.get(alias)
                && holder != index
            {
                diagnostics.push(Diagnostic {
                    file: files[holder].to_path_buf(),
                    kind: DiagnosticKind::ToolCollision,
                    severity: Severity::Warning,
                    message: format!(
                        "alias '{alias}' calls {}, so tool {} loses its name; call it as {}",
                        tools[index].path, tools[holder].path, tools[holder].path
                    ),
                });
                self.of_tool[holder].plain = None;
            }
            self.owners.insert(alias.clone(), index);
            self.of_tool[index].aliases.push(alias.clone());
        }
        for own in &mut self.of_tool {
            own.aliases.sort_unstable();
        }
    }

    /// Lists each tool that is not hidden under the names the model sees.
    fn list(&mut self, tools: &[ToolInfo]) {
        let mut listed = Vec::new();
        for (index, (tool, own)) in tools.iter().zip(&self.of_tool).enumerate() {
            if tool.hidden {
                continue;
            }
            if !own.aliases.is_empty() {
                listed.extend(own.aliases.iter().map(|alias| Listing {
                    name: alias.clone(),
                    tool: index,
                    alias: true,
                }));
                continue;
            }
            let name = own.plain.as_ref().unwrap_or(&own.wire);
            // A wire name another tool keeps (a collision of hashes) is not shown.
            if self.owners.get(name) == Some(&index) {
                listed.push(Listing {
                    name: name.clone(),
                    tool: index,
                    alias: false,
                });
            }
        }
        self.listed = listed;
    }

    /// The tool `name` calls: an alias, a plain name, a path or a wire name.
    pub fn resolve(&self, name: &str) -> Option<usize> {
        self.owners.get(name).copied()
    }

    /// Every name the tool at `index` answers to.
    pub fn of(&self, index: usize) -> &ToolNames {
        &self.of_tool[index]
    }

    /// Every tool's names, in load order.
    pub fn all(&self) -> &[ToolNames] {
        &self.of_tool
    }

    /// The names the model sees, in load order.
    pub fn listed(&self) -> &[Listing] {
        &self.listed
    }

    /// Whether some name (alias, plain name, path, wire name) answers to `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.owners.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(plugin: &str, name: &str, hidden: bool) -> ToolInfo {
        ToolInfo {
            name: name.to_string(),
            path: format!("{plugin}/{name}"),
            description: String::new(),
            params_schema: None,
            timeout: None,
            no_prompt: false,
            hidden,
            title: None,
            output_schema: None,
            plugin: plugin.to_string(),
        }
    }

    fn build(tools: &[ToolInfo], naming: &Naming) -> (Names, Vec<Diagnostic>) {
        let files: Vec<PathBuf> = tools
            .iter()
            .map(|tool| PathBuf::from(format!("/p/{}.lua", tool.plugin.replace('/', "+"))))
            .collect();
        let files: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        Names::build(tools, &files, naming)
    }

    fn shown(names: &Names) -> Vec<(&str, usize)> {
        names
            .listed()
            .iter()
            .map(|listing| (listing.name.as_str(), listing.tool))
            .collect()
    }

    #[test]
    fn a_second_registration_keeps_its_path_and_loses_the_plain_name() {
        let tools = [
            tool("a", "search", false),
            tool("acme/web", "search", false),
        ];
        let (names, diagnostics) = build(&tools, &Naming::default());
        assert_eq!(names.resolve("search"), Some(0));
        assert_eq!(names.resolve("a/search"), Some(0));
        assert_eq!(names.resolve("acme/web/search"), Some(1));
        assert_eq!(names.resolve("acme__web__search"), Some(1));
        assert_eq!(names.resolve("a__search"), Some(0));
        assert_eq!(shown(&names), [("search", 0), ("acme__web__search", 1)]);
        assert_eq!(diagnostics.len(), 1);
        let message = &diagnostics[0].message;
        assert!(
            message.contains("a/search") && message.contains("acme/web/search"),
            "{message}"
        );
        assert_eq!(diagnostics[0].severity, Severity::Error);
    }

    #[test]
    fn aliases_are_shown_instead_of_the_name_and_win_over_plain_names() {
        let tools = [
            tool("a", "read", false),
            tool("acme/notes", "note_read", false),
            tool("b", "secret", true),
        ];
        let naming = Naming {
            aliases: vec![
                ("get_note".to_string(), "acme/notes/note_read".to_string()),
                ("read".to_string(), "note_read".to_string()),
                ("nothing".to_string(), "x/y".to_string()),
            ],
            ..Naming::default()
        };
        let (names, diagnostics) = build(&tools, &naming);
        assert_eq!(names.resolve("read"), Some(1));
        assert_eq!(names.resolve("get_note"), Some(1));
        assert_eq!(names.resolve("note_read"), Some(1));
        assert_eq!(names.resolve("a/read"), Some(0));
        assert_eq!(names.resolve("secret"), Some(2));
        assert_eq!(
            shown(&names),
            [("a__read", 0), ("get_note", 1), ("read", 1)]
        );
        let kinds: Vec<DiagnosticKind> = diagnostics.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DiagnosticKind::ToolCollision,
                DiagnosticKind::AliasUnresolved
            ]
        );
    }

    #[test]
    fn a_name_in_wire_form_is_refused_and_the_wire_name_stays_its_paths() {
        let tools = [
            tool("a_web", "danger_zone", false),
            tool("b_evil", "a_web__danger_zone", false),
        ];
        let naming = Naming {
            aliases: vec![("dz".to_string(), "a_web__danger_zone".to_string())],
            ..Naming::default()
        };
        let (names, diagnostics) = build(&tools, &naming);
        assert_eq!(names.resolve("a_web__danger_zone"), Some(0));
        assert_eq!(names.resolve("dz"), Some(0));
        assert_eq!(names.resolve("b_evil/a_web__danger_zone"), Some(1));
        assert_eq!(names.of(1).plain, None);
        let wire = names.of(1).wire.clone();
        assert!(wire.contains("___"), "{wire}");
        assert_eq!(names.resolve(&wire), Some(1));
        assert_eq!(shown(&names), [("dz", 0), (wire.as_str(), 1)]);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].kind, DiagnosticKind::ToolNameRefused);
        assert_eq!(diagnostics[0].severity, Severity::Error);
        assert!(
            diagnostics[0]
                .message
                .ends_with("call it as b_evil/a_web__danger_zone"),
            "{}",
            diagnostics[0].message
        );
    }

    #[test]
    fn an_alias_names_one_tool_never_whoever_holds_a_contested_name() {
        let tools = [
            tool("aaa", "search", false),
            tool("web", "search", false),
            tool("web", "fetch", false),
        ];
        let naming = Naming {
            aliases: vec![
                ("find".to_string(), "search".to_string()),
                ("get".to_string(), "fetch".to_string()),
                ("web_find".to_string(), "web__search".to_string()),
                ("typo".to_string(), "fecth".to_string()),
            ],
            ..Naming::default()
        };
        let (names, diagnostics) = build(&tools, &naming);
        assert_eq!(names.resolve("find"), None);
        assert_eq!(names.resolve("get"), Some(2));
        assert_eq!(names.resolve("web_find"), Some(1));
        let config: Vec<(DiagnosticKind, &str)> = diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.kind != DiagnosticKind::ToolCollision)
            .map(|diagnostic| (diagnostic.kind, diagnostic.message.as_str()))
            .collect();
        assert_eq!(
            config,
            [
                (
                    DiagnosticKind::AliasAmbiguous,
                    "alias 'find' names 'search', which 2 tools register (aaa/search, \
                     web/search); it is not used: name one by its path"
                ),
                (
                    DiagnosticKind::AliasUnresolved,
                    "alias 'typo' names 'fecth', which no loaded tool answers to (did you \
                     mean 'fetch'?)"
                ),
            ]
        );
    }

    #[test]
    fn reserved_names_stay_with_the_embedder() {
        let tools = [tool("shell", "bash", false)];
        let naming = Naming {
            reserved: HashSet::from(["bash".to_string(), "sh".to_string()]),
            aliases: vec![("sh".to_string(), "shell/bash".to_string())],
            ..Naming::default()
        };
        let (names, diagnostics) = build(&tools, &naming);
        assert_eq!(names.resolve("bash"), None);
        assert_eq!(names.resolve("sh"), None);
        assert_eq!(names.resolve("shell/bash"), Some(0));
        assert_eq!(shown(&names), [("shell__bash", 0)]);
        assert_eq!(diagnostics.len(), 2);
        assert!(diagnostics[0].message.contains("reserved"));
        assert_eq!(diagnostics[1].severity, Severity::Error);
    }
}
