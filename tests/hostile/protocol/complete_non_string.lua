-- Completing with a table that pretends to be a string, and with nothing at all.
clm.tool_register("complete_table", { invoke = function(_, ctx)
  ctx:complete(setmetatable({}, { __tostring = function() return "sneaky" end }))
end })
clm.tool_register("complete_nil", { invoke = function(_, ctx)
  ctx:complete(nil)
end })
