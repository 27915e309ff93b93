-- Numbers JSON can write but Lua cannot hold exactly, and Lua numbers JSON cannot write.
clm.tool_register("numbers_decode", { invoke = function(_, ctx)
  local parts = {}
  for _, text in ipairs({ "1e400", "-1e400", "9223372036854775808", "-9223372036854775809", "1e-400" }) do
    local value, err = json.decode(text)
    parts[#parts + 1] = text .. " -> " .. (err or (math.type(value) .. " " .. tostring(value)))
  end
  ctx:complete(table.concat(parts, "; "))
end })
clm.tool_register("numbers_encode", { invoke = function(_, ctx)
  local parts = {}
  for _, value in ipairs({ math.huge, -math.huge, 0/0, math.maxinteger, math.mininteger }) do
    local ok, text = pcall(json.encode, value)
    parts[#parts + 1] = tostring(ok) .. " " .. text
  end
  ctx:complete(table.concat(parts, "; "))
end })
