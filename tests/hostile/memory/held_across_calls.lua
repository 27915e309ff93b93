-- Memory held across calls in a global: every call keeps 1 MiB more. The limit is
-- per plugin, not per call, so a later call fails; releasing the hoard gives the
-- memory back without a restart.
hoard = {}
clm.tool_register("hoard", { invoke = function(_, ctx)
  hoard[#hoard + 1] = string.rep(string.char(65 + #hoard), 1024 * 1024)
  ctx:complete(tostring(#hoard))
end })
clm.tool_register("release", { invoke = function(_, ctx)
  hoard = {}
  ctx:complete("released")
end })
