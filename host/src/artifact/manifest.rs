//! The plugin manifest: who a plugin is and which capabilities it asks for.
//!
//! A manifest is a small TOML document:
//!
//! ```toml
//! id = "acme/weather"            # NAME or NAMESPACE/NAME, each 1-64 of a-z 0-9 - . _
//! version = "1.2.0"              # semantic version
//! description = "Current weather for a city"
//!
//! [capabilities]                 # what the plugin asks for; absent means none
//! http = ["api.weather.example"] # hosts, as --allow-http takes them; ["*"]: any host
//! files = "read-only"            # "none", "read-only" or "read-write"
//! memory_mib = 16                # the memory it needs
//! timeout_ms = 10000             # the default deadline of its tools' calls
//! ```
//!
//! A `.wasm` plugin carries it in a custom section named [`MANIFEST_SECTION`]. A `.lua`
//! plugin may have one beside it (`NAME.lua.toml`, see [`sidecar_path`]); without one it
//! gets [`Manifest::clm_default`], which asks for what clm-tool(5) gives every plugin.
//! Loading, `inspect` and `pack` all take a `.lua` plugin's manifest from
//! [`lua_plugin_manifest`], so they agree on it and on its id ([`lua_id`]).
//! What a plugin finally gets is the intersection with the user's policy (`grants`).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::wording::file_name;
use crate::services::files::FileAccess;
use crate::services::http::HostGrant;

/// The name of the custom section that holds a `.wasm` plugin's manifest.
pub const MANIFEST_SECTION: &str = "toolcell-manifest";

/// The longest segment of a plugin id.
pub const MAX_ID_LEN: usize = 64;

/// A plugin's identity and the capabilities it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The plugin's id: how errors, `list` and the configuration file name it.
    pub id: String,
    /// The plugin's version (semantic versioning).
    pub version: semver::Version,
    /// What the plugin is for.
    pub description: String,
    /// What it asks to be allowed to do.
    pub capabilities: Capabilities,
}

/// The capabilities a manifest asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Which hosts it wants to reach over HTTP.
    pub http: HttpAsk,
    /// How it wants to use the file root.
    pub files: FileAccess,
    /// The memory it needs, in MiB; `None` takes the user's limit.
    pub memory_mib: Option<u64>,
    /// The default deadline of its tools' calls, in ms; `None` takes the user's.
    pub timeout_ms: Option<u64>,
}

/// The HTTP destinations a manifest asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HttpAsk {
    /// No HTTP at all.
    #[default]
    None,
    /// Any host the user's policy allows (`http = ["*"]`).
    Any,
    /// Only these hosts (the same forms `--allow-http` takes).
    Hosts(Vec<HostGrant>),
}

impl HttpAsk {
    /// Whether a request to this host and port is among the asked destinations.
    pub fn covers(&self, host: &url::Host<&str>, port: u16) -> bool {
        match self {
            HttpAsk::None => false,
            HttpAsk::Any => true,
            HttpAsk::Hosts(hosts) => hosts.iter().any(|grant| grant.matches(host, port)),
        }
    }

    fn to_strings(&self) -> Vec<String> {
        match self {
            HttpAsk::None => Vec::new(),
            HttpAsk::Any => vec!["*".to_string()],
            HttpAsk::Hosts(hosts) => hosts.iter().map(ToString::to_string).collect(),
        }
    }
}

impl fmt::Display for HttpAsk {
    /// `none`, `any host`, or the hosts separated by commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpAsk::None => f.write_str("none"),
            HttpAsk::Any => f.write_str("any host"),
            HttpAsk::Hosts(hosts) => {
                let hosts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
                f.write_str(&hosts.join(", "))
            }
        }
    }
}

/// A manifest that could not be used; the text says which field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ManifestError(pub String);

/// The document as written: every field optional, unknown fields refused.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default)]
    capabilities: CapabilitiesDocument,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CapabilitiesDocument {
    #[serde(skip_serializing_if = "Option::is_none")]
    http: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<FileAccess>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_mib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
}

/// Where the fields a document leaves out come from.
enum Omitted<'a> {
    /// A `.wasm` plugin's manifest: `id` and `version` are required.
    Required,
    /// A sidecar of a `.lua` plugin: the id defaults to the one given (the file's
    /// [`lua_id`]), the version to 0.0.0.
    LuaFile(&'a str),
}

impl Manifest {
    /// The manifest of a `.lua` plugin without a sidecar: `id` (the file's [`lua_id`])
    /// and what clm-tool(5) gives every plugin (HTTP per the user's policy, read-write
    /// access to the file root, the user's memory and time limits).
    pub fn clm_default(id: &str) -> Manifest {
        Manifest {
            id: id.to_string(),
            version: semver::Version::new(0, 0, 0),
            description: String::new(),
            capabilities: Capabilities {
                http: HttpAsk::Any,
                files: FileAccess::ReadWrite,
                memory_mib: None,
                timeout_ms: None,
            },
        }
    }

    /// Parses the manifest carried by a `.wasm` plugin, where `id` and `version` are
    /// required.
    pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Self::parse_with(text, Omitted::Required)
    }

    /// Parses the sidecar of a Lua plugin: `id` defaults to `default_id` (the file's
    /// [`lua_id`]) and `version` to 0.0.0; capabilities it does not ask for are not
    /// granted.
    pub fn parse_sidecar(text: &str, default_id: &str) -> Result<Manifest, ManifestError> {
        Self::parse_with(text, Omitted::LuaFile(default_id))
    }

    /// Parses manifest bytes (a custom section's content), which must be UTF-8.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| ManifestError("the manifest is not UTF-8 text".to_string()))?;
        Self::parse(text)
    }

    fn parse_with(text: &str, omitted: Omitted<'_>) -> Result<Manifest, ManifestError> {
        let document: Document =
            toml::from_str(text).map_err(|error| ManifestError(toml_error(&error)))?;
        let id = match (document.id, &omitted) {
            (Some(id), _) => id,
            (None, Omitted::LuaFile(default_id)) => default_id.to_string(),
            (None, Omitted::Required) => {
                return Err(ManifestError("the manifest has no `id`".to_string()));
            }
        };
        check_id(&id)?;
        let version = match (document.version, &omitted) {
            (Some(version), _) => semver::Version::parse(&version).map_err(|error| {
                ManifestError(format!(
                    "`version` {version:?} is not a semantic version like 1.2.0 ({error})"
                ))
            })?,
            (None, Omitted::LuaFile(_)) => semver::Version::new(0, 0, 0),
            (None, Omitted::Required) => {
                return Err(ManifestError("the manifest has no `version`".to_string()));
            }
        };
        let capabilities = document.capabilities;
        let http = match capabilities.http {
            None => HttpAsk::None,
            Some(hosts) => parse_http(&hosts)?,
        };
        if capabilities.memory_mib == Some(0) {
            return Err(ManifestError(
                "`capabilities.memory_mib` must be at least 1".to_string(),
            ));
        }
        if capabilities.timeout_ms == Some(0) {
            return Err(ManifestError(
                "`capabilities.timeout_ms` must be at least 1".to_string(),
            ));
        }
        Ok(Manifest {
            id,
            version,
            description: document.description.unwrap_or_default(),
            capabilities: Capabilities {
                http,
                files: capabilities.files.unwrap_or_default(),
                memory_mib: capabilities.memory_mib,
                timeout_ms: capabilities.timeout_ms,
            },
        })
    }

    /// The manifest as TOML text, every field explicit: what `toolcell pack` embeds.
    pub fn to_toml(&self) -> String {
        let document = Document {
            id: Some(self.id.clone()),
            version: Some(self.version.to_string()),
            description: Some(self.description.clone()),
            capabilities: CapabilitiesDocument {
                http: Some(self.capabilities.http.to_strings()),
                files: Some(self.capabilities.files),
                memory_mib: self.capabilities.memory_mib,
                timeout_ms: self.capabilities.timeout_ms,
            },
        };
        // Serializing plain strings, numbers and lists cannot fail.
        toml::to_string(&document).unwrap_or_default()
    }
}

/// Checks a plugin id: one segment (`notes`), or a namespace and a name (`acme/notes`),
/// each segment 1 to 64 characters of `a-z`, `0-9`, `-`, `.` and `_` that starts with a
/// letter or digit: an id names files (`install` writes `ID.wasm`), so `..` or `.hidden`
/// would climb out of a directory or hide from `ls`.
pub fn check_id(id: &str) -> Result<(), ManifestError> {
    if id.is_empty() {
        return Err(ManifestError("`id` is empty".to_string()));
    }
    let segments: Vec<&str> = id.split('/').collect();
    if segments.len() > 2 {
        return Err(ManifestError(format!(
            "`id` {id:?} has {} segments; an id is NAME or NAMESPACE/NAME",
            segments.len()
        )));
    }
    for segment in segments {
        if segment.is_empty() {
            return Err(ManifestError(format!(
                "`id` {id:?} has an empty segment; an id is NAME or NAMESPACE/NAME"
            )));
        }
        if segment.len() > MAX_ID_LEN {
            return Err(ManifestError(format!(
                "`id` {id:?} has a segment longer than {MAX_ID_LEN} characters"
            )));
        }
        if let Some(bad) = segment.chars().find(|c| {
            !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_'))
        }) {
            return Err(ManifestError(format!(
                "`id` {id:?} contains {bad:?}; an id uses only a-z, 0-9, '-', '.' and '_', \
                 and one '/' after a namespace"
            )));
        }
        if !segment.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return Err(ManifestError(format!(
                "`id` {id:?} has a segment that starts with {:?}; each segment starts with a \
                 letter or digit",
                segment.chars().next().unwrap_or_default()
            )));
        }
    }
    Ok(())
}

fn parse_http(hosts: &[String]) -> Result<HttpAsk, ManifestError> {
    if hosts.iter().any(|host| host == "*") {
        if hosts.len() > 1 {
            return Err(ManifestError(
                "`capabilities.http`: \"*\" already stands for every host; give it alone"
                    .to_string(),
            ));
        }
        return Ok(HttpAsk::Any);
    }
    if hosts.is_empty() {
        return Ok(HttpAsk::None);
    }
    let grants = hosts
        .iter()
        .map(|host| {
            host.parse::<HostGrant>().map_err(|error| {
                ManifestError(format!("`capabilities.http` entry {host:?}: {error}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HttpAsk::Hosts(grants))
}

/// The sidecar manifest of a Lua plugin: `hello.lua` → `hello.lua.toml`.
pub fn sidecar_path(lua_file: &Path) -> PathBuf {
    let mut name = lua_file.as_os_str().to_os_string();
    name.push(".toml");
    PathBuf::from(name)
}

/// The id of the Lua plugin `lua_file` when no manifest names one: its file stem made
/// a valid id (letters in lower case, any other character an id cannot hold as `_`,
/// what precedes its first letter or digit dropped, `lua` when nothing is left, at most
/// [`MAX_ID_LEN`] characters). clm loads every `*.lua` file whatever its name,
/// so a name is never a reason to refuse one; `Hello.lua` is the plugin `hello`.
pub fn lua_id(lua_file: &Path) -> String {
    let stem = lua_file
        .file_stem()
        .map(|stem| stem.to_string_lossy())
        .unwrap_or_default();
    let id: String = stem
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_') => c,
            _ => '_',
        })
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .take(MAX_ID_LEN)
        .collect();
    if id.is_empty() { "lua".to_string() } else { id }
}

/// A Lua plugin's sidecar manifest that could not be used; the plugin's file is named
/// by whoever reports it, so these name the sidecar by its file name.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    /// It exists but could not be read.
    #[error("cannot read its manifest {}: {source}", file_name(path))]
    Unreadable {
        /// The sidecar.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not UTF-8 text.
    #[error("its manifest {} is not UTF-8 text", file_name(path))]
    NotText {
        /// The sidecar.
        path: PathBuf,
    },
    /// It is not a valid manifest.
    #[error("its manifest {}: {source}", file_name(path))]
    Invalid {
        /// The sidecar.
        path: PathBuf,
        /// Which field and why.
        source: ManifestError,
    },
}

/// A manifest file as read, before it is parsed (so that its digest can be checked
/// against a pin first).
#[derive(Debug)]
pub struct ManifestFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Reads the sidecar of the Lua plugin `lua_file`; `None` when it has none.
pub fn read_sidecar(lua_file: &Path) -> Result<Option<ManifestFile>, SidecarError> {
    let path = sidecar_path(lua_file);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(ManifestFile { path, bytes })),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SidecarError::Unreadable { path, source }),
    }
}

/// The manifest of the Lua plugin `lua_file`: `sidecar`'s (its own, or one given in its
/// place) with [`lua_id`] as the id it leaves out, or without one clm's defaults.
pub fn lua_plugin_manifest(
    lua_file: &Path,
    sidecar: Option<&ManifestFile>,
) -> Result<Manifest, SidecarError> {
    let id = lua_id(lua_file);
    let Some(sidecar) = sidecar else {
        return Ok(Manifest::clm_default(&id));
    };
    let text = std::str::from_utf8(&sidecar.bytes).map_err(|_| SidecarError::NotText {
        path: sidecar.path.clone(),
    })?;
    Manifest::parse_sidecar(text, &id).map_err(|source| SidecarError::Invalid {
        path: sidecar.path.clone(),
        source,
    })
}

/// toml's errors span several lines (a source snippet); keep the reason and position.
fn toml_error(error: &toml::de::Error) -> String {
    let reason = error.message().trim().to_string();
    match error.span() {
        Some(span) => format!("{reason} (at byte {})", span.start),
        None => reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_manifest_parses_and_round_trips() {
        let text = r#"
            id = "weather.v2"
            version = "1.2.0"
            description = "Weather"
            [capabilities]
            http = ["api.weather.example", "*.example.com:8443"]
            files = "read-only"
            memory_mib = 16
            timeout_ms = 5000
        "#;
        let manifest = Manifest::parse(text).expect("parses");
        assert_eq!(manifest.id, "weather.v2");
        assert_eq!(manifest.version, semver::Version::new(1, 2, 0));
        assert_eq!(manifest.capabilities.files, FileAccess::ReadOnly);
        assert_eq!(
            manifest.capabilities.http.to_string(),
            "api.weather.example, *.example.com:8443"
        );
        assert_eq!(manifest.capabilities.memory_mib, Some(16));
        assert_eq!(manifest.capabilities.timeout_ms, Some(5000));
        assert_eq!(Manifest::parse(&manifest.to_toml()), Ok(manifest));
    }

    #[test]
    fn omitted_capabilities_are_not_asked_for() {
        let manifest = Manifest::parse("id = \"x\"\nversion = \"0.1.0\"").expect("parses");
        assert_eq!(manifest.capabilities, Capabilities::default());
        assert_eq!(manifest.capabilities.http, HttpAsk::None);
        assert_eq!(manifest.capabilities.files, FileAccess::None);
    }

    #[test]
    fn a_sidecar_defaults_id_and_version() {
        let manifest = Manifest::parse_sidecar("description = \"d\"", "notes").expect("parses");
        assert_eq!(manifest.id, "notes");
        assert_eq!(manifest.version, semver::Version::new(0, 0, 0));
        assert_eq!(manifest.capabilities.files, FileAccess::None);
    }

    #[test]
    fn ids_follow_the_rule() {
        let long = "x".repeat(64);
        let namespaced = format!("{long}/{long}");
        for good in [
            "a",
            "hello",
            "a-b.c_d",
            "0",
            &long,
            "acme/notes",
            "io.github.corp/mcp",
            &namespaced,
        ] {
            assert!(check_id(good).is_ok(), "{good:?} must be accepted");
        }
        for bad in [
            "",
            "Hello",
            "a b",
            "a/b/c",
            "/a",
            "a/",
            "acme/Notes",
            "é",
            "..",
            ".hidden",
            "_x",
            "-x",
            "acme/.x",
            "../x",
            &"x".repeat(65),
            &format!("a/{long}x"),
        ] {
            assert!(check_id(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn bad_manifests_say_what_is_wrong() {
        let cases = [
            ("version = \"1.0.0\"", "no `id`"),
            ("id = \"x\"", "no `version`"),
            ("id = \"X\"\nversion = \"1.0.0\"", "contains 'X'"),
            ("id = \"x\"\nversion = \"one\"", "not a semantic version"),
            (
                "id = \"x\"\nversion = \"1.0.0\"\nfoo = 1",
                "unknown field `foo`",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[capabilities]\nfile = \"none\"",
                "unknown field `file`",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[capabilities]\nfiles = \"all\"",
                "unknown variant `all`",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[capabilities]\nhttp = [\"http://a\"]",
                "entry \"http://a\"",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[capabilities]\nhttp = [\"*\", \"a\"]",
                "give it alone",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[capabilities]\nmemory_mib = 0",
                "at least 1",
            ),
        ];
        for (text, expected) in cases {
            match Manifest::parse(text) {
                Ok(manifest) => panic!("{text:?} parsed as {manifest:?}"),
                Err(error) => assert!(
                    error.0.contains(expected),
                    "{text:?}: expected {expected:?} in {:?}",
                    error.0
                ),
            }
        }
    }

    #[test]
    fn the_sidecar_sits_beside_the_script() {
        assert_eq!(
            sidecar_path(Path::new("/p/hello.lua")),
            PathBuf::from("/p/hello.lua.toml")
        );
    }

    #[test]
    fn a_lua_file_name_becomes_a_valid_id() {
        let id = |name: &str| lua_id(Path::new(name));
        assert_eq!(id("dir/weather.lua"), "weather");
        assert_eq!(id("Hello.lua"), "hello");
        assert_eq!(id("my tool (v2).lua"), "my_tool__v2_");
        assert_eq!(id("wetter-ä.lua"), "wetter-_");
        assert_eq!(id("_private.lua"), "private");
        assert_eq!(id("..lua"), "lua");
        assert_eq!(id("é.lua"), "lua");
        assert_eq!(
            id(&format!("{}.lua", "x".repeat(80))),
            "x".repeat(MAX_ID_LEN)
        );
        for name in [
            "Hello.lua",
            "my tool (v2).lua",
            "wetter-ä.lua",
            "_private.lua",
            "é.lua",
        ] {
            assert_eq!(check_id(&id(name)), Ok(()), "{name}");
        }
    }
}
