//! A tiny agent loop without a model: it replays a recorded list of tool calls, turn by
//! turn (the calls of one turn run at once, as a model's parallel tool calls do),
//! through one session of toolcell's policy layer, then prints the statistics.
//!
//!     cargo run -p toolcell --example policy-agent
//!
//! The policy: a resolver that keeps the agent off the network, a `before` interceptor
//! that refuses notes named like secrets, a cap of two calls at once, and a "user" who
//! answers every permission question with "allow for the session" (printing it). The
//! plugins are those of examples/plugins; notes are written under a temporary root.
//! docs/policy.md explains each part.

use std::path::Path;

use toolcell::policy::{Answer, Before, Decision, Interceptor, PermissionRequest, ResolverError};
use toolcell::{RuntimeBuilder, Session};

/// The recorded calls, turn by turn: (tool, arguments).
const TURNS: &[&[(&str, &str)]] = &[
    &[
        ("hello", r#"{"name":"agent"}"#),
        ("convert_length", r#"{"value":3,"from":"mi","to":"km"}"#),
        ("hello", r#"{"name":"again"}"#),
    ],
    &[
        ("note_write", r#"{"name":"plan","text":"walk 4.828 km"}"#),
        ("note_write", r#"{"name":"api_secret","text":"hunter2"}"#),
        ("fetch_all", r#"{"urls":["https://example.com/"]}"#),
    ],
    &[
        ("note_read", r#"{"name":"plan"}"#),
        ("note_write", r#"{"name":"done","text":"yes"}"#),
        ("convert_length", r#"{"value":1,"from":"parsec","to":"m"}"#),
    ],
];

/// The resolver: this agent stays off the network (the `fetch` plugin's tools);
/// everything else goes down the chain.
fn offline(request: &PermissionRequest<'_>) -> Result<Option<Decision>, ResolverError> {
    let network = request.plugin.manifest.id == "fetch";
    Ok(network.then(|| Decision::Deny("this agent runs offline".to_string())))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    let root = tempfile::tempdir()?;
    std::fs::create_dir(root.path().join("notes"))?;
    let no_secrets = Interceptor::before("no-secrets", |call| async move {
        let name = call.arguments["name"].as_str().unwrap_or_default();
        Ok(if name.contains("secret") {
            Before::Refuse(format!("notes named like secrets ({name}) are not kept"))
        } else {
            Before::Continue
        })
    })
    .tools("note_*");
    let runtime = RuntimeBuilder::default()
        .plugin_dir(plugins)
        .root(root.path())
        .resolver("offline", toolcell::policy::EMBEDDER_PRIORITY, offline)
        .interceptor(no_secrets)
        .max_concurrent(2)
        .build()
        .await?;

    // The session: who answers `ask`, and what was allowed for the rest of it.
    let user = |prompt: toolcell::policy::PermissionPrompt| async move {
        println!(
            "  ? may '{}' of plugin '{}' run with {}? -> allow for the session",
            prompt.tool.name, prompt.plugin.manifest.id, prompt.arguments
        );
        Answer::AllowForSession
    };
    let session = Session::with_permission_handler(user);

    for (turn, calls) in TURNS.iter().enumerate() {
        println!("turn {}", turn + 1);
        let mut running = Vec::new();
        for (tool, args) in *calls {
            running.push((*tool, session.call(&runtime, tool, args)));
        }
        for (tool, call) in running {
            let text = match call {
                Ok(call) => call.await.model_text(),
                Err(error) => error.to_string(),
            };
            println!("  {tool}: {text}");
        }
    }

    println!(
        "\n{:<16} {:>5} {:>9} {:>6} {:>7} {:>7} {:>10} {:>10}",
        "tool", "calls", "completed", "failed", "denied", "refused", "mean (ms)", "fuel"
    );
    for tool in runtime.stats().tools.iter().filter(|tool| tool.total() > 0) {
        let latency = &tool.latency;
        let mean = if latency.count == 0 {
            0.0
        } else {
            latency.sum.as_secs_f64() * 1000.0 / latency.count as f64
        };
        println!(
            "{:<16} {:>5} {:>9} {:>6} {:>7} {:>7} {:>10.3} {:>10}",
            tool.tool,
            tool.total(),
            tool.calls("completed"),
            tool.calls("failed"),
            tool.calls("denied"),
            tool.calls("refused"),
            mean,
            tool.fuel_used
        );
    }
    for plugin in runtime.stats().plugins {
        println!(
            "plugin {}: peak memory {} KiB",
            plugin.plugin,
            plugin.peak_memory / 1024
        );
    }
    Ok(())
}
