#!/usr/bin/env bash
# The 4 KiB responder-worker figure (fraction of the memcpy + ICRC ceiling) over several whole
# runs of perf_suite, because on the sessions' machines it moves more between processes than
# within one (perf-changes.md section 18): each run is a new process (`--only responder`), and
# the figure is the median of the runs' medians with its spread. Given two binaries, the runs
# alternate (A B A B ...) so that a change can be judged against the drift of the host.
# Prints markdown; timings are reported, never asserted.
#   bench_responder.sh [--runs N] [--window S] [--out FILE] PERF_SUITE [PERF_SUITE_B] [-- perf_suite options]
#   (--runs: runs per binary, default 5; --window: seconds per sample, default 0.1)
set -euo pipefail

runs=5
window=0.1
out=""
bins=()
extra=()
while (($#)); do
  case $1 in
    --runs) runs=$2; shift ;;
    --window) window=$2; shift ;;
    --out) out=$2; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "bench_responder.sh: unknown option $1" >&2; exit 2 ;;
    *) bins+=("$1") ;;
  esac
  shift
done
if ((${#bins[@]} < 1 || ${#bins[@]} > 2)); then
  echo "usage: bench_responder.sh [--runs N] [--window S] [--out FILE] PERF_SUITE [PERF_SUITE_B] [-- options]" >&2
  exit 2
fi
for b in "${bins[@]}"; do [[ -x $b ]] || { echo "bench_responder.sh: $b is not an executable" >&2; exit 2; }; done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < runs; ++i)); do
  for ((k = 0; k < ${#bins[@]}; ++k)); do
    prefix=roce_perf_resp_$$_${i}_$k
    "${bins[$k]}" --no-huge --no-pci -m 2048 --file-prefix="$prefix" --log-level=error --no-telemetry -- \
      --only responder --runs 5 --window "$window" --out "$tmp/$k-$i.json" "${extra[@]}" >/dev/null 2>"$tmp/$k-$i.log" ||
      { cat "$tmp/$k-$i.log" >&2; rm -rf "/var/run/dpdk/$prefix"; exit 1; }
    rm -rf "/var/run/dpdk/$prefix"
    cut -d' ' -f1 /proc/loadavg >"$tmp/$k-$i.load"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$tmp" "$runs" "${#bins[@]}" "$load_before" "$load_after" "$window" "${bins[@]}" >"$tmp/report.md" <<'PY'
import json, statistics, sys
tmp, runs, nbins, before, after, window = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
bins = sys.argv[7:]

def figure(doc, case, **params):
    for f in doc["figures"]:
        if f["case"] == case and all(f["params"].get(k) == v for k, v in params.items()):
            return f
    return None

def mmm(v, d=2):
    return "{:.{d}f} [{:.{d}f}-{:.{d}f}]".format(statistics.median(v), min(v), max(v), d=d) if v else "n/a"

per = []
for k in range(nbins):
    rows = []
    for i in range(runs):
        doc = json.load(open("{}/{}-{}.json".format(tmp, k, i)))
        ratio = figure(doc, "responder_vs_ceiling", payload=4096)
        gbit = figure(doc, "responder_worker", payload=4096)
        # The same windows over the thread's CPU time (absent from builds before it was added).
        cpu = figure(doc, "responder_vs_ceiling_cpu", payload=4096)
        best = figure(doc, "responder_vs_ceiling_best", payload=4096)
        # The two sides of the CPU-time ratio (the ceiling's is absent from builds before r4k12).
        worker_cpu = figure(doc, "responder_worker_cpu", payload=4096)
        ceiling_cpu = figure(doc, "responder_ceiling_cpu", payload=4096)
        # parse+verify of a 64 B WRITE timed before each window: the host's state (absent before
        # section 69's build).
        host = figure(doc, "responder_host_floor", payload=4096)
        # The worker over the ceiling of sessions 1-22 (frames reused every round, in cache),
        # over CPU time: absent before section 91's build, whose ceiling reads the worker's frames.
        reused = figure(doc, "responder_vs_ceiling_reused_cpu", payload=4096)
        load = open("{}/{}-{}.load".format(tmp, k, i)).read().strip()
        med = lambda f: statistics.median(f["samples"]) if f and f["samples"] else None
        rows.append((statistics.median(ratio["samples"]), statistics.median(gbit["samples"]), load, med(cpu), med(best),
                     med(worker_cpu), med(ceiling_cpu), med(host), med(reused)))
    per.append(rows)
label = "AB"[:nbins]
print("### 4 KiB responder worker over {} runs{}".format(runs, " per binary, alternating" if nbins == 2 else ""))
print()
print("Each run is one process (`perf_suite --only responder`, 5 windows of {} s, each paired with a".format(window))
print("ceiling window right before it); its figure is the median of its paired ratios. Load average")
print("{} before, {} after.".format(before, after))
print()
for k, b in enumerate(bins):
    print("- {}: `{}`".format(label[k], b))
print()
print("The CPU-time column divides both windows by the thread's CPU time instead of wall time: on a")
print("loaded machine it leaves out the time the thread was descheduled, which the wall-time ratio does not.")
print("The best-round column divides the fastest round (2048 frames) of each responder window by the")
print("fastest round of its ceiling window: the rounds the other jobs left alone.")
print("The host column is the protocol layer's parse+verify of a 64 B WRITE timed before each window:")
print("this guest's vCPUs run in a fast state (about 30 ns) and a slow one (about 50 ns) that slows")
print("compute but not memory bandwidth, so the slow state reads this figure lower (perf-changes.md section 69).")
print("The ceiling copies the worker's own frames (its pool, its preload) into its buffer; builds before")
print("section 91 copied frames of their own, read again every round and so in cache, which the worker's are not.")
print()
print("| run | " + " | ".join("{0} fraction of ceiling | {0} CPU time | {0} best round | {0} Gbit/s | {0} host ns | load".format(label[k]) for k in range(nbins)) + " |")
print("|---:|" + "---:|---:|---:|---:|---:|---:|" * nbins)
fmt = lambda v: "n/a" if v is None else "{:.2f}".format(v)
for i in range(runs):
    cells = []
    for k in range(nbins):
        r, g, load, c, b = per[k][i][:5]
        host = per[k][i][7]
        cells += ["{:.2f}".format(r), fmt(c), fmt(b), "{:.1f}".format(g), "n/a" if host is None else "{:.0f}".format(host), load]
    print("| {} | {} |".format(i + 1, " | ".join(cells)))
print()
for k in range(nbins):
    cpu = [row[3] for row in per[k] if row[3] is not None]
    best = [row[4] for row in per[k] if row[4] is not None]
    print("{}: fraction of the ceiling, median of the runs [min-max]: **{}**; over CPU time {}; best rounds {}; Gbit/s {}.".format(
        label[k], mmm([row[0] for row in per[k]]), mmm(cpu), mmm(best), mmm([row[1] for row in per[k]], 1)))
    worker_cpu = [row[5] for row in per[k] if row[5] is not None]
    ceiling_cpu = [row[6] for row in per[k] if row[6] is not None]
    if worker_cpu and ceiling_cpu:
        print("{}: over CPU time, the responder {} Gbit/s and its paired ceiling {} Gbit/s.".format(
            label[k], mmm(worker_cpu, 1), mmm(ceiling_cpu, 1)))
    reused = [row[8] for row in per[k] if row[8] is not None]
    if reused:
        print("{}: over CPU time against the ceiling whose frames stay in cache (sessions 1-22's): {}.".format(
            label[k], mmm(reused)))
if nbins == 2:
    a = statistics.median(row[0] for row in per[0])
    b = statistics.median(row[0] for row in per[1])
    pairs = [per[1][i][0] / per[0][i][0] for i in range(runs)]
    print()
    print("B / A: {:.3f} (medians); run by run {}.".format(b / a, mmm(pairs, 3)))
    for col, what in ((3, "over CPU time"), (4, "best rounds"), (5, "responder Gbit/s over CPU time")):
        if all(per[k][i][col] is not None for k in range(2) for i in range(runs)):
            print("B / A {}, run by run {}.".format(what, mmm([per[1][i][col] / per[0][i][col] for i in range(runs)], 3)))
PY
if [[ -n $out ]]; then cp "$tmp/report.md" "$out"; fi
cat "$tmp/report.md"
