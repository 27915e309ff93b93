-- A Lua plugin packed by toolcell with the toolcell:plugin@0.1.1 Lua guest, kept to show
-- that packed plugins carrying an older guest build keep loading.
clm.tool_register("legacy_hello", {
  description = "Greets from the 0.1.1 guest",
  invoke = function(args, ctx) ctx:complete("hello from the 0.1.1 guest") end,
})
clm.tool_register("legacy_nap", {
  description = "Sleeps, then completes (a resumed step)",
  invoke = function(args, ctx) clm.sleep(10); ctx:complete("rested") end,
})
clm.tool_register("legacy_fail", {
  description = "Fails on purpose",
  invoke = function(args, ctx) ctx:fail("refused by the tool") end,
})
clm.tool_register("legacy_hog", {
  description = "Runs out of Lua memory",
  invoke = function(args, ctx)
    local t = {}
    for i = 1, 1e9 do t[i] = string.rep("x", 100) .. i end
  end,
})
