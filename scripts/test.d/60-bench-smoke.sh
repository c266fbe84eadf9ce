#!/bin/sh
# Step of scripts/test.sh: the performance suite in its seconds-long smoke mode, in the test
# build ($BUILD_DIR), so the benchmarks keep building and running. Writes to
# $BUILD_DIR/smoke, not docs/. Timings are never asserted: it fails only if the build fails or
# the transport misbehaves while measured.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
BENCH_BUILD_DIR=${BUILD_DIR:-$root/build} exec "$root/scripts/bench.sh" --smoke
