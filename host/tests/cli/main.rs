//! End-to-end tests of the `toolcell` command-line contract: the real binary, real Lua
//! plugins written into temporary directories, real sandboxes.
//!
//! Every test asserts the exit code, stdout and (where the contract says something
//! about it) stderr. The contract, in short:
//!
//! * `call`: a completed tool prints its result plus one newline and exits 0; a failed
//!   tool prints `[tool failed: MESSAGE]` plus one newline and exits 1; usage errors
//!   print one line on stderr, nothing on stdout, and exit 2.
//! * Load-time failures are reported on stderr and skip only the plugin concerned.
//! * Plugins load in a deterministic order; the first registration of a name wins.
//! * `list` prints a table, or with `--json` OpenAI-style function definitions
//!   (`--format openai|anthropic|mcp` for each provider's).
//! * Arguments that fail the tool's `params_schema` are a usage error; the tool never runs.
//! * `--config`, `--root`, `CLM_DEBUG_LOG`/`TOOLCELL_DEBUG_LOG` and `--allow-http`
//!   behave as clm-tool(5) and docs/cli.md and docs/capabilities.md describe.
//!
//! One module per subcommand or concern; `support` runs the binary and holds what
//! several modules share.

mod aot;
mod cache;
mod call;
mod check;
mod config;
mod debug_log;
mod files;
mod http;
mod inspect;
mod list;
mod load;
mod new;
mod pack;
mod pins;
mod result;
mod sign;
mod support;
mod trusted;
