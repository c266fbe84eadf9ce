#!/bin/sh
# Runs bench/protocol_bench briefly (3 repetitions, medians) and prints a markdown table: per
# payload size, memcpy GB/s next to each ICRC backend's GB/s and their ratio, plus parse and
# build rates. Absolute figures depend on the machine and its load; read the ratios.
#   BUILD_DIR (default build), BENCH_MIN_TIME seconds per run (default 0.2)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
min_time=${BENCH_MIN_TIME:-0.2}
bin=$build/bench/protocol_bench

ninja -C "$build" bench/protocol_bench >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin" --benchmark_min_time="$min_time" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json >/dev/null 2>&1

python3 - "$out" <<'PY'
import json, sys

doc = json.load(open(sys.argv[1]))
ctx = doc["context"]
runs = {}
for b in doc["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, size = b["run_name"].rsplit("/payload:", 1)
    runs[(name, int(size))] = b
sizes = sorted({s for _, s in runs})

def gbs(name, size):
    return runs[(name, size)]["GB"]

def mpps(name, size):
    return runs[(name, size)]["Mpkt"]

print(f"{ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, load average "
      f"{' '.join(f'{x:.2f}' for x in ctx.get('load_avg', []))}, libbenchmark built as {ctx['library_build_type']}\n")
print("ICRC throughput vs memcpy of the same bytes (IPv4 RC WRITE_ONLY datagram; medians of 3)\n")
print("| payload | bytes | memcpy GB/s | isal GB/s (ratio) | zlib GB/s (ratio) | portable GB/s (ratio) |")
print("|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    m = gbs("BM_Memcpy", s)
    cells = [f"{gbs('BM_Icrc/' + b, s):.2f} ({gbs('BM_Icrc/' + b, s) / m:.3f})" for b in ("isal", "zlib", "portable")]
    print(f"| {s} | {runs[('BM_Memcpy', s)]['bytes_per_op']:.0f} | {m:.2f} | " + " | ".join(cells) + " |")

print("\nPer-packet rates (Mpps; whole frame)\n")
print("| payload | parse + ICRC (isal) | parse, headers only | build + ICRC (isal) | ICRC isal / zlib / portable |")
print("|---:|---:|---:|---:|---:|")
for s in sizes:
    icrc = " / ".join(f"{mpps('BM_Icrc/' + b, s):.2f}" for b in ("isal", "zlib", "portable"))
    print(f"| {s} | {mpps('BM_Parse/icrc_isal', s):.2f} | {mpps('BM_Parse/headers_only', s):.2f} | "
          f"{mpps('BM_Build', s):.2f} | {icrc} |")
PY
