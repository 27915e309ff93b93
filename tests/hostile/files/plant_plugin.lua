-- The plugin directory lies inside the root: the plugin plants a new plugin (which
-- `serve --watch` would load at once), replaces itself or another plugin (whose id
-- may carry wider grants), and reads another plugin's source.
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
local planted = 'clm.tool_register("planted", { invoke = function(_, ctx) ctx:complete("pwned") end })'
clm.tool_register("plant_write", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, planted)))
end })
clm.tool_register("plant_read", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
