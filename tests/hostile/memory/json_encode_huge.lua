-- A small structure whose JSON text is huge: 64 references to one 1 MiB string
-- encode to 64 MiB. The encoder's output buffer lives outside Lua's heap, so it is
-- bounded separately, by the plugin's memory limit.
clm.tool_register("encode_huge", { invoke = function(_, ctx)
  local chunk = string.rep("x", 1024 * 1024)
  local list = {}
  for i = 1, 64 do list[i] = chunk end
  ctx:complete(json.encode(list))
end })
clm.tool_register("encode_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
