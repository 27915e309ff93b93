;; A core wasm module, not a component: it even exports functions named like the
;; guest's, but the loader wants a component.
(module
  (memory (export "memory") 1)
  (func (export "load") (result i32) (i32.const 0))
  (func (export "start") (result i32) (i32.const 0)))
