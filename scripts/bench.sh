#!/usr/bin/env bash
# The performance suite in one command: builds a release build in build-bench (its own build
# directory, -Dbuildtype=release -Doptimization=2: NDEBUG, -O2), runs bench/perf_suite (transport figures next to same-run
# baselines) and bench/protocol_bench, and writes
#   docs/benchmarks/perf_suite.json, protocol_bench.json, meta.json   raw samples and the run
#   docs/benchmarks/goodput.svg                                       goodput vs message size
#   docs/benchmarks/responder_runs.md                                 4 KiB responder over 5 runs
#   docs/BENCHMARKS.md                                                medians [min-max], ratios
# Timings are reported, never asserted; the exit status is non-zero only if a build fails or
# the transport misbehaves while measured.
#   bench.sh [--smoke] [--out DIR] [-- perf_suite options]   (--smoke: seconds, for CI; writes
#            to <build>/smoke unless --out is given, so docs/ keeps the real figures)
#   BENCH_BUILD_DIR (default build-bench), BENCH_RUNS (default 5), BENCH_WINDOW (default 0.1 s)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD_DIR:-$root/build-bench}
smoke=0
out=""
suite_args=()
while (($#)); do
  case $1 in
    --smoke) smoke=1 ;;
    --out) out=$2; shift ;;
    --) shift; suite_args=("$@"); break ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ -z $out ]]; then
  if ((smoke)); then out=$build/smoke; else out=$root/docs; fi
fi
data=$out/benchmarks
mkdir -p "$data"

if [[ ! -f $build/build.ninja ]]; then
  # -O2, not release's -O3: gcc 12 reports -Wrestrict false positives inside std::string at -O3.
  meson setup "$build" "$root" -Dbuildtype=release -Doptimization=2 -Dwerror=true -Dtests=disabled >/dev/null
fi
ninja -C "$build" -j2 bench/perf_suite bench/protocol_bench >/dev/null || { ninja -C "$build" -j2 bench/perf_suite bench/protocol_bench; exit 1; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# Whether the measured tree differs from HEAD, taken before this run rewrites its own outputs.
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -1)
if ((smoke)); then
  suite=(--smoke)
  proto=(--benchmark_min_time=0.01 --benchmark_repetitions=2)
else
  suite=(--runs "${BENCH_RUNS:-5}" --window "${BENCH_WINDOW:-0.1}")
  proto=(--benchmark_min_time=0.2 --benchmark_repetitions="${BENCH_RUNS:-5}")
fi
# Unique DPDK file prefix per run; its runtime directory is removed afterwards.
prefix=roce_perf_bench_$$
trap 'rm -rf "/var/run/dpdk/$prefix"' EXIT
"$build/bench/perf_suite" --no-huge --no-pci -m 2048 --file-prefix="$prefix" --log-level=error --no-telemetry -- \
  --out "$data/perf_suite.json" "${suite[@]}" "${suite_args[@]}"
"$build/bench/protocol_bench" "${proto[@]}" --benchmark_out="$data/protocol_bench.json" --benchmark_out_format=json >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$data/meta.json" "$root" "$build" "$load_before" "$load_after" "${suite[*]} ${suite_args[*]:-}" "$dirty" <<'PY'
import json, subprocess, sys, datetime, platform
meta_path, root, build, before, after, args, dirty = sys.argv[1:]
def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return ""
lscpu = {}
for line in run("lscpu").splitlines():
    k, _, v = line.partition(":")
    lscpu[k.strip()] = v.strip()
rev = run("git", "-C", root, "rev-parse", "--short", "HEAD")
if dirty:
    rev += " (with uncommitted changes)"
mem = run("free", "-g").splitlines()
buildtype = "?"
try:
    for o in json.load(open(build + "/meson-info/intro-buildoptions.json")):
        if o["name"] == "buildtype":
            buildtype = o["value"]
except Exception:
    pass
meta = {
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "git_revision": rev,
    "uname": run("uname", "-srvm"),
    "cpu_model": lscpu.get("Model name", "?"),
    "cpus": "{} ({} thread(s) per core)".format(lscpu.get("CPU(s)", "?"), lscpu.get("Thread(s) per core", "?")),
    "l3": lscpu.get("L3 cache", lscpu.get("L3", "not reported by lscpu")),
    "memory": mem[1].split()[1] + " GiB" if len(mem) > 1 else "?",
    "compiler": run("c++", "--version").splitlines()[0] if run("c++", "--version") else "?",
    "buildtype": buildtype + " (" + build.rsplit("/", 1)[-1] + ")",
    "load_before": before,
    "load_after": after,
    "command": "scripts/bench.sh " + args.strip(),
}
json.dump(meta, open(meta_path, "w"), indent=1)
PY
# The 4 KiB responder figure over five whole runs (a process each: it moves more between
# processes than within one); not in smoke mode, whose figures mean nothing.
sections=()
if ((!smoke)); then
  "$root/scripts/bench_responder.sh" --runs 5 --window "${BENCH_WINDOW:-0.1}" --out "$data/responder_runs.md" \
    "$build/bench/perf_suite" >/dev/null
  sections+=(--section "$data/responder_runs.md")
fi
# Sections other benchmark scripts wrote (scripts/bench_verbs.sh: docs/benchmarks/verbs.md) and the
# NVMe-oF figures (docs/benchmarks/nvmf.md, from roce-gen nvme-* by hand) stay in.
[[ -f $root/docs/benchmarks/verbs.md ]] && sections+=(--section "$root/docs/benchmarks/verbs.md")
[[ -f $root/docs/benchmarks/nvmf.md ]] && sections+=(--section "$root/docs/benchmarks/nvmf.md")
# A full run must give every target its same-run baseline (the responder's ACKs per WRITE, the
# ACK's build and parse for the RTT): a row with "n/a" there fails the run instead.
strict=()
((smoke)) || strict=(--require-targets)
python3 "$root/scripts/bench_report.py" --suite "$data/perf_suite.json" --protocol "$data/protocol_bench.json" \
  --meta "$data/meta.json" --markdown "$out/BENCHMARKS.md" --svg "$data/goodput.svg" --svg-link benchmarks/goodput.svg \
  --before-after "$root/docs/benchmarks/before-after.md" "${sections[@]}" "${strict[@]}"
echo "bench.sh: wrote $out/BENCHMARKS.md and $data/ in $SECONDS s"
