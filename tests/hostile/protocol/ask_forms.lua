-- Forms no user should be shown: nested, self-referencing, oversized, too many fields,
-- defaults of the wrong type. The host refuses each before anyone is asked; a message
-- that is not a string raises in the plugin.
local function field_list(n)
  local properties = {}
  for i = 1, n do properties["f" .. i] = { type = "string" } end
  return properties
end
local forms = {
  { type = "object", properties = { inner = { type = "object", properties = {} } } },
  { type = "object", properties = { a = { type = "string", ["$ref"] = "#" } } },
  { type = "object", properties = { a = { type = "string", description = string.rep("x", 20000) } } },
  { type = "object", properties = field_list(33) },
  { type = "object", properties = { a = { type = "integer", default = "one" } } },
  { type = "array" },
}
clm.tool_register("bad_forms", {
  invoke = function(_, ctx)
    local reasons = {}
    for i, form in ipairs(forms) do
      local answer, why = ctx:ask("Fill me in", form)
      reasons[i] = tostring(answer) .. ": " .. why
    end
    ctx:complete(table.concat(reasons, "\n"))
  end,
})
clm.tool_register("bad_message", {
  invoke = function(_, ctx)
    ctx:ask({}, forms[1])
  end,
})
