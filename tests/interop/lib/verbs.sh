# Sourced by run.sh: cases where our side is an unmodified verbs program (Debian's perftest,
# ibv_rc_pingpong, ibv_ud_pingpong, ibv_uc_pingpong, ibv_srq_pingpong, and through librdmacm
# rping and perftest -R) run under roce-run, i.e. our transport as its RDMA device
# (docs/verbs.md). The program's own verdict (exit status, its result line) decides.
#
# Case lines are those of cases.sh with these KINDs:
#   verbs-to-rxe    our program is the client of the guest's server        (NAME .../verbs>rxe/...)
#   verbs-from-rxe  the guest's client against our program as the server   (NAME .../rxe>verbs/...)
#   verbs-to-app    our program is the client of roce-appliance (its port veng0, ours veng1)
#                                                                           (NAME .../verbs>app/...)
#   verbs-svc-to-rxe, verbs-svc-from-rxe, verbs-svc-to-app: the same in service mode (NAME
#                   .../verbs-svc>rxe/..., .../rxe>verbs-svc/..., .../verbs-svc>app/...): a
#                   roce-verbsd of the case's own owns the port and the program runs through it
#                   (roce-run --service); the service must still be alive when the case ends
#                   and must end cleanly on SIGTERM (docs/verbs.md, section 2).
#   verbs-svc-two   two programs through one roce-verbsd at once: our rping server for the
#                   guest's rping client while our ib_write_bw client runs against the guest's
#                   server (NAME two/verbs-svc<>rxe/...)

VERBS_VDEV="net_af_packet1,iface=veng1,blocksz=36864,framesz=4608,framecnt=512"

is_verbs_kind() { [[ $1 == verbs-* ]]; }

# Our program's port: veng0 at the engine address when the guest is the peer (FLAGS v6: its
# IPv6 one), veng1 at NET_VERBS_IP when roce-appliance holds veng0.
verbs_device_args() {
  if [[ $1 == verbs-to-app ]]; then
    echo "--ip $NET_VERBS_IP --vdev $VERBS_VDEV"
  elif has_flag "${2:-}" v6; then
    echo "--ip $NET_ENGINE_IP6 --vdev $ENGINE_VDEV"
  else
    echo "--ip $NET_ENGINE_IP --vdev $ENGINE_VDEV"
  fi
}

# The program's arguments on our device (GID 0) for a case, server side without an address.
# A client facing the emulated guest gets perftest's -u 17 for the reason roce-gen does
# (cases.sh); ibv_rc_pingpong has no such option.
verbs_args() {
  local kind=$1 verb=$2 mtu=$3 size=$4 iters=$5 flags=$6
  case $verb in
    pingpong | uc-pingpong) echo "-d rocedp0 -g 0 -m $mtu -s $size -n $iters" ;;
    srq-pingpong) echo "-d rocedp0 -g 0 -m $mtu -s $size -n $iters $(perftest_flags "$flags")" ;;
    ud-pingpong) echo "-d rocedp0 -g 0 -s $size -n $iters" ;;
    rping | ucmatose | udaddy) echo "" ;;  # cm_tool_cmd: their own options
    *)
      local u=""
      [[ $kind == verbs-to-rxe ]] && u="-u 17"
      echo "-d rocedp0 -x 0 -F -m $mtu $(size_flag "$verb" "$size" "$flags") -n $iters $u $(perftest_flags "$flags")" ;;
  esac
}

# The case connects through rdma_cm (rping, perftest -R): nothing listens on TCP, and the peer's
# rdma_cm address is the RoCE one, not the bridge's.
verbs_cm_case() { is_cm_tool "$1" || has_flag "$2" R; }

# librdmacm's example programs (rdmacm-utils), run as themselves rather than through perftest's
# options.
is_cm_tool() { [[ $1 == rping || $1 == ucmatose || $1 == udaddy || $1 == rdma_client ]]; }

# A librdmacm example's command line: VERB ROLE (server|client) ADDRESS SIZE ITERS [PORT [BIND]].
# BIND (yes): the server binds ADDRESS, as the guest's servers must for IPv6 (the kernel keeps
# an AF_INET wildcard listener to IPv4; ours, one address per device, hears both). rping's
# client validates every round (-V: it exits non-zero on a mismatch) and prints each (-v),
# which verbs_finished counts; ucmatose (RC) and udaddy (UD, SIDR) send ITERS messages of SIZE
# each way and end with "return status 0".
cm_tool_cmd() {
  local verb=$1 role=$2 addr=$3 size=$4 iters=$5
  case $verb in
    rping) if [[ $role == server ]]; then echo "rping -s -a $addr -V -C $iters -S $size"; else echo "rping -c -a $addr -V -v -C $iters -S $size"; fi ;;
    # Synchronous rdma_cm IDs (rdma_create_ep): one 16-byte message each way, "end 0" on success.
    # roce-appliance --rdma-cm all serves rdma_server's exchange on port 7472.
    rdma_client) if [[ $role == server ]]; then echo "rdma_server${7:+ -s $addr}"; else echo "rdma_client -s $addr${6:+ -p $6}"; fi ;;
    *) if [[ $role == server ]]; then echo "$verb${7:+ -b $addr} -C $iters -S $size"; else echo "$verb -s $addr -C $iters -S $size"; fi ;;
  esac
}

# verbs_run LOG SECONDS DEVICE_ARGS -- PROGRAM ARGS...: our program in the foreground.
verbs_run() {
  local log=$1 secs=$2
  shift 2
  # shellcheck disable=SC2068
  timeout "$secs" ip netns exec "$NETNS" "$BUILD_DIR/verbs/roce-run" $@ > "$log" 2>&1
}

# verbs_start LOG DEVICE_ARGS -- PROGRAM ARGS...: our server in the background (VERBS_PID).
verbs_start() {
  local log=$1
  shift
  # shellcheck disable=SC2068
  timeout 120 ip netns exec "$NETNS" "$BUILD_DIR/verbs/roce-run" $@ > "$log" 2>&1 &
  VERBS_PID=$!
}

verbs_stop() {
  [[ -n ${VERBS_PID:-} ]] || return 0
  kill -TERM "$VERBS_PID" 2>/dev/null
  wait "$VERBS_PID" 2>/dev/null
  VERBS_PID=""
}

# verbsd_start LOG DEVICE_ARGS: the case's roce-verbsd owning the port (VERBSD_PID), its socket
# VERBSD_SOCK; returns 1 when the socket does not appear within 10 s.
verbsd_start() {
  local log=$1 i
  shift
  VERBSD_SOCK=/tmp/roce-interop-$$-verbsd.sock
  rm -f "$VERBSD_SOCK"
  # shellcheck disable=SC2068
  timeout 180 ip netns exec "$NETNS" "$BUILD_DIR/apps/verbsd/roce-verbsd" $@ --socket "$VERBSD_SOCK" > "$log" 2>&1 &
  VERBSD_PID=$!
  for i in $(seq 100); do
    [[ -S $VERBSD_SOCK ]] && return 0
    kill -0 "$VERBSD_PID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

# verbsd_stop: SIGTERM to the case's roce-verbsd; its exit status (0: it ended cleanly).
verbsd_stop() {
  [[ -n ${VERBSD_PID:-} ]] || return 0
  local pid rc i
  pid=$(pgrep -P "$VERBSD_PID" | head -1)  # timeout's child: the service itself
  kill -TERM "${pid:-$VERBSD_PID}" 2>/dev/null
  for i in $(seq 100); do kill -0 "$VERBSD_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$VERBSD_PID" ${pid:+"$pid"} 2>/dev/null
  wait "$VERBSD_PID"
  rc=$?
  VERBSD_PID=""
  return $rc
}

# verbsd_verdict DIR: the case's roce-verbsd outlived its programs and ends cleanly on SIGTERM,
# removing its socket; 1 (with CASE_NOTE) when not.
verbsd_verdict() {
  local ok=0 rc
  kill -0 "$VERBSD_PID" 2>/dev/null || { ok=1; CASE_NOTE+="${CASE_NOTE:+; }roce-verbsd died: $(tail -1 "$1/verbsd.log")"; }
  verbsd_stop
  rc=$?
  ((rc == 0)) || { ok=1; CASE_NOTE+="${CASE_NOTE:+; }roce-verbsd exit $rc"; }
  [[ -e $VERBSD_SOCK ]] && { ok=1; CASE_NOTE+="${CASE_NOTE:+; }roce-verbsd left its socket"; rm -f "$VERBSD_SOCK"; }
  return $ok
}

# Waits up to 10 s for our rdma_cm server: its dataplane thread runs once the program made its
# event channel, and rdma_listen follows at once (there is no TCP port to watch).
verbs_wait_cm_listen() {
  local i pid
  for i in $(seq 100); do
    kill -0 "$VERBS_PID" 2>/dev/null || return 1
    pid=$(pgrep -P "$VERBS_PID" | head -1)
    if [[ -n $pid ]] && grep -qs roce-verbs-dp /proc/"$pid"/task/*/comm; then
      sleep 0.5
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# The same for an rdma_cm server in service mode, which has no dataplane thread of its own: its
# rdma_create_event_channel opens a context and the rdma_cm connection (two sockets to the
# service), and rdma_listen follows at once.
verbs_wait_svc_cm_listen() {
  local i pid
  for i in $(seq 100); do
    kill -0 "$VERBS_PID" 2>/dev/null || return 1
    pid=$(pgrep -P "$VERBS_PID" | head -1)
    if [[ -n $pid ]] && (($(find /proc/"$pid"/fd -lname 'socket:*' 2>/dev/null | wc -l) >= 2)); then
      sleep 1
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# Waits up to 10 s for our server's TCP port (perftest and ibv_*_pingpong listen on 18515).
verbs_wait_listen() {
  local i
  for i in $(seq 100); do
    ip netns exec "$NETNS" ss -ltn 2>/dev/null | grep -q ':18515 ' && return 0
    kill -0 "$VERBS_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# A program's figure from its log: perftest's result row or the pingpong's usec/iter.
verbs_figure() {
  local verb=$1 flags=$2 log=$3
  if [[ $verb == rping ]]; then
    echo "$(grep -c '^ping data: ' "$log") pings"
  elif [[ $verb == rdma_client ]]; then
    grep -qE "^rdma_(client|server): end 0" "$log" && echo "end 0"
  elif is_cm_tool "$verb"; then
    grep -q "return status 0" "$log" && echo "status 0"
  elif [[ $verb == *pingpong ]]; then
    awk '/usec\/iter/ { print $(NF-1) "us/iter"; exit }' "$log"
  elif has_flag "$flags" lat; then
    perftest_lat_figure "$log"
  else
    bw_figure "$log"
  fi
}

# The program said it finished: a pingpong prints "iters in", perftest its result row.
verbs_finished() {
  local verb=$1 log=$2
  if [[ $verb == rping ]]; then
    # A validating rping client prints every round it checked (ITERS of them, in $4).
    [[ $(grep -c '^ping data: ' "$log") -eq ${4:-0} ]] && ! grep -qiE 'mismatch|error|fail' "$log"
  elif [[ $verb == rdma_client ]]; then
    grep -qE "^rdma_(client|server): end 0" "$log"
  elif is_cm_tool "$verb"; then
    grep -q "return status 0" "$log" && ! grep -qiE 'failed|error' "$log"
  elif [[ $verb == *pingpong ]]; then grep -q "iters in" "$log"; else [[ -n $(verbs_figure "$verb" "$3" "$log") ]]; fi
}

# glibc's getaddrinfo (AI_ADDRCONFIG, which rping's and the rdmacm examples' lookups use) returns
# no IPv6 address in a namespace whose only kernel address is IPv4 (br0's): "Address family for
# hostname not supported". The IPv6 cases give the namespace's loopback an IPv6 address of its
# own for their duration (never one of the fd77:: RoCE addresses, and no link carries IPv6).
VERBS_ADDRCONFIG_IP6=fd7f::1
verbs_addrconfig_v6() { inns ip -6 addr "$1" "$VERBS_ADDRCONFIG_IP6/128" dev lo 2>/dev/null; }

# run_verbs_case LINE: as run_case (sets CASE_VERDICT, CASE_FIGURE, CASE_NOTE, CASE_DIR,
# CASE_CAPTURE, CASE_SECONDS).
run_verbs_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  [[ $kind == verbs-svc-two ]] && { run_verbs_svc_two_case "$1"; return; }
  case_begin "$name"
  local dir=$CASE_DIR tool ok=1 ours dev peer_ip svc=0
  # Service mode: the case runs as its library-mode KIND, the program through a roce-verbsd.
  [[ $kind == verbs-svc-* ]] && svc=1 kind=verbs-${kind#verbs-svc-}
  tool=$(guest_tool "$verb" "$flags")
  is_cm_tool "$verb" && tool=$verb
  ours=$(verbs_args "$kind" "$verb" "$mtu" "$size" "$iters" "$flags")
  dev=$(verbs_device_args "$kind" "$flags")
  # v6: the RoCE addresses of both sides are the fd77:: ones (rdma_cm programs only).
  local guest_roce=$NET_GUEST_IP our_roce=$NET_ENGINE_IP bind=""
  has_flag "$flags" v6 && guest_roce=$NET_GUEST_IP6 our_roce=$NET_ENGINE_IP6 bind=yes && verbs_addrconfig_v6 add
  if [[ $kind == verbs-to-app ]]; then
    local app_args
    app_args=$(appliance_args "$verb" "$size" "$iters" "$flags")
    [[ $verb == rping || $verb == rdma_client ]] && app_args="--rdma-cm all"
    [[ $verb == ucmatose || $verb == udaddy ]] && app_args="--rdma-cm all --cm-messages $iters --cm-message-size $size"
    # shellcheck disable=SC2086  # options are words
    appliance_keep "$mtu" $app_args || return
  else
    appliance_none
  fi
  if ((svc)); then
    # shellcheck disable=SC2086  # options are words
    verbsd_start "$dir/verbsd.log" $dev || { CASE_NOTE="roce-verbsd did not start: $(tail -1 "$dir/verbsd.log")"; verbsd_stop; return; }
    dev="--service $VERBSD_SOCK"
  fi
  capture_start "$dir/capture.pcap"
  case $kind in
    verbs-to-rxe)
      local gserver="$tool $(guest_args "$verb" "$mtu" "$size" "$iters" "$flags")" ocmd="$tool $ours $NET_GUEST_IP"
      local gwait="s=0; until netstat -ltn | grep -q ':18515 '; do [ -f /tmp/server.rc ] || [ \$s -ge 200 ] && exit 1; sleep 0.1; s=\$((s + 1)); done"
      # rdma_cm servers listen on no TCP port: they are given a second to bind.
      verbs_cm_case "$verb" "$flags" && gwait="sleep 1; [ ! -f /tmp/server.rc ]"
      if is_cm_tool "$verb"; then
        gserver=$(cm_tool_cmd "$verb" server "$guest_roce" "$size" "$iters" "" "$bind")
        ocmd=$(cm_tool_cmd "$verb" client "$guest_roce" "$size" "$iters")
      fi
      guest_run 40 "bg server $gserver; $gwait" > /dev/null ||
        { ok=0; CASE_NOTE="guest server did not listen"; }
      if ((ok)); then
        # shellcheck disable=SC2086
        verbs_run "$dir/ours.log" 100 $dev -- $ocmd
        local vrc=$?
        ((vrc == 0)) || { ok=0; CASE_NOTE="our $tool exit $vrc: $(grep -m1 -iE 'error|fail|couldn|unable|roce-verbs' "$dir/ours.log")"; }
      fi
      if ((ok)); then guest_run 90 "fg server 60"; else guest_run 40 "fg server 10"; fi
      local grc=$?
      printf '%s' "$GUEST_OUT" > "$dir/guest.log"
      ((grc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest $tool exit $grc"; }
      verbs_finished "$verb" "$dir/ours.log" "$flags" "$iters" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our $tool reported no result"; }
      verbs_finished "$verb" "$dir/guest.log" "$flags" || [[ $verb != *pingpong ]] ||
        { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest did not finish its iterations"; }
      CASE_FIGURE=$(verbs_figure "$verb" "$flags" "$dir/ours.log")
      peer_ip=$guest_roce
      ;;
    verbs-from-rxe)
      local oserver="$tool $ours" gclient="$tool $(guest_args "$verb" "$mtu" "$size" "$iters" "$flags") $NET_BRIDGE_IP"
      # rdma_cm reaches our program at its RoCE address.
      has_flag "$flags" R && gclient="$tool $(guest_args "$verb" "$mtu" "$size" "$iters" "$flags") $NET_ENGINE_IP"
      if is_cm_tool "$verb"; then
        oserver=$(cm_tool_cmd "$verb" server "$our_roce" "$size" "$iters")
        gclient=$(cm_tool_cmd "$verb" client "$our_roce" "$size" "$iters")
      fi
      # shellcheck disable=SC2086
      verbs_start "$dir/ours.log" $dev -- $oserver
      if ! verbs_cm_case "$verb" "$flags"; then verbs_wait_listen
      elif ((svc)); then verbs_wait_svc_cm_listen
      else verbs_wait_cm_listen; fi ||
        { ok=0; CASE_NOTE="our $tool did not listen: $(tail -1 "$dir/ours.log")"; }
      if ((ok)); then
        guest_run 150 "timeout 120 $gclient"
        local grc=$?
        printf '%s' "$GUEST_OUT" > "$dir/guest.log"
        ((grc == 0)) || { ok=0; CASE_NOTE="guest $tool exit $grc: $(grep -m1 -iE 'error|fail|couldn' "$dir/guest.log")"; }
        verbs_finished "$verb" "$dir/guest.log" "$flags" "$iters" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest reported no result"; }
        CASE_FIGURE=$(verbs_figure "$verb" "$flags" "$dir/guest.log")
      fi
      # Our server ends on its own once the client is done.
      local i
      for i in $(seq 100); do kill -0 "$VERBS_PID" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$VERBS_PID" 2>/dev/null; then
        ok=0
        CASE_NOTE+="${CASE_NOTE:+; }our $tool did not finish"
        verbs_stop
      else
        wait "$VERBS_PID"
        local orc=$?
        VERBS_PID=""
        ((orc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our $tool exit $orc"; }
      fi
      [[ $verb == *pingpong ]] && ! verbs_finished "$verb" "$dir/ours.log" && { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our $tool did not finish its iterations"; }
      peer_ip=$guest_roce
      ;;
    verbs-to-app)
      local ocmd="$tool $ours $NET_BRIDGE_IP"
      # rdma_cm reaches the appliance at its RoCE address.
      has_flag "$flags" R && ocmd="$tool $ours $NET_ENGINE_IP"
      is_cm_tool "$verb" && ocmd=$(cm_tool_cmd "$verb" client "$NET_ENGINE_IP" "$size" "$iters" 7472)
      # shellcheck disable=SC2086
      verbs_run "$dir/ours.log" 100 $dev -- $ocmd
      local vrc=$?
      ((vrc == 0)) || { ok=0; CASE_NOTE="our $tool exit $vrc: $(grep -m1 -iE 'error|fail|couldn|unable|roce-verbs' "$dir/ours.log")"; }
      verbs_finished "$verb" "$dir/ours.log" "$flags" "$iters" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our $tool reported no result"; }
      CASE_FIGURE=$(verbs_figure "$verb" "$flags" "$dir/ours.log")
      peer_ip=$NET_VERBS_IP
      ;;
  esac
  capture_stop
  has_flag "$flags" v6 && verbs_addrconfig_v6 del
  if ((svc)); then verbsd_verdict "$dir" || ok=0; fi
  local pmtu=$mtu sender=ours
  [[ $verb == ud-pingpong ]] && pmtu=0
  # veng0-br carries the side on veng0 ("ours" to the check): our program facing the guest, or the
  # appliance, whose client (the check's peer) is the one sending in a one-way test.
  [[ $kind == verbs-to-rxe ]] || sender=peer
  local ours_ip=$our_roce
  [[ $kind == verbs-to-app ]] && ours_ip=$NET_ENGINE_IP
  capture_verdict "$dir" "$peer_ip" "$pmtu" "$flags" "$sender" "$ours_ip" || ok=0
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# run_verbs_svc_two_case LINE (kind verbs-svc-two, VERB write with a -D flag): one roce-verbsd
# on veng0 serves two programs at once, each with its own verdict: our `rping -s -V` for the
# guest's validating rping client, and our ib_write_bw client (-D: for a fixed time) against the
# guest's ib_write_bw server. The rping client starts once the ib_write_bw client printed its
# table header (its transfer begins) and must end while it still runs, so that the two really
# share the service.
run_verbs_svc_two_case() {
  local name kind verb mtu size iters flags
  read -r name kind verb mtu _ size iters flags <<< "$1"
  case_begin "$name"
  local dir=$CASE_DIR ok=1 svc rping_pid bw_pid i rc
  appliance_none
  # shellcheck disable=SC2046  # options are words
  verbsd_start "$dir/verbsd.log" $(verbs_device_args verbs-to-rxe) ||
    { CASE_NOTE="roce-verbsd did not start: $(tail -1 "$dir/verbsd.log")"; verbsd_stop; return; }
  svc="--service $VERBSD_SOCK"
  capture_start "$dir/capture.pcap"
  # shellcheck disable=SC2046,SC2086
  verbs_start "$dir/ours_rping.log" $svc -- $(cm_tool_cmd rping server "$NET_ENGINE_IP" 64 10)
  rping_pid=$VERBS_PID
  verbs_wait_svc_cm_listen || { ok=0; CASE_NOTE="our rping did not listen: $(tail -1 "$dir/ours_rping.log")"; }
  if ((ok)); then
    guest_run 40 "bg server ib_${verb}_bw $(guest_args "$verb" "$mtu" "$size" "$iters" "$flags"); s=0; until netstat -ltn | grep -q ':18515 '; do [ -f /tmp/server.rc ] || [ \$s -ge 200 ] && exit 1; sleep 0.1; s=\$((s + 1)); done" > /dev/null ||
      { ok=0; CASE_NOTE="guest server did not listen"; }
  fi
  if ((ok)); then
    # shellcheck disable=SC2046,SC2086
    timeout 100 ip netns exec "$NETNS" "$BUILD_DIR/verbs/roce-run" $svc -- stdbuf -oL "ib_${verb}_bw" \
      $(verbs_args verbs-to-rxe "$verb" "$mtu" "$size" "$iters" "$flags") "$NET_GUEST_IP" > "$dir/ours_bw.log" 2>&1 &
    bw_pid=$!
    for i in $(seq 200); do grep -qs "#bytes" "$dir/ours_bw.log" && break; kill -0 "$bw_pid" 2>/dev/null || break; sleep 0.1; done
    guest_run 150 "timeout 120 $(cm_tool_cmd rping client "$NET_ENGINE_IP" 64 10)"
    rc=$?
    printf '%s' "$GUEST_OUT" > "$dir/guest_rping.log"
    ((rc == 0)) || { ok=0; CASE_NOTE="guest rping exit $rc"; }
    verbs_finished rping "$dir/guest_rping.log" "" 10 || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest rping reported no result"; }
    kill -0 "$bw_pid" 2>/dev/null || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our ib_${verb}_bw had ended before the rping: not at once"; }
    wait "$bw_pid"
    rc=$?
    ((rc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our ib_${verb}_bw exit $rc"; }
    verbs_finished "$verb" "$dir/ours_bw.log" "$flags" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our ib_${verb}_bw reported no result"; }
    CASE_FIGURE="$(bw_figure "$dir/ours_bw.log"), $(verbs_figure rping "" "$dir/guest_rping.log")"
    guest_run 90 "fg server 60"
  else
    guest_run 40 "fg server 10"
  fi
  rc=$?
  printf '%s' "$GUEST_OUT" > "$dir/guest_bw.log"
  ((rc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest ib_${verb}_bw exit $rc"; }
  for i in $(seq 100); do kill -0 "$rping_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$rping_pid" 2>/dev/null; then
    ok=0
    CASE_NOTE+="${CASE_NOTE:+; }our rping did not finish"
    verbs_stop
  else
    wait "$rping_pid"
    rc=$?
    ((rc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }our rping exit $rc"; }
  fi
  VERBS_PID=""
  capture_stop
  verbsd_verdict "$dir" || ok=0
  capture_verdict "$dir" "$NET_GUEST_IP" "$mtu" "$flags" ours "$NET_ENGINE_IP" || ok=0
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# Every program in each role it has: against the guest as client and server, against
# roce-appliance as client; -q 4, -a, UC and UD where perftest has them.
cases_verbs_full() {
  local dir kind verb
  for dir in verbs-to-rxe verbs-from-rxe verbs-to-app; do
    case $dir in verbs-to-rxe) kind="verbs>rxe" ;; verbs-from-rxe) kind="rxe>verbs" ;; *) kind="verbs>app" ;; esac
    echo "pingpong/$kind/m1024/s4096 $dir pingpong 1024 0 4096 16"
    echo "pingpong/$kind/m4096/s65536 $dir pingpong 4096 0 65536 8"
    for verb in write read send; do
      echo "$verb/$kind/m1024/s65536 $dir $verb 1024 0 65536 16"
      echo "$verb/$kind/m4096/s1048576 $dir $verb 4096 0 1048576 5"
      echo "$verb/$kind/m1024/q4/s4096 $dir $verb 1024 0 4096 16 q4"
      echo "$verb/$kind/m4096/all $dir $verb 4096 0 0 5 all"
      echo "$verb-lat/$kind/m1024/s64 $dir $verb 1024 0 64 16 lat"
      echo "$verb-lat/$kind/m4096/all $dir $verb 4096 0 0 5 lat,all"
    done
    echo "atomic/$kind/m1024/s8 $dir atomic 1024 0 8 64"
    echo "atomic/$kind/m1024/q4/s8 $dir atomic 1024 0 8 16 q4"
    echo "atomic/$kind/m1024/cas/s8 $dir atomic 1024 0 8 16 cas"
    echo "atomic-lat/$kind/m1024/s8 $dir atomic 1024 0 8 16 lat"
    echo "write/$kind/m1024/uc/s4096 $dir write 1024 0 4096 16 uc"
    echo "send/$kind/m1024/uc/s4096 $dir send 1024 0 4096 16 uc"
    echo "write-lat/$kind/m1024/uc/s64 $dir write 1024 0 64 16 lat,uc"
    echo "send-lat/$kind/m1024/uc/s64 $dir send 1024 0 64 16 lat,uc"
    echo "send/$kind/m1024/ud/s1024 $dir send 1024 0 1024 16 ud"
    echo "send/$kind/m4096/ud/q4/s4096 $dir send 4096 0 4096 16 ud,q4"
    echo "send-lat/$kind/m1024/ud/s64 $dir send 1024 0 64 16 lat,ud"
    echo "send/$kind/m1024/ud/all $dir send 1024 0 0 5 ud,all"
  done
  # roce-appliance serves no UD or UC pingpong; the guest does both roles.
  echo "ud-pingpong/verbs>rxe/s1024 verbs-to-rxe ud-pingpong 4096 0 1024 16"
  echo "ud-pingpong/rxe>verbs/s1024 verbs-from-rxe ud-pingpong 4096 0 1024 16"
  echo "uc-pingpong/verbs>rxe/m1024/s4096 verbs-to-rxe uc-pingpong 1024 0 4096 16"
  echo "uc-pingpong/rxe>verbs/m1024/s4096 verbs-from-rxe uc-pingpong 1024 0 4096 16"
  # ibv_srq_pingpong: every QP's receives come from one shared receive queue on each side (the
  # default 16 QPs; -q 4 with messages of several packets each).
  echo "srq-pingpong/verbs>rxe/m1024/s4096 verbs-to-rxe srq-pingpong 1024 0 4096 64"
  echo "srq-pingpong/rxe>verbs/m1024/s4096 verbs-from-rxe srq-pingpong 1024 0 4096 64"
  echo "srq-pingpong/verbs>rxe/m1024/q4/s3000 verbs-to-rxe srq-pingpong 1024 0 3000 64 q4"
  echo "srq-pingpong/rxe>verbs/m1024/q4/s3000 verbs-from-rxe srq-pingpong 1024 0 3000 64 q4"
  # Through librdmacm (our rdma_* entry points on the device's own CM): rping validating every
  # round, both roles against the guest and as the appliance's client; perftest -R both ways;
  # ucmatose (RC), udaddy (UD services through SIDR) and rdma_server/rdma_client (synchronous
  # IDs). Our -R clients' requests that reach the guest's server before it listens are sent again
  # (docs/verbs.md, section 3).
  echo "rping/verbs>rxe/s64 verbs-to-rxe rping 4096 0 64 10"
  echo "rping/rxe>verbs/s64 verbs-from-rxe rping 4096 0 64 10"
  echo "rping/verbs>rxe/s60000 verbs-to-rxe rping 4096 0 60000 4"
  echo "rping/rxe>verbs/s60000 verbs-from-rxe rping 4096 0 60000 4"
  echo "rping/verbs>app/s64 verbs-to-app rping 4096 0 64 10"
  echo "write-R/verbs>rxe/s65536 verbs-to-rxe write 4096 0 65536 200 R"
  echo "write-R/rxe>verbs/s65536 verbs-from-rxe write 4096 0 65536 200 R"
  echo "read-R/verbs>rxe/q2/s65536 verbs-to-rxe read 4096 0 65536 100 R,q2"
  echo "read-R/rxe>verbs/q2/s65536 verbs-from-rxe read 4096 0 65536 100 R,q2"
  echo "write-R/verbs>app/s65536 verbs-to-app write 4096 0 65536 200 R"
  echo "send-R/verbs>rxe/ud/s1024 verbs-to-rxe send 4096 0 1024 200 R,ud"
  echo "send-R/rxe>verbs/ud/s1024 verbs-from-rxe send 4096 0 1024 200 R,ud"
  echo "ucmatose/verbs>rxe verbs-to-rxe ucmatose 4096 0 100 10"
  echo "ucmatose/rxe>verbs verbs-from-rxe ucmatose 4096 0 100 10"
  echo "udaddy/verbs>rxe verbs-to-rxe udaddy 4096 0 100 10"
  echo "udaddy/rxe>verbs verbs-from-rxe udaddy 4096 0 100 10"
  echo "udaddy/verbs>app verbs-to-app udaddy 4096 0 100 10"
  echo "rdma_client/verbs>rxe verbs-to-rxe rdma_client 4096 0 16 1"
  echo "rdma_client/rxe>verbs verbs-from-rxe rdma_client 4096 0 16 1"
  echo "rdma_client/verbs>app verbs-to-app rdma_client 4096 0 16 1"
  # The same over IPv6 (issue 27): our device on fd77::10, the guest's fd77::2 GID; the CMA
  # headers carry IPv6 addresses, the guest's servers bind their IPv6 address. perftest -R has
  # no IPv6 case: Debian's perftest 4.5 resolves -R addresses as AF_INET only (docs/verbs.md).
  for dir in verbs-to-rxe verbs-from-rxe; do
    [[ $dir == verbs-to-rxe ]] && kind="verbs>rxe" || kind="rxe>verbs"
    echo "rping/$kind/v6/s64 $dir rping 4096 0 64 10 v6"
    echo "ucmatose/$kind/v6 $dir ucmatose 4096 0 100 10 v6"
    echo "udaddy/$kind/v6 $dir udaddy 4096 0 100 10 v6"
    echo "rdma_client/$kind/v6 $dir rdma_client 4096 0 16 1 v6"
  done
  cases_verbs_svc_full
}

# Service mode (docs/verbs.md, section 2): the same programs through a roce-verbsd that owns the
# port, in each role (RC, UC and UD; ibv_srq_pingpong's QPs on one SRQ through the service), and
# rdma_cm through the service (slice 5).
cases_verbs_svc_full() {
  local dir kind verb
  for dir in verbs-svc-to-rxe verbs-svc-from-rxe verbs-svc-to-app; do
    case $dir in verbs-svc-to-rxe) kind="verbs-svc>rxe" ;; verbs-svc-from-rxe) kind="rxe>verbs-svc" ;; *) kind="verbs-svc>app" ;; esac
    echo "pingpong/$kind/m1024/s4096 $dir pingpong 1024 0 4096 16"
    for verb in write read send; do
      echo "$verb/$kind/m1024/s65536 $dir $verb 1024 0 65536 16"
      echo "$verb/$kind/m4096/q4/s4096 $dir $verb 4096 0 4096 16 q4"
      echo "$verb-lat/$kind/m1024/s64 $dir $verb 1024 0 64 16 lat"
    done
    echo "write/$kind/m4096/s1048576 $dir write 4096 0 1048576 5"
    echo "atomic/$kind/m1024/s8 $dir atomic 1024 0 8 64"
    echo "write/$kind/m1024/uc/s4096 $dir write 1024 0 4096 16 uc"
    echo "send/$kind/m1024/ud/s1024 $dir send 1024 0 1024 16 ud"
  done
  echo "ud-pingpong/verbs-svc>rxe/s1024 verbs-svc-to-rxe ud-pingpong 4096 0 1024 16"
  echo "ud-pingpong/rxe>verbs-svc/s1024 verbs-svc-from-rxe ud-pingpong 4096 0 1024 16"
  echo "uc-pingpong/verbs-svc>rxe/m1024/s4096 verbs-svc-to-rxe uc-pingpong 1024 0 4096 16"
  echo "srq-pingpong/verbs-svc>rxe/m1024/s4096 verbs-svc-to-rxe srq-pingpong 1024 0 4096 64"
  echo "srq-pingpong/rxe>verbs-svc/m1024/q4/s3000 verbs-svc-from-rxe srq-pingpong 1024 0 3000 64 q4"
  echo "rping/verbs-svc>rxe/s64 verbs-svc-to-rxe rping 4096 0 64 10"
  echo "rping/rxe>verbs-svc/s64 verbs-svc-from-rxe rping 4096 0 64 10"
  echo "rping/verbs-svc>rxe/s60000 verbs-svc-to-rxe rping 4096 0 60000 4"
  echo "rping/verbs-svc>app/s64 verbs-svc-to-app rping 4096 0 64 10"
  echo "write-R/verbs-svc>rxe/s65536 verbs-svc-to-rxe write 4096 0 65536 200 R"
  echo "write-R/rxe>verbs-svc/s65536 verbs-svc-from-rxe write 4096 0 65536 200 R"
  echo "write-R/verbs-svc>app/s65536 verbs-svc-to-app write 4096 0 65536 200 R"
  echo "read-R/verbs-svc>rxe/q2/s65536 verbs-svc-to-rxe read 4096 0 65536 100 R,q2"
  echo "send-R/verbs-svc>rxe/ud/s1024 verbs-svc-to-rxe send 4096 0 1024 200 R,ud"
  echo "send-R/rxe>verbs-svc/ud/s1024 verbs-svc-from-rxe send 4096 0 1024 200 R,ud"
  echo "ucmatose/verbs-svc>rxe verbs-svc-to-rxe ucmatose 4096 0 100 10"
  echo "udaddy/rxe>verbs-svc verbs-svc-from-rxe udaddy 4096 0 100 10"
  echo "rdma_client/verbs-svc>rxe verbs-svc-to-rxe rdma_client 4096 0 16 1"
  echo "rdma_client/rxe>verbs-svc verbs-svc-from-rxe rdma_client 4096 0 16 1"
  echo "two/verbs-svc<>rxe/write-D6+rping verbs-svc-two write 1024 0 65536 16 D6"
  # What library mode's list has beyond the above (session 9): -a sweeps (RC to 8 MiB at MTU
  # 4096, UD to the MTU, a latency sweep), -q 4 on atomics, IPv6 (the rdma_cm programs as in
  # library mode, and ibv_rc_pingpong / ib_write_bw on the fd77:: GIDs), and perftest's
  # --use-srq: our server's QPs (-q 4, and UD) taking their receives from one SRQ through the
  # service, and our latency client's.
  for dir in verbs-svc-to-rxe verbs-svc-from-rxe; do
    [[ $dir == verbs-svc-to-rxe ]] && kind="verbs-svc>rxe" || kind="rxe>verbs-svc"
    echo "write/$kind/m4096/all $dir write 4096 0 0 5 all"
    echo "send/$kind/m1024/ud/all $dir send 1024 0 0 5 ud,all"
    echo "atomic/$kind/m1024/q4/s8 $dir atomic 1024 0 8 16 q4"
    echo "pingpong/$kind/v6/m1024/s4096 $dir pingpong 1024 0 4096 16 v6"
    echo "write/$kind/v6/m1024/s65536 $dir write 1024 0 65536 16 v6"
    echo "rping/$kind/v6/s64 $dir rping 4096 0 64 10 v6"
    echo "ucmatose/$kind/v6 $dir ucmatose 4096 0 100 10 v6"
    echo "udaddy/$kind/v6 $dir udaddy 4096 0 100 10 v6"
    echo "rdma_client/$kind/v6 $dir rdma_client 4096 0 16 1 v6"
  done
  echo "read-lat/verbs-svc>rxe/m4096/all verbs-svc-to-rxe read 4096 0 0 5 lat,all"
  echo "write/verbs-svc>app/m4096/all verbs-svc-to-app write 4096 0 0 5 all"
  echo "send/rxe>verbs-svc/m1024/srq/q4/s4096 verbs-svc-from-rxe send 1024 0 4096 64 srq,q4"
  echo "send/rxe>verbs-svc/m1024/ud/srq/s1024 verbs-svc-from-rxe send 1024 0 1024 100 srq,ud"
  echo "send-lat/verbs-svc>rxe/m1024/srq/s64 verbs-svc-to-rxe send 1024 0 64 64 srq,lat"
  echo "send-lat/rxe>verbs-svc/m1024/srq/s64 verbs-svc-from-rxe send 1024 0 64 64 srq,lat"
}

# The CI handful: each program kind in each role once, a few seconds each.
CASES_VERBS_CI=(
  "pingpong/verbs>rxe/m1024/s4096" "write/rxe>verbs/m1024/s65536" "read/verbs>rxe/m1024/q4/s4096"
  "send-lat/rxe>verbs/m1024/ud/s64" "atomic/verbs>app/m1024/s8" "write-lat/verbs>app/m1024/s64"
  "ud-pingpong/rxe>verbs/s1024"
  # librdmacm's entry points against the kernel's rdma_cm: one case (about 4 s here).
  "rping/verbs>rxe/s64"
  # Service mode: a roce-verbsd of the case's own holds the port; each program kind in each role
  # toward rxe, rdma_cm through the service both ways, and one case toward the appliance.
  "write/verbs-svc>rxe/m1024/s65536" "read-lat/rxe>verbs-svc/m1024/s64" "pingpong/rxe>verbs-svc/m1024/s4096"
  "pingpong/verbs-svc>rxe/m1024/s4096" "rping/verbs-svc>rxe/s64" "rping/rxe>verbs-svc/s64"
  "write-R/verbs-svc>rxe/s65536" "write-R/rxe>verbs-svc/s65536" "write-R/verbs-svc>app/s65536"
  "two/verbs-svc<>rxe/write-D6+rping"
  # Service mode's -a (UD's sweep, to the MTU), IPv6 and --use-srq (with -q 4: our server's
  # four QPs on one SRQ through the service), once each.
  "send/verbs-svc>rxe/m1024/ud/all" "rping/rxe>verbs-svc/v6/s64" "send/rxe>verbs-svc/m1024/srq/q4/s4096"
)

cases_verbs_ci() {
  local line
  while read -r line; do
    printf '%s\n' "${CASES_VERBS_CI[@]}" | grep -qxF -- "${line%% *}" && echo "$line"
  done < <(cases_verbs_full)
}
