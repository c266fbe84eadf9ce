#!/bin/sh
# Step of scripts/test.sh: builds build-asan with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the meson test suites there, at -O1: clang++ when installed (it compiles the
# instrumented tests about twice as fast as g++ here, and the build then also holds the
# libFuzzer targets, which 50-fuzz.sh and 55-fuzz-receive.sh reuse), else c++;
# SANITIZE_CXX=g++ to switch. Leak checking is on; a UBSan report fails the run like an ASan one.
#   SANITIZE_SUITES    space-separated suites (default: every suite but the DPDK-heavy
#                      dataplane one and the scapy/tshark cross-checks; see docs/robustness.md)
#   SANITIZE_DATAPLANE gtest filter of dataplane_tests also run (default: the ring pair tests;
#                      empty: none)
#   SANITIZE_BUILD_DIR (default build-asan)
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${SANITIZE_BUILD_DIR:-build-asan}
suites=${SANITIZE_SUITES:-protocol support util cc rdma apps fuzz}
dataplane=${SANITIZE_DATAPLANE-RingPair*}
if [ -z "${SANITIZE_CXX:-}" ] && command -v clang++ >/dev/null 2>&1; then
  cxx=clang++
else
  cxx=${SANITIZE_CXX:-c++}
fi

if [ ! -f "$build/build.ninja" ]; then
  lundef=true
  fuzz=false
  case $("$cxx" --version | head -n 1) in *clang*) lundef=false; fuzz=true ;; esac
  CXX=$cxx meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=$lundef -Dwerror=true \
    -Doptimization=1 -Dbenchmarks=disabled -Dfuzz=$fuzz
fi

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}
args=""
for s in $suites; do
  # A suite this build does not have (fuzz without clang) is not an error.
  if [ -n "$(meson test -C "$build" --no-rebuild --list --suite "$s" 2>/dev/null)" ]; then
    args="$args --suite $s"
  else
    echo "40-sanitize.sh: no tests in suite '$s' in this build; skipping it"
  fi
done
# shellcheck disable=SC2086  # one --suite per word
meson test -C "$build" --print-errorlogs $args
if [ -n "$dataplane" ]; then
  echo "40-sanitize.sh: dataplane_tests --gtest_filter=$dataplane"
  "$build/tests/dataplane/dataplane_tests" --gtest_filter="$dataplane"
fi
