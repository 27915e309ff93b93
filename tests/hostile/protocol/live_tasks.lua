-- Returning from invoke with 500 tasks still waiting on timers.
clm.tool_register("abandon", { invoke = function(_, ctx)
  for i = 1, 500 do clm.spawn(function() clm.sleep(60000) end) end
  ctx:fail("unreachable")
  return
end })
clm.tool_register("abandon_quietly", { invoke = function(_, ctx)
  for i = 1, 500 do clm.spawn(function() clm.sleep(60000) end) end
end })
