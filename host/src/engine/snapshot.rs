//! Pre-initialisation of the Lua runtime component with wasmtime-wizer.
//!
//! Building the Lua state (the sandboxed libraries, the plugin API, the Lua prelude)
//! is the same work for every plugin, and most of a plugin's load when done in every
//! instance (docs/performance.md). So the host runs the component's `prepare` export once, in an
//! instance of its own, and rewrites the component so that its memories and globals
//! start in the state `prepare` left them. Every plugin instance then starts with the
//! Lua state already built, mapped copy-on-write from the component's memory image,
//! and `load` only runs the plugin's own script. The rewritten component is what the
//! code cache keeps, so this happens once per machine, not once per process.

use wasmtime::Store;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Instance, Lift, Linker, ResourceTable, WasmList};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

/// The Lua runtime's export that builds its interpreter (`world lua-runtime`).
const PREPARE: &str = "prepare";

/// Fuel `prepare` may burn: building the Lua state takes a few million units, so this
/// only stops a guest that never returns.
const PREPARE_FUEL: u64 = 10_000_000_000;

/// The store of the preparing instance: WASI alone, empty like a plugin's. The Lua
/// runtime may read the clock or random bytes while it prepares; it must not use the
/// toolcell host services (those imports trap here), since no plugin exists yet.
struct Preparing {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Preparing {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Runs `wasm`'s `prepare` export on `engine` (one for code that runs once: see
/// `engine::run_once_engine`) and returns the component rewritten to start from
/// the state it left.
pub async fn prepared(engine: &wasmtime::Engine, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
    let mut wizer = Wizer::new();
    // Kept: wizer 48 drops the core module's export of the init function while the
    // component still lifts it, which makes the snapshot invalid. Calling `prepare` on
    // a prepared runtime does nothing.
    wizer.init_func(PREPARE).keep_init_func(true);
    let (context, instrumented) = wizer.instrument_component(wasm)?;
    let component = Component::new(engine, &instrumented)?;

    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    refuse_host_services(&mut linker, &component)?;
    let mut store = Store::new(
        engine,
        Preparing {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        },
    );
    store.set_fuel(PREPARE_FUEL)?;
    let instance = linker.instantiate_async(&mut store, &component).await?;
    let prepare = instance.get_typed_func::<(), (Result<(), String>,)>(&mut store, PREPARE)?;
    let (outcome,) = prepare.call_async(&mut store, ()).await?;
    outcome.map_err(|message| wasmtime::format_err!("{PREPARE} failed: {message}"))?;

    let mut access = Access {
        store: &mut store,
        instance,
    };
    wizer.snapshot_component(&context, &mut access).await
}

/// Defines every function of the component's `toolcell:` imports as one that fails:
/// they serve a plugin, and none is loaded while the runtime prepares. (wasmtime's
/// `define_unknown_imports_as_traps` would also shadow WASI, whose imports it matches
/// by exact version rather than semver-compatibly.)
fn refuse_host_services(
    linker: &mut Linker<Preparing>,
    component: &Component,
) -> wasmtime::Result<()> {
    let engine = component.engine();
    for (name, item) in component.component_type().imports(engine) {
        let ComponentItem::ComponentInstance(interface) = item.ty else {
            continue;
        };
        if !name.starts_with("toolcell:") {
            continue;
        }
        let mut instance = linker.instance(name)?;
        for (func, item) in interface.exports(engine) {
            if matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                let what = format!("{name}#{func}");
                instance.func_new(func, move |_, _, _, _| {
                    wasmtime::bail!("{what} was called while the Lua runtime prepared")
                })?;
            }
        }
    }
    Ok(())
}

/// Lets wizer read the prepared instance's memories and globals through the accessor
/// functions its instrumentation added.
struct Access<'a> {
    store: &'a mut Store<Preparing>,
    instance: Instance,
}

impl Access<'_> {
    /// Calls `func` of the exported instance `interface` and hands its result to `use_it`.
    async fn call<R, U>(
        &mut self,
        interface: &str,
        func: &str,
        use_it: impl FnOnce(&Store<Preparing>, R) -> U,
    ) -> U
    where
        R: Lift + Send + Sync + 'static,
    {
        let store = &mut *self.store;
        // The accessors exist: wizer added them to this very component. A failure here
        // is a bug in wizer, which its trait gives no way to report but a panic.
        let (_, exported) = self
            .instance
            .get_export(&mut *store, None, interface)
            .unwrap_or_else(|| panic!("wizer accessor instance {interface} is missing"));
        let (_, index) = self
            .instance
            .get_export(&mut *store, Some(&exported), func)
            .unwrap_or_else(|| panic!("wizer accessor {interface}#{func} is missing"));
        let accessor = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *store, index)
            .unwrap_or_else(|error| panic!("wizer accessor {func}: {error:#}"));
        let (value,) = accessor
            .call_async(&mut *store, ())
            .await
            .unwrap_or_else(|error| panic!("wizer accessor {func} trapped: {error:#}"));
        use_it(store, value)
    }
}

impl ComponentInstanceState for Access<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        self.call(instance, func, |store, list: WasmList<u8>| {
            contents(list.as_le_slice(store))
        })
        .await
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func, |_, value| value).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func, |_, value| value).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call(instance, func, |_, value: f32| value.to_bits())
            .await
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call(instance, func, |_, value: f64| value.to_bits())
            .await
    }
}
