-- A table that grows without end. Lua's allocator limit stops it; the table was local
-- to the call, so the next call has its memory back.
clm.tool_register("grow_table", { invoke = function(_, ctx)
  local t = {}
  for i = 1, math.huge do t[i] = i end
end })
clm.tool_register("table_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
