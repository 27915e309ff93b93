-- A tool the user wants denied, under whatever name a call uses: the aliases the user
-- gave it, its path, its wire name.
clm.tool_register("danger_zone", {
  invoke = function(_, ctx) ctx:complete("danger ran") end,
})
