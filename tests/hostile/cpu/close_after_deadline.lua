-- <close> handlers that never end, closed after the deadline has passed. Closed while
-- an error unwinds a pcall, a handler runs under the deadline check like any code
-- (and is stopped at once, the deadline having passed); the variables of a coroutine
-- that the deadline ended are not closed at all (clm-tool(5) invocations are
-- coroutines, and Lua does not close a dead coroutine's variables). Every call times
-- out and the plugin keeps its state (the counter).
calls = 0
local function endless() return setmetatable({}, { __close = function() while true do end end }) end
clm.tool_register("close_spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  local x <close> = endless()
  while true do end
end })
clm.tool_register("close_spin_pcall", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  pcall(function()
    local x <close> = endless()
    local y <close> = endless()
    while true do end
  end)
  ctx:complete("caught")
end })
clm.tool_register("close_spin_task", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  local task = clm.spawn(function()
    local x <close> = endless()
    while true do end
  end)
  task:wait()
end })
clm.tool_register("close_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
