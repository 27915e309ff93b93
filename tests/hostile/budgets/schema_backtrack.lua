-- Reproduction 1 of issue 33: a back-reference makes a pattern backtrack. Against an
-- output of 1000 strings of 25 `a`s and `!`, this output schema took 32-38 s of host
-- CPU after the call ended, outside its deadline; the same pattern in a params_schema
-- 15-22 s before the plugin ran. Both tools must be refused at load, the second too
-- (a refused pattern once let the next tool that used it through).
local backtracking = "^(a|a)*\\1b"
clm.tool_register("flood_out", {
  output_schema = { type = "array", items = { type = "string", pattern = backtracking } },
  invoke = function(_, c)
    local items = {}
    for i = 1, 1000 do items[i] = string.rep("a", 25) .. "!" end
    c:complete(json.encode(items))
  end,
})
clm.tool_register("flood_in", {
  params_schema = { type = "object", properties = { s = { type = "array", items = { type = "string", pattern = backtracking } } } },
  invoke = function(_, c) c:complete("ran") end,
})
clm.tool_register("backtrack_alive", { invoke = function(_, c) c:complete("alive") end })
