-- The utf8 library.
local s = "héllo wörld ☃ 𝄞"
print(#s, utf8.len(s), utf8.char(72, 233, 0x2603, 0x1D11E), utf8.charpattern)
local cps = {}
for p, c in utf8.codes(s) do cps[#cps + 1] = p .. ":" .. c end
print(table.concat(cps, " "))
print(utf8.codepoint(s, 1, 3), utf8.codepoint(s, -4))
print(utf8.offset(s, 3), utf8.offset(s, -1), utf8.offset(s, 0, 3), utf8.offset(s, 100))
print(utf8.len("\xff"), utf8.len("abc\xe4"), utf8.len(s, 3), utf8.len(s, -4), utf8.len(""))
print(pcall(utf8.codepoint, "\xff"), pcall(utf8.len, s, 100))
print(utf8.len("\u{7FFFFFFF}", 1, -1, true), utf8.len("\u{7FFFFFFF}"), #utf8.char(0x7FFFFFFF))
print(pcall(utf8.char, 0x80000000), utf8.char(), #utf8.char(0x10FFFF))
local lax = {}
for p, c in utf8.codes("\u{D800}", true) do lax[#lax + 1] = c end
print(table.concat(lax, " "), pcall(function() for _ in utf8.codes("\u{D800}") do end end))
for w in s:gmatch(utf8.charpattern) do cps[#cps + 1] = w end
print(#cps)
print(("\u{48}\u{49}"), "\u{10FFFF}" == utf8.char(0x10FFFF), "\z
       continued")
