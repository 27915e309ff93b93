//! Long results: what the model sees is cut, and `toolcell result` prints the whole.

use std::fs;

use serde_json::json;

use crate::support::*;

/// A tool whose result is 5000 numbered lines.
const LONG_RESULT_PLUGIN: &str = r#"
clm.tool_register("long", { invoke = function(args, ctx)
  local lines = {}
  for i = 1, 5000 do lines[i] = "line " .. i end
  ctx:complete(table.concat(lines, "\n"))
end })
"#;

/// The first `count` lines of the long tool's result, each with its newline.
fn long_lines(count: usize) -> String {
    (1..=count).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn a_long_result_is_cut_and_toolcell_result_prints_the_whole() {
    let plugins = plugin_dir(&[("long.lua", LONG_RESULT_PLUGIN)]);
    let work = temp_dir();
    let results = temp_dir();
    let config = work.path().join("config.toml");
    write(
        &config,
        format!(
            "[output]\nresults_dir = {:?}\n",
            results.path().display().to_string()
        ),
    );
    let call = |extra: &str| {
        let config_with = work.path().join("with.toml");
        write(
            &config_with,
            format!("{}{extra}", fs::read_to_string(&config).expect("config")),
        );
        run(toolcell()
            .arg("call")
            .arg("--config")
            .arg(&config_with)
            .arg("--root")
            .arg(work.path())
            .arg("--plugins")
            .arg(plugins.path())
            .arg("long"))
    };
    // Defaults: 2000 lines come first (50 KiB would be later).
    let output = call("");
    assert_eq!(output.code, Some(0), "{output}");
    let shown = long_lines(2000);
    let notice = output
        .stdout
        .strip_prefix(shown.as_str())
        .unwrap_or_else(|| panic!("the first 2000 lines come first{output}"));
    let whole_bytes = long_lines(5000).len() - 1;
    let expected_start = format!(
        "[output cut: shown 2000 of 5000 lines, {} of {}; the whole output is result ",
        notice_bytes(shown.len()),
        notice_bytes(whole_bytes)
    );
    assert!(notice.starts_with(&expected_start), "{notice}");
    let id = notice[expected_start.len()..]
        .split(':')
        .next()
        .expect("an id")
        .to_string();
    let file = results.path().join(format!("{id}.txt"));
    assert_eq!(
        notice,
        format!(
            "{expected_start}{id}: `toolcell result {id}` prints it; it is in {}]\n",
            file.display()
        )
    );
    let whole = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg(&id));
    assert_eq!(whole.code, Some(0), "{whole}");
    assert_eq!(whole.stdout, long_lines(5000).trim_end());

    // A tool's own limit wins over the plugin's, which wins over the global one.
    let output = call(
        "max_lines = 1\n[plugins.long.output]\nmax_lines = 2\n[output.tools.long]\nmax_lines = 3\n",
    );
    assert!(
        output.stdout.starts_with(&format!(
            "{}[output cut: shown 3 of 5000 lines",
            long_lines(3)
        )),
        "{output}"
    );
    let output = call("[plugins.long.output]\nmax_bytes = 10\n");
    assert!(
        output
            .stdout
            .starts_with("line 1\nlin\n[output cut: shown 2 of 5000 lines, 10 bytes of "),
        "{output}"
    );

    let missing = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg("00000000-1"));
    assert_eq!(missing.code, Some(1), "{missing}");
    assert!(missing.stderr.contains("no result 00000000-1"), "{missing}");
    assert_eq!(
        run(toolcell().arg("result").arg("../etc/passwd")).usage_error(),
        "error: '../etc/passwd' is not a result id (they look like 0a1b2c3d-17)"
    );
}

#[test]
fn a_result_store_inside_the_file_root_is_out_of_the_plugins_reach() {
    let plugins = plugin_dir(&[
        ("long.lua", LONG_RESULT_PLUGIN),
        (
            "peek.lua",
            r#"clm.tool_register("peek", { invoke = function(args, ctx)
                local content, err = clm.read_file(args.path)
                local ok, werr = clm.write_file(args.path, "planted")
                ctx:complete(tostring(content) .. "|" .. tostring(err) .. "|" .. tostring(ok) .. "|" .. tostring(werr))
            end })"#,
        ),
    ]);
    let work = temp_dir();
    let config = work.path().join("config.toml");
    let inside = work.path().join("results");
    write(
        &config,
        format!(
            "[output]\nresults_dir = {:?}\n",
            inside.display().to_string()
        ),
    );
    let in_root = |tool: &str, args: &str| {
        run(toolcell()
            .arg("call")
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(work.path())
            .arg("--plugins")
            .arg(plugins.path())
            .arg(tool)
            .arg(args))
    };
    let output = in_root("long", "{}");
    assert_eq!(output.code, Some(0), "{output}");
    let id = output
        .stdout
        .split("the whole output is result ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("the result was kept{output}"))
        .to_string();
    let path = format!("results/{id}.txt");
    let refused = |action: &str| {
        format!(
            "cannot {action} {path}: it lies inside the result store (results), which plugins may not read or change"
        )
    };
    in_root("peek", &json!({ "path": path }).to_string()).assert_completed(&format!(
        "nil|{}|nil|{}",
        refused("read"),
        refused("write")
    ));
    let whole = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg(&id));
    assert_eq!(whole.stdout, long_lines(5000).trim_end(), "{whole}");
}

/// A byte count as the notice gives it: exact, and in KiB too when that is round.
fn notice_bytes(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{bytes} bytes ({} KiB)", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

#[test]
fn an_image_over_the_results_binary_limit_is_a_link_and_toolcell_result_writes_its_bytes() {
    let plugins = plugin_dir(&[(
        "chart.lua",
        r#"clm.tool_register("chart", { invoke = function(args, ctx)
            ctx:complete_content({
              { type = "image", data = string.rep("a", 600), mime_type = "image/png" },
              { type = "image", data = string.rep("b", 600), mime_type = "image/png" },
            })
        end })"#,
    )]);
    let work = temp_dir();
    let results = temp_dir();
    let config = work.path().join("config.toml");
    write(
        &config,
        format!(
            "[output]\nresults_dir = {:?}\nmax_binary_bytes = 1000\n",
            results.path().display().to_string()
        ),
    );
    let parts = temp_dir();
    let output = run(toolcell()
        .arg("call")
        .arg("--config")
        .arg(&config)
        .arg("--parts-dir")
        .arg(parts.path())
        .arg("--plugins")
        .arg(plugins.path())
        .arg("chart"));
    assert_eq!(output.code, Some(0), "{output}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{output}");
    assert_eq!(
        lines[0],
        format!(
            "[image: image/png, 600 bytes] -> {}",
            parts.path().join("part-1.png").display()
        )
    );
    let id = lines[2]
        .split("the whole output is result ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("the result was kept{output}"))
        .to_string();
    let file = results.path().join(format!("{id}-2.bin"));
    assert_eq!(
        lines[1],
        format!(
            "[resource link: image {id}-2 (600 bytes) file://{}]",
            file.display()
        )
    );
    let part = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg(format!("{id}-2")));
    assert_eq!(part.code, Some(0), "{part}");
    assert_eq!(
        part.stdout,
        "b".repeat(600),
        "the part's bytes, as they were"
    );
    let whole = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg(&id));
    assert_eq!(
        whole.stdout,
        format!("[image: image/png, 600 bytes]\n[image: image/png, 600 bytes] (result {id}-2)"),
        "{whole}"
    );
}
