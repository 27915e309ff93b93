//! Support for toolcell's integration tests: real plugins loaded into real sandboxes,
//! and a real HTTP server on 127.0.0.1.
//!
//! A test writes its plugins as Lua source next to its assertions, loads them with
//! [`Fixture::load`] (each file in its own sandbox, exactly as the CLI would), and calls
//! tools through the embedding API. [`packed::Fixture`] packs each Lua plugin into a
//! `.wasm` artifact first, as `toolcell pack` does, so the same tests show that a
//! packed plugin behaves like its script.

pub mod guest_build;
pub mod http_server;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use tempfile::TempDir;
use toolcell::cache::CodeCache;
use toolcell::engine::Options;
use toolcell::manifest::Manifest;
use toolcell::{CallOutcome, Engine, Runtime, RuntimeBuilder};

/// Generous bound on any single call in a test: only catches hangs.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The compiled-code cache of every test suite (the CLI tests give it to `toolcell`).
pub fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("toolcell-test-cache")
}

/// The engine the tests of one process share, as an embedding agent shares one between
/// its runtimes: the Lua guest is compiled (or read from [`cache_dir`]) and linked
/// once, and the pooling allocator reserves its slots once.
pub fn engine() -> Engine {
    static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
        Engine::new(Options {
            cache: CodeCache::new(Some(cache_dir())),
            ..Options::default()
        })
        .expect("the tests' engine")
    });
    ENGINE.clone()
}

/// How a fixture's Lua plugins reach the plugin directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// As `NAME.lua` files.
    Lua,
    /// Packed into `NAME.wasm` artifacts (the Lua guest, the script and a manifest).
    Packed,
}

/// A plugin directory and a file root, both temporary.
pub struct Fixture {
    plugins: TempDir,
    root: TempDir,
    form: Form,
}

impl Fixture {
    /// A fixture holding `plugins` as (file name, source) pairs.
    pub fn new(plugins: &[(&str, &str)]) -> Fixture {
        Fixture::with_form(Form::Lua, plugins)
    }

    /// A fixture whose Lua plugins take `form`.
    pub fn with_form(form: Form, plugins: &[(&str, &str)]) -> Fixture {
        let fixture = Fixture {
            plugins: TempDir::new().expect("temp dir"),
            root: TempDir::new().expect("temp dir"),
            form,
        };
        for (name, source) in plugins {
            fixture.add_plugin(name, source);
        }
        fixture
    }

    /// Adds (or replaces) a plugin file; a `NAME.lua` is packed into `NAME.wasm` when
    /// the fixture's form is [`Form::Packed`].
    pub fn add_plugin(&self, name: &str, source: &str) {
        let (file, bytes) = match (self.form, name.strip_suffix(".lua")) {
            (Form::Packed, Some(_)) => {
                let id = toolcell::manifest::lua_id(Path::new(name));
                let packed =
                    toolcell::pack::pack_lua(source.as_bytes(), &Manifest::clm_default(&id))
                        .expect("the Lua plugin packs");
                (self.file_name(name), packed)
            }
            _ => (name.to_string(), source.as_bytes().to_vec()),
        };
        std::fs::write(self.plugins.path().join(file), bytes).expect("write plugin");
    }

    /// The file a plugin given as `name` is stored under (`x.lua` becomes `x.wasm`
    /// when packed: the packed plugin is named after its id, as `toolcell pack` names
    /// it, the only name it loads under).
    pub fn file_name(&self, name: &str) -> String {
        match (self.form, name.ends_with(".lua")) {
            (Form::Packed, true) => toolcell::manifest::file_name_of(
                &toolcell::manifest::lua_id(Path::new(name)),
                "wasm",
            ),
            _ => name.to_string(),
        }
    }

    /// The plugin directory.
    pub fn plugin_dir(&self) -> &Path {
        self.plugins.path()
    }

    /// The file root plugins may touch.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A builder over this fixture's directory and root, on the tests' [`engine`].
    pub fn builder(&self) -> RuntimeBuilder {
        Runtime::builder()
            .engine(engine())
            .plugin_dir(self.plugins.path())
            .root(self.root.path())
    }

    /// Loads the fixture's plugins with default settings.
    pub async fn load(&self) -> Runtime {
        self.load_with(|builder| builder).await
    }

    /// Loads the fixture's plugins with settings adjusted by `configure`.
    pub async fn load_with(
        &self,
        configure: impl FnOnce(RuntimeBuilder) -> RuntimeBuilder,
    ) -> Runtime {
        configure(self.builder())
            .build()
            .await
            .expect("the runtime builds")
    }
}

/// The fixture of the packed form, for the conformance suite.
pub mod packed {
    use std::ops::Deref;

    use super::Form;

    /// A [`Fixture`](super::Fixture) whose Lua plugins are packed into `.wasm` files.
    pub struct Fixture(super::Fixture);

    impl Fixture {
        /// A fixture holding `plugins` as (file name, source) pairs, packed.
        pub fn new(plugins: &[(&str, &str)]) -> Fixture {
            Fixture(super::Fixture::with_form(Form::Packed, plugins))
        }
    }

    impl Deref for Fixture {
        type Target = super::Fixture;

        fn deref(&self) -> &super::Fixture {
            &self.0
        }
    }
}

/// Calls `tool` and returns its outcome; panics on usage errors and hangs.
pub async fn call(runtime: &Runtime, tool: &str, args: &str) -> CallOutcome {
    let call = runtime
        .call(tool, args)
        .unwrap_or_else(|error| panic!("calling {tool}: {error}"));
    tokio::time::timeout(HANG_GUARD, call)
        .await
        .unwrap_or_else(|_| panic!("{tool} did not finish within {HANG_GUARD:?}"))
}

/// The output of a call that must complete.
pub async fn output(runtime: &Runtime, tool: &str, args: &str) -> String {
    match call(runtime, tool, args).await {
        CallOutcome::Completed(output) => output,
        other => panic!("{tool} failed: {other:?}"),
    }
}

/// The message of a call that must fail, whatever the kind of failure.
pub async fn failure(runtime: &Runtime, tool: &str, args: &str) -> String {
    failure_labelled(runtime, tool, args).await.1
}

/// The kind (as [`CallOutcome::label`] names it) and message of a call that must fail.
pub async fn failure_labelled(runtime: &Runtime, tool: &str, args: &str) -> (&'static str, String) {
    let outcome = call(runtime, tool, args).await;
    match outcome.failure() {
        Some(message) => (outcome.label(), message.to_string()),
        None => panic!("{tool} completed with {outcome:?} but should fail"),
    }
}

/// Asserts that `text` contains every one of `parts`, showing `text` when not.
#[track_caller]
pub fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "expected {part:?} in {text:?}");
    }
}

/// A path that is not inside any fixture, for escape tests.
pub fn outside_dir() -> PathBuf {
    TempDir::new().expect("temp dir").keep()
}
