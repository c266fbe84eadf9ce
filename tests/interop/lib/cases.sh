# Sourced by run.sh: the case list and how one case runs.
#
# A case is one line: NAME KIND VERB MTU LOSS SIZE ITERS
#   KIND  to-rxe     our roce-gen is the client of a guest server (ibv_rc_pingpong, ib_VERB_bw,
#                    ibv_ud_pingpong)
#         from-rxe   the guest's client (ibv_rc_pingpong, ib_VERB_bw) against roce-appliance
#   VERB  pingpong | ud-pingpong | write | read | send | atomic
#   LOSS  percent of the guest's egress frames dropped by netem (0: none)

# Cases known to fail against rxe, with the reason: "NAME-GLOB|reason" lines. A known failure
# is reported as XFAIL and does not fail the run; if it passes it shows as XPASS.
KNOWN_FAILURES=(
)

# perftest/ibverbs example program of a verb.
guest_tool() {
  case $1 in
    pingpong) echo ibv_rc_pingpong ;;
    ud-pingpong) echo ibv_ud_pingpong ;;
    *) echo "ib_$1_bw" ;;
  esac
}

# Arguments of the guest tool for a case (server side when no address is given).
guest_args() {
  local verb=$1 mtu=$2 size=$3 iters=$4
  case $verb in
    pingpong) echo "-d rxe0 -g \$G -m $mtu -s $size -n $iters" ;;
    ud-pingpong) echo "-d rxe0 -g \$G -s $size -n $iters" ;;
    atomic) echo "-d rxe0 -x \$G -F -m $mtu -n $iters" ;;
    *) echo "-d rxe0 -x \$G -F -m $mtu -s $size -n $iters" ;;
  esac
}

cases_quick() {
  cat <<'LIST'
pingpong/gen>rxe/m1024/s4096            to-rxe   pingpong 1024 0 4096 8
pingpong/rxe>app/m1024/s4096            from-rxe pingpong 1024 0 4096 8
write/gen>rxe/m4096/s65536              to-rxe   write    4096 0 65536 16
read/rxe>app/m1024/s65536               from-rxe read     1024 0 65536 16
LIST
}

cases_full() {
  local mtu dir kind verb size loss iters
  for mtu in 1024 4096; do
    for dir in to-rxe from-rxe; do
      [[ $dir == to-rxe ]] && kind="gen>rxe" || kind="rxe>app"
      echo "pingpong/$kind/m$mtu/s4096 $dir pingpong $mtu 0 4096 8"
      for verb in write read send atomic; do
        for loss in 0 5; do
          if [[ $verb == atomic ]]; then
            echo "atomic/$kind/m$mtu$([[ $loss != 0 ]] && echo /loss$loss)/s8 $dir atomic $mtu $loss 8 64"
            continue
          fi
          for size in 1 65536 1048576; do
            iters=32
            ((size >= 1048576)) && iters=4
            [[ $loss != 0 && $size == 1 ]] && continue
            echo "$verb/$kind/m$mtu$([[ $loss != 0 ]] && echo /loss$loss)/s$size $dir $verb $mtu $loss $size $iters"
          done
        done
      done
    done
  done
  echo "ud-pingpong/gen>rxe/m4096/s1024 to-rxe ud-pingpong 4096 0 1024 8"
}

known_failure() {
  local name=$1 entry
  for entry in "${KNOWN_FAILURES[@]}"; do
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    [[ $name == ${entry%%|*} ]] && { echo "${entry#*|}"; return 0; }
  done
  return 1
}

# First row of a perftest-style table (#bytes #iterations peak avg rate): "avg MB/s".
bw_figure() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 { print $4; exit }' "$1"; }
# roce-gen's latency table: typical microseconds (column 5).
lat_figure() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 9 { print $5; exit }' "$1"; }

# run_case LINE: runs one case; sets CASE_VERDICT (pass/FAIL), CASE_FIGURE, CASE_NOTE.
run_case() {
  local name kind verb mtu loss size iters
  read -r name kind verb mtu loss size iters <<< "$1"
  local dir=$OUT_DIR/cases/${name//[\/>]/_}
  mkdir -p "$dir"
  CASE_VERDICT=FAIL CASE_FIGURE="-" CASE_NOTE=""
  local tool args ok=1 t0=$SECONDS
  tool=$(guest_tool "$verb")
  args=$(guest_args "$verb" "$mtu" "$size" "$iters")

  if [[ $kind == from-rxe ]]; then
    if [[ ${APPLIANCE_MTU:-} != "$mtu" ]]; then
      appliance_stop
      appliance_start "$OUT_DIR/appliance_m$mtu.log" "$mtu" || { CASE_NOTE="roce-appliance did not start"; return; }
      APPLIANCE_MTU=$mtu
    fi
  else
    appliance_stop
    APPLIANCE_MTU=""
  fi
  if [[ $loss != 0 ]]; then
    guest_run 10 "/sbin/tc qdisc add dev eth0 root netem loss $loss%" || { CASE_NOTE="netem: $GUEST_OUT"; return; }
  fi
  capture_start "$dir/capture.pcap"

  if [[ $kind == to-rxe ]]; then
    guest_run 30 "bg server $tool $args && listening 18515 20" > /dev/null
    if [[ $? != 0 ]]; then
      ok=0 CASE_NOTE="guest server did not listen"
    fi
    local gen_args=()
    case $verb in
      pingpong) gen_args=(pingpong -s "$size" -n "$iters" -m "$mtu") ;;
      ud-pingpong) gen_args=(ud-pingpong -s "$size" -n "$iters") ;;
      send) gen_args=(send -s "$size" -n "$iters" -m "$mtu") ;;
      *) gen_args=("$verb" -s "$size" -n "$iters" -m "$mtu" --verify) ;;
    esac
    if ((ok)); then
      gen_run "$dir/roce-gen.log" "${gen_args[@]}" --server "$NET_GUEST_IP" || { ok=0; CASE_NOTE="roce-gen: $(grep -m1 'roce-gen:' "$dir/roce-gen.log" || tail -1 "$dir/roce-gen.log")"; }
      grep -q "MISMATCH" "$dir/roce-gen.log" && { ok=0; CASE_NOTE="data check failed"; }
    fi
    guest_run 90 "fg server 60"
    local grc=$?
    printf '%s' "$GUEST_OUT" > "$dir/guest.log"
    ((grc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest $tool exit $grc"; }
    if [[ $verb == *pingpong ]]; then
      CASE_FIGURE=$(lat_figure "$dir/roce-gen.log")
      [[ -n $CASE_FIGURE ]] && CASE_FIGURE="${CASE_FIGURE}us"
      grep -q "iters in" "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest did not finish its iterations"; }
    else
      CASE_FIGURE=$(bw_figure "$dir/roce-gen.log")
      [[ -n $CASE_FIGURE ]] && CASE_FIGURE="${CASE_FIGURE}MB/s"
    fi
    [[ $verb == write || $verb == read || $verb == atomic ]] && ((ok)) && CASE_NOTE="remote memory verified"
    local rt
    rt=$(grep -o 'retransmitted packets [0-9]*, NAKs [0-9]*, timeouts [0-9]*' "$dir/roce-gen.log")
    [[ -n $rt ]] && CASE_NOTE+="${CASE_NOTE:+; }${rt/retransmitted packets/retx}"
  else
    guest_run 150 "timeout 120 $tool $args $NET_BRIDGE_IP"
    local grc=$?
    printf '%s' "$GUEST_OUT" > "$dir/guest.log"
    ((grc == 0)) || { ok=0; CASE_NOTE="guest $tool exit $grc: $(grep -m1 -iE 'error|fail|couldn' "$dir/guest.log")"; }
    if [[ $verb == pingpong ]]; then
      CASE_FIGURE=$(awk '/usec\/iter/ { print $(NF-1) "us/iter"; exit }' "$dir/guest.log")
      grep -q "iters in" "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }no iterations reported"; }
    else
      CASE_FIGURE=$(bw_figure "$dir/guest.log")
      [[ -n $CASE_FIGURE ]] && CASE_FIGURE="${CASE_FIGURE}MB/s" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }no result line"; }
    fi
  fi

  capture_stop
  if [[ $loss != 0 ]]; then
    guest_run 10 "/sbin/tc -s qdisc show dev eth0; /sbin/tc qdisc del dev eth0 root"
    CASE_NOTE+="${CASE_NOTE:+; }netem dropped $(grep -o 'dropped [0-9]*' <<< "$GUEST_OUT" | head -1 | cut -d' ' -f2)"
  fi
  local pmtu=$mtu
  [[ $verb == ud-pingpong ]] && pmtu=0
  if "$BUILD_DIR/tests/interop/interop_capture_check" "$dir/capture.pcap" --ours "$NET_ENGINE_IP" \
      --peer "$NET_GUEST_IP" --pmtu "$pmtu" > "$dir/capture_check.txt" 2>&1; then
    CASE_CAPTURE=ok
  else
    CASE_CAPTURE=FAIL
    ok=0
  fi
  CASE_SECONDS=$((SECONDS - t0))
  ((ok)) && CASE_VERDICT=pass
}

capture_start() {
  CAPTURE_FILE=$1
  ip netns exec "$NETNS" tcpdump -i veng0-br -s 0 -U -B 16384 -w "$CAPTURE_FILE" > "$CAPTURE_FILE.log" 2>&1 &
  CAPTURE_PID=$!
  local i
  for i in $(seq 50); do grep -q "listening on" "$CAPTURE_FILE.log" 2>/dev/null && return 0; sleep 0.1; done
}

capture_stop() {
  [[ -n ${CAPTURE_PID:-} ]] || return 0
  sleep 0.2
  kill -INT "$CAPTURE_PID" 2>/dev/null
  wait "$CAPTURE_PID" 2>/dev/null
  CAPTURE_PID=""
}
