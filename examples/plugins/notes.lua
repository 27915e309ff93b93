-- Notes kept as files under the granted root (--root): clm.read_file / clm.write_file.
local function note_path(name)
  if type(name) ~= "string" or not name:match("^[%w_-]+$") then
    return nil, "a note name is letters, digits, '_' or '-'"
  end
  return "notes/" .. name .. ".txt"
end

clm.tool_register("note_write", {
  description = "Save a note under a name (replaces an older note of that name)",
  params_schema = {
    type = "object",
    properties = {
      name = { type = "string", description = "the note's name" },
      text = { type = "string", description = "what to keep" },
    },
    required = { "name", "text" },
  },
  invoke = function(args, ctx)
    local path, err = note_path(args.name)
    if not path then return ctx:fail(err) end
    local ok, write_err = clm.write_file(path, args.text)
    if not ok then return ctx:fail(write_err) end
    ctx:complete("saved " .. path)
  end,
})

clm.tool_register("note_read", {
  description = "Read a note saved with note_write",
  no_prompt = true,
  params_schema = {
    type = "object",
    properties = { name = { type = "string", description = "the note's name" } },
    required = { "name" },
  },
  invoke = function(args, ctx)
    local path, err = note_path(args.name)
    if not path then return ctx:fail(err) end
    local text, read_err = clm.read_file(path)
    if not text then return ctx:fail(read_err) end
    ctx:complete(text)
  end,
})
