-- Reproduction 3 of issue 17: with a debug log, ctx:log wrote without a cap, and a
-- message of newlines grew 34 times through the per-line prefix. (A deadline of
-- 2 s instead of the default 30 s keeps the test short.)
clm.tool_register("l", { timeout_ms = 2000, invoke = function(_, c) local s = string.rep("\n", 3e6); while true do c:log(s) end end })
clm.tool_register("log_alive", { invoke = function(_, c) print("still logging"); c:complete("alive") end })
