//! The configuration file (`--config FILE`, TOML).
//!
//! ```toml
//! [tools.weather]            # becomes clm.config in the plugin whose id (for a .lua
//! api_key = "..."            # without a manifest: its file stem as an id) or one of whose tools is `weather`
//! description = "..."        # also what the model reads about tool `weather` (a name,
//!                            # path or alias), instead of the plugin's description
//! max_concurrent = 2         # toolcell's, not the plugin's: calls of tool `weather` at once
//!
//! [aliases]                  # the model sees (and calls) a tool under these names
//! read_note = "acme/notes/note_read"   # a tool path, or a name
//! get_note = "acme/notes/note_read"
//!
//! [permissions]              # which calls run, ask first, or are refused (see `policy`)
//! default = "ask"
//! allow = ["hello", "units/*", "$readonly"]
//! deny = ["danger*"]
//!
//! [limits]                   # every plugin (all keys optional)
//! max_concurrent = 0         # calls of the whole runtime at once (0: no cap)
//! memory_mib = 8
//! call_timeout_ms = 30000
//! load_timeout_ms = 500
//! fuel = 100000000000
//! schema_max_bytes = 65536   # and the other budgets of docs/budgets.md
//!
//! [http]                     # every plugin (all keys optional)
//! allow = ["127.0.0.1", "*.example.com:8443"]
//! public = true
//! timeout_ms = 30000
//! max_response_bytes = 4194304
//! max_redirects = 5
//!
//! [files]                    # every plugin: the most file access it may get
//! access = "read-write"      # "none", "read-only" or "read-write"
//! root = "workspace"         # the file root when --root is not given (relative to
//!                            # this file's directory)
//!
//! [output]                   # what the model sees (see `output`; all keys optional)
//! untrusted = "envelope"     # or "plain" (the default); see `envelope`
//! max_lines = 2000
//! max_bytes = 51200
//! max_binary_bytes = 1048576 # a result's images, audio and embedded resources together
//! max_description_bytes = 4096
//! results_dir = "/path"      # where whole outputs are kept (relative: to this file's directory); default: the cache's results/
//! results_max_bytes = 104857600
//! [output.tools.report]      # one tool, over [plugins.ID.output] and [output]
//! max_lines = 10000
//!
//! [trust]                    # signatures (see `signature`)
//! keys = ["BASE64 public key"]
//! unsigned = "allow"         # or "refuse"
//!
//! [plugins.weather]          # one plugin (by id)
//! max_concurrent = 4         # its calls at once
//! [plugins.weather.limits]   # over the global values
//! memory_mib = 16
//! [plugins.weather.http]
//! allow = ["api.weather.example"]
//! [plugins.weather.files]
//! access = "read-only"
//! [plugins.weather.output]
//! max_bytes = 102400
//! untrusted = "plain"        # a trusted plugin's output stays plain
//! ```

pub mod grants;
pub(crate) mod permissions;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::artifact::manifest::check_id;
use crate::artifact::signature::TrustPolicy;
use crate::base::limits::{Limits, MIB};
use crate::config::permissions::{CommandLineRules, PermissionsSection, Rules};
use crate::output::cut::{self, OutputLimits};
use crate::output::envelope::{OutputPolicy, UntrustedOutput};
use crate::output::results::{self, ResultStore};
use crate::services::files::FileAccess;
use crate::services::http::{HostGrant, HostGrantError, HttpPolicy, HttpSettings};
use crate::tool::names::{has_wire_separator, split_path};
use crate::tool::schema::{MAX_TOOL_NAME, is_valid_tool_name};

/// The key of `[tools.NAME]` that toolcell reads (a concurrency cap) and keeps out of
/// the plugin's `clm.config`.
const TOOL_MAX_CONCURRENT: &str = "max_concurrent";

/// A parsed configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[tools.NAME]`: each plugin's `clm.config` (less `max_concurrent`, which is
    /// toolcell's); a `description` there is also what the model reads about tool NAME.
    /// And `[tools] deferred`.
    #[serde(default)]
    pub tools: ToolsSection,
    /// `[aliases]`: ALIAS = "TOOL" (a path or a name); the model sees the tool as ALIAS.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// `[permissions]`: the rules of the permission policy.
    #[serde(default)]
    pub permissions: PermissionsSection,
    /// `[limits]` for every plugin.
    #[serde(default)]
    pub limits: LimitsSection,
    /// `[http]` for every plugin.
    #[serde(default)]
    pub http: HttpSection,
    /// `[files]` for every plugin.
    #[serde(default)]
    pub files: FilesSection,
    /// `[trust]`: trusted signing keys and whether unsigned plugins load.
    #[serde(default)]
    pub trust: TrustPolicy,
    /// `[output]`: what the model sees of results and descriptions, for every tool.
    #[serde(default)]
    pub output: OutputSection,
    /// `[plugins.ID]`: settings for one plugin.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginSection>,
    /// The file this configuration was read from, if any: the host trusts it, so
    /// plugins may not read or change it.
    #[serde(skip)]
    path: Option<PathBuf>,
}

/// `[tools]`: a table per plugin or tool, and one setting of toolcell's among them.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct ToolsSection {
    /// `[tools] deferred`: whether tools are listed only once `search_tools` finds
    /// them, unless their plugin's `[plugins.ID] defer` says otherwise.
    pub deferred: Option<bool>,
    /// `[tools.NAME]`, by NAME.
    #[serde(flatten)]
    pub tables: BTreeMap<String, toml::Table>,
}

/// `[files]`: the file root and the most file access a plugin may be granted.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesSection {
    /// The access allowed; read-write (clm-tool(5)'s) when absent.
    pub access: Option<FileAccess>,
    /// The file root when none is given on the command line, relative to the config
    /// file's directory.
    pub root: Option<PathBuf>,
}

/// `[plugins.ID.files]`: the most file access one plugin may be granted, and its root.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginFilesSection {
    /// The access allowed, over `[files]`.
    pub access: Option<FileAccess>,
    /// This plugin's root, over `--root` and `[files] root`, relative to the config
    /// file's directory.
    pub root: Option<PathBuf>,
}

/// `[limits]`: overrides of the default limits.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// The plugin's memory limit, in MiB.
    pub memory_mib: Option<u64>,
    /// Default per-call deadline, in milliseconds.
    pub call_timeout_ms: Option<u64>,
    /// Deadline of load-time code, in milliseconds.
    pub load_timeout_ms: Option<u64>,
    /// Fuel per call.
    pub fuel: Option<u64>,
    /// Largest `params_schema` of one tool, in bytes of JSON.
    pub schema_max_bytes: Option<usize>,
    /// Largest total of a plugin's schemas, in bytes of JSON.
    pub schemas_max_bytes: Option<usize>,
    /// Deepest nesting of one schema.
    pub schema_max_depth: Option<usize>,
    /// Most memory one schema pattern may compile to, in bytes.
    pub pattern_max_bytes: Option<usize>,
    /// Most memory a plugin's schema patterns may compile to together, in bytes.
    pub patterns_max_bytes: Option<usize>,
    /// Most time compiling a plugin's schemas may take, in milliseconds.
    pub schema_compile_ms: Option<u64>,
    /// Most log bytes one call (or the load) may write.
    pub log_call_bytes: Option<usize>,
    /// The plugin's sustained log rate, in bytes per second.
    pub log_bytes_per_second: Option<usize>,
    /// Log bytes the plugin may write at once beyond its rate.
    pub log_burst_bytes: Option<usize>,
    /// In `[limits]` only: how many calls of the whole runtime run at once (0: no cap).
    pub max_concurrent: Option<usize>,
    /// Questions one call may ask the user (0: the plugin may not ask).
    pub questions_per_call: Option<u32>,
}

/// `[http]`: the HTTP policy and bounds.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// Hosts granted beyond the default policy (`HOST[:PORT]`, `*.domain[:PORT]`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Whether hosts that are not granted may be reached when they are public.
    pub public: Option<bool>,
    /// Whole-request timeout, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Largest accepted response body, in bytes.
    pub max_response_bytes: Option<u64>,
    /// Most redirects followed per request.
    pub max_redirects: Option<usize>,
}

/// `[output]`: the output policy (see `output`), the result store (`results`), and
/// the envelope of untrusted output (see `envelope`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Whether output is enveloped as untrusted; plain when absent.
    pub untrusted: Option<UntrustedOutput>,
    /// The most lines of a result the model sees.
    pub max_lines: Option<usize>,
    /// The most bytes of a result the model sees.
    pub max_bytes: Option<usize>,
    /// The most bytes of a result's binary parts the model gets.
    pub max_binary_bytes: Option<usize>,
    /// The longest tool description the model sees, in bytes.
    pub max_description_bytes: Option<usize>,
    /// Where the whole outputs of cut results are kept (default: `results/` in the
    /// compiled-code cache's directory).
    pub results_dir: Option<PathBuf>,
    /// The most the result store holds, in bytes; the oldest results go first.
    pub results_max_bytes: Option<u64>,
    /// `[output.tools.NAME]`: one tool, over the plugin's and the global values.
    #[serde(default)]
    pub tools: BTreeMap<String, OutputLimitsSection>,
}

/// The output limits of one tool (`[output.tools.NAME]`), or of a plugin or every
/// tool as a layer under it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputLimitsSection {
    /// The most lines of a result the model sees.
    pub max_lines: Option<usize>,
    /// The most bytes of a result the model sees.
    pub max_bytes: Option<usize>,
    /// The most bytes of a result's binary parts the model gets.
    pub max_binary_bytes: Option<usize>,
    /// The longest tool description the model sees, in bytes.
    pub max_description_bytes: Option<usize>,
}

/// `[plugins.ID]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSection {
    /// How many calls of this plugin run at once (0: no cap).
    pub max_concurrent: Option<usize>,
    /// Limits for this plugin, over `[limits]`.
    #[serde(default)]
    pub limits: LimitsSection,
    /// HTTP settings for this plugin, over `[http]`; its `allow` adds to the global list.
    #[serde(default)]
    pub http: HttpSection,
    /// File access for this plugin, over `[files]`.
    #[serde(default)]
    pub files: PluginFilesSection,
    /// Output limits for this plugin's tools, and whether its output is enveloped,
    /// over `[output]`.
    #[serde(default)]
    pub output: PluginOutputSection,
    /// Whether this plugin's tools are listed only once `search_tools` finds them,
    /// over `[tools] deferred`.
    pub defer: Option<bool>,
}

/// `[plugins.ID.output]`: one plugin's output limits, and whether its output is
/// enveloped as untrusted.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginOutputSection {
    /// The most lines of a result the model sees.
    pub max_lines: Option<usize>,
    /// The most bytes of a result the model sees.
    pub max_bytes: Option<usize>,
    /// The most bytes of a result's binary parts the model gets.
    pub max_binary_bytes: Option<usize>,
    /// The longest tool description the model sees, in bytes.
    pub max_description_bytes: Option<usize>,
    /// Whether this plugin's output is enveloped as untrusted, over `[output]`.
    pub untrusted: Option<UntrustedOutput>,
}

impl PluginOutputSection {
    /// Its output limits.
    fn limits(&self) -> OutputLimitsSection {
        OutputLimitsSection {
            max_lines: self.max_lines,
            max_bytes: self.max_bytes,
            max_binary_bytes: self.max_binary_bytes,
            max_description_bytes: self.max_description_bytes,
        }
    }
}

/// The key of `[tools.NAME]` the host reads as the tool's description; the plugin
/// still finds it in `clm.config` with the rest of the table.
const DESCRIPTION_KEY: &str = "description";

/// An `allow` entry of an `[http]` section that is not a host grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("http.allow entry {entry:?}: {source}")]
pub struct BadAllowEntry {
    entry: String,
    source: HostGrantError,
}

/// A configuration file that could not be used; the text says what and where.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl Config {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            ConfigError(format!(
                "cannot read the config file {}: {error}",
                path.display()
            ))
        })?;
        let mut config = Self::parse(&text).map_err(|ConfigError(message)| {
            ConfigError(format!("{}: {message}", path.display()))
        })?;
        config.path = Some(path.to_path_buf());
        Ok(config)
    }

    /// The file this configuration was read from (by [`Config::load`]).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// `[files] root`, relative paths taken from the config file's directory.
    pub fn files_root(&self) -> Option<PathBuf> {
        Some(self.relative_to_file(self.files.root.as_ref()?))
    }

    /// `[plugins.ID.files] root` by plugin id, relative paths taken from the config
    /// file's directory.
    pub fn plugin_roots(&self) -> impl Iterator<Item = (&str, PathBuf)> {
        self.plugins.iter().filter_map(|(id, plugin)| {
            Some((
                id.as_str(),
                self.relative_to_file(plugin.files.root.as_ref()?),
            ))
        })
    }

    /// `path` as the config file means it: a relative path is taken from the config
    /// file's directory, whatever the current directory (of `serve`, or of
    /// `toolcell result --config` later).
    fn relative_to_file(&self, path: &Path) -> PathBuf {
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""));
        base.join(path)
    }

    /// Parses configuration text and checks every value.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let config: Config =
            toml::from_str(text).map_err(|error| ConfigError(one_line(&error.to_string())))?;
        config
            .http
            .policy(&[])
            .map_err(|error| ConfigError(error.to_string()))?;
        for (name, plugin) in &config.plugins {
            plugin
                .http
                .policy(&[])
                .map_err(|error| ConfigError(format!("[plugins.{name}.http] {error}")))?;
            if plugin.limits.max_concurrent.is_some() {
                return Err(ConfigError(format!(
                    "[plugins.{name}.limits] max_concurrent: a plugin's cap goes in [plugins.{name}] max_concurrent"
                )));
            }
        }
        for (alias, target) in &config.aliases {
            if !is_valid_tool_name(alias) {
                return Err(ConfigError(format!(
                    "[aliases] {alias:?} is not a valid tool name (use 1 to {MAX_TOOL_NAME} \
                     letters, digits, '_' or '-')"
                )));
            }
            if has_wire_separator(alias) {
                return Err(ConfigError(format!(
                    "[aliases] {alias:?} holds '__', which joins the parts of a wire name: \
                     it could be another tool's wire name (use one '_')"
                )));
            }
            let target_ok = match split_path(target) {
                Some((id, tool)) => check_id(id).is_ok() && is_valid_tool_name(tool),
                None => is_valid_tool_name(target),
            };
            if !target_ok {
                return Err(ConfigError(format!(
                    "[aliases] {alias} = {target:?} names no tool: give a tool path \
                     (PLUGIN-ID/TOOL) or a tool name"
                )));
            }
        }
        for (name, table) in &config.tools.tables {
            if let Some(description) = table.get(DESCRIPTION_KEY)
                && !description.is_str()
            {
                return Err(ConfigError(format!(
                    "[tools.{name}] description must be a string (what the model reads \
                     about the tool), got a {}",
                    description.type_str()
                )));
            }
        }
        Rules::new(&config.permissions, &CommandLineRules::default())
            .map_err(|error| ConfigError(error.to_string()))?;
        config.tool_caps()?;
        Ok(config)
    }

    /// The descriptions `[tools.NAME] description` gives, by NAME.
    pub fn tool_descriptions(&self) -> HashMap<String, String> {
        self.tools
            .tables
            .iter()
            .filter_map(|(name, table)| {
                let description = table.get(DESCRIPTION_KEY)?.as_str()?;
                Some((name.clone(), description.to_string()))
            })
            .collect()
    }

    /// Which plugins' output is enveloped: `mode` (the command line) over `[output]`,
    /// then each plugin's own `[plugins.ID.output]` over both.
    pub fn untrusted_policy(&self, mode: Option<UntrustedOutput>) -> OutputPolicy {
        OutputPolicy {
            mode: mode.or(self.output.untrusted).unwrap_or_default(),
            plugins: self
                .plugins
                .iter()
                .filter_map(|(id, plugin)| Some((id.clone(), plugin.output.untrusted?)))
                .collect(),
        }
    }

    /// `[tools.NAME] max_concurrent` of every tool that sets it.
    pub fn tool_caps(&self) -> Result<HashMap<String, usize>, ConfigError> {
        let mut caps = HashMap::new();
        for (name, table) in &self.tools.tables {
            let Some(value) = table.get(TOOL_MAX_CONCURRENT) else {
                continue;
            };
            let cap = value
                .as_integer()
                .and_then(|cap| usize::try_from(cap).ok())
                .ok_or_else(|| {
                    ConfigError(format!(
                        "[tools.{name}] max_concurrent: expected a whole number of calls (0 or more), got {value}"
                    ))
                })?;
            caps.insert(name.clone(), cap);
        }
        Ok(caps)
    }

    /// `[plugins.ID] max_concurrent` of every plugin that sets it.
    pub fn plugin_caps(&self) -> HashMap<String, usize> {
        self.plugins
            .iter()
            .filter_map(|(id, plugin)| Some((id.clone(), plugin.max_concurrent?)))
            .collect()
    }

    /// Each `[tools.NAME]` table as JSON object text, as plugins receive it: without
    /// toolcell's own key, `max_concurrent`.
    pub fn tool_config_json(&self) -> HashMap<String, String> {
        self.tools
            .tables
            .iter()
            .map(|(name, table)| {
                let mut table = table.clone();
                table.remove(TOOL_MAX_CONCURRENT);
                (
                    name.clone(),
                    toml_to_json(&toml::Value::Table(table)).to_string(),
                )
            })
            .collect()
    }

    /// The layers of output settings for `tool` of plugin `plugin`, most specific
    /// first: `[output.tools.NAME]`, `[plugins.ID.output]`, `[output]`.
    fn output_layers(&self, plugin: &str, tool: &str) -> [OutputLimitsSection; 3] {
        let global = OutputLimitsSection {
            max_lines: self.output.max_lines,
            max_bytes: self.output.max_bytes,
            max_binary_bytes: self.output.max_binary_bytes,
            max_description_bytes: self.output.max_description_bytes,
        };
        [
            self.output.tools.get(tool).cloned().unwrap_or_default(),
            self.plugins
                .get(plugin)
                .map(|section| section.output.limits())
                .unwrap_or_default(),
            global,
        ]
    }

    /// How much of a result of `tool` (of plugin `plugin`) the model sees.
    pub fn output_for(&self, plugin: &str, tool: &str) -> OutputLimits {
        let layers = self.output_layers(plugin, tool);
        OutputLimits {
            max_lines: layers
                .iter()
                .find_map(|layer| layer.max_lines)
                .unwrap_or(cut::DEFAULT_MAX_LINES),
            max_bytes: layers
                .iter()
                .find_map(|layer| layer.max_bytes)
                .unwrap_or(cut::DEFAULT_MAX_BYTES),
            max_binary_bytes: layers
                .iter()
                .find_map(|layer| layer.max_binary_bytes)
                .unwrap_or(cut::DEFAULT_MAX_BINARY_BYTES),
        }
    }

    /// The longest description of `tool` (of plugin `plugin`) the model sees.
    pub fn description_bytes_for(&self, plugin: &str, tool: &str) -> usize {
        self.output_layers(plugin, tool)
            .iter()
            .find_map(|layer| layer.max_description_bytes)
            .unwrap_or(cut::DEFAULT_MAX_DESCRIPTION_BYTES)
    }

    /// The result store: `[output] results_dir` (relative to the config file's
    /// directory), else `results/` in `cache_dir`; none when neither is set.
    pub fn result_store(&self, cache_dir: Option<&Path>) -> Option<ResultStore> {
        let dir = match &self.output.results_dir {
            Some(dir) => self.relative_to_file(dir),
            None => cache_dir?.join("results"),
        };
        let max_bytes = self
            .output
            .results_max_bytes
            .unwrap_or(results::DEFAULT_MAX_BYTES);
        Some(ResultStore::new(dir, max_bytes))
    }
}

impl LimitsSection {
    /// `limits` with the values this section sets.
    pub(crate) fn apply(&self, mut limits: Limits) -> Limits {
        if let Some(memory) = self.memory_mib {
            limits = limits.with_memory(memory.saturating_mul(MIB));
        }
        if let Some(ms) = self.call_timeout_ms {
            limits.call_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.load_timeout_ms {
            limits.load_timeout = Duration::from_millis(ms);
        }
        if let Some(fuel) = self.fuel {
            limits.fuel = fuel;
        }
        set(&mut limits.questions_per_call, self.questions_per_call);
        let schemas = &mut limits.schemas;
        set(&mut schemas.schema_bytes, self.schema_max_bytes);
        set(&mut schemas.plugin_schema_bytes, self.schemas_max_bytes);
        set(&mut schemas.depth, self.schema_max_depth);
        set(&mut schemas.pattern_bytes, self.pattern_max_bytes);
        set(&mut schemas.plugin_pattern_bytes, self.patterns_max_bytes);
        set(
            &mut schemas.compile_time,
            self.schema_compile_ms.map(Duration::from_millis),
        );
        let log = &mut limits.log;
        set(&mut log.call_bytes, self.log_call_bytes);
        set(&mut log.bytes_per_second, self.log_bytes_per_second);
        set(&mut log.burst_bytes, self.log_burst_bytes);
        limits
    }
}

impl HttpSection {
    /// `other` over `self`: its grants are added, the bounds it sets replace these.
    pub fn overlay(mut self, other: &HttpSection) -> HttpSection {
        self.allow.extend(other.allow.iter().cloned());
        self.public = other.public.or(self.public);
        self.timeout_ms = other.timeout_ms.or(self.timeout_ms);
        self.max_response_bytes = other.max_response_bytes.or(self.max_response_bytes);
        self.max_redirects = other.max_redirects.or(self.max_redirects);
        self
    }

    /// The policy of this section's grants and `extra`, and its public switch.
    pub(crate) fn policy(&self, extra: &[HostGrant]) -> Result<HttpPolicy, BadAllowEntry> {
        let mut grants = extra.to_vec();
        for entry in &self.allow {
            grants.push(entry.parse().map_err(|source| BadAllowEntry {
                entry: entry.clone(),
                source,
            })?);
        }
        Ok(HttpPolicy::new(grants, self.public.unwrap_or(true)))
    }

    /// The bounds this section sets, over the defaults.
    pub(crate) fn settings(&self) -> HttpSettings {
        let mut settings = HttpSettings::default();
        if let Some(ms) = self.timeout_ms {
            settings.timeout = Duration::from_millis(ms);
        }
        if let Some(bytes) = self.max_response_bytes {
            settings.max_response_bytes = bytes;
        }
        if let Some(redirects) = self.max_redirects {
            settings.max_redirects = redirects;
        }
        settings
    }
}

/// Replaces `value` with `setting`, when there is one.
fn set<T>(value: &mut T, setting: Option<T>) {
    if let Some(setting) = setting {
        *value = setting;
    }
}

/// TOML values as JSON; datetimes become their RFC 3339 text.
fn toml_to_json(value: &toml::Value) -> serde_json::Value {
    match value {
        toml::Value::String(text) => serde_json::Value::String(text.clone()),
        toml::Value::Integer(number) => serde_json::Value::from(*number),
        toml::Value::Float(number) => serde_json::Number::from_f64(*number)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        toml::Value::Boolean(flag) => serde_json::Value::Bool(*flag),
        toml::Value::Datetime(datetime) => serde_json::Value::String(datetime.to_string()),
        toml::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(toml_to_json).collect())
        }
        toml::Value::Table(table) => serde_json::Value::Object(
            table
                .iter()
                .map(|(key, value)| (key.clone(), toml_to_json(value)))
                .collect(),
        ),
    }
}

/// toml's errors show a source snippet over several lines; keep the position (first
/// line) and the reason (last line).
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() > 1 => format!("{first}: {last}"),
        (Some(first), _) => first.to_string(),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests;
