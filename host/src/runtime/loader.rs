//! Turning one plugin file into a running sandbox: admission checks (pins, signatures,
//! WIT version, manifest), the grant of capabilities, compilation and the `load` step.

use std::path::Path;
use std::sync::Arc;

use crate::artifact::integrity::Pins;
use crate::artifact::manifest::Manifest;
use crate::artifact::signature::TrustPolicy;
use crate::config::grants::{CapabilityPolicy, Grants};
use crate::engine::Engine;
use crate::engine::cache::CodeCache;
use crate::runtime::admission::{self, Admission, Code, Refusal};
use crate::sandbox::wit::ToolSpec;
use crate::sandbox::{
    self, CodeError, LoadFailure, PluginContext, PluginHandle, PluginPre, SharedServices,
};

use super::plugin::{FileIds, PluginEntry, PluginFile};
use crate::base::wording::file_name;
use crate::runtime::diagnostic::{DiagnosticKind, Severity};

/// What the user's policy says, for every plugin of a runtime.
pub(super) struct Policy {
    /// What plugins may be granted.
    pub capabilities: CapabilityPolicy,
    /// Digests plugin files must match.
    pub pins: Pins,
    /// Which signatures are trusted, and whether unsigned plugins load.
    pub trust: TrustPolicy,
}

impl Policy {
    /// What a plugin file must satisfy to be accepted.
    fn admission(&self) -> Admission<'_> {
        Admission {
            pins: &self.pins,
            trust: &self.trust,
        }
    }
}

/// A loaded plugin: its actor, the tools it registered, its manifest and grants.
pub(super) struct Loaded {
    pub handle: PluginHandle,
    pub specs: Vec<ToolSpec>,
    pub manifest: Manifest,
    pub grants: Grants,
    /// The SHA-256 of its code (`Source::code_digest`).
    pub digest: String,
}

/// The outcome of loading one file, with the warnings it produced either way.
pub(super) struct LoadReport {
    pub warnings: Vec<(DiagnosticKind, Severity, String)>,
    pub outcome: Result<Loaded, Refusal>,
}

impl LoadReport {
    fn refused(kind: DiagnosticKind, message: String) -> Self {
        LoadReport {
            warnings: Vec::new(),
            outcome: Err(Refusal::new(kind, message)),
        }
    }
}

/// Turns plugin files into loaded plugins. Shared by the first load and every reload
/// of a runtime.
pub(super) struct Loader {
    engine: Engine,
    /// The engine's cache, or none when this runtime may not use it.
    cache: CodeCache,
    services: SharedServices,
    policy: Arc<Policy>,
}

impl Loader {
    /// A loader for the runtime being built: plugins run on `engine`, compiled code is
    /// kept in `cache`, `services` are shared by every plugin, `policy` says what each
    /// may be granted.
    pub fn new(
        engine: Engine,
        cache: CodeCache,
        services: SharedServices,
        policy: Policy,
    ) -> Loader {
        Loader {
            engine,
            cache,
            services,
            policy: Arc::new(policy),
        }
    }

    /// Waits until the debug log has written what the plugins logged so far.
    pub fn flush_log(&self) {
        if let Some(log) = &self.services.debug_log {
            log.flush();
        }
    }

    /// Loads `file` into a fresh sandbox and prepares its tools (names and schemas
    /// checked, validators compiled), ready to be registered. `ids` are the ids of the
    /// runtime's plugin files: a file whose id another file's name gives too, or that
    /// claims an id its own name does not give, is refused before any of its code runs.
    pub async fn load_plugin(&self, file: PluginFile, ids: Arc<FileIds>) -> PluginEntry {
        let report = self.load(&file, &ids).await;
        PluginEntry::from_report(file, report, self.policy.capabilities.config())
    }

    async fn load(&self, file: &PluginFile, ids: &FileIds) -> LoadReport {
        if let Some(shared) = ids.shared(file) {
            return LoadReport::refused(DiagnosticKind::IdCollision, shared);
        }
        let read = match read_small(&file.path) {
            Some(bytes) => Ok(admission::admit(
                &file.path,
                bytes,
                file.sidecar,
                &self.policy.admission(),
            )),
            None => {
                let (path, sidecar, policy) =
                    (file.path.clone(), file.sidecar, self.policy.clone());
                tokio::task::spawn_blocking(move || {
                    admission::read(&path, sidecar, &policy.admission())
                })
                .await
            }
        };
        let source = match read {
            Ok(Ok(source)) => source,
            Ok(Err(mut refusal)) => {
                if let Some(claimed) = &refusal.claimed_id
                    && let Some(holder) = ids.others(claimed, &file.path).next()
                {
                    refusal.message = format!(
                        "{}; '{claimed}' is the id of plugin {}",
                        refusal.message,
                        file_name(holder)
                    );
                }
                return LoadReport {
                    warnings: Vec::new(),
                    outcome: Err(refusal),
                };
            }
            Err(error) => {
                return LoadReport::refused(
                    DiagnosticKind::LoadFailed,
                    format!("reading the file was interrupted: {error}"),
                );
            }
        };
        let digest = source.code_digest();
        let mut warnings = source.warnings;
        let manifest = source.manifest;
        let grants = self.policy.capabilities.grant(&manifest);
        warnings.extend(grants.denials().iter().map(|denial| {
            (
                DiagnosticKind::CapabilityDenied,
                Severity::Warning,
                denial.clone(),
            )
        }));
        let pre = match source.code {
            Code::EmbeddedLua => self.engine.lua_guest(&self.cache).await,
            Code::Component { bytes, digest } => {
                let what = format!("plugin {}", file.display_name());
                self.component_pre(bytes, digest, what).await
            }
        };
        let outcome = match pre {
            Err(error) => Err(Refusal::new(DiagnosticKind::LoadFailed, error.to_string())),
            Ok(pre) => {
                // `[tools.NAME]` keyed by another plugin file's id is that plugin's
                // alone, even when this one registers a tool of that name.
                let withheld = self
                    .services
                    .tool_config
                    .keys()
                    .filter(|key| ids.others(key, &file.path).next().is_some())
                    .cloned()
                    .collect();
                let context = PluginContext::new(
                    manifest.id.clone(),
                    source.script,
                    grants.clone(),
                    &self.services,
                    withheld,
                );
                sandbox::spawn_plugin(Arc::new(context), pre)
                    .await
                    .map(|(handle, specs)| Loaded {
                        handle,
                        specs,
                        manifest,
                        grants,
                        digest,
                    })
                    .map_err(|failure| {
                        let message = match failure {
                            LoadFailure::Failed(message) => message,
                            other => other.to_string(),
                        };
                        Refusal::new(DiagnosticKind::LoadFailed, message)
                    })
            }
        };
        LoadReport { warnings, outcome }
    }

    /// Compiles a component (off the async threads: a large one takes seconds).
    async fn component_pre(
        &self,
        bytes: Vec<u8>,
        digest: String,
        what: String,
    ) -> Result<PluginPre, CodeError> {
        let (engine, cache) = (self.engine.clone(), self.cache.clone());
        let component = tokio::task::spawn_blocking(move || {
            cache
                .component(engine.wasmtime(), &bytes, Some(&digest), &what)
                .map_err(|error| CodeError::NotAComponent(format!("{error:#}")))
        })
        .await
        .map_err(|error| CodeError::Interrupted {
            what: "compiling",
            reason: error.to_string(),
        })??;
        self.engine.link(&component)
    }
}

/// Plugin files up to this size are read on the loading thread: reading a few KiB costs
/// less than handing the read to the blocking pool and back, two thread wake-ups
/// (docs/performance.md).
const READ_INLINE_MAX_BYTES: u64 = 64 * 1024;

/// The content of `path` when it is a regular file small enough to read without
/// leaving the async thread; `None` for anything else: a FIFO or a device, whose reads
/// may block (it is opened without blocking, so opening a FIFO does not wait for a
/// writer), a larger file, or one that cannot be opened or read, which the blocking
/// read then reports.
fn read_small(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > READ_INLINE_MAX_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    // Through `take`, which reads to the end without asking the file for its size and
    // position again (`File::read_to_end` does), and stops a file that grew meanwhile.
    (&mut file)
        .take(READ_INLINE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= READ_INLINE_MAX_BYTES).then_some(bytes)
}
