#!/bin/bash
# Two of our verbs programs against each other: Debian's perftest, ibverbs-utils and rdmacm-utils binaries,
# each run under roce-run on one end of a veth pair in a network namespace made (and deleted)
# here, in both roles; roce-gen against a program on our device; a program killed mid-transfer
# leaves no DPDK files; roce-run refuses bad options. The programs' own verdicts decide.
#   pair_test.sh BUILD_DIR
# Exit 0 all passed, 1 a case failed, 77 skipped (not root, or perftest/ibverbs-utils missing).
set -uo pipefail
build=$(cd "${1:?usage: pair_test.sh BUILD_DIR}" && pwd)
rr=$build/verbs/roce-run

skip() { echo "verbs pair test: skipped: $*"; exit 77; }
((EUID == 0)) || skip "needs root (network namespace, veth)"
for p in ib_write_bw ib_send_lat ibv_rc_pingpong ibv_ud_pingpong ibv_uc_pingpong rping ucmatose udaddy rdma_server rdma_client; do
  command -v $p >/dev/null || skip "$p is not installed (apt-get install perftest ibverbs-utils rdmacm-utils)"
done

ns=roce-verbs-$$
out=$(mktemp -d /tmp/roce-verbs-pair.XXXXXX)
cleanup() {
  local j
  for j in $(jobs -p); do kill -KILL "$j" 2>/dev/null; done
  ip netns del "$ns" 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT
source "$(dirname "$0")/../../scripts/lib/veth_pair.sh"
veth_pair_up "$ns" va vb || skip "cannot create a network namespace with a veth pair"

ring="blocksz=36864,framesz=4608,framecnt=1024"
dev_a="--ip 10.55.0.1 --vdev net_af_packet0,iface=va,$ring"
dev_b="--ip 10.55.0.2 --vdev net_af_packet1,iface=vb,$ring"
failed=0

# pair NAME SERVER_CMD CLIENT_CMD: our server on va, our client on vb (TCP over the namespace's
# loopback); both must exit 0 and the client must print its result.
pair() {
  local name=$1 server=$2 client=$3 t0=$SECONDS
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" $dev_a -- $server > "$out/$name.server" 2>&1 &
  local sp=$!
  local i
  for i in $(seq 100); do
    ip netns exec "$ns" ss -ltn | grep -q ':18515 ' && break
    kill -0 $sp 2>/dev/null || break
    sleep 0.1
  done
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" $dev_b -- $client 127.0.0.1 > "$out/$name.client" 2>&1
  local crc=$?
  wait $sp
  local src=$?
  local result
  result=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 { print; exit } /iters in/ { print; exit }' "$out/$name.client")
  if ((crc == 0 && src == 0)) && [[ -n $result ]]; then
    printf 'verbs pair: %-34s pass %3ds  %s\n' "$name" $((SECONDS - t0)) "$(echo $result | cut -c1-70)"
  else
    printf 'verbs pair: %-34s FAIL (server %d, client %d)\n' "$name" $src $crc
    tail -n 5 "$out/$name.server" "$out/$name.client" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

both() { pair "$1" "$2" "$2"; }
both rc_pingpong    "ibv_rc_pingpong -d rocedp0 -g 0 -s 4096 -n 200"
both rc_pingpong_ev "ibv_rc_pingpong -d rocedp0 -g 0 -s 1024 -n 100 -e"
both ud_pingpong    "ibv_ud_pingpong -d rocedp0 -g 0 -s 1024 -n 200"
both uc_pingpong    "ibv_uc_pingpong -d rocedp0 -g 0 -s 1024 -n 100"
both srq_pingpong   "ibv_srq_pingpong -d rocedp0 -g 0 -n 300"
both write_bw_q4    "ib_write_bw -d rocedp0 -x 0 -F -s 65536 -n 200 -q 4"
both read_bw        "ib_read_bw -d rocedp0 -x 0 -F -s 65536 -n 200"
both send_bw_ud     "ib_send_bw -d rocedp0 -x 0 -F -c UD -s 2048 -n 500"
both send_bw_events "ib_send_bw -d rocedp0 -x 0 -F -e -s 4096 -n 200"
both atomic_bw      "ib_atomic_bw -d rocedp0 -x 0 -F -n 500"
both write_lat      "ib_write_lat -d rocedp0 -x 0 -F -s 8 -n 500"
both send_lat_uc    "ib_send_lat -d rocedp0 -x 0 -F -c UC -s 64 -n 500"
both read_lat_all   "ib_read_lat -d rocedp0 -x 0 -F -a -n 5"

# Through librdmacm (our rdma_* entry points, the device's own CM on each end): nothing listens
# on TCP, so the server is given until its dataplane thread runs (its event channel is made, the
# listen follows at once), and the client names the server's RoCE address. rping validates and
# prints every round (-V -v): all of them must be there.
pair_cm() {
  local name=$1 server=$2 client=$3 want=$4 t0=$SECONDS
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" $dev_a -- $server > "$out/$name.server" 2>&1 &
  local sp=$! i pid
  for i in $(seq 100); do
    pid=$(pgrep -P $sp | head -1)
    [[ -n $pid ]] && grep -qs roce-verbs-dp /proc/"$pid"/task/*/comm && break
    kill -0 $sp 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.3
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" $dev_b -- $client > "$out/$name.client" 2>&1
  local crc=$?
  wait $sp
  local src=$?
  if ((crc == 0 && src == 0)) && grep -qE "$want" "$out/$name.client" && ! grep -qiE "mismatch|error" "$out/$name.client"; then
    printf 'verbs pair: %-34s pass %3ds  %s\n' "$name" $((SECONDS - t0)) "$(grep -E "$want" "$out/$name.client" | tail -1 | cut -c1-60)"
  else
    printf 'verbs pair: %-34s FAIL (server %d, client %d)\n' "$name" $src $crc
    tail -n 5 "$out/$name.server" "$out/$name.client" | sed 's/^/    /'
    # Through the service, roce-verbsd's own log is half of the story (its CM, its port), and
    # whether it answers ARP now (its counters follow when it exits: svc_arp_report).
    if [[ "$dev_a $dev_b" == *--service* && -f $out/verbsd.log ]]; then
      tail -n 20 "$out/verbsd.log" | sed 's/^/    verbsd: /'
      ip netns exec "$ns" python3 "$probe" vb 10.55.0.2 10.55.0.1 --attempts 5 --rounds 3 | sed 's/^/    /'
      svc_failed=1
    fi
    failed=$((failed + 1))
  fi
}
pair_cm rping         "rping -s -a 10.55.0.1 -V -C 20 -S 4000" "rping -c -a 10.55.0.1 -V -v -C 20 -S 4000" "^ping data: rdma-ping-19: "
pair_cm rping_self_qp "rping -s -q -a 10.55.0.1 -V -C 5" "rping -c -q -a 10.55.0.1 -V -v -C 5" "^ping data: rdma-ping-4: "
pair_cm write_bw_R    "ib_write_bw -d rocedp0 -R -F -s 65536 -n 200 -q 2" "ib_write_bw -d rocedp0 -R -F -s 65536 -n 200 -q 2 10.55.0.1" "^ 65536 +[0-9]+ "
pair_cm ucmatose      "ucmatose -C 10 -S 100" "ucmatose -s 10.55.0.1 -C 10 -S 100" "return status 0"
pair_cm udaddy        "udaddy -C 10 -S 100" "udaddy -s 10.55.0.1 -C 10 -S 100" "return status 0"
# Synchronous rdma_cm IDs (rdma_create_ep, rdma_get_request, the rdma_verbs.h helpers).
pair_cm rdma_server   "rdma_server" "rdma_client -s 10.55.0.1" "^rdma_client: end 0$"
# The same entry points over IPv6 (issue 27): both devices on fd55:: addresses, each finding the
# other by neighbour discovery; the CMA headers carry IPv6 addresses, the GIDs are the addresses.
dev_a4=$dev_a dev_b4=$dev_b
dev_a="--ip fd55::1 --vdev net_af_packet0,iface=va,$ring"
dev_b="--ip fd55::2 --vdev net_af_packet1,iface=vb,$ring"
pair_cm rping_v6      "rping -s -a fd55::1 -V -C 10 -S 4000" "rping -c -a fd55::1 -V -v -C 10 -S 4000" "^ping data: rdma-ping-9: "
pair_cm udaddy_v6     "udaddy -b fd55::1 -C 10 -S 100" "udaddy -s fd55::1 -C 10 -S 100" "return status 0"
dev_a=$dev_a4 dev_b=$dev_b4

# Service mode (docs/verbs.md, section 2): one roce-verbsd owns va and serves two ib_write_bw
# clients at once, against two library-mode servers on vb; the second client is SIGKILLed
# mid-transfer, the first pair must finish with its own verdict, and the service goes on serving
# (rping and ib_write_bw -R clients through it next).
listening() { ip netns exec "$ns" ss -ltn | grep -q ":$1 "; }
probe=$(dirname "$0")/arp_probe.py
svc_failed=0
# A service case failed: roce-verbsd's ARP counters and what its port dropped, from the report
# it writes when it exits (ROCE_VERBS_REPORT).
svc_arp_report() {
  python3 - "$out/verbsd.json" 2>&1 <<'PY' | sed 's/^/    /'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"roce-verbsd wrote no report: {e}")
w, port = d["workers"]["0"], d["port"]["stats"]
keys = ("arp_replies", "arp_requests_sent", "rx_packets", "tx_packets", "tx_dropped", "mbuf_alloc_failures", "stalls")
print("roce-verbsd ARP and port counters: " + " ".join(f"{k} {w[k]}" for k in keys) + " "
      + " ".join(f"port_{k} {port[k]}" for k in ("imissed", "ierrors", "oerrors", "rx_nombuf")))
PY
}
if [[ -x $build/apps/verbsd/roce-verbsd ]]; then
  t0=$SECONDS
  sock=$out/verbsd.sock
  # shellcheck disable=SC2086
  ROCE_VERBS_REPORT=$out/verbsd.json ip netns exec "$ns" timeout 120 "$build/apps/verbsd/roce-verbsd" $dev_a --socket "$sock" > "$out/verbsd.log" 2>&1 &
  vp=$!
  for i in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
  bw="ib_write_bw -d rocedp0 -x 0 -F -s 65536"
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" $dev_b -- $bw -n 2000 -p 18601 > "$out/svc.s1" 2>&1 &
  s1p=$!
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" $dev_b -- $bw -D 30 -p 18602 > "$out/svc.s2" 2>&1 &
  s2p=$!
  for i in $(seq 100); do listening 18601 && listening 18602 && break; sleep 0.1; done
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" --service "$sock" -- stdbuf -oL $bw -D 30 -p 18602 127.0.0.1 > "$out/svc.c2" 2>&1 &
  c2p=$!
  for i in $(seq 200); do grep -q "#bytes" "$out/svc.c2" && break; sleep 0.1; done
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" --service "$sock" -- $bw -n 2000 -p 18601 127.0.0.1 > "$out/svc.c1" 2>&1 &
  c1p=$!
  sleep 0.5
  victim=$(pgrep -P "$c2p" | head -1)  # timeout's child: the client itself
  [[ -n $victim ]] && kill -KILL "$victim"
  wait $c1p
  c1rc=$?
  wait $s1p
  s1rc=$?
  wait $c2p 2>/dev/null
  for j in $(pgrep -P "$s2p"); do kill -KILL "$j"; done
  wait $s2p 2>/dev/null
  t1=$SECONDS
  # ARP to the service while one of its programs holds rings and waits (ibv_rc_pingpong's server
  # on its TCP socket), just after the kill above. The service's control thread then steps the
  # engine with steps that hold what it owes for the program's answer; they held its ARP answers
  # too (a peer's 3 s waits ran out: the "service: rping" flake, docs/verbs.md). Ten requests
  # from vb, each answered within three attempts (a counted bound: held, one took up to 32).
  t2=$SECONDS
  # shellcheck disable=SC2086
  ip netns exec "$ns" timeout 60 "$rr" --service "$sock" -- ibv_rc_pingpong -d rocedp0 -g 0 -p 18603 > "$out/svc.idle" 2>&1 &
  idle=$!
  for i in $(seq 100); do listening 18603 && break; sleep 0.1; done
  idle_up=0
  listening 18603 && idle_up=1
  answered=$(ip netns exec "$ns" python3 "$probe" vb 10.55.0.2 10.55.0.1 --attempts 3 --rounds 10)
  arp_ok=$((! $?))
  for j in $(pgrep -P $idle); do kill -KILL "$j"; done
  wait $idle 2>/dev/null
  if ((idle_up && arp_ok)); then
    printf 'verbs pair: %-34s pass %3ds  %s\n' "service: ARP, a client idle" $((SECONDS - t2)) "${answered#arp probe: }"
  else
    printf 'verbs pair: %-34s FAIL (client listening %d) %s\n' "service: ARP, a client idle" $idle_up "${answered#arp probe: }"
    tail -n 5 "$out/svc.idle" | sed 's/^/    /'
    svc_failed=1
    failed=$((failed + 1))
  fi
  # rdma_cm through the service (slice 5): clients of the service on va against library-mode
  # servers on vb (the device's own CM on each end), their own verdicts deciding.
  dev_a4=$dev_a dev_b4=$dev_b
  dev_a=$dev_b4 dev_b="--service $sock"
  pair_cm "service: rping" "rping -s -a 10.55.0.2 -V -C 20 -S 4000" "rping -c -a 10.55.0.2 -V -v -C 20 -S 4000" "^ping data: rdma-ping-19: "
  pair_cm "service: write_bw_R" "ib_write_bw -d rocedp0 -R -F -s 65536 -n 200 -q 2" "ib_write_bw -d rocedp0 -R -F -s 65536 -n 200 -q 2 10.55.0.2" "^ 65536 +[0-9]+ "
  pair_cm "service: udaddy" "udaddy -C 10 -S 100" "udaddy -s 10.55.0.2 -C 10 -S 100" "return status 0"
  dev_a=$dev_a4 dev_b=$dev_b4
  info=$(ip netns exec "$ns" timeout 20 "$rr" --service "$sock" -- ibv_devinfo 2>&1)
  kill -TERM $vp
  wait $vp
  vrc=$?
  ((svc_failed)) && svc_arp_report
  result=$(awk '$1 == "65536" && $2 ~ /^[0-9]+$/ { print; exit }' "$out/svc.c1")
  if [[ -n $victim ]] && ((c1rc == 0 && s1rc == 0 && vrc == 0)) && [[ -n $result && $info == *PORT_ACTIVE* && ! -e $sock ]]; then
    printf 'verbs pair: %-34s pass %3ds  %s\n' "service: 2 pairs, 1 killed" $((t1 - t0)) "$(echo $result | cut -c1-60)"
  else
    printf 'verbs pair: %-34s FAIL (victim %s, client %d, server %d, service %d)\n' "service: 2 pairs, 1 killed" \
      "${victim:-none}" $c1rc $s1rc $vrc
    tail -n 5 "$out/verbsd.log" "$out/svc.s1" "$out/svc.c1" "$out/svc.c2" | sed 's/^/    /'
    echo "$info" | head -5 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
fi

# roce-gen (our stack's own client) against a perftest server on our device.
if [[ -x $build/apps/gen/roce-gen ]]; then
  t0=$SECONDS
  ip netns exec "$ns" timeout 60 "$rr" $dev_a -- ib_write_bw -d rocedp0 -x 0 -F -s 65536 -n 200 > "$out/gen.server" 2>&1 &
  sp=$!
  for i in $(seq 100); do ip netns exec "$ns" ss -ltn | grep -q ':18515 ' && break; sleep 0.1; done
  ip netns exec "$ns" timeout 60 "$build/apps/gen/roce-gen" --no-huge --no-pci -m 256 --file-prefix=verbs_pair_gen_$$ \
    --log-level=error -l 0-1 -- write -s 65536 -n 200 --server 127.0.0.1 --vdev "net_af_packet1,iface=vb,$ring" \
    --dev net_af_packet1 --ip 10.55.0.2 > "$out/gen.client" 2>&1
  crc=$?
  wait $sp
  src=$?
  rm -rf "/var/run/dpdk/verbs_pair_gen_$$"
  if ((crc == 0 && src == 0)) && grep -q "BW average" "$out/gen.server"; then
    printf 'verbs pair: %-34s pass %3ds\n' "roce-gen>ib_write_bw" $((SECONDS - t0))
  else
    printf 'verbs pair: %-34s FAIL (server %d, roce-gen %d)\n' "roce-gen>ib_write_bw" $src $crc
    tail -5 "$out/gen.server" "$out/gen.client" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
fi

# A program killed mid-transfer (SIGKILL: no destructor runs) leaves no DPDK runtime folder;
# its peer, left waiting, is killed too. Nothing of either may stay under /var/run/dpdk.
ip netns exec "$ns" timeout 60 "$rr" $dev_a -- ib_write_bw -d rocedp0 -x 0 -F -s 65536 -n 1000000 > "$out/kill.server" 2>&1 &
ks=$!
for i in $(seq 100); do ip netns exec "$ns" ss -ltn | grep -q ':18515 ' && break; sleep 0.1; done
ip netns exec "$ns" timeout 60 "$rr" $dev_b -- ib_write_bw -d rocedp0 -x 0 -F -s 65536 -n 1000000 127.0.0.1 > "$out/kill.client" 2>&1 &
kc=$!
sleep 3
# timeout's children are the programs themselves (roce-run execs them): kill those, by PID.
kc_prog=$(pgrep -P $kc)
ks_prog=$(pgrep -P $ks)
pids="$kc_prog $ks_prog"
[[ -n $kc_prog ]] && kill -KILL $kc_prog
sleep 0.5
[[ -n $ks_prog ]] && kill -KILL $ks_prog
wait $kc $ks 2>/dev/null
left=$(ls -d /var/run/dpdk/roce_verbs_* /tmp/dpdk/roce_verbs_* 2>/dev/null | grep -E "roce_verbs_($(echo $pids | tr ' ' '|'))$")
if [[ -z $left ]]; then
  echo "verbs pair: killed mid-transfer                   pass (no DPDK files left)"
else
  echo "verbs pair: killed mid-transfer                   FAIL: left $left"
  failed=$((failed + 1))
fi

# rdma-core's ibv_devinfo on our device: the port is up, Ethernet, and its active MTU is the
# largest IB MTU that fits the veth's 9000 bytes (4096).
# shellcheck disable=SC2086
info=$(ip netns exec "$ns" timeout 30 "$rr" $dev_a -- ibv_devinfo -v 2>&1)
if [[ $info == *"hca_id:"*"rocedp0"* && $info == *"PORT_ACTIVE"* && $info == *"link_layer:"*"Ethernet"* &&
      $info =~ active_mtu:[[:space:]]+4096 && $info == *"GID[  0]:"*"::ffff:10.55.0.1"* ]]; then
  echo "verbs pair: ibv_devinfo -v                        pass (rocedp0, PORT_ACTIVE, active_mtu 4096, GID 0)"
else
  echo "verbs pair: ibv_devinfo -v                        FAIL"
  echo "$info" | head -40 | sed 's/^/    /'
  failed=$((failed + 1))
fi

# roce-run refuses bad options before starting anything; a program with no configuration sees
# no device and is told why.
check_refusal() {
  local want=$1
  shift
  local msg
  msg=$("$rr" "$@" true 2>&1)
  if [[ $? == 2 && $msg == *"$want"* ]]; then
    echo "verbs pair: roce-run $* -> refused ($want)"
  else
    echo "verbs pair: roce-run $* -> FAIL: '$msg'"
    failed=$((failed + 1))
  fi
}
check_refusal "no --ip" --vdev net_ring0 --
check_refusal "not an IPv4 or IPv6 address" --ip 10.1 --vdev net_ring0 --
check_refusal "256, 512, 1024, 2048 or 4096" --ip 10.0.0.1 --vdev net_ring0 --mtu 1500 --
check_refusal "unknown option --bogus" --ip 10.0.0.1 --vdev net_ring0 --bogus 1 --
check_refusal "cannot read config file" --config /nonexistent --
check_refusal "--service excludes the port options" --service /tmp/none.sock --ip 10.0.0.1 --
msg=$(env -u ROCE_VERBS_ARGS -u ROCE_VERBS_CONFIG ROCE_VERBS_SERVICE=/nonexistent/roce.sock \
  LD_PRELOAD="$build/verbs/libroce-verbs.so" ibv_devices 2>&1)
if [[ $msg == *"cannot reach the service at /nonexistent/roce.sock"* ]]; then
  echo "verbs pair: ibv_devices with no service behind ROCE_VERBS_SERVICE -> no device, says why"
else
  echo "verbs pair: ibv_devices with no service behind ROCE_VERBS_SERVICE -> FAIL: '$msg'"
  failed=$((failed + 1))
fi
msg=$(env -u ROCE_VERBS_ARGS -u ROCE_VERBS_CONFIG LD_PRELOAD="$build/verbs/libroce-verbs.so" ibv_devices 2>&1)
if [[ $msg == *"no device configured"* ]]; then
  echo "verbs pair: unconfigured ibv_devices -> no device, says why"
else
  echo "verbs pair: unconfigured ibv_devices -> FAIL: '$msg'"
  failed=$((failed + 1))
fi

echo "verbs pair: $failed failed"
((failed == 0))
