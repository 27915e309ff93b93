;; Host functions called with values no honest guest sends: a timer for another call
;; id (`other_call`), and a timer of u64::MAX milliseconds (`forever_timer`, which
;; asks for a 200 ms tool timeout). The host answers the first with an error, which the
;; tool reports as its failure, and holds the second to the tool's deadline.
(core module $Main
  (import "env" "memory" (memory 1))
  (import "env" "timer-start" (func $timer-start (param i64 i64 i32)))
  (data (i32.const 128) "\00\02\00\00\0a\00\00\00")
  (data (i32.const 192) "\0a\02\00\00\0d\00\00\00")
  (data (i32.const 220) "\01\00\00\00\c8\00\00\00")
  (data (i32.const 512) "other_callforever_timer")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 2))
    (i32.const 64))
  (func (export "start") (param $call i64) (param $tool i32) (param i32 i32 i32 i64) (result i32)
    (if (i32.eq (i32.load8_u (local.get $tool)) (i32.const 111))
      (then
        ;; timer-start(call + 1000, 1): the result<u64, string> lands at 96.
        (call $timer-start (i64.add (local.get $call) (i64.const 1000)) (i64.const 1) (i32.const 96))
        ;; failed(the error string at 104/108).
        (i32.store8 (i32.const 80) (i32.const 2))
        (i32.store (i32.const 84) (i32.load (i32.const 104)))
        (i32.store (i32.const 88) (i32.load (i32.const 108)))
        (return (i32.const 80))))
    (call $timer-start (local.get $call) (i64.const -1) (i32.const 96))
    (i32.store8 (i32.const 80) (i32.const 0))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32)
    (i32.store8 (i32.const 80) (i32.const 0))
    (i32.const 80))
  (func (export "cancel") (param i64 i32 i32)))
