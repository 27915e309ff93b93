-- math.random with a given seed: the same xoshiro256** sequence on every platform.
math.randomseed(42)
local draws = {}
for i = 1, 10 do draws[i] = math.random(1, 1000) end
print(table.concat(draws, " "))
math.randomseed(42, 7)
print(math.random(0), math.random(1 << 40), math.random(-5, 5), math.random(math.mininteger, math.maxinteger))
math.randomseed(1)
local floats = {}
for i = 1, 5 do floats[i] = string.format("%.17g", math.random()) end
print(table.concat(floats, " "))
print(pcall(math.random, 1, 2, 3), pcall(math.random, 0), math.random(3, 3))
local seeded = { math.randomseed(123) }
print(#seeded, seeded[1], seeded[2])
