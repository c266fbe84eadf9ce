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
#   SANITIZE_APP_SUITES a test also tagged with one of these runs only when SANITIZE_TESTS names
#                      it (default "apps replay": the programs' integration tests that the cm,
#                      nvmf and dataplane tags would pull in, with roce-gen, roce-appliance and
#                      roce-replay built instrumented; docs/ci.md)
#   SANITIZE_BUILD_DIR (default build-asan)
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${SANITIZE_BUILD_DIR:-build-asan}
suites=${SANITIZE_SUITES:-protocol capture support util cc rdma cm nvmf dataplane netsim fuzz}
tests=${SANITIZE_TESTS-oob_tests raw_gen_tests apps_inspect_tests apps_demo_pcap_tests raw_gen_cli_tests}
app_suites=${SANITIZE_APP_SUITES-apps replay}
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
# A meson.build changed since the last configure: regenerate first, so that the introspection
# below lists the tests and targets of the sources as they are now.
ninja -C "$build" build.ninja >/dev/null
# Build only what these tests run (and what they depend on), not the whole tree: the apps,
# benchmarks and tools this step does not run would double its compile time in CI.
chosen=$(SUITES="$suites" TESTS="$tests" APP_SUITES="$app_suites" BUILD="$build" python3 - <<'PY'
import json, os, subprocess
build = os.environ["BUILD"]
suites = set(os.environ["SUITES"].split())
names = set(os.environ["TESTS"].split())
app_suites = set(os.environ["APP_SUITES"].split())
intro = lambda what: json.loads(subprocess.check_output(["meson", "introspect", "--" + what, build]))
files = {}
for t in intro("targets"):
    files[t["id"]] = t["filename"]
targets, tests = set(), []
for t in intro("tests"):
    tags = {s.split(":")[-1] for s in t["suite"]}
    wanted = t["name"] in names or (tags & suites and not tags & app_suites)
    if not wanted:
        continue
    tests.append(t["name"])
    for f in [t["cmd"][0]] + [x for d in t.get("depends", []) for x in files.get(d, [])]:
        if os.path.isabs(f) and f.startswith(os.path.abspath(build) + os.sep):
            targets.add(os.path.relpath(f, os.path.abspath(build)))
print(" ".join(sorted(targets)))
print(" ".join(tests))
PY
)
targets=$(echo "$chosen" | sed -n 1p)
names=$(echo "$chosen" | sed -n 2p)
if [ -n "$targets" ]; then
  # shellcheck disable=SC2086  # one target per word
  ninja -C "$build" $targets
fi
# The tests by name: a suite name would also run its app-tagged tests, which were not built.
if [ -z "$names" ]; then
  echo "40-sanitize.sh: no tests selected (SANITIZE_SUITES='$suites', SANITIZE_TESTS='$tests')" >&2
  exit 1
fi
# shellcheck disable=SC2086  # one test name per word
meson test -C "$build" --no-rebuild --print-errorlogs $names
