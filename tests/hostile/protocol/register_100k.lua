-- Registering 100000 tools at load time.
local function invoke(_, ctx) ctx:complete("one of many") end
for i = 1, 100000 do
  clm.tool_register("t" .. i, { invoke = invoke })
end
