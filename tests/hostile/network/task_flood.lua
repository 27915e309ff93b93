-- 200 tasks each starting a request at once: the ninth request in flight and every
-- one after it fail at once (8 per plugin), nothing is queued.
clm.tool_register("task_flood", { invoke = function(args, ctx)
  local tasks = {}
  for i = 1, 200 do
    tasks[i] = clm.spawn(function()
      local resp, err = http.get(args.url)
      if resp then return "ok" end
      return err
    end)
  end
  local counts, last = {}, nil
  for _, outcome in ipairs(clm.await_all(tasks)) do
    counts[outcome.value] = (counts[outcome.value] or 0) + 1
    if outcome.value ~= "ok" then last = outcome.value end
  end
  ctx:complete((counts.ok or 0) .. " ok, " .. (200 - (counts.ok or 0)) .. " refused: " .. tostring(last))
end })
