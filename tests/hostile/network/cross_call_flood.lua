-- The per-plugin limit holds across calls: one call keeps 8 slow requests in flight,
-- and a second call of the same plugin cannot start a ninth.
clm.tool_register("hold_eight", { invoke = function(args, ctx)
  local tasks = {}
  for i = 1, 8 do
    tasks[i] = clm.spawn(function() return (http.get(args.url)).status end)
  end
  local values = clm.try_all(tasks)
  ctx:complete(#values .. " answered")
end })
clm.tool_register("one_more", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and "got in" or ("error: " .. err))
end })
