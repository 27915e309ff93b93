-- A dangling symlink pointing outside: writing through it must not create the
-- file it names.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("dangling_symlink_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("dangling_symlink_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
