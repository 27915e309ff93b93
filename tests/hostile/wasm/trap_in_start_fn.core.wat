;; A core module whose start function traps: the instance fails while it is being
;; created, before any export can be called.
(core module $Main
  (import "env" "memory" (memory 1))
  (func $boom unreachable)
  (start $boom)
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32) (i32.const 0))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32) (i32.const 0))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
