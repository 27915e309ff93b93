//! The patched interpreter proven against stock Lua: every program of
//! `tests/differential/corpus/` runs on stock Lua 5.4.9 built from the unpatched
//! sources (crates.io lua-src 551.0.2, which `tools/bootstrap` fetches), on toolcell's
//! patched copy (`third_party/lua-src`) built the same way, both natively and under a
//! count hook, and on the patched copy inside the Lua guest, as a plugin's load-time
//! code; and compiled ahead of time (toolcell-aot, as `toolcell pack --aot` compiles a
//! plugin), natively with Lua's assertions on. All must print exactly the same.
//!
//! A program whose first line is `-- native only` uses what the sandbox leaves out (the
//! `coroutine` library) and runs natively only.
//!
//! A program prints with `print`, which here collects its lines (the guest's own `print`
//! writes to the debug log); the collected text is the tool result of a tool the program
//! registers at its end. The prefix that sets this up shares the program's first line,
//! so error messages name the program's own lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolcell::limits::{Limits, MIB};
use toolcell_tests::{Fixture, call};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/differential/corpus");
const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/differential/driver.c");
const STOCK_MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/differential/stock-lua/Cargo.toml"
);
const PATCHED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../third_party/lua-src");

/// How a program that runs natively only starts.
const NATIVE_ONLY: &str = "-- native only";

/// Prepended to each program, on its first line: `print` collects into `__DIFF`.
const PREFIX: &str = "__DIFF = {}; print = (function(pack, tostring, concat, out) \
    return function(...) local t = pack(...) for i = 1, t.n do t[i] = tostring(t[i]) end \
    out[#out + 1] = concat(t, \"\\t\", 1, t.n) end end)(table.pack, tostring, table.concat, \
    __DIFF); ";

/// The script run everywhere for the program `name`.
fn script(name: &str, program: &str) -> String {
    format!(
        "{PREFIX}{program}\nclm.tool_register(\"{name}\", {{ invoke = function(_, ctx) \
         ctx:complete(table.concat(__DIFF, \"\\n\")) end }})\n"
    )
}

/// The corpus: (name, program), by name.
fn corpus() -> Vec<(String, String)> {
    let mut programs: Vec<(String, String)> = std::fs::read_dir(CORPUS)
        .expect("the corpus directory")
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lua"))
        .map(|path| {
            let name = path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .expect("a UTF-8 file name")
                .to_string();
            let program = std::fs::read_to_string(&path).expect("a readable program");
            (name, program)
        })
        .collect();
    programs.sort();
    programs
}

/// Where cargo keeps the stock lua-src crate: its `lua-5.4.9` directory.
fn stock_sources() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .arg("--manifest-path")
        .arg(STOCK_MANIFEST)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "the stock Lua sources are not fetched (run tools/bootstrap): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let manifest = metadata["packages"]
        .as_array()
        .and_then(|packages| {
            packages
                .iter()
                .find(|package| package["name"] == "lua-src")
                .and_then(|package| package["manifest_path"].as_str())
        })
        .expect("lua-src among the packages");
    Path::new(manifest)
        .parent()
        .expect("the crate directory")
        .join("lua-5.4.9")
}

/// The C compiler, with the flags every native build here takes: Lua's internal
/// assertions and API checks on, the sources in `sources` on the include path.
fn compiler(sources: &Path) -> Command {
    let mut command = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()));
    command
        .args(["-std=gnu99", "-O0", "-w"])
        .args(["-DLUA_USE_LINUX", "-DLUA_COMPAT_5_3"])
        .args(["-DLUAI_ASSERT", "-DLUA_USE_APICHECK"])
        .arg("-I")
        .arg(sources);
    command
}

fn run_compiler(mut command: Command, output: &Path) {
    let status = command.status().expect("the C compiler runs");
    assert!(status.success(), "building {}", output.display());
}

/// Compiles the Lua sources in `sources` as one unit (toolcell's `unity/onelua.c`,
/// which only includes them) into the object `output`.
fn build_lua(sources: &Path, output: &Path) {
    let mut command = compiler(sources);
    command
        .arg("-c")
        .arg(Path::new(PATCHED).join("unity/onelua.c"))
        .arg("-o")
        .arg(output);
    run_compiler(command, output);
}

/// Links the native driver with the Lua object `lua` (and, for a compiled program, the
/// C toolcell-aot made of it, `unit`).
fn build_driver(sources: &Path, lua: &Path, unit: Option<&Path>, output: &Path) {
    let mut command = compiler(sources);
    if let Some(unit) = unit {
        command.arg("-DDRIVER_AOT").arg(unit);
    }
    command
        .arg(DRIVER)
        .arg(lua)
        .args(["-lm", "-ldl", "-o"])
        .arg(output);
    run_compiler(command, output);
}

/// The driver running `script` (the program `name`) compiled ahead of time.
fn build_compiled(work: &Path, patched: &Path, lua: &Path, name: &str, script: &str) -> PathBuf {
    let unit = toolcell_aot::translate_script(script.as_bytes(), &format!("@{name}.lua"))
        .unwrap_or_else(|error| panic!("translating {name}: {error}"));
    let source = work.join(format!("{name}.aot.c"));
    std::fs::write(&source, unit.c).expect("the unit is written");
    let driver = work.join(format!("lua-aot-{name}"));
    build_driver(patched, lua, Some(&source), &driver);
    driver
}

/// What the native driver at `driver` prints for `script` (written to `file`).
fn run_native(driver: &Path, file: &Path, name: &str) -> String {
    let output = Command::new(driver)
        .arg(file)
        .arg(format!("@{name}.lua"))
        .output()
        .expect("the driver runs");
    assert!(
        output.status.success(),
        "{} on {name}: {}",
        driver.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The first line where `a` and `b` differ, for the failure message.
fn first_difference(a: &str, b: &str) -> String {
    let (mut left, mut right) = (a.lines(), b.lines());
    for number in 1.. {
        match (left.next(), right.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (None, None) => return "no difference".to_string(),
            (x, y) => return format!("line {number}: {x:?} vs {y:?}"),
        }
    }
    unreachable!("the loop returns")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patched_and_compiled_lua_print_what_stock_lua_prints_natively_and_in_the_guest() {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("differential");
    std::fs::create_dir_all(&work).expect("a work directory");
    let stock_driver = work.join("lua-stock");
    let patched_driver = work.join("lua-patched");
    let (stock_lua, patched_lua) = (work.join("stock.o"), work.join("patched.o"));
    let stock = stock_sources();
    let patched = Path::new(PATCHED).join("lua-5.4.9");
    let programs = corpus();
    assert!(programs.len() >= 8, "the corpus is there");
    let plugins: Vec<(String, String)> = programs
        .iter()
        .map(|(name, program)| (format!("{name}.lua"), script(name, program)))
        .collect();
    let in_sandbox: Vec<(String, String)> = programs
        .iter()
        .zip(&plugins)
        .filter(|((_, program), _)| !program.starts_with(NATIVE_ONLY))
        .map(|(_, plugin)| plugin.clone())
        .collect();
    let compiled: Vec<PathBuf> = std::thread::scope(|scope| {
        scope.spawn(|| {
            build_lua(&stock, &stock_lua);
            build_driver(&stock, &stock_lua, None, &stock_driver);
        });
        build_lua(&patched, &patched_lua);
        build_driver(&patched, &patched_lua, None, &patched_driver);
        let builds: Vec<_> = programs
            .iter()
            .zip(&plugins)
            .map(|((name, _), (_, text))| {
                let (work, patched, lua) = (&work, &patched, &patched_lua);
                scope.spawn(move || build_compiled(work, patched, lua, name, text))
            })
            .collect();
        builds
            .into_iter()
            .map(|build| build.join().expect("a compiled driver builds"))
            .collect()
    });

    let borrowed: Vec<(&str, &str)> = in_sandbox
        .iter()
        .map(|(file, text)| (file.as_str(), text.as_str()))
        .collect();
    let fixture = Fixture::new(&borrowed);
    // Room for deep recursion and a stack overflow, which stock Lua reaches at a
    // million stack slots, and time for the programs to run at load.
    let limits = Limits {
        load_timeout: std::time::Duration::from_secs(60),
        ..Limits::default().with_memory(96 * MIB)
    };
    let runtime = fixture.load_with(|builder| builder.limits(limits)).await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );

    let mut failures = Vec::new();
    for (((name, program), (file, text)), compiled_driver) in
        programs.iter().zip(&plugins).zip(&compiled)
    {
        let path = work.join(file);
        std::fs::write(&path, text).expect("the script is written");
        let from_stock = run_native(&stock_driver, &path, name);
        let from_patched = run_native(&patched_driver, &path, name);
        let from_compiled = run_native(compiled_driver, &path, name);
        let in_guest = if program.starts_with(NATIVE_ONLY) {
            from_stock.clone()
        } else {
            let outcome = call(&runtime, name, "{}").await;
            match outcome.failure() {
                None => outcome.output().unwrap_or_default().to_string(),
                Some(message) => format!("failed: {message}"),
            }
        };
        if from_patched != from_stock {
            failures.push(format!(
                "{name}: patched native differs from stock: {}",
                first_difference(&from_stock, &from_patched)
            ));
        }
        if from_compiled != from_stock {
            failures.push(format!(
                "{name}: compiled ahead of time differs from stock: {}",
                first_difference(&from_stock, &from_compiled)
            ));
        }
        if in_guest != from_stock {
            failures.push(format!(
                "{name}: the guest differs from stock: {}",
                first_difference(&from_stock, &in_guest)
            ));
        }
        assert!(
            !from_stock.starts_with("error:") && !from_stock.is_empty(),
            "{name} should run to its end and print: {from_stock}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
