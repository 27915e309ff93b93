-- The conformance suite's tools that ask through input-required results, protocol
-- 2026-07-28 (input-required-result-*, and server-stateless's
-- test_streaming_elicitation): see docs/mcp.md. Each form names its question with
-- x-toolcell-key, the key the scenario expects in inputRequests and inputResponses.

-- Asks `message` with one field; the answer, or the call fails with why not.
local function ask(ctx, key, message, field, kind)
  local answer, why = ctx:ask(message, {
    ["x-toolcell-key"] = key,
    type = "object",
    properties = { [field] = { type = kind } },
    required = { field },
  })
  if not answer then
    ctx:fail("no answer: " .. why)
  end
  return answer[field]
end

clm.tool_register("test_input_required_result_elicitation", {
  description = "Asks the user's name, then greets them",
  invoke = function(_, ctx)
    local name = ask(ctx, "user_name", "What is your name?", "name", "string")
    ctx:complete("Hello, " .. name .. "!")
  end,
})

clm.tool_register("test_input_required_result_request_state", {
  description = "Asks for a confirmation; the state comes back verified",
  invoke = function(_, ctx)
    local ok = ask(ctx, "confirm", "Please confirm", "ok", "boolean")
    ctx:complete("state-ok: confirmed " .. tostring(ok))
  end,
})

clm.tool_register("test_input_required_result_multi_round", {
  description = "Asks two questions, one after the other",
  invoke = function(_, ctx)
    local name = ask(ctx, "step1", "Step 1: What is your name?", "name", "string")
    local color = ask(ctx, "step2", "Step 2: What is your favorite color?", "color", "string")
    ctx:complete(name .. " likes " .. color)
  end,
})

clm.tool_register("test_input_required_result_tampered_state", {
  description = "Asks for a confirmation; a tampered state is refused",
  invoke = function(_, ctx)
    local ok = ask(ctx, "confirm", "Please confirm", "ok", "boolean")
    ctx:complete("confirmed " .. tostring(ok))
  end,
})

clm.tool_register("test_streaming_elicitation", {
  description = "Asks the user something: the answer comes by input-required result",
  invoke = function(_, ctx)
    local name = ask(ctx, "user_name", "What is your name?", "name", "string")
    ctx:complete("Hello, " .. name .. "!")
  end,
})
