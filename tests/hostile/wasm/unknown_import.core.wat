;; A plugin that also imports an interface the host does not provide. The rest of it
;; is a well-formed plugin, so only linking can refuse it.
(import "toolcell:plugin/secrets@0.2.0" (instance
  (export "master-key" (func (result string)))))
(core module $Main
  (import "env" "memory" (memory 1))
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32) (i32.const 0))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32) (i32.const 0))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "cancel") (param i64 i32 i32)))
