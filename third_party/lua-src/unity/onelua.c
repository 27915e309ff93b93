/*
** toolcell: the whole Lua 5.4 library (core and standard libraries) as one
** translation unit, so the C compiler can inline across Lua's modules: the
** table, string and stack helpers the interpreter calls on every opcode
** become part of 'luaV_execute'. Under wasm each call that remains also
** saves and restores the fuel counter, so fewer calls pay twice.
** Internal functions keep their extern declarations (LUAI_FUNC); only the
** compilation is merged. Lua's sources are written to allow this.
*/

/* As ltablib.c does for itself: stdlib.h before lprefix.h's _XOPEN_SOURCE
   limits it, so that WASI's arc4random is declared. */
#if defined(__wasi__)
#include <stdlib.h>
#endif

/* core */
#include "lzio.c"
#include "lctype.c"
#include "lopcodes.c"
#include "lmem.c"
#include "lundump.c"
#include "ldump.c"
#include "lstate.c"
#include "lgc.c"
#include "llex.c"
#include "lcode.c"
#include "lparser.c"
#include "ldebug.c"
#include "lfunc.c"
#include "lobject.c"
#include "ltm.c"
#include "lstring.c"
#include "ltable.c"
#include "ldo.c"
#include "lvm.c"
#include "lapi.c"
/* toolcell's functions compiled ahead of time (laot.h); absent from the stock
   sources the differential test builds with this file too */
#if defined(__has_include)
#if __has_include("laot.c")
#include "laot.c"
#endif
#else
#include "laot.c"
#endif

/* auxiliary and standard libraries */
#include "lauxlib.c"
#include "lbaselib.c"
#include "lcorolib.c"
/* The libraries a toolcell sandbox never opens: the real ones natively (the
   benchmark's baseline is built from these sources too), refusing stubs in
   the wasm guest (absentlibs.c says why). */
#if defined(__wasi__)
#include "absentlibs.c"
#else
#include "ldblib.c"
#include "liolib.c"
#endif
#include "lmathlib.c"
#if !defined(__wasi__)
#include "loadlib.c"
#include "loslib.c"
#endif
#include "lstrlib.c"
#include "ltablib.c"
#include "lutf8lib.c"
#include "linit.c"
