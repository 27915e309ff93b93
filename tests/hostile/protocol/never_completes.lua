-- An invocation that waits for an hour and so never completes on its own.
clm.tool_register("wait_forever", { timeout_ms = 300, invoke = function(_, ctx)
  clm.sleep(3600 * 1000)
  ctx:complete("never")
end })
clm.tool_register("wait_alive", { invoke = function(_, ctx) ctx:complete("alive") end })
