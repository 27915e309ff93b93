//! The compiled-code cache: the first compilation says so, the prepared Lua runtime is
//! kept and reused, and an entry made with another key is compiled again.

use std::fs;
use std::path::Path;

use crate::support::*;

#[test]
fn a_cache_entry_made_with_another_key_is_deleted_and_compiled_again() {
    let (ours, theirs) = (temp_dir(), temp_dir());
    let plugins = plugin_dir(&[("hello.lua", &tool_plugin("hello", "hi"))]);
    let call_with = |cache: &Path| {
        run(toolcell()
            .env("TOOLCELL_CACHE_DIR", cache)
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("hello"))
    };
    call_with(ours.path()).assert_completed("hi");
    call_with(theirs.path()).assert_completed("hi");
    let entry = prepared_entry(ours.path());
    // A valid wasmtime artifact with a valid MAC, under another key.
    let foreign = fs::read(theirs.path().join(&entry)).expect("their entry");
    fs::write(ours.path().join(&entry), &foreign).expect("replace our entry");

    let replaced = call_with(ours.path());
    replaced.assert_completed("hi");
    let warning = format!(
        "not loading the compiled-code cache entry {}: its MAC does not match this user's cache key",
        ours.path().join(&entry).display()
    );
    assert!(replaced.stderr.contains(&warning), "{replaced}");
    assert_ne!(
        fs::read(ours.path().join(&entry)).expect("our entry"),
        foreign,
        "the entry was compiled again under our key"
    );
    let after = call_with(ours.path());
    after.assert_completed("hi");
    assert!(after.stderr.is_empty(), "{after}");
}

#[test]
fn a_first_compilation_says_so_on_stderr() {
    let cache = temp_dir();
    let plugins = plugin_dir(&[("hello.lua", HEALTHY_PLUGIN)]);
    let run_once = || {
        run(toolcell()
            .env("TOOLCELL_CACHE_DIR", cache.path())
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("healthy"))
    };
    let first = run_once();
    first.assert_completed("healthy answer");
    first.assert_stderr_line(&["compiling the Lua runtime (first run, about ", " s)"]);
    let second = run_once();
    second.assert_completed("healthy answer");
    assert!(
        !second.stderr.contains("compiling"),
        "the cached code is not compiled again{second}"
    );
}

#[test]
fn the_prepared_lua_runtime_is_kept_in_the_code_cache_and_used_by_later_runs() {
    // A cache of its own, so this run is the one that prepares the Lua runtime.
    let cache = temp_dir();
    let plugins = plugin_dir(&[
        (
            "counter.lua",
            r#"
count = 0
clm.tool_register("bump", { invoke = function(args, ctx)
  count = count + 1
  string.bumped = true
  ctx:complete(tostring(count))
end })
"#,
        ),
        (
            "probe.lua",
            r#"
clm.tool_register("look", { invoke = function(args, ctx)
  ctx:complete(tostring(count) .. " " .. tostring(string.bumped) .. " " .. clm.config.greeting)
end })
"#,
        ),
    ]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(&config_file, "[tools.probe]\ngreeting = \"hi\"\n");
    let call_with_cache = |tool: &str| {
        run(toolcell()
            .env("TOOLCELL_CACHE_DIR", cache.path())
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--config")
            .arg(&config_file)
            .arg(tool))
    };
    call_with_cache("bump").assert_completed("1");
    let entry = cache.path().join(prepared_entry(cache.path()));
    let modified = fs::metadata(&entry)
        .and_then(|m| m.modified())
        .expect("mtime");
    // The next run starts from the cached snapshot: every plugin gets its own copy of
    // the prepared state (nothing the first plugin changed shows in the second), and
    // the per-plugin parts (here `clm.config`) are filled in at load.
    call_with_cache("look").assert_completed("nil nil hi");
    call_with_cache("bump").assert_completed("1");
    let again = fs::metadata(&entry)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(
        modified, again,
        "the cached snapshot is read, not written again"
    );
}
