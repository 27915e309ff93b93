//! The compute workloads of the comparison, as Lua code run unchanged on both sides.
//!
//! `setup` runs once, outside the measurement (for toolcell: at plugin load); `code` is
//! what is timed and returns a short value so both sides can be checked to compute the
//! same thing. Inputs come from a fixed-seed generator, so the work is identical run to
//! run.

/// One compute workload.
pub struct Workload {
    /// Short name for the table.
    pub name: &'static str,
    /// Lua code run once before measuring; may define globals `code` uses.
    pub setup: &'static str,
    /// Lua code (a function body) whose result is a string or number.
    pub code: &'static str,
}

/// The compute workloads of issue 6, in table order.
pub const COMPUTE: &[Workload] = &[
    Workload {
        name: "fib(30)",
        setup: "",
        code: "local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
               return fib(30)",
    },
    Workload {
        name: "200k string.format + concat",
        setup: "",
        code: "local parts = {}
               for i = 1, 200000 do parts[i] = string.format('%d:%s', i, 'item') end
               return #table.concat(parts, ',')",
    },
    Workload {
        name: "table.sort 200k numbers",
        setup: "",
        code: "local t, x = {}, 42
               for i = 1, 200000 do x = (x * 1103515245 + 12345) % 2147483648; t[i] = x end
               table.sort(t)
               return t[1] .. ' ' .. t[200000]",
    },
    Workload {
        name: "5M integer additions",
        setup: "",
        code: "local sum = 0
               for i = 1, 5000000 do sum = sum + i end
               return sum",
    },
    Workload {
        name: "gsub/find over 1 MB",
        setup: "TEXT_1MB = string.rep('hello world, ', 80660)",
        code: "local s = TEXT_1MB
               local _, count = s:gsub('o', '0')
               local found = 0
               for _ in s:gmatch('world') do found = found + 1 end
               return count .. ' ' .. found .. ' ' .. tostring(s:find('xyz', 1, true))",
    },
    Workload {
        name: "json.encode 1 MB",
        setup: "DOC = { items = {} }
                for i = 1, 9000 do
                  DOC.items[i] = { id = i, name = 'item number ' .. i, tags = { 'alpha', 'beta' },
                                   score = i * 1.5, ok = i % 2 == 0 }
                end",
        code: "return #json.encode(DOC)",
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
    },
];
