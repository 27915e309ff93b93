-- Unbounded Lua recursion, caught and uncaught. Lua's own stack limit (or the
-- memory limit, whichever comes first) turns it into an ordinary error.
local function down(n) return down(n + 1) + 1 end
clm.tool_register("recurse_caught", { invoke = function(_, ctx)
  local ok, err = pcall(down, 1)
  ctx:complete(tostring(ok) .. " | " .. tostring(err))
end })
clm.tool_register("recurse", { invoke = function(_, ctx)
  ctx:complete(tostring(down(1)))
end })
clm.tool_register("recurse_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
