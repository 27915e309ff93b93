;; A component that imports the host interface with a function of the wrong type:
;; `now` returning u32 instead of u64.
(component
  (import "toolcell:plugin/host@0.2.0" (instance
    (export "now" (func (result u32))))))
