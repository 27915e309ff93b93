-- Code without a loop statement or a goto: endless tail calls, and recursion that
-- branches without end (fib of a large n, 2^80 calls). The count hook counts calls as
-- well as backward jumps, so the call's deadline stops both, and the Lua state
-- survives (no restart).
local function spin() return spin() end
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
calls = 0
clm.tool_register("tail_spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  return spin()
end })
clm.tool_register("fib_spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  ctx:complete(tostring(fib(80)))
end })
clm.tool_register("spin_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
