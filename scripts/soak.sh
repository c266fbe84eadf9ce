#!/usr/bin/env bash
# Soak test, outside the default test command: roce-gen against roce-appliance in one process
# (roce-demo --soak) through the link emulator with 5 % loss, 5 % duplication and 5 %
# reordering each way, for a bounded time. Every round of WRITEs, READs or atomics is checked by
# reading the appliance's memory back; resident memory is sampled after every round and must not
# grow after warm-up; every mbuf must be back in its pool at the end. Exit status 0 = passed.
#   SOAK_SECONDS  how long (default 300)
#   SOAK_LOSS / SOAK_DUP / SOAK_REORDER  fault probabilities (default 0.05 each)
#   SOAK_SIZE / SOAK_ITERS  message size and messages per round (default 4096, 2000)
# Extra arguments go to roce-demo (e.g. --soak-rss-slack 8).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ensure_packages
configure_and_build

out="${SOAK_OUT:-$ROOT/soak-out}"
log "roce-demo --soak ${SOAK_SECONDS:-300}s (loss ${SOAK_LOSS:-0.05}, dup ${SOAK_DUP:-0.05}, reorder ${SOAK_REORDER:-0.05})"
exec "$BUILD_DIR/apps/demo/roce-demo" --out "$out" --soak "${SOAK_SECONDS:-300}" \
  --loss "${SOAK_LOSS:-0.05}" --dup "${SOAK_DUP:-0.05}" --reorder "${SOAK_REORDER:-0.05}" \
  -s "${SOAK_SIZE:-4096}" -n "${SOAK_ITERS:-2000}" --bottleneck 10 "$@"
