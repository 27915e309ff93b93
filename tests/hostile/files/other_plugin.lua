-- Each plugin its own directory: this plugin tries to reach another plugin's files
-- (the canary's, next to its own) by a relative path, by `..`, by the absolute path of
-- the other directory and through a symlink planted in its own. Every try is refused.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("other_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("other_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten by another plugin")))
end })
clm.tool_register("other_dir", { invoke = function(_, ctx)
  ctx:complete(tostring(clm.data_dir))
end })
