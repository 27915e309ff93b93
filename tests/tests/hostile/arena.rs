//! Runs one attack in an arena of its own and checks everything the issue asks of it.
//!
//! An arena is one temporary directory holding `plugins/` (the hostile plugin and the
//! canary), `root/` (the only tree plugins may touch) and `outside/` (a secret that
//! must stay as it is). After the attack's own steps, every attack also checks that
//! the host still serves calls, that the canary tool of another plugin still answers
//! correctly, and that nothing in the arena outside `root/` changed, nor anything the
//! host trusts inside it (the attack's [`Layout`] may put the plugin directory or the
//! compiled-code cache there).
//!
//! An attack on the default root runs in a child process (this test binary, asked for
//! that one trial), since the working directory and `HOME` belong to the process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tempfile::TempDir;
use toolcell::artifact::Artifact;
use toolcell::cache::CodeCache;
use toolcell::config::Config;
use toolcell::engine::Options;
use toolcell::http::HostGrant;
use toolcell::limits::MIB;
use toolcell::manifest::{self, MANIFEST_SECTION, Manifest};
use toolcell::policy::{Answer, PermissionPrompt};
use toolcell::results::ResultStore;
use toolcell::{Call, CallOutcome, Engine, Runtime, Scope, Session, Severity};
use toolcell_tests::Form;
use toolcell_tests::http_server::TestServer;

use super::attack::{Attack, Expect, Layout, SessionSetup, Setup, Source, Step};

/// Set in the child process that runs an attack from a home directory: the arena the
/// parent made for it.
const CHILD_ARENA: &str = "TOOLCELL_HOSTILE_ARENA";

/// Where the hostile plugins live.
const HOSTILE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/hostile");

/// The canary: another plugin, loaded first, whose one tool must keep answering.
const CANARY_FILE: &str = "aaa_canary.lua";
const CANARY: &str = r#"
clm.tool_register("canary", { invoke = function(args, ctx)
  ctx:complete("canary " .. args.nonce .. " " .. #args.nonce)
end })
"#;

/// Bound on any one step: only catches hangs.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A file tree as a comparable value: each path with its kind and content.
type Snapshot = BTreeMap<PathBuf, String>;

/// The directories of one attack.
struct Arena {
    /// Deletes the arena at the end (the child process uses its parent's).
    _owned: Option<TempDir>,
    base: PathBuf,
    layout: Layout,
    /// The result store and the debug log: the host's, outside the arena, so that
    /// what the host writes there is not taken for an escape.
    host_files: TempDir,
}

impl Arena {
    fn new(layout: Layout) -> Arena {
        let owned = TempDir::new().expect("arena");
        let arena = Arena {
            base: owned.path().to_path_buf(),
            _owned: Some(owned),
            layout,
            host_files: TempDir::new().expect("host files"),
        };
        for dir in [arena.plugins(), arena.root(), arena.outside()] {
            std::fs::create_dir_all(dir).expect("arena folder");
        }
        std::fs::write(arena.outside().join("secret.txt"), "the secret").expect("secret");
        std::fs::write(arena.plugins().join(CANARY_FILE), CANARY).expect("canary");
        match layout {
            Layout::CacheInRoot { via_symlink: true } => {
                std::os::unix::fs::symlink(arena.root(), arena.base.join("rootlink"))
                    .expect("root link");
            }
            Layout::HomeAsDefaultRoot => {
                std::fs::write(arena.root().join(".bashrc"), "# the user's startup file\n")
                    .expect(".bashrc");
            }
            _ => {}
        }
        arena
    }

    /// The arena the parent process made (see [`CHILD_ARENA`]).
    fn existing(base: PathBuf, layout: Layout) -> Arena {
        Arena {
            _owned: None,
            base,
            layout,
            host_files: TempDir::new().expect("host files"),
        }
    }

    fn plugins(&self) -> PathBuf {
        match self.layout {
            Layout::PluginsInRoot => self.root().join("plugins"),
            _ => self.base.join("plugins"),
        }
    }

    fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    /// The root as the runtime is given it, if it is given one.
    fn given_root(&self) -> Option<PathBuf> {
        match self.layout {
            Layout::HomeAsDefaultRoot | Layout::OwnDirs => None,
            Layout::CacheInRoot { via_symlink: true } => Some(self.base.join("rootlink")),
            _ => Some(self.root()),
        }
    }

    /// The compiled-code cache, when the attack's layout puts it in the root.
    fn cache(&self) -> Option<PathBuf> {
        match self.layout {
            Layout::CacheInRoot { .. } => Some(self.root().join(".cache/toolcell")),
            _ => None,
        }
    }

    fn outside(&self) -> PathBuf {
        self.base.join("outside")
    }

    fn results(&self) -> PathBuf {
        self.host_files.path().join("results")
    }

    fn log(&self) -> PathBuf {
        self.host_files.path().join("debug.log")
    }

    /// Everything plugins must not change: the arena outside the root, and what the
    /// host trusts inside it (all of it when no root is granted).
    fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::new();
        let granted = self.given_root().map(|_| self.root());
        record(&self.base, granted.as_deref(), &mut snapshot);
        let trusted_inside = match self.layout {
            Layout::PluginsInRoot => Some(self.plugins()),
            _ => self.cache(),
        };
        if let Some(dir) = trusted_inside {
            record(&dir, None, &mut snapshot);
        }
        snapshot
    }
}

fn record(dir: &Path, skip: Option<&Path>, snapshot: &mut Snapshot) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable")
        .map(|entry| entry.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if Some(path.as_path()) == skip {
            continue;
        }
        if std::fs::symlink_metadata(&path).expect("metadata").is_dir() {
            record(&path, skip, snapshot);
        }
        snapshot.insert(path.clone(), described(&path));
    }
}

/// One entry of a snapshot: a symlink's target, `dir`, or a file's size and digest.
fn described(path: &Path) -> String {
    let metadata = std::fs::symlink_metadata(path).expect("metadata");
    if metadata.is_symlink() {
        format!(
            "link to {}",
            std::fs::read_link(path).expect("link").display()
        )
    } else if metadata.is_dir() {
        "dir".to_string()
    } else {
        let content = std::fs::read(path).expect("content");
        format!(
            "file of {} bytes: {}",
            content.len(),
            toolcell::cache::sha256_hex(&content)
        )
    }
}

/// Replaces the placeholders an attack may use in arguments and messages.
struct Placeholders {
    pairs: Vec<(&'static str, String)>,
}

impl Placeholders {
    /// These placeholders and one more.
    fn with(&self, key: &'static str, value: String) -> Placeholders {
        let mut pairs = self.pairs.clone();
        pairs.push((key, value));
        Placeholders { pairs }
    }

    fn fill(&self, text: &str) -> String {
        self.pairs
            .iter()
            .fold(text.to_string(), |text, (key, value)| {
                text.replace(key, value)
            })
    }
}

/// Why an attack's test failed.
pub struct Failure {
    /// Something outside the granted root changed: the plugin escaped.
    pub escaped: bool,
    /// What was expected and what happened.
    pub message: String,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            escaped: false,
            message,
        }
    }
}

/// Runs `attack` to the end, in each form it is tried in; an `Err` says which
/// expectation failed.
pub fn run(attack: &Attack) -> Result<(), Failure> {
    if attack.layout == Layout::HomeAsDefaultRoot && std::env::var_os(CHILD_ARENA).is_none() {
        return run_in_child(attack);
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("tokio: {error}"))?;
    tokio.block_on(run_async(attack, Form::Lua))?;
    for (tried, form, name) in [
        (attack.packed_too, Form::Packed, "packed"),
        (attack.compiled_too, Form::Compiled, "compiled"),
    ] {
        if tried {
            tokio
                .block_on(run_async(attack, form))
                .map_err(|failure| Failure {
                    escaped: failure.escaped,
                    message: format!("{name}: {}", failure.message),
                })?;
        }
    }
    Ok(())
}

/// Runs `attack` in a child process whose home and working directory are the arena's
/// root, and checks that nothing in the arena changed.
fn run_in_child(attack: &Attack) -> Result<(), Failure> {
    let arena = Arena::new(attack.layout);
    install_plugin(attack, Form::Lua, &arena.plugins())?;
    let before = arena.snapshot();
    let exe = std::env::current_exe().map_err(|error| format!("own path: {error}"))?;
    let output = std::process::Command::new(exe)
        .args(["--exact", &format!("{}::{}", attack.category, attack.name)])
        .env(CHILD_ARENA, &arena.base)
        .env("HOME", arena.root())
        .current_dir(arena.root())
        .output()
        .map_err(|error| format!("cannot run the child process: {error}"))?;
    let after = arena.snapshot();
    if before != after {
        return Err(Failure {
            escaped: true,
            message: format!(
                "something in the arena changed:\nbefore: {before:#?}\nafter: {after:#?}"
            ),
        });
    }
    if !output.status.success() {
        return Err(format!(
            "the child process failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(())
}

/// A real entry in `engine`'s cache (compiled from an empty component), with its key;
/// returns the entry's file name.
fn cache_entry(engine: &Engine) -> Result<String, String> {
    let dir = engine.cache().dir().ok_or("the engine has no cache")?;
    let wasm = wat::parse_str("(component)").map_err(|error| error.to_string())?;
    engine
        .cache()
        .component(engine.wasmtime(), &wasm, None, "an empty component")
        .map_err(|error| format!("{error:#}"))?;
    std::fs::read_dir(dir)
        .map_err(|error| error.to_string())?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .find(|name| name.ends_with(".cwasm"))
        .ok_or_else(|| format!("no entry in {}", dir.display()))
}

async fn run_async(attack: &Attack, form: Form) -> Result<(), Failure> {
    let arena = match std::env::var_os(CHILD_ARENA) {
        Some(base) => Arena::existing(base.into(), attack.layout),
        None => Arena::new(attack.layout),
    };
    let server = if attack.net.server {
        Some(TestServer::start().await)
    } else {
        None
    };
    let mut pairs = vec![
        ("{outside}", arena.outside().display().to_string()),
        ("{results}", arena.results().display().to_string()),
        (
            "{root}",
            arena
                .root()
                .canonicalize()
                .expect("root")
                .display()
                .to_string(),
        ),
    ];
    if let Some(server) = &server {
        pairs.push(("{server}", server.url("")));
        pairs.push(("{port}", server.port().to_string()));
    }
    pairs.push(("{plugins}", arena.plugins().display().to_string()));
    // An attack on a cache inside the root needs an engine keeping its code there.
    let engine = match arena.cache() {
        Some(cache) => {
            let engine = Engine::new(Options {
                cache: CodeCache::new(Some(cache.clone())),
                pooling: false,
                ..Options::default()
            })
            .map_err(|error| error.to_string())?;
            pairs.push(("{entry}", cache_entry(&engine)?));
            pairs.push(("{cache}", cache.display().to_string()));
            engine
        }
        None => toolcell_tests::engine(),
    };
    let file = install_plugin(attack, form, &arena.plugins())?;
    // The plugin's file name, which a packed form changes (`NAME.wasm`).
    pairs.push(("{file}", file.clone()));
    let placeholders = Placeholders { pairs };
    for (name, content) in &attack.companions {
        std::fs::write(arena.plugins().join(name), content).map_err(|e| format!("{name}: {e}"))?;
    }
    for setup in &attack.setup {
        prepare(setup, &arena.root(), &arena.plugins(), &placeholders)?;
    }
    let mut before = arena.snapshot();

    let mut builder = Runtime::builder()
        .engine(engine)
        .plugin_dir(arena.plugins())
        .debug_log(attack.logged.then(|| arena.log()))
        .result_store(Some(ResultStore::new(arena.results(), 100 * MIB)))
        .limits(attack.limits.clone())
        .http_overrides(attack.net.overrides.clone())
        .permission_rules(attack.rules.clone());
    if let Some(text) = attack.config {
        let config = Config::parse(&placeholders.fill(text))
            .map_err(|error| format!("the attack's configuration: {error}"))?;
        builder = builder.config(config);
    }
    if let Some(root) = arena.given_root() {
        builder = builder.root(root);
    }
    if attack.layout == Layout::OwnDirs {
        builder = builder.data_dir(arena.root());
    }
    if attack.net.grant_loopback {
        builder = builder.allow_http("127.0.0.1".parse::<HostGrant>().expect("grant"));
    }
    let runtime = builder
        .build()
        .await
        .map_err(|error| format!("build: {error}"))?;
    let prompts = Arc::new(AtomicUsize::new(0));
    let session = match &attack.session {
        Some(setup) => Some(session(setup, prompts.clone())?),
        None => None,
    };

    // The tag of the envelope the model's text comes in (output, errors, progress).
    let tag = match &session {
        Some(session) => session.envelope_tag(),
        None => runtime.envelope_tag(),
    };
    let placeholders = placeholders.with("{tag}", tag.to_string());
    let mut steps = Steps {
        runtime,
        session,
        prompts,
        arena: &arena,
        file: &file,
        placeholders: &placeholders,
        server: server.as_ref(),
        background: Vec::new(),
        last_result: None,
        reloaded: Vec::new(),
    };
    for step in &attack.steps {
        steps.check(step).await?;
    }
    let (runtime, background) = (steps.runtime, steps.background);
    // The plugin files the attack rewrote changed on purpose.
    for path in steps.reloaded {
        before.insert(path.clone(), described(&path));
    }
    // The host is alive and still serves calls: the canary of another plugin answers,
    // with content it could only compute from this call's arguments.
    let nonce = attack.name;
    let canary = with_guard(runtime.call("canary", &format!("{{\"nonce\":\"{nonce}\"}}"))).await?;
    let expected = format!("canary {nonce} {}", nonce.len());
    if canary != CallOutcome::Completed(expected.clone()) {
        return Err(format!("the canary answered {canary:?}, expected {expected:?}").into());
    }
    drop(background);
    drop(runtime);
    let after = arena.snapshot();
    if before != after {
        return Err(Failure {
            escaped: true,
            message: format!(
                "something outside the granted root changed:\nbefore: {before:#?}\nafter: {after:#?}"
            ),
        });
    }
    Ok(())
}

/// Writes the attack's plugin into `plugins`, a Lua one in `form`; returns its file
/// name.
fn install_plugin(attack: &Attack, form: Form, plugins: &Path) -> Result<String, String> {
    let folder = Path::new(HOSTILE_DIR).join(attack.category.folder());
    let (file, bytes) = match &attack.source {
        Source::Lua | Source::LuaFrom(_) => {
            let from = match attack.source {
                Source::LuaFrom(from) => format!("{from}.lua"),
                _ => format!("{}.lua", attack.name),
            };
            let file = format!("{}.lua", attack.name);
            let bytes = std::fs::read(folder.join(&from)).map_err(|e| format!("{from}: {e}"))?;
            // Its sidecar manifest, when the attack is on what a manifest says.
            let sidecar = manifest::sidecar_path(&folder.join(&file));
            let sidecar = std::fs::read_to_string(&sidecar).ok();
            match form {
                Form::Lua => {
                    if let Some(text) = &sidecar {
                        let name = format!("{file}.toml");
                        std::fs::write(plugins.join(&name), text)
                            .map_err(|e| format!("{name}: {e}"))?;
                    }
                    (file, bytes)
                }
                Form::Packed => {
                    let manifest = match &sidecar {
                        Some(text) => Manifest::parse_sidecar(text, attack.name)
                            .map_err(|error| format!("{file}.toml: {error}"))?,
                        None => Manifest::clm_default(attack.name),
                    };
                    let packed = toolcell::pack::pack_lua(&bytes, &manifest)
                        .map_err(|error| format!("packing {file}: {error}"))?;
                    (format!("{}.wasm", attack.name), packed)
                }
                Form::Compiled => {
                    let manifest = Manifest::clm_default(attack.name);
                    let packed = toolcell_tests::pack_compiled(&bytes, &manifest)
                        .map_err(|error| format!("compiling {file}: {error}"))?;
                    (format!("{}.wasm", attack.name), packed)
                }
            }
        }
        Source::Wat | Source::Core => {
            let file = match attack.source {
                Source::Wat => format!("{}.wat", attack.name),
                _ => format!("{}.core.wat", attack.name),
            };
            let bytes = with_manifest(assemble(&folder, &file)?, attack.name);
            (format!("{}.wasm", attack.name), bytes)
        }
        Source::Truncated { file, keep } => {
            let mut bytes = assemble(&folder, file)?;
            bytes.truncate(*keep);
            (format!("{}.wasm", attack.name), bytes)
        }
        Source::RawFile(raw) => {
            let bytes = std::fs::read(folder.join(raw)).map_err(|e| format!("{raw}: {e}"))?;
            (format!("{}.wasm", attack.name), bytes)
        }
        Source::CompiledWithScript(other) => {
            let file = format!("{}.lua", attack.name);
            let script = std::fs::read(folder.join(&file)).map_err(|e| format!("{file}: {e}"))?;
            let swapped = std::fs::read(folder.join(other)).map_err(|e| format!("{other}: {e}"))?;
            let manifest = Manifest::clm_default(attack.name);
            let compiled = toolcell_tests::pack_compiled(&script, &manifest)
                .map_err(|error| format!("compiling {file}: {error}"))?;
            let artifact = toolcell::artifact::Artifact::parse(&compiled)
                .map_err(|error| format!("the compiled {file}: {error}"))?;
            let bytes = artifact.rewrite(
                &[toolcell::artifact::SCRIPT_SECTION],
                &[(toolcell::artifact::SCRIPT_SECTION, &swapped)],
            );
            (format!("{}.wasm", attack.name), bytes)
        }
    };
    std::fs::write(plugins.join(&file), bytes).map_err(|e| format!("{file}: {e}"))?;
    Ok(file)
}

/// `bytes` carrying clm's default manifest with the attack's name as the id, as a
/// `.wasm` plugin must to be admitted: the attacks are on what comes after admission.
/// Bytes that are not a component at all stay as they are.
fn with_manifest(bytes: Vec<u8>, name: &str) -> Vec<u8> {
    let text = Manifest::clm_default(name).to_toml();
    match Artifact::parse(&bytes) {
        Ok(artifact) => artifact.rewrite(&[], &[(MANIFEST_SECTION, text.as_bytes())]),
        Err(_) => bytes,
    }
}

/// The component binary of `file`: a whole component (`.wat`), or a core module
/// (`.core.wat`) put into `shell.wat` in place of its marker.
fn assemble(folder: &Path, file: &str) -> Result<Vec<u8>, String> {
    let read =
        |name: &str| std::fs::read_to_string(folder.join(name)).map_err(|e| format!("{name}: {e}"));
    let text = if file.ends_with(".core.wat") {
        read("shell.wat")?.replace(";; @MAIN@", &read(file)?)
    } else {
        read(file)?
    };
    wat::parse_str(&text).map_err(|error| format!("{file}: {error}"))
}

fn prepare(
    setup: &Setup,
    root: &Path,
    plugins: &Path,
    placeholders: &Placeholders,
) -> Result<(), String> {
    let result = match setup {
        Setup::Symlink { link, target } => {
            std::os::unix::fs::symlink(placeholders.fill(target), root.join(link))
        }
        Setup::Fifo(path) => rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join(path),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .map_err(std::io::Error::from),
        Setup::ZeroDevice(path) => rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join(path),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::from_raw_mode(0o666),
            rustix::fs::makedev(1, 5),
        )
        .map_err(std::io::Error::from),
        Setup::Dir(path) => std::fs::create_dir(root.join(path)),
        Setup::File(path, content) => std::fs::write(root.join(path), content),
        Setup::LinkedPlugin { link, target } => std::fs::write(
            root.join(target),
            r#"clm.tool_register("victim", { invoke = function(_, c) c:complete("victim") end })"#,
        )
        .and_then(|()| std::os::unix::fs::symlink(root.join(target), plugins.join(link))),
    };
    result.map_err(|error| format!("setting up {setup:?}: {error}"))
}

async fn with_guard(call: Result<Call, toolcell::InvokeError>) -> Result<CallOutcome, String> {
    let call = call.map_err(|error| format!("the call was refused: {error}"))?;
    tokio::time::timeout(HANG_GUARD, call)
        .await
        .map_err(|_| format!("the call did not end within {HANG_GUARD:?}"))
}

/// The session of `setup`, counting in `prompts` each time its user is asked.
fn session(setup: &SessionSetup, prompts: Arc<AtomicUsize>) -> Result<Session, String> {
    let session = if setup.approves {
        Session::with_permission_handler(move |_: PermissionPrompt| {
            prompts.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Answer::AllowForSession)
        })
    } else {
        Session::new()
    };
    if setup.scope.is_empty() {
        return Ok(session);
    }
    let scope = Scope::parse(setup.scope.iter().copied()).map_err(|error| error.to_string())?;
    Ok(session.with_scope(scope))
}

/// What the steps of one attack share.
struct Steps<'a> {
    runtime: Runtime,
    /// The session calls go through, if the attack has one.
    session: Option<Session>,
    /// How many times the session's user was asked.
    prompts: Arc<AtomicUsize>,
    arena: &'a Arena,
    file: &'a str,
    placeholders: &'a Placeholders,
    server: Option<&'a TestServer>,
    background: Vec<Call>,
    /// The result id of the last call, as its notice gives it.
    last_result: Option<String>,
    /// The plugin files a [`Step::Reload`] rewrote.
    reloaded: Vec<PathBuf>,
}

impl Steps<'_> {
    /// Starts a call of `tool`, through the session if there is one.
    fn call(&self, tool: &str, args: &str) -> Result<Call, toolcell::InvokeError> {
        match &self.session {
            Some(session) => session.call(&self.runtime, tool, args),
            None => self.runtime.call(tool, args),
        }
    }

    /// What the session's model is shown (the canary left out).
    fn listed(&self) -> Vec<toolcell::ListedTool> {
        let fresh;
        let session = match &self.session {
            Some(session) => session,
            None => {
                fresh = Session::new();
                &fresh
            }
        };
        let mut tools = session.tools(&self.runtime);
        tools.retain(|tool| tool.name != "canary");
        tools
    }

    async fn check(&mut self, step: &Step) -> Result<(), String> {
        if let Step::Reload { file, content } = step {
            let path = self.arena.plugins().join(file);
            std::fs::write(&path, content).map_err(|e| format!("{file}: {e}"))?;
            self.runtime
                .reload(&path)
                .await
                .ok_or_else(|| format!("{file} is not a plugin file of the runtime"))?;
            self.reloaded.push(path);
            return Ok(());
        }
        let (runtime, file, placeholders) = (&self.runtime, self.file, self.placeholders);
        match step {
            Step::LoadFails(expected) | Step::LoadFailsStartingWith(expected) => {
                let expected = placeholders.fill(expected);
                let found: Vec<&str> = runtime
                    .diagnostics()
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .map(|d| d.message.as_str())
                    .collect();
                let matches = match (step, found.as_slice()) {
                    (Step::LoadFails(_), [message]) => *message == expected,
                    (_, [message]) => message.starts_with(&expected),
                    _ => false,
                };
                if !matches {
                    return Err(format!(
                        "{file}: expected the load failure {expected:?}, got {found:?}"
                    ));
                }
                if runtime
                    .tools()
                    .iter()
                    .any(|tool| tool.plugin != "aaa_canary")
                {
                    return Err(format!("{file} failed to load but has tools registered"));
                }
            }
            Step::Diagnostic(message) => {
                let message = placeholders.fill(message);
                if !runtime.diagnostics().iter().any(|d| d.message == message) {
                    return Err(format!(
                        "expected the diagnostic {message:?}, got {:?}",
                        runtime.diagnostics()
                    ));
                }
            }
            Step::ToolCount(count) => {
                if runtime.tools().len() != *count {
                    return Err(format!(
                        "expected {count} tools, got {}",
                        runtime.tools().len()
                    ));
                }
            }
            Step::Call { tool, args, expect } => {
                let args = placeholders.fill(args);
                match self.call(tool, &args) {
                    Err(error) => check_refusal(tool, expect, &error.to_string(), placeholders)?,
                    Ok(call) => {
                        let result = call.result_id();
                        let outcome = with_guard(Ok(call)).await?;
                        let placeholders = placeholders.with("{result}", result.clone());
                        self.last_result = Some(result);
                        check_outcome(tool, expect, &outcome, &placeholders)?;
                    }
                }
            }
            Step::Background { tool, args } => {
                let call = self
                    .call(tool, &placeholders.fill(args))
                    .map_err(|error| format!("{tool}: refused: {error}"))?;
                self.background.push(call);
                // Let the call reach the plugin before the next step.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Step::Settle { index, expect } => {
                let call = self
                    .background
                    .get_mut(*index)
                    .ok_or_else(|| format!("no background call {index}"))?;
                let outcome = tokio::time::timeout(HANG_GUARD, call)
                    .await
                    .map_err(|_| format!("background call {index} did not end"))?;
                check_outcome("the background call", expect, &outcome, placeholders)?;
            }
            Step::ServerRequests(count) => {
                let server = self.server.ok_or("the attack has no server")?;
                let seen = server.stats().requests;
                if seen != *count {
                    return Err(format!("the server saw {seen} requests, expected {count}"));
                }
            }
            Step::RootFile { path, content } => {
                let root = placeholders.fill("{root}");
                let found = std::fs::read(Path::new(&root).join(path))
                    .ok()
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
                if &found != content {
                    return Err(format!(
                        "root/{path}: expected {content:?}, found {found:?}"
                    ));
                }
            }
            Step::HostRss { max_growth } => {
                let (plugins, root) = (self.arena.plugins(), self.arena.root());
                let growth = tokio::task::spawn_blocking(move || rss_growth(&plugins, &root))
                    .await
                    .map_err(|error| format!("measuring RSS: {error}"))??;
                if growth > *max_growth {
                    return Err(format!(
                        "toolcell list peaked {} KiB above the canary alone; at most {} KiB expected",
                        growth / 1024,
                        max_growth / 1024
                    ));
                }
            }
            Step::ResultKept { bytes } => {
                let id = self.last_result.as_deref().ok_or("no call made before")?;
                let kept = runtime
                    .result(id)
                    .map_err(|error| format!("result {id}: {error}"))?;
                if kept.len() != *bytes {
                    return Err(format!(
                        "result {id} is {} bytes, expected {bytes}",
                        kept.len()
                    ));
                }
            }
            Step::DescriptionBytes { tool, bytes } => {
                let found = runtime
                    .tool(tool)
                    .map(|tool| tool.description.len())
                    .ok_or_else(|| format!("no tool {tool}"))?;
                if found != *bytes {
                    return Err(format!(
                        "{tool}'s description is {found} bytes, expected {bytes}"
                    ));
                }
            }
            Step::TitleBytes { tool, bytes } => {
                let found = runtime
                    .tool(tool)
                    .map(|tool| tool.title.as_ref().map_or(0, String::len))
                    .ok_or_else(|| format!("no tool {tool}"))?;
                if found != *bytes {
                    return Err(format!("{tool}'s title is {found} bytes, expected {bytes}"));
                }
            }
            Step::Progress {
                tool,
                args,
                message,
            } => {
                let call = self.call(tool, &placeholders.fill(args));
                let mut updates = call
                    .as_ref()
                    .map_err(|error| format!("{tool}: refused: {error}"))?
                    .progress();
                with_guard(call).await?;
                let mut last = None;
                while let Some(progress) = updates.next().await {
                    last = progress.message;
                }
                let expected = placeholders.fill(message);
                if last.as_deref() != Some(expected.as_str()) {
                    return Err(format!(
                        "{tool}: the last progress message read was {last:?}, expected {expected:?}"
                    ));
                }
            }
            Step::Log {
                max_bytes,
                last_line_end,
            } => check_log(&self.arena.log(), *max_bytes, last_line_end).await?,
            Step::Coded { code, message } => {
                let message = placeholders.fill(message);
                if !runtime
                    .diagnostics()
                    .iter()
                    .any(|d| d.kind.code() == *code && d.message == message)
                {
                    let found: Vec<String> = runtime
                        .diagnostics()
                        .iter()
                        .map(|d| format!("{}: {}", d.kind.code(), d.message))
                        .collect();
                    return Err(format!(
                        "expected the diagnostic {code}: {message:?}, got {found:#?}"
                    ));
                }
            }
            Step::Listed(names) => {
                let shown: Vec<String> = self.listed().into_iter().map(|tool| tool.name).collect();
                if shown != *names {
                    return Err(format!("the model is shown {shown:?}, expected {names:?}"));
                }
            }
            Step::ReadOnly { tool, read_only } => {
                let listed = self.listed();
                let found = listed
                    .iter()
                    .find(|listed| listed.name == *tool)
                    .ok_or_else(|| format!("{tool} is not shown"))?;
                if found.read_only != *read_only {
                    return Err(format!(
                        "{tool} is shown with read_only {}, expected {read_only}",
                        found.read_only
                    ));
                }
            }
            Step::Prompts(count) => {
                let asked = self.prompts.load(Ordering::SeqCst);
                if asked != *count {
                    return Err(format!(
                        "the user was asked {asked} times, expected {count}"
                    ));
                }
            }
            Step::Reload { .. } => unreachable!("reloaded above"),
        }
        Ok(())
    }
}

/// How much more `toolcell list` of `plugins` peaks at than the same with the canary
/// alone (resident memory, as the kernel counts a child's peak).
fn rss_growth(plugins: &Path, root: &Path) -> Result<u64, String> {
    let canary = TempDir::new().map_err(|error| error.to_string())?;
    std::fs::write(canary.path().join(CANARY_FILE), CANARY).map_err(|e| e.to_string())?;
    let alone = peak_rss(canary.path(), root)?;
    let with = peak_rss(plugins, root)?;
    Ok(with.saturating_sub(alone))
}

/// The peak RSS of `toolcell list --plugins PLUGINS --root ROOT`, in bytes.
fn peak_rss(plugins: &Path, root: &Path) -> Result<u64, String> {
    let child = std::process::Command::new(toolcell_tests::guest_build::toolcell_binary())
        .arg("list")
        .arg("--plugins")
        .arg(plugins)
        .arg("--root")
        .arg(root)
        .env_remove("CLM_DEBUG_LOG")
        .env_remove("TOOLCELL_DEBUG_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|error| format!("starting toolcell list: {error}"))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|error| error.to_string())?;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is a child of this process that nothing else waits for (its
    // `Child` handle is never waited on), and both pointers are to live locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if waited < 0 {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("toolcell list ended with wait status {status}"));
    }
    // Linux counts a child's peak resident memory in KiB.
    Ok(u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024)
}

/// Waits (a few seconds at most: the log is written by a thread of its own) until the
/// log's last line ends as expected, then checks its size.
async fn check_log(path: &Path, max_bytes: usize, last_line_end: &str) -> Result<(), String> {
    let started = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let last = text
            .trim_end_matches('\n')
            .rsplit('\n')
            .next()
            .unwrap_or("");
        if last.ends_with(last_line_end) {
            if text.len() > max_bytes {
                return Err(format!(
                    "the debug log is {} bytes, at most {max_bytes} expected",
                    text.len()
                ));
            }
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err(format!(
                "the debug log ({} bytes) ends with the line {last:?}, expected it to end with {last_line_end:?}",
                text.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn check_refusal(
    tool: &str,
    expect: &Expect,
    error: &str,
    placeholders: &Placeholders,
) -> Result<(), String> {
    match expect {
        Expect::Refused(expected) if placeholders.fill(expected) == error => Ok(()),
        _ => Err(format!(
            "{tool}: refused with {error:?}, expected {expect:?}"
        )),
    }
}

fn check_outcome(
    tool: &str,
    expect: &Expect,
    outcome: &CallOutcome,
    placeholders: &Placeholders,
) -> Result<(), String> {
    let matches = match (expect, outcome) {
        (Expect::Completes(text), CallOutcome::Completed(output)) => {
            &placeholders.fill(text) == output
        }
        // A result of parts, as a caller that shows text reads it.
        (Expect::Completes(text), CallOutcome::Content(_)) => {
            placeholders.fill(text) == outcome.model_text()
        }
        (Expect::Fails(text), outcome) => {
            outcome.failure() == Some(placeholders.fill(text).as_str())
        }
        (Expect::FailsAs(kind, text), outcome) => {
            outcome.label() == *kind && outcome.failure() == Some(placeholders.fill(text).as_str())
        }
        (Expect::FailsStartingWith(text), outcome) => outcome
            .failure()
            .is_some_and(|message| message.starts_with(&placeholders.fill(text))),
        _ => false,
    };
    if matches {
        Ok(())
    } else {
        let text = outcome.output().or(outcome.failure()).unwrap_or_default();
        let shown = if text.len() > 2000 {
            format!(
                "{} {} bytes starting {:?}",
                outcome.label(),
                text.len(),
                text.chars().take(300).collect::<String>()
            )
        } else {
            format!("{outcome:?}")
        };
        Err(format!("{tool}: got {shown}, expected {expect:?}"))
    }
}
