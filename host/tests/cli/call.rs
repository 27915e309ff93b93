//! `toolcell call`: completion, failures (exit 1, `[tool failed: MESSAGE]`) and usage
//! errors (exit 2, one line on stderr, nothing on stdout).

use crate::support::*;

#[test]
fn call_prints_exactly_the_result_and_one_newline_and_exits_0() {
    let plugins = plugin_dir(&[(
        "greeter.lua",
        r#"
print("printed at load time")
clm.tool_register("greet", {
  description = "Greets",
  invoke = function(args, ctx)
    print("printed inside invoke")
    ctx:log("logged inside invoke")
    ctx:complete("Grüße, " .. args.name .. "!\nsecond line ✓")
  end,
})
clm.tool_register("trailing", {
  invoke = function(args, ctx) ctx:complete("ends with a newline\n") end,
})
clm.tool_register("empty", {
  invoke = function(args, ctx) ctx:complete("") end,
})
"#,
    )]);
    let output = call(plugins.path(), "greet", Some(r#"{"name":"world"}"#));
    output.assert_completed("Grüße, world!\nsecond line ✓");
    assert!(
        !output.stderr.contains("printed") && !output.stderr.contains("logged"),
        "print/ctx:log go nowhere without a debug log{output}"
    );
    call(plugins.path(), "trailing", None).assert_completed("ends with a newline\n");
    call(plugins.path(), "empty", None).assert_completed("");
}

#[test]
fn call_passes_the_arguments_and_defaults_them_to_an_empty_object() {
    let plugins = plugin_dir(&[(
        "args.lua",
        r#"
clm.tool_register("inspect", {
  invoke = function(args, ctx)
    local count = 0
    for _ in pairs(args) do count = count + 1 end
    ctx:complete(type(args) .. " " .. count .. " " .. ctx:args_raw() .. " " .. tostring(args.n))
  end,
})
"#,
    )]);
    call(plugins.path(), "inspect", None).assert_completed("table 0 {} nil");
    call(plugins.path(), "inspect", Some(r#"{"n":42}"#)).assert_completed(r#"table 1 {"n":42} 42"#);
}

#[test]
fn call_finds_tools_in_every_plugin_directory_given() {
    let first = plugin_dir(&[(
        "one.lua",
        r#"clm.tool_register("from_one", { invoke = function(_, ctx) ctx:complete("one") end })"#,
    )]);
    let second = plugin_dir(&[(
        "two.lua",
        r#"clm.tool_register("from_two", { invoke = function(_, ctx) ctx:complete("two") end })"#,
    )]);
    for (tool, result) in [("from_one", "one"), ("from_two", "two")] {
        run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(first.path())
            .arg("--plugins")
            .arg(second.path())
            .arg(tool))
        .assert_completed(result);
    }
}

#[test]
fn call_without_plugins_uses_the_config_dir_under_home() {
    let home = temp_dir();
    write(
        &home.path().join(".config/toolcell/plugins/homely.lua"),
        r#"clm.tool_register("homely", { description = "At home", invoke = function(_, ctx) ctx:complete("found under HOME") end })"#,
    );
    run(toolcell().env("HOME", home.path()).args(["call", "homely"]))
        .assert_completed("found under HOME");

    let (_, functions) = list_json(toolcell().env("HOME", home.path()).args(["list", "--json"]));
    assert_eq!(function_names(&functions), ["homely"]);

    // A HOME without the directory: a missing directory is a usage error.
    let empty_home = temp_dir();
    let line = run(toolcell()
        .env("HOME", empty_home.path())
        .args(["call", "homely"]))
    .usage_error();
    assert!(
        line.contains(".config/toolcell/plugins"),
        "the error should name the missing default directory: {line}"
    );
}

#[test]
fn ctx_fail_prints_the_message_and_exits_1() {
    let plugins = plugin_dir(&[(
        "quota.lua",
        r#"
clm.tool_register("spend", {
  invoke = function(args, ctx) ctx:fail("the quota is exhausted") end,
})
"#,
    )]);
    let output = call(plugins.path(), "spend", None);
    assert_eq!(output.failure(), "the quota is exhausted", "{output}");
}

#[test]
fn a_lua_error_fails_the_call_with_file_and_line() {
    let plugins = plugin_dir(&[(
        "broken.lua",
        r#"clm.tool_register("explode", {
  invoke = function(args, ctx)
    error("kaboom")
  end,
})
clm.tool_register("index_nil", {
  invoke = function(args, ctx)
    local missing = nil
    return missing.field
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "explode", None);
    let message = output.failure();
    assert!(
        message.contains("broken.lua:3:") && message.contains("kaboom"),
        "the Lua error must say where and what: {message}{output}"
    );

    let output = call(plugins.path(), "index_nil", None);
    let message = output.failure();
    assert!(
        message.contains("broken.lua:9:") && message.contains("nil"),
        "the Lua error must say where and what: {message}{output}"
    );
}

#[test]
fn passing_the_call_deadline_fails_the_call() {
    let plugins = plugin_dir(&[(
        "spinner.lua",
        r#"
clm.tool_register("spin", {
  timeout_ms = 200,
  invoke = function(args, ctx)
    while true do end
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "spin", None);
    let message = output.failure().to_lowercase();
    assert!(
        message.contains("timed out")
            || message.contains("deadline")
            || message.contains("timeout"),
        "the failure must say the deadline passed: {message}{output}"
    );
}

#[test]
fn reaching_the_memory_cap_fails_the_call() {
    let plugins = plugin_dir(&[(
        "hog.lua",
        r#"
clm.tool_register("hoard", {
  invoke = function(args, ctx)
    local hoard = {}
    for i = 1, 100000000 do
      hoard[i] = string.rep("x", 1024) .. i
    end
    ctx:complete("never: " .. #hoard)
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "hoard", None);
    let message = output.failure();
    assert!(
        message.to_lowercase().contains("memory"),
        "the failure must say memory ran out: {message}{output}"
    );
}

#[test]
fn ending_an_invocation_twice_fails_the_call() {
    let plugins = plugin_dir(&[(
        "twice.lua",
        r#"
clm.tool_register("complete_twice", {
  invoke = function(args, ctx)
    ctx:complete("first")
    ctx:complete("second")
  end,
})
clm.tool_register("complete_then_fail", {
  invoke = function(args, ctx)
    ctx:complete("first")
    ctx:fail("second")
  end,
})
"#,
    )]);
    for (tool, second_call) in [
        ("complete_twice", "ctx:complete"),
        ("complete_then_fail", "ctx:fail"),
    ] {
        let output = call(plugins.path(), tool, None);
        let message = output.failure();
        assert!(
            message.contains(second_call) && message.contains("twice.lua:"),
            "the failure must name the second call and where it was made: {message}{output}"
        );
    }
}

#[test]
fn returning_without_completing_fails_the_call() {
    let plugins = plugin_dir(&[(
        "forgetful.lua",
        r#"
clm.tool_register("forget", {
  invoke = function(args, ctx)
    local ignored = args
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "forget", None);
    let message = output.failure();
    assert!(
        message.to_lowercase().contains("complete"),
        "the failure must say the invocation never completed: {message}{output}"
    );
}

/// A plugin whose tool leaves a mark in the file root when it runs.
const MARKING_PLUGIN: &str = r#"
clm.tool_register("echo", {
  invoke = function(args, ctx)
    clm.write_file("ran.txt", "the tool ran")
    ctx:complete("echoed")
  end,
})
"#;

#[test]
fn an_unknown_tool_is_a_usage_error_with_a_suggestion() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let line = call(plugins.path(), "ehco", None).usage_error();
    assert!(
        line.contains("ehco") && line.contains("echo"),
        "the error must name the unknown tool and suggest 'echo': {line}"
    );
    let line = call(plugins.path(), "completely_different_name", None).usage_error();
    assert!(
        line.contains("completely_different_name"),
        "the error must name the unknown tool: {line}"
    );
}

#[test]
fn a_hidden_tool_is_unknown_to_call_unless_include_hidden() {
    let plugins = plugin_dir(&[(
        "helpers.lua",
        r#"clm.tool_register("internal", { hidden = true, invoke = function(_, ctx) ctx:complete("reached") end })"#,
    )]);
    let refused = run(toolcell()
        .args(["call", "--plugins"])
        .arg(plugins.path())
        .arg("internal"));
    let line = refused.usage_error();
    assert!(line.contains("unknown tool 'internal'"), "{refused}");
    let reached = run(toolcell()
        .args(["call", "--include-hidden", "--plugins"])
        .arg(plugins.path())
        .arg("internal"));
    assert_eq!(reached.code, Some(0), "{reached}");
    assert_eq!(reached.stdout, "reached\n", "{reached}");
}

#[test]
fn arguments_that_are_not_a_json_object_are_a_usage_error() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let root = temp_dir();
    for args in ["{not json", "", "[1, 2]", "42", "\"text\"", "null", "true"] {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--root")
            .arg(root.path())
            .arg("echo")
            .arg(args));
        output.usage_error();
        assert!(
            !root.path().join("ran.txt").exists(),
            "the tool must not run with invalid arguments {args:?}{output}"
        );
    }
}

const CHECKED_MARKING_PLUGIN: &str = r#"
clm.tool_register("greet", {
  params_schema = {
    type = "object",
    properties = { name = { type = "string" }, times = { type = "integer", minimum = 1 } },
    required = { "name" },
  },
  invoke = function(args, ctx)
    clm.write_file("ran.txt", "the tool ran")
    ctx:complete("hi " .. args.name)
  end,
})
"#;

#[test]
fn arguments_that_fail_the_schema_are_a_usage_error_and_the_tool_never_runs() {
    let plugins = plugin_dir(&[("greet.lua", CHECKED_MARKING_PLUGIN)]);
    let root = temp_dir();
    let cases = [
        (
            r#"{"name": 5}"#,
            r#"error: invalid arguments for 'greet': value at `/name` is not of type "string""#,
        ),
        (
            r#"{"times": 0}"#,
            r#"error: invalid arguments for 'greet': "name" is a required property; value at `/times` is less than the minimum of 1"#,
        ),
    ];
    for (args, expected) in cases {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--root")
            .arg(root.path())
            .arg("greet")
            .arg(args));
        assert_eq!(output.usage_error(), expected, "{args}{output}");
        assert!(
            !root.path().join("ran.txt").exists(),
            "the tool must not run with arguments that fail its schema {args}{output}"
        );
    }
    let output = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--root")
        .arg(root.path())
        .arg("greet")
        .arg(r#"{"name": "you", "times": 2}"#));
    output.assert_completed("hi you");
}

#[test]
fn a_tool_with_an_invalid_schema_is_reported_and_not_registered() {
    let plugins = plugin_dir(&[(
        "odd.lua",
        r#"
clm.tool_register("odd", {
  params_schema = { type = "object", properties = { n = { minimum = "one" } } },
  invoke = function(_, ctx) ctx:complete("") end,
})
clm.tool_register("even", { invoke = function(_, ctx) ctx:complete("even") end })
"#,
    )]);
    let output = call(plugins.path(), "even", None);
    output.assert_completed("even");
    output.assert_stderr_line(&[
        "odd.lua",
        "'odd'",
        "invalid schema",
        "/properties/n/minimum",
    ]);
    let output = call(plugins.path(), "odd", None);
    assert_eq!(
        output.code,
        Some(2),
        "the rejected tool is not registered{output}"
    );
    output.assert_stderr_line(&[
        "error: tool 'odd' is unavailable: tool 'odd' of plugin odd.lua has an invalid schema \
         and is not registered: at `/properties/n/minimum` in the schema",
    ]);
}

#[test]
fn a_missing_plugin_directory_is_a_usage_error() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let missing = plugins.path().join("no-such-dir");
    let line = call(&missing, "echo", None).usage_error();
    assert!(
        line.contains("no-such-dir"),
        "the error must name the directory: {line}"
    );

    // One good directory does not excuse a missing one.
    let line = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--plugins")
        .arg(&missing)
        .arg("echo"))
    .usage_error();
    assert!(line.contains("no-such-dir"), "{line}");

    // list too.
    let line = run(toolcell().arg("list").arg("--plugins").arg(&missing)).usage_error();
    assert!(line.contains("no-such-dir"), "{line}");
}

#[test]
fn a_bad_config_file_is_a_usage_error() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let configs = temp_dir();
    let cases = [
        ("unclosed.toml", Some("[tools.echo\nkey = 1\n")),
        ("not_a_table.toml", Some("tools = 3\n")),
        ("bad_value.toml", Some("[tools.echo]\nkey = \n")),
        ("absent.toml", None),
    ];
    for (name, content) in cases {
        let path = configs.path().join(name);
        if let Some(content) = content {
            write(&path, content);
        }
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--config")
            .arg(&path)
            .arg("echo"));
        let line = output.usage_error();
        assert!(
            line.contains(name),
            "the error must name the config file {name}: {line}"
        );
    }
}
