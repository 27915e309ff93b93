-- A loop made of goto alone: no function call and no loop statement. The count hook
-- counts every backward jump (toolcell's Lua patch, third_party/lua-src/PATCHED.md),
-- so the call's deadline stops it, and the Lua state survives (no restart).
calls = 0
clm.tool_register("goto_spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  ::again::
  goto again
end })
clm.tool_register("goto_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
