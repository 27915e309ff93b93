-- Control flow, closures, varargs and calls: every family of opcodes the compiler emits.
for i = 1, 3 do print("for", i) end
for i = 3, 1, -1 do print("down", i) end
for i = 1, 2, 0.5 do print("float step", i) end
for i = math.maxinteger - 2, math.maxinteger do print("top", i) end
for i = math.mininteger, math.mininteger + 2 do print("bottom", i) end
for i = 1, 0 do print("never") end
for i = 1.0, 3 do print("float start", i) end
print(pcall(function() for i = 1, 10, 0 do end end))
print(pcall(function() for i = "a", 2 do end end))
print(pcall(function() for i = 1, {} do end end))
local n = 0
while true do n = n + 1; if n > 5 then break end end
repeat local stop = n > 8; n = n + 1 until stop
print("while/repeat", n)
do
  local i = 1
  ::top::
  if i <= 3 then print("goto", i); i = i + 1; goto top end
end
for i = 1, 3 do
  for j = 1, 3 do
    if j == 2 then goto continue end
    print("nested", i, j)
    ::continue::
  end
end
local closures = {}
for i = 1, 3 do closures[i] = function() i = i + 10; return i end end
print(closures[1](), closures[1](), closures[2](), closures[3]())
local function counter()
  local c = 0
  return function() c = c + 1; return c end, function() return c end
end
local inc, get = counter()
inc(); inc()
print("upvalue", get())
local function va(...)
  local a, b = ...
  return select("#", ...), a, b, select(2, ...)
end
print(va())
print(va(1))
print(va(1, nil, 3))
print(va(nil, nil))
print(pcall(select, 0))
print(select(-1, 1, 2, 3), pcall(select, -4, 1, 2, 3))
print(select("#", table.unpack({ 1, 2, nil, 4 }, 1, 4)), table.unpack({ 1, 2, 3 }, 2))
local t = table.pack(va(1, 2, 3))
print(t.n, t[1], t[5])
local function tail(k) if k == 0 then return "done" end return tail(k - 1) end
print(tail(100000))
local function multi() return 1, 2, 3 end
print(multi(), (multi()), ({ multi() })[3], ({ multi(), multi() })[4], #{ multi(), multi() })
local x, y, z = 1
print(x, y, z)
local a, b = 1, 2
a, b = b, a
print(a, b)
local tt = {}
local i = 1
i, tt[i] = i + 1, 20
print(i, tt[1], tt[2])
print(#"abc", -(-3), not nil, not 0, 1 and 2, nil and 1, false or "d", nil or false)
local big = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
  21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
  41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, k = "v", multi() }
print(#big, big[60], big[61], big[63], big.k)
local s = "a" .. "b" .. 1 .. 2.5 .. "c" .. ("d"):rep(3) .. -1
print(s)
local cmp = {}
for _, p in ipairs({ { 1, 2 }, { 2, 1 }, { 1, 1 }, { "a", "b" }, { "b", "a" }, { "", "a" }, { "a\0b", "a\0c" } }) do
  cmp[#cmp + 1] = tostring(p[1] < p[2]) .. tostring(p[1] <= p[2]) .. tostring(p[1] == p[2])
end
print(table.concat(cmp, " "))
local const <const> = 42
print(const * 2)
local depth = 0
local function recurse(k) depth = math.max(depth, k); if k < 10000 then return 1 + recurse(k + 1) end return 0 end
print("recursion", recurse(1), depth)
local ok, err = pcall(function() local function f() return 1 + f() end return f() end)
print("overflow", ok, err)
local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end
print("fib", fib(20))
print(string.format("%q", "tab\tnl\nnull\0quote\"back\\"), string.format("%q", 1/3), string.format("%q", math.mininteger))
local huge = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299, 300 }
print("setlist", #huge, huge[1], huge[256], huge[257], huge[300])
for _, v in ipairs({ 4, 5, 6, 4.5, 5.0, -5, math.huge, -math.huge, math.mininteger }) do
  print(v, v < 5, v <= 5, v > 5, v >= 5, v == 5, 5 < v, 5 <= v, v == 5.0, v ~= 5, v < 5.5, -5 > v, v == "5")
end
for i = math.maxinteger - 3, math.maxinteger, 2 do print("step 2 at the top", i) end
for i = math.mininteger + 3, math.mininteger, -2 do print("step -2 at the bottom", i) end
for i = 1, 3.5 do print("float limit", i) end
for i = 3, 1.5, -1 do print("float limit down", i) end
for i = 0.1, 0.35, 0.1 do print("float steps", i) end
local flags = {}
for _, v in ipairs({ 0, 1, "", false, nil, true }) do flags[#flags + 1] = tostring(v and "t" or "f") end
print(table.concat(flags))
print(pcall(function() local function f(s) return (s:gsub(".", f)) end return f("x") end))
local looped = setmetatable({}, {})
getmetatable(looped).__index = function(t, k) return t[k] end
print(pcall(function() return looped.x end))
