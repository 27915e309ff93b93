-- Schemes other than http and https, and URLs that do not parse.
clm.tool_register("scheme_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
