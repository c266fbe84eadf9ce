#!/bin/sh
# Builds the libFuzzer target of the parser (clang, ASan+UBSan) in build-fuzz and runs it for a
# bounded time from a seed corpus made at run time: our builder's frames for every opcode, plus
# the frames of ../shared/captures when present. Fails on any crash, sanitizer report or
# invariant violation; the crashing input is left in build-fuzz/fuzz/artifacts/. Exit 77 (skip)
# when clang++ is not installed.
#   FUZZ_SECONDS  total fuzzing time (default 60)
#   FUZZ_BUILD_DIR (default build-fuzz)
#   ROCE_CAPTURES_DIR (default: the first shared/captures beside the repository or above it)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD_DIR:-build-fuzz}
# ../shared/captures of the repository, or of a directory above it (git worktrees live deeper).
captures=${ROCE_CAPTURES_DIR:-}
if [ -z "$captures" ]; then
  dir=$root
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    if [ -d "$dir/shared/captures" ]; then
      captures=$dir/shared/captures
      break
    fi
  done
fi

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: SKIP: clang++ not found (apt-get install clang); libFuzzer needs clang" >&2
  exit 77
fi
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dwerror=true -Dbenchmarks=disabled
fi
ninja -C "$build" tests/protocol/fuzz_parser tests/protocol/fuzz_seeds

work=$build/fuzz
rm -rf "$work/seeds"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
if [ -n "$captures" ] && [ -d "$captures" ]; then
  "$build/tests/protocol/fuzz_seeds" "$work/seeds" "$captures"
else
  echo "fuzz.sh: no shared/captures found (ROCE_CAPTURES_DIR='${ROCE_CAPTURES_DIR:-}'); seeding from the builder only"
  "$build/tests/protocol/fuzz_seeds" "$work/seeds"
fi

# UBSan reports must stop the run like ASan's do.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
echo "fuzz.sh: fuzzing the parser for ${seconds}s"
# libFuzzer's default exit status on a crash is 77, which test.sh reads as "skipped".
"$build/tests/protocol/fuzz_parser" -max_total_time="$seconds" -max_len=4400 -timeout=10 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
