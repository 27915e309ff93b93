-- Pure computation with pcall around it, under a small fuel budget: fuel is the
-- deterministic CPU cap, and running out traps the instance whatever Lua does.
clm.tool_register("burn", { invoke = function(_, ctx)
  local x = 0
  while true do pcall(function() for i = 1, 1000 do x = x + i end end) end
end })
clm.tool_register("burn_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
