// The bodies `toolcell pack --aot` compiled from a plugin's script, if the plugin's
// copy of the guest was linked with them (see toolcell-aot and laot.h in the Lua
// sources). A weak reference: in the guest toolcell embeds, nothing defines the
// symbol and its address is null.

struct lua_AOTModule;

extern const struct lua_AOTModule toolcell_aot_module __attribute__((weak));

const struct lua_AOTModule *toolcell_aot_linked(void) {
    return &toolcell_aot_module;
}
