;; A load that never returns: a bare wasm loop, no interpreter and no hook in sight.
;; Only the host's epoch backstop (the load deadline plus its grace) can stop it.
(core module $Main
  (import "env" "memory" (memory 1))
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (loop $forever (br $forever))
    (i32.const 0))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32) (i32.const 0))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
