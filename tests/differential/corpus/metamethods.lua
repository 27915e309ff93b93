-- Metamethods of every kind, called by the VM and by the C library.
local log = {}
local function note(...) log[#log + 1] = table.concat({ ... }, " ") end
local V = {}
V.__index = V
local function vec(x, y) return setmetatable({ x = x, y = y }, V) end
V.__add = function(a, b) return vec(a.x + b.x, a.y + b.y) end
V.__sub = function(a, b) return vec(a.x - b.x, a.y - b.y) end
V.__mul = function(a, b) if type(b) == "number" then return vec(a.x * b, a.y * b) end return a.x * b.x + a.y * b.y end
V.__div = function(a, b) return vec(a.x / b, a.y / b) end
V.__mod = function(a, b) return vec(a.x % b, a.y % b) end
V.__pow = function(a, b) return vec(a.x ^ b, a.y ^ b) end
V.__unm = function(a) return vec(-a.x, -a.y) end
V.__idiv = function(a, b) return vec(a.x // b, a.y // b) end
V.__band = function(a, b) return "band" end
V.__bor = function(a, b) return "bor" end
V.__bxor = function(a, b) return "bxor" end
V.__shl = function(a, b) return "shl" end
V.__shr = function(a, b) return "shr" end
V.__bnot = function(a) return "bnot" end
V.__concat = function(a, b)
  local function s(v) return type(v) == "table" and ("(" .. v.x .. "," .. v.y .. ")") or tostring(v) end
  return s(a) .. s(b)
end
V.__len = function(a) return math.sqrt(a.x * a.x + a.y * a.y) end
V.__eq = function(a, b) note("eq"); return a.x == b.x and a.y == b.y end
V.__lt = function(a, b) note("lt"); return a.x < b.x end
V.__le = function(a, b) note("le"); return a.x <= b.x end
V.__call = function(self, k) return self[k] end
V.__tostring = function(a) return "vec(" .. a.x .. "," .. a.y .. ")" end
V.__name = "Vector"
function V:norm1() return math.abs(self.x) + math.abs(self.y) end
local a, b = vec(1, 2), vec(3, 4)
print(tostring(a + b), tostring(a - b), a * b, tostring(a * 2), tostring(b / 2), tostring(b % 2))
print(tostring(a ^ 2), tostring(-a), tostring(b // 2), a & 1, 1 | a, a ~ a, a << 1, 1 >> a, ~a)
print(a .. b, a .. "!", "!" .. b, 1 .. a, #b, a == b, a == vec(1, 2), a ~= b, a < b, a <= b, a > b, a >= b)
print(a("x"), a("norm1")(a), a:norm1(), rawequal(a, vec(1, 2)), rawlen({ 1, 2 }), rawget(a, "norm1"))
print(table.concat(log, ","))
local defaults = setmetatable({}, { __index = function(t, k) return k .. "?" end })
print(defaults.hello, defaults[1], rawget(defaults, "hello"))
local chain = setmetatable({}, { __index = setmetatable({ mid = "m" }, { __index = { deep = "d" } }) })
print(chain.mid, chain.deep, chain.none)
local writes = {}
local guarded = setmetatable({}, { __newindex = function(t, k, v) writes[#writes + 1] = k .. "=" .. tostring(v); rawset(t, k, v) end })
guarded.a = 1; guarded.a = 2; guarded.b = nil
print(table.concat(writes, " "), guarded.a)
local proxy_store = {}
local proxy = setmetatable({}, { __newindex = proxy_store, __index = proxy_store })
proxy.x = 5
print(rawget(proxy, "x"), proxy.x, proxy_store.x)
local protected = setmetatable({}, { __metatable = "locked" })
print(getmetatable(protected), pcall(setmetatable, protected, {}))
print(getmetatable("abc").__index == string, ("x"):rep(3), #"four")
local pairs_log = {}
local iterable = setmetatable({}, { __pairs = function(t) return function(_, k) if not k then return 1, "one" end end, t, nil end })
for k, v in pairs(iterable) do pairs_log[#pairs_log + 1] = k .. "=" .. v end
print(table.concat(pairs_log, " "))
local idx = setmetatable({}, { __index = function(_, i) return i * 2 end })
local moved = table.move(idx, 1, 5, 1, {})
print(table.concat(moved, " "), table.concat(idx, ",", 1, 3), table.unpack(idx, 1, 3))
local objs = {}
for i = 1, 8 do objs[i] = setmetatable({ v = (i * 5) % 8 }, { __lt = function(p, q) return p.v < q.v end }) end
table.sort(objs)
local vs = {}
for i, o in ipairs(objs) do vs[i] = o.v end
print(table.concat(vs, " "))
local lenobj = setmetatable({}, { __len = function() return 3 end, __index = function(_, i) return "e" .. i end })
print(#lenobj, table.concat(lenobj, "-"), table.unpack(lenobj))
table.insert(lenobj, "new")
print(rawget(lenobj, 4))
local called = setmetatable({}, { __call = function(self, ...) return select("#", ...), ... end })
print(called(1, 2, 3), pcall(called, "p"))
local str_mt = getmetatable("")
print(("%d items"):format(3), ("abc"):upper(), ("a,b"):find(",", 1, true))
local cmp_mixed = setmetatable({}, { __lt = function() return true end })
print(pcall(function() return cmp_mixed < 1 end), pcall(function() return 1 < cmp_mixed end))
print(pcall(function() return {} < {} end))
print(pcall(function() return {} .. "x" end))
print(pcall(function() return #nil end))
local named = setmetatable({}, { __name = "MyType" })
print((tostring(named):gsub("0x%x+", "ADDR"):gsub(": [%x]+$", ": ADDR")))
print(pcall(function() return named + 1 end))
local tostr = setmetatable({}, { __tostring = function() return 42 end })
print(pcall(tostring, tostr))
local gsubbed = ("hello world"):gsub("%w+", setmetatable({}, { __index = function(_, w) return w:upper() end }))
print(gsubbed)
