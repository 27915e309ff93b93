//! The names a registered tool answers to, and the names the model sees.
//!
//! Every tool answers to its path (`PLUGIN-ID/TOOL`) and to the wire name of its path
//! ([`crate::tool::names::wire_name`]); the first tool registered under a name also answers
//! to that plain name, unless the embedder reserved it; and each `[aliases]` entry adds
//! a name, which wins over a plain name. A name is looked up in that order: alias,
//! plain name, path, wire name.
//!
//! The model sees each tool that is not hidden once per alias; without an alias, under
//! its plain name when it holds it, else under the wire name of its path.
//!
//! A plugin tool that cannot have its plain name (another plugin's tool has it, or the
//! embedder reserved it) breaks clm-tool(5)'s rule that names are unique: an error,
//! although the tool stays reachable by its path. A tool that loses its plain name to
//! an alias the user wrote is only a warning.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::base::fast_map::FastMap;
use crate::base::wording::file_name;
use crate::runtime::diagnostic::{Diagnostic, DiagnosticKind, Severity};
use crate::tool::names::wire_name;

use super::ToolInfo;

/// How the user and the embedder name tools: aliases and reserved names.
#[derive(Debug, Clone, Default)]
pub(super) struct Naming {
    /// `[aliases]`: alias → target (a path or a plain name), in alias order.
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

/// Every name of every registered tool.
#[derive(Debug, Default)]
pub(super) struct Names {
    aliases: FastMap<String, usize>,
    plain: FastMap<String, usize>,
    paths: FastMap<String, usize>,
    wires: FastMap<String, usize>,
    listed: Vec<Listing>,
}

impl Names {
    /// The names of `tools` (in load order; `files[i]` is the file of `tools[i]`), and
    /// what is worth telling about them: plain names taken twice or reserved, aliases
    /// that name nothing or take a name.
    pub fn build(tools: &[ToolInfo], files: &[&Path], naming: &Naming) -> (Names, Vec<Diagnostic>) {
        let mut names = Names::default();
        let mut diagnostics = Vec::new();
        for (index, tool) in tools.iter().enumerate() {
            names.paths.insert(tool.path.clone(), index);
            let wire = wire_name(&tool.path);
            if let Some(&other) = names.wires.get(&wire) {
                diagnostics.push(Diagnostic {
                    file: files[index].to_path_buf(),
                    kind: DiagnosticKind::ToolCollision,
                    severity: Severity::Warning,
                    message: format!(
                        "tool {} has the wire name '{wire}' of tool {}; only its path reaches it",
                        tool.path, tools[other].path
                    ),
                });
            } else {
                names.wires.insert(wire, index);
            }
            if naming.reserved.contains(&tool.name) {
                diagnostics.push(Diagnostic {
                    file: files[index].to_path_buf(),
                    kind: DiagnosticKind::ToolCollision,
                    severity: Severity::Error,
                    message: format!(
                        "tool '{}' of plugin {} has a name reserved for a built-in tool; \
                         call it as {}",
                        tool.name,
                        file_name(files[index]),
                        tool.path
                    ),
                });
                continue;
            }
            match names.plain.get(&tool.name) {
                Some(&first) => diagnostics.push(Diagnostic {
                    file: files[index].to_path_buf(),
                    kind: DiagnosticKind::ToolCollision,
                    severity: Severity::Error,
                    message: format!(
                        "tool '{}' of plugin {} ({}) is also registered by plugin {} ({}), \
                         loaded first, which keeps the name; call it as {}",
                        tool.name,
                        file_name(files[index]),
                        tool.path,
                        file_name(files[first]),
                        tools[first].path,
                        tool.path
                    ),
                }),
                None => {
                    names.plain.insert(tool.name.clone(), index);
                }
            }
        }
        names.add_aliases(tools, files, naming, &mut diagnostics);
        names.list(tools, files, &mut diagnostics);
        (names, diagnostics)
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
        for (alias, target) in &naming.aliases {
            // A target is a tool's own name, never another alias.
            let found = self
                .plain
                .get(target)
                .or_else(|| self.paths.get(target))
                .or_else(|| self.wires.get(target));
            let Some(&index) = found else {
                diagnostics.push(config(
                    Severity::Warning,
                    DiagnosticKind::AliasUnresolved,
                    format!("alias '{alias}' names '{target}', which no loaded plugin registers"),
                ));
                continue;
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
            if let Some(&holder) = self.plain.get(alias)
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
                self.plain.remove(alias);
            }
            self.aliases.insert(alias.clone(), index);
        }
    }

    /// Lists each tool that is not hidden under the names the model sees.
    fn list(&mut self, tools: &[ToolInfo], files: &[&Path], diagnostics: &mut Vec<Diagnostic>) {
        let mut aliases_of: HashMap<usize, Vec<&str>> = HashMap::new();
        for (alias, &index) in &self.aliases {
            aliases_of.entry(index).or_default().push(alias);
        }
        for list in aliases_of.values_mut() {
            list.sort_unstable();
        }
        let mut listed = Vec::new();
        for (index, tool) in tools.iter().enumerate() {
            if tool.hidden {
                continue;
            }
            if let Some(aliases) = aliases_of.get(&index) {
                listed.extend(aliases.iter().map(|alias| Listing {
                    name: alias.to_string(),
                    tool: index,
                    alias: true,
                }));
                continue;
            }
            let name = if self.plain.get(&tool.name) == Some(&index) {
                tool.name.clone()
            } else {
                wire_name(&tool.path)
            };
            if self.resolve(&name) != Some(index) {
                diagnostics.push(Diagnostic {
                    file: files[index].to_path_buf(),
                    kind: DiagnosticKind::ToolCollision,
                    severity: Severity::Warning,
                    message: format!(
                        "tool {} is not shown to models: its wire name '{name}' calls another \
                         tool; give it an alias",
                        tool.path
                    ),
                });
                continue;
            }
            listed.push(Listing {
                name,
                tool: index,
                alias: false,
            });
        }
        self.listed = listed;
    }

    /// The tool `name` calls: an alias, a plain name, a path or a wire name.
    pub fn resolve(&self, name: &str) -> Option<usize> {
        self.aliases
            .get(name)
            .or_else(|| self.plain.get(name))
            .or_else(|| self.paths.get(name))
            .or_else(|| self.wires.get(name))
            .copied()
    }

    /// Whether the tool at `index` answers to its plain name.
    pub fn holds_plain_name(&self, tool: &ToolInfo, index: usize) -> bool {
        self.plain.get(&tool.name) == Some(&index)
    }

    /// The names the model sees, in load order.
    pub fn listed(&self) -> &[Listing] {
        &self.listed
    }

    /// Whether some name (alias, plain name, path, wire name) answers to `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_some()
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
