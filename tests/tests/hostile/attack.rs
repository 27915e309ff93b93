//! What one attack is: the hostile plugin file, what the test prepares around it, and
//! the exact outcome expected of each step, written as a small builder so the
//! catalogue reads as a table.

use std::fmt;

use toolcell::config::HttpSection;
use toolcell::limits::Limits;
use toolcell::policy::CommandLineRules;

/// The attack categories of the issue, in the order docs/security.md's table lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Burning CPU: loops, C-level work, recursion, coroutine bombs, endless tasks.
    Cpu,
    /// Exhausting memory, at once or across calls.
    Memory,
    /// Reaching files outside the granted root, or files that are not files.
    Files,
    /// Reaching forbidden addresses, or exhausting the HTTP limits.
    Network,
    /// Breaking the tool protocol: completions, tasks, registrations.
    Protocol,
    /// Hostile JSON in either direction.
    Json,
    /// Components written below Lua, against the WIT world itself.
    Wasm,
    /// What a plugin hands the host and the model: schemas, results, descriptions,
    /// logs, copies.
    Budgets,
    /// What a plugin says about itself: names, ids, flags, and the files and settings
    /// that follow from them.
    Authority,
}

impl Category {
    /// Every category, in table order.
    pub const ALL: [Category; 9] = [
        Category::Cpu,
        Category::Memory,
        Category::Files,
        Category::Network,
        Category::Protocol,
        Category::Json,
        Category::Wasm,
        Category::Budgets,
        Category::Authority,
    ];

    /// The folder of `tests/hostile/` that holds the category's plugins.
    pub fn folder(self) -> &'static str {
        match self {
            Category::Cpu => "cpu",
            Category::Memory => "memory",
            Category::Files => "files",
            Category::Network => "network",
            Category::Protocol => "protocol",
            Category::Json => "json",
            Category::Wasm => "wasm",
            Category::Budgets => "budgets",
            Category::Authority => "authority",
        }
    }

    /// How docs/security.md's table names the category.
    pub fn title(self) -> &'static str {
        match self {
            Category::Cpu => "CPU",
            Category::Memory => "memory",
            Category::Files => "files",
            Category::Network => "network",
            Category::Protocol => "protocol",
            Category::Json => "JSON",
            Category::Wasm => "wasm below Lua",
            Category::Budgets => "handed to the host and the model",
            Category::Authority => "a plugin's word about itself",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.folder())
    }
}

/// Where the hostile plugin file comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// `tests/hostile/CATEGORY/NAME.lua`, copied as `NAME.lua`.
    Lua,
    /// `tests/hostile/CATEGORY/FILE.lua`, copied as `NAME.lua`: one plugin tried under
    /// several settings.
    LuaFrom(&'static str),
    /// `tests/hostile/CATEGORY/NAME.wat`, a whole component in the text format,
    /// assembled to the binary `NAME.wasm`.
    Wat,
    /// `tests/hostile/CATEGORY/NAME.core.wat`, a core module put into the plugin shell
    /// (`shell.wat`) and assembled to the binary `NAME.wasm`.
    Core,
    /// The binary of another file of the category (`.wat` or `.core.wat`), cut to
    /// `keep` bytes.
    Truncated { file: &'static str, keep: usize },
    /// `tests/hostile/CATEGORY/FILE` copied byte for byte as `NAME.wasm`.
    RawFile(&'static str),
    /// `tests/hostile/CATEGORY/NAME.lua` packed compiled ahead of time (`pack --aot`),
    /// then with the script it carries replaced by `tests/hostile/CATEGORY/FILE`.
    CompiledWithScript(&'static str),
}

/// What the test prepares before the plugins load.
#[derive(Debug, Clone)]
pub enum Setup {
    /// A symlink `link` (inside the root) pointing at `target` (placeholders allowed).
    Symlink {
        link: &'static str,
        target: &'static str,
    },
    /// A FIFO inside the root.
    Fifo(&'static str),
    /// A character device inside the root, with the device number of `/dev/zero`.
    ZeroDevice(&'static str),
    /// A directory inside the root.
    Dir(&'static str),
    /// A file inside the root, with its content.
    File(&'static str, &'static str),
    /// A plugin whose file lies in the root (`target`) and which the plugin directory
    /// holds as the symlink `link`; its tool `victim` answers "victim".
    LinkedPlugin {
        link: &'static str,
        target: &'static str,
    },
}

/// Where the arena puts what the host trusts, relative to the granted root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `plugins/`, `root/` and `outside/` side by side; the cache is the user's.
    Separate,
    /// The compiled-code cache is `root/.cache/toolcell`, holding a real entry and its
    /// key; with `via_symlink`, the root is given as `rootlink`, a symlink to `root/`.
    CacheInRoot { via_symlink: bool },
    /// The plugin directory is `root/plugins`.
    PluginsInRoot,
    /// No root is given and the working directory is the (fake) home directory
    /// `root/`, holding a `.bashrc`: the runtime runs in a child process whose `HOME`
    /// and working directory are that directory.
    HomeAsDefaultRoot,
    /// No root is given, but a data directory, `root/`: each plugin gets its own
    /// directory there, `root/ID`. Only the attacking plugin's own directory may change.
    OwnDirs,
}

/// The session an attack's calls go through, as an agent's model makes them.
#[derive(Debug, Clone, Default)]
pub struct SessionSetup {
    /// `--tools` globs (none: every tool).
    pub scope: Vec<&'static str>,
    /// Whether someone answers `ask`: "allow for the session", every time.
    pub approves: bool,
}

/// How a call must end.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Completed with exactly this output.
    Completes(String),
    /// Failed with exactly this message.
    Fails(String),
    /// Failed as this kind ([`toolcell::CallOutcome::label`]) with exactly this message.
    FailsAs(&'static str, String),
    /// Failed with a message that starts with this text (the rest names an OS error
    /// or a byte count the test cannot know).
    FailsStartingWith(String),
    /// Never reached the plugin: the runtime refused the call with exactly this error.
    Refused(String),
}

/// One step of an attack, run in order.
#[derive(Debug, Clone)]
pub enum Step {
    /// The attack's plugin file did not load; its diagnostic reads exactly this.
    LoadFails(String),
    /// The attack's plugin file did not load; its diagnostic starts with this (the
    /// rest is the engine's own wording of a validation error).
    LoadFailsStartingWith(String),
    /// A diagnostic of the runtime reads exactly this.
    Diagnostic(String),
    /// Exactly this many tools are registered in all (the canary's included).
    ToolCount(usize),
    /// Calls `tool` with `args` and checks how it ends.
    Call {
        tool: &'static str,
        args: String,
        expect: Expect,
    },
    /// Starts a call and keeps it in flight; `Settle` checks it later.
    Background { tool: &'static str, args: String },
    /// The `index`-th background call (from 0) ends as expected.
    Settle { index: usize, expect: Expect },
    /// The test HTTP server has received exactly this many requests so far.
    ServerRequests(u64),
    /// The root holds `path` with exactly this content (None: it does not exist).
    RootFile {
        path: &'static str,
        content: Option<String>,
    },
    /// `toolcell list` of the arena's plugins peaks at no more than `max_growth` bytes of
    /// resident memory above the same command with the canary alone.
    HostRss { max_growth: u64 },
    /// The last call's whole output is kept in the result store, `bytes` long.
    ResultKept { bytes: usize },
    /// Tool `tool` is registered with a description of exactly `bytes` bytes.
    DescriptionBytes { tool: &'static str, bytes: usize },
    /// Tool `tool` is registered with a title of exactly `bytes` bytes.
    TitleBytes { tool: &'static str, bytes: usize },
    /// Calls `tool` with `args`; the last progress message its caller reads is exactly
    /// this (`{tag}`: the envelope's tag).
    Progress {
        tool: &'static str,
        args: String,
        message: String,
    },
    /// The debug log (see [`Attack::logged`]) holds at most `max_bytes`, and its last
    /// line ends with `last_line_end`.
    Log {
        max_bytes: usize,
        last_line_end: String,
    },
    /// A diagnostic of the runtime has this code and reads exactly this.
    Coded { code: &'static str, message: String },
    /// The session's model is shown exactly these names (the canary's left out), in
    /// order.
    Listed(Vec<&'static str>),
    /// The tool shown as `tool` is read-only to MCP clients (`readOnlyHint`) or not.
    ReadOnly { tool: &'static str, read_only: bool },
    /// Someone was asked exactly this many times so far.
    Prompts(usize),
    /// Writes `content` as file `file` of the plugin directory and reloads it, as
    /// `serve --watch` does.
    Reload {
        file: &'static str,
        content: &'static str,
    },
}

/// HTTP settings of an attack's runtime.
#[derive(Debug, Clone, Default)]
pub struct Net {
    /// Start the test HTTP server (`{server}` and `{port}` name it).
    pub server: bool,
    /// Grant 127.0.0.1 (the server) to every plugin.
    pub grant_loopback: bool,
    /// HTTP bounds over the defaults.
    pub overrides: HttpSection,
}

/// One hostile plugin and everything expected of it.
#[derive(Debug, Clone)]
pub struct Attack {
    pub category: Category,
    pub name: &'static str,
    /// One line: what the plugin tries.
    pub what: &'static str,
    pub source: Source,
    /// A Lua plugin is also run packed into a `.wasm` artifact, as `toolcell pack`
    /// makes it, in an arena of its own: it must end every step the same way.
    pub packed_too: bool,
    /// A Lua plugin is also run compiled ahead of time (`toolcell pack --aot`), in an
    /// arena of its own: compiled code must be stopped exactly as interpreted code is.
    pub compiled_too: bool,
    pub setup: Vec<Setup>,
    pub layout: Layout,
    pub limits: Limits,
    pub net: Net,
    /// Whether the runtime writes a debug log (into a directory of its own).
    pub logged: bool,
    /// Other files of the plugin directory: plugins beside the attacker, sidecars.
    pub companions: Vec<(&'static str, &'static str)>,
    /// The configuration file's text.
    pub config: Option<&'static str>,
    /// `--allow`, `--ask`, `--deny`.
    pub rules: CommandLineRules,
    /// The session calls go through; none: `Runtime::call`.
    pub session: Option<SessionSetup>,
    pub steps: Vec<Step>,
}

/// Starts describing the attack `name` of `category`; its plugin is
/// `tests/hostile/CATEGORY/NAME.lua` unless a source method says otherwise.
pub fn attack(category: Category, name: &'static str, what: &'static str) -> Attack {
    Attack {
        category,
        name,
        what,
        source: Source::Lua,
        packed_too: false,
        compiled_too: false,
        setup: Vec::new(),
        layout: Layout::Separate,
        limits: Limits::default(),
        net: Net::default(),
        logged: false,
        companions: Vec::new(),
        config: None,
        rules: CommandLineRules::default(),
        session: None,
        steps: Vec::new(),
    }
}

impl Attack {
    /// The plugin is `FILE.lua` of the category, copied as `NAME.lua`.
    pub fn lua_from(mut self, file: &'static str) -> Self {
        self.source = Source::LuaFrom(file);
        self
    }

    /// The plugin is the component `NAME.wat`.
    pub fn wat(mut self) -> Self {
        self.source = Source::Wat;
        self
    }

    /// The plugin is the core module `NAME.core.wat` in the plugin shell.
    pub fn core(mut self) -> Self {
        self.source = Source::Core;
        self
    }

    /// The plugin is another file's binary cut to `keep` bytes.
    pub fn truncated(mut self, file: &'static str, keep: usize) -> Self {
        self.source = Source::Truncated { file, keep };
        self
    }

    /// The plugin is `file`, copied as is under the name `NAME.wasm`.
    pub fn raw_file(mut self, file: &'static str) -> Self {
        self.source = Source::RawFile(file);
        self
    }

    /// The plugin is `NAME.lua` compiled ahead of time, carrying the script `file`.
    pub fn compiled_with_script(mut self, file: &'static str) -> Self {
        self.source = Source::CompiledWithScript(file);
        self
    }

    /// Runs the Lua plugin packed too (see [`Attack::packed_too`]).
    pub fn packed_too(mut self) -> Self {
        self.packed_too = true;
        self
    }

    /// Runs the Lua plugin compiled ahead of time too (see [`Attack::compiled_too`]).
    pub fn compiled_too(mut self) -> Self {
        self.compiled_too = true;
        self
    }

    /// Prepares something in the root before loading.
    pub fn setup(mut self, setup: Setup) -> Self {
        self.setup.push(setup);
        self
    }

    /// Puts the compiled-code cache inside the root (`{cache}` names it, `{entry}` its
    /// entry); with `via_symlink`, the root is given through a symlink.
    pub fn cache_in_root(mut self, via_symlink: bool) -> Self {
        self.layout = Layout::CacheInRoot { via_symlink };
        self
    }

    /// Puts the plugin directory inside the root (`{plugins}` names it).
    pub fn plugins_in_root(mut self) -> Self {
        self.layout = Layout::PluginsInRoot;
        self
    }

    /// Gives no root, from a working directory that is the home directory (`{home}`).
    pub fn home_as_default_root(mut self) -> Self {
        self.layout = Layout::HomeAsDefaultRoot;
        self
    }

    /// Runs the attack with no root and `root/` as the data directory (see
    /// [`Layout::OwnDirs`]).
    pub fn own_dirs(mut self) -> Self {
        self.layout = Layout::OwnDirs;
        self
    }

    /// Runs under these limits instead of the defaults.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Starts the test HTTP server.
    pub fn server(mut self) -> Self {
        self.net.server = true;
        self
    }

    /// Starts the test HTTP server and grants 127.0.0.1 to every plugin.
    pub fn granted_server(mut self) -> Self {
        self.net.server = true;
        self.net.grant_loopback = true;
        self
    }

    /// Bounds HTTP with these settings.
    pub fn http(mut self, overrides: HttpSection) -> Self {
        self.net.overrides = overrides;
        self
    }

    /// Writes a debug log, as `CLM_DEBUG_LOG` would.
    pub fn logged(mut self) -> Self {
        self.logged = true;
        self
    }

    /// Puts another file into the plugin directory beside the attacker.
    pub fn companion(mut self, file: &'static str, content: &'static str) -> Self {
        self.companions.push((file, content));
        self
    }

    /// Loads with this configuration file.
    pub fn config(mut self, text: &'static str) -> Self {
        self.config = Some(text);
        self
    }

    /// Calls go through a session whose user answers every `ask` with "allow for the
    /// session".
    pub fn approving(mut self) -> Self {
        self.session
            .get_or_insert_with(SessionSetup::default)
            .approves = true;
        self
    }

    /// `--deny GLOB`.
    pub fn deny(mut self, glob: &str) -> Self {
        self.rules.deny.push(glob.to_string());
        self
    }

    /// Calls go through a session that sees the scope of these `--tools` globs.
    pub fn scope(mut self, globs: &[&'static str]) -> Self {
        self.session
            .get_or_insert_with(SessionSetup::default)
            .scope
            .extend(globs);
        self
    }

    fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// The plugin does not load, with exactly this diagnostic.
    pub fn load_fails(self, message: &str) -> Self {
        self.step(Step::LoadFails(message.to_string()))
    }

    /// The plugin does not load, with a diagnostic starting with `prefix`.
    pub fn load_fails_starting_with(self, prefix: &str) -> Self {
        self.step(Step::LoadFailsStartingWith(prefix.to_string()))
    }

    /// The runtime reports exactly this diagnostic.
    pub fn diagnostic(self, message: &str) -> Self {
        self.step(Step::Diagnostic(message.to_string()))
    }

    /// Exactly `count` tools are registered (the canary's one included).
    pub fn tool_count(self, count: usize) -> Self {
        self.step(Step::ToolCount(count))
    }

    /// Calling `tool` completes with exactly `output`.
    pub fn completes(self, tool: &'static str, args: &str, output: &str) -> Self {
        let expect = Expect::Completes(output.to_string());
        self.step(Step::Call {
            tool,
            args: args.to_string(),
            expect,
        })
    }

    /// Calling `tool` fails with exactly `message`.
    pub fn fails(self, tool: &'static str, args: &str, message: &str) -> Self {
        let expect = Expect::Fails(message.to_string());
        self.step(Step::Call {
            tool,
            args: args.to_string(),
            expect,
        })
    }

    /// Calling `tool` fails as `kind` (a [`toolcell::CallOutcome::label`]) with exactly
    /// `message`.
    pub fn fails_as(
        self,
        tool: &'static str,
        args: &str,
        kind: &'static str,
        message: &str,
    ) -> Self {
        let expect = Expect::FailsAs(kind, message.to_string());
        self.step(Step::Call {
            tool,
            args: args.to_string(),
            expect,
        })
    }

    /// Calling `tool` fails with a message starting with `prefix`.
    pub fn fails_starting_with(self, tool: &'static str, args: &str, prefix: &str) -> Self {
        let expect = Expect::FailsStartingWith(prefix.to_string());
        self.step(Step::Call {
            tool,
            args: args.to_string(),
            expect,
        })
    }

    /// The runtime refuses to call `tool` with exactly `error`.
    pub fn refused(self, tool: &'static str, args: &str, error: &str) -> Self {
        let expect = Expect::Refused(error.to_string());
        self.step(Step::Call {
            tool,
            args: args.to_string(),
            expect,
        })
    }

    /// Starts `tool` and keeps the call in flight.
    pub fn background(self, tool: &'static str, args: &str) -> Self {
        self.step(Step::Background {
            tool,
            args: args.to_string(),
        })
    }

    /// The `index`-th background call fails with exactly `message`.
    pub fn settles_failing(self, index: usize, message: &str) -> Self {
        let expect = Expect::Fails(message.to_string());
        self.step(Step::Settle { index, expect })
    }

    /// The `index`-th background call completes with exactly `output`.
    pub fn settles_completing(self, index: usize, output: &str) -> Self {
        let expect = Expect::Completes(output.to_string());
        self.step(Step::Settle { index, expect })
    }

    /// The test server has received exactly `count` requests.
    pub fn server_requests(self, count: u64) -> Self {
        self.step(Step::ServerRequests(count))
    }

    /// `toolcell list` of the plugins grows the host's peak RSS by at most
    /// `max_growth` bytes over the canary alone.
    pub fn host_rss_growth_at_most(self, max_growth: u64) -> Self {
        self.step(Step::HostRss { max_growth })
    }

    /// The last call's whole output is kept, `bytes` long.
    pub fn result_kept(self, bytes: usize) -> Self {
        self.step(Step::ResultKept { bytes })
    }

    /// `tool`'s description is exactly `bytes` long.
    pub fn description_bytes(self, tool: &'static str, bytes: usize) -> Self {
        self.step(Step::DescriptionBytes { tool, bytes })
    }

    /// `tool`'s title is exactly `bytes` long.
    pub fn title_bytes(self, tool: &'static str, bytes: usize) -> Self {
        self.step(Step::TitleBytes { tool, bytes })
    }

    /// A call of `tool` with `args` reports progress whose last message its caller
    /// reads as exactly `message`.
    pub fn progress(self, tool: &'static str, args: &str, message: &str) -> Self {
        self.step(Step::Progress {
            tool,
            args: args.to_string(),
            message: message.to_string(),
        })
    }

    /// The debug log holds at most `max_bytes`; its last line ends with
    /// `last_line_end`.
    pub fn log(self, max_bytes: usize, last_line_end: &str) -> Self {
        let last_line_end = last_line_end.to_string();
        self.step(Step::Log {
            max_bytes,
            last_line_end,
        })
    }

    /// The runtime reports a diagnostic `code` reading exactly `message`.
    pub fn coded(self, code: &'static str, message: &str) -> Self {
        let message = message.to_string();
        self.step(Step::Coded { code, message })
    }

    /// The model is shown exactly `names` (besides the canary).
    pub fn listed(self, names: &[&'static str]) -> Self {
        self.step(Step::Listed(names.to_vec()))
    }

    /// `tool` is shown as read-only, or not.
    pub fn read_only(self, tool: &'static str, read_only: bool) -> Self {
        self.step(Step::ReadOnly { tool, read_only })
    }

    /// The session's user was asked `count` times so far.
    pub fn prompts(self, count: usize) -> Self {
        self.step(Step::Prompts(count))
    }

    /// `file` of the plugin directory becomes `content` and is reloaded.
    pub fn reload(self, file: &'static str, content: &'static str) -> Self {
        self.step(Step::Reload { file, content })
    }

    /// The root holds `path` with `content` (None: no such file).
    pub fn root_file(self, path: &'static str, content: Option<&str>) -> Self {
        let content = content.map(str::to_string);
        self.step(Step::RootFile { path, content })
    }
}
