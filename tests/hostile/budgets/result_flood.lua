-- Reproduction 2 of issue 17, results: no cap on what the model is handed, and
-- invalid UTF-8 tripled by its replacement.
clm.tool_register("o", { invoke = function(_, c) c:complete(string.rep("\xff", 3.5 * 2^20)) end })
-- The same with 1 MiB, which fits the memory limit once replaced: 3 MiB of U+FFFD.
clm.tool_register("o_fits", { invoke = function(_, c) c:complete(string.rep("\xff", 2^20)) end })
-- 100000 short lines.
clm.tool_register("o_lines", { invoke = function(_, c) c:complete(string.rep("line\n", 100000)) end })
