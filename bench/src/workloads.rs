//! The compute workloads of the comparison, as Lua code run unchanged on both sides.
//!
//! `setup` runs once, outside the measurement (for toolcell: at plugin load); `code` is
//! what is timed and returns a short value so both sides can be checked to compute the
//! same thing. Inputs come from a fixed-seed generator, so the work is identical run to
//! run.

/// How many of [`COMPUTE`], from the first, the median ratio's target (1.3x) is over:
/// issue 6's workloads, measured since the start; the later ones are Lua-bound plugin
/// code for the compiled column (issue 37).
pub const TARGET_WORKLOADS: usize = 7;

/// One compute workload.
pub struct Workload {
    /// Short name for the table.
    pub name: &'static str,
    /// Lua code run once before measuring; may define globals `code` uses.
    pub setup: &'static str,
    /// Lua code (a function body) whose result is a string or number.
    pub code: &'static str,
    /// Whether its time is Lua's own (not a C library function's): these also run
    /// compiled ahead of time (`toolcell pack --aot`) in `compare`.
    pub lua_bound: bool,
}

/// The compute workloads of issue 6 and, last, issue 37's plugin-like Lua, in table
/// order.
pub const COMPUTE: &[Workload] = &[
    Workload {
        name: "fib(30)",
        setup: "",
        code: "local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
               return fib(30)",
        lua_bound: true,
    },
    Workload {
        name: "200k string.format + concat",
        setup: "",
        code: "local parts = {}
               for i = 1, 200000 do parts[i] = string.format('%d:%s', i, 'item') end
               return #table.concat(parts, ',')",
        lua_bound: false,
    },
    Workload {
        name: "table.sort 200k numbers",
        setup: "",
        code: "local t, x = {}, 42
               for i = 1, 200000 do x = (x * 1103515245 + 12345) % 2147483648; t[i] = x end
               table.sort(t)
               return t[1] .. ' ' .. t[200000]",
        lua_bound: false,
    },
    Workload {
        name: "5M integer additions",
        setup: "",
        code: "local sum = 0
               for i = 1, 5000000 do sum = sum + i end
               return sum",
        lua_bound: true,
    },
    Workload {
        name: "gsub/find over 1 MB",
        setup: "TEXT_1MB = string.rep('hello world, ', 80660)",
        code: "local s = TEXT_1MB
               local _, count = s:gsub('o', '0')
               local found = 0
               for _ in s:gmatch('world') do found = found + 1 end
               return count .. ' ' .. found .. ' ' .. tostring(s:find('xyz', 1, true))",
        lua_bound: false,
    },
    Workload {
        name: "json.encode 1 MB",
        setup: "DOC = { items = {} }
                for i = 1, 9000 do
                  DOC.items[i] = { id = i, name = 'item number ' .. i, tags = { 'alpha', 'beta' },
                                   score = i * 1.5, ok = i % 2 == 0 }
                end",
        code: "return #json.encode(DOC)",
        lua_bound: false,
    },
    Workload {
        name: "json.decode 1 MB",
        setup: "local items = {}
                for i = 1, 9000 do
                  items[i] = { id = i, name = 'item number ' .. i, tags = { 'alpha', 'beta' },
                               score = i * 1.5, ok = i % 2 == 0 }
                end
                DOC_TEXT = json.encode({ items = items })",
        code: "return #json.decode(DOC_TEXT).items",
        lua_bound: false,
    },
    Workload {
        name: "JSON-like parser in Lua",
        setup: "local items = {}
                for i = 1, 3000 do
                  items[i] = { id = i, name = 'item \\\"' .. i .. '\\\"', tags = { 'alpha', 'beta' },
                               score = i * 1.5, ok = i % 2 == 0, note = json.null }
                end
                PARSE_TEXT = json.encode({ items = items })",
        code: "local s, pos = PARSE_TEXT, 1
               local byte, sub, find, tonumber = string.byte, string.sub, string.find, tonumber
               local value
               local function space()
                 local c = byte(s, pos)
                 while c == 32 or c == 10 or c == 13 or c == 9 do pos = pos + 1; c = byte(s, pos) end
                 return c
               end
               local function str()
                 local start, parts = pos + 1, nil
                 while true do
                   local stop = find(s, '[\"\\\\]', start)
                   if byte(s, stop) == 34 then
                     local piece = sub(s, start, stop - 1)
                     pos = stop + 1
                     if parts then parts[#parts + 1] = piece; return table.concat(parts) end
                     return piece
                   end
                   parts = parts or {}
                   parts[#parts + 1] = sub(s, start, stop - 1)
                   parts[#parts + 1] = sub(s, stop + 1, stop + 1)
                   start = stop + 2
                 end
               end
               function value()
                 local c = space()
                 if c == 123 then
                   local t = {}
                   pos = pos + 1
                   if space() == 125 then pos = pos + 1; return t end
                   while true do
                     space()
                     local k = str()
                     space(); pos = pos + 1
                     t[k] = value()
                     local d = space(); pos = pos + 1
                     if d == 125 then return t end
                   end
                 elseif c == 91 then
                   local t, n = {}, 0
                   pos = pos + 1
                   if space() == 93 then pos = pos + 1; return t end
                   while true do
                     n = n + 1; t[n] = value()
                     local d = space(); pos = pos + 1
                     if d == 93 then return t end
                   end
                 elseif c == 34 then return str()
                 elseif c == 116 then pos = pos + 4; return true
                 elseif c == 102 then pos = pos + 5; return false
                 elseif c == 110 then pos = pos + 4; return nil
                 else
                   local stop = find(s, '[,}%]%s]', pos) or #s + 1
                   local n = tonumber(sub(s, pos, stop - 1))
                   pos = stop
                   return n
                 end
               end
               local doc = value()
               local sum = 0
               for _, item in ipairs(doc.items) do sum = sum + item.score + #item.name + #item.tags end
               return #doc.items .. ' ' .. sum",
        lua_bound: true,
    },
    Workload {
        name: "string.byte + table buffers",
        setup: "local words = { 'alpha', 'Beta', 'gamma-ray', 'delta', 'EPSILON', 'zeta_9', 'eta' }
                local parts = {}
                for i = 1, 40000 do parts[i] = words[i % #words + 1] end
                WORDS_TEXT = table.concat(parts, ' ')",
        code: "local s = WORDS_TEXT
               local byte, char, concat = string.byte, string.char, table.concat
               local out, n, counts, word, w = {}, 0, {}, {}, 0
               for i = 1, #s do
                 local c = byte(s, i)
                 if c >= 65 and c <= 90 then c = c + 32 end
                 if (c >= 97 and c <= 122) or (c >= 48 and c <= 57) then
                   w = w + 1; word[w] = c
                 else
                   if w > 0 then
                     local key = char(table.unpack(word, 1, w))
                     counts[key] = (counts[key] or 0) + 1
                     w = 0
                   end
                   c = 95
                 end
                 n = n + 1; out[n] = c
               end
               local kinds = 0
               for _ in pairs(counts) do kinds = kinds + 1 end
               local chunks, from = {}, 1
               while from <= n do
                 local to = math.min(from + 199, n)
                 chunks[#chunks + 1] = char(table.unpack(out, from, to))
                 from = to + 1
               end
               return kinds .. ' ' .. #concat(chunks)",
        lua_bound: true,
    },
];
