-- Lua code that C calls over and over, none of it with a call or a loop of its own:
-- __index and __newindex functions under table.move and table.concat, a comparator
-- and __lt under table.sort of a "virtual" table of 2^31 - 2 elements, and a gsub
-- callback. Each function is checked when it starts (toolcell's Lua patch), so every
-- call times out and the plugin keeps its state (the counter).
calls = 0
local function virtual(index)
  return setmetatable({}, {
    __len = function() return (1 << 31) - 2 end,
    __index = index,
    __newindex = function() end,
  })
end
local function count() calls = calls + 1 end
clm.tool_register("move_spin", { timeout_ms = 200, invoke = function(_, ctx)
  count()
  local src = setmetatable({}, { __index = function(t, k) return k end })
  local dst = setmetatable({}, { __newindex = function() end })
  table.move(src, 1, 1 << 40, 1, dst)
end })
clm.tool_register("concat_spin", { timeout_ms = 200, invoke = function(_, ctx)
  count()
  table.concat(setmetatable({}, { __index = function() return "" end }), "", 1, 1 << 40)
end })
clm.tool_register("sort_spin", { timeout_ms = 200, invoke = function(_, ctx)
  count()
  table.sort(virtual(function(_, i) return i end), function(a, b) return a > b end)
end })
local ordered = { __lt = function(a, b) return a[1] > b[1] end }
clm.tool_register("lt_spin", { timeout_ms = 200, invoke = function(_, ctx)
  count()
  table.sort(virtual(function(_, i) return setmetatable({ i }, ordered) end))
end })
-- 2^21 callbacks take about 100-250 ms, so a deadline of 200 ms could pass unnoticed on a
-- quiet machine: a short deadline makes the check inside the callbacks what stops it.
clm.tool_register("gsub_spin", { timeout_ms = 20, invoke = function(_, ctx)
  count()
  string.rep("a", 1 << 21):gsub(".", function() return "" end)
end })
clm.tool_register("callback_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
