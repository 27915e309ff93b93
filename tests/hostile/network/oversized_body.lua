-- A response body larger than the 4 MiB cap, with and without Content-Length.
clm.tool_register("oversized_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
