-- `tally`, the plugin the tests of what a model sees share (tests/tests/view.rs,
-- host/tests/view.rs, tests/mcp/view.py): a structured result and progress reports.
clm.tool_register("count_words", {
  title = "Count words",
  description = "Count the words of a text",
  params_schema = { type = "object", properties = { text = { type = "string" } } },
  output_schema = {
    type = "object",
    properties = { words = { type = "integer" }, longest = { type = "string" } },
    required = { "words" },
  },
  invoke = function(args, ctx)
    if args.text == "wrong" then return ctx:complete_json({ words = "many" }) end
    if args.text == "plain" then return ctx:complete("three words here") end
    local words, longest = 0, ""
    for word in args.text:gmatch("%S+") do
      words = words + 1
      if #word > #longest then longest = word end
    end
    ctx:complete_json({ words = words, longest = longest })
  end,
})
clm.tool_register("crawl", {
  description = "Reports progress as it goes",
  invoke = function(args, ctx)
    for i = 1, args.pages do
      ctx:progress(i, args.pages, "page " .. i)
      clm.sleep(args.pause_ms or 150)
    end
    ctx:complete("crawled")
  end,
})
