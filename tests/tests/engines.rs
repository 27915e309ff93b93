//! Engines are owned, not process-wide: runtimes built on different engines run under
//! their own settings and caches, and runtimes sharing one engine compile and check
//! the Lua guest once.

use std::path::{Path, PathBuf};

use tempfile::TempDir;
use toolcell::cache::CodeCache;
use toolcell::engine::Options;
use toolcell::limits::Limits;
use toolcell::{CallOutcome, CrashCause, Engine, Runtime};
use toolcell_tests::{Fixture, HANG_GUARD};

/// Two million additions: far more fuel than [`small_fuel`] allows.
const SPIN: &str = r#"
clm.tool_register("spin", { invoke = function(_, ctx)
  local x = 0
  for i = 1, 2000000 do x = x + i end
  ctx:complete(tostring(x))
end })
"#;

const HELLO: &str =
    r#"clm.tool_register("hello", { invoke = function(_, ctx) ctx:complete("hi") end })"#;

fn small_fuel() -> Limits {
    Limits {
        fuel: 20_000_000,
        ..Limits::default()
    }
}

async fn outcome(runtime: &Runtime, tool: &str) -> CallOutcome {
    let call = runtime.call(tool, "{}").expect("the call starts");
    tokio::time::timeout(HANG_GUARD, call)
        .await
        .expect("the call ends")
}

/// The compiled-code cache entries in `dir`.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the cache directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "cwasm")
        })
        .collect();
    entries.sort();
    entries
}

/// An engine that allocates instances on demand: the test process already holds the
/// tests' engine, whose pooling allocator reserves a third of the address space.
fn on_demand(options: Options) -> Engine {
    Engine::new(Options {
        pooling: false,
        ..options
    })
    .expect("the engine")
}

#[tokio::test]
async fn runtimes_on_different_engines_each_run_under_their_own_settings() {
    let fixture = Fixture::new(&[("spin.lua", SPIN)]);
    let metered = fixture
        .load_with(|builder| builder.limits(small_fuel()))
        .await;
    let cache = TempDir::new().expect("temp dir");
    let unmetered_engine = on_demand(Options {
        fuel: false,
        snapshot: false,
        cache: CodeCache::new(Some(cache.path().to_path_buf())),
        ..Options::default()
    });
    let unmetered = fixture
        .load_with(|builder| builder.engine(unmetered_engine).limits(small_fuel()))
        .await;

    match outcome(&metered, "spin").await {
        CallOutcome::Crashed {
            cause: CrashCause::OutOfFuel,
            message,
            ..
        } => assert!(
            message.contains("ran out of fuel (its budget is 20000000 per call)"),
            "{message}"
        ),
        other => panic!("the metered runtime let the loop finish: {other:?}"),
    }
    assert_eq!(
        outcome(&unmetered, "spin").await,
        CallOutcome::Completed("2000001000000".into())
    );
    // The unmetered engine compiled the Lua guest itself, into its own cache, and
    // without the snapshot its options turned off.
    let compiled = entries(cache.path());
    assert_eq!(compiled.len(), 1, "{compiled:?}");
    let name = compiled[0].file_name().expect("a name").to_string_lossy();
    assert!(!name.contains("-prepared"), "{name}");
}

#[tokio::test]
async fn runtimes_sharing_an_engine_compile_and_check_the_lua_guest_once() {
    let fixture = Fixture::new(&[("hello.lua", HELLO)]);
    let cache = TempDir::new().expect("temp dir");
    let options = Options {
        cache: CodeCache::new(Some(cache.path().to_path_buf())),
        ..Options::default()
    };
    let engine = on_demand(options.clone());
    let first = fixture
        .load_with(|builder| builder.engine(engine.clone()))
        .await;
    assert_eq!(
        outcome(&first, "hello").await,
        CallOutcome::Completed("hi".into())
    );
    let compiled = entries(cache.path());
    let [prepared] = compiled.as_slice() else {
        panic!("one entry, the prepared Lua guest: {compiled:?}");
    };

    // An entry whose MAC no longer matches is deleted and compiled again by whoever
    // reads it; a runtime on the same engine reads nothing.
    let mut bytes = std::fs::read(prepared).expect("the entry");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(prepared, &bytes).expect("corrupt the entry");
    let second = fixture
        .load_with(|builder| builder.engine(engine.clone()))
        .await;
    assert_eq!(
        outcome(&second, "hello").await,
        CallOutcome::Completed("hi".into())
    );
    assert_eq!(std::fs::read(prepared).expect("the entry"), bytes);

    // A runtime on another engine with the same cache reads the entry, finds it
    // corrupt, and compiles the guest again.
    let other = fixture
        .load_with(|builder| builder.engine(on_demand(options)))
        .await;
    assert_eq!(
        outcome(&other, "hello").await,
        CallOutcome::Completed("hi".into())
    );
    assert_ne!(std::fs::read(prepared).expect("the entry"), bytes);
}
