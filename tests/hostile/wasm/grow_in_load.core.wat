;; A load that grows linear memory without end, ignoring every refusal. The host's
;; memory cap refuses growth past the cap; the loop then spins until the load deadline,
;; and the failure names the cap as the reason.
(core module $Main
  (import "env" "memory" (memory 1))
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (loop $forever
      (drop (memory.grow (i32.const 16)))
      (br $forever))
    (i32.const 0))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32) (i32.const 0))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
