---@meta clm
-- Type definitions (LuaCATS) of toolcell's Lua plugin API: the clm tool API of
-- clm-tool(5) and what toolcell adds (clm.time, resp.headers). For editors
-- (lua-language-server, EmmyLua) and `emmylua_check`; toolcell never loads this file.
-- The reference, with every rule: docs/lua-api.md.
--
-- The sandbox has only the string, table, math and utf8 libraries: no os, io, debug,
-- package or coroutine, and no require, load, loadfile, dofile or collectgarbage.

--- One tool, as `clm.tool_register` takes it.
---@class clm.ToolSpec
---@field description? string What the model reads about the tool.
---@field params_schema? table The JSON Schema of the arguments, as a Lua table; calls whose arguments break it never reach the plugin.
---@field invoke fun(args: table, ctx: clm.Ctx) Runs one call; it must end it with `ctx:complete` or `ctx:fail`. What it returns is ignored.
---@field timeout_ms? integer The call's deadline in milliseconds, waiting included (default: the manifest's, else 30000).
---@field no_prompt? boolean The tool has no side effects worth confirming: skip the permission prompt.
---@field hidden? boolean Leave the tool out of the list the model sees; it can still be called by name.
---@field title? string A short human-readable name for user interfaces (MCP's `title`).
---@field output_schema? table The JSON Schema (type "object") of the tool's structured result; complete with `ctx:complete_json`.
---@field task? "optional"|"required"|"forbidden" Whether a client may run calls as tasks it polls for (default "optional"); "required" for a tool that runs too long to wait for.

--- One part of a result of several parts (`ctx:complete_content`).
---@class clm.ContentPart
---@field type "text"|"image"|"audio"|"resource_link"|"resource"
---@field text? string A text part's text, or a resource's contents as text.
---@field data? string The raw bytes of an image, an audio clip or a resource (the host encodes them).
---@field mime_type? string The MIME type ("image/png"); required for images and audio.
---@field uri? string Where a resource link or an embedded resource is.
---@field name? string A resource link's name.

--- The context of one tool call, the second argument of `invoke`. Only the call's main
--- coroutine may end it.
---@class clm.Ctx
local Ctx = {}

--- Ends the call successfully; `result` (a string) is what the model sees. A second
--- `complete` or `fail` is an error.
---@param result string
function Ctx:complete(result) end

--- Ends the call successfully with `value` as JSON text (as `json.encode` gives it);
--- a tool with an `output_schema` completes this way, and the host checks the value.
---@param value any
function Ctx:complete_json(value) end

--- Ends the call successfully with a result of several parts, in order: text, images,
--- audio, resource links, embedded resources. Raw bytes go in `data`; the host encodes
--- them, and a caller that shows text only reads each binary part as one line.
---@param parts clm.ContentPart[]
function Ctx:complete_content(parts) end

--- Asks the user of the caller (an MCP client's user, the terminal, the embedder) to
--- fill in a small form: a JSON Schema object (as a table) of flat string, number,
--- integer, boolean or enum fields, each with an optional default. Waits for the
--- answer without blocking; the wait does not count against the call's deadline.
--- Returns the answer table, or nil and "declined", "cancelled" or why nobody answered.
---@param message string
---@param schema table
---@return table|nil answer
---@return string? reason
function Ctx:ask(message, schema) end

--- Reports how far the call has come: `done` units (0 or more), out of `total` (more
--- than 0) when known. The caller gets the latest report at most every 100 ms.
---@param done number
---@param total? number
---@param message? string
function Ctx:progress(done, total, message) end

--- Ends the call with a failure; the model sees "[tool failed: MESSAGE]".
---@param message string
function Ctx:fail(message) end

--- The call's arguments as the JSON text they arrived in ("{}" when none).
---@return string
function Ctx:args_raw() end

--- Appends a line to the debug log (`CLM_DEBUG_LOG`); does nothing when it is off.
---@param message any
function Ctx:log(message) end

--- A completed HTTP exchange, whatever its status.
---@class clm.Response
---@field status integer The HTTP status code.
---@field body string The whole response body.
---@field headers table<string, string> Response headers by lower-case name (toolcell's addition).

--- The outcome of a task that has ended: `ok` with its `value`, or not `ok` with its
--- `error` (and `cancelled` when it was cancelled).
---@class clm.Outcome
---@field ok boolean Whether the task's function returned normally.
---@field value? any What it returned: one value as is, several as an array, none: absent.
---@field error? string Why it failed, or the reason it was cancelled.
---@field cancelled? true Present when the task was cancelled.

--- A task started with `clm.spawn`; only the main coroutine of its call may use it.
---@class clm.Task
local Task = {}

--- Waits until the task has ended (succeeded, failed or been cancelled); reads nothing.
---@return true
function Task:wait() end

--- The task's outcome, or nil while it runs. Reading a failure marks it observed.
---@return clm.Outcome?
function Task:result() end

--- Cancels the task and what it waits on. True when it is (or already was) cancelled,
--- false when it had already succeeded or failed.
---@param reason? string What the outcome's `error` says (default "task cancelled").
---@return boolean
function Task:cancel(reason) end

--- The plugin API.
---@class clm
---@field config table<string, any> The user's configuration of this plugin (`[tools.ID]` or `[tools.TOOL]`); an empty table when there is none.
---@field data_dir string? The absolute path of the plugin's file root: its own directory unless the user granted a root (created on the first write); nil when it may not use files.
clm = {}

--- Registers a tool. Only while the plugin loads (its top-level code).
---@param name string 1 to 64 letters, digits, '_' or '-', unique across every plugin.
---@param spec clm.ToolSpec
function clm.tool_register(name, spec) end

--- Reads a whole file below the granted root.
---@param path string Relative to the root, or absolute inside it.
---@return string? content The file's content; nil on failure.
---@return string err Why it failed (only when the first value is nil).
function clm.read_file(path) end

--- Replaces (or creates) a whole file below the granted root.
---@param path string Relative to the root, or absolute inside it.
---@param content string
---@return true? ok true on success; nil on failure.
---@return string err Why it failed (only when the first value is nil).
function clm.write_file(path, content) end

--- Waits `ms` milliseconds without blocking anything else. Only inside a call.
---@param ms number
function clm.sleep(ms) end

--- The wall-clock time in seconds since the Unix epoch, with millisecond precision
--- (toolcell's stand-in for `os.time`, which the sandbox lacks).
---@return number
function clm.time() end

--- Starts `fn` as a task of the current call; it runs once the main coroutine waits.
--- Only the main coroutine may spawn; a task cannot spawn.
---@param fn fun(): ...
---@return clm.Task
function clm.spawn(fn) end

--- Waits until one of `tasks` has ended and returns its index; on timeout returns
--- nil and "timeout", cancelling nothing.
---@param tasks clm.Task[] At most 128, each once.
---@param timeout_ms? number
---@return integer? index
---@return "timeout"? err
function clm.wait_any(tasks, timeout_ms) end

--- Waits for every task and returns their outcomes in the order given.
---@param tasks clm.Task[]
---@return clm.Outcome[]
function clm.await_all(tasks) end

--- Waits until every task succeeded and returns their values in order; at the first
--- failure cancels the rest and returns nil and that error.
---@param tasks clm.Task[]
---@return any[]? values
---@return string err The first failure (only when values is nil).
function clm.try_all(tasks) end

--- HTTP requests; they wait without blocking, inside a call only.
http = {}

--- A GET request.
---@param url string An absolute http or https URL.
---@param headers? table<string, string>
---@return clm.Response? resp The response, whatever its status; nil on failure.
---@return string err Why the request failed (refused, DNS, connect, timeout, size; only when resp is nil).
function http.get(url, headers) end

--- A POST request; Content-Type is application/json unless `headers` says otherwise.
---@param url string An absolute http or https URL.
---@param body string
---@param headers? table<string, string>
---@return clm.Response? resp The response, whatever its status; nil on failure.
---@return string err Why the request failed (only when resp is nil).
function http.post(url, body, headers) end

--- JSON text to and from Lua values.
json = {}

--- Encodes a value as JSON text (keys sorted; an empty table is `{}`). Raises an
--- error naming the place of a value it cannot encode.
---@param value any
---@return string
function json.encode(value) end

--- Decodes JSON text (at most 2 MiB); `null` becomes `json.null`.
---@param text string
---@return any value nil on failure.
---@return string err Why the text is not JSON (only when value is nil).
function json.decode(text) end

--- JSON `null`: a value distinct from nil, so it can be kept in tables.
---@type lightuserdata
json.null = nil
