-- Descriptions of 100 KB each, within the plugin's memory: the model sees 4 KiB.
for i = 1, 3 do
  clm.tool_register("long" .. i, {
    description = string.rep("x", 100000),
    invoke = function(_, c) c:complete("alive") end,
  })
end
