-- Reproduction 4 of issue 17: what the Rust side of the Lua guest copies escaped the
-- 8 MiB limit, and the instance trapped at its hard cap.
clm.tool_register("w", { invoke = function() local s, t = string.rep("w", 2^20), {}; for i = 1, 40 do t[i] = s end; warn(table.unpack(t)) end })
-- The same copy fails as an ordinary error, which pcall catches.
clm.tool_register("w_caught", { invoke = function(_, c)
  local s, t = string.rep("w", 2^20), {}
  for i = 1, 40 do t[i] = s end
  local ok, err = pcall(warn, table.unpack(t))
  c:complete(tostring(ok) .. " | " .. err)
end })
-- 40 header names mapped to one 1 MiB value.
clm.tool_register("h", { invoke = function(_, c)
  local v, headers = string.rep("h", 2^20), {}
  for i = 1, 40 do headers["x-header-" .. i] = v end
  http.get("http://127.0.0.1:1/", headers)
end })
clm.tool_register("copies_alive", { invoke = function(_, c) c:complete("alive") end })
