#!/bin/sh
# Loads the plugin as toolcell will (toolcell check), then calls its tool and compares
# the answer. TOOLCELL names the toolcell binary (default: toolcell on the PATH).
set -eu
cd "$(dirname "$0")"
toolcell=${TOOLCELL:-toolcell}

"$toolcell" check .

{{expect}}