-- `..` leading out of the root, alone and after a real directory.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("dotdot_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("dotdot_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
