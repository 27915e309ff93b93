//! `toolcell new`: a plugin project to start from, in Lua, Rust, JavaScript or Python.
//!
//! Each project holds the smallest useful plugin (one tool with a schema), its
//! manifest, a `test.sh` that builds it where needed, loads it with `toolcell check` and
//! calls the tool, and a README with the build command. The templates live in
//! `host/templates/` and are embedded in the binary.
//!
//! A Rust project needs the `toolcell-guest` crate, and a JavaScript or Python project
//! the build scripts and binding layers of a toolcell source checkout. Which checkout:
//! the one given (`--toolcell-src`), else the one this binary was built from if it is
//! still there. Without one, a Rust project depends on the crate from the repository
//! by git, and the other two name the checkout in `TOOLCELL_SRC` when they build.

use std::path::{Path, PathBuf};

/// The languages a project can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// A Lua script on the clm tool API, run by the embedded Lua guest.
    Lua,
    /// A Rust crate on the `toolcell-guest` SDK.
    Rust,
    /// JavaScript, built with componentize-js.
    Js,
    /// Python, built with componentize-py.
    Python,
}

impl Lang {
    /// How messages name the language.
    pub fn describe(self) -> &'static str {
        match self {
            Lang::Lua => "Lua",
            Lang::Rust => "Rust",
            Lang::Js => "JavaScript",
            Lang::Python => "Python",
        }
    }
}

/// Why a project could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The name cannot name a plugin, a tool and a crate at once.
    #[error(
        "'{0}' cannot be a plugin name: use 1 to 64 characters of a-z, 0-9, '-' and '_', \
         starting with a letter"
    )]
    InvalidName(String),
    /// The directory exists and holds something.
    #[error("{0} already exists and is not empty; choose another name or --output")]
    Exists(PathBuf),
    /// The given checkout is not a toolcell checkout.
    #[error("{0} is not a toolcell source checkout (it has no guest-sdk/Cargo.toml)")]
    NotACheckout(PathBuf),
    /// A file or directory could not be written.
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, std::io::Error),
}

/// What to create.
#[derive(Debug, Clone)]
pub struct Options {
    /// The plugin's name: its id, its tool's name, its directory's default name.
    pub name: String,
    /// The language.
    pub lang: Lang,
    /// Where to write the project (created; must be absent or empty).
    pub dir: PathBuf,
    /// A toolcell source checkout to build against, instead of the one this binary was
    /// built from.
    pub toolcell_src: Option<PathBuf>,
}

/// A project written.
#[derive(Debug, Clone)]
pub struct Project {
    /// Its directory.
    pub dir: PathBuf,
    /// The files written, relative to `dir`.
    pub files: Vec<PathBuf>,
    /// Where the toolcell source checkout is, if one was found.
    pub toolcell_src: Option<PathBuf>,
    /// Where a Rust project's `toolcell-guest` comes from, as `Cargo.toml` says it.
    pub guest_dependency: Option<String>,
    /// The commands to run next, one per line.
    pub next_steps: Vec<String>,
}

/// The LuaCATS definitions of the plugin API (see `guest-sdk/lua/`).
pub const LUA_DEFINITIONS: &str = include_str!("../../../guest-sdk/lua/clm.lua");

/// One file of a project: where it goes, its template, whether it is a script to run.
struct File {
    path: &'static str,
    template: &'static str,
    executable: bool,
}

const fn file(path: &'static str, template: &'static str) -> File {
    File {
        path,
        template,
        executable: false,
    }
}

const fn script(path: &'static str, template: &'static str) -> File {
    File {
        path,
        template,
        executable: true,
    }
}

const SCRIPTED_TEST: &str = include_str!("../../templates/scripted/test.sh");

/// The end of every `test.sh`: the check of the tool's answer.
const EXPECT: &str = include_str!("../../templates/expect.sh");

fn files(lang: Lang) -> Vec<File> {
    match lang {
        Lang::Lua => vec![
            file(
                "{{name}}.lua",
                include_str!("../../templates/lua/plugin.lua"),
            ),
            file(
                "{{name}}.lua.toml",
                include_str!("../../templates/lua/plugin.lua.toml"),
            ),
            file("types/clm.lua", LUA_DEFINITIONS),
            file(
                ".luarc.json",
                include_str!("../../templates/lua/luarc.json"),
            ),
            script("test.sh", include_str!("../../templates/lua/test.sh")),
            file("README.md", include_str!("../../templates/lua/README.md")),
            file(".gitignore", include_str!("../../templates/lua/gitignore")),
        ],
        Lang::Rust => vec![
            file(
                "Cargo.toml",
                include_str!("../../templates/rust/Cargo.toml"),
            ),
            file("src/lib.rs", include_str!("../../templates/rust/lib.rs")),
            file(
                "toolcell.toml",
                include_str!("../../templates/rust/toolcell.toml"),
            ),
            script("test.sh", include_str!("../../templates/rust/test.sh")),
            file("README.md", include_str!("../../templates/rust/README.md")),
            file(".gitignore", include_str!("../../templates/rust/gitignore")),
        ],
        Lang::Js => vec![
            file("plugin.js", include_str!("../../templates/js/plugin.js")),
            file(
                "toolcell.toml",
                include_str!("../../templates/js/toolcell.toml"),
            ),
            script("test.sh", SCRIPTED_TEST),
            file("README.md", include_str!("../../templates/js/README.md")),
            file(".gitignore", include_str!("../../templates/js/gitignore")),
        ],
        Lang::Python => vec![
            file("app.py", include_str!("../../templates/python/app.py")),
            file(
                "toolcell.toml",
                include_str!("../../templates/python/toolcell.toml"),
            ),
            script("test.sh", SCRIPTED_TEST),
            file(
                "README.md",
                include_str!("../../templates/python/README.md"),
            ),
            file(
                ".gitignore",
                include_str!("../../templates/python/gitignore"),
            ),
        ],
    }
}

/// Whether `name` can name a plugin, its tool, its file and a Rust crate.
pub fn is_valid_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The toolcell source checkout this binary was built from, if it is still there.
pub fn build_checkout() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    is_checkout(dir).then(|| dir.to_path_buf())
}

fn is_checkout(dir: &Path) -> bool {
    dir.join("guest-sdk/Cargo.toml").is_file()
}

/// Writes the project `options` describe.
pub fn create(options: &Options) -> Result<Project, ScaffoldError> {
    if !is_valid_name(&options.name) {
        return Err(ScaffoldError::InvalidName(options.name.clone()));
    }
    let toolcell_src = match &options.toolcell_src {
        Some(dir) if is_checkout(dir) => {
            Some(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
        }
        Some(dir) => return Err(ScaffoldError::NotACheckout(dir.clone())),
        None => build_checkout(),
    };
    let dir = &options.dir;
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied || dir.is_file() {
        return Err(ScaffoldError::Exists(dir.clone()));
    }
    let vars = Vars::new(options, toolcell_src.as_deref());
    let mut written = Vec::new();
    for file in files(options.lang) {
        let relative = PathBuf::from(vars.render(file.path));
        let path = dir.join(&relative);
        write(&path, &vars.render(file.template), file.executable)?;
        written.push(relative);
    }
    let next_steps = next_steps(options, dir);
    Ok(Project {
        dir: dir.clone(),
        files: written,
        toolcell_src,
        guest_dependency: (options.lang == Lang::Rust).then(|| vars.guest_dependency.clone()),
        next_steps,
    })
}

fn next_steps(options: &Options, dir: &Path) -> Vec<String> {
    let cd = format!("cd {}", dir.display());
    let name = &options.name;
    let mut steps = vec![cd];
    match options.lang {
        Lang::Lua => {
            steps.push("./test.sh                  # check it and call its tool".to_string());
            steps.push(format!(
                "toolcell pack {name}.lua -o dist/{name}.wasm   # one .wasm to ship"
            ));
        }
        Lang::Rust => {
            steps.push("rustup target add wasm32-wasip2   # once".to_string());
            steps.push("./test.sh                  # build, check and call".to_string());
        }
        Lang::Js | Lang::Python => {
            steps.push("./test.sh                  # build, check and call".to_string());
        }
    }
    steps
}

fn write(path: &Path, content: &str, executable: bool) -> Result<(), ScaffoldError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|error| ScaffoldError::Write(parent.to_path_buf(), error))?;
    }
    std::fs::write(path, content).map_err(|error| ScaffoldError::Write(path.into(), error))?;
    #[cfg(unix)]
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|error| ScaffoldError::Write(path.into(), error))?;
    }
    #[cfg(not(unix))]
    let _ = executable;
    Ok(())
}

/// `text` as one word of a POSIX shell script, taken literally: in single quotes, each
/// `'` in it written `'\''`. A checkout's path goes into `test.sh` this way, so that a
/// `$(...)`, a backquote or a quote in it is never run.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The values the templates' `{{...}}` placeholders stand for.
struct Vars {
    name: String,
    crate_name: String,
    /// The checkout's path, shell-quoted (`test.sh` is its only user).
    toolcell_src: String,
    guest_dependency: String,
    guest_source: String,
    build_script: &'static str,
    plugins_dir: &'static str,
    reference: String,
    sdk_docs: String,
}

impl Vars {
    fn new(options: &Options, toolcell_src: Option<&Path>) -> Vars {
        let repository = env!("CARGO_PKG_REPOSITORY");
        let in_checkout = |relative: &str| match toolcell_src {
            Some(src) => src.join(relative).display().to_string(),
            None => format!("{repository}/blob/main/{relative}"),
        };
        let (guest_dependency, guest_source) = match toolcell_src {
            Some(src) => {
                let path = src.join("guest-sdk").display().to_string();
                (
                    format!(
                        "toolcell-guest = {{ path = {} }}",
                        toml::Value::String(path.clone())
                    ),
                    format!("a path dependency on {path}"),
                )
            }
            None => (
                format!("toolcell-guest = {{ git = \"{repository}\" }}"),
                format!("a git dependency on {repository}"),
            ),
        };
        Vars {
            name: options.name.clone(),
            crate_name: options.name.replace('-', "_"),
            toolcell_src: shell_quoted(
                &toolcell_src
                    .map(|src| src.display().to_string())
                    .unwrap_or_default(),
            ),
            guest_dependency,
            guest_source,
            build_script: match options.lang {
                Lang::Python => "tools/build-python-plugin",
                _ => "tools/build-js-plugin",
            },
            plugins_dir: match options.lang {
                Lang::Lua => ".",
                _ => "dist",
            },
            reference: in_checkout("docs/lua-api.md"),
            sdk_docs: in_checkout("guest-sdk/README.md"),
        }
    }

    fn render(&self, template: &str) -> String {
        template
            .replace("{{expect}}", EXPECT)
            .replace("{{plugins_dir}}", self.plugins_dir)
            .replace("{{name}}", &self.name)
            .replace("{{tool}}", &self.name)
            .replace("{{crate}}", &self.crate_name)
            .replace("{{toolcell_src}}", &self.toolcell_src)
            .replace("{{guest_dependency}}", &self.guest_dependency)
            .replace("{{guest_source}}", &self.guest_source)
            .replace("{{build_script}}", self.build_script)
            .replace("{{reference}}", &self.reference)
            .replace("{{sdk_docs}}", &self.sdk_docs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_suit_a_plugin_a_tool_a_file_and_a_crate() {
        for good in ["hello", "my-tool", "a_1", "x"] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in [
            "",
            "Hello",
            "1st",
            "with.dot",
            "with space",
            "-x",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn every_placeholder_of_every_template_is_filled() {
        let dir = tempfile::tempdir().expect("a temp dir");
        for lang in [Lang::Lua, Lang::Rust, Lang::Js, Lang::Python] {
            let options = Options {
                name: "my-plugin".to_string(),
                lang,
                dir: dir.path().join(format!("{lang:?}")),
                toolcell_src: None,
            };
            let vars = Vars::new(&options, build_checkout().as_deref());
            for file in files(lang) {
                let text = vars.render(file.template);
                assert!(!text.contains("{{"), "{lang:?} {}: {text}", file.path);
            }
        }
    }

    #[test]
    fn an_occupied_directory_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join("mine.txt"), "keep").expect("write");
        let options = Options {
            name: "hello".to_string(),
            lang: Lang::Lua,
            dir: dir.path().to_path_buf(),
            toolcell_src: None,
        };
        assert!(matches!(create(&options), Err(ScaffoldError::Exists(_))));
        let entries: Vec<_> = std::fs::read_dir(dir.path()).expect("read").collect();
        assert_eq!(entries.len(), 1);
    }
}
