-- Its manifest (requires_canary.lua.toml) requires a plugin that is not there: only this
-- plugin is left out, and the canary it names in another namespace is untouched.
clm.tool_register("required", { invoke = function(_, ctx) ctx:complete("loaded") end })
