;; Unbounded recursion in wasm itself: the engine's stack limit traps it, the host
;; stays on its own stack. One tool, `dive`.
(core module $Main
  (import "env" "memory" (memory 1))
  (data (i32.const 128) "\00\02\00\00\04\00\00\00")
  (data (i32.const 512) "dive")
  (func $dive (param i64) (result i64)
    (i64.add (call $dive (i64.add (local.get 0) (i64.const 1))) (i64.const 1)))
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 1))
    (i32.const 64))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32)
    (drop (call $dive (i64.const 0)))
    (i32.const 0))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
