-- A task that never ends: it sleeps in a loop forever, and the main coroutine waits
-- for it. The deadline fails the call and cancels the task with its timer.
clm.tool_register("endless", { timeout_ms = 300, invoke = function(_, ctx)
  local task = clm.spawn(function()
    while true do clm.sleep(5) end
  end)
  task:wait()
  ctx:complete("never")
end })
clm.tool_register("endless_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
