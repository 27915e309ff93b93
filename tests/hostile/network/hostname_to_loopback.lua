-- Host names that resolve to loopback, in the spellings a resolver accepts: the
-- policy judges the resolved addresses, not the name.
clm.tool_register("hostname_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
