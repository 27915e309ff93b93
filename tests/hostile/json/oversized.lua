-- JSON text over the 2 MiB limit of json.decode.
clm.tool_register("decode_big", { invoke = function(_, ctx)
  local text = "[" .. string.rep("1,", 1024 * 1024) .. "1]"
  local value, err = json.decode(text)
  ctx:complete(tostring(value) .. " | " .. tostring(err))
end })
