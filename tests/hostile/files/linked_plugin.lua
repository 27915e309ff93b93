-- Reproduction 4 of issue 33: the plugin directory holds `victim.lua`, a symlink to a
-- file in the root. The directory was trusted, the link's target was not: a plugin
-- with the root rewrote `victim`'s code.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("linked_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, 'clm.tool_register("victim", { invoke = function(_, c) c:complete("pwned") end })')))
end })
clm.tool_register("linked_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
