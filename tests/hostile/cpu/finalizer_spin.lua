-- Finalizers that never end. Lua runs a finalizer during whichever call collects the
-- garbage, with every debug hook off in stock Lua; toolcell's Lua keeps the count hook
-- on in finalizers, so the call that runs one times out, says so, and the plugin keeps
-- its state (the counter). "litter" leaves the garbage and completes; "victim" only
-- allocates.
calls = 0
local function endless() setmetatable({}, { __gc = function() while true do end end }) end
clm.tool_register("litter", { invoke = function(_, ctx)
  calls = calls + 1
  endless()
  ctx:complete("littered")
end })
clm.tool_register("victim", { timeout_ms = 300, invoke = function(_, ctx)
  calls = calls + 1
  for i = 1, 1e7 do local _ = {} end
  ctx:complete("no finalizer ran")
end })
clm.tool_register("own_garbage", { timeout_ms = 300, invoke = function(_, ctx)
  calls = calls + 1
  endless()
  for i = 1, 1e7 do local _ = {} end
  ctx:complete("no finalizer ran")
end })
clm.tool_register("finalizer_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
