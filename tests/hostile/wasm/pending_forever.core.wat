;; A call that says `pending` without having started any operation: nothing will ever
;; wake it. The tool asks for a 200 ms timeout, and the host holds it to that.
(core module $Main
  (import "env" "memory" (memory 1))
  ;; One spec: name "wait", timeout-ms = some(200).
  (data (i32.const 128) "\00\02\00\00\04\00\00\00")
  (data (i32.const 156) "\01\00\00\00\c8\00\00\00")
  (data (i32.const 512) "wait")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 1))
    (i32.const 64))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32)
    (i32.store8 (i32.const 80) (i32.const 0))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32)
    (i32.store8 (i32.const 80) (i32.const 0))
    (i32.const 80))
  (func (export "cancel") (param i64 i32 i32)))
