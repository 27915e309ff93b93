-- Results of parts meant to swamp the model: five images of 512 KiB (2.5 MiB against
-- the 1 MiB limit for a result's binary parts), 20000 parts, two text parts of 40 KiB.
local half_mib = string.rep("\137", 512 * 1024)

clm.tool_register("many_images", {
  invoke = function(_, ctx)
    local parts = {}
    for i = 1, 5 do
      parts[i] = { type = "image", data = half_mib, mime_type = "image/png" }
    end
    ctx:complete_content(parts)
  end,
})

clm.tool_register("many_parts", {
  invoke = function(_, ctx)
    local empty = { type = "text", text = "" }
    local parts = {}
    for i = 1, 20000 do
      parts[i] = empty
    end
    ctx:complete_content(parts)
  end,
})

clm.tool_register("long_texts", {
  invoke = function(_, ctx)
    local text = string.rep("x", 40 * 1024)
    ctx:complete_content({ { type = "text", text = text }, { type = "text", text = text } })
  end,
})
