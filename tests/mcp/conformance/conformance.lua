-- The tools the official MCP conformance suite (@modelcontextprotocol/conformance)
-- calls in the scenarios that apply to a tools-only server: see docs/mcp.md.

clm.tool_register("test_simple_text", {
  description = "Returns simple text",
  invoke = function(_, ctx)
    ctx:complete("This is a simple text response for testing.")
  end,
})

clm.tool_register("test_tool_with_logging", {
  description = "Logs three lines while it runs",
  invoke = function(_, ctx)
    ctx:log("Tool execution started")
    clm.sleep(50)
    ctx:log("Tool processing data")
    clm.sleep(50)
    ctx:log("Tool execution completed")
    ctx:complete("Logged three lines")
  end,
})

clm.tool_register("test_error_handling", {
  description = "Always fails",
  invoke = function(_, ctx)
    ctx:fail("This tool intentionally returns an error for testing")
  end,
})

-- Progress comes from the server (the seconds elapsed, first after 50 ms, then every
-- 0.5 s): the suite wants three notifications, so the call takes a little over 1 s.
clm.tool_register("test_tool_with_progress", {
  description = "Runs long enough to report progress three times",
  invoke = function(_, ctx)
    clm.sleep(1200)
    ctx:complete("Done")
  end,
})

clm.tool_register("json_schema_2020_12_tool", {
  description = "Tool with JSON Schema 2020-12 features",
  params_schema = {
    ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
    type = "object",
    ["$defs"] = {
      address = {
        ["$anchor"] = "addressDef",
        type = "object",
        properties = { street = { type = "string" }, city = { type = "string" } },
      },
    },
    properties = {
      name = { type = "string" },
      address = { ["$ref"] = "#/$defs/address" },
      contactMethod = { type = "string", enum = { "phone", "email" } },
      phone = { type = "string" },
      email = { type = "string" },
    },
    allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
    ["if"] = { properties = { contactMethod = { const = "phone" } }, required = { "contactMethod" } },
    ["then"] = { required = { "phone" } },
    ["else"] = { required = { "email" } },
    additionalProperties = false,
  },
  invoke = function(args, ctx)
    ctx:complete("Hello, " .. tostring(args.name))
  end,
})

-- A tool registered without a description: the suite's tools-list scenario must pass
-- with it too.
clm.tool_register("test_without_description", {
  invoke = function(_, ctx) ctx:complete("undescribed") end,
})

-- Logs while it runs: a 2026-07-28 request that set no log level must get no
-- notifications/message (server-stateless).
clm.tool_register("test_logging_tool", {
  description = "Logs a line",
  invoke = function(_, ctx)
    ctx:log("a line the client did not ask for")
    ctx:complete("logged")
  end,
})

-- Declares a custom header (SEP-2243): a 2026-07-28 request must carry its argument
-- `region` as the header `Mcp-Param-Region` too (http-custom-header-server-validation).
clm.tool_register("test_custom_header", {
  description = "Echoes its region, which comes as a header too",
  params_schema = {
    type = "object",
    properties = { region = { type = "string", ["x-mcp-header"] = "Region" } },
    required = { "region" },
  },
  invoke = function(args, ctx)
    ctx:complete("region " .. args.region)
  end,
})
