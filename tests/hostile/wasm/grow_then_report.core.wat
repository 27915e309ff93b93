;; A call that grows memory until the host refuses, then reports that it ran out of
;; memory instead of trapping, as a guest whose allocator fails gracefully does: in its
;; first step (`grow_now`), or in the step after a 1 ms timer (`grow_later`). The
;; instance survives: `fine` completes in it.
(core module $Main
  (import "env" "memory" (memory 1))
  (import "env" "timer-start" (func $timer-start (param i64 i64 i32)))
  ;; Three specs: "grow_now", "grow_later", "fine".
  (data (i32.const 128) "\00\02\00\00\08\00\00\00")
  (data (i32.const 192) "\08\02\00\00\0a\00\00\00")
  (data (i32.const 256) "\12\02\00\00\04\00\00\00")
  (data (i32.const 512) "grow_nowgrow_laterfine")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 3))
    (i32.const 64))
  ;; Grows until refused, then returns the out-of-memory call-state.
  (func $exhaust (result i32)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (i32.store8 (i32.const 80) (i32.const 5))
    (i32.const 80))
  (func (export "start") (param $call i64) (param $tool i32) (param i32 i32 i32 i64) (result i32)
    ;; "grow_now" and "grow_later" both start with 'g'; their sixth bytes differ.
    (if (i32.eq (i32.load8_u (local.get $tool)) (i32.const 103))
      (then
        (if (i32.eq (i32.load8_u (i32.add (local.get $tool) (i32.const 5))) (i32.const 110))
          (then (return (call $exhaust))))
        ;; timer-start(call, 1): the result lands at 96; the call waits for it.
        (call $timer-start (local.get $call) (i64.const 1) (i32.const 96))
        (i32.store8 (i32.const 80) (i32.const 0))
        (return (i32.const 80))))
    (i32.store8 (i32.const 80) (i32.const 1))
    (i32.store (i32.const 84) (i32.const 530))
    (i32.store (i32.const 88) (i32.const 4))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32)
    (call $exhaust))
  (func (export "cancel") (param i64 i32 i32)))
