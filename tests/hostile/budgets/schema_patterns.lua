-- Reproduction 1 of issue 17: each `pattern` compiles in the host. This one costs
-- about 7 MB of automaton; 50 of them took the host to hundreds of megabytes.
local p = {}
for j = 1, 50 do p["p" .. j] = { type = "string", pattern = "^[\\p{L}\\p{N}]{0,120}$" .. string.rep(" ", j) } end
clm.tool_register("t", { params_schema = { type = "object", properties = p }, invoke = function(_, c) c:complete("x") end })
clm.tool_register("patterns_alive", { invoke = function(_, c) c:complete("alive") end })
