//! What a plugin is granted: the intersection of what its manifest asks for and what
//! the user's policy allows.
//!
//! | capability | asked (manifest) | allowed (policy) | granted |
//! |---|---|---|---|
//! | HTTP | `capabilities.http` hosts, or `*` | `--allow-http`, `[http]`, public switch | a request must be among the asked hosts *and* pass the policy |
//! | files | `capabilities.files` | `--files`, `[files]`, `[plugins.ID.files]` | the lesser access |
//! | memory | `capabilities.memory_mib` | `[limits] memory_mib` | the lesser amount |
//! | default call deadline | `capabilities.timeout_ms` | `[limits] call_timeout_ms` | the lesser time |
//!
//! Where the policy cuts an ask, [`Granted::denials`] says so at load time (the
//! `capability_denied` diagnostic), and [`Hints`] complete the error a plugin gets when
//! it reaches the cut: which capability, and how to grant it.

use std::time::Duration;

use crate::files::FileAccess;
use crate::http::{HttpPolicy, HttpSettings};
use crate::limits::{Limits, MIB};
use crate::manifest::{HttpAsk, Manifest};

/// What the user's policy allows one plugin, before its manifest is considered.
#[derive(Debug, Clone)]
pub struct Allowed {
    /// Resource limits (memory, default call deadline, ...).
    pub limits: Limits,
    /// Which hosts it may reach.
    pub http_policy: HttpPolicy,
    /// Bounds on its HTTP requests.
    pub http_settings: HttpSettings,
    /// The most file access it may have.
    pub files: FileAccess,
}

/// The words that complete an error when a plugin uses more than it was granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    /// Why file access is refused (reading when it has none, writing when it may only
    /// read), and how to grant it.
    pub files: String,
    /// Set when the policy granted less memory than the manifest asks for.
    pub memory: Option<String>,
    /// Set when the policy granted a shorter default deadline than the manifest asks for.
    pub timeout: Option<String>,
}

/// What one plugin gets.
#[derive(Debug, Clone)]
pub struct Granted {
    /// Limits with the granted memory and default deadline.
    pub limits: Limits,
    /// The user's HTTP policy limited to the hosts the manifest asks for.
    pub http_policy: HttpPolicy,
    /// Bounds on its HTTP requests.
    pub http_settings: HttpSettings,
    /// The granted file access.
    pub files: FileAccess,
    /// See [`Hints`].
    pub hints: Hints,
    /// Each ask the policy cut, as one line naming the capability and how to grant it.
    pub denials: Vec<String>,
}

/// Grants `manifest` what `allowed` permits.
pub fn grant(manifest: &Manifest, allowed: Allowed) -> Granted {
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
                crate::limits::format_bytes(limits.memory)
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

    Granted {
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
    use crate::manifest::Capabilities;

    fn manifest(capabilities: Capabilities) -> Manifest {
        Manifest {
            id: "p".to_string(),
            version: semver::Version::new(1, 0, 0),
            description: String::new(),
            capabilities,
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
        let granted = grant(&asks_rw, allowed(FileAccess::ReadOnly));
        assert_eq!(granted.files, FileAccess::ReadOnly);
        assert_eq!(granted.denials.len(), 1);
        assert!(granted.hints.files.contains("--files read-write"));

        let asks_ro = manifest(Capabilities {
            files: FileAccess::ReadOnly,
            ..Capabilities::default()
        });
        let granted = grant(&asks_ro, allowed(FileAccess::ReadWrite));
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
        let granted = grant(&modest, allowed(FileAccess::ReadWrite));
        assert_eq!(granted.limits.memory, 4 * MIB);
        assert_eq!(granted.limits.call_timeout, Duration::from_millis(1000));
        assert!(granted.denials.is_empty());

        let greedy = manifest(Capabilities {
            memory_mib: Some(64),
            timeout_ms: Some(120_000),
            ..Capabilities::default()
        });
        let granted = grant(&greedy, allowed(FileAccess::ReadWrite));
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
        let granted = grant(&asks, allowed(FileAccess::None));
        assert_eq!(granted.denials.len(), 1);
        assert!(granted.denials[0].contains("--allow-http 127.0.0.1:9"));
    }
}
