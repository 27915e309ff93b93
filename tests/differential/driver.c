/*
** The differential test's native interpreter (tests/tests/differential.rs builds it
** twice: against stock Lua 5.4.9 and against toolcell's patched copy).
**
** It runs one program the way the Lua guest loads a plugin: the whole script as the
** main chunk, under a count hook every 10000 instructions (the guest's deadline check
** sets one; here it does nothing), with a 'clm.tool_register' that keeps the tool's
** 'invoke'. Then it calls that tool once with a 'ctx' whose 'complete' writes the
** result to stdout. A chunk that fails prints "error: MESSAGE" instead.
**
** Built with DRIVER_AOT and linked with the C toolcell-aot made of the same
** script, it runs the script's functions compiled (see laot.h), attached to
** the loaded chunk as the Lua guest attaches them.
**
** Usage: driver FILE CHUNKNAME
*/

#include <stdio.h>
#include <stdlib.h>

#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"


#if defined(DRIVER_AOT)
extern const struct lua_AOTModule toolcell_aot_module;
#endif


static void hook (lua_State *L, lua_Debug *ar) {
  (void)L; (void)ar;
}


static const char CLM[] =
  "clm = { tool_register = function(name, spec) DRIVER_TOOL = spec.invoke end }";

static const char RUN_TOOL[] =
  "DRIVER_TOOL({}, { complete = function(_, text) io.write(text) end })";


static int fail (lua_State *L) {
  printf("error: %s", lua_tostring(L, -1));
  lua_close(L);
  return 0;
}


/* The whole of file 'path', or NULL; its length in '*size'. */
static char *readall (const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long length;
  if (f == NULL)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (length = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)length + 1)) != NULL &&
      fread(text, 1, (size_t)length, f) != (size_t)length) {
    free(text);
    text = NULL;
  }
  fclose(f);
  *size = (size_t)length;
  return text;
}


int main (int argc, char **argv) {
  lua_State *L;
  size_t size;
  char *script;
  int status;
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE CHUNKNAME\n", argv[0]);
    return 2;
  }
  script = readall(argv[1], &size);
  if (script == NULL) {
    perror(argv[1]);
    return 2;
  }
  L = luaL_newstate();
  if (L == NULL)
    return 1;
  luaL_openlibs(L);
  lua_sethook(L, hook, LUA_MASKCOUNT, 10000);
  if (luaL_dostring(L, CLM) != LUA_OK)
    return fail(L);
  /* the chunk name is the guest's for a plugin: '@NAME.lua' */
  status = luaL_loadbufferx(L, script, size, argv[2], "t");
  free(script);
  if (status != LUA_OK)
    return fail(L);
#if defined(DRIVER_AOT)
  if (lua_aotbind(L, -1, &toolcell_aot_module) != LUA_OK)
    return fail(L);
#endif
  if (lua_pcall(L, 0, 0, 0) != LUA_OK)
    return fail(L);
  if (luaL_dostring(L, RUN_TOOL) != LUA_OK)
    return fail(L);
  lua_close(L);
  return 0;
}
