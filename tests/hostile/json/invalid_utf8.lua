-- Invalid UTF-8 in JSON text, in strings to encode, in a lone surrogate escape, and
-- in a tool's output.
clm.tool_register("utf8_decode", { invoke = function(_, ctx)
  local v1, e1 = json.decode('"\255\254"')
  local v2, e2 = json.decode('"\\ud800"')
  ctx:complete(tostring(v1) .. " | " .. tostring(e1) .. " || " .. tostring(v2) .. " | " .. tostring(e2))
end })
clm.tool_register("utf8_encode", { invoke = function(_, ctx)
  local ok, err = pcall(json.encode, { name = "\192\175" })
  ctx:complete(tostring(ok) .. " | " .. tostring(err))
end })
clm.tool_register("utf8_output", { invoke = function(_, ctx)
  ctx:complete("a\255b")
end })
