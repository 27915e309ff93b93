//! The wasmtime engine every plugin shares, and the epoch ticker behind wall-clock
//! backstops.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::{Config, Engine};

/// How often the engine's epoch advances. A running plugin yields to the async
/// executor at every tick and is checked against its hard deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Builds the engine configuration: component model, wasm exceptions (the Lua guest's
/// setjmp/longjmp), fuel metering and epoch interruption on every store, and no
/// component-model concurrency (it costs about 3x on every export call and plugins do
/// not use it: the step protocol gives them concurrency).
fn new_engine() -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .wasm_exceptions(true)
        .concurrency_support(false)
        .consume_fuel(true)
        .epoch_interruption(true);
    Engine::new(&config)
}

/// The process-wide engine, created on first use with its epoch ticker.
///
/// One engine serves every runtime of the process: compiled code, the instance pool
/// and the ticker thread are shared, and a second runtime starts without recompiling.
pub fn shared() -> Result<&'static Engine, String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let engine = new_engine().map_err(|error| format!("{error:#}"))?;
            start_ticker(engine.clone())
                .map_err(|error| format!("cannot start the epoch ticker: {error}"))?;
            Ok(engine)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Advances the engine's epoch every `EPOCH_TICK`, for the life of the process.
fn start_ticker(engine: Engine) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("toolcell-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })?;
    Ok(())
}
