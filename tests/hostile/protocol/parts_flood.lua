-- Results of parts meant to swamp the host: one image of 6 MiB (its copy out of Lua
-- does not fit the memory limit), and parts that are not what they claim.
clm.tool_register("huge_image", {
  invoke = function(_, ctx)
    ctx:complete_content({ { type = "image", data = string.rep("\0", 6 * 2^20), mime_type = "image/png" } })
  end,
})
clm.tool_register("bad_part", {
  invoke = function(_, ctx)
    ctx:complete_content({ { type = "text", text = "fine" }, { type = "image", data = "x" } })
  end,
})
clm.tool_register("no_parts", {
  invoke = function(_, ctx)
    ctx:complete_content({})
  end,
})
clm.tool_register("parts_alive", {
  invoke = function(_, ctx)
    ctx:complete_content({ { type = "text", text = "alive" } })
  end,
})
