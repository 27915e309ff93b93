-- A plugin that asks its user in a loop. Here nobody can be asked, so each question
-- comes back unanswered at once; past the call's limit of questions the host refuses
-- the next one without asking anybody.
local form = { type = "object", properties = { again = { type = "boolean" } } }
clm.tool_register("ask_loop", {
  invoke = function(_, ctx)
    local count, why = 0, nil
    repeat
      count = count + 1
      local _
      _, why = ctx:ask("Again?", form)
    until count == 1000 or why:find("too many questions", 1, true)
    ctx:complete(count .. ": " .. why)
  end,
})
