-- A response that trickles a chunk every 50 ms for ever: the timeout covers the body.
clm.tool_register("trickle_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
