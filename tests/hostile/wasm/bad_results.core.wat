;; Results the host cannot lift: a completion whose text is not UTF-8 (`bad_utf8`),
;; one whose text lies outside linear memory (`out_of_bounds`), and a call-state with
;; a discriminant the variant does not have (`bad_case`). `fine` completes normally.
(core module $Main
  (import "env" "memory" (memory 1))
  (data (i32.const 128) "\00\02\00\00\08\00\00\00")
  (data (i32.const 192) "\08\02\00\00\0d\00\00\00")
  (data (i32.const 256) "\15\02\00\00\08\00\00\00")
  (data (i32.const 320) "\1d\02\00\00\04\00\00\00")
  (data (i32.const 512) "bad_utf8out_of_boundsbad_casefine")
  (data (i32.const 600) "\ff\fe")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 4))
    (i32.const 64))
  (func (export "start") (param i64) (param $tool i32) (param i32 i32 i32 i64) (result i32)
    (local $first i32)
    (local.set $first (i32.load8_u (local.get $tool)))
    (i32.store8 (i32.const 80) (i32.const 1))
    (i32.store (i32.const 84) (i32.const 541))
    (i32.store (i32.const 88) (i32.const 4))
    ;; "bad_utf8" and "bad_case" both start with 'b'; tell them apart by their fifth byte.
    (if (i32.eq (local.get $first) (i32.const 98))
      (then
        (if (i32.eq (i32.load8_u (i32.add (local.get $tool) (i32.const 4))) (i32.const 117))
          (then
            (i32.store (i32.const 84) (i32.const 600))
            (i32.store (i32.const 88) (i32.const 2)))
          (else (i32.store8 (i32.const 80) (i32.const 9))))))
    (if (i32.eq (local.get $first) (i32.const 111))
      (then
        (i32.store (i32.const 84) (i32.const 65000))
        (i32.store (i32.const 88) (i32.const 100000))))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
