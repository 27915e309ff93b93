-- Integer and float arithmetic, conversions, comparisons and their edge cases.
local maxi, mini = math.maxinteger, math.mininteger
print(maxi, mini, maxi + 1 == mini, mini - 1 == maxi, -mini == mini)
print(7 // 2, -7 // 2, 7 // -2, 7.0 // 2, -7 // 2.0, 7 % 3, -7 % 3, 7 % -3, -7 % -3)
print(7.5 % 2, -7.5 % 2, 7.5 % -2, 5 % math.huge, -5 % math.huge, 5.0 % -math.huge)
print(2^10, 2^0.5, (-8)^(1/3) ~= (-8)^(1/3), 10 / 4, 3 / 0, -3 / 0, 0/0 ~= 0/0)
print(1e308 * 10, -1e308 * 10, 1 / math.huge, -1 / math.huge, 1e-320 / 10)
print(3 | 5, 3 & 5, 3 ~ 5, ~0, 1 << 63, 1 << 64, -1 >> 1, -1 >> 63, 1 << -1, 8 >> -2)
print("10" + 5, "3.5" * 2, 10 .. 20, "0x10" + 0, " 12 " + 1, "1e2" * 1)
print(math.type(1), math.type(1.0), math.type("1"), math.type(2^53), math.type(1 // 1))
print(1 == 1.0, math.maxinteger + 0.0 == math.maxinteger, 2^53 == 2^53 + 1)
print(1 < 1.5, -1 > -1.5, maxi < math.huge, mini > -math.huge, maxi + 0.0 > maxi)
print(math.tointeger(3.0), math.tointeger(3.5), math.tointeger("8"), math.tointeger(2^63))
print(3 == 3.0000000000000001, 0.1 + 0.2 == 0.3, 0.1 + 0.2, 100000000000000)
print(1e15, 1e16, 123456789012345678, 0.1, -0.0, 1/(-0.0), 2^63, -2^63, 2^-1074)
print(tostring(1e100), tostring(-1.5e-7), tostring(12.0), tostring(-0.0 + 0))
print(tonumber("0x1p4"), tonumber("  0X1F  "), tonumber("1e"), tonumber(""), tonumber("inf"))
print(tonumber("10", 2), tonumber("ff", 16), tonumber("zz", 36), tonumber("8", 8), tonumber("7fffffffffffffff", 16))
print(tonumber("9223372036854775807"), tonumber("9223372036854775808"), tonumber("-9223372036854775808"))
print(0x7fffffffffffffff, 0xffffffffffffffff, 0x10000000000000000, 1e1000, -1e1000)
print(string.format("%.17g %.17g %.3f %5.1f|%-8d|%+d", 0.1, 1/3, 2/3, -1.25, 42, 7))
print(string.format("%x %X %o %c%c %e %g %g", 255, 3054, 8, 76, 117, 12345.678, 1e20, 0.0001))
print(math.floor(-3.5), math.ceil(-3.5), math.floor(3), math.ceil(2^60 + 0.0), math.floor(-0.0))
print(math.fmod(7, 3), math.fmod(-7, 3), math.fmod(7, -3), math.fmod(7.5, 2), math.fmod(-6, 2))
print(pcall(math.fmod, 1, 0))
print(math.fmod(1, 0.0) ~= math.fmod(1, 0.0), math.fmod(mini, -1), mini // -1, mini % -1)
print(math.modf(3.7), math.modf(-3.7), math.modf(5), math.modf(math.huge), math.modf(-math.huge))
print(math.abs(mini), math.abs(-0.0), math.abs(-3), math.max(1, 2.5, -1), math.min(3, 1.0, 2))
print(math.ult(1, -1), math.ult(-1, 1), math.sqrt(16), math.sqrt(2), math.pi)
print(string.format("%.10g %.10g %.10g %.10g", math.exp(1), math.log(10), math.log(8, 2), math.log(100, 10)))
print(string.format("%.10g %.10g %.10g", math.sin(1), math.cos(1), math.tan(1)))
print(string.format("%.10g %.10g %.10g", math.asin(0.5), math.acos(0.5), math.atan(1, 2)))
for _, s in ipairs({ "1", "1.0", "-0", "0x", "1e+", ".5", "5.", "0x.8", "1 2", "- 1", "0x1P-2" }) do
  print(s, tonumber(s), math.type(tonumber(s)))
end
for _, e in ipairs({ "1 // 0", "1 % 0", "1 < 'x'", "{} + 1", "'a' + 1", "2^53 | 0", "1.5 | 0", "'1.5' | 0", "-nil" }) do
  local f = ({
    ["1 // 0"] = function() return 1 // 0 end,
    ["1 % 0"] = function() return 1 % 0 end,
    ["1 < 'x'"] = function() return 1 < "x" end,
    ["{} + 1"] = function() return {} + 1 end,
    ["'a' + 1"] = function() return "a" + 1 end,
    ["2^53 | 0"] = function() return 2^53 | 0 end,
    ["1.5 | 0"] = function() return 1.5 | 0 end,
    ["'1.5' | 0"] = function() return "1.5" | 0 end,
    ["-nil"] = function() return -nil end,
  })[e]
  print(e, pcall(f))
end
local acc = 0
for i = 1, 100 do acc = acc + i * i - (i // 3) * 2 + (i % 7) end
print(acc, acc / 7, acc // 7.0, acc ~ 0xff, acc << 3 >> 1)
