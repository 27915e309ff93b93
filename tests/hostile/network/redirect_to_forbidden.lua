-- Redirects from a granted server to the metadata address, a private address and an
-- IPv4-mapped loopback: the policy is checked again on every hop.
clm.tool_register("redirect_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
