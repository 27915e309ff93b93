-- The string library: bytes, formatting, packing, and pattern matching.
local s = "Hello, World! 123"
print(#s, s:len(), s:upper(), s:lower(), s:reverse(), s:sub(1, 5), s:sub(-3), s:sub(8, -8), s:sub(0), s:sub(100), s:sub(-100, 2))
print(s:byte(1), s:byte(-1), s:byte(1, 3), s:byte(100), string.char(72, 105), string.char())
print(("ab"):rep(3), ("ab"):rep(3, ","), ("x"):rep(0), ("x"):rep(1, "sep"), (""):rep(5))
print(string.format("[%5s][%-5s][%.2s][%5.1s]", "ab", "ab", "abc", "xyz"))
print(string.format("%q", "line\nbreak\r\0\1\127\200\255"), string.format("%q", 255), string.format("%q", math.huge), string.format("%q", -math.huge))
print(string.format("%i %u %5.2f %-5d| %05d %x %#x %#o %e %.0f %.0f", 5, 7, math.pi, 3, 42, 255, 255, 8, 0.5, 0.5, 1.5))
print(string.format("%s %s %s %s", nil, true, 12, 1.5), string.format("%%"), string.format("%10.4s|", "abcdef"))
print(string.format("%a %A", 1.0, 0.5), string.format("%.3a", math.pi))
print(string.format("%g %g %g %g %g", 100000, 1e6, 1e-4, 1e-5, 123456789))
print(string.format("%c", 0) == "\0", #string.format("%099d", 1))
local packed = string.pack("i4 i8 d s1 z B h", -2, math.maxinteger, 1.5, "hi", "zt", 255, -300)
print(#packed, string.unpack("i4 i8 d s1 z B h", packed))
print(string.packsize("i4 i8 d"), string.pack(">I2", 258):byte(1, -1), string.pack("<I2", 258):byte(1, -1))
print(pcall(string.pack, "i17", 1), pcall(string.unpack, "i4", "ab"))
print(string.pack("=!4 i1 i4", 1, 2):byte(1, -1))
local patterns = {
  { "hello world", "o" }, { "hello world", "o", 6 }, { "hello world", "l+" }, { "hello world", "^h" },
  { "hello world", "^w" }, { "hello world", "d$" }, { "hello", "(h)(e)(l+)" }, { "key = value", "(%w+)%s*=%s*(%w+)" },
  { "a.b.c", "%." }, { "a.b.c", ".", 1, true }, { "f(a(b)c)d", "%b()" }, { "THE (quick) fox", "%f[%a]%a+" },
  { "aaa", "a-" }, { "aaa", "a-$" }, { "aaa", "a*" }, { "aaa", "a?" }, { "x = 10, y = 20", "()=" },
  { "abcabc", "(abc)%1" }, { "[test]", "[%[%]]" }, { "tab\there", "%c" }, { "αβγ", "[\128-\191]+" },
  { "12ab", "%d+%a*" }, { "  trim  ", "^%s*(.-)%s*$" }, { "hello", "" }, { "", "x*" }, { "hello", "l", -2 },
}
for i, p in ipairs(patterns) do
  print(i, string.find(table.unpack(p)))
  print(i, string.match(p[1], p[2], p[3]))
end
local words = {}
for w in ("one two  three"):gmatch("%a+") do words[#words + 1] = w end
print(table.concat(words, "|"))
for k, v in ("a=1, b=2, c=3"):gmatch("(%w+)=(%w+)") do words[#words + 1] = k .. v end
print(table.concat(words, "|"))
for pos in ("abc"):gmatch("()") do words[#words + 1] = pos end
print(table.concat(words, "|"))
print(("hello world"):gsub("o", "0"), ("hello world"):gsub("o", "0", 1), ("hello"):gsub("", "-"))
print(("hello world"):gsub("(%w+) (%w+)", "%2 %1"), ("abc"):gsub("%w", "%0%0"), ("abc"):gsub(".", { a = 1, b = false }))
print(("abc"):gsub(".", function(c) if c == "b" then return nil end return c:upper() end))
print(("x = 1"):gsub("%s", "%%"), pcall(string.gsub, "x", "x", "%2"), pcall(string.gsub, "x", "(", ""))
print(pcall(string.find, "x", "[a"), pcall(string.find, "x", "%"), pcall(string.match, "x", "(()"))
print(("%d"):rep(3, " "), ("CamelCaseString"):gsub("(%u)", " %1"), ("  x  y  "):gsub("^%s+", ""))
print(string.find("abc", "b", 10), string.find("abc", "", 10), string.find("abc", "", 4), string.find("abc", "", -10))
print(("test123"):match("^(%a+)(%d+)$"), ("2024-01-15"):match("(%d+)-(%d+)-(%d+)"))
print(tostring(nil), tostring(true), tostring(123), tostring(-0.5), tostring("s"))
print(("a,b,,c"):gsub(",", ";"), ("path/to/file.txt"):match("([^/]+)$"), ("path/to/file.txt"):match("(.+)%..+$"))
local parts = {}
for field in ("a,b,,c,"):gmatch("([^,]*)") do parts[#parts + 1] = "<" .. field .. ">" end
print(table.concat(parts))
print(("abc"):byte(-10, 10), ("\0\1\2"):byte(1, -1))
print(("x"):rep(3) < ("x"):rep(4), "a" < "b", "Z" < "a", "" < "a", "abc" == "ab" .. "c")
