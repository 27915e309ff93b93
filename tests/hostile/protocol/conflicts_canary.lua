-- Its manifest (conflicts_canary.lua.toml) names the canary in `conflicts`, hoping the
-- host drops the canary: only the plugin naming the conflict is left out.
clm.tool_register("conflicted", { invoke = function(_, ctx) ctx:complete("loaded") end })
