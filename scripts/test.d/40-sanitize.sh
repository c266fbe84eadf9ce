#!/bin/sh
# Step of scripts/test.sh: builds build-asan with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the meson test suites there, at -O1: clang++ when installed (it compiles the
# instrumented tests about twice as fast as g++ here, and the build then also holds the
# libFuzzer targets, which 50-fuzz.sh and 55-fuzz-receive.sh reuse), else c++;
# SANITIZE_CXX=g++ to switch. Leak checking is on; a UBSan report fails the run like an ASan one.
#   SANITIZE_SUITES    space-separated suites (default: all but apps and the scapy/tshark
#                      cross-checks; see docs/robustness.md)
#   SANITIZE_TESTS     single tests of the mixed apps suite also run (default: those that need
#                      no DPDK)
#   SANITIZE_BUILD_DIR (default build-asan)
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${SANITIZE_BUILD_DIR:-build-asan}
suites=${SANITIZE_SUITES:-protocol capture support util cc rdma cm nvmf dataplane netsim fuzz}
tests=${SANITIZE_TESTS-oob_tests raw_gen_tests apps_inspect_tests apps_demo_pcap_tests raw_gen_cli_tests}
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
# A meson.build changed since the last configure: regenerate first, so that the introspection
# below lists the tests and targets of the sources as they are now.
ninja -C "$build" build.ninja >/dev/null
# Build only what these tests run (and what they depend on), not the whole tree: the apps,
# benchmarks and tools this step does not run would double its compile time in CI.
targets=$(SUITES="$suites" TESTS="$tests" BUILD="$build" python3 - <<'PY'
import json, os, subprocess
build = os.environ["BUILD"]
suites = set(os.environ["SUITES"].split())
names = set(os.environ["TESTS"].split())
intro = lambda what: json.loads(subprocess.check_output(["meson", "introspect", "--" + what, build]))
files = {}
for t in intro("targets"):
    files[t["id"]] = t["filename"]
chosen = set()
for t in intro("tests"):
    wanted = t["name"] in names or any(s.split(":")[-1] in suites for s in t["suite"])
    if not wanted:
        continue
    for f in [t["cmd"][0]] + [x for d in t.get("depends", []) for x in files.get(d, [])]:
        if os.path.isabs(f) and f.startswith(os.path.abspath(build) + os.sep):
            chosen.add(os.path.relpath(f, os.path.abspath(build)))
print(" ".join(sorted(chosen)))
PY
)
if [ -n "$targets" ]; then
  # shellcheck disable=SC2086  # one target per word
  ninja -C "$build" $targets
fi
# Two runs: meson intersects --suite with test names rather than adding them.
# shellcheck disable=SC2086  # one --suite per word
meson test -C "$build" --no-rebuild --print-errorlogs $args
if [ -n "$tests" ]; then
  # shellcheck disable=SC2086  # one test name per word
  meson test -C "$build" --no-rebuild --print-errorlogs $tests
fi
