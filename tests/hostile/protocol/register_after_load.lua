-- Keeping clm.tool_register aside at load time and calling it later, from a task.
local register = clm.tool_register
clm.tool_register("late_register", { invoke = function(_, ctx)
  local task = clm.spawn(function()
    register("smuggled", { invoke = function(_, c) c:complete("smuggled") end })
  end)
  task:wait()
  ctx:complete(tostring(task:result().error))
end })
