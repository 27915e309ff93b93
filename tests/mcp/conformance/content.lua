-- The conformance suite's tools that return content parts and ask the user
-- (tools-call-image, -audio, -embedded-resource, -mixed-content, tools-call-elicitation,
-- elicitation-sep1034-defaults, elicitation-sep1330-enums): see docs/mcp.md.

-- A 1x1 red pixel PNG, and a WAV file of one silent sample.
local PNG = "\137PNG\r\n\26\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\8\2\0\0\0\144wS\222\0\0\0\12IDATx\156c\248\207\192\0\0\3\1\1\0\201\254\146\239"
  .. "\0\0\0\0IEND\174B`\130"
local WAV = "RIFF&\0\0\0WAVEfmt \16\0\0\0\1\0\1\0\64\31\0\0\128>\0\0\2\0\16\0data\2\0\0\0\0\0"

clm.tool_register("test_image_content", {
  description = "Returns an image",
  invoke = function(_, ctx)
    ctx:complete_content({ { type = "image", data = PNG, mime_type = "image/png" } })
  end,
})

clm.tool_register("test_audio_content", {
  description = "Returns an audio clip",
  invoke = function(_, ctx)
    ctx:complete_content({ { type = "audio", data = WAV, mime_type = "audio/wav" } })
  end,
})

clm.tool_register("test_embedded_resource", {
  description = "Returns an embedded resource",
  invoke = function(_, ctx)
    ctx:complete_content({
      { type = "resource", uri = "test://embedded-resource", mime_type = "text/plain",
        text = "This is an embedded resource content." },
    })
  end,
})

clm.tool_register("test_multiple_content_types", {
  description = "Returns text, an image and a resource",
  invoke = function(_, ctx)
    ctx:complete_content({
      { type = "text", text = "Multiple content types test:" },
      { type = "image", data = PNG, mime_type = "image/png" },
      { type = "resource", uri = "test://mixed-content-resource", mime_type = "application/json",
        text = '{"test":"data","value":123}' },
    })
  end,
})

-- "Elicitation completed: action=accept, content={...}", or the action the user took.
local function elicit(ctx, message, form, prefix)
  local answer, why = ctx:ask(message, form)
  if answer then
    return ctx:complete(prefix .. "action=accept, content=" .. json.encode(answer))
  end
  if why == "declined" then
    return ctx:complete(prefix .. "action=decline")
  end
  if why == "cancelled" then
    return ctx:complete(prefix .. "action=cancel")
  end
  ctx:fail(why)
end

clm.tool_register("test_elicitation", {
  description = "Asks the user for a username and an email address",
  params_schema = {
    type = "object",
    properties = { message = { type = "string", description = "The message to show the user" } },
    required = { "message" },
  },
  invoke = function(args, ctx)
    elicit(ctx, args.message, {
      type = "object",
      properties = {
        username = { type = "string", description = "User's response" },
        email = { type = "string", description = "User's email address" },
      },
      required = { "username", "email" },
    }, "User response: ")
  end,
})

clm.tool_register("test_elicitation_sep1034_defaults", {
  description = "Asks with a default for every primitive type",
  invoke = function(_, ctx)
    elicit(ctx, "Please review and update the form fields with defaults", {
      type = "object",
      properties = {
        name = { type = "string", description = "User name", default = "John Doe" },
        age = { type = "integer", description = "User age", default = 30 },
        score = { type = "number", description = "User score", default = 95.5 },
        status = { type = "string", description = "User status", enum = { "active", "inactive", "pending" },
                   default = "active" },
        verified = { type = "boolean", description = "Verification status", default = true },
      },
    }, "Elicitation completed: ")
  end,
})

clm.tool_register("test_elicitation_sep1330_enums", {
  description = "Asks with every kind of enum",
  invoke = function(_, ctx)
    elicit(ctx, "Please select options from the enum fields", {
      type = "object",
      properties = {
        untitledSingle = { type = "string", enum = { "option1", "option2", "option3" } },
        titledSingle = { type = "string", oneOf = {
          { const = "value1", title = "First Option" },
          { const = "value2", title = "Second Option" },
          { const = "value3", title = "Third Option" },
        } },
        legacyEnum = { type = "string", enum = { "opt1", "opt2", "opt3" },
                       enumNames = { "Option One", "Option Two", "Option Three" } },
        untitledMulti = { type = "array", items = { type = "string", enum = { "option1", "option2", "option3" } } },
        titledMulti = { type = "array", items = { anyOf = {
          { const = "value1", title = "First Choice" },
          { const = "value2", title = "Second Choice" },
          { const = "value3", title = "Third Choice" },
        } } },
      },
    }, "Elicitation completed: ")
  end,
})
