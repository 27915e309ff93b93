//! The wasmtime engine every plugin shares, and the epoch ticker behind wall-clock
//! backstops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Config, Engine};

/// How often the engine's epoch advances. A running plugin yields to the async
/// executor at every tick and is checked against its hard deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Builds the engine configuration: component model, wasm exceptions (the Lua guest's
/// setjmp/longjmp), fuel metering and epoch interruption on every store, and no
/// component-model concurrency (it costs about 3x on every export call and plugins do
/// not use it: the step protocol gives them concurrency).
pub fn new_engine() -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .wasm_exceptions(true)
        .concurrency_support(false)
        .consume_fuel(true)
        .epoch_interruption(true);
    Engine::new(&config)
}

/// A thread that advances the engine's epoch every `EPOCH_TICK` until dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engine`.
    pub fn start(engine: &Engine) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.clone();
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("toolcell-epoch".into())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
