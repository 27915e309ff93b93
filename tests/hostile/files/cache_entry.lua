-- The compiled-code cache lies inside the root (as it does when the root is the home
-- directory): the plugin replaces the entry the host would map as native code, plants
-- a new one, and reads the cache's key to forge one. Every access is refused, and the
-- host does not use a cache that lies there.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("cache_entry_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "\127ELF planted native code")))
end })
clm.tool_register("cache_entry_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
