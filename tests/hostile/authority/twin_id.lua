-- Shares its id with Twin_Id.lua, a file differing only in case: whichever loads
-- first would be `twin_id`.
clm.tool_register("twin_lower", { invoke = function(_, ctx) ctx:complete("lower") end })
