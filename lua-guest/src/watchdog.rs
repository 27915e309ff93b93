//! The deadline of whatever runs in the Lua state (the plugin's load, or one step of one
//! call), and the count hook that enforces it: clm-tool(5)'s deadline "checked every
//! 10000 VM instructions so a tight infinite loop cannot dodge it", which `pcall`
//! cannot catch.
//!
//! toolcell's Lua (third_party/lua-src/PATCHED.md) counts instructions in bulk and
//! checks the count at the start of every function, Lua or C, and at every backward
//! jump, so no Lua code escapes the check: not a loop, not a metamethod or comparator
//! that C calls over and over, not a finalizer. Work done in C is charged by what it
//! allocates; work done by the runtime's own Rust code (host services, copies of long
//! strings) is charged here, with [`charge`].
//!
//! Once past its deadline, or once the host says the running call was cancelled
//! (`host.interrupted`), the watchdog trips and stays tripped until the next step arms
//! it again: every later check raises again, and the prelude's `pcall`/`xpcall` raise
//! instead of returning, so an abort cannot be swallowed.

use std::cell::Cell;
use std::ffi::{CStr, c_int, c_void};

use mlua::{Lua, ffi};

use crate::bindings::toolcell::plugin::host;

/// How many VM instructions run between two deadline checks (clm-tool(5)).
const INSTRUCTIONS_PER_CHECK: c_int = 10_000;

/// The cost of one call of a host service (a file read, a log line, a timer), in
/// instructions: a whole check interval, so each one is followed by a check. A host
/// call costs far more than the check, which is one host call itself.
pub const HOST_CALL: u32 = INSTRUCTIONS_PER_CHECK as u32;

/// Bytes the runtime's Rust code copies or converts that count as one instruction, as
/// Lua's own C code charges what it allocates (`COUNTBYTES` in the patched ldebug.h).
const BYTES_PER_INSTRUCTION: usize = 64;

/// The deadline a watchdog has before anything arms it: while the runtime prepares
/// itself no plugin runs and the host's imports may not be called (see
/// `protocol::prepare`); the host's fuel and hard deadline still stop a runaway.
const UNARMED: u64 = 0;

/// The error value the count hook raises.
const DEADLINE_EXCEEDED: &CStr = c"deadline exceeded";

/// What the host adds to the failure of a call stopped inside a finalizer.
const FINALIZER_NOTE: &str = "the deadline passed while a finalizer (__gc) ran; \
     finalizers run during whichever call collects the garbage, so it may have been \
     left by another call";

/// Registry key of the error value, a string made once, so that raising it never
/// allocates (an allocation could run the garbage collector inside the hook).
static ERROR_KEY: u8 = 0;

/// The deadline of the code running now. All zeros when unarmed, so it lives in
/// `.bss` (see `protocol::STATE` for why that matters).
struct Watchdog {
    deadline: Cell<u64>,
    tripped: Cell<bool>,
    /// Work charged by Rust code since the last check, in instructions.
    work: Cell<u32>,
}

thread_local! {
    /// The instance's one watchdog (an instance runs one Lua state, on one thread).
    static WATCHDOG: Watchdog = const {
        Watchdog {
            deadline: Cell::new(UNARMED),
            tripped: Cell::new(false),
            work: Cell::new(0),
        }
    };
}

/// What a check found.
enum Check {
    /// The code may go on.
    Continue,
    /// The code must stop; `first` on the check that tripped the watchdog.
    Stop { first: bool },
}

impl Watchdog {
    fn check(&self) -> Check {
        if self.tripped.get() {
            return Check::Stop { first: false };
        }
        let deadline = self.deadline.get();
        if deadline == UNARMED || !host::interrupted(deadline) {
            return Check::Continue;
        }
        self.tripped.set(true);
        Check::Stop { first: true }
    }
}

/// Arms the watchdog for the code about to run (`deadline` on the host's clock).
pub fn arm(deadline: u64) {
    WATCHDOG.with(|watchdog| {
        watchdog.deadline.set(deadline.max(UNARMED + 1));
        watchdog.tripped.set(false);
        watchdog.work.set(0);
    });
}

/// Whether the running code is being stopped (its deadline passed, or its call was
/// cancelled).
pub fn tripped() -> bool {
    WATCHDOG.with(|watchdog| watchdog.tripped.get())
}

/// The error that stops the running code, as Rust code raises it.
pub fn deadline_error() -> mlua::Error {
    mlua::Error::RuntimeError(DEADLINE_EXCEEDED.to_string_lossy().into_owned())
}

/// Charges `instructions` of work done by the runtime's Rust code; checks the deadline
/// once a check interval's worth has been charged. Errs when the code must stop.
pub fn charge(instructions: u32) -> mlua::Result<()> {
    WATCHDOG.with(|watchdog| {
        let work = watchdog.work.get().saturating_add(instructions);
        if work < HOST_CALL && !watchdog.tripped.get() {
            watchdog.work.set(work);
            return Ok(());
        }
        watchdog.work.set(0);
        match watchdog.check() {
            Check::Continue => Ok(()),
            Check::Stop { .. } => Err(deadline_error()),
        }
    })
}

/// Charges a host service call that moves `bytes` across the sandbox's wall.
pub fn charge_host_call(bytes: usize) -> mlua::Result<()> {
    charge(HOST_CALL.saturating_add(bytes_cost(bytes)))
}

/// Charges `bytes` copied or converted by the runtime's Rust code.
pub fn charge_bytes(bytes: usize) -> mlua::Result<()> {
    charge(bytes_cost(bytes))
}

fn bytes_cost(bytes: usize) -> u32 {
    u32::try_from(bytes / BYTES_PER_INSTRUCTION).unwrap_or(u32::MAX)
}

/// Sets the count hook on the Lua state (coroutines created later inherit it).
pub fn install(lua: &Lua) -> mlua::Result<()> {
    // SAFETY: the closure runs on the state's own stack, pushes one value and pops it
    // into the registry; the hook is a plain C-ABI function valid for the program's life.
    unsafe {
        lua.exec_raw::<()>((), |state| {
            ffi::lua_pushstring(state, DEADLINE_EXCEEDED.as_ptr());
            ffi::lua_rawsetp(state, ffi::LUA_REGISTRYINDEX, error_key());
            ffi::lua_sethook(
                state,
                Some(count_hook),
                ffi::LUA_MASKCOUNT,
                INSTRUCTIONS_PER_CHECK,
            );
        })
    }
}

fn error_key() -> *const c_void {
    std::ptr::from_ref(&ERROR_KEY).cast()
}

/// The count hook: checks the deadline and, when the code must stop, raises the
/// deadline error in the running code. A raw hook rather than mlua's: mlua unwinds the
/// interrupted function's registers when its hook fails, which runs that function's
/// `<close>` handlers right there, inside the hook, where no hook can stop them.
///
/// Once the code must stop, the thread's hook runs at every check instead of every
/// 10000 instructions, so that code which catches errors as values (the runtime's own
/// Rust code, where the check can also run, turns a failed `json.decode` into
/// `nil, message`) meets the error again at once; the next check that finds the code
/// may go on (in the next step) sets the interval back.
unsafe extern "C-unwind" fn count_hook(state: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    let stop = WATCHDOG.with(Watchdog::check);
    let interval = match stop {
        Check::Continue => INSTRUCTIONS_PER_CHECK,
        Check::Stop { .. } => 1,
    };
    // SAFETY: `state` is the running thread, inside its hook; lua_sethook may be called
    // from a hook, and nothing with a destructor is alive when lua_error unwinds this
    // frame.
    unsafe {
        if ffi::lua_gethookcount(state) != interval {
            ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, interval);
        }
        let Check::Stop { first } = stop else {
            return;
        };
        if first && in_finalizer(state) {
            host::timeout_note(FINALIZER_NOTE);
        }
        ffi::lua_rawgetp(state, ffi::LUA_REGISTRYINDEX, error_key());
        ffi::lua_error(state);
    }
}

/// Whether a finalizer is running on `state`: Lua names a function that the garbage
/// collector called as the metamethod `__gc`.
///
/// # Safety
/// `state` must be a live thread that is running (inside a hook).
unsafe fn in_finalizer(state: *mut ffi::lua_State) -> bool {
    // SAFETY: lua_Debug is plain data that lua_getstack fills; lua_getinfo with "n"
    // only reads the stack and points `name`/`namewhat` at strings Lua keeps alive.
    unsafe {
        let mut frame = std::mem::zeroed::<ffi::lua_Debug>();
        let mut level = 0;
        while ffi::lua_getstack(state, level, &mut frame) != 0 {
            if ffi::lua_getinfo(state, c"n".as_ptr(), &mut frame) != 0
                && !frame.name.is_null()
                && !frame.namewhat.is_null()
                && CStr::from_ptr(frame.namewhat) == c"metamethod"
                && CStr::from_ptr(frame.name) == c"__gc"
            {
                return true;
            }
            level += 1;
        }
        false
    }
}
