//! The debug log (`CLM_DEBUG_LOG`, `TOOLCELL_DEBUG_LOG`) and the log budget of a call.

use std::fs;

use crate::support::*;

const CHATTY_PLUGIN: &str = r#"
print("load-print-marker")
clm.tool_register("chatty", {
  invoke = function(args, ctx)
    print("invoke-print-marker")
    ctx:log("ctx-log-marker")
    ctx:complete("quiet result")
  end,
})
"#;

fn assert_debug_log(variable: &str) {
    let plugins = plugin_dir(&[("chatty.lua", CHATTY_PLUGIN)]);
    let logs = temp_dir();
    let log = logs.path().join("debug.log");
    write(&log, "an earlier line\n");
    let output = run(toolcell()
        .env(variable, &log)
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("chatty"));
    output.assert_completed("quiet result");
    let text = fs::read_to_string(&log).expect("read the debug log");
    assert!(
        text.starts_with("an earlier line\n"),
        "{variable}: the log is appended to, not replaced:\n{text}"
    );
    for marker in ["ctx-log-marker", "invoke-print-marker", "load-print-marker"] {
        assert!(
            text.contains(marker),
            "{variable}: the debug log must contain {marker}:\n{text}"
        );
        assert!(!output.stdout.contains(marker), "{output}");
    }

    // A second run appends again.
    run(toolcell()
        .env(variable, &log)
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("chatty"))
    .assert_completed("quiet result");
    let again = fs::read_to_string(&log).expect("read the debug log");
    assert!(
        again.starts_with(&text) && again.matches("ctx-log-marker").count() == 2,
        "{variable}: a second run appends:\n{again}"
    );
}

#[test]
fn clm_debug_log_receives_ctx_log_and_print() {
    assert_debug_log("CLM_DEBUG_LOG");
}

#[test]
fn toolcell_debug_log_receives_ctx_log_and_print() {
    assert_debug_log("TOOLCELL_DEBUG_LOG");
}

#[test]
fn without_a_debug_log_nothing_is_written_anywhere() {
    let work = temp_dir();
    let home = temp_dir();
    write(&work.path().join("plugins/chatty.lua"), CHATTY_PLUGIN);
    let before = (snapshot(work.path()), snapshot(home.path()));
    let output = run(toolcell()
        .current_dir(work.path())
        .env("HOME", home.path())
        .arg("call")
        .arg("--plugins")
        .arg(work.path().join("plugins"))
        .arg("chatty"));
    output.assert_completed("quiet result");
    assert!(
        !output.stderr.contains("marker"),
        "print/ctx:log must not reach stderr either{output}"
    );
    assert_eq!(
        (snapshot(work.path()), snapshot(home.path())),
        before,
        "no file may be written without a debug log{output}"
    );
}

/// A plugin whose every call floods the log: a message of 200000 newlines (7 MB once
/// each has its prefix), then lines without end until its deadline.
const FLOODING_PLUGIN: &str = r#"
clm.tool_register("flood", {
  timeout_ms = 300,
  invoke = function(args, ctx)
    ctx:log(string.rep("\n", 200000))
    while true do print("again") end
  end,
})
"#;

#[test]
fn a_call_writes_at_most_its_log_budget_and_one_line_about_the_rest() {
    let plugins = plugin_dir(&[("flood.lua", FLOODING_PLUGIN)]);
    let work = temp_dir();
    let log = work.path().join("debug.log");
    let config = work.path().join("config.toml");
    write(&config, "[limits]\nlog_call_bytes = 20000\n");
    let output = run(toolcell()
        .env("CLM_DEBUG_LOG", &log)
        .arg("call")
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(work.path())
        .arg("--plugins")
        .arg(plugins.path())
        .arg("flood"));
    assert_eq!(
        output.failure(),
        "tool 'flood' timed out after 300 ms",
        "{output}"
    );
    let text = fs::read_to_string(&log).expect("read the debug log");
    let (kept, last) = text
        .trim_end()
        .rsplit_once('\n')
        .expect("more than one line");
    // The newlines come first and fill the budget: each is a stamped, empty line.
    assert!(
        kept.len() <= 20000 && kept.len() > 19000,
        "{} bytes before the last line",
        kept.len()
    );
    assert!(!kept.contains("again"), "the budget was spent on newlines");
    assert!(
        last.contains("[flood] [log cut: ")
            && last.ends_with("of call 1 were dropped; a call may write 20000 bytes]"),
        "{last}"
    );
}
