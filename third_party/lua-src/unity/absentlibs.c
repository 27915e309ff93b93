/*
** toolcell: the io, os, debug and package libraries as the wasm guest has
** them. A toolcell sandbox never opens these four (clm-tool(5) gives plugins
** the string, table, math and utf8 libraries only), but mlua and linit.c name
** their 'luaopen_' functions, so their real code was linked into the guest:
** 60 functions in every plugin instance's function table (wasmtime keeps a
** function reference for each in the instance's context), the C library code
** they use (strftime, time zones, locales) with its read-only data in every
** instance's memory image, and three WASI imports (remove, rename, unlink).
** Here each 'luaopen_' raises an error instead, so none of that is linked.
*/

static int absentlib (lua_State *L, const char *name) {
  return luaL_error(L, "the %s library is not available in a toolcell sandbox",
                    name);
}

LUAMOD_API int luaopen_io (lua_State *L) {
  return absentlib(L, LUA_IOLIBNAME);
}

LUAMOD_API int luaopen_os (lua_State *L) {
  return absentlib(L, LUA_OSLIBNAME);
}

LUAMOD_API int luaopen_debug (lua_State *L) {
  return absentlib(L, LUA_DBLIBNAME);
}

LUAMOD_API int luaopen_package (lua_State *L) {
  return absentlib(L, LUA_LOADLIBNAME);
}
