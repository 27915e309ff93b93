/*
** toolcell: attaching bodies compiled ahead of time to the functions a
** script loads into (see laot.h).
*/

#define laot_c
#define LUA_CORE

#include "lprefix.h"

#include "lua.h"

#include "laot.h"
#include "lobject.h"
#include "lstate.h"


/* a 'lua_Writer' that folds what 'lua_dump' writes into a digest */
static int digestwriter (lua_State *L, const void *p, size_t sz, void *ud) {
  unsigned long long *digest = (unsigned long long *)ud;
  const unsigned char *b = (const unsigned char *)p;
  UNUSED(L);
  for (; sz > 0; sz--, b++) {
    *digest ^= *b;
    *digest *= LUAI_AOTPRIME;
  }
  return 0;
}


/* the number of functions in 'p': itself and those nested in it */
static unsigned int countprotos (const Proto *p) {
  unsigned int n = 1;
  int j;
  for (j = 0; j < p->sizep; j++)
    n += countprotos(p->p[j]);
  return n;
}


/* gives 'p' and the functions nested in it their bodies, from 'next' */
static unsigned int attach (Proto *p, const AOTBody *bodies,
                            unsigned int next) {
  int j;
  p->aot = bodies[next++];
  for (j = 0; j < p->sizep; j++)
    next = attach(p->p[j], bodies, next);
  return next;
}


/*
** Attaches the bodies of 'module' to the Lua function at 'idx' (a main
** chunk just loaded, not yet run) and to every function nested in it,
** if 'module' was compiled from that function's bytecode by a translator
** for this interpreter. Returns LUA_OK, or LUA_ERRRUN with a message on
** the stack and no function changed.
*/
LUA_API int lua_aotbind (lua_State *L, int idx,
                         const struct lua_AOTModule *module) {
  const LClosure *cl;
  unsigned long long digest = LUAI_AOTDIGEST0;
  if (module->abi != LUAI_AOTABI) {
    lua_pushliteral(L, "its compiled code was made for another build of "
                       "the Lua runtime");
    return LUA_ERRRUN;
  }
  if (lua_type(L, idx) != LUA_TFUNCTION || lua_iscfunction(L, idx)) {
    lua_pushliteral(L, "compiled code attaches to a Lua function only");
    return LUA_ERRRUN;
  }
  cl = (const LClosure *)lua_topointer(L, idx);
  lua_pushvalue(L, idx);
  lua_dump(L, digestwriter, &digest, 1);
  lua_pop(L, 1);
  if (digest != module->digest || countprotos(cl->p) != module->nbodies) {
    lua_pushliteral(L, "its compiled code was made from another script");
    return LUA_ERRRUN;
  }
  attach(cl->p, module->bodies, 0);
  return LUA_OK;
}
