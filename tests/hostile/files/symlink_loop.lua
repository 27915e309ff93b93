-- Two symlinks pointing at each other.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("symlink_loop_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("symlink_loop_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
