//! `toolcell pack --aot`: a Lua plugin whose functions run compiled, in its own copy of
//! the Lua guest, which inspect names as such, and which refuses to run compiled code
//! made from another script.

use std::fs;

use serde_json::Value;

use crate::support::*;

/// A plugin with two tools whose calls run three compiled functions, one of which fails
/// on the line it is on.
const COMPILED: &str = r#"local function greeting(name)
  return "Hello, " .. tostring(name) .. "!"
end
clm.tool_register("greet", { invoke = function(args, ctx) ctx:complete(greeting(args.name)) end })
clm.tool_register("divide", { invoke = function(args, ctx)
  ctx:complete(tostring(args.a // args.b))
end })
"#;

fn pack_aot(name: &str, script: &str) -> (tempfile::TempDir, std::path::PathBuf, Run) {
    let dir = temp_dir();
    let source = dir.path().join(format!("{name}.lua"));
    write(&source, script);
    let wasm = dir.path().join("dist").join(format!("{name}.wasm"));
    let packed = toolcell_run(&["pack", "--aot", path_str(&source), "-o", path_str(&wasm)]);
    (dir, wasm, packed)
}

#[test]
fn a_compiled_plugin_calls_like_its_script_and_inspect_says_what_compiled_it() {
    let (_dir, wasm, packed) = pack_aot("compiled", COMPILED);
    assert_eq!(packed.code, Some(0), "{packed}");
    // The main chunk, greeting, and the two invoke functions.
    assert!(
        packed
            .stdout
            .ends_with(", 4 Lua functions compiled ahead of time)\n"),
        "{packed}"
    );
    let inspected = toolcell_run(&["inspect", "--json", path_str(&wasm)]);
    let report: Value = serde_json::from_str(&inspected.stdout).expect("JSON");
    assert_eq!(report["kind"], "packed Lua plugin, compiled ahead of time");
    assert_eq!(report["compiled"]["toolcell"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["compiled"]["functions"], 4);
    let text = toolcell_run(&["inspect", path_str(&wasm)]);
    assert!(
        text.stdout.lines().any(|line| line
            == format!(
                "compiled:     by toolcell {}, 4 Lua functions",
                env!("CARGO_PKG_VERSION")
            )),
        "{text}"
    );

    let dist = wasm.parent().expect("dist");
    call(dist, "greet", Some(r#"{"name":"aot"}"#)).assert_completed("Hello, aot!");
    call(dist, "divide", Some(r#"{"a":7,"b":2}"#)).assert_completed("3");
    // An error raised in compiled code names the script's line, as interpreted.
    let message = call(dist, "divide", Some(r#"{"a":7,"b":0}"#)).failure();
    // lvm.c's luaV_idiv raises it on line 6, the line of `//`.
    assert_eq!(message, "compiled.lua:6: attempt to divide by zero");
    let plain = plugin_dir(&[("compiled.lua", COMPILED)]);
    assert_eq!(
        call(plain.path(), "divide", Some(r#"{"a":7,"b":0}"#)).failure(),
        message
    );
}

#[test]
fn compiled_code_made_from_another_script_is_refused_at_load() {
    let (_dir, wasm, packed) = pack_aot("swapped", COMPILED);
    assert_eq!(packed.code, Some(0), "{packed}");
    // The same script with one constant changed, in place of the packed one: the
    // compiled functions no longer match its bytecode.
    let bytes = fs::read(&wasm).expect("read");
    let at = bytes
        .windows(COMPILED.len())
        .position(|window| window == COMPILED.as_bytes())
        .expect("the script is in the artifact");
    let mut tampered = bytes.clone();
    let changed = COMPILED.replace("Hello", "Howdy");
    tampered[at..at + COMPILED.len()].copy_from_slice(changed.as_bytes());
    fs::write(&wasm, tampered).expect("write");
    let output = call(
        wasm.parent().expect("dist"),
        "greet",
        Some(r#"{"name":"x"}"#),
    );
    assert_eq!(output.code, Some(2), "{output}");
    output.assert_stderr_line(&[
        "plugin swapped.wasm failed to load: its compiled code was made from another \
         script; pack the plugin again",
    ]);
}

#[test]
fn pack_aot_without_zig_says_how_to_get_it_and_writes_nothing() {
    let dir = temp_dir();
    let source = dir.path().join("greeter.lua");
    write(&source, GREETER);
    for python in ["/nonexistent/python3", "/bin/false"] {
        let output = run(toolcell().env("TOOLCELL_PYTHON", python).args([
            "pack",
            "--aot",
            path_str(&source),
        ]));
        let message = output.usage_error();
        assert!(
            message.starts_with(&format!(
                "error: compiling ahead of time needs zig {} from PyPI: `{python} -m pip \
                 install ziglang==",
                zig_version()
            )),
            "{output}"
        );
        assert!(!dir.path().join("greeter.wasm").exists(), "{output}");
    }
    // Packed without --aot, it needs no zig.
    let output = run(toolcell()
        .env("TOOLCELL_PYTHON", "/nonexistent/python3")
        .args(["pack", path_str(&source)]));
    assert_eq!(output.code, Some(0), "{output}");
}

#[test]
fn a_script_lua_refuses_is_not_compiled_and_nothing_is_written() {
    // Lua bytecode (the sandbox loads source text only) and a syntax error: the
    // translator compiles the script as the guest will, so Lua's own message.
    for (name, script, why) in [
        (
            "binary",
            "\x1bLuaT\x00 rest of a compiled chunk",
            "attempt to load a binary chunk (mode is 't')",
        ),
        (
            "broken",
            "return 1 +",
            "broken.lua:1: unexpected symbol near <eof>",
        ),
    ] {
        let (dir, wasm, packed) = pack_aot(name, script);
        let source = dir.path().join(format!("{name}.lua"));
        assert_eq!(
            packed.usage_error(),
            format!("error: cannot compile {}: {why}", source.display())
        );
        assert!(!wasm.exists(), "{packed}");
    }
}

#[test]
fn only_a_lua_plugin_is_compiled() {
    let (dir, wasm) = packed_plugin("greeter", GREETER);
    let manifest = dir.path().join("m.toml");
    write(&manifest, "id = \"greeter\"\nversion = \"1.0.0\"\n");
    let output = toolcell_run(&[
        "pack",
        "--aot",
        path_str(&wasm),
        "--manifest",
        path_str(&manifest),
    ]);
    assert_eq!(
        output.usage_error(),
        format!(
            "error: {} is a component; only a Lua plugin (.lua) is compiled ahead of time",
            wasm.display()
        )
    );
}

/// The zig the toolcell under test was built with: what `python3 -m ziglang version`
/// says, since the tests build toolcell with it.
fn zig_version() -> String {
    let output = std::process::Command::new("python3")
        .args(["-m", "ziglang", "version"])
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}
