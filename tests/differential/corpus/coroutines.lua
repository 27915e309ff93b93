-- native only: the sandbox has no coroutine library (plugins yield through
-- clm.sleep, http and tasks, which the conformance suites run compiled).
-- Coroutines: yields from deep in Lua calls, from metamethods, iterators and
-- pcall, resumed where they stopped; errors, close and wrap.
local log = {}
local function note(...)
  local t = table.pack(...)
  for i = 1, t.n do t[i] = tostring(t[i]) end
  log[#log + 1] = table.concat(t, " ", 1, t.n)
end

local function leaf(x) local got = coroutine.yield("leaf " .. x) return got * 2 end
local function middle(x) local a = leaf(x) local b = leaf(x + 1) return a + b end
local co = coroutine.create(function(x) local r = middle(x) note("middle", r) return r, "done" end)
local step = 1
while true do
  local ok, a, b = coroutine.resume(co, step * 10)
  note("resume", tostring(ok), tostring(a), tostring(b), coroutine.status(co))
  if coroutine.status(co) == "dead" then break end
  step = step + 1
end

local mt = {}
mt.__index = function(t, k) return coroutine.yield("index " .. k) end
mt.__add = function(a, b) return coroutine.yield("add") + 1 end
mt.__lt = function(a, b) return coroutine.yield("lt") end
mt.__le = function(a, b) return coroutine.yield("le") end
mt.__eq = function(a, b) return coroutine.yield("eq") end
mt.__concat = function(a, b) return coroutine.yield("concat") end
mt.__call = function(self, x) return coroutine.yield("call " .. x) end
mt.__len = function(t) return coroutine.yield("len") end
mt.__unm = function(t) return coroutine.yield("unm") end
local obj = setmetatable({}, mt)
local other = setmetatable({}, mt)
local meta = coroutine.wrap(function()
  local v = obj.missing
  note("index gave", v)
  local s = obj + 5
  note("add gave", s)
  if obj < other then note("lt true") else note("lt false") end
  if obj <= other then note("le true") else note("le false") end
  if obj == other then note("eq true") else note("eq false") end
  note("concat gave", obj .. "x")
  note("call gave", obj(7))
  note("len gave", #obj)
  note("unm gave", -obj)
  return "meta end"
end)
local answers = { "found", 41, true, false, true, "joined", "called", 3, -1 }
local out = meta()
for i = 1, #answers do
  note("yielded", tostring(out))
  out = meta(answers[i])
end
note("finished", tostring(out))

local function iter(limit)
  return function(_, i)
    if i >= limit then return nil end
    coroutine.yield("iter " .. i)
    return i + 1
  end, nil, 0
end
local looping = coroutine.wrap(function()
  local total = 0
  for i in iter(4) do total = total + i end
  for i = 1, 3 do total = total + coroutine.yield("num " .. i) end
  local k = 0
  while k < 3 do k = k + 1; total = total + coroutine.yield("while " .. k) end
  repeat k = k - 1 until coroutine.yield("repeat " .. k) or k == 0
  return "total " .. total
end)
local v = looping()
while v and v:sub(1, 5) ~= "total" do note(v); v = looping(1) end
note(v)

local protected = coroutine.wrap(function()
  local ok, err = pcall(function()
    local got = coroutine.yield("in pcall")
    error("raised " .. got)
  end)
  note("pcall after yield", tostring(ok), err)
  local ok2, res = xpcall(function() return coroutine.yield("in xpcall") end, debug and debug.traceback or tostring)
  note("xpcall after yield", tostring(ok2), tostring(res))
  return "protected end"
end)
note(protected())
note(protected("x"))
note(protected("y"))

local closing = coroutine.create(function()
  local res <close> = setmetatable({}, { __close = function(_, e) note("closed", tostring(e)) end })
  coroutine.yield("holding")
  error("after hold")
end)
note(tostring(select(2, coroutine.resume(closing))))
note(tostring(select(2, coroutine.resume(closing))))
local pending = coroutine.create(function()
  local res <close> = setmetatable({}, { __close = function(_, e) note("closed by close", tostring(e)) end })
  coroutine.yield("pending")
end)
coroutine.resume(pending)
note("close", tostring(coroutine.close(pending)), coroutine.status(pending))
local yield_close = coroutine.wrap(function()
  do
    local res <close> = setmetatable({}, { __close = function() coroutine.yield("in close") note("close resumed") end })
  end
  return "after close"
end)
note(yield_close())
note(yield_close())

local deep = coroutine.wrap(function()
  local function down(n) if n == 0 then return coroutine.yield("bottom") end return 1 + down(n - 1) end
  return down(5000)
end)
note(deep())
note(deep(1))

note(pcall(coroutine.wrap(function() return ("abc"):gsub(".", function(c) return coroutine.yield(c) end) end)))
note(pcall(coroutine.wrap(function() table.sort({ 3, 2, 1 }, function(a, b) coroutine.yield() return a < b end) end)))
local dead = coroutine.create(function() error({ code = 7 }) end)
local okd, errd = coroutine.resume(dead)
note("table error", tostring(okd), type(errd), errd.code, coroutine.status(dead))
note(coroutine.resume(dead))
note(coroutine.isyieldable(), coroutine.running() ~= nil)
local gen = coroutine.wrap(function(...)
  local args = table.pack(...)
  for i = 1, args.n do coroutine.yield(args[i]) end
  return "gen end", select("#", ...)
end)
note(gen(1, nil, 3), gen(), gen(), gen())

print(table.concat(log, "\n"))
