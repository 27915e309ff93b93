-- Catastrophic pattern backtracking at load time: string.find runs in C and never
-- returns to the Lua VM, so the count hook never fires. Only the host's hard deadline,
-- checked at fuel yields, can stop the load.
local s = string.rep("a", 30000)
s:find(".-.-.-.-.-b")
clm.tool_register("never_registered", { invoke = function(_, ctx) ctx:complete("no") end })
