#!/bin/sh
# Step of scripts/test.sh: builds build-asan with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the listed meson test suites there, at -O1: clang++ when installed (it compiles the
# instrumented tests about twice as fast as g++ here), else c++; SANITIZE_CXX=g++ to switch.
# A UBSan report fails the run like an ASan one.
#   SANITIZE_SUITES  space-separated suites (default: protocol)
#   SANITIZE_BUILD_DIR (default build-asan)
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${SANITIZE_BUILD_DIR:-build-asan}
suites=${SANITIZE_SUITES:-protocol}
if [ -z "${SANITIZE_CXX:-}" ] && command -v clang++ >/dev/null 2>&1; then
  cxx=clang++
else
  cxx=${SANITIZE_CXX:-c++}
fi

if [ ! -f "$build/build.ninja" ]; then
  lundef=true
  case $("$cxx" --version | head -n 1) in *clang*) lundef=false ;; esac
  CXX=$cxx meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=$lundef -Dwerror=true \
    -Doptimization=1 -Dbenchmarks=disabled
fi

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}
args=""
for s in $suites; do args="$args --suite $s"; done
# shellcheck disable=SC2086  # one --suite per word
meson test -C "$build" --print-errorlogs $args
