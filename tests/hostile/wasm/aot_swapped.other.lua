-- The script swapped into aot_swapped's compiled artifact: the same shape, other
-- bytecode (a number where a string was, another call).
local secret = 42
clm.tool_register("swapped", { invoke = function(args, ctx)
  ctx:complete(tostring(secret + (args.n or 1)))
end })
