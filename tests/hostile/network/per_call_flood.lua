-- Waves of 8 concurrent requests from tasks, 17 waves in one call: each wave stays
-- within the 8 in flight, but the call's 129th request fails, since a call may make
-- at most 128 in all, however they are spread over tasks.
clm.tool_register("waves", { invoke = function(args, ctx)
  local ok = 0
  for wave = 1, 17 do
    local tasks = {}
    for i = 1, 8 do
      tasks[i] = clm.spawn(function()
        local resp, err = http.get(args.url)
        if not resp then error(err, 0) end
        return resp.status
      end)
    end
    for _, outcome in ipairs(clm.await_all(tasks)) do
      if not outcome.ok then
        ctx:complete(ok .. " ok, then: " .. outcome.error)
        return
      end
      ok = ok + 1
    end
  end
  ctx:complete("no limit")
end })
