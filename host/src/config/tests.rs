//! The configuration file: every key reaches the setting it names, bad files are
//! refused naming the key and the line, and the output layers apply in their order.

use std::path::Path;
use std::time::Duration;

#[cfg(feature = "signing")]
use crate::artifact::signature::SecretKey;
use crate::artifact::signature::UnsignedPolicy;

use super::*;

fn parse(text: &str) -> Config {
    Config::parse(text).unwrap_or_else(|error| panic!("{text}\n{error}"))
}

fn error(text: &str) -> String {
    match Config::parse(text) {
        Ok(config) => panic!("{text}\nparsed: {config:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn an_empty_file_changes_nothing() {
    let config = parse("");
    assert_eq!(config.limits.apply(Limits::default()), Limits::default());
    assert_eq!(config.http.settings(), HttpSettings::default());
    assert_eq!(
        config.http.policy(&[]).expect("policy"),
        HttpPolicy::default()
    );
    assert_eq!(config.files.access, None);
    assert_eq!(config.files_root(), None);
    assert_eq!(config.output_for("p", "t"), OutputLimits::default());
    assert_eq!(
        config.description_bytes_for("p", "t"),
        cut::DEFAULT_MAX_DESCRIPTION_BYTES
    );
    assert!(config.tool_config_json().is_empty());
    assert_eq!(config.trust.unsigned, UnsignedPolicy::Allow);
    assert!(config.trust.keys.is_empty());
}

#[test]
fn every_limits_key_sets_its_own_limit() {
    // Values unlike every default, so a key wired to the wrong field shows.
    let config = parse(
        "[limits]
         memory_mib = 3
         call_timeout_ms = 1001
         load_timeout_ms = 1002
         fuel = 1003
         schema_max_bytes = 1004
         schemas_max_bytes = 1005
         schema_max_depth = 1006
         pattern_max_bytes = 1007
         patterns_max_bytes = 1008
         schema_compile_ms = 1009
         log_call_bytes = 1010
         log_bytes_per_second = 1011
         log_burst_bytes = 1012",
    );
    let limits = config.limits.apply(Limits::default());

    let mut expected = Limits::default().with_memory(3 * MIB);
    expected.call_timeout = Duration::from_millis(1001);
    expected.load_timeout = Duration::from_millis(1002);
    expected.fuel = 1003;
    expected.schemas.schema_bytes = 1004;
    expected.schemas.plugin_schema_bytes = 1005;
    expected.schemas.depth = 1006;
    expected.schemas.pattern_bytes = 1007;
    expected.schemas.plugin_pattern_bytes = 1008;
    expected.schemas.compile_time = Duration::from_millis(1009);
    expected.log.call_bytes = 1010;
    expected.log.bytes_per_second = 1011;
    expected.log.burst_bytes = 1012;
    assert_eq!(limits, expected);
    // The memory limit carries the hard linear-memory cap with it.
    assert_eq!(limits.linear_memory, 2 * 3 * MIB + 16 * MIB);
}

#[test]
fn a_limits_section_leaves_what_it_does_not_set() {
    let mut base = Limits::default().with_memory(5 * MIB);
    base.fuel = 7;
    let limits = parse("[limits]\ncall_timeout_ms = 10")
        .limits
        .apply(base.clone());
    assert_eq!(limits.memory, 5 * MIB);
    assert_eq!(limits.fuel, 7);
    assert_eq!(limits.call_timeout, Duration::from_millis(10));
    // A huge memory value saturates instead of overflowing.
    let huge = parse("[limits]\nmemory_mib = 18446744073709551615");
    assert_eq!(huge.limits.apply(Limits::default()).memory, u64::MAX);
}

#[test]
fn every_http_key_sets_its_own_bound_and_grants_add_up() {
    let config = parse(
        r#"[http]
           allow = ["127.0.0.1", "*.Example.com:8443"]
           public = false
           timeout_ms = 1234
           max_response_bytes = 99
           max_redirects = 0"#,
    );
    let settings = config.http.settings();
    assert_eq!(
        settings,
        HttpSettings {
            timeout: Duration::from_millis(1234),
            max_response_bytes: 99,
            max_redirects: 0,
            ..HttpSettings::default()
        }
    );
    let extra: HostGrant = "api.test".parse().expect("grant");
    let policy = config
        .http
        .policy(std::slice::from_ref(&extra))
        .expect("policy");
    let grants: Vec<String> = policy.grants().iter().map(ToString::to_string).collect();
    assert_eq!(grants, ["api.test", "127.0.0.1", "*.example.com:8443"]);
    assert!(!policy.allow_public());
    // Public hosts are allowed unless the file says otherwise.
    assert!(
        parse("[http]")
            .http
            .policy(&[])
            .expect("policy")
            .allow_public()
    );
}

#[test]
fn an_http_overlay_adds_grants_and_replaces_only_the_bounds_it_sets() {
    let config = parse(
        r#"[http]
           allow = ["one.test"]
           public = false
           timeout_ms = 100
           max_redirects = 2
           [plugins.p.http]
           allow = ["two.test"]
           timeout_ms = 200"#,
    );
    let merged = config.http.clone().overlay(&config.plugins["p"].http);
    assert_eq!(merged.allow, ["one.test", "two.test"]);
    assert_eq!(merged.public, Some(false));
    assert_eq!(merged.timeout_ms, Some(200));
    assert_eq!(merged.max_redirects, Some(2));
    assert_eq!(merged.max_response_bytes, None);
    let public = config.http.clone().overlay(&HttpSection {
        public: Some(true),
        ..HttpSection::default()
    });
    assert_eq!(public.public, Some(true));
}

#[test]
fn files_access_and_plugin_sections_are_read() {
    let config = parse(
        r#"[files]
           access = "read-only"
           [plugins.writer.files]
           access = "read-write"
           [plugins.writer.limits]
           memory_mib = 16
           [plugins.writer.output]
           max_bytes = 7"#,
    );
    assert_eq!(config.files.access, Some(FileAccess::ReadOnly));
    let writer = &config.plugins["writer"];
    assert_eq!(writer.files.access, Some(FileAccess::ReadWrite));
    assert_eq!(writer.limits.memory_mib, Some(16));
    assert_eq!(writer.output.max_bytes, Some(7));
}

#[test]
fn the_file_root_is_taken_from_the_config_files_directory() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let path = dir.path().join("toolcell.toml");
    std::fs::write(&path, "[files]\nroot = \"workspace\"").expect("config");
    let config = Config::load(&path).expect("loads");
    assert_eq!(config.path(), Some(path.as_path()));
    assert_eq!(config.files_root(), Some(dir.path().join("workspace")));

    std::fs::write(&path, "[files]\nroot = \"/srv/data\"").expect("config");
    let absolute = Config::load(&path).expect("loads");
    assert_eq!(absolute.files_root(), Some(PathBuf::from("/srv/data")));
    // Parsed text has no file: a relative root stays relative (to the working directory).
    let parsed = parse("[files]\nroot = \"workspace\"");
    assert_eq!(parsed.path(), None);
    assert_eq!(parsed.files_root(), Some(PathBuf::from("workspace")));
}

#[test]
fn output_settings_apply_tool_over_plugin_over_global_over_defaults() {
    let config = parse(
        "[output]
         max_lines = 10
         max_bytes = 100
         max_description_bytes = 1000
         [output.tools.report]
         max_lines = 30
         [plugins.p.output]
         max_lines = 20
         max_bytes = 200
         max_binary_bytes = 300
         max_description_bytes = 2000",
    );
    let limits = |plugin, tool| {
        let limits = config.output_for(plugin, tool);
        (limits.max_lines, limits.max_bytes)
    };
    assert_eq!(limits("p", "report"), (30, 200));
    assert_eq!(limits("p", "other"), (20, 200));
    assert_eq!(limits("q", "report"), (30, 100));
    assert_eq!(limits("q", "other"), (10, 100));
    assert_eq!(config.output_for("p", "report").max_binary_bytes, 300);
    assert_eq!(
        config.output_for("q", "report").max_binary_bytes,
        cut::DEFAULT_MAX_BINARY_BYTES
    );
    assert_eq!(config.description_bytes_for("p", "report"), 2000);
    assert_eq!(config.description_bytes_for("q", "report"), 1000);

    let defaults = parse("[output.tools.report]\nmax_bytes = 5");
    assert_eq!(
        defaults.output_for("p", "report"),
        OutputLimits {
            max_lines: cut::DEFAULT_MAX_LINES,
            max_bytes: 5,
            max_binary_bytes: cut::DEFAULT_MAX_BINARY_BYTES,
        }
    );
    assert_eq!(
        defaults.description_bytes_for("p", "report"),
        cut::DEFAULT_MAX_DESCRIPTION_BYTES
    );
}

#[test]
fn the_result_store_is_the_configured_directory_else_the_caches() {
    let configured = parse("[output]\nresults_dir = \"/kept\"\nresults_max_bytes = 42");
    let store = configured
        .result_store(Some(Path::new("/cache")))
        .expect("a store");
    assert_eq!(store.dir(), Path::new("/kept"));
    // The cap is refused before anything is written.
    let id = results::result_id(1, 1);
    assert!(matches!(
        store.put(&id, &"x".repeat(43)),
        Err(results::ResultError::TooLarge {
            bytes: 43,
            limit: 42
        })
    ));

    let cache = parse("");
    let store = cache
        .result_store(Some(Path::new("/cache")))
        .expect("a store");
    assert_eq!(store.dir(), Path::new("/cache/results"));
    let default_cap = results::DEFAULT_MAX_BYTES + 1;
    assert!(matches!(
        store.put(&id, &"x".repeat(default_cap as usize)),
        Err(results::ResultError::TooLarge { limit, .. }) if limit == results::DEFAULT_MAX_BYTES
    ));
    assert!(cache.result_store(None).is_none());
}

#[test]
fn a_relative_results_dir_is_taken_from_the_config_files_directory() {
    // Issue 33: it was taken from the current directory, so `toolcell result --config`
    // run elsewhere than `serve` did not find the results.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("toolcell.toml");
    std::fs::write(&path, "[output]\nresults_dir = \"kept/results\"\n").expect("write");
    let config = Config::load(&path).expect("loads");
    let store = config.result_store(None).expect("a store");
    assert_eq!(store.dir(), dir.path().join("kept/results"));
}

#[test]
fn tool_tables_reach_plugins_as_json_of_the_same_values() {
    let config = parse(
        r#"[tools.weather]
           api_key = "k"
           retries = 3
           ratio = 0.5
           verbose = true
           since = 1979-05-27T07:32:00Z
           cities = ["Oslo", "Lima"]
           [tools.weather.units]
           temperature = "C""#,
    );
    let json = config.tool_config_json();
    let weather: serde_json::Value = serde_json::from_str(&json["weather"]).expect("json");
    assert_eq!(
        weather,
        serde_json::json!({
            "api_key": "k",
            "retries": 3,
            "ratio": 0.5,
            "verbose": true,
            "since": "1979-05-27T07:32:00Z",
            "cities": ["Oslo", "Lima"],
            "units": {"temperature": "C"},
        })
    );
    assert_eq!(json.len(), 1);
}

/// Keys are parsed only by a build that can check signatures.
#[cfg(feature = "signing")]
#[test]
fn trust_keys_and_the_unsigned_policy_are_read() {
    let key = SecretKey::generate().public();
    let config = parse(&format!(
        "[trust]\nkeys = [\"{key}\"]\nunsigned = \"refuse\""
    ));
    assert_eq!(config.trust.keys, [key]);
    assert_eq!(config.trust.unsigned, UnsignedPolicy::Refuse);

    let bad = error("[trust]\nkeys = [\"bm90IGEga2V5\"]");
    assert!(bad.contains("line 2"), "{bad}");
    assert!(bad.contains("is not an Ed25519 public key"), "{bad}");
}

#[test]
fn an_unknown_key_is_refused_naming_it_and_its_line() {
    for (text, key, line) in [
        ("[limits]\nmemory_mb = 8", "memory_mb", 2),
        ("[http]\ntimeout = 5", "timeout", 2),
        ("\n\n[files]\nacess = \"none\"", "acess", 4),
        ("[output.tools.t]\nmax_line = 1", "max_line", 2),
        ("[plugins.p]\nlimit = 1", "limit", 2),
        ("[plugins.p.files]\nroots = \"x\"", "roots", 2),
        ("[limit]\nfuel = 1", "limit", 1),
    ] {
        let message = error(text);
        assert!(
            message.contains(&format!("unknown field `{key}`")),
            "{text}: {message}"
        );
        assert!(
            message.contains(&format!("line {line}")),
            "{text}: {message}"
        );
        // One line: toml's source snippet is cut away.
        assert!(!message.contains('\n'), "{text}: {message}");
    }
}

#[test]
fn a_value_of_the_wrong_kind_is_refused_naming_the_line_and_what_was_expected() {
    let message = error("[limits]\nfuel = 1\nmemory_mib = \"8\"");
    assert!(message.contains("line 3"), "{message}");
    assert!(message.contains("invalid type: string \"8\""), "{message}");
    let message = error("[limits]\nmemory_mib = -1");
    assert!(message.contains("line 2"), "{message}");
    let message = error("[files]\naccess = \"write\"");
    assert!(message.contains("line 2"), "{message}");
    assert!(message.contains("read-only"), "{message}");
    let message = error("[limits\nfuel = 1");
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn an_allow_entry_that_is_not_a_host_grant_is_refused_naming_the_entry_and_section() {
    let global = error("[http]\nallow = [\"ok.test\", \"http://bad.test/\"]");
    assert!(
        global.starts_with("http.allow entry \"http://bad.test/\": "),
        "{global}"
    );
    let plugin = error("[plugins.weather.http]\nallow = [\"bad host\"]");
    assert!(
        plugin.starts_with("[plugins.weather.http] http.allow entry \"bad host\": "),
        "{plugin}"
    );
}

#[test]
fn a_file_that_cannot_be_read_or_parsed_is_named_in_the_error() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let missing = dir.path().join("missing.toml");
    let message = Config::load(&missing).expect_err("missing").to_string();
    assert!(
        message.starts_with(&format!(
            "cannot read the config file {}: ",
            missing.display()
        )),
        "{message}"
    );

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[limits]\nfuel = \"lots\"").expect("write");
    let message = Config::load(&bad).expect_err("bad").to_string();
    assert!(
        message.starts_with(&format!("{}: ", bad.display())),
        "{message}"
    );
    assert!(message.contains("line 2"), "{message}");
}
