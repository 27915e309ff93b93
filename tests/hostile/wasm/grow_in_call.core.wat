;; A call that grows memory until the host refuses, then traps. Two tools: `grow` does
;; that, `fine` completes with "fine" (from the fresh instance after the crash).
(core module $Main
  (import "env" "memory" (memory 1))
  (data (i32.const 128) "\00\02\00\00\04\00\00\00")
  (data (i32.const 192) "\04\02\00\00\04\00\00\00")
  (data (i32.const 512) "growfine")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 2))
    (i32.const 64))
  (func (export "start") (param i64) (param $tool i32) (param i32 i32 i32 i64) (result i32)
    (if (i32.eq (i32.load8_u (local.get $tool)) (i32.const 103))
      (then
        (loop $more
          (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
        unreachable))
    (i32.store8 (i32.const 80) (i32.const 1))
    (i32.store (i32.const 84) (i32.const 516))
    (i32.store (i32.const 88) (i32.const 4))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
