#!/bin/sh
# Step of scripts/test.sh: live interop with Linux Soft-RoCE (rdma_rxe) in a qemu guest, every
# case of tests/interop/run.sh (several minutes; exit 77 with the reason when qemu, root or the
# guest image are not available). INTEROP_CASES=REGEX narrows the list.
set -eu
root=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ -n "${INTEROP_CASES:-}" ]; then
  exec "$root/tests/interop/run.sh" --build-dir "${BUILD_DIR:-$root/build}" --cases "$INTEROP_CASES"
fi
exec "$root/tests/interop/run.sh" --build-dir "${BUILD_DIR:-$root/build}"
