#!/bin/bash
# Live interop with Linux Soft-RoCE: Debian 12's rdma_rxe in a qemu guest against our engine
# (roce-gen and roce-appliance) on a private bridge, one capture per case checked with the
# project's parser, and a table of the results.
#
#   tests/interop/run.sh [--build-dir DIR] [--quick|--full] [--cases REGEX] [--out DIR] [--list]
#
#   --quick   the short list meson's 'interop' suite runs
#   --full    every case (default: the CI list, which runs every test, direction and flag at
#             least once but not every combination; lib/cases.sh)
#   --cases   only the cases whose name matches the extended regex
#   --out     logs, captures and results (default BUILD_DIR/interop/run)
# The guest image (kernel, initramfs, the downloaded .deb files) is cached outside the
# repository in ROCE_INTEROP_CACHE (default /var/cache/rocev2-dp-interop) and rebuilt when it
# is missing or guest/build.sh or guest/init changed.
# Exit: 0 every case passed (known failures aside), 1 a case failed, 77 skipped (no root, no
# qemu, or the guest image cannot be built; the reason is printed).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD_DIR=${ROCE_BUILD_DIR:-$root/build}
OUT_DIR=""
quick=0 full=0 filter="" list=0
while (($#)); do
  case $1 in
    --build-dir) BUILD_DIR=$2; shift ;;
    --quick) quick=1 ;;
    --full) full=1 ;;
    --cases) filter=$2; shift ;;
    --out) OUT_DIR=$2; shift ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
OUT_DIR=${OUT_DIR:-$BUILD_DIR/interop/run}

source "$here/lib/net.sh"
source "$here/lib/guest.sh"
source "$here/lib/engine.sh"
source "$here/lib/cases.sh"
source "$here/lib/verbs.sh"
source "$here/lib/rdmacm.sh"
source "$here/lib/nvmf.sh"

if ((quick)); then mapfile -t CASES < <(cases_quick)
elif ((full)); then mapfile -t CASES < <(cases_full)
else mapfile -t CASES < <(cases_ci); fi
if [[ -n $filter ]]; then
  mapfile -t CASES < <(printf '%s\n' "${CASES[@]}" | awk -v re="$filter" '$1 ~ re')
fi
if ((list)); then printf '%s\n' "${CASES[@]}" | awk '{ print $1 }'; exit 0; fi
((${#CASES[@]})) || { echo "run.sh: no case matches '$filter'" >&2; exit 2; }

skip() { echo "interop: skipped: $*"; exit 77; }
((EUID == 0)) || skip "needs root (network namespace, bridge, tap)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
command -v tcpdump >/dev/null || skip "tcpdump is not installed"
for b in apps/gen/roce-gen apps/appliance/roce-appliance tests/interop/interop_capture_check verbs/roce-run; do
  [[ -x $BUILD_DIR/$b ]] || { echo "run.sh: $BUILD_DIR/$b is not built" >&2; exit 1; }
done

T0=$SECONDS
IMAGE=${ROCE_INTEROP_CACHE:-/var/cache/rocev2-dp-interop}/guest
echo "interop: guest image in $IMAGE"
mkdir -p "$OUT_DIR"
"$here/guest/build.sh" "$IMAGE" > "$OUT_DIR/guest-build.log" 2>&1
case $? in
  0) ;;
  77) skip "guest image: $(tail -1 "$OUT_DIR/guest-build.log")" ;;
  *) echo "interop: guest image build failed:"; tail -5 "$OUT_DIR/guest-build.log"; exit 1 ;;
esac
T_IMAGE=$((SECONDS - T0))

rm -rf "$OUT_DIR/cases" "$OUT_DIR/guest" "$OUT_DIR"/appliance_*
mkdir -p "$OUT_DIR/cases"
cleanup() {
  capture_stop
  appliance_stop
  verbs_stop
  verbsd_stop
  guest_stop
  net_down
  rm -rf "/var/run/dpdk/interop_gen_$$" "/var/run/dpdk/interop_app_$$"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
net_up || { echo "interop: cannot create the network namespace" >&2; exit 1; }
T1=$SECONDS
guest_boot "$OUT_DIR/guest" "$IMAGE" "$NET_LINK_MTU" || { tail -20 "$OUT_DIR/guest/console.log"; exit 1; }
echo "interop: guest up in $((SECONDS - T1)) s ($(cat "$IMAGE/KVER"), rxe0 GID index $GUEST_GID_INDEX); ${#CASES[@]} cases"

results=$OUT_DIR/results.txt
fmt='%-3s %-34s %-6s %-15s %-4s %-4s %s\n'
printf "$fmt" "#" "case" "result" "figure" "pcap" "secs" "notes" > "$results"
failed=0 n=0
for line in "${CASES[@]}"; do
  n=$((n + 1))
  run_case "$line"
  name=${line%% *}
  verdict=$CASE_VERDICT
  if reason=$(known_failure "$name"); then
    if [[ $verdict == pass ]]; then verdict=XPASS; else verdict=XFAIL; CASE_NOTE="known: $reason; $CASE_NOTE"; fi
  elif [[ $verdict != pass ]]; then
    failed=$((failed + 1))
  fi
  row=$(printf "$fmt" "$n" "$name" "$verdict" "${CASE_FIGURE:--}" "${CASE_CAPTURE:--}" "${CASE_SECONDS:-?}" "$CASE_NOTE")
  echo "$row" >> "$results"
  echo "interop: $row"
  # CI keeps only what is printed: a failure brings its logs and last frames with it.
  [[ $verdict == FAIL ]] && case_dump "$CASE_DIR"
done
appliance_stop
guest_stop
echo
cat "$results"
echo
echo "interop: ${#CASES[@]} cases, $failed failed; image $T_IMAGE s, total $((SECONDS - T0)) s; logs and captures in $OUT_DIR"
((failed == 0))
