-- Unit conversion driven by configuration (clm.config) and answering in JSON.
--
-- With a config file such as:
--   [tools.units]
--   precision = 2
--   [tools.units.extra]
--   furlong_m = 201.168
local precision = clm.config.precision or 3

local meters_per = { m = 1, km = 1000, mi = 1609.344, ft = 0.3048, ["in"] = 0.0254 }
for unit, meters in pairs(clm.config.extra or {}) do
  local name = unit:match("^(.-)_m$")
  if name and type(meters) == "number" then meters_per[name] = meters end
end

clm.tool_register("convert_length", {
  description = "Convert a length between units (m, km, mi, ft, in and configured extras)",
  no_prompt = true,
  params_schema = {
    type = "object",
    properties = {
      value = { type = "number" },
      from = { type = "string" },
      to = { type = "string" },
    },
    required = { "value", "from", "to" },
  },
  invoke = function(args, ctx)
    local from, to = meters_per[args.from], meters_per[args.to]
    if not from then return ctx:fail("unknown unit " .. tostring(args.from)) end
    if not to then return ctx:fail("unknown unit " .. tostring(args.to)) end
    local factor = 10 ^ precision
    local result = math.floor(args.value * from / to * factor + 0.5) / factor
    ctx:complete(json.encode({ value = result, unit = args.to, input = json.decode(ctx:args_raw()) }))
  end,
})

clm.tool_register("list_units", {
  description = "The units convert_length knows",
  no_prompt = true,
  hidden = true,
  invoke = function(_, ctx)
    local names = {}
    for name in pairs(meters_per) do names[#names + 1] = name end
    table.sort(names)
    ctx:complete(json.encode(names))
  end,
})
