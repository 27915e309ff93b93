-- Names with NUL, invalid UTF-8, a newline, too many bytes, and no name at all.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("odd_names_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
clm.tool_register("odd_names_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "overwritten")))
end })
clm.tool_register("odd_names_bytes", { invoke = function(_, ctx)
  local ok, err = pcall(clm.write_file, "bad\255name", "x")
  ctx:complete(tostring(ok) .. " | " .. tostring(err))
end })
