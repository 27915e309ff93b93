-- The runtime's own Lua code, run once per plugin before the plugin's script.
--
-- It defines the parts of the clm API that must be written in Lua because they yield:
-- a Rust function cannot suspend the coroutine that called it, a Lua function can. Each
-- waiting primitive in `rt` either finishes at once and returns `true, results...`, or
-- records what the calling coroutine waits for and returns `false`; `settle` then yields
-- to the scheduler, which resumes the coroutine with the results when they are ready.
--
-- `rt` (the Rust primitives) and `coroutine.yield` are reachable only from here: the
-- plugin gets no coroutine library and no debug library.

local rt = ...
local yield = rt.yield
local caught, aborting = rt.caught, rt.aborting
local raw_pcall, raw_xpcall = pcall, xpcall
local error, type, select = error, type, select

local function settle(done, ...)
  if done then
    return ...
  end
  return yield()
end

-- pcall/xpcall hand plugins plain error messages, and never catch a deadline abort:
-- `caught` raises again while the current invocation (or load) is being aborted.
local function checked(ok, ...)
  if ok then
    return true, ...
  end
  return false, caught((...))
end

-- pcall() without even a function fails as Lua's own does, not inside the runtime.
function pcall(...)
  local f = ...
  if f == nil and select("#", ...) == 0 then
    error("bad argument #1 to 'pcall' (value expected)", 2)
  end
  return checked(raw_pcall(...))
end

-- A missing handler fails as Lua's own xpcall does, "no value" when there is no second
-- argument, at the caller's position.
function xpcall(...)
  local f, handler = ...
  if type(handler) ~= "function" then
    local got = select("#", ...) < 2 and "no value" or type(handler)
    error("bad argument #2 to 'xpcall' (function expected, got " .. got .. ")", 2)
  end
  local function guarded(e)
    if aborting() then
      return e
    end
    return handler(caught(e))
  end
  return checked(raw_xpcall(f, guarded, select(3, ...)))
end

http = {}

function http.get(url, headers)
  return settle(rt.http_request("GET", url, nil, headers))
end

function http.post(url, body, headers)
  return settle(rt.http_request("POST", url, body, headers))
end

function clm.sleep(ms)
  return settle(rt.sleep(ms))
end

clm.spawn = rt.spawn

function clm.wait_any(tasks, timeout_ms)
  return settle(rt.wait_any(tasks, timeout_ms))
end

function clm.await_all(tasks)
  return settle(rt.await_all(tasks))
end

function clm.try_all(tasks)
  return settle(rt.try_all(tasks))
end

-- ctx:ask(message, schema): the user's answer, or nil and why there is none.
local function ask(ctx, message, schema)
  return settle(rt.ask_start(ctx, message, schema))
end

-- Methods of task handles (the handles themselves are opaque userdata), and ctx:ask.
return {
  wait = function(task)
    return settle(rt.task_wait(task))
  end,
  result = rt.task_result,
  cancel = rt.task_cancel,
}, ask
