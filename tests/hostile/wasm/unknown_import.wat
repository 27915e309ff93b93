;; A component that imports an interface the host does not provide.
(component
  (import "toolcell:plugin/secrets@0.1.0" (instance
    (export "master-key" (func (result string))))))
