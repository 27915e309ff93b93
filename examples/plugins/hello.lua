-- The man page's example (clm-tool(5)): greet someone.
clm.tool_register("hello", {
  description = "Say hello to someone",
  params_schema = {
    type = "object",
    properties = {
      name = { type = "string", description = "who to greet" },
    },
    required = { "name" },
  },
  invoke = function(args, ctx)
    ctx:complete("Hello, " .. args.name .. "!")
  end,
})
