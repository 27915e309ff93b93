-- Writing a file larger than the plugin's memory: the content must exist as a Lua
-- string first, so the memory limit stops it before any byte reaches the disk.
clm.tool_register("huge_write", { invoke = function(_, ctx)
  local ok, err = clm.write_file("huge.bin", string.rep("x", 64 * 1024 * 1024))
  ctx:complete(tostring(ok) .. " | " .. tostring(err))
end })
clm.tool_register("big_write", { invoke = function(_, ctx)
  local ok, err = clm.write_file("big.bin", string.rep("y", 3 * 1024 * 1024))
  ctx:complete(tostring(ok) .. " | " .. tostring(err))
end })
