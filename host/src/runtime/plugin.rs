//! Plugin files and what loading one produced: where a file sits in the load order, its
//! sandbox, its manifest, and each tool it registered, checked and ready to call (or
//! rejected with the reason).

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::RawDir;

use crate::artifact::manifest;
use crate::base::fast_map::{FastMap, FastSet};
use crate::base::limits::{MAX_TOOLS_PER_PLUGIN, bounded_message, format_bytes};
use crate::base::wording::file_name;
use crate::config::Config;
use crate::output::cut::{self, OutputLimits};
use crate::runtime::admission::{Refusal, Sidecar};
use crate::sandbox::PluginHandle;
use crate::sandbox::wit::ToolSpec;
use crate::services::trusted::TrustedPaths;
use crate::tool::names;
use crate::tool::schema;
use crate::tool::schema_budget::{OverBudget, Spending};
use crate::tool::validation::{SchemaValidator, ValidatorCompiler};

use super::ToolInfo;
use super::builder::BuildError;
use super::loader::{LoadReport, Loaded};
use super::offered;
use crate::policy::plugin_info::PluginInfo;
use crate::runtime::diagnostic::{Diagnostic, DiagnosticKind, Severity};

/// Where plugins come from: the directories in the order given, then single files.
pub(super) struct PluginDirs {
    /// As given by the user (used in messages and to build file paths).
    pub given: Vec<PathBuf>,
    /// The same, canonical, to recognise paths reported by a file watcher.
    canonical: Vec<PathBuf>,
    /// Plugin files given one by one; they load after the directories.
    files: Vec<PathBuf>,
}

impl PluginDirs {
    /// Where plugins come from, the directories resolved with `resolved`, which the
    /// build compared them with the file root through. That each exists is checked by
    /// [`PluginDirs::discover`], which opens them.
    pub fn new(
        given: Vec<PathBuf>,
        files: Vec<PathBuf>,
        resolved: &mut TrustedPaths,
    ) -> PluginDirs {
        let canonical = given.iter().map(|dir| resolved.resolve(dir)).collect();
        PluginDirs {
            given,
            canonical,
            files,
        }
    }

    /// The plugin files: `*.lua` and `*.wasm`, each directory in file-name order, then
    /// the single files in the order given. A directory or file that does not exist is
    /// the user's mistake.
    pub fn discover(&self) -> Result<Vec<PluginFile>, BuildError> {
        let mut found = Vec::new();
        for (dir_index, dir) in self.given.iter().enumerate() {
            let fd = open_dir(dir)?;
            let mut buffer = Vec::with_capacity(LISTING_BUFFER_BYTES);
            let mut entries = RawDir::new(fd, buffer.spare_capacity_mut());
            let mut in_dir = Vec::new();
            // The `NAME.lua` of every `NAME.lua.toml` listed (whatever its type: a
            // sidecar that is a symlink, or not a file, is the loader's to report).
            let mut sidecars = Vec::new();
            // A read error ends the listing, as it does `std::fs::read_dir`'s.
            while let Some(Ok(entry)) = entries.next() {
                let name = OsStr::from_bytes(entry.file_name().to_bytes());
                if name == "." || name == ".." {
                    continue;
                }
                if let Some(plugin) = sidecar_of(name) {
                    sidecars.push(case_folded(plugin));
                } else if is_plugin_file(Path::new(name)) {
                    let path = dir.join(name);
                    if is_file(&path, entry.file_type()) {
                        in_dir.extend(PluginFile::new(dir_index, path));
                    }
                }
            }
            // Compared without case: on a case-insensitive filesystem `Hello.lua.toml`
            // is the sidecar of `hello.lua`; where case matters, the loader looks and
            // finds none, as it would have without the listing.
            sidecars.sort_unstable();
            for file in &mut in_dir {
                if sidecars.is_empty() || sidecars.binary_search(&case_folded(&file.name)).is_err()
                {
                    file.sidecar = Sidecar::NotListed;
                }
            }
            in_dir.sort_by(|a, b| a.name.cmp(&b.name));
            found.extend(in_dir);
        }
        if let Some(missing) = self.files.iter().find(|file| !file.is_file()) {
            return Err(BuildError::MissingFile(missing.clone()));
        }
        let after_dirs = self.given.len();
        found.extend(
            self.files
                .iter()
                .enumerate()
                .filter_map(|(index, path)| PluginFile::new(after_dirs + index, path.clone())),
        );
        Ok(found)
    }

    /// The plugin file `path` concerns, if it is a `*.lua` or `*.wasm` file directly in
    /// one of the directories, or the sidecar manifest `NAME.lua.toml` of one (whether
    /// or not it exists now).
    pub fn locate(&self, path: &Path) -> Option<PluginFile> {
        let name = path.file_name()?.to_str()?;
        let name = name.strip_suffix(".toml").unwrap_or(name);
        let path = path.with_file_name(name);
        if !is_plugin_file(&path) {
            return None;
        }
        let parent = match path.parent()? {
            parent if parent.as_os_str().is_empty() => Path::new("."),
            parent => parent,
        };
        let parent = parent.canonicalize().ok()?;
        let dir = self.canonical.iter().position(|dir| *dir == parent)?;
        PluginFile::new(dir, self.given[dir].join(name))
    }
}

/// The buffer a plugin directory is listed through: a few hundred entries per system
/// call, and room for the longest name (255 bytes) many times over.
const LISTING_BUFFER_BYTES: usize = 8 * 1024;

/// Plugin directory `dir`, opened to be listed. Opened directly, without a `stat`
/// first (opening fails on what is not a directory) and without the C library's
/// `opendir`, which asks for the directory's `stat` as well; when opening fails, the
/// `stat` tells a missing directory from an unreadable one.
fn open_dir(dir: &Path) -> Result<OwnedFd, BuildError> {
    use rustix::fs::{Mode, OFlags};

    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    rustix::fs::open(dir, flags, Mode::empty()).map_err(|errno| {
        if dir.is_dir() {
            BuildError::UnreadableDirectory(dir.to_path_buf(), errno.into())
        } else {
            BuildError::MissingDirectory(dir.to_path_buf())
        }
    })
}

/// Whether the directory entry `path`, of type `kind` as the listing gave it, is a
/// regular file or a symlink to one: only a symlink (or an entry whose type the
/// filesystem does not report) costs a `stat`.
fn is_file(path: &Path, kind: rustix::fs::FileType) -> bool {
    use rustix::fs::FileType;

    match kind {
        FileType::RegularFile => true,
        FileType::Symlink | FileType::Unknown => path.is_file(),
        _ => false,
    }
}

/// `NAME.lua` when `name` is `NAME.lua.toml`, the sidecar manifest of a Lua plugin.
fn sidecar_of(name: &OsStr) -> Option<&OsStr> {
    let plugin = name.as_bytes().strip_suffix(b".toml")?;
    plugin.ends_with(b".lua").then(|| OsStr::from_bytes(plugin))
}

fn case_folded(name: &OsStr) -> String {
    name.to_string_lossy().to_lowercase()
}

fn is_plugin_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "lua" || extension == "wasm")
}

/// A plugin file's place: its directory (by position; single files come after every
/// directory) and its name there. Plugins load in the order of (directory, name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PluginFile {
    dir: usize,
    name: OsString,
    pub path: PathBuf,
    /// The id its name gives ([`manifest::file_id`]): the only id it may load as.
    pub id: String,
    /// What discovery saw of its sidecar manifest.
    pub sidecar: Sidecar,
}

impl PluginFile {
    fn new(dir: usize, path: PathBuf) -> Option<PluginFile> {
        let name = path.file_name()?.to_os_string();
        Some(PluginFile {
            dir,
            name,
            id: manifest::file_id(&path),
            path,
            sidecar: Sidecar::Unknown,
        })
    }

    pub fn order(&self) -> (usize, &OsStr) {
        (self.dir, &self.name)
    }

    pub fn display_name(&self) -> String {
        self.name.to_string_lossy().into_owned()
    }
}

/// What the user is told of `file`, refused by `refusal`.
pub(super) fn refusal_diagnostic(file: &PluginFile, refusal: Refusal) -> Diagnostic {
    let verb = match refusal.kind {
        DiagnosticKind::LoadFailed => "failed to load",
        _ => "was refused",
    };
    Diagnostic::error(
        file.path.clone(),
        refusal.kind,
        format!(
            "plugin {} {verb}: {}",
            file.display_name(),
            bounded_message(refusal.message)
        ),
    )
}

/// The ids the names of a runtime's plugin files give, each with its files: what a
/// plugin's id is checked against before any of its code runs, so that no plugin takes
/// another file's id (and with it that plugin's settings and files).
#[derive(Debug, Default)]
pub(super) struct FileIds(FastMap<String, Vec<PathBuf>>);

impl FileIds {
    /// The ids of `files`.
    pub fn of<'a>(files: impl IntoIterator<Item = &'a PluginFile>) -> FileIds {
        let mut ids: FastMap<String, Vec<PathBuf>> = FastMap::default();
        for file in files {
            ids.entry(file.id.clone())
                .or_default()
                .push(file.path.clone());
        }
        FileIds(ids)
    }

    /// The files other than `path` whose name gives `id`.
    pub fn others<'a>(&'a self, id: &str, path: &'a Path) -> impl Iterator<Item = &'a Path> {
        self.0
            .get(id)
            .into_iter()
            .flatten()
            .map(PathBuf::as_path)
            .filter(move |other| *other != path)
    }

    /// Why `file` is refused when another file's name gives its id too; `None` when
    /// none does.
    pub fn shared(&self, file: &PluginFile) -> Option<String> {
        let sharing: Vec<String> = self
            .others(&file.id, &file.path)
            .map(|other| format!("plugin {}", file_name(other)))
            .collect();
        (!sharing.is_empty()).then(|| {
            format!(
                "its name gives the id '{}', as the name of {} does; an id names one plugin, \
                 so none of them is loaded (rename all but one)",
                file.id,
                sharing.join(" and ")
            )
        })
    }
}

/// One plugin file as loaded: its sandbox and manifest (none if it did not load), and
/// its tools, each ready to register or rejected.
pub(super) struct PluginEntry {
    pub file: PluginFile,
    /// What a plugin that loaded is (its manifest and grants); `None` when it was
    /// refused or failed. Shared with the runtime's list and every tool's gate, which
    /// would otherwise hold a copy each.
    pub info: Option<Arc<PluginInfo>>,
    /// What loading said about the plugin as a whole (refused, failed, capabilities cut).
    pub diagnostics: Vec<Diagnostic>,
    /// Its sandbox, when it loaded.
    pub handle: Option<PluginHandle>,
    /// The tools in registration order: ready, or rejected with the reason.
    pub tools: Vec<Result<CheckedTool, RejectedTool>>,
    /// For a plugin that did not load: the tools it would have offered, so that calling
    /// one says why it is unavailable (see `offered`).
    pub offered: Vec<String>,
}

/// A tool the host refused to register (an invalid name or schema), and why.
#[derive(Clone)]
pub(super) struct RejectedTool {
    /// The name it was registered under.
    pub name: String,
    /// Why it was refused.
    pub diagnostic: Diagnostic,
}

/// A tool ready to register: what callers see and what the runtime needs to call it.
#[derive(Clone)]
pub(super) struct CheckedTool {
    pub info: ToolInfo,
    pub entry: ToolEntry,
}

/// How to call a registered tool.
#[derive(Clone)]
pub(super) struct ToolEntry {
    pub handle: PluginHandle,
    pub validator: Option<Arc<SchemaValidator>>,
    pub output_validator: Option<Arc<SchemaValidator>>,
    /// How much of a result the model sees.
    pub output: OutputLimits,
    pub file: PathBuf,
}

impl PluginEntry {
    /// The names of the tools this plugin registered (rejected ones included), or would
    /// have offered if it did not load.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .map(|tool| match tool {
                Ok(tool) => tool.info.name.as_str(),
                Err(rejected) => rejected.name.as_str(),
            })
            .chain(self.offered.iter().map(String::as_str))
    }

    /// A plugin whose load never reported back.
    pub fn unfinished(file: PluginFile, message: &str) -> PluginEntry {
        let refusal = Refusal::new(DiagnosticKind::LoadFailed, message);
        PluginEntry::refused(file, Vec::new(), refusal)
    }

    fn refused(
        file: PluginFile,
        mut diagnostics: Vec<Diagnostic>,
        refusal: Refusal,
    ) -> PluginEntry {
        diagnostics.push(refusal_diagnostic(&file, refusal));
        let offered = offered::in_file(&file.path);
        PluginEntry {
            file,
            info: None,
            diagnostics,
            handle: None,
            tools: Vec::new(),
            offered,
        }
    }

    /// Checks what a load produced: the number of tools, and each tool's name,
    /// description and schema (a component other than the Lua guest hands over
    /// whatever it likes, so every spec is checked here, whatever produced it);
    /// compiles the validators, under the plugin's schema budget.
    pub fn from_report(file: PluginFile, report: LoadReport, config: &Config) -> PluginEntry {
        let display = file.display_name();
        let mut diagnostics: Vec<Diagnostic> = report
            .warnings
            .into_iter()
            .map(|(kind, severity, message)| Diagnostic {
                file: file.path.clone(),
                kind,
                severity,
                message: format!("plugin {display}: {message}"),
            })
            .collect();
        let Loaded {
            handle,
            specs,
            manifest,
            grants,
            digest,
        } = match report.outcome {
            Ok(loaded) => loaded,
            Err(refusal) => return PluginEntry::refused(file, diagnostics, refusal),
        };
        if specs.len() > MAX_TOOLS_PER_PLUGIN {
            let refusal = Refusal::new(
                DiagnosticKind::LoadFailed,
                format!(
                    "it registered {} tools; a plugin may register at most {MAX_TOOLS_PER_PLUGIN}",
                    specs.len()
                ),
            );
            return PluginEntry::refused(file, diagnostics, refusal);
        }
        let mut checks = ToolChecks {
            file: &file,
            display: &display,
            plugin: &manifest.id,
            config,
            own: FastSet::default(),
            compiler: ValidatorCompiler::new(grants.limits().schemas.pattern_bytes),
            spending: Spending::new(grants.limits().schemas.clone()),
            warnings: Vec::new(),
        };
        let tools = specs
            .into_iter()
            .map(|spec| checks.check(spec, &handle))
            .collect();
        diagnostics.append(&mut checks.warnings);
        PluginEntry {
            info: Some(Arc::new(PluginInfo {
                file: file.path.clone(),
                manifest,
                grants,
                digest,
            })),
            file,
            diagnostics,
            handle: Some(handle),
            tools,
            offered: Vec::new(),
        }
    }
}

/// The checks of one plugin's tool specs, in registration order.
struct ToolChecks<'a> {
    file: &'a PluginFile,
    display: &'a str,
    /// The plugin's id.
    plugin: &'a str,
    config: &'a Config,
    /// The names registered so far.
    own: FastSet<String>,
    compiler: ValidatorCompiler,
    spending: Spending,
    /// What looked odd but did not stop a tool (a description cut).
    warnings: Vec<Diagnostic>,
}

impl ToolChecks<'_> {
    /// `spec` ready to register, or the reason it is not.
    fn check(
        &mut self,
        mut spec: ToolSpec,
        handle: &PluginHandle,
    ) -> Result<CheckedTool, RejectedTool> {
        let display = self.display;
        let name = spec.name.clone();
        let rejected = |kind: DiagnosticKind, message: String| RejectedTool {
            name: name.clone(),
            diagnostic: Diagnostic::error(self.file.path.clone(), kind, message),
        };
        if !schema::is_valid_tool_name(&spec.name) {
            return Err(rejected(
                DiagnosticKind::ToolRejected,
                format!(
                    "tool '{}' of plugin {display} has an invalid name (use 1 to {} letters, digits, '_' or '-')",
                    spec.name.escape_debug(),
                    schema::MAX_TOOL_NAME
                ),
            ));
        }
        if !self.own.insert(spec.name.clone()) {
            return Err(rejected(
                DiagnosticKind::ToolCollision,
                format!(
                    "plugin {display} registers tool '{}' twice; the first one stays",
                    spec.name
                ),
            ));
        }
        let max_description = self.config.description_bytes_for(self.plugin, &spec.name);
        if let Some(cut) = cut::cut_description(&spec.description, max_description) {
            self.warnings.push(Diagnostic {
                file: self.file.path.clone(),
                kind: DiagnosticKind::DescriptionCut,
                severity: Severity::Warning,
                message: format!(
                    "tool '{}' of plugin {display} has a description of {} bytes; the model sees its first {}",
                    spec.name,
                    spec.description.len(),
                    format_bytes(max_description as u64)
                ),
            });
            spec.description = cut;
        }
        if let Some(title) = &mut spec.title
            && let Some(cut) = cut::cut_description(title, cut::MAX_TITLE_BYTES)
        {
            self.warnings.push(Diagnostic {
                file: self.file.path.clone(),
                kind: DiagnosticKind::DescriptionCut,
                severity: Severity::Warning,
                message: format!(
                    "tool '{}' of plugin {display} has a title of {} bytes; the model sees its first {}",
                    spec.name,
                    title.len(),
                    format_bytes(cut::MAX_TITLE_BYTES as u64)
                ),
            });
            *title = cut;
        }
        let name = &spec.name;
        let invalid = |problem: String| {
            rejected(
                DiagnosticKind::ToolRejected,
                format!("tool '{name}' of plugin {display} {problem}"),
            )
        };
        let (params_schema, validator) = self
            .schema("schema", spec.params_schema.as_deref())
            .map_err(&invalid)?;
        let (output_schema, output_validator) = self
            .schema("output schema", spec.output_schema.as_deref())
            .map_err(&invalid)?;
        if let Some(schema) = &output_schema
            && schema.get("type") != Some(&serde_json::json!("object"))
        {
            return Err(invalid(
                "has an output schema whose type is not \"object\" (a structured result is a JSON object, as MCP requires) and is not registered".to_string(),
            ));
        }
        let output = self.config.output_for(self.plugin, &spec.name);
        Ok(CheckedTool {
            info: ToolInfo {
                path: names::tool_path(handle.name(), &spec.name),
                name: spec.name,
                description: spec.description,
                params_schema,
                timeout: spec.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
                no_prompt: spec.no_prompt,
                hidden: spec.hidden,
                title: spec.title.filter(|title| !title.is_empty()),
                output_schema,
                plugin: handle.name().to_string(),
            },
            entry: ToolEntry {
                handle: handle.clone(),
                validator,
                output_validator,
                output,
                file: self.file.path.clone(),
            },
        })
    }
}

impl ToolChecks<'_> {
    /// A schema the plugin gave as JSON text (`field` names it: "schema", "output
    /// schema"), within the plugin's schema budget, repaired and compiled. The error
    /// completes "tool 'T' of plugin P ...".
    fn schema(
        &mut self,
        field: &str,
        text: Option<&str>,
    ) -> Result<(Option<serde_json::Value>, Option<Arc<SchemaValidator>>), String> {
        let Some(text) = text else {
            return Ok((None, None));
        };
        let over_budget =
            |over: OverBudget| format!("is over its schema budget and is not registered: {over}");
        self.spending.check_time().map_err(over_budget)?;
        self.spending.admit_text(text).map_err(over_budget)?;
        let article = if field.starts_with('o') { "an" } else { "a" };
        let schema = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(schema @ serde_json::Value::Object(_)) => schema::repair(schema),
            Ok(_) => return Err(format!("has {article} {field} that is not a JSON object")),
            Err(error) => return Err(format!("has an unreadable {field}: {error}")),
        };
        self.spending.admit(&schema).map_err(over_budget)?;
        let validator = self
            .compiler
            .compile(&schema)
            .map_err(|reason| format!("has an invalid {field} and is not registered: {reason}"))?;
        Ok((Some(schema), Some(Arc::new(validator))))
    }
}

/// A plugin file read again (or found gone), ready to take its place in a
/// [`Runtime`](super::Runtime) with [`Runtime::apply`](super::Runtime::apply). Made by
/// [`Runtime::load_file`](super::Runtime::load_file).
pub struct PluginUpdate {
    pub(super) file: PluginFile,
    /// The plugin as loaded now; none when the file is gone.
    pub(super) plugin: Option<PluginEntry>,
}

impl PluginUpdate {
    /// The plugin file concerned.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Whether the file is gone (the update unregisters its plugin).
    pub fn is_removal(&self) -> bool {
        self.plugin.is_none()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// Discovery reads each entry's type from the directory listing: a regular file and
    /// a symlink to one are plugins, while a directory or a symlink to a directory with
    /// a plugin's name is not, and other extensions are skipped.
    #[test]
    fn discovery_takes_plugin_files_and_symlinks_to_them_and_nothing_else() {
        let base = tempfile::tempdir().expect("tempdir");
        let dir = base.path().join("plugins");
        std::fs::create_dir(&dir).expect("dir");
        let elsewhere = base.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("dir");
        std::fs::write(dir.join("a.lua"), "").expect("a.lua");
        std::fs::write(elsewhere.join("real.lua"), "").expect("real.lua");
        symlink(elsewhere.join("real.lua"), dir.join("b.lua")).expect("symlink");
        symlink(&elsewhere, dir.join("c.lua")).expect("symlink to a directory");
        symlink(base.path().join("missing.lua"), dir.join("d.lua")).expect("dangling");
        std::fs::create_dir(dir.join("e.wasm")).expect("a directory named e.wasm");
        std::fs::write(dir.join("a.lua.toml"), "").expect("a sidecar");
        std::fs::write(dir.join("notes.txt"), "").expect("notes");
        let dirs = PluginDirs::new(vec![dir], Vec::new(), &mut TrustedPaths::default());
        let found: Vec<String> = dirs
            .discover()
            .expect("discover")
            .iter()
            .map(PluginFile::display_name)
            .collect();
        assert_eq!(found, ["a.lua", "b.lua"]);
    }

    /// A `.lua` found in a directory whose listing has no sidecar for it is loaded
    /// without looking for one; with one listed (a file, a symlink, even a dangling one,
    /// or a name differing in case, which a case-insensitive filesystem would match) the
    /// loader looks, as it does for a plugin file given by name.
    #[test]
    fn discovery_says_which_plugins_have_no_sidecar_listed() {
        let base = tempfile::tempdir().expect("tempdir");
        let dir = base.path().join("plugins");
        std::fs::create_dir(&dir).expect("dir");
        for name in [
            "plain.lua",
            "file.lua",
            "link.lua",
            "dangling.lua",
            "case.lua",
        ] {
            std::fs::write(dir.join(name), "").expect("plugin");
        }
        std::fs::write(dir.join("file.lua.toml"), "").expect("sidecar");
        std::fs::write(base.path().join("real.toml"), "").expect("sidecar target");
        symlink(base.path().join("real.toml"), dir.join("link.lua.toml")).expect("symlink");
        symlink(base.path().join("missing"), dir.join("dangling.lua.toml")).expect("dangling");
        std::fs::write(dir.join("CASE.lua.toml"), "").expect("sidecar in upper case");
        std::fs::write(dir.join("orphan.lua.toml"), "").expect("sidecar of no plugin");
        std::fs::write(base.path().join("single.lua"), "").expect("single file");
        let dirs = PluginDirs::new(
            vec![dir],
            vec![base.path().join("single.lua")],
            &mut TrustedPaths::default(),
        );
        let found: Vec<(String, Sidecar)> = dirs
            .discover()
            .expect("discover")
            .iter()
            .map(|file| (file.display_name(), file.sidecar))
            .collect();
        let expected = [
            ("case.lua", Sidecar::Unknown),
            ("dangling.lua", Sidecar::Unknown),
            ("file.lua", Sidecar::Unknown),
            ("link.lua", Sidecar::Unknown),
            ("plain.lua", Sidecar::NotListed),
            ("single.lua", Sidecar::Unknown),
        ]
        .map(|(name, sidecar)| (name.to_string(), sidecar));
        assert_eq!(found, expected);
    }

    /// A missing directory or file is the user's mistake, named in the error, whether
    /// it does not exist or is not a directory (resp. a file).
    #[test]
    fn discovery_reports_missing_directories_and_files() {
        let base = tempfile::tempdir().expect("tempdir");
        let file = base.path().join("plugin.lua");
        std::fs::write(&file, "").expect("plugin");
        let discover = |dirs: Vec<PathBuf>, files: Vec<PathBuf>| {
            PluginDirs::new(dirs, files, &mut TrustedPaths::default()).discover()
        };
        let missing = base.path().join("missing");
        assert!(matches!(
            discover(vec![missing.clone()], Vec::new()),
            Err(BuildError::MissingDirectory(dir)) if dir == missing
        ));
        assert!(matches!(
            discover(vec![file.clone()], Vec::new()),
            Err(BuildError::MissingDirectory(dir)) if dir == file
        ));
        // Directories are checked before files, in the order given.
        assert!(matches!(
            discover(vec![missing.clone()], vec![missing.clone()]),
            Err(BuildError::MissingDirectory(_))
        ));
        assert!(matches!(
            discover(vec![base.path().to_path_buf()], vec![base.path().to_path_buf()]),
            Err(BuildError::MissingFile(path)) if path == base.path()
        ));
        let found = discover(Vec::new(), vec![file]).expect("a plugin file");
        assert_eq!(found.len(), 1);
    }
}
