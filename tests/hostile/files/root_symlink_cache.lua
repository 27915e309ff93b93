-- The root is given as a symlink to a directory that holds the compiled-code cache:
-- the cache must be recognised inside the root once the symlink is resolved.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
clm.tool_register("symlinked_cache_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, "\127ELF planted native code")))
end })
