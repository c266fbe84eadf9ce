#!/bin/sh
# Builds a libFuzzer target (clang, ASan+UBSan) in build-fuzz and runs it for a bounded time
# from a seed corpus made at run time. Fails on any crash, sanitizer report or invariant
# violation; the crashing input is left in build-fuzz/fuzz/<target>/artifacts/. Exit 77 (skip)
# when clang++ is not installed.
#   scripts/fuzz.sh [parser|receive|nvme|nvmf|ndp]
#     parser   the frame parser (tests/protocol/fuzz_parser); seeds: our builder's frames for
#              every opcode plus the frames of ../shared/captures when present (default)
#     receive  the whole receive path: parser, engine, responder, completer with RC/UC/UD QPs
#              set up (tests/lib/rdma/fuzz_receive); seeds: frames aimed at its QPs plus
#              windows of pcap/ and ../shared/captures
#     nvme     NVMe/RDMA command and response capsules, rdma_cm private data
#              (tests/protocol/fuzz_nvme); no seeds (any 64+ bytes is a capsule)
#     ndp      IPv6 neighbour discovery (tests/dataplane/fuzz_ndp): any frame, or edits of a
#              valid solicitation; no seeds
#     nvmf     the NVMe-oF target's command handling: capsules and their data into connected
#              admin and I/O queues (tests/lib/nvmf/fuzz_nvmf_target); no seeds
#   FUZZ_SECONDS  total fuzzing time (default 60)
#   FUZZ_BUILD_DIR (default build-fuzz)
#   ROCE_CAPTURES_DIR (default: the first shared/captures beside the repository or above it)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${1:-parser}
case $target in
  parser | receive | nvme | nvmf | ndp) ;;
  *) echo "usage: $0 [parser|receive|nvme|nvmf|ndp]" >&2; exit 2 ;;
esac
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
work=$build/fuzz/$target
rm -rf "$work/seeds"
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
if [ -z "$captures" ] || [ ! -d "$captures" ]; then
  echo "fuzz.sh: no shared/captures found (ROCE_CAPTURES_DIR='${ROCE_CAPTURES_DIR:-}'); seeding without them"
  captures=
fi
if [ "$target" = parser ]; then
  ninja -C "$build" tests/protocol/fuzz_parser tests/protocol/fuzz_seeds
  # shellcheck disable=SC2086  # no captures: no argument
  "$build/tests/protocol/fuzz_seeds" "$work/seeds" $captures
  fuzzer=$build/tests/protocol/fuzz_parser
  max_len=4400
elif [ "$target" = nvme ]; then
  ninja -C "$build" tests/protocol/fuzz_nvme
  fuzzer=$build/tests/protocol/fuzz_nvme
  max_len=4200
elif [ "$target" = ndp ]; then
  ninja -C "$build" tests/dataplane/fuzz_ndp
  fuzzer=$build/tests/dataplane/fuzz_ndp
  max_len=200
elif [ "$target" = nvmf ]; then
  ninja -C "$build" tests/lib/nvmf/fuzz_nvmf_target
  fuzzer=$build/tests/lib/nvmf/fuzz_nvmf_target
  max_len=4200
else
  ninja -C "$build" tests/lib/rdma/fuzz_receive tests/lib/rdma/fuzz_receive_seeds
  # shellcheck disable=SC2086
  "$build/tests/lib/rdma/fuzz_receive_seeds" "$work/seeds" "$root/pcap" $captures
  fuzzer=$build/tests/lib/rdma/fuzz_receive
  max_len=20000
fi

# UBSan reports must stop the run like ASan's do.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
echo "fuzz.sh: fuzzing $target for ${seconds}s"
# libFuzzer's default exit status on a crash is 77, which test.sh reads as "skipped".
"$fuzzer" -max_total_time="$seconds" -max_len=$max_len -timeout=10 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
