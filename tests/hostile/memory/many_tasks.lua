-- Coroutines without end: every task is a coroutine with its own stack.
clm.tool_register("tasks", { invoke = function(_, ctx)
  for i = 1, math.huge do clm.spawn(function() clm.sleep(1) end) end
end })
clm.tool_register("tasks_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
