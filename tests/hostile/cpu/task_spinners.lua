-- A coroutine bomb: a thousand tasks, each spinning forever. The first one to run
-- never yields; the call's deadline covers every coroutine of the call.
clm.tool_register("spinners", { timeout_ms = 300, invoke = function(_, ctx)
  local tasks = {}
  for i = 1, 1000 do
    tasks[i] = clm.spawn(function() while true do end end)
  end
  clm.await_all(tasks)
  ctx:complete("never")
end })
clm.tool_register("spinners_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
