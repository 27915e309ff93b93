//! Arguments JSON, as a model would send it, through the host's checks into the Lua
//! guest's decoder and back out through its encoder. Whatever the bytes, the call is
//! refused as a usage error or ends as a completion or a failure: the guest never
//! traps (a "crashed" failure is a finding) and the host never panics.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolcell::{CallOutcome, Runtime};

const ECHO: &str = r#"
clm.tool_register("echo", { invoke = function(args, ctx)
  ctx:complete(json.encode(args))
end })
"#;

struct Harness {
    tokio: tokio::runtime::Runtime,
    runtime: Runtime,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let plugins = tempfile::TempDir::new().expect("plugins");
        let root = tempfile::TempDir::new().expect("root");
        std::fs::write(plugins.path().join("echo.lua"), ECHO).expect("plugin");
        let tokio = tokio::runtime::Runtime::new().expect("tokio");
        let runtime = tokio
            .block_on(
                Runtime::builder()
                    .plugin_dir(plugins.path())
                    .root(root.path())
                    .debug_log(None)
                    .build(),
            )
            .expect("runtime");
        Harness {
            tokio,
            runtime,
            _dirs: (plugins, root),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(args) = std::str::from_utf8(data) else {
        return;
    };
    let harness = harness();
    let Ok(call) = harness.runtime.call("echo", args) else {
        return;
    };
    match harness.tokio.block_on(call) {
        CallOutcome::Completed(output) => {
            // What the guest encoded must be JSON the host can read again.
            serde_json_check(&output);
        }
        CallOutcome::Crashed { message, .. } => {
            panic!("the guest crashed on {args:?}: {message}");
        }
        _ => {}
    }
});

/// The output of json.encode is a JSON object: it starts with '{' and ends with '}'.
fn serde_json_check(output: &str) {
    assert!(
        output.starts_with('{') && output.ends_with('}'),
        "json.encode of an arguments table gave {output:?}"
    );
}
