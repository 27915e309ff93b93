-- Error values, levels, and the messages of the errors Lua raises itself.
local function show(...) local t = table.pack(...) for i = 1, t.n do t[i] = type(t[i]) == "table" and ("table:" .. tostring(t[i].code)) or tostring(t[i]) end return table.concat(t, " | ", 1, t.n) end
print(show(pcall(error, "plain")))
print(show(pcall(error, "level 0", 0)))
print(show(pcall(error, { code = 7 })))
print(show(pcall(error, nil)))
print(show(pcall(error, 42)))
print(show(pcall(error)))
local function lvl1() error("at one", 1) end
local function lvl2() error("at two", 2) end
local function call2() lvl2() end
print(show(pcall(lvl1)), show(pcall(call2)))
print(show(pcall(assert, false)), show(pcall(assert, nil, "custom")), show(pcall(assert, false, { code = 3 })))
print(show(pcall(assert, 1, 2, 3)))
print(show(xpcall(function() error("x") end, function(m) return "handled: " .. m end)))
print(show(xpcall(function(a, b) return a + b end, print, 2, 3)))
print(show(xpcall(function() error({ code = 9 }) end, function(e) return e.code * 2 end)))
print(show(pcall(xpcall)))
-- Not in tail position: the sandbox's xpcall is a Lua function (it re-raises deadline
-- errors), so a tail call to it leaves no caller to name in its own argument errors.
print(show(pcall(function() local r = xpcall(print) return r end)), show(pcall(function() local r = xpcall(print, nil) return r end)))
print(show(pcall(pcall)))
local t, s, n, f = {}, "str", nil, function() end
local cases = {
  function() return t.a.b end,
  function() return undefined_global.x end,
  function() return s.x.y end,
  function() n() end,
  function() t.missing() end,
  function() t:method() end,
  function() undefined_fn() end,
  function() return t < 1 end,
  function() return {} < {} end,
  function() return "a" < 1 end,
  function() return t .. "x" end,
  function() return n .. "x" end,
  function() return -t end,
  function() return #5 end,
  function() return t + f end,
  function() local up = t; return function() return up.x.y end end,
  function() return math.floor("x") end,
  function() return ("x"):rep(-1, 5) end,
  function() return string.rep() end,
  function() return setmetatable(1, {}) end,
  function() return ipairs() end,
  function() return ("abc"):sub({}) end,
  function() return string.format("%d", 1.5) end,
  function() return string.format("%d", "x") end,
  function() return string.format("%z", 1) end,
  function() return string.char(256) end,
  function() return table.concat({ 1, {}, 3 }) end,
  function() return table.insert({}, 1, 2, 3) end,
  function() return table.insert({}, 5, 1) end,
  function() return tostring() end,
  function() return rawset({}, nil, 1) end,
  function() local x = {}; x[nil] = 1 end,
  function() local x = {}; x[0/0] = 1 end,
  function() return utf8.char(-1) end,
  function() return math.random(2, 1) end,
  function() return select(0) end,
  function() return ("x"):bad() end,
  function() return next({}, "nope") end,
}
for i, case in ipairs(cases) do
  local ok, result = pcall(case)
  if ok and type(result) == "function" then ok, result = pcall(result) end
  print(i, ok, result)
end
local ok, e = pcall(error, setmetatable({}, { __tostring = function() return "custom tostring" end }))
print(ok, tostring(e))
print(select("#", pcall(error)))
local nested = 0
local function deep_error(k) if k == 0 then error("bottom") end local ok, err = pcall(deep_error, k - 1); nested = nested + 1; error(err, 0) end
print(pcall(deep_error, 50), nested)
print(pcall(string.rep, "x", -1), pcall(string.rep, "x", 1e10))
