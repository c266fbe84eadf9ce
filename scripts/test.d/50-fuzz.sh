#!/bin/sh
# Step of scripts/test.sh: a short libFuzzer run of the parser (see scripts/fuzz.sh). Reuses the
# sanitizer build of 40-sanitize.sh when it was made with the fuzz targets (clang), so CI
# compiles the instrumented sources once.
set -eu
asan=${SANITIZE_BUILD_DIR:-build-asan}
if [ -z "${FUZZ_BUILD_DIR:-}" ] && grep -q '"name": "fuzz", "value": true' "$asan/meson-info/intro-buildoptions.json" 2>/dev/null; then
  export FUZZ_BUILD_DIR=$asan
fi
FUZZ_SECONDS=${FUZZ_SECONDS:-30} exec "$(dirname "$0")/../fuzz.sh" parser
