#!/bin/sh
# Builds the plugin, loads it as toolcell will (toolcell check), then calls its tool and
# compares the answer. TOOLCELL names the toolcell binary (default: toolcell on the
# PATH); PROFILE the cargo profile (default: release).
set -eu
cd "$(dirname "$0")"
toolcell=${TOOLCELL:-toolcell}
profile=${PROFILE:-release}

cargo build --target wasm32-wasip2 --profile "$profile"
mkdir -p dist
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/$profile/{{crate}}.wasm" dist/{{name}}.wasm
"$toolcell" check dist

{{expect}}