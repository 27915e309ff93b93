//! What a plugin is granted, made in one place: the user's policy, its layers read in
//! one order of precedence, intersected with what the plugin's manifest asks for.
//!
//! **The policy's layers**, each over the ones before it (a value one layer sets
//! replaces what the layers below set; host grants add up instead):
//!
//! 1. the defaults: clm-tool(5)'s, or what the embedder gave
//!    [`RuntimeBuilder::limits`](crate::RuntimeBuilder::limits);
//! 2. the configuration file's sections for every plugin: `[limits]`, `[http]`, `[files]`;
//! 3. its sections for this plugin: `[plugins.ID.limits]`, `[plugins.ID.http]`,
//!    `[plugins.ID.files]`;
//! 4. the command line: `--files`, `--allow-http`, `--http-timeout-ms`, ... (when
//!    embedding: [`RuntimeBuilder::file_access`](crate::RuntimeBuilder::file_access),
//!    `allow_http`, `http_overrides`).
//!
//! **The grant** is the lesser of that and the manifest's asks:
//!
//! | capability | asked (manifest) | allowed (policy) | granted |
//! |---|---|---|---|
//! | HTTP | `capabilities.http` hosts, or `*` | grants and the public switch | a request must be among the asked hosts *and* pass the policy |
//! | files | `capabilities.files` | `access` (read-write by default) | the lesser access |
//! | memory | `capabilities.memory_mib` | `memory_mib` | the lesser amount |
//! | default call deadline | `capabilities.timeout_ms` | `call_timeout_ms` | the lesser time |
//!
//! Where the policy cuts an ask, [`Grants::denials`] says so at load time (the
//! `capability_denied` diagnostic), and the hints complete the error a plugin gets when
//! it reaches the cut: which capability, and how to grant it. The sandbox runs the
//! plugin under its [`Grants`], and nothing else.

use std::time::Duration;

use crate::artifact::manifest::{HttpAsk, Manifest};
use crate::base::limits::{Limits, MIB};
use crate::config::{Config, HttpSection, LimitsSection};
use crate::services::files::FileAccess;
use crate::services::http::{HostGrant, HttpPolicy, HttpSettings};

/// The settings of the command line (or of the embedder, in its place): the highest
/// layer of the policy.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    /// `--files`: the most file access any plugin may get.
    pub files: Option<FileAccess>,
    /// `--allow-http`: hosts every plugin may reach, added to the configuration's.
    pub http_grants: Vec<HostGrant>,
    /// `--http-timeout-ms` and the other HTTP bounds (and grants, as text).
    pub http: HttpSection,
}

/// What the user's policy allows plugins: every layer, ready to grant each plugin.
#[derive(Debug, Default)]
pub struct CapabilityPolicy {
    defaults: Limits,
    config: Config,
    command_line: CommandLine,
}

/// One layer of the policy's settings for one plugin.
struct Layer<'a> {
    limits: Option<&'a LimitsSection>,
    http: Option<&'a HttpSection>,
    files: Option<FileAccess>,
}

/// What the policy allows one plugin, before its manifest is considered.
#[derive(Debug, Clone)]
struct Allowed {
    limits: Limits,
    http_policy: HttpPolicy,
    http_settings: HttpSettings,
    files: FileAccess,
}

impl CapabilityPolicy {
    /// A policy of `defaults` under `config` under `command_line`.
    pub fn new(defaults: Limits, config: Config, command_line: CommandLine) -> Self {
        CapabilityPolicy {
            defaults,
            config,
            command_line,
        }
    }

    /// The configuration file's settings the policy reads (its `[output]` tables are
    /// the output policy's).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// What the plugin of `manifest` gets: what the policy allows its id, cut to what
    /// the manifest asks for.
    pub fn grant(&self, manifest: &Manifest) -> Grants {
        intersect(manifest, self.allowed(&manifest.id))
    }

    /// The layers above the defaults for plugin `id`, lowest first.
    fn layers(&self, id: &str) -> [Layer<'_>; 3] {
        let own = self.config.plugins.get(id);
        [
            Layer {
                limits: Some(&self.config.limits),
                http: Some(&self.config.http),
                files: self.config.files.access,
            },
            Layer {
                limits: own.map(|own| &own.limits),
                http: own.map(|own| &own.http),
                files: own.and_then(|own| own.files.access),
            },
            Layer {
                limits: None,
                http: Some(&self.command_line.http),
                files: self.command_line.files,
            },
        ]
    }

    /// What the policy allows plugin `id`: the layers applied over the defaults.
    fn allowed(&self, id: &str) -> Allowed {
        let mut limits = self.defaults.clone();
        let mut http = HttpSection::default();
        // clm-tool(5) lets a plugin read and write the files under the root.
        let mut files = FileAccess::ReadWrite;
        for layer in self.layers(id) {
            if let Some(section) = layer.limits {
                limits = section.apply(limits);
            }
            if let Some(section) = layer.http {
                http = http.overlay(section);
            }
            files = layer.files.unwrap_or(files);
        }
        // The grants were checked when the configuration was parsed; an error here
        // cannot happen for a parsed configuration.
        let http_policy = http
            .policy(&self.command_line.http_grants)
            .unwrap_or_default();
        Allowed {
            limits,
            http_policy,
            http_settings: http.settings(),
            files,
        }
    }
}

/// The words that complete an error when a plugin uses more than it was granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// Why file access is refused (reading when it has none, writing when it may only
    /// read), and how to grant it.
    pub files: String,
    /// Set when the policy granted less memory than the manifest asks for.
    pub memory: Option<String>,
    /// Set when the policy granted a shorter default deadline than the manifest asks for.
    pub timeout: Option<String>,
}

/// What one plugin is granted: its limits, its HTTP policy and bounds, its file access.
/// Made by [`CapabilityPolicy::grant`] when the plugin loads; its sandbox enforces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    pub(crate) limits: Limits,
    pub(crate) http_policy: HttpPolicy,
    pub(crate) http_settings: HttpSettings,
    pub(crate) files: FileAccess,
    pub(crate) hints: Hints,
    denials: Vec<String>,
}

impl Grants {
    /// The limits the plugin runs under (with the granted memory and default deadline).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Which hosts the plugin may reach: the user's policy limited to the hosts its
    /// manifest asks for.
    pub fn http_policy(&self) -> &HttpPolicy {
        &self.http_policy
    }

    /// The bounds on each of its HTTP requests.
    pub fn http_settings(&self) -> &HttpSettings {
        &self.http_settings
    }

    /// How it may use the file root (when the runtime has one).
    pub fn files(&self) -> FileAccess {
        self.files
    }

    /// Whether it may write files under the root.
    pub fn may_write_files(&self) -> bool {
        self.files.can_write()
    }

    /// Whether some HTTP request of it could pass the policy: its manifest asks for a
    /// destination the policy does not certainly refuse.
    pub fn may_use_http(&self) -> bool {
        self.http_policy.may_reach_some_host()
    }

    /// Whether it may neither write files nor make HTTP requests: all it can do beyond
    /// computing is read the files under the root. What a "read-only" permission rule
    /// asks of a plugin.
    pub fn is_read_only(&self) -> bool {
        !self.may_write_files() && !self.may_use_http()
    }

    /// Each ask the policy cut, as one line naming the capability and how to grant it.
    pub fn denials(&self) -> &[String] {
        &self.denials
    }
}

/// Grants `manifest` what `allowed` permits.
fn intersect(manifest: &Manifest, allowed: Allowed) -> Grants {
    let id = &manifest.id;
    let asks = &manifest.capabilities;
    let mut denials = Vec::new();

    let files = asks.files.min(allowed.files);
    if asks.files > allowed.files {
        denials.push(format!(
            "its manifest asks for files = \"{}\" but the policy allows \"{}\"; grant it with \
             --files {} or [plugins.{id}.files] access = \"{}\"",
            asks.files, allowed.files, asks.files, asks.files
        ));
    }
    let files_hint = files_hint(id, asks.files, allowed.files, files);

    let mut limits = allowed.limits;
    let mut memory_hint = None;
    if let Some(mib) = asks.memory_mib {
        let asked = mib.saturating_mul(MIB);
        if asked > limits.memory {
            let grant = format!("grant it with [plugins.{id}.limits] memory_mib = {mib}");
            denials.push(format!(
                "its manifest asks for {mib} MiB of memory but the policy allows {}; {grant}",
                crate::base::limits::format_bytes(limits.memory)
            ));
            memory_hint = Some(format!(
                "its manifest asks for {mib} MiB of memory; {grant}"
            ));
        } else {
            limits = limits.with_memory(asked);
        }
    }

    let mut timeout_hint = None;
    if let Some(ms) = asks.timeout_ms {
        let asked = Duration::from_millis(ms);
        if asked > limits.call_timeout {
            let grant = format!("grant it with [plugins.{id}.limits] call_timeout_ms = {ms}");
            denials.push(format!(
                "its manifest asks for a default call deadline of {ms} ms but the policy \
                 allows {} ms; {grant}",
                limits.call_timeout.as_millis()
            ));
            timeout_hint = Some(format!("its manifest asks for {ms} ms; {grant}"));
        } else {
            limits.call_timeout = asked;
        }
    }

    let destinations = match &asks.http {
        HttpAsk::Any => None,
        HttpAsk::None => Some(Vec::new()),
        HttpAsk::Hosts(hosts) => {
            for host in hosts {
                if let Some(reason) = allowed.http_policy.refusal_of(host) {
                    denials.push(format!(
                        "its manifest asks for HTTP to {host}, which the policy refuses: {reason}"
                    ));
                }
            }
            Some(hosts.clone())
        }
    };

    Grants {
        limits,
        http_policy: allowed.http_policy.limited_to(destinations),
        http_settings: allowed.http_settings,
        files,
        hints: Hints {
            files: files_hint,
            memory: memory_hint,
            timeout: timeout_hint,
        },
        denials,
    }
}

/// Why the next level of file access is refused, and who can grant it.
fn files_hint(id: &str, asked: FileAccess, allowed: FileAccess, granted: FileAccess) -> String {
    let has = match granted {
        FileAccess::None => format!("plugin '{id}' has no file access"),
        FileAccess::ReadOnly => format!("plugin '{id}' may only read files"),
        FileAccess::ReadWrite => return String::new(),
    };
    if asked <= allowed {
        let wanted = match granted {
            FileAccess::None => "\"read-only\" or \"read-write\"",
            _ => "\"read-write\"",
        };
        format!(
            "{has}: its manifest asks for files = \"{asked}\" (the plugin must ask for {wanted} \
             in its manifest's [capabilities])"
        )
    } else {
        format!(
            "{has}: the policy allows files = \"{allowed}\" (grant \"{asked}\" with --files \
             {asked} or [plugins.{id}.files] access = \"{asked}\")"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::manifest::Capabilities;

    fn manifest(capabilities: Capabilities) -> Manifest {
        Manifest {
            version: semver::Version::new(1, 0, 0),
            capabilities,
            ..Manifest::clm_default("p")
        }
    }

    fn allowed(files: FileAccess) -> Allowed {
        Allowed {
            limits: Limits::default(),
            http_policy: HttpPolicy::default(),
            http_settings: HttpSettings::default(),
            files,
        }
    }

    #[test]
    fn the_lesser_file_access_is_granted_and_the_hint_names_who_limits_it() {
        let asks_rw = manifest(Capabilities {
            files: FileAccess::ReadWrite,
            ..Capabilities::default()
        });
        let granted = intersect(&asks_rw, allowed(FileAccess::ReadOnly));
        assert_eq!(granted.files, FileAccess::ReadOnly);
        assert_eq!(granted.denials.len(), 1);
        assert!(granted.hints.files.contains("--files read-write"));

        let asks_ro = manifest(Capabilities {
            files: FileAccess::ReadOnly,
            ..Capabilities::default()
        });
        let granted = intersect(&asks_ro, allowed(FileAccess::ReadWrite));
        assert_eq!(granted.files, FileAccess::ReadOnly);
        assert!(granted.denials.is_empty());
        assert!(
            granted
                .hints
                .files
                .contains("its manifest asks for files = \"read-only\"")
        );
    }

    #[test]
    fn memory_and_deadline_are_the_lesser_of_ask_and_policy() {
        let modest = manifest(Capabilities {
            memory_mib: Some(4),
            timeout_ms: Some(1000),
            ..Capabilities::default()
        });
        let granted = intersect(&modest, allowed(FileAccess::ReadWrite));
        assert_eq!(granted.limits.memory, 4 * MIB);
        assert_eq!(granted.limits.call_timeout, Duration::from_millis(1000));
        assert!(granted.denials.is_empty());

        let greedy = manifest(Capabilities {
            memory_mib: Some(64),
            timeout_ms: Some(120_000),
            ..Capabilities::default()
        });
        let granted = intersect(&greedy, allowed(FileAccess::ReadWrite));
        assert_eq!(granted.limits.memory, Limits::default().memory);
        assert_eq!(granted.limits.call_timeout, Limits::default().call_timeout);
        assert_eq!(granted.denials.len(), 2);
        assert!(
            granted
                .hints
                .memory
                .as_deref()
                .is_some_and(|hint| hint.contains("memory_mib = 64"))
        );
        assert!(
            granted
                .hints
                .timeout
                .as_deref()
                .is_some_and(|hint| hint.contains("call_timeout_ms = 120000"))
        );
    }

    #[test]
    fn an_asked_host_the_policy_refuses_is_a_denial() {
        let asks = manifest(Capabilities {
            http: HttpAsk::Hosts(vec!["127.0.0.1:9".parse().expect("grant")]),
            ..Capabilities::default()
        });
        let granted = intersect(&asks, allowed(FileAccess::None));
        assert_eq!(granted.denials.len(), 1);
        assert!(granted.denials[0].contains("--allow-http 127.0.0.1:9"));
    }

    /// A manifest that asks for everything, so that the grant shows what the policy
    /// allows.
    fn greedy(id: &str) -> Manifest {
        Manifest {
            version: semver::Version::new(1, 0, 0),
            capabilities: Capabilities {
                http: HttpAsk::Any,
                files: FileAccess::ReadWrite,
                memory_mib: Some(1024),
                timeout_ms: Some(3_600_000),
            },
            ..Manifest::clm_default(id)
        }
    }

    #[test]
    fn the_command_line_wins_over_the_plugins_section_over_the_global_one_over_the_defaults() {
        let config = Config::parse(
            r#"
            [limits]
            memory_mib = 4
            call_timeout_ms = 2000
            [files]
            access = "none"
            [http]
            timeout_ms = 1000
            max_redirects = 1
            allow = ["127.0.0.1:1"]
            [plugins.own.limits]
            memory_mib = 6
            [plugins.own.files]
            access = "read-only"
            [plugins.own.http]
            timeout_ms = 2000
            allow = ["127.0.0.1:2"]
            "#,
        )
        .expect("parses");
        let defaults = Limits {
            fuel: 7,
            ..Limits::default()
        };
        let policy = CapabilityPolicy::new(defaults.clone(), config, CommandLine::default());

        let other = policy.grant(&greedy("other"));
        assert_eq!(other.limits.memory, 4 * MIB);
        assert_eq!(other.limits.call_timeout, Duration::from_millis(2000));
        assert_eq!(other.limits.fuel, 7, "what no layer sets keeps its default");
        assert_eq!(other.files, FileAccess::None);
        assert_eq!(other.http_settings.timeout, Duration::from_millis(1000));
        assert_eq!(other.http_policy.grants().len(), 1);

        let own = policy.grant(&greedy("own"));
        assert_eq!(own.limits.memory, 6 * MIB);
        assert_eq!(own.limits.call_timeout, Duration::from_millis(2000));
        assert_eq!(own.files, FileAccess::ReadOnly);
        assert_eq!(own.http_settings.timeout, Duration::from_millis(2000));
        assert_eq!(own.http_settings.max_redirects, 1);
        assert_eq!(own.http_policy.grants().len(), 2, "grants add up");

        let command_line = CommandLine {
            files: Some(FileAccess::ReadWrite),
            http_grants: vec!["127.0.0.1:3".parse().expect("grant")],
            http: HttpSection {
                timeout_ms: Some(3000),
                ..HttpSection::default()
            },
        };
        let policy = CapabilityPolicy::new(defaults, policy.config, command_line);
        let own = policy.grant(&greedy("own"));
        assert_eq!(own.files, FileAccess::ReadWrite);
        assert_eq!(own.http_settings.timeout, Duration::from_millis(3000));
        assert_eq!(own.http_settings.max_redirects, 1);
        assert_eq!(own.http_policy.grants().len(), 3);
        assert_eq!(own.limits.memory, 6 * MIB);
    }

    #[test]
    fn without_any_setting_a_plugin_gets_clm_tools_rights_within_its_asks() {
        let policy = CapabilityPolicy::default();
        let all = policy.grant(&greedy("p"));
        assert_eq!(all.files, FileAccess::ReadWrite);
        assert_eq!(all.limits.memory, Limits::default().memory);
        assert!(all.may_use_http() && all.may_write_files() && !all.is_read_only());
        assert_eq!(all.denials().len(), 2, "{:?}", all.denials());
        let nothing = policy.grant(&manifest(Capabilities::default()));
        assert_eq!(nothing.files, FileAccess::None);
        assert!(!nothing.may_use_http() && nothing.is_read_only());
    }

    #[test]
    fn a_plugin_is_read_only_when_it_may_neither_write_nor_reach_a_host() {
        let reader = manifest(Capabilities {
            files: FileAccess::ReadOnly,
            http: HttpAsk::Hosts(vec!["127.0.0.1:9".parse().expect("grant")]),
            ..Capabilities::default()
        });
        // The policy refuses the one host the plugin asks for.
        let granted = CapabilityPolicy::default().grant(&reader);
        assert!(!granted.may_use_http() && !granted.may_write_files());
        assert!(granted.is_read_only());
        // Granted that host, it may reach out.
        let command_line = CommandLine {
            http_grants: vec!["127.0.0.1:9".parse().expect("grant")],
            ..CommandLine::default()
        };
        let policy = CapabilityPolicy::new(Limits::default(), Config::default(), command_line);
        let granted = policy.grant(&reader);
        assert!(granted.may_use_http() && !granted.is_read_only());
        // With public hosts off and nothing granted, asking for any host reaches none.
        let config = Config::parse("[http]\npublic = false").expect("parses");
        let policy = CapabilityPolicy::new(Limits::default(), config, CommandLine::default());
        let granted = policy.grant(&manifest(Capabilities {
            http: HttpAsk::Any,
            ..Capabilities::default()
        }));
        assert!(!granted.may_use_http());
    }
}
