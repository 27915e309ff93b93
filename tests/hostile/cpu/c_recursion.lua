-- Recursion through C functions: gsub calling back into Lua that calls gsub again,
-- and an __index metamethod that indexes itself. Each level is a C call, bounded by
-- Lua's C-stack limit before the wasm stack or the shadow stack in linear memory.
local function deep(s) return (s:gsub(".", deep)) end
local loop = setmetatable({}, {})
getmetatable(loop).__index = function(t, k) return t[k] end
clm.tool_register("through_gsub", { invoke = function(_, ctx)
  local ok, err = pcall(deep, "ab")
  ctx:complete(tostring(ok) .. " | " .. tostring(err))
end })
clm.tool_register("through_index", { invoke = function(_, ctx)
  ctx:complete(tostring(loop.anything))
end })
