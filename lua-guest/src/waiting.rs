//! The waiting services of clm-tool(5) backed by host operations: `http.get`,
//! `http.post` and `clm.sleep`. Each starts an operation in the host and suspends the
//! calling coroutine (main or task) until the host delivers the outcome.

use mlua::{Lua, MultiValue, Table, Value};

use crate::bindings::toolcell::plugin::host;
use crate::bindings::toolcell::plugin::types::{HttpRequest, HttpResponse};
use crate::copies::Copies;
use crate::errors::{api_error, type_name};
use crate::scheduler::{self, CallId, Strand};
use crate::watchdog;

/// Installs `rt.http_request`, `rt.sleep` and `rt.ask_start` for the prelude.
pub fn install(lua: &Lua, rt: &Table) -> mlua::Result<()> {
    rt.raw_set("http_request", lua.create_function(http_request)?)?;
    rt.raw_set("sleep", lua.create_function(sleep)?)?;
    rt.raw_set("ask_start", lua.create_function(crate::ctx::ask_start)?)?;
    Ok(())
}

/// Whether the running coroutine may yield now (not at load time, not inside a C
/// function such as a `table.sort` comparator or a metamethod).
pub fn is_yieldable(lua: &Lua) -> bool {
    let thread = lua.current_thread();
    // SAFETY: the state pointer belongs to a live thread of this Lua instance and
    // lua_isyieldable only reads it.
    unsafe { mlua::ffi::lua_isyieldable(thread.state()) != 0 }
}

/// The error text for a wait where the coroutine cannot yield.
pub fn not_yieldable(what: &str) -> String {
    format!(
        "{what} cannot wait here (inside a metamethod, an iterator or a C function such as table.sort)"
    )
}

/// The running coroutine, for services any coroutine of a call may use.
pub fn running_strand(lua: &Lua, what: &str) -> mlua::Result<(CallId, Strand)> {
    let running = scheduler::with(|scheduler| Ok(scheduler.running))?;
    let running =
        running.ok_or_else(|| api_error(lua, format!("{what} is not available at load time")))?;
    if !is_yieldable(lua) {
        return Err(api_error(lua, not_yieldable(what)));
    }
    Ok(running)
}

/// Records that the running coroutine waits on `op` and tells the prelude to yield.
fn wait_on((call, strand): (CallId, Strand), op: u64) -> mlua::Result<MultiValue> {
    scheduler::with(|scheduler| {
        match scheduler.calls.get_mut(&call) {
            Some(call) => call.wait_on_op(strand, op),
            None => scheduler::abort_op(op),
        }
        Ok(())
    })?;
    Ok(MultiValue::from_iter([Value::Boolean(false)]))
}

/// Reads a duration in milliseconds: a non-negative number (fractions round up).
pub fn milliseconds(lua: &Lua, what: &str, value: &Value) -> mlua::Result<u64> {
    let ms = match value {
        Value::Integer(ms) if *ms >= 0 => *ms as u64,
        Value::Number(ms) if *ms >= 0.0 && ms.is_finite() => ms.ceil() as u64,
        other => {
            return Err(api_error(
                lua,
                format!(
                    "{what} expects a non-negative number of milliseconds, got {}",
                    describe(other)
                ),
            ));
        }
    };
    Ok(ms)
}

fn describe(value: &Value) -> String {
    match value {
        Value::Integer(n) => n.to_string(),
        Value::Number(n) => n.to_string(),
        other => type_name(other).to_string(),
    }
}

/// `clm.sleep(ms)`.
fn sleep(lua: &Lua, ms: Value) -> mlua::Result<MultiValue> {
    let ms = milliseconds(lua, "clm.sleep", &ms)?;
    let running = running_strand(lua, "clm.sleep")?;
    watchdog::charge_host_call(0)?;
    let op = host::timer_start(running.0, ms)
        .map_err(|error| api_error(lua, format!("clm.sleep: {error}")))?;
    wait_on(running, op)
}

/// `http.get(url [, headers])` and `http.post(url, body [, headers])`.
fn http_request(
    lua: &Lua,
    (method, url, body, headers): (String, Value, Value, Value),
) -> mlua::Result<MultiValue> {
    let what = if method == "GET" {
        "http.get"
    } else {
        "http.post"
    };
    let Value::String(url) = url else {
        return Err(api_error(
            lua,
            format!("{what} expects a URL string, got {}", type_name(&url)),
        ));
    };
    let mut copies = Copies::new(lua);
    let body = match (method.as_str(), body) {
        ("GET", _) => None,
        (_, Value::String(body)) => Some(copies.bytes(&body.as_bytes())?),
        (_, other) => {
            return Err(api_error(
                lua,
                format!("{what} expects a body string, got {}", type_name(&other)),
            ));
        }
    };
    let mut headers = header_list(lua, &mut copies, what, headers)?;
    let has_content_type = headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
    if method == "POST" && !has_content_type {
        headers.push(("Content-Type".to_string(), "application/json".to_string()));
    }
    let running = running_strand(lua, what)?;
    let request = HttpRequest {
        method,
        url: copies.text(&url.as_bytes())?,
        headers,
        body,
    };
    let bytes = request.url.len()
        + request.body.as_ref().map_or(0, Vec::len)
        + (request.headers.iter())
            .map(|(name, value)| name.len() + value.len())
            .sum::<usize>();
    start_operation(lua, running, bytes, |call| host::http_start(call, &request))
}

/// Starts an operation whose outcome the `running` coroutine waits for (handing the
/// host `bytes`), and tells the prelude to yield; when the host refuses it, the
/// prelude returns `nil, reason` at once.
pub fn start_operation(
    lua: &Lua,
    running: (CallId, Strand),
    bytes: usize,
    start: impl FnOnce(CallId) -> Result<u64, String>,
) -> mlua::Result<MultiValue> {
    watchdog::charge_host_call(bytes)?;
    match start(running.0) {
        Ok(op) => wait_on(running, op),
        Err(message) => {
            let message = lua.create_string(message)?;
            Ok(MultiValue::from_iter([
                Value::Boolean(true),
                Value::Nil,
                Value::String(message),
            ]))
        }
    }
}

/// Reads an optional table of header-name to header-value strings.
fn header_list(
    lua: &Lua,
    copies: &mut Copies,
    what: &str,
    headers: Value,
) -> mlua::Result<Vec<(String, String)>> {
    let table = match headers {
        Value::Nil => return Ok(Vec::new()),
        Value::Table(table) => table,
        other => {
            return Err(api_error(
                lua,
                format!(
                    "{what} expects a table of headers, got {}",
                    type_name(&other)
                ),
            ));
        }
    };
    let mut list = Vec::new();
    for pair in table.pairs::<Value, Value>() {
        let (name, value) = pair?;
        let (Value::String(name), Value::String(value)) = (&name, &value) else {
            return Err(api_error(
                lua,
                format!(
                    "{what}: headers must map strings to strings, got {} = {}",
                    type_name(&name),
                    type_name(&value)
                ),
            ));
        };
        list.push((
            copies.text(&name.as_bytes())?,
            copies.text(&value.as_bytes())?,
        ));
    }
    list.sort();
    Ok(list)
}

/// The `resp` table of a completed request: `status`, `body`, and (beyond the man page,
/// read-only by convention) `headers` with lower-case names.
pub fn response_table(lua: &Lua, response: HttpResponse) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 3)?;
    table.raw_set("status", response.status)?;
    table.raw_set("body", lua.create_string(&response.body)?)?;
    let headers = lua.create_table_with_capacity(0, response.headers.len())?;
    for (name, value) in response.headers {
        headers.raw_set(name, value)?;
    }
    table.raw_set("headers", headers)?;
    Ok(table)
}
