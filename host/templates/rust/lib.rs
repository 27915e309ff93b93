//! {{name}}: a toolcell plugin in Rust, on the `toolcell-guest` SDK.
//!
//! Build: `cargo build --target wasm32-wasip2 --release`; the plugin is
//! `target/wasm32-wasip2/release/{{crate}}.wasm`. `./test.sh` builds, checks and calls it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolcell_guest::{Ctx, Error, Plugin, Tool};

/// The arguments of `{{tool}}`: the tool's schema is derived from this type, and each
/// field's doc comment becomes its description.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

/// A handler is an `async` function of the arguments and the call's context; its
/// `Ok` string is the tool's output, its `Err` the failure the model sees.
async fn greet(args: Greet, _ctx: Ctx) -> Result<String, Error> {
    Ok(format!("Hello, {}!", args.name))
}

fn plugin() -> Plugin {
    Plugin::new().tool(Tool::new("{{tool}}", "Greets someone by name", greet))
}

toolcell_guest::export!(plugin);
toolcell_guest::manifest!(include_str!("../toolcell.toml"));
