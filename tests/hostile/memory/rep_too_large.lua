-- string.rep asked for absurd sizes: larger than any string can be, and larger than
-- the plugin's memory. Both are ordinary, catchable errors.
clm.tool_register("rep", { invoke = function(_, ctx)
  local ok1, err1 = pcall(string.rep, "ab", 2^40)
  local ok2, err2 = pcall(string.rep, "x", 2^30)
  ctx:complete(tostring(ok1) .. " " .. err1 .. " | " .. tostring(ok2) .. " " .. err2)
end })
