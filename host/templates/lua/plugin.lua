-- {{name}}: a toolcell plugin in Lua (the clm tool API, clm-tool(5)).
-- The API reference: {{reference}}
-- Test it with ./test.sh; pack it into one .wasm with `toolcell pack {{name}}.lua`.

clm.tool_register("{{tool}}", {
  description = "Greet someone by name",
  params_schema = {
    type = "object",
    properties = {
      name = { type = "string", description = "who to greet" },
    },
    required = { "name" },
  },
  invoke = function(args, ctx)
    -- The result is a string: ctx:complete ends the call, ctx:fail reports a failure.
    ctx:complete("Hello, " .. args.name .. "!")
  end,
})
