;; A component of another world: it exports a command's `run`, not the plugin guest.
(component
  (core module $M (func (export "run") (result i32) (i32.const 0)))
  (core instance $m (instantiate $M))
  (func $run (result (result)) (canon lift (core func $m "run")))
  (instance $cli (export "run" (func $run)))
  (export "wasi:cli/run@0.2.3" (instance $cli)))
