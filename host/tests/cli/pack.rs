//! `toolcell pack`: one `.wasm` file that calls like the script, written only when the
//! plugin loads.

use std::fs;

use serde_json::Value;

use crate::support::*;

#[test]
fn a_packed_lua_plugin_is_one_file_that_calls_like_the_script() {
    let (dir, wasm) = packed_plugin("greeter", GREETER);
    let bytes = fs::read(&wasm).expect("the artifact exists");
    let digest = toolcell::cache::sha256_hex(&bytes);
    let packed = toolcell_run(&[
        "pack",
        path_str(&dir.path().join("greeter.lua")),
        "-o",
        path_str(&wasm),
    ]);
    assert_eq!(
        packed.stdout,
        format!(
            "packed greeter 0.0.0 into {} ({} bytes, sha256 {digest})\n",
            wasm.display(),
            bytes.len()
        ),
        "{packed}"
    );
    // Only the .wasm is in dist/: the script travels inside it.
    let dist = wasm.parent().expect("dist");
    call(dist, "greet", Some(r#"{"name":"dist"}"#)).assert_completed("Hello, dist!");
}

#[test]
fn pack_loads_the_plugin_first_and_writes_nothing_when_it_fails() {
    let dir = temp_dir();
    let cases = [
        (
            "broken",
            "clm.tool_register(\"t\", { invoke = function(_, ctx) ctx:complete(\"x\") end })\nerror(\"not yet\")\n",
            "error[load_failed] plugin broken.wasm failed to load: broken.lua:2: not yet",
        ),
        (
            "schema",
            r#"clm.tool_register("s", { params_schema = { type = "object", properties = { n = { minimum = "one" }, m = { type = "text" } } }, invoke = function(_, ctx) ctx:complete("x") end })"#,
            "error[tool_rejected] tool 's' of plugin schema.wasm has an invalid schema and is \
             not registered: at `/properties/m/type` in the schema: ",
        ),
    ];
    for (name, script, expected) in cases {
        let source = dir.path().join(format!("{name}.lua"));
        write(&source, script);
        let output = toolcell_run(&["pack", path_str(&source)]);
        assert_eq!(output.code, Some(1), "{output}");
        assert_eq!(output.stdout, "", "{output}");
        let wasm = dir.path().join(format!("{name}.wasm"));
        assert_eq!(
            output.stderr.lines().collect::<Vec<_>>(),
            [
                output.stderr.lines().next().unwrap_or_default(),
                &format!(
                    "error: {} was not written: loading the plugin reported 1 error (see above)",
                    wasm.display()
                )
            ],
            "{output}"
        );
        assert!(output.stderr.starts_with(expected), "{output}");
        assert!(!wasm.exists(), "nothing is written{output}");
        // --no-check writes it anyway, for a plugin that only loads where it will run.
        let output = toolcell_run(&["pack", "--no-check", path_str(&source)]);
        assert_eq!(output.code, Some(0), "{output}");
        assert!(wasm.is_file(), "{output}");
    }
    // Both schema problems are listed, not only the first.
    let output = toolcell_run(&["pack", path_str(&dir.path().join("schema.lua"))]);
    output.assert_stderr_line(&[
        "at `/properties/m/type` in the schema",
        "; at `/properties/n/minimum` in the schema: \"one\" is not of type \"number\"",
    ]);
}

#[test]
fn pack_takes_the_sidecar_manifest_and_writes_id_wasm_beside_the_script() {
    let dir = temp_dir();
    let source = dir.path().join("greeter.lua");
    write(&source, GREETER);
    write(
        &dir.path().join("greeter.lua.toml"),
        "id = \"greeter-pro\"\nversion = \"2.0.1\"\ndescription = \"Greets\"\n\
         [capabilities]\nfiles = \"read-only\"\n",
    );
    let packed = toolcell_run(&["pack", path_str(&source)]);
    assert_eq!(packed.code, Some(0), "{packed}");
    // Named after its id: the only name it loads under.
    let wasm = dir.path().join("greeter-pro.wasm");
    assert!(wasm.is_file(), "ID.wasm beside NAME.lua{packed}");
    let inspected = toolcell_run(&["inspect", "--json", path_str(&wasm)]);
    assert_eq!(inspected.code, Some(0), "{inspected}");
    let report: Value = serde_json::from_str(&inspected.stdout).expect("JSON");
    assert_eq!(report["manifest"]["id"], "greeter-pro");
    assert_eq!(report["manifest"]["version"], "2.0.1");
    assert_eq!(report["manifest"]["capabilities"]["files"], "read-only");
    assert_eq!(report["manifest"]["capabilities"]["http"], "none");
    assert_eq!(report["kind"], "packed Lua plugin");
    assert_eq!(
        report["sha256"],
        toolcell::cache::sha256_hex(&fs::read(&wasm).expect("read"))
    );
    assert_eq!(
        report["wit"]["package"],
        format!("toolcell:plugin@{}", toolcell::wit_version::WIT_VERSION)
    );
    assert_eq!(report["wit"]["compatible"], true);
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(tools, ["greet", "scribble"]);
    // The manifest inside is enforced: the packed plugin, alone, may only read.
    let dist = dir.path().join("dist");
    fs::create_dir_all(&dist).expect("mkdir dist");
    fs::rename(&wasm, dist.join("greeter-pro.wasm")).expect("move the artifact");
    let root = temp_dir();
    let output = run(toolcell()
        .args(["call", "--plugins", path_str(&dist), "--root"])
        .arg(root.path())
        .arg("scribble"));
    let message = output.failure();
    assert!(
        message.contains("plugin 'greeter-pro' may only read files"),
        "{output}"
    );
    assert!(!root.path().join("scribble.txt").exists());
}
