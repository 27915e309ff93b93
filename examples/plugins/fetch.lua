-- Fetch several URLs at once: one task per URL (clm.spawn), joined with clm.await_all.
-- Each URL gets a line with its status and size, or why it failed: one failure does not
-- stop the others. Requests reach the hosts the user's policy allows (loopback and
-- private addresses only with --allow-http).
local MAX_URLS = 8 -- the most requests a plugin may have in flight at once

clm.tool_register("fetch_all", {
  description = "Fetch up to 8 URLs at once and report each one's status and size",
  no_prompt = true,
  params_schema = {
    type = "object",
    properties = {
      urls = {
        type = "array",
        items = { type = "string" },
        minItems = 1,
        maxItems = MAX_URLS,
        description = "absolute http or https URLs",
      },
    },
    required = { "urls" },
  },
  invoke = function(args, ctx)
    local started = clm.time()
    local tasks = {}
    for i, url in ipairs(args.urls) do
      tasks[i] = clm.spawn(function()
        local resp, err = http.get(url)
        -- Raise the error: a task that returned `nil, err` would succeed, with the
        -- array {nil, err} as its value.
        if not resp then error(err, 0) end
        return resp
      end)
    end
    local lines = {}
    for i, outcome in ipairs(clm.await_all(tasks)) do
      if outcome.ok then
        local resp = outcome.value
        lines[i] = string.format("%s: %d, %d bytes", args.urls[i], resp.status, #resp.body)
      else
        lines[i] = string.format("%s: failed: %s", args.urls[i], outcome.error)
      end
    end
    ctx:log(string.format("fetch_all: %d URLs in %.3f s", #tasks, clm.time() - started))
    ctx:complete(table.concat(lines, "\n"))
  end,
})
