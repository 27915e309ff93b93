#!/bin/sh
# Loads the plugin as toolcell will (toolcell check), then calls its tool and compares
# the answer. TOOLCELL names the toolcell binary (default: toolcell on the PATH).
set -eu
cd "$(dirname "$0")"
toolcell=${TOOLCELL:-toolcell}

"$toolcell" check .

expect() { # TOOL ARGS_JSON EXPECTED_OUTPUT
  got=$("$toolcell" call --plugins . "$1" "$2") || true
  if [ "$got" != "$3" ]; then
    printf 'FAIL: %s %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3" "$got" >&2
    exit 1
  fi
  printf 'ok: %s %s\n' "$1" "$2"
}

expect {{tool}} '{"name":"world"}' 'Hello, world!'
