-- C-level work in a loop: each gsub over a 1 MB string runs in C for milliseconds, so
-- the 10000 VM instructions between two deadline checks take far longer than the
-- deadline. The host stops the step at its hard deadline (checked at fuel yields) and
-- discards the instance; the next call gets a fresh one.
clm.tool_register("flood", { timeout_ms = 300, invoke = function(_, ctx)
  local s = string.rep("a", 1000000)
  while true do s:gsub("a", "%0") end
end })
clm.tool_register("flood_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
