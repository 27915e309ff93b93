-- 100 tasks that fail, waited for with task:wait (which does not read the result),
-- then a completion: the errors were never observed, so the tool fails.
clm.tool_register("ignore_errors", { invoke = function(_, ctx)
  local tasks = {}
  for i = 1, 100 do tasks[i] = clm.spawn(function() error("task " .. i .. " failed", 0) end) end
  for _, task in ipairs(tasks) do task:wait() end
  ctx:complete("all fine, honestly")
end })
