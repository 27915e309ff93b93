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
//!
//! [requires]                     # plugins it needs, with the versions it works with
//! "acme/http-utils" = ">=1.2, <2"
//! ```
//!
//! `conflicts = ["old/weather"]` names plugins it cannot run beside; `author`, `license`,
//! `homepage`, `repository` and `keywords` say who made it and where it lives. Keys
//! toolcell does not know are ignored and kept in [`Manifest::unknown_keys`], so that
//! loading warns about them instead of refusing a plugin written for a newer format.
//!
//! A `.wasm` plugin carries it in a custom section named [`MANIFEST_SECTION`]. A `.lua`
//! plugin may have one beside it (`NAME.lua.toml`, see [`sidecar_path`]); without one it
//! gets [`Manifest::clm_default`], which asks for what clm-tool(5) gives every plugin.
//! Loading, `inspect` and `pack` all take a `.lua` plugin's manifest from
//! [`lua_plugin_manifest`], so they agree on it and on its id ([`lua_id`]).
//! What a plugin finally gets is the intersection with the user's policy (`grants`).

use std::collections::BTreeMap;
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
    /// Who made it and where it lives: shown to the user, never acted on.
    pub about: About,
    /// The plugins it needs and those it cannot run beside.
    pub dependencies: Dependencies,
    /// The keys of the document toolcell does not know (`capabilities.file`), sorted:
    /// ignored, and reported as a warning when the plugin loads.
    pub unknown_keys: Vec<String>,
}

/// What a manifest says about where a plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct About {
    /// Who wrote it (`"Ada Lovelace <ada@example.org>"`).
    pub author: Option<String>,
    /// Its licence, as an SPDX expression (`"MIT OR Apache-2.0"`).
    pub license: Option<String>,
    /// Its web page: an `http` or `https` URL.
    pub homepage: Option<String>,
    /// Where its source is: an `http` or `https` URL.
    pub repository: Option<String>,
    /// Words to find it by.
    pub keywords: Vec<String>,
}

/// The other plugins a plugin depends on, or cannot run beside.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dependencies {
    /// Plugins that must be loaded for this one to load, in the order of their ids.
    pub requires: Vec<Requirement>,
    /// Ids of plugins this one cannot be loaded beside.
    pub conflicts: Vec<String>,
}

impl Dependencies {
    /// Whether the plugin names no other plugin.
    pub fn is_empty(&self) -> bool {
        self.requires.is_empty() && self.conflicts.is_empty()
    }
}

/// One plugin a plugin requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The required plugin's id; a name without a namespace also finds the one loaded
    /// plugin of that name in any namespace.
    pub id: String,
    /// The versions that satisfy it (`">=1.2, <2"`; `"*"`: any).
    pub versions: semver::VersionReq,
}

impl fmt::Display for Requirement {
    /// `'acme/http-utils' >=1.2, <2`, or `'acme/http-utils'` when any version does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", self.id)?;
        if self.versions != semver::VersionReq::STAR {
            write!(f, " {}", self.versions)?;
        }
        Ok(())
    }
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

/// The document as written: every field optional; fields it does not know are collected
/// by `serde_ignored` as it parses.
#[derive(Debug, Default, Deserialize, Serialize)]
struct Document {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    homepage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repository: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conflicts: Vec<String>,
    // Tables after plain values: TOML cannot write a plain key after a table.
    #[serde(default)]
    capabilities: CapabilitiesDocument,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    requires: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
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
            about: About::default(),
            dependencies: Dependencies::default(),
            unknown_keys: Vec::new(),
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
        let mut unknown_keys = Vec::new();
        let document: Document = toml::Deserializer::parse(text)
            .and_then(|deserializer| {
                serde_ignored::deserialize(deserializer, |path| {
                    unknown_keys.push(path.to_string());
                })
            })
            .map_err(|error| ManifestError(toml_error(&error)))?;
        unknown_keys.sort();
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
        for (key, url) in [
            ("homepage", &document.homepage),
            ("repository", &document.repository),
        ] {
            if let Some(url) = url {
                check_url(key, url)?;
            }
        }
        let dependencies = parse_dependencies(&id, document.requires, document.conflicts)?;
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
            about: About {
                author: document.author,
                license: document.license,
                homepage: document.homepage,
                repository: document.repository,
                keywords: document.keywords,
            },
            dependencies,
            unknown_keys,
        })
    }

    /// The manifest as TOML text, every field explicit: what `toolcell pack` embeds.
    pub fn to_toml(&self) -> String {
        let document = Document {
            id: Some(self.id.clone()),
            version: Some(self.version.to_string()),
            description: Some(self.description.clone()),
            author: self.about.author.clone(),
            license: self.about.license.clone(),
            homepage: self.about.homepage.clone(),
            repository: self.about.repository.clone(),
            keywords: self.about.keywords.clone(),
            conflicts: self.dependencies.conflicts.clone(),
            capabilities: CapabilitiesDocument {
                http: Some(self.capabilities.http.to_strings()),
                files: Some(self.capabilities.files),
                memory_mib: self.capabilities.memory_mib,
                timeout_ms: self.capabilities.timeout_ms,
            },
            requires: self
                .dependencies
                .requires
                .iter()
                .map(|requirement| (requirement.id.clone(), requirement.versions.to_string()))
                .collect(),
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

/// Checks that `url`, the manifest's `key`, is an `http` or `https` URL.
fn check_url(key: &str, url: &str) -> Result<(), ManifestError> {
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(()),
        Ok(parsed) => Err(ManifestError(format!(
            "`{key}` {url:?} is a {} URL; give an http or https one",
            parsed.scheme()
        ))),
        Err(error) => Err(ManifestError(format!(
            "`{key}` {url:?} is not a URL ({error})"
        ))),
    }
}

/// The `requires` table and `conflicts` list of the plugin `id`: ids (a requirement's
/// versions a semver requirement), none of them the plugin itself, none in both.
fn parse_dependencies(
    id: &str,
    requires: BTreeMap<String, String>,
    conflicts: Vec<String>,
) -> Result<Dependencies, ManifestError> {
    let plugin_id = |key: &str, other: &str| {
        check_id(other).map_err(|error| {
            ManifestError(format!("`{key}` names {other:?}, not a plugin id: {error}"))
        })?;
        if other == id {
            return Err(ManifestError(format!(
                "`{key}` names the plugin itself ({other:?})"
            )));
        }
        Ok(())
    };
    let mut required = Vec::with_capacity(requires.len());
    for (other, versions) in requires {
        plugin_id("requires", &other)?;
        let versions = semver::VersionReq::parse(&versions).map_err(|error| {
            ManifestError(format!(
                "`requires` {other:?}: {versions:?} is not a version requirement like \
                 \">=1.2, <2\" or \"*\" ({error})"
            ))
        })?;
        required.push(Requirement {
            id: other,
            versions,
        });
    }
    for (index, other) in conflicts.iter().enumerate() {
        plugin_id("conflicts", other)?;
        if required.iter().any(|requirement| requirement.id == *other) {
            return Err(ManifestError(format!(
                "`conflicts` names {other:?}, which `requires` names too"
            )));
        }
        if conflicts[..index].contains(other) {
            return Err(ManifestError(format!("`conflicts` names {other:?} twice")));
        }
    }
    Ok(Dependencies {
        requires: required,
        conflicts,
    })
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

/// The id of the Lua plugin `lua_file`: its file stem made a valid id, a `+` standing
/// for the `/` of a namespaced id as [`file_name_of`] writes it (`acme+notes.lua` is
/// `acme/notes`). Each segment has its letters in lower case, any other character an id
/// cannot hold as `_`, what precedes its first letter or digit dropped, at most
/// [`MAX_ID_LEN`] characters; `lua` when nothing is left. clm loads every `*.lua` file
/// whatever its name, so a name is never a reason to refuse one; `Hello.lua` is the
/// plugin `hello`. A sidecar may not name another id: the file's name is the id.
pub fn lua_id(lua_file: &Path) -> String {
    let stem = lua_file
        .file_stem()
        .map(|stem| stem.to_string_lossy())
        .unwrap_or_default();
    if let Some((namespace, name)) = stem.split_once('+')
        && let (Some(namespace), Some(name)) = (id_segment(namespace), id_segment(name))
    {
        return format!("{namespace}/{name}");
    }
    id_segment(&stem).unwrap_or_else(|| "lua".to_string())
}

/// `text` made one segment of an id (see [`lua_id`]); `None` when nothing is left.
fn id_segment(text: &str) -> Option<String> {
    let segment: String = text
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_') => c,
            _ => '_',
        })
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .take(MAX_ID_LEN)
        .collect();
    (!segment.is_empty()).then_some(segment)
}

/// The id the name of plugin file `path` gives: a `.lua` file's [`lua_id`]; for a
/// `.wasm`, its stem with `+` read as `/` (the id its manifest must claim, see
/// [`file_name_of`]).
pub fn file_id(path: &Path) -> String {
    if path.extension().is_some_and(|extension| extension == "lua") {
        return lua_id(path);
    }
    path.file_stem()
        .map(|stem| stem.to_string_lossy().replace('+', "/"))
        .unwrap_or_default()
}

/// The file name of the plugin `id` with `extension`: the id with the `/` of a
/// namespace written `+`, a character no id contains (`acme/notes` → `acme+notes.wasm`).
/// What `toolcell install` and `toolcell pack` write, and the only name a `.wasm`
/// plugin of that id loads under.
pub fn file_name_of(id: &str, extension: &str) -> String {
    format!("{}.{extension}", id.replace('/', "+"))
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
                "id = \"x\"\nversion = \"1.0.0\"\nkeywords = \"a\"",
                "invalid type: string \"a\", expected a sequence",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\nhomepage = \"ftp://a.example\"",
                "is a ftp URL",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\nrepository = \"example.org/x\"",
                "`repository` \"example.org/x\" is not a URL",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[requires]\n\"Acme/X\" = \"1\"",
                "`requires` names \"Acme/X\", not a plugin id",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[requires]\ny = \">=1.2 <2 3\"",
                "`requires` \"y\": \">=1.2 <2 3\" is not a version requirement",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[requires]\ny = 2",
                "invalid type: integer `2`, expected a string",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\n[requires]\nx = \"*\"",
                "`requires` names the plugin itself",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\nconflicts = [\"x\"]",
                "`conflicts` names the plugin itself",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\nconflicts = [\"y\"]\n[requires]\ny = \"*\"",
                "`conflicts` names \"y\", which `requires` names too",
            ),
            (
                "id = \"x\"\nversion = \"1.0.0\"\nconflicts = [\"y\", \"y\"]",
                "`conflicts` names \"y\" twice",
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
    fn metadata_and_dependencies_parse_and_round_trip() {
        let text = r#"
            id = "acme/app"
            version = "2.0.0"
            author = "Ada <ada@example.org>"
            license = "MIT OR Apache-2.0"
            homepage = "https://example.org/app"
            repository = "https://example.org/app.git"
            keywords = ["notes", "search"]
            conflicts = ["old/app"]
            [requires]
            "acme/http-utils" = ">=1.2, <2"
            json = "*"
        "#;
        let manifest = Manifest::parse(text).expect("parses");
        assert_eq!(
            manifest.about.author.as_deref(),
            Some("Ada <ada@example.org>")
        );
        assert_eq!(manifest.about.license.as_deref(), Some("MIT OR Apache-2.0"));
        assert_eq!(manifest.about.keywords, ["notes", "search"]);
        let requires: Vec<String> = manifest
            .dependencies
            .requires
            .iter()
            .map(ToString::to_string)
            .collect();
        // In the order of their ids; a requirement of any version shows none.
        assert_eq!(requires, ["'acme/http-utils' >=1.2, <2", "'json'"]);
        assert!(
            manifest.dependencies.requires[0]
                .versions
                .matches(&semver::Version::new(1, 9, 3))
        );
        assert_eq!(manifest.dependencies.conflicts, ["old/app"]);
        assert!(manifest.unknown_keys.is_empty());
        assert_eq!(Manifest::parse(&manifest.to_toml()), Ok(manifest));
    }

    #[test]
    fn unknown_keys_are_kept_to_warn_about_not_refused() {
        let text = "id = \"x\"\nversion = \"1.0.0\"\nfoo = 1\nbar = { baz = 2 }\n\
                    [capabilities]\nfile = \"read-only\"\nfiles = \"read-only\"";
        let manifest = Manifest::parse(text).expect("parses");
        assert_eq!(manifest.unknown_keys, ["bar", "capabilities.file", "foo"]);
        assert_eq!(manifest.capabilities.files, FileAccess::ReadOnly);
        // What `pack` embeds leaves them out.
        assert!(
            Manifest::parse(&manifest.to_toml())
                .expect("parses")
                .unknown_keys
                .is_empty()
        );
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
        // A `+` stands for the namespace's `/`, as `install` writes it.
        assert_eq!(id("acme+notes.lua"), "acme/notes");
        assert_eq!(id("Acme+Web Search.lua"), "acme/web_search");
        assert_eq!(id("a+b+c.lua"), "a/b_c");
        assert_eq!(id("+notes.lua"), "notes");
        for name in [
            "Hello.lua",
            "my tool (v2).lua",
            "wetter-ä.lua",
            "_private.lua",
            "é.lua",
            "a+b+c.lua",
            "+notes.lua",
        ] {
            assert_eq!(check_id(&id(name)), Ok(()), "{name}");
        }
    }
}
