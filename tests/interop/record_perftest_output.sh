#!/bin/bash
# Records what real perftest 4.5 prints, for the tests that compare roce-gen's and
# roce-appliance's printout with it (tests/apps/fixtures/perftest_output). It boots the interop
# guest (Debian 12: kernel 6.1 rdma_rxe, perftest 4.5) and runs each perftest server and client
# pair inside it, over rxe0 on the guest's own address (rxe loops the traffic back), so both
# sides are the real programs. Each pair leaves NAME.client.txt and NAME.server.txt (stdout
# only) and a line in commands.txt: the command, both exit statuses and stderr.
#
#   tests/interop/record_perftest_output.sh [OUT_DIR]   (default tests/apps/fixtures/perftest_output)
#
# Needs what run.sh needs (root, qemu-system-x86, the guest image). Not part of any test run:
# the fixtures are committed, this is how they were made.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${1:-$root/tests/apps/fixtures/perftest_output}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)

source "$here/lib/net.sh"
source "$here/lib/guest.sh"

((EUID == 0)) || { echo "record: needs root" >&2; exit 77; }
IMAGE=${ROCE_INTEROP_CACHE:-/var/cache/rocev2-dp-interop}/guest
"$here/guest/build.sh" "$IMAGE" > "$WORK/guest-build.log" 2>&1 || { tail -5 "$WORK/guest-build.log"; exit 1; }
cleanup() { guest_stop; net_down; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
net_up || exit 1
guest_boot "$WORK/guest" "$IMAGE" "$NET_LINK_MTU" || { tail -20 "$WORK/guest/console.log"; exit 1; }

# pair NAME TOOL ARGS: the server `TOOL -d rxe0 -x $G ARGS`, then the client with the guest's
# address appended.
pair() {
  local name=$1 tool=$2
  shift 2
  local args="-d rxe0 -x \$G $*"
  guest_run 200 "rm -f /tmp/*.err; bg server sh -c \"$tool $args 2>/tmp/server.err\"; listening 18515 30 || exit 99; bg client sh -c \"$tool $args $NET_GUEST_IP 2>/tmp/client.err\"; fg client 150"
  local crc=$?
  printf '%s' "$GUEST_OUT" > "$OUT/$name.client.txt"
  guest_run 60 "fg server 30"
  local src=$?
  printf '%s' "$GUEST_OUT" > "$OUT/$name.server.txt"
  guest_run 10 "echo client stderr:; cat /tmp/client.err; echo server stderr:; cat /tmp/server.err"
  {
    echo "## $name: $tool $args [$NET_GUEST_IP]   (exit: client $crc, server $src)"
    printf '%s' "$GUEST_OUT" | sed 's/^/    /'
  } >> "$OUT/commands.txt"
  echo "record: $name client $crc server $src"
}

# refused NAME TOOL ARGS: a command line perftest refuses (stdout, stderr, exit status).
refused() {
  local name=$1 tool=$2
  shift 2
  guest_run 30 "timeout 10 $tool -d rxe0 $* 10.77.0.9 > /tmp/r.out 2> /tmp/r.err; echo \"exit \$?\"; echo stdout:; cat /tmp/r.out; echo stderr:; cat /tmp/r.err"
  {
    echo "## refused $name: $tool -d rxe0 $* 10.77.0.9"
    printf '%s' "$GUEST_OUT" | sed 's/^/    /'
  } >> "$OUT/refused.txt"
}

guest_run 10 "uname -r; ib_write_bw --version" && echo "record: guest $(tr '\n' ' ' <<< "$GUEST_OUT")"
{
  echo "# Made by tests/interop/record_perftest_output.sh on $(date -u +%Y-%m-%d): perftest 4.5 (Debian 12)"
  echo "# in the interop guest ($(head -1 <<< "$GUEST_OUT")), server and client on the guest's rxe0."
} > "$OUT/commands.txt"
: > "$OUT/refused.txt"

pair write_bw ib_write_bw -F -n 200 -s 65536
pair write_bw_gbits_q2 ib_write_bw -F -n 200 -s 4096 -q 2 --report_gbits
pair write_bw_all ib_write_bw -F -n 20 -a
pair write_bw_duration ib_write_bw -F -D 2
pair write_bw_output_bw ib_write_bw -F -n 200 --output=bandwidth
pair write_bw_cpu_util ib_write_bw -F -D 2 --cpu_util
pair write_bw_post_list ib_write_bw -F -n 200 -s 4096 -l 4
pair write_bw_bidirectional ib_write_bw -F -n 200 -s 4096 -b
pair read_bw_output_mr ib_read_bw -F -n 200 --output=message_rate
pair read_bw ib_read_bw -F -n 200 -s 65536 -o 4
pair send_bw ib_send_bw -F -n 200 -s 4096 -t 64 -r 256
pair atomic_bw ib_atomic_bw -F -n 200
pair read_lat ib_read_lat -F -n 200
pair send_lat ib_send_lat -F -n 200 -s 64
pair write_lat ib_write_lat -F -n 200 -s 64
pair atomic_lat ib_atomic_lat -F -n 200
pair read_lat_duration ib_read_lat -F -D 2
pair read_lat_output_lat ib_read_lat -F -n 200 --output=latency

refused tx_depth_0 ib_write_bw -t 0
refused qps_0 ib_write_bw -q 0
refused size_0 ib_write_bw -s 0
refused iters_3 ib_write_bw -n 3
refused output_bad ib_write_bw --output=fast
refused cq_mod_0 ib_write_bw -Q 0
refused inline_read ib_read_bw -I 64
refused outs_write ib_write_bw -o 4
refused events_write ib_write_bw -e
refused bidir_lat ib_read_lat -b
refused qps_lat ib_read_lat -q 2
refused post_list_iters ib_write_bw -l 3 -n 10
refused duration_0 ib_write_bw -D 0
refused gid_99 ib_write_bw -x 99
refused not_a_number ib_write_bw -t x
echo "record: fixtures in $OUT"
