/*
** $Id: ldebug.h $
** Auxiliary functions from Debug Interface module
** See Copyright Notice in lua.h
*/

#ifndef ldebug_h
#define ldebug_h


#include "lstate.h"


#define pcRel(pc, p)	(cast_int((pc) - (p)->code) - 1)


/* Active Lua function (given call info) */
#define ci_func(ci)		(clLvalue(s2v((ci)->func.p)))


#define resethookcount(L)	(L->hookcount = L->basehookcount)

/*
** toolcell: the count hook is not checked before every instruction (see
** 'luaG_countevent'), so only the call, return and line hooks need 'trap'.
*/
#define tracehooks(L)	((L)->hookmask & (LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE))

/*
** toolcell: charges 'n' instructions; true when the count hook is due (or,
** without a count hook, when the count must be put back far from 0: see
** 'luaG_countevent', which every caller calls then). Testing the count
** alone keeps 'hookmask' out of every call and loop iteration.
*/
#define countdue(L,n)  (l_unlikely(((L)->hookcount -= (n)) <= 0))

/*
** toolcell: charges 'n' instructions' worth of work done in C, without
** calling the hook (the next check does). It stops charging once the
** count is used up, so the count cannot overflow ('n' < MAX_INT / 2).
*/
#define countwork(L,n)  \
	{ if (((L)->hookmask & LUA_MASKCOUNT) && (L)->hookcount > 0) \
	    (L)->hookcount -= (n); }

/*
** toolcell: the bytes a C function allocates that count as one
** instruction. Work done in C without calling back into Lua (building a
** long string, growing a table) shows in what it allocates.
*/
#define COUNTBYTES	64

/* toolcell: charges an allocation of 'size' bytes */
#define countalloc(L,size)  \
	countwork(L, ((size) / COUNTBYTES >= cast_sizet(MAX_INT / 2)) \
	             ? MAX_INT / 2 : cast_int((size) / COUNTBYTES))

/*
** toolcell: values of 'allowhook'. Stock Lua turns every hook off while a
** hook or a finalizer runs; toolcell keeps the count hook in finalizers,
** where it is what stops a finalizer that never ends.
*/
#define HOOKSOFF	0
#define HOOKSON	1
#define HOOKSCOUNTONLY	2

/* toolcell: whether hook 'event' may run now */
#define hookallowed(L,event)  ((L)->allowhook == HOOKSON || \
	((L)->allowhook == HOOKSCOUNTONLY && (event) == LUA_HOOKCOUNT))

/*
** mark for entries in 'lineinfo' array that has absolute information in
** 'abslineinfo' array
*/
#define ABSLINEINFO	(-0x80)


/*
** MAXimum number of successive Instructions WiTHout ABSolute line
** information. (A power of two allows fast divisions.)
*/
#if !defined(MAXIWTHABS)
#define MAXIWTHABS	128
#endif


LUAI_FUNC int luaG_getfuncline (const Proto *f, int pc);
LUAI_FUNC const char *luaG_findlocal (lua_State *L, CallInfo *ci, int n,
                                                    StkId *pos);
LUAI_FUNC l_noret luaG_typeerror (lua_State *L, const TValue *o,
                                                const char *opname);
LUAI_FUNC l_noret luaG_callerror (lua_State *L, const TValue *o);
LUAI_FUNC l_noret luaG_forerror (lua_State *L, const TValue *o,
                                               const char *what);
LUAI_FUNC l_noret luaG_concaterror (lua_State *L, const TValue *p1,
                                                  const TValue *p2);
LUAI_FUNC l_noret luaG_opinterror (lua_State *L, const TValue *p1,
                                                 const TValue *p2,
                                                 const char *msg);
LUAI_FUNC l_noret luaG_tointerror (lua_State *L, const TValue *p1,
                                                 const TValue *p2);
LUAI_FUNC l_noret luaG_ordererror (lua_State *L, const TValue *p1,
                                                 const TValue *p2);
LUAI_FUNC l_noret luaG_runerror (lua_State *L, const char *fmt, ...);
LUAI_FUNC const char *luaG_addinfo (lua_State *L, const char *msg,
                                                  TString *src, int line);
LUAI_FUNC l_noret luaG_errormsg (lua_State *L);
LUAI_FUNC int luaG_traceexec (lua_State *L, const Instruction *pc);
LUAI_FUNC void luaG_countevent (lua_State *L);
LUAI_FUNC void luaG_countentry (lua_State *L, CallInfo *ci);
LUAI_FUNC int luaG_tracecall (lua_State *L);


#endif
