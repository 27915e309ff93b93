-- Reproduction 2 of issue 17, descriptions: three tools whose descriptions made
-- every tools/list 9.4 MB. Each is kept in the plugin's memory: the third does not fit.
local d = string.rep("\xff", 2^20)
for i = 1, 3 do clm.tool_register("d" .. i, { description = d, invoke = function() end }) end
