//! Loading: diagnostics on stderr, failing plugins skipped, the load order and
//! tool-name collisions.

use std::path::Path;

use crate::support::*;

#[test]
fn a_plugin_with_a_syntax_error_is_reported_and_skipped() {
    let plugins = plugin_dir(&[
        ("syntax_bad.lua", "local x = = 1\n"),
        ("z_healthy.lua", HEALTHY_PLUGIN),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    output.assert_stderr_line(&["syntax_bad.lua", "unexpected symbol"]);
}

#[test]
fn a_plugin_failing_at_load_time_is_reported_and_skipped() {
    let plugins = plugin_dir(&[
        ("a_healthy.lua", HEALTHY_PLUGIN),
        (
            "load_error.lua",
            r#"
clm.tool_register("never_registered", { invoke = function(_, ctx) ctx:complete("x") end })
error("broken at load time")
"#,
        ),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    output.assert_stderr_line(&["load_error.lua", "broken at load time"]);

    // Nothing of the failed plugin is registered, even what it registered before failing.
    let (_, functions) = list_json(
        toolcell()
            .arg("list")
            .arg("--json")
            .arg("--plugins")
            .arg(plugins.path()),
    );
    assert_eq!(function_names(&functions), ["healthy"]);

    // Calling one of its tools says why it cannot be called, as a usage error (after the
    // load failure's own line).
    let output = call(plugins.path(), "never_registered", None);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (Some(2), ""),
        "{output}"
    );
    assert_eq!(
        output.stderr.lines().last(),
        Some(
            "error: tool 'never_registered' is unavailable: plugin load_error.lua failed to load: \
             load_error.lua:3: broken at load time"
        ),
        "{output}"
    );
    // The same for the plugin packed into a .wasm, whose script names the tool.
    let packed = temp_dir();
    let output = run(toolcell()
        .arg("pack")
        .arg(plugins.path().join("load_error.lua"))
        .arg("--no-check")
        .arg("-o")
        .arg(packed.path().join("load_error.wasm")));
    assert_eq!(output.code, Some(0), "{output}");
    let output = call(packed.path(), "never_registered", None);
    assert_eq!(output.code, Some(2), "{output}");
    output.assert_stderr_line(&[
        "error: tool 'never_registered' is unavailable: plugin load_error.wasm failed to load:",
    ]);
    // A name no plugin offers stays unknown.
    let output = call(plugins.path(), "never_offered", None);
    assert_eq!(output.code, Some(2), "{output}");
    assert_eq!(
        output.stderr.lines().last(),
        Some("error: unknown tool 'never_offered'"),
        "{output}"
    );
}

#[test]
fn a_plugin_passing_the_load_deadline_is_reported_and_skipped() {
    let plugins = plugin_dir(&[
        ("a_healthy.lua", HEALTHY_PLUGIN),
        ("spin_at_load.lua", "while true do end\n"),
        (
            "z_healthy.lua",
            r#"clm.tool_register("also_healthy", { invoke = function(_, ctx) ctx:complete("also fine") end })"#,
        ),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    let reported = output.stderr_lines_with(&["spin_at_load.lua"]);
    assert!(
        reported.iter().any(|line| {
            let line = line.to_lowercase();
            line.contains("deadline") || line.contains("timed out") || line.contains("500 ms")
        }),
        "the load-time deadline must be reported with the file name{output}"
    );
    call(plugins.path(), "also_healthy", None).assert_completed("also fine");
}

#[test]
fn an_invalid_wasm_plugin_is_reported_and_skipped_and_other_files_are_ignored() {
    let plugins = plugin_dir(&[
        ("a_healthy.lua", HEALTHY_PLUGIN),
        ("junk.wasm", "\0asm this is not a component"),
        // Not plugin files: never loaded.
        (
            "notes.txt",
            r#"clm.tool_register("from_txt", { invoke = function(_, ctx) ctx:complete("x") end })"#,
        ),
        (
            "backup.lua.bak",
            r#"clm.tool_register("from_bak", { invoke = function(_, ctx) ctx:complete("x") end })"#,
        ),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    output.assert_stderr_line(&["junk.wasm"]);
    for tool in ["from_txt", "from_bak"] {
        // Exit 2 as an unknown tool (stderr also holds the junk.wasm report).
        let output = call(plugins.path(), tool, None);
        assert_eq!(output.code, Some(2), "{tool} must be unknown{output}");
        assert_eq!(output.stdout, "", "{output}");
        output.assert_stderr_line(&[tool]);
    }
}

#[test]
fn plugins_load_directory_by_directory_and_file_by_file_in_name_order() {
    // Written out of order, so neither creation order nor chance makes this pass.
    let first = plugin_dir(&[
        ("c.lua", &tool_plugin("t_c", "c")),
        ("a.lua", &tool_plugin("t_a", "a")),
        ("b.lua", &tool_plugin("t_b", "b")),
    ]);
    let second = plugin_dir(&[("0.lua", &tool_plugin("u_0", "0"))]);
    let list = || {
        list_json(
            toolcell()
                .args(["list", "--json", "--plugins"])
                .arg(first.path())
                .arg("--plugins")
                .arg(second.path()),
        )
    };
    let (one, functions) = list();
    assert_eq!(
        function_names(&functions),
        ["t_a", "t_b", "t_c", "u_0"],
        "{one}"
    );
    let (two, _) = list();
    assert_eq!(
        one.stdout, two.stdout,
        "the order must be the same on every run"
    );
}

#[test]
fn a_colliding_tool_name_across_directories_keeps_the_first() {
    let first = plugin_dir(&[("zeta.lua", &tool_plugin("dup", "zeta wins"))]);
    let second = plugin_dir(&[(
        "alpha.lua",
        r#"
clm.tool_register("dup", { invoke = function(_, ctx) ctx:complete("alpha wins") end })
clm.tool_register("alpha_only", { invoke = function(_, ctx) ctx:complete("alpha still loads") end })
"#,
    )]);
    let both = |a: &Path, b: &Path, tool: &str| {
        run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(a)
            .arg("--plugins")
            .arg(b)
            .arg(tool))
    };

    let output = both(first.path(), second.path(), "dup");
    output.assert_completed("zeta wins");
    output.assert_stderr_line(&["dup", "zeta", "alpha"]);
    // Only the colliding registration is rejected: the rest of that plugin loads.
    both(first.path(), second.path(), "alpha_only").assert_completed("alpha still loads");

    // The other way round, the other one is first.
    let output = both(second.path(), first.path(), "dup");
    output.assert_completed("alpha wins");
    output.assert_stderr_line(&["dup", "zeta", "alpha"]);
}

#[test]
fn a_colliding_tool_name_in_one_directory_keeps_the_first_file_by_name() {
    // b_late.lua is written first; a_early.lua still loads first.
    let plugins = plugin_dir(&[
        ("b_late.lua", &tool_plugin("same", "from b_late")),
        ("a_early.lua", &tool_plugin("same", "from a_early")),
    ]);
    let output = call(plugins.path(), "same", None);
    output.assert_completed("from a_early");
    output.assert_stderr_line(&["same", "a_early", "b_late"]);

    // The second stays reachable by its path, and models see it under the path's
    // wire name.
    call(plugins.path(), "b_late/same", None).assert_completed("from b_late");
    let (_, functions) = list_json(
        toolcell()
            .args(["list", "--json", "--plugins"])
            .arg(plugins.path()),
    );
    assert_eq!(function_names(&functions), ["same", "b_late__same"]);
    assert_eq!(functions[0]["function"]["description"], "from from a_early");
    assert_eq!(functions[1]["function"]["description"], "from from b_late");
    call(plugins.path(), "b_late__same", None).assert_completed("from b_late");
}
