;; The plugin shell: a component of the toolcell:plugin world around one core module.
;; Most wasm attacks here are a core module (the `*.core.wat` files): the harness puts
;; each in place of the marker below and assembles the result with the `wat` crate.
;;
;; The core module imports from "env": `memory` and `realloc` (a bump allocator, in
;; their own module so host functions can be lowered into them first), and the host
;; functions `now` and `timer-start`. It exports `load`, `start`, `resume` and `cancel`
;; with the canonical ABI's flat signatures:
;;   load   (name ptr, len, script tag, ptr, len, deadline, memory-limit, debug-log)
;;          -> pointer to result<list<tool-spec>, load-error>
;;   start  (call, tool ptr, len, args ptr, len, deadline) -> pointer to call-state
;;   resume (call, op, outcome tag, 5 payload words) -> pointer to call-state
;;   cancel (call, reason ptr, len)
;; A tool-spec in memory is 64 bytes: name (ptr, len), description (ptr, len),
;; params-schema (tag at 16, ptr, len), timeout-ms (tag at 28, value at 32),
;; no-prompt at 36, hidden at 37, title (tag at 40, ptr, len), output-schema (tag at
;; 52, ptr, len). A call-state is a tag byte (0 pending, 1 completed,
;; 2 failed, 3 timed-out, 4 broke-rule, 5 out-of-memory) and a string at 4 and 8.
(component
  (type $tool-spec (record
    (field "name" string) (field "description" string)
    (field "params-schema" (option string)) (field "timeout-ms" (option u32))
    (field "no-prompt" bool) (field "hidden" bool)
    (field "title" (option string)) (field "output-schema" (option string))))
  (type $load-request (record
    (field "name" string) (field "script" (option (list u8)))
    (field "deadline" u64) (field "memory-limit" u64) (field "debug-log" bool)))
  (type $load-error (variant (case "timed-out") (case "failed" string)))
  (type $call-state (variant
    (case "pending") (case "completed" string) (case "failed" string) (case "timed-out")
    (case "broke-rule" string) (case "out-of-memory")))
  (type $http-response (record
    (field "status" u16) (field "headers" (list (tuple string string))) (field "body" (list u8))))
  (type $op-outcome (variant
    (case "timer-fired") (case "http-response" $http-response) (case "http-error" string)))

  (import "toolcell:plugin/host@0.2.0" (instance $host
    (export "now" (func (result u64)))
    (export "timer-start"
      (func (param "call" u64) (param "ms" u64) (result (result u64 (error string)))))))
  (alias export $host "now" (func $now))
  (alias export $host "timer-start" (func $timer-start))

  (core module $Memory
    (memory (export "memory") 1)
    (global $bump (mut i32) (i32.const 4096))
    ;; A bump allocator over 4096..60000 that wraps around: enough for short strings.
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $at i32)
      (if (i32.gt_u (global.get $bump) (i32.const 60000))
        (then (global.set $bump (i32.const 4096))))
      (local.set $at (i32.and (i32.add (global.get $bump) (i32.const 7)) (i32.const -8)))
      (global.set $bump (i32.add (local.get $at) (local.get 3)))
      (local.get $at)))
  (core instance $memory (instantiate $Memory))
  (alias core export $memory "memory" (core memory $mem))
  (alias core export $memory "realloc" (core func $realloc))
  (core func $now-lowered (canon lower (func $now)))
  (core func $timer-start-lowered
    (canon lower (func $timer-start) (memory $mem) (realloc $realloc)))
  (core instance $env
    (export "memory" (memory $mem))
    (export "realloc" (func $realloc))
    (export "now" (func $now-lowered))
    (export "timer-start" (func $timer-start-lowered)))

  ;; @MAIN@

  (core instance $main (instantiate $Main (with "env" (instance $env))))

  (func $load (param "request" $load-request)
    (result (result (list $tool-spec) (error $load-error)))
    (canon lift (core func $main "load") (memory $mem) (realloc $realloc)))
  (func $start (param "call" u64) (param "tool" string) (param "args-json" string)
    (param "deadline" u64) (result $call-state)
    (canon lift (core func $main "start") (memory $mem) (realloc $realloc)))
  (func $resume (param "call" u64) (param "op" u64) (param "outcome" $op-outcome)
    (result $call-state)
    (canon lift (core func $main "resume") (memory $mem) (realloc $realloc)))
  (func $cancel (param "call" u64) (param "reason" string)
    (canon lift (core func $main "cancel") (memory $mem) (realloc $realloc)))

  ;; An exported instance must name every record and variant its functions use, so
  ;; the functions pass through a small component that imports the types and the
  ;; functions and exports them again, the functions typed by the exported types.
  (component $Guest
    (type $ts (record
      (field "name" string) (field "description" string)
      (field "params-schema" (option string)) (field "timeout-ms" (option u32))
      (field "no-prompt" bool) (field "hidden" bool)
      (field "title" (option string)) (field "output-schema" (option string))))
    (import "import-tool-spec" (type $tool-spec (eq $ts)))
    (type $lr (record
      (field "name" string) (field "script" (option (list u8)))
      (field "deadline" u64) (field "memory-limit" u64) (field "debug-log" bool)))
    (import "import-load-request" (type $load-request (eq $lr)))
    (type $le (variant (case "timed-out") (case "failed" string)))
    (import "import-load-error" (type $load-error (eq $le)))
    (type $cs (variant
      (case "pending") (case "completed" string) (case "failed" string) (case "timed-out")
    (case "broke-rule" string) (case "out-of-memory")))
    (import "import-call-state" (type $call-state (eq $cs)))
    (type $hr (record
      (field "status" u16) (field "headers" (list (tuple string string)))
      (field "body" (list u8))))
    (import "import-http-response" (type $http-response (eq $hr)))
    (type $oo (variant
      (case "timer-fired") (case "http-response" $http-response) (case "http-error" string)))
    (import "import-op-outcome" (type $op-outcome (eq $oo)))
    (import "import-load" (func $load (param "request" $load-request)
      (result (result (list $tool-spec) (error $load-error)))))
    (import "import-start" (func $start (param "call" u64) (param "tool" string)
      (param "args-json" string) (param "deadline" u64) (result $call-state)))
    (import "import-resume" (func $resume (param "call" u64) (param "op" u64)
      (param "outcome" $op-outcome) (result $call-state)))
    (import "import-cancel" (func $cancel (param "call" u64) (param "reason" string)))
    (export $x-tool-spec "tool-spec" (type $tool-spec))
    (export $x-load-request "load-request" (type $load-request))
    (export $x-load-error "load-error" (type $load-error))
    (export $x-call-state "call-state" (type $call-state))
    (export $x-http-response "http-response" (type $http-response))
    (type $oo-exported (variant
      (case "timer-fired") (case "http-response" $x-http-response) (case "http-error" string)))
    (export $x-op-outcome "op-outcome" (type $op-outcome) (type (eq $oo-exported)))
    (export "load" (func $load) (func (param "request" $x-load-request)
      (result (result (list $x-tool-spec) (error $x-load-error)))))
    (export "start" (func $start) (func (param "call" u64) (param "tool" string)
      (param "args-json" string) (param "deadline" u64) (result $x-call-state)))
    (export "resume" (func $resume) (func (param "call" u64) (param "op" u64)
      (param "outcome" $x-op-outcome) (result $x-call-state)))
    (export "cancel" (func $cancel) (func (param "call" u64) (param "reason" string))))
  (instance $guest (instantiate $Guest
    (with "import-tool-spec" (type $tool-spec))
    (with "import-load-request" (type $load-request))
    (with "import-load-error" (type $load-error))
    (with "import-call-state" (type $call-state))
    (with "import-http-response" (type $http-response))
    (with "import-op-outcome" (type $op-outcome))
    (with "import-load" (func $load))
    (with "import-start" (func $start))
    (with "import-resume" (func $resume))
    (with "import-cancel" (func $cancel))))
  (export "toolcell:plugin/guest@0.2.0" (instance $guest)))
