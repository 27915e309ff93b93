-- A plain tool; the attack is in its arguments: nesting 100000 deep, numbers out of
-- range, lone surrogates. The host refuses them before the plugin sees them.
clm.tool_register("args_echo", { invoke = function(args, ctx)
  ctx:complete(json.encode(args))
end })
