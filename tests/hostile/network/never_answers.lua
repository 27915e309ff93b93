-- A server that never answers, under a 300 ms request timeout.
clm.tool_register("never_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
