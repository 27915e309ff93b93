-- A loop made of goto alone: no function call and no loop statement for a hook on
-- calls or loops to catch. The count hook sees it every 10000 instructions, so the
-- call's deadline stops it, and the Lua state survives (no restart).
calls = 0
clm.tool_register("goto_spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  ::again::
  goto again
end })
clm.tool_register("goto_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
