-- Reproduction 1, as 400 tools of one pattern each: `toolcell list` took 14.6 s and
-- 2.4 GB, and a hot reload did it again.
for j = 1, 400 do
  local pattern = "^[\\p{L}\\p{N}]{0,120}$" .. string.rep(" ", j)
  clm.tool_register("t" .. j, {
    params_schema = { type = "object", properties = { p = { type = "string", pattern = pattern } } },
    invoke = function(_, c) c:complete("x") end,
  })
end
clm.tool_register("tools_alive", { invoke = function(_, c) c:complete("alive") end })
