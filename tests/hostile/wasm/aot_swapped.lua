-- Compiled ahead of time, then carried with aot_swapped.other.lua in place of this
-- script: run over the other script's functions, the compiled code would read its
-- constants and registers wrongly (here: call a number, index past its frame).
local secret = "kept"
clm.tool_register("swapped", { invoke = function(args, ctx)
  ctx:complete(secret .. tostring(args.n or 1))
end })
