/*
** toolcell: setting up the frame of a Lua function being called, moved
** out of ldo.c ('luaD_precall') so that code compiled ahead of time does
** it as the interpreter does, without a call (see laot.h).
*/

#ifndef lprecall_h
#define lprecall_h

#include "ldebug.h"
#include "ldo.h"
#include "lobject.h"
#include "lstate.h"


#define next_ci(L)  (L->ci->next ? L->ci->next : luaE_extendCI(L, 1))


l_sinline CallInfo *prepCallInfo (lua_State *L, StkId func, int nret,
                                                int mask, StkId top) {
  CallInfo *ci = L->ci = next_ci(L);  /* new frame */
  ci->func.p = func;
  ci->nresults = nret;
  ci->callstatus = mask;
  ci->top.p = top;
  return ci;
}


/*
** toolcell: a Lua function's start ('ci', running 'p'), once its frame is
** set up: it is charged its code size (all it can run without jumping
** back) and checks the count hook (see 'luaG_countentry'). Every
** activation passes here, from a call in Lua code or from C alike; a
** function resumed after a yield is not charged again.
*/
#define countstart(L,ci,p)  \
	{ if (countdue(L, (p)->sizecode)) luaG_countentry(L, ci); }


/* precall for a Lua function 'p' at 'func' */
l_sinline CallInfo *precallLua (lua_State *L, StkId func, int nresults,
                                              Proto *p) {
  CallInfo *ci;
  int narg = cast_int(L->top.p - func) - 1;  /* number of real arguments */
  int nfixparams = p->numparams;
  int fsize = p->maxstacksize;  /* frame size */
  checkstackGCp(L, fsize, func);
  L->ci = ci = prepCallInfo(L, func, nresults, 0, func + 1 + fsize);
  ci->u.l.savedpc = p->code;  /* starting point */
  for (; narg < nfixparams; narg++)
    setnilvalue(s2v(L->top.p++));  /* complete missing arguments */
  lua_assert(ci->top.p <= L->stack_last.p);
  countstart(L, ci, p);  /* toolcell */
  return ci;
}

#endif
