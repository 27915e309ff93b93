-- Closures created without end, each capturing its own upvalue.
clm.tool_register("closures", { invoke = function(_, ctx)
  local fs = {}
  for i = 1, math.huge do fs[i] = function() return i end end
end })
clm.tool_register("closures_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
