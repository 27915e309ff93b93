//! Plugins compiled ahead of time (`toolcell pack --aot`) in `compare`: the compute
//! plugin compiled, for the Lua-bound workloads' "compiled" column, and what compiling
//! costs: pack time, size, cold compile, warm load, memory, many plugins.

use std::path::Path;
use std::time::{Duration, Instant};

use toolcell::aot::Toolchain;
use toolcell::manifest::Manifest;

/// zig for `pack --aot`, found as the `toolcell` command finds it; `None` (and why)
/// when it is not there: the compiled measurements are then left out.
pub fn toolchain() -> Result<Toolchain, String> {
    Toolchain::find(toolcell::cli::environment::python()).map_err(|error| error.to_string())
}

/// `script` packed compiled ahead of time under the id `id`, and how long packing took.
pub async fn pack(script: &str, id: &str, toolchain: &Toolchain) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let bytes =
        toolcell::pack::pack_lua_compiled(script.as_bytes(), &Manifest::clm_default(id), toolchain)
            .await
            .unwrap_or_else(|error| panic!("packing {id} compiled: {error}"));
    (bytes, start.elapsed())
}

/// `script` packed to be interpreted, and how long packing took.
pub fn pack_interpreted(script: &str, id: &str) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let bytes =
        toolcell::pack::pack_lua(script.as_bytes(), &Manifest::clm_default(id)).expect("packs");
    (bytes, start.elapsed())
}

/// Writes `bytes` as `dir/NAME.wasm`.
pub fn install(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(format!("{name}.wasm")), bytes).expect("write the plugin");
}

/// What compiling ahead of time costs, against packing to be interpreted: pack time
/// and size, cold and warm loads, many plugins.
pub async fn costs(flags: crate::EngineFlags) {
    use crate::compare::{TRIVIAL_PLUGIN, compute_plugin, plugin_dir, probe_with};
    use crate::measure::show;

    let toolchain = match toolchain() {
        Ok(toolchain) => toolchain,
        Err(error) => {
            println!("compiled ahead of time: not measured: {error}");
            return;
        }
    };
    let engine = flags.engine();
    println!(
        "{:<34} {:>14} {:>14}",
        "compiled ahead of time (pack --aot)", "interpreted", "compiled"
    );
    let compute = compute_plugin();
    let mut trivial = None;
    for (name, script) in [("trivial", TRIVIAL_PLUGIN), ("compute", compute.as_str())] {
        let (plain, plain_time) = pack_interpreted(script, name);
        let (compiled, compiled_time) = pack(script, name, &toolchain).await;
        println!(
            "{:<34} {:>14} {:>14}",
            format!("pack: {name} plugin"),
            show(plain_time),
            show(compiled_time)
        );
        println!(
            "{:<34} {:>11} KB {:>11} KB",
            format!("size: {name} plugin"),
            plain.len() / 1000,
            compiled.len() / 1000
        );
        if name == "trivial" {
            trivial = Some((plain, compiled));
        }
    }
    let (plain, compiled) = trivial.expect("the trivial plugin was packed");

    // One plugin; then 1000 copies of it (one compiled component, 1000 instances); then
    // distinct plugins, each with code of its own.
    // Named after its id, as every .wasm plugin must be.
    let one = |bytes: &[u8]| {
        let dir = plugin_dir(&[]);
        install(dir.path(), "trivial", bytes);
        dir
    };
    let (plain_one, compiled_one) = (one(&plain), one(&compiled));
    let cold = |dir: &Path| probe_with("aot-cold-load", flags, dir);
    let warm = |dir: &Path| probe_with("aot-warm-load", flags, dir);
    println!(
        "{:<34} {:>14} {:>14}",
        "cold load (compile), one plugin",
        show(nanos(&cold(plain_one.path()))),
        show(nanos(&cold(compiled_one.path())))
    );
    println!(
        "{:<34} {:>14} {:>14}",
        "warm load, one plugin",
        show(nanos(&warm(plain_one.path()))),
        show(nanos(&warm(compiled_one.path())))
    );
    let copies = |bytes: &[u8]| {
        let dir = plugin_dir(&[]);
        for i in 0..1000 {
            let manifest = Manifest::clm_default(&format!("p{i:05}"));
            let packed = toolcell::pack::with_manifest(bytes, &manifest).expect("re-packs");
            install(dir.path(), &format!("p{i:05}"), &packed.bytes);
        }
        dir
    };
    let distinct_count = 10;
    let mut distinct_plain = Vec::new();
    let mut distinct_compiled = Vec::new();
    for i in 0..distinct_count {
        let script = TRIVIAL_PLUGIN.replacen("\"ok\"", &format!("\"ok{i}\""), 1);
        distinct_plain.push(pack_interpreted(&script, &format!("d{i}")).0);
        distinct_compiled.push(pack(&script, &format!("d{i}"), &toolchain).await.0);
    }
    let distinct = |all: &[Vec<u8>]| {
        let dir = plugin_dir(&[]);
        for (i, bytes) in all.iter().enumerate() {
            install(dir.path(), &format!("d{i}"), bytes);
        }
        dir
    };
    for (what, plain_dir, compiled_dir) in [
        (
            "1000 copies of one plugin",
            copies(&plain),
            copies(&compiled),
        ),
        (
            "10 distinct plugins",
            distinct(&distinct_plain),
            distinct(&distinct_compiled),
        ),
    ] {
        // Compile into the disk cache first, as a server's second start finds it.
        for dir in [plain_dir.path(), compiled_dir.path()] {
            drop(crate::compare::load(&engine, dir, toolcell::limits::Limits::default()).await);
        }
        let plain = probe_with("aot-load", flags, plain_dir.path());
        let compiled = probe_with("aot-load", flags, compiled_dir.path());
        println!(
            "{:<34} {:>14} {:>14}",
            format!("{what}: time"),
            show(nanos(&plain)),
            show(nanos(&compiled))
        );
        for (field, label) in [("peak_kib", "peak RSS"), ("pss_kib", "PSS")] {
            println!(
                "{:<34} {:>10} MiB {:>10} MiB",
                format!("{what}: {label}"),
                plain[field].as_u64().unwrap_or(0) / 1024,
                compiled[field].as_u64().unwrap_or(0) / 1024
            );
        }
    }
}

fn nanos(result: &serde_json::Value) -> Duration {
    Duration::from_nanos(result["nanos"].as_u64().unwrap_or(0))
}
