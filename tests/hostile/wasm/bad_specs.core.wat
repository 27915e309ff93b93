;; Tool specs no honest guest returns: an empty name, a name with a space, a name of
;; 70 characters, the same name twice, a schema that is not JSON, a schema that is not
;; a JSON object. The host checks every spec it is given; only `dup` (once) and `good`
;; are registered.
(core module $Main
  (import "env" "memory" (memory 1))
  ;; Eight specs of 40 bytes from 128; their strings from 512.
  (data (i32.const 128) "\00\02\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\02\00\00\09\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\30\02\00\00\46\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\09\02\00\00\03\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\09\02\00\00\03\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\0c\02\00\00\0b\00\00\00\00\00\00\00\00\00\00\00\01\00\00\00\26\02\00\00\01\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\17\02\00\00\0b\00\00\00\00\00\00\00\00\00\00\00\01\00\00\00\27\02\00\00\03\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\22\02\00\00\04\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00")
  (data (i32.const 512) "has spacedupschema_textschema_listgood{[1]")
  (data (i32.const 560) "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 0))
    (i32.store (i32.const 68) (i32.const 128))
    (i32.store (i32.const 72) (i32.const 8))
    (i32.const 64))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32)
    ;; completed("good"): the string at 546.
    (i32.store8 (i32.const 80) (i32.const 1))
    (i32.store (i32.const 84) (i32.const 546))
    (i32.store (i32.const 88) (i32.const 4))
    (i32.const 80))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
