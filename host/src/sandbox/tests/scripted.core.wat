;; The sandbox's unit-test plugin: a core module put into the hostile suite's plugin
;; shell (tests/hostile/wasm/shell.wat), one tool per behaviour the sandbox must handle.
;; Tools are told apart by their first byte:
;;   note     appends its arguments to the journal and completes with ""
;;   journal  completes with the journal: every note, and every cancel as
;;            "|cancel:REASON"
;;   count    adds one to a counter kept in the instance and completes with it (0-9)
;;   sleep    starts a 1 ms timer and waits for it; completes with "woke" when it fires
;;   wait     waits for nothing: only its deadline or a cancellation ends it
;;   busy     counts down from 200 million (fuel yields come on the way), completes
;;   loop     never returns
;;   trap     traps (unreachable)
;;   grow     grows memory until the host refuses, then traps
;;   oom      grows memory until the host refuses, then reports out-of-memory
(core module $Main
  (import "env" "memory" (memory 1))
  (import "env" "timer-start" (func $timer-start (param i64 i64 i32)))
  (global $journal-len (mut i32) (i32.const 0))
  (global $count (mut i32) (i32.const 0))
  ;; Ten specs of 64 bytes from 128: the name's pointer and length, the rest zero
  ;; (empty description, no schema, no timeout, not hidden, no title, no output schema).
  (data (i32.const 128) "\20\03\00\00\04\00\00\00")
  (data (i32.const 192) "\24\03\00\00\07\00\00\00")
  (data (i32.const 256) "\2b\03\00\00\05\00\00\00")
  (data (i32.const 320) "\30\03\00\00\05\00\00\00")
  (data (i32.const 384) "\35\03\00\00\04\00\00\00")
  (data (i32.const 448) "\39\03\00\00\04\00\00\00")
  (data (i32.const 512) "\3d\03\00\00\04\00\00\00")
  (data (i32.const 576) "\41\03\00\00\04\00\00\00")
  (data (i32.const 640) "\45\03\00\00\04\00\00\00")
  (data (i32.const 704) "\49\03\00\00\03\00\00\00")
  (data (i32.const 800) "notejournalcountsleepwaitbusylooptrapgrowoom")
  (data (i32.const 860) "woke|cancel:")
  ;; The journal: 1024..4095, below the shell's allocator.

  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 10))
    (i32.const 64))

  ;; Appends `len` bytes at `from` to the journal (what does not fit is dropped).
  (func $journal-append (param $from i32) (param $len i32)
    (if (i32.gt_u (i32.add (global.get $journal-len) (local.get $len)) (i32.const 3072))
      (then (return)))
    (memory.copy
      (i32.add (i32.const 1024) (global.get $journal-len)) (local.get $from) (local.get $len))
    (global.set $journal-len (i32.add (global.get $journal-len) (local.get $len))))

  ;; The call-state `completed(text)` at 80.
  (func $completed (param $at i32) (param $len i32) (result i32)
    (i32.store8 (i32.const 80) (i32.const 1))
    (i32.store (i32.const 84) (local.get $at))
    (i32.store (i32.const 88) (local.get $len))
    (i32.const 80))

  ;; The call-state `pending` at 80.
  (func $pending (result i32)
    (i32.store8 (i32.const 80) (i32.const 0))
    (i32.const 80))

  ;; Grows memory by 1 MiB at a time until the host refuses.
  (func $exhaust
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))))

  (func (export "start")
    (param $call i64) (param $tool i32) (param $tool-len i32)
    (param $args i32) (param $args-len i32) (param $deadline i64) (result i32)
    (local $first i32) (local $left i32)
    (local.set $first (i32.load8_u (local.get $tool)))
    ;; n: note
    (if (i32.eq (local.get $first) (i32.const 110))
      (then
        (call $journal-append (local.get $args) (local.get $args-len))
        (return (call $completed (i32.const 0) (i32.const 0)))))
    ;; j: journal
    (if (i32.eq (local.get $first) (i32.const 106))
      (then (return (call $completed (i32.const 1024) (global.get $journal-len)))))
    ;; c: count
    (if (i32.eq (local.get $first) (i32.const 99))
      (then
        (global.set $count (i32.add (global.get $count) (i32.const 1)))
        (i32.store8 (i32.const 120) (i32.add (i32.const 48) (global.get $count)))
        (return (call $completed (i32.const 120) (i32.const 1)))))
    ;; s: sleep (timer-start's result<u64, string> lands at 96)
    (if (i32.eq (local.get $first) (i32.const 115))
      (then
        (call $timer-start (local.get $call) (i64.const 1) (i32.const 96))
        (return (call $pending))))
    ;; w: wait
    (if (i32.eq (local.get $first) (i32.const 119))
      (then (return (call $pending))))
    ;; b: busy
    (if (i32.eq (local.get $first) (i32.const 98))
      (then
        (local.set $left (i32.const 200000000))
        (loop $down
          (local.set $left (i32.sub (local.get $left) (i32.const 1)))
          (br_if $down (local.get $left)))
        (return (call $completed (i32.const 0) (i32.const 0)))))
    ;; l: loop
    (if (i32.eq (local.get $first) (i32.const 108))
      (then (loop $forever (br $forever))))
    ;; t: trap
    (if (i32.eq (local.get $first) (i32.const 116))
      (then unreachable))
    ;; g: grow
    (if (i32.eq (local.get $first) (i32.const 103))
      (then (call $exhaust) unreachable))
    ;; o: oom (the call-state `out-of-memory`)
    (call $exhaust)
    (i32.store8 (i32.const 80) (i32.const 5))
    (i32.const 80))

  ;; Only `sleep` waits for an operation: its timer fired.
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32)
    (call $completed (i32.const 860) (i32.const 4)))

  (func (export "cancel") (param $call i64) (param $reason i32) (param $len i32)
    (call $journal-append (i32.const 864) (i32.const 8))
    (call $journal-append (local.get $reason) (local.get $len))))
