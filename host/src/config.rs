//! The configuration file (`--config FILE`, TOML).
//!
//! ```toml
//! [tools.weather]            # becomes clm.config in the plugin whose id (for a .lua
//! api_key = "..."            # without a manifest: its file stem) or one of whose tools is `weather`
//! max_concurrent = 2         # toolcell's, not the plugin's: calls of tool `weather` at once
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
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::files::FileAccess;
use crate::http::{HostGrant, HostGrantError, HttpPolicy, HttpSettings};
use crate::limits::{Limits, MIB};
use crate::policy::{CommandLineRules, PermissionsSection, Rules};
use crate::signature::TrustPolicy;

/// The key of `[tools.NAME]` that toolcell reads (a concurrency cap) and keeps out of
/// the plugin's `clm.config`.
const TOOL_MAX_CONCURRENT: &str = "max_concurrent";

/// A parsed configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[tools.NAME]`: each plugin's `clm.config` (less `max_concurrent`, which is
    /// toolcell's).
    #[serde(default)]
    pub tools: BTreeMap<String, toml::Table>,
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
    /// `[plugins.ID]`: settings for one plugin.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginSection>,
    /// The file this configuration was read from, if any: the host trusts it, so
    /// plugins may not read or change it.
    #[serde(skip)]
    path: Option<PathBuf>,
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

/// `[plugins.ID.files]`: the most file access one plugin may be granted.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginFilesSection {
    /// The access allowed, over `[files]`.
    pub access: Option<FileAccess>,
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
    /// In `[limits]` only: how many calls of the whole runtime run at once (0: no cap).
    pub max_concurrent: Option<usize>,
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
}

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
        let root = self.files.root.as_ref()?;
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""));
        Some(base.join(root))
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
        Rules::new(&config.permissions, &CommandLineRules::default())
            .map_err(|error| ConfigError(error.to_string()))?;
        config.tool_caps()?;
        Ok(config)
    }

    /// `[tools.NAME] max_concurrent` of every tool that sets it.
    pub fn tool_caps(&self) -> Result<HashMap<String, usize>, ConfigError> {
        let mut caps = HashMap::new();
        for (name, table) in &self.tools {
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
