-- Loopback, private, link-local, metadata and "this machine" addresses, written
-- directly and in the disguises URL parsers accept (decimal, hex, short forms,
-- IPv4-mapped IPv6). Every one is refused before a connection is attempted.
clm.tool_register("forbidden_get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  ctx:complete(resp and ("status " .. resp.status) or ("error: " .. err))
end })
