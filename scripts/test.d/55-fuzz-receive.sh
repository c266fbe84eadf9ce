#!/bin/sh
# Step of scripts/test.sh: a short libFuzzer run of the whole receive path (parser, engine,
# responder, completer; see scripts/fuzz.sh receive). Skips (77, with the reason) without clang.
# Reuses the sanitizer build of 40-sanitize.sh when it holds the fuzz targets.
set -eu
asan=${SANITIZE_BUILD_DIR:-build-asan}
if [ -z "${FUZZ_BUILD_DIR:-}" ] && grep -q '"name": "fuzz", "value": true' "$asan/meson-info/intro-buildoptions.json" 2>/dev/null; then
  export FUZZ_BUILD_DIR=$asan
fi
FUZZ_SECONDS=${FUZZ_RECEIVE_SECONDS:-25} exec "$(dirname "$0")/../fuzz.sh" receive
