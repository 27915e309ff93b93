//! What loading plugins tells the user: diagnostics, their severity and stable codes.

use std::path::PathBuf;

/// Something worth telling the user about a plugin directory: a plugin that failed to
/// load or was refused, a tool name that collided, a capability the policy cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The plugin file concerned.
    pub file: PathBuf,
    /// What went wrong.
    pub kind: DiagnosticKind,
    /// Whether something failed (an error) or only looked odd (a warning).
    pub severity: Severity,
    /// One line saying what and why.
    pub message: String,
}

impl Diagnostic {
    /// An error about `file`.
    pub(crate) fn error(file: PathBuf, kind: DiagnosticKind, message: String) -> Self {
        Diagnostic {
            file,
            kind,
            severity: Severity::Error,
            message,
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// How serious a diagnostic is. `toolcell check` exits 1 when there is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A plugin, tool or capability is missing because of it.
    Error,
    /// Everything loaded, but something deserves a look.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// The kinds of diagnostics; [`DiagnosticKind::code`] is the stable identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The plugin did not load; none of its tools are registered.
    LoadFailed,
    /// Two tools (or a tool and a name the embedder reserved, or an alias) want one
    /// name: the first keeps it, the other answers only to its path.
    ToolCollision,
    /// The plugin loaded but registered no tools.
    NoTools,
    /// A tool's registration was unusable (an invalid name or schema) and was dropped.
    ToolRejected,
    /// The plugin's manifest is malformed or breaks a rule.
    ManifestInvalid,
    /// A `.wasm` plugin carries no manifest.
    ManifestMissing,
    /// The user's policy grants less than the manifest asks for.
    CapabilityDenied,
    /// The plugin was built for a WIT version this toolcell cannot load, or is not a
    /// toolcell plugin at all.
    WitMismatch,
    /// The file's digest does not match the user's pins.
    DigestMismatch,
    /// A signature is malformed or does not match the artifact.
    SignatureInvalid,
    /// The plugin is not signed and the trust policy refuses unsigned plugins.
    SignatureMissing,
    /// The plugin is signed, but by no trusted key.
    SignatureUntrusted,
    /// Another plugin file has the same id: neither is loaded.
    IdCollision,
    /// The plugin claims an id its file name does not give it (a `.lua` sidecar's `id`,
    /// a `.wasm` manifest's id under another file name); it is not loaded.
    IdMismatch,
    /// A tool's name holds `__`, which joins the parts of a wire name: the tool answers
    /// to its path (and its path's wire name) only.
    ToolNameRefused,
    /// An `[aliases]` entry names a tool no loaded plugin registers.
    AliasUnresolved,
    /// An `[aliases]` entry names a plain name that more than one tool registers; it is
    /// not used.
    AliasAmbiguous,
    /// A permission rule or preset member matches no loaded tool.
    RuleUnmatched,
    /// A tool's description or title is longer than the model is shown; it was cut.
    DescriptionCut,
    /// The manifest has keys toolcell does not know; they were ignored.
    ManifestUnknownKey,
    /// A plugin the manifest `requires` is not loaded; this one is not loaded.
    PluginNotInstalled,
    /// A required plugin is loaded, but in a version the requirement does not accept.
    PluginVersionMismatch,
    /// A requirement by a name without a namespace finds several loaded plugins.
    PluginAmbiguous,
    /// The manifest `conflicts` with a loaded plugin; this one is not loaded.
    PluginConflict,
}

impl DiagnosticKind {
    /// The stable identifier scripts can match on (`tool_collision`, ...).
    pub fn code(self) -> &'static str {
        match self {
            DiagnosticKind::LoadFailed => "load_failed",
            DiagnosticKind::ToolCollision => "tool_collision",
            DiagnosticKind::NoTools => "no_tools",
            DiagnosticKind::ToolRejected => "tool_rejected",
            DiagnosticKind::ManifestInvalid => "manifest_invalid",
            DiagnosticKind::ManifestMissing => "manifest_missing",
            DiagnosticKind::CapabilityDenied => "capability_denied",
            DiagnosticKind::WitMismatch => "wit_mismatch",
            DiagnosticKind::DigestMismatch => "digest_mismatch",
            DiagnosticKind::SignatureInvalid => "signature_invalid",
            DiagnosticKind::SignatureMissing => "signature_missing",
            DiagnosticKind::SignatureUntrusted => "signature_untrusted",
            DiagnosticKind::IdCollision => "id_collision",
            DiagnosticKind::IdMismatch => "id_mismatch",
            DiagnosticKind::ToolNameRefused => "tool_name_refused",
            DiagnosticKind::AliasUnresolved => "alias_unresolved",
            DiagnosticKind::AliasAmbiguous => "alias_ambiguous",
            DiagnosticKind::RuleUnmatched => "rule_unmatched",
            DiagnosticKind::DescriptionCut => "description_cut",
            DiagnosticKind::ManifestUnknownKey => "manifest_unknown_key",
            DiagnosticKind::PluginNotInstalled => "plugin_not_installed",
            DiagnosticKind::PluginVersionMismatch => "plugin_version_mismatch",
            DiagnosticKind::PluginAmbiguous => "plugin_ambiguous",
            DiagnosticKind::PluginConflict => "plugin_conflict",
        }
    }
}
