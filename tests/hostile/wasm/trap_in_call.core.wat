;; Traps below Lua, and the recovery that follows. Three tools: `boom` executes
;; `unreachable` (a trap in the plugin's own code), `ok` completes with "ok", and `nap`
;; starts a 60 s timer and stays pending, so a call is in flight when another crashes
;; the instance.
(core module $Main
  (import "env" "memory" (memory 1))
  (import "env" "timer-start" (func $timer-start (param i64 i64 i32)))
  ;; Tool specs (64 bytes each) at 128, 192 and 256; their names at 512.
  (data (i32.const 128) "\00\02\00\00\04\00\00\00")
  (data (i32.const 192) "\04\02\00\00\02\00\00\00")
  (data (i32.const 256) "\06\02\00\00\03\00\00\00")
  (data (i32.const 512) "boomoknap")
  ;; load -> ok([boom, ok, nap]), in the result area at 64.
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 3))
    (i32.const 64))
  ;; start(call, tool, args, deadline): dispatch on the tool name's first byte.
  (func (export "start")
    (param $call i64) (param $tool i32) (param i32 i32 i32) (param i64) (result i32)
    ;; "boom": trap.
    (if (i32.eq (i32.load8_u (local.get $tool)) (i32.const 98)) (then unreachable))
    ;; "nap": start a timer and stay pending.
    (if (i32.eq (i32.load8_u (local.get $tool)) (i32.const 110))
      (then
        (call $timer-start (local.get $call) (i64.const 60000) (i32.const 96))
        (i32.store8 (i32.const 80) (i32.const 0))
        (return (i32.const 80))))
    ;; "ok": completed("ok").
    (i32.store8 (i32.const 80) (i32.const 1))
    (i32.store (i32.const 84) (i32.const 516))
    (i32.store (i32.const 88) (i32.const 2))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32)
    (i32.store8 (i32.const 80) (i32.const 0))
    (i32.const 80))
  (func (export "cancel") (param i64 i32 i32)))
