-- Absolute paths outside the root: the outside tree, system files, /proc.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("absolute_paths_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("absolute_paths_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
