-- Symlinks the test planted in the root, pointing out of it (a directory, a file,
-- a relative path up and out): reads and writes through them are refused.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("symlink_escape_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("symlink_escape_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
