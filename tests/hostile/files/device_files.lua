-- Device files: a character device in the root (made by the test, like /dev/zero),
-- a symlink to /dev/null, a FIFO; none is a regular file, none blocks or streams.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("device_files_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("device_files_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
