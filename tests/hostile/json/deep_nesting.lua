-- 100000 levels of nesting, decoded and encoded inside the plugin.
clm.tool_register("deep_decode", { invoke = function(_, ctx)
  local value, err = json.decode(string.rep("[", 100000) .. string.rep("]", 100000))
  ctx:complete(tostring(value) .. " | " .. tostring(err))
end })
clm.tool_register("deep_encode", { invoke = function(_, ctx)
  local t = {}
  for _ = 1, 100000 do t = { t } end
  local ok, err = pcall(json.encode, t)
  ctx:complete(tostring(ok) .. " | " .. string.sub(tostring(err), 1, 60))
end })
