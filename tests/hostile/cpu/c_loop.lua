-- A loop inside one C function, with no Lua code and no allocation in it:
-- string.rep("", 2^53) repeats nothing 2^53 times. No deadline check runs inside it,
-- so only the host's hard deadline stops it: the instance is dropped and the plugin
-- restarted, losing its state (the counter starts again).
calls = 0
clm.tool_register("c_spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  string.rep("", 1 << 53)
end })
clm.tool_register("c_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
