-- A string that doubles until it cannot.
clm.tool_register("double", { invoke = function(_, ctx)
  local s = "x"
  while true do s = s .. s end
end })
clm.tool_register("double_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
