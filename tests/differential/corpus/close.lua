-- To-be-closed variables and const locals.
local log = {}
local function closer(name)
  return setmetatable({}, { __close = function(_, err) log[#log + 1] = name .. ":" .. tostring(err) end })
end
do
  local a <close> = closer("a")
  local b <close> = closer("b")
  local c <const> = 3
  log[#log + 1] = "body" .. c
end
print(table.concat(log, " ")); log = {}
print(pcall(function()
  local a <close> = closer("a")
  local b <close> = closer("b")
  error("boom", 0)
end))
print(table.concat(log, " ")); log = {}
print(pcall(function()
  local a <close> = setmetatable({}, { __close = function() error("in close", 0) end })
  local b <close> = closer("b")
  error("first", 0)
end))
print(table.concat(log, " ")); log = {}
for i = 1, 3 do
  local x <close> = closer("loop" .. i)
  if i == 2 then break end
end
print(table.concat(log, " ")); log = {}
local function early(flag)
  local x <close> = closer("early")
  if flag then return "returned" end
  return "fell"
end
print(early(true), early(false), table.concat(log, " ")); log = {}
do
  local i = 0
  ::again::
  do
    local x <close> = closer("goto" .. i)
    i = i + 1
    if i < 3 then goto again end
  end
end
print(table.concat(log, " ")); log = {}
print(pcall(function() local x <close> = 42 end))
print(pcall(function() local x <close> = nil; local y <close> = false; return "nil and false are fine" end))
local function gen()
  local x <close> = closer("gen")
  return 1, 2, 3
end
print(gen(), table.concat(log, " ")); log = {}
for k in (function()
  local done = false
  return function() if done then return nil end done = true return "only" end, nil, nil, closer("iterator")
end)() do
  log[#log + 1] = k
end
print(table.concat(log, " ")); log = {}
print(pcall(function()
  for k in function() return nil end, nil, nil, 7 do end
end))
