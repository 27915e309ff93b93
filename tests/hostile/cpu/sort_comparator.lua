-- Lua code running inside a C function: table.sort calls a comparator that never
-- returns. The count hook still fires inside the comparator, so the deadline holds.
clm.tool_register("sort_spin", { timeout_ms = 200, invoke = function(_, ctx)
  local t = {}
  for i = 1, 100 do t[i] = i end
  table.sort(t, function(a, b) while true do end end)
  ctx:complete("never")
end })
clm.tool_register("sort_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
