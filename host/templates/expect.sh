expect() { # TOOL ARGS_JSON EXPECTED_OUTPUT
  got=$("$toolcell" call --plugins {{plugins_dir}} "$1" "$2") || true
  if [ "$got" != "$3" ]; then
    printf 'FAIL: %s %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3" "$got" >&2
    exit 1
  fi
  printf 'ok: %s %s\n' "$1" "$2"
}

expect {{tool}} '{"name":"world"}' 'Hello, world!'
