-- Failure messages of several megabytes, through ctx:fail and through an uncaught
-- error. The model must not be flooded: the host cuts them to a bounded size.
clm.tool_register("fail_huge", { invoke = function(_, ctx)
  ctx:fail(string.rep("x", 3 * 1024 * 1024))
end })
clm.tool_register("error_huge", { invoke = function(_, ctx)
  error(string.rep("y", 1024 * 1024), 0)
end })
