-- The table library, constructors, lengths and keys.
local t = { 10, 20, 30 }
table.insert(t, 40); table.insert(t, 1, 5); table.insert(t, 3, 15)
print(#t, table.concat(t, ","))
print(table.remove(t), table.remove(t, 1), table.remove(t, 2), #t, table.concat(t, ","))
print(table.remove({}), table.remove({}, 0), #t, table.remove(t, #t + 1))
print(table.concat({}, ","), table.concat({ 1, 2.5, "x" }, ""), table.concat({ 1, 2, 3 }, ", ", 2, 3), table.concat({ "a" }, ",", 3, 2))
print(table.unpack({ 1, 2, 3 }))
print(table.unpack({ 1, 2, 3 }, -1, 1))
print(select("#", table.unpack({}, 1, 3)), pcall(table.unpack, {}, 1, 1e8))
local moved = table.move({ 1, 2, 3, 4, 5 }, 2, 4, 1)
print(table.concat(moved, ","))
print(table.concat(table.move({ 1, 2, 3 }, 1, 3, 3), ","), table.concat(table.move({ 1, 2, 3 }, 1, 3, 1, { 9, 9, 9, 9 }), ","))
print(pcall(table.move, {}, 1, math.maxinteger, 2))
local nums = {}
local seed = 7
for i = 1, 200 do seed = (seed * 1103515245 + 12345) % 2147483648; nums[i] = seed % 1000 end
table.sort(nums)
local ok = true
for i = 2, #nums do if nums[i - 1] > nums[i] then ok = false end end
print("sorted", ok, nums[1], nums[100], nums[200])
table.sort(nums, function(a, b) return a > b end)
print("desc", nums[1], nums[200])
local words = { "pear", "Apple", "fig", "banana", "cherry" }
table.sort(words)
print(table.concat(words, " "))
table.sort(words, function(a, b) return #a < #b or (#a == #b and a < b) end)
print(table.concat(words, " "))
print(pcall(table.sort, { 3, 1, "x" }))
print(pcall(table.sort, { 1, 2, 3 }, function(a, b) return true end))
local keys = { [1] = "a", [2] = "b", [1.0] = "c", [2^53] = "big", [-1] = "neg", ["1"] = "str" }
print(keys[1], keys[2], keys[2^53], keys[-1], keys["1"], #keys)
local holes = { 1, 2, nil, 4 }
print(#holes == 4 or #holes == 2, select("#", table.unpack(holes, 1, 4)))
local seq = {}
for i = 1, 100 do seq[i] = i end
for i = 1, 100 do seq[i] = nil end
print(#seq, next(seq))
local grow = {}
for i = 1, 1000 do grow[i] = i * i end
print(#grow, grow[1000], grow[1001])
local mixed = { "a", "b", x = 1, y = 2, [10] = "ten", "c" }
local count = 0
for k, v in pairs(mixed) do count = count + 1 end
print(count, #mixed, mixed[3], mixed[10])
local ordered = {}
for k in pairs({ z = 1, a = 2, m = 3, [5] = 4, [1] = 5 }) do ordered[#ordered + 1] = tostring(k) end
table.sort(ordered)
print(table.concat(ordered, " "))
local ip = {}
for i, v in ipairs({ 1, 2, nil, 4 }) do ip[#ip + 1] = i .. ":" .. v end
print(table.concat(ip, " "))
local nested = { a = { b = { c = { 1, 2, { 3 } } } } }
print(nested.a.b.c[3][1], #nested.a.b.c)
print(next({}), type(next), rawlen({ 1, 2, 3 }), rawlen("abcd"))
local big = {}
for i = 1, 70 do big[#big + 1] = i end
print(#big, big[#big], select("#", table.unpack(big)))
local packed = table.pack(nil, nil)
print(packed.n, #packed)
local t2 = setmetatable({}, { __index = table })
t2:insert("via method")
print(t2[1], t2:concat())
