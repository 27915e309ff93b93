#!/bin/sh
# Builds the plugin with {{build_script}} from a toolcell source checkout, loads it as
# toolcell will (toolcell check), then calls its tool and compares the answer.
# TOOLCELL names the toolcell binary (default: toolcell on the PATH); TOOLCELL_SRC the
# checkout.
set -eu
cd "$(dirname "$0")"
toolcell=${TOOLCELL:-toolcell}
default_src={{toolcell_src}}
src=${TOOLCELL_SRC:-$default_src}
if [ -z "$src" ] || [ ! -x "$src/{{build_script}}" ]; then
  echo "test.sh: set TOOLCELL_SRC to a toolcell source checkout (it has {{build_script}})" >&2
  exit 2
fi

mkdir -p dist
TOOLCELL=$toolcell "$src/{{build_script}}" . dist/{{name}}.wasm
"$toolcell" check dist

{{expect}}