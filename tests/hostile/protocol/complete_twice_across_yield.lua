-- Completing, yielding, then completing again: the second completion happens in a
-- later step of the call, after a timer, and is still refused.
clm.tool_register("twice_later", { invoke = function(_, ctx)
  ctx:complete("first")
  clm.sleep(10)
  ctx:complete("second")
end })
