//! `--config`: `[tools.NAME]` tables become `clm.config`.

use serde_json::{Value, json};

use crate::support::*;

const CONFIG_REPORT: &str = r#"
local at_load = clm.config.api_key
clm.tool_register("forecast", {
  invoke = function(args, ctx)
    ctx:complete(json.encode({ at_load = at_load, config = clm.config }))
  end,
})
"#;

#[test]
fn config_table_named_after_the_file_stem_becomes_clm_config() {
    let plugins = plugin_dir(&[("weather.lua", CONFIG_REPORT)]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(
        &config_file,
        r#"
[tools.weather]
api_key = "k-123"
retries = 3

[tools.weather.endpoint]
host = "example.test"
secure = true

[tools.unrelated]
api_key = "not for weather"
"#,
    );
    let output = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--config")
        .arg(&config_file)
        .arg("forecast"));
    assert_eq!(output.code, Some(0), "{output}");
    let reported: Value = serde_json::from_str(output.stdout.trim_end())
        .unwrap_or_else(|error| panic!("the tool reports JSON: {error}{output}"));
    assert_eq!(
        reported,
        json!({
            "at_load": "k-123",
            "config": {
                "api_key": "k-123",
                "retries": 3,
                "endpoint": { "host": "example.test", "secure": true },
            },
        }),
        "{output}"
    );
}

#[test]
fn config_table_named_after_a_tool_becomes_clm_config_of_its_plugin() {
    let plugins = plugin_dir(&[(
        "toolbox.lua",
        r#"
local function report(_, ctx) ctx:complete(json.encode(clm.config)) end
clm.tool_register("hammer", { invoke = report })
clm.tool_register("saw", { invoke = report })
"#,
    )]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(&config_file, "[tools.saw]\nblade = \"fine\"\nteeth = 24\n");
    for tool in ["saw", "hammer"] {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--config")
            .arg(&config_file)
            .arg(tool));
        assert_eq!(output.code, Some(0), "{output}");
        let reported: Value = serde_json::from_str(output.stdout.trim_end())
            .unwrap_or_else(|error| panic!("the tool reports JSON: {error}{output}"));
        assert_eq!(
            reported,
            json!({ "blade": "fine", "teeth": 24 }),
            "clm.config is the plugin's, whichever of its tools runs{output}"
        );
    }
}

#[test]
fn clm_config_is_an_empty_table_without_a_matching_entry() {
    let plugins = plugin_dir(&[(
        "lonely.lua",
        r#"
local function describe()
  return type(clm.config) .. ":" .. tostring(type(clm.config) == "table" and next(clm.config) == nil)
end
local at_load = describe()
clm.tool_register("lonely", {
  invoke = function(args, ctx) ctx:complete(at_load .. "|" .. describe()) end,
})
"#,
    )]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(&config_file, "[tools.someone_else]\nsetting = 1\n");

    run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--config")
        .arg(&config_file)
        .arg("lonely"))
    .assert_completed("table:true|table:true");
    call(plugins.path(), "lonely", None).assert_completed("table:true|table:true");
}
