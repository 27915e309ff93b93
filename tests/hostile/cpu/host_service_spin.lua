-- Loops of host services and the runtime's own work, whose cost the VM's instruction
-- count does not see: a file read with a 2 MiB path made anew each time or made once,
-- a 64 KiB file written over and over, json.decode of a 150 KB document. The services
-- charge their cost to the deadline check, so every call times out and the plugin
-- keeps its state (the counter).
calls = 0
clm.tool_register("read_spin", { timeout_ms = 300, invoke = function(_, ctx)
  calls = calls + 1
  while true do clm.read_file(string.rep("a", 2 * 1024 * 1024)) end
end })
clm.tool_register("read_spin_kept", { timeout_ms = 300, invoke = function(_, ctx)
  calls = calls + 1
  local path = string.rep("a", 2 * 1024 * 1024)
  while true do clm.read_file(path) end
end })
clm.tool_register("write_spin", { timeout_ms = 300, invoke = function(_, ctx)
  calls = calls + 1
  local content = string.rep("x", 64 * 1024)
  while true do clm.write_file("spin.txt", content) end
end })
clm.tool_register("decode_spin", { timeout_ms = 300, invoke = function(_, ctx)
  calls = calls + 1
  local items = {}
  for i = 1, 5000 do items[i] = { id = i, name = "item " .. i } end
  local document = json.encode({ items = items })
  items = nil
  while true do json.decode(document) end
end })
clm.tool_register("service_calls", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
