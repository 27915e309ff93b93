/*
** toolcell: Lua functions compiled ahead of time.
**
** 'toolcell pack --aot' translates each function of a plugin's script to
** a C function, its body: one block per instruction, made of the very
** code 'luaV_execute' runs for that opcode (copied from lvm.c), with the
** instruction a constant, so the C compiler folds its operands, and with
** jumps as gotos between the blocks. 'lua_aotbind' attaches the bodies to
** the functions the script loads into ('Proto.aot'), after checking that
** they were made from the same bytecode.
**
** 'luaV_execute' runs a body when a frame of its function starts (saved
** pc at the first instruction). A body has that one entry, so its loops
** are loops the C compiler can keep in registers; everything else stays
** the interpreter's: a frame that resumes anywhere else (after a yield,
** an error in a hook) runs on in the interpreter, which executes the
** same bytecode.
**
** A body calls a Lua function as 'luaD_call' does, nesting 'luaV_execute'
** (marked fresh, counted in 'nCcalls'), and goes on after the call, but
** only while fewer than LUAI_AOTNESTING C calls are nested: deeper, it
** gives the callee's frame back to 'luaV_execute', whose loop runs it and
** then the rest of the caller, interpreted. So deep recursion reaches the
** same Lua stack limit as interpreted code, and nested compiled calls use
** no more of the C stack than LUAI_MAXCCALLS allows any C recursion.
**
** A translated unit defines LUAI_AOT and includes this header, which then
** brings in lvm.c's macros and static helpers (its exported functions
** stay in the interpreter: lvm.c leaves them out under LUAI_AOT) and the
** macros the translator's output uses.
*/

#ifndef laot_h
#define laot_h

#if defined(LUAI_AOT)
/* first: it defines LUA_CORE and includes lprefix.h and the headers */
#include "lvm.c"
#endif

#include <stddef.h>

#include "lua.h"
#include "lobject.h"
#include "lstate.h"


/*
** Version of the contract between the translator and the interpreter:
** what the translated code expects of lvm.c and of this header. The
** translator writes the one it was made for into each module.
*/
#define LUAI_AOTVERSION	1


/*
** A stamp of the layouts compiled bodies depend on, so that a module
** compiled with other settings than the interpreter is refused instead
** of reading the wrong fields. A constant expression.
*/
#define LUAI_AOTABI  ((unsigned int)( \
	LUAI_AOTVERSION * 2654435761u ^ \
	(unsigned int)sizeof(TValue) * 97u ^ \
	(unsigned int)sizeof(StackValue) * 193u ^ \
	(unsigned int)sizeof(CallInfo) * 389u ^ \
	(unsigned int)sizeof(lua_State) * 769u ^ \
	(unsigned int)sizeof(Proto) * 1543u ^ \
	(unsigned int)sizeof(LClosure) * 3079u ^ \
	(unsigned int)sizeof(Table) * 6151u ^ \
	(unsigned int)offsetof(Proto, aot) * 12289u ^ \
	(unsigned int)offsetof(CallInfo, u) * 24593u ^ \
	(unsigned int)offsetof(lua_State, hookmask) * 49157u ^ \
	(unsigned int)sizeof(lua_Integer) * 98317u ^ \
	(unsigned int)sizeof(lua_Number) * 196613u))


/*
** What a translated unit exports: the bodies of a script's functions in
** the order 'lua_aotbind' walks them (a function, then each function
** nested in it, depth first, as 'lua_dump' writes them), and the digest
** of the script's bytecode ('lua_dump' of its main function, stripped)
** they were made from.
*/
struct lua_AOTModule {
  unsigned int abi;  /* LUAI_AOTABI of the unit */
  unsigned int nbodies;  /* number of functions */
  unsigned long long digest;  /* of the stripped dump, see below */
  const AOTBody *bodies;
};


/*
** The digest of a stripped dump: 64-bit FNV-1a. It tells bytecode
** apart, not adversaries: a module is code in the plugin's own sandbox,
** which could run anything anyway.
*/
#define LUAI_AOTDIGEST0	0xcbf29ce484222325ull
#define LUAI_AOTPRIME	0x100000001b3ull


#if defined(LUAI_AOT)

#include "lprecall.h"

/* 'OP_CALL' starts a Lua function's frame as 'luaD_precall'
   does, without calling it; anything else is 'luaD_precall's */
l_sinline CallInfo *aot_precall (lua_State *L, StkId func, int nresults) {
  if (ttisLclosure(s2v(func)))
    return precallLua(L, func, nresults, clLvalue(s2v(func))->p);
  return luaD_precall(L, func, nresults);
}
#define luaD_precall	aot_precall

/* the interpreter's 'donextjump' reads the jump from the code; here it
   is the constant 'aot_ni', which the translator defines */
#undef donextjump
#define donextjump(ci)	{ dojump(ci, aot_ni, 1); }


/*
** Nested C calls under which a body calls a Lua function itself; with
** more, it leaves the call to 'luaV_execute'. Direct calls count in
** 'nCcalls' like any C call, so this is also how much of LUAI_MAXCCALLS
** compiled calls may take from other C recursion (metamethods, 'pcall').
*/
#define LUAI_AOTNESTING	(LUAI_MAXCCALLS / 4)


/*
** The state 'luaV_execute' keeps for the running function, as it sets
** it up in 'startfunc' for a frame that starts.
*/
#define aot_enter() \
  LClosure *cl = ci_func(ci); \
  TValue *k = cl->p->k; \
  const Instruction *const code = cl->p->code; \
  const Instruction *pc = code; \
  StkId base; \
  Instruction i; \
  int trap = tracehooks(L); \
  lua_assert(ci->u.l.savedpc == code); \
  if (l_unlikely(trap)) \
    trap = luaG_tracecall(L); \
  base = ci->func.p + 1; \
  (void)k; (void)i; (void)pc


/*
** 'vmfetch' for instruction 'n', 'ins': the hook check and the
** interpreter's assertions, with 'pc' past the instruction as in an
** opcode's body.
*/
#define aot_fetch(n,ins) \
  pc = code + (n); \
  if (l_unlikely(trap)) { \
    trap = luaG_traceexec(L, pc); \
    updatebase(ci); \
  } \
  i = (ins); \
  pc++; \
  lua_assert(base == ci->func.p + 1); \
  lua_assert(base <= L->top.p && L->top.p <= L->stack_last.p); \
  lua_assert(isIT(i) || (cast_void(L->top.p = base), 1));


/*
** 'OP_CALL' of a Lua function ('goto startfunc' in its body), with 'ci'
** the callee's new frame: run it here and go on with 'next', as
** 'returning' goes on with the caller, or leave it to 'luaV_execute'.
*/
#define aot_call(next) \
  if (getCcalls(L) < LUAI_AOTNESTING) { \
    CallInfo *callee = ci; \
    AOTBody body = ci_func(callee)->p->aot; \
    ci = ci->previous; \
    callee->callstatus = CIST_FRESH; \
    L->nCcalls++; \
    if (body == NULL) \
      luaV_execute(L, callee); \
    else { /* what 'luaV_execute' would do, less its frame */ \
      CallInfo *rest = body(L, callee); \
      if (rest != NULL) \
        luaV_execute(L, rest); \
    } \
    L->nCcalls--; \
    trap = callee->u.l.trap; \
    if (l_unlikely(trap)) \
      trap = luaG_tracecall(L); \
    updatebase(ci); \
    goto next; \
  } \
  return ci;


/*
** The end of a body: a tail call ('goto startfunc' in 'OP_TAILCALL')
** gives 'luaV_execute' the frame it replaced this one with; a return
** ('goto ret') gives it the caller's frame, or nothing when this frame
** was fresh.
*/
#define aot_leave() \
  aot_tail: \
  return ci; \
  ret: \
  return (ci->callstatus & CIST_FRESH) ? NULL : ci->previous

#endif

#endif
