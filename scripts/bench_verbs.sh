#!/usr/bin/env bash
# The verbs device's benchmark (docs/verbs.md): Debian's ib_write_bw (64 KiB) and ib_write_lat
# (8 B) through our device next to roce-gen's own figures for the same test, on the same link
# against the same roce-appliance, in the same run, taking turns sample by sample: roce-gen, the
# program in library mode (roce-run: the engine in its process), and the program in service
# mode (roce-run --service: a roce-verbsd owns the port, started for each sample). Writes
# docs/benchmarks/verbs.json and the markdown section docs/benchmarks/verbs.md, which replaces
# the section of that name in docs/BENCHMARKS.md (the rest of the file is left as it is).
# Figures are reported, never asserted.
#   scripts/bench_verbs.sh [--build DIR] [--runs N] [--out DIR] [--session-nice N]
# --session-nice N: this session's autogroup nice value for the run (restored at the end). With
# autogroups on (Linux's default), nice only ranks processes within one session: builds run
# with `nice -n 15` in other sessions still take a full session's share of the CPUs from the
# benchmark. The value used is written next to the figures.
# Needs root (a network namespace with a veth pair, made and deleted here) and perftest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-bench
runs=5
out=$root/docs/benchmarks
session_nice=""
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    --session-nice) session_nice=$2; shift ;;
    *) echo "bench_verbs.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
((EUID == 0)) || { echo "bench_verbs.sh: needs root (network namespace)" >&2; exit 2; }
command -v ib_write_bw >/dev/null || { echo "bench_verbs.sh: perftest is not installed" >&2; exit 2; }
if [[ ! -f $build/build.ninja ]]; then
  meson setup "$build" "$root" -Dbuildtype=release -Doptimization=2 -Dwerror=true -Dtests=disabled >/dev/null
fi
ninja -C "$build" -j2 verbs/roce-run verbs/libroce-verbs.so apps/gen/roce-gen apps/appliance/roce-appliance \
  apps/verbsd/roce-verbsd >/dev/null

ns=roce-vbench-$$
tmp=$(mktemp -d /tmp/roce-vbench.XXXXXX)
app_pid=""
svc_pid=""
stop_svc() {
  [[ -n $svc_pid ]] || return 0
  kill -TERM "$svc_pid" 2>/dev/null || true
  wait "$svc_pid" 2>/dev/null || true
  svc_pid=""
}
stop_app() {
  [[ -n $app_pid ]] || return 0
  kill -INT "$app_pid" 2>/dev/null || true
  wait "$app_pid" 2>/dev/null || true
  app_pid=""
}
old_nice=$(awk '{print $3}' /proc/self/autogroup 2>/dev/null || true)
restore_nice() { [[ -z $session_nice || -z $old_nice ]] || echo "$old_nice" > /proc/self/autogroup 2>/dev/null || true; }
cleanup() { restore_nice; stop_svc; stop_app; ip netns del "$ns" 2>/dev/null || true; rm -rf "$tmp" /var/run/dpdk/vbench_*_$$; }
trap cleanup EXIT
source "$root/scripts/lib/veth_pair.sh"
veth_pair_up "$ns" va vb

ring="blocksz=36864,framesz=4608,framecnt=1024"
# Each DPDK process's lcores may run on either CPU: pinned, two processes would share one.
eal() { echo "--no-huge --no-pci -m 512 --file-prefix=vbench_$1_$$ --log-level=error --lcores=0@(0-1),1@(0-1)"; }
bw_iters=2000
lat_iters=5000

# start_app ARGS...: roce-appliance on va serving perftest clients until stop_app.
start_app() {
  # shellcheck disable=SC2046
  ip netns exec "$ns" "$build/apps/appliance/roce-appliance" $(eal app) -- --vdev "net_af_packet0,iface=va,$ring" \
    --dev net_af_packet0 --ip 10.56.0.1 --mtu 4096 --status-interval 0 "$@" > "$tmp/app.log" 2>&1 &
  app_pid=$!
  local i
  for i in $(seq 100); do grep -q serving "$tmp/app.log" && return 0; sleep 0.1; done
  echo "bench_verbs.sh: roce-appliance did not start: $(tail -2 "$tmp/app.log")" >&2
  exit 1
}
gen() {
  # shellcheck disable=SC2046
  ip netns exec "$ns" timeout 120 "$build/apps/gen/roce-gen" $(eal gen) -- "$@" --server 127.0.0.1 \
    --vdev "net_af_packet1,iface=vb,$ring" --dev net_af_packet1 --ip 10.56.0.2
}
# ROCE_RUN_OPTS: further roce-run options (experiments).
verbs() {
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 120 "$build/verbs/roce-run" --ip 10.56.0.2 --vdev "net_af_packet1,iface=vb,$ring" \
    ${ROCE_RUN_OPTS:-} -- "$@" 127.0.0.1
}
# service PROGRAM ARGS...: the program through a roce-verbsd that owns vb for this sample only
# (library mode and roce-gen use vb in between).
service() {
  local sock=$tmp/verbsd.sock
  rm -f "$sock"
  ip netns exec "$ns" "$build/apps/verbsd/roce-verbsd" --ip 10.56.0.2 --vdev "net_af_packet1,iface=vb,$ring" \
    --socket "$sock" > "$tmp/verbsd.log" 2>&1 &
  svc_pid=$!
  for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
  [[ -S $sock ]] || { echo "bench_verbs.sh: roce-verbsd did not start: $(tail -2 "$tmp/verbsd.log")" >&2; exit 1; }
  ip netns exec "$ns" timeout 120 "$build/verbs/roce-run" --service "$sock" -- "$@" 127.0.0.1 || true
  stop_svc
}
# The first result row of a perftest-style table: column 4 (BW average MB/s) or 5 (t_typical us).
column() { awk -v c="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 { print $c; exit }'; }

if [[ -n $session_nice ]]; then
  echo "$session_nice" > /proc/self/autogroup || { echo "bench_verbs.sh: cannot set the autogroup's nice value" >&2; exit 2; }
fi
gen_bw=() gbn_bw=() verbs_bw=() svc_bw=() gen_lat=() verbs_lat=() svc_lat=()
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
start_app
for ((r = 0; r < runs; ++r)); do
  gen_bw+=("$(gen write -s 65536 -n $bw_iters -m 4096 | column 4)")
  # roce-gen offers the appliance selective repeat (ECE) and gets it; perftest's QPs, set up over
  # its own TCP exchange, are go-back-N. The same transport as theirs, for telling the two apart.
  gbn_bw+=("$(gen write -s 65536 -n $bw_iters -m 4096 --selective-repeat 0 | column 4)")
  verbs_bw+=("$(verbs ib_write_bw -d rocedp0 -x 0 -F -m 4096 -s 65536 -n $bw_iters | column 4)")
  svc_bw+=("$(service ib_write_bw -d rocedp0 -x 0 -F -m 4096 -s 65536 -n $bw_iters | column 4)")
done
stop_app
start_app --perftest ib_write_lat -s 8 -n $lat_iters
for ((r = 0; r < runs; ++r)); do
  gen_lat+=("$(gen write --lat -s 8 -n $lat_iters -m 4096 | column 5)")
  verbs_lat+=("$(verbs ib_write_lat -d rocedp0 -x 0 -F -m 4096 -s 8 -n $lat_iters | column 5)")
  svc_lat+=("$(service ib_write_lat -d rocedp0 -x 0 -F -m 4096 -s 8 -n $lat_iters | column 5)")
done
stop_app
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$out"
python3 - "$out" "$runs" "$load_before" "$load_after" "$(git -C "$root" rev-parse --short HEAD)" \
  "${gen_bw[*]}" "${verbs_bw[*]}" "${gen_lat[*]}" "${verbs_lat[*]}" "$bw_iters" "$lat_iters" \
  "${svc_bw[*]}" "${svc_lat[*]}" "$(nproc)" "$(awk '{print $3}' /proc/self/autogroup 2>/dev/null || echo unknown)" \
  "$(basename "$build")" "${gbn_bw[*]}" <<'PY'
import json, statistics, sys, datetime
out, runs, before, after, rev = sys.argv[1:6]
def nums(s): return [float(x) for x in s.split() if x]
gb, vb, gl, vl = (nums(s) for s in sys.argv[6:10])
bw_iters, lat_iters = sys.argv[10:12]
sb, sl = (nums(s) for s in sys.argv[12:14])
cpus, autogroup_nice, build_dir = sys.argv[14:17]
gbn = nums(sys.argv[17])
doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "git_revision": rev,
       "runs": int(runs), "load_before": before, "load_after": after, "autogroup_nice": autogroup_nice,
       "build_dir": build_dir,
       "write_bw_64k_MBps": {"roce_gen": gb, "roce_gen_go_back_n": gbn, "verbs": vb, "service": sb},
       "write_lat_8b_us": {"roce_gen": gl, "verbs": vl, "service": sl}}
json.dump(doc, open(out + "/verbs.json", "w"), indent=1)
def mmm(v): return "{:.2f} [{:.2f}-{:.2f}]".format(statistics.median(v), min(v), max(v)) if v else "no figure"
def ratio(a, b): return "{:.2f}".format(statistics.median(a) / statistics.median(b)) if a and b else "-"
def verdict(ok): return "met" if ok else "**not met**"
bw_r = statistics.median(vb) / statistics.median(gb) if vb and gb else 0
lat_r = statistics.median(vl) / statistics.median(gl) if vl and gl else float("inf")
md = f"""## Verbs device (unmodified perftest through roce-run)

`scripts/bench_verbs.sh` at {rev} (build tree `{build_dir}`), {doc['date']}, load {before} before,
{after} after ({cpus} CPUs, the run's autogroup at nice {autogroup_nice}); {runs} samples each, the three
taking turns. Debian's perftest under `roce-run` in library mode (the engine in the program's
process) and in service mode (`--service`: a `roce-verbsd` owns the port, the program reaches
it through shared rings), and roce-gen, each as the client of the same roce-appliance over one
veth pair (net_af_packet, 4 KiB path MTU), all on this machine. The target is library mode's
(docs/verbs.md, "Who steps the engine", says how it is met). Service mode has a thread more
that spins (the service's, beside the program spinning on its buffer and the appliance), which
on 2 CPUs puts its round trip at the scheduler's mercy. Median [min-max].

| test | library mode | service mode | roce-gen | library / roce-gen | target | verdict | service / roce-gen |
|---|---|---|---|---:|---|---|---:|
| ib_write_bw 64 KiB, MB/s ({bw_iters} iterations) | {mmm(vb)} | {mmm(sb)} | {mmm(gb)} | {ratio(vb, gb)} | >= 0.90 | {verdict(bw_r >= 0.9)} | {ratio(sb, gb)} |
| ib_write_lat 8 B, t_typical us ({lat_iters} iterations) | {mmm(vl)} | {mmm(sl)} | {mmm(gl)} | {ratio(vl, gl)} | <= 1.20 | {verdict(lat_r <= 1.2)} | {ratio(sl, gl)} |

roce-gen negotiates selective repeat with the appliance; perftest's QPs through the device are
go-back-N (no ECE in its TCP exchange). roce-gen with `--selective-repeat 0`, the same samples'
turns: ib_write_bw 64 KiB {mmm(gbn)} MB/s; library mode / that {ratio(vb, gbn)}.
"""
open(out + "/verbs.md", "w").write(md)
print(md)
PY

# BENCHMARKS.md carries the section: the old one (from its heading to the next "## " or the end)
# is replaced, or the new one appended; nothing else in the file changes.
bench_md=$root/docs/BENCHMARKS.md
if [[ $out == "$root/docs/benchmarks" && -f $bench_md ]]; then
  python3 - "$bench_md" "$out/verbs.md" <<'PY'
import sys
path, section = sys.argv[1:3]
text = open(path).read()
new = open(section).read().rstrip("\n") + "\n"
head = new.splitlines()[0]
lines = text.splitlines(keepends=True)
start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == head), None)
if start is None:
    text = text.rstrip("\n") + "\n\n" + new
else:
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    text = "".join(lines[:start]) + new + ("\n" + tail if tail else "")
open(path, "w").write(text)
PY
  echo "bench_verbs.sh: wrote $out/verbs.json, $out/verbs.md and its section of docs/BENCHMARKS.md"
fi
