# Sourced by run.sh: rdma_cm cases (issue 23). Nothing connects over TCP here: librdmacm's
# programs reach roce-appliance's --rdma-cm listeners through IB CM MADs on QP1 (and back).
#
#   cm-from-rxe   the guest's librdmacm client against roce-appliance --rdma-cm all:
#                 rping -c -V (the server READs the client's buffer and WRITEs it back, every
#                 round checked by rping itself), ucmatose -s (messages both ways), udaddy -s
#                 (SIDR in the UDP port space, then UD datagrams both ways), rdma_client -s
#                 -p 7472 (one 16-byte inline SEND each way; `all` puts rdma_server on 7472
#                 beside ucmatose's 7471)
#   cm-to-rxe     roce-gen rping -V / ucmatose / udaddy / rdma_client against the guest's
#                 rping -s -V, ucmatose, udaddy and rdma_server; both programs must succeed
#
# A case passes when the real program exits 0 and says what success says; SIZE is rping's -S /
# ucmatose's -S, ITERS their -C.
# FLAGS v6: the same over IPv6 (issue 27): both sides' rdma_cm addresses are the fd77:: ones
# (our --ip fd77::10, the guest's fd77::2), so the cma_hdr carries IPv6 addresses and the paths
# IPv6 GIDs; the guest's servers bind their IPv6 address (-a / -b). MTU is the path MTU rdma_cm settles on (the active side's port:
# 4096 on the 9000-byte link) and is what the capture check holds the frames to.

is_cm_kind() { [[ $1 == cm-* ]]; }

# cm_addresses FLAGS: CM_OURS and CM_PEER, both sides' rdma_cm addresses (v6: the fd77:: ones),
# and ENGINE_ROCE_IP for our side.
cm_addresses() {
  CM_OURS=$NET_ENGINE_IP CM_PEER=$NET_GUEST_IP
  has_flag "$1" v6 && CM_OURS=$NET_ENGINE_IP6 CM_PEER=$NET_GUEST_IP6
  ENGINE_ROCE_IP=$CM_OURS
}

# cm_guest_cmd VERB SIZE ITERS: the guest's client command line (to CM_OURS).
cm_guest_cmd() {
  case $1 in
    rping) echo "rping -c -a $CM_OURS -V -C $3 -S $2" ;;
    ucmatose) echo "ucmatose -s $CM_OURS -C $3 -S $2" ;;
    udaddy) echo "udaddy -s $CM_OURS -C $3 -S $2" ;;
    rdma_client) echo "rdma_client -s $CM_OURS -p 7472" ;;
  esac
}

# cm_app_name VERB: the name the appliance logs the guest's client under (its server's).
cm_app_name() { [[ $1 == rdma_client ]] && echo rdma_server || echo "$1"; }

# cm_guest_succeeded VERB LOG: what the program prints when it worked (its exit status is checked
# as well): rping -V exits non-zero on a mismatch, but says "data mismatch" too; cmatose ends with
# "return status 0"; rdma_client and rdma_server end with "end 0".
cm_guest_succeeded() {
  case $1 in
    rping) ! grep -qiE "mismatch|error|fail" "$2" ;;
    ucmatose|udaddy) grep -q "return status 0" "$2" && ! grep -qiE "failed|error" "$2" ;;
    rdma_client) grep -q "^rdma_client: end 0" "$2" ;;
    rdma_server) grep -q "^rdma_server: end 0" "$2" ;;
  esac
}

run_cm_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  [[ $kind == cm-to-rxe ]] && { run_cm_to_rxe_case "$1"; return; }
  [[ $verb == perftest2 ]] && { run_cm_perftest_concurrent_case "$1"; return; }
  case_begin "$name"
  local dir=$CASE_DIR ok=1
  cm_addresses "$flags"
  # rping's client says its sizes itself; cmatose's and udaddy's servers must be told (their -C/-S).
  local app_args="--rdma-cm all"
  [[ $verb == rping || $verb == rdma_client ]] || app_args+=" --cm-messages $iters --cm-message-size $size"
  # shellcheck disable=SC2086  # options are words
  appliance_keep "$mtu" $app_args || return
  local app_lines
  app_lines=$(wc -l < "$APPLIANCE_LOG")
  capture_start "$dir/capture.pcap"
  local cmd
  cmd=$(cm_guest_cmd "$verb" "$size" "$iters")
  guest_run 40 "timeout 30 $cmd"
  local grc=$?
  printf '%s' "$GUEST_OUT" > "$dir/guest.log"
  ((grc == 0)) || { ok=0; CASE_NOTE="guest $verb exit $grc: $(grep -m1 -iE 'error|fail|mismatch' "$dir/guest.log")"; }
  cm_guest_succeeded "$verb" "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest $verb did not report success"; }
  # The appliance logs each connection's end (after the client's DREQ).
  local i app_name
  app_name=$(cm_app_name "$verb")
  for i in $(seq 30); do
    tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" | grep -q "$app_name client .* \(done\|failed\)" && break
    sleep 0.1
  done
  tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" > "$dir/appliance.log"
  if grep -q "$app_name client .* failed" "$dir/appliance.log"; then
    ok=0 CASE_NOTE+="${CASE_NOTE:+; }appliance: $(grep -m1 "failed" "$dir/appliance.log")"
  fi
  case $verb in
    rping) CASE_FIGURE="$(grep -o '[0-9]* rounds' "$dir/appliance.log" | head -1)" ;;
    ucmatose) CASE_FIGURE="$(grep -o '[0-9]* messages sent' "$dir/appliance.log" | head -1 | cut -d' ' -f1) msgs" ;;
    udaddy) CASE_FIGURE="$(grep -o '[0-9]* datagrams received' "$dir/appliance.log" | head -1 | cut -d' ' -f1) dgrams" ;;
    rdma_client)
      CASE_FIGURE="$(grep -o 'rdma_server client .* done: [0-9]* messages received' "$dir/appliance.log" | head -1 | grep -o '[0-9]* messages' | cut -d' ' -f1) msgs"
      grep -q "rdma_server client .* done: 1 messages received, 1 sent" "$dir/appliance.log" ||
        { ok=0; CASE_NOTE+="${CASE_NOTE:+; }appliance did not log rdma_server's 1 message each way"; } ;;
  esac
  capture_stop
  capture_verdict "$dir" "$CM_PEER" "$mtu" "$flags" peer "$CM_OURS" || ok=0
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# Two of the guest's ib_write_bw -R clients at once against roce-appliance --rdma-cm perftest
# (one host, one port): each gets its own session, its data QPs found by their QPNs even when
# both clients connect them at the same moment. Passes when both exit 0 with their tables and
# the appliance printed two server tables and no failed session.
run_cm_perftest_concurrent_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  case_begin "$name"
  local dir=$CASE_DIR ok=1
  appliance_keep "$mtu" --rdma-cm perftest || return
  local app_lines
  app_lines=$(wc -l < "$APPLIANCE_LOG")
  capture_start "$dir/capture.pcap"
  local client="ib_write_bw -d rxe0 -x \$G -F -R -m $mtu -s $size -n $iters $NET_ENGINE_IP"
  guest_run 90 "bg pa $client; bg pb $client; fg pa 60; a=\$?; fg pb 60; b=\$?; [ \$a = 0 ] && [ \$b = 0 ]"
  local grc=$?
  printf '%s' "$GUEST_OUT" > "$dir/guest.log"
  ((grc == 0)) || { ok=0; CASE_NOTE="guest clients: exit $grc: $(grep -m1 -iE 'error|fail|unable' "$dir/guest.log")"; }
  local tables
  tables=$(grep -c "^ $size  *$iters " "$dir/guest.log")
  [[ $tables == 2 ]] || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest: $tables result rows, not 2"; }
  local i
  for i in $(seq 50); do
    (( $(tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" | grep -c "^ $size  *$iters ") >= 2 )) && break
    sleep 0.1
  done
  tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" > "$dir/appliance.log"
  (( $(grep -c "^ $size  *$iters " "$dir/appliance.log") == 2 )) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }appliance did not print two tables"; }
  grep -q "session failed\|refused" "$dir/appliance.log" && { ok=0; CASE_NOTE+="${CASE_NOTE:+; }appliance: $(grep -m1 'session failed\|refused' "$dir/appliance.log")"; }
  CASE_FIGURE="$(grep "^ $size  *$iters " "$dir/guest.log" | awk '{print $4}' | paste -sd+ -)MB/s"
  capture_stop
  capture_verdict "$dir" "$NET_GUEST_IP" "$mtu" "$flags" peer || ok=0
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# cm_guest_server VERB SIZE ITERS FLAGS: the guest's server command line (v6: bound to CM_PEER,
# the way rping's always is).
cm_guest_server() {
  local bind=""
  has_flag "$4" v6 && bind="-b $CM_PEER"
  case $1 in
    rping) echo "rping -s -V -a $CM_PEER -C $3 -S $2" ;;
    ucmatose) echo "ucmatose $bind -C $3 -S $2" ;;
    udaddy) echo "udaddy $bind -C $3 -S $2" ;;
    rdma_client) echo "rdma_server" ;;
  esac
}

run_cm_to_rxe_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  case_begin "$name"
  local dir=$CASE_DIR ok=1
  cm_addresses "$flags"
  appliance_none
  capture_start "$dir/capture.pcap"
  # The server listens on rdma_cm, not on a TCP port: it is given a second to bind.
  guest_run 20 "bg server $(cm_guest_server "$verb" "$size" "$iters" "$flags"); sleep 1; [ ! -f /tmp/server.rc ]" > /dev/null ||
    { ok=0; CASE_NOTE="guest $verb server did not start"; }
  local gen_args=("$verb" -a "$CM_PEER" -C "$iters" -S "$size")
  [[ $verb == rping ]] && gen_args+=(-V)
  [[ $verb == rdma_client ]] && gen_args=("$verb" -s "$CM_PEER")  # no -C/-S: 16 bytes each way
  if ((ok)); then
    gen_run "$dir/roce-gen.log" "${gen_args[@]}" || { ok=0; CASE_NOTE="roce-gen: $(grep -m1 'roce-gen' "$dir/roce-gen.log" || tail -1 "$dir/roce-gen.log")"; }
  fi
  if ((ok)); then guest_run 40 "fg server 30"; else guest_run 20 "fg server 5"; fi
  local grc=$?
  printf '%s' "$GUEST_OUT" > "$dir/guest.log"
  ((grc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest $verb server exit $grc"; }
  case $verb in
    rping) CASE_FIGURE="$(grep -o '^rping: [0-9]* rounds' "$dir/roce-gen.log" | cut -d' ' -f2-)"
           grep -q "every one verified" "$dir/roce-gen.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }roce-gen rping did not verify its rounds"; } ;;
    ucmatose|udaddy)
      CASE_FIGURE="$(grep -o "^$verb: [0-9]* messages received" "$dir/roce-gen.log" | cut -d' ' -f2) msgs"
      grep -q "return status 0" "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest $verb did not report success"; } ;;
    rdma_client)
      CASE_FIGURE="$(grep -o "^rdma_client: [0-9]* messages received" "$dir/roce-gen.log" | cut -d' ' -f2) msgs"
      grep -q "^rdma_client: end 0" "$dir/roce-gen.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }roce-gen rdma_client did not end 0"; }
      cm_guest_succeeded rdma_server "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest rdma_server did not end 0"; } ;;
  esac
  grep -qiE "mismatch|error" "$dir/guest.log" && { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest: $(grep -m1 -iE 'mismatch|error' "$dir/guest.log")"; }
  capture_stop
  capture_verdict "$dir" "$CM_PEER" "$mtu" "$flags" ours "$CM_OURS" || ok=0
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

cases_cm_ci() {
  cat <<'LIST'
cm/rping/rxe>app/s64                    cm-from-rxe rping    4096 0 64    10 -
cm/ucmatose/rxe>app                     cm-from-rxe ucmatose 4096 0 100   10 -
cm/rping/gen>rxe/s64                    cm-to-rxe   rping    4096 0 64    10 -
cm/rdma_client/rxe>app                  cm-from-rxe rdma_client 4096 0 16 1 -
LIST
  cases_perftest_cm_ci
}

cases_cm_full() {
  cases_cm_ci
  cat <<'LIST'
cm/rping/rxe>app/s60000                 cm-from-rxe rping    4096 0 60000 4  -
cm/ucmatose/gen>rxe                     cm-to-rxe   ucmatose 4096 0 100   10 -
cm/udaddy/rxe>app                       cm-from-rxe udaddy   4096 0 100   10 -
cm/udaddy/gen>rxe                       cm-to-rxe   udaddy   4096 0 100   10 -
cm/rdma_client/gen>rxe                  cm-to-rxe   rdma_client 4096 0 16 1 -
cm/rping/rxe>app/v6/s64                 cm-from-rxe rping    4096 0 64    10 v6
cm/ucmatose/rxe>app/v6                  cm-from-rxe ucmatose 4096 0 100   10 v6
cm/udaddy/rxe>app/v6                    cm-from-rxe udaddy   4096 0 100   10 v6
cm/rping/gen>rxe/v6/s64                 cm-to-rxe   rping    4096 0 64    10 v6
cm/ucmatose/gen>rxe/v6                  cm-to-rxe   ucmatose 4096 0 100   10 v6
cm/udaddy/gen>rxe/v6                    cm-to-rxe   udaddy   4096 0 100   10 v6
LIST
  cases_perftest_cm_full
}

# perftest -R (flag R): the generic perftest cases (lib/cases.sh) with the exchange and every QP
# connected through rdma_cm: the guest's ib_*_bw/_lat -R against roce-appliance --rdma-cm
# perftest, and roce-gen -R against the guest's perftest -R server. Each passes when the real
# program exits 0 with its result table (and roce-gen's, for to-rxe).
cases_perftest_cm_ci() {
  cat <<'LIST'
cm/perftest/write_bw/rxe>app            from-rxe write  4096 0 65536 500 R
cm/perftest/read_bw/gen>rxe             to-rxe   read   4096 0 65536 200 R
LIST
}

# (--full's list: cases_cm_full has the CI ones already.)
cases_perftest_cm_full() {
  cat <<'LIST'
cm/perftest/write_bw/q2/rxe>app         from-rxe write  4096 0 65536 500 R,q2
cm/perftest/read_bw/rxe>app             from-rxe read   4096 0 65536 200 R
cm/perftest/send_bw/rxe>app             from-rxe send   4096 0 4096  500 R
cm/perftest/atomic_bw/rxe>app           from-rxe atomic 4096 0 8     500 R
cm/perftest/write_bw/all/rxe>app        from-rxe write  4096 0 0     20  R,all
cm/perftest/write_lat/rxe>app           from-rxe write  4096 0 64    200 R,lat
cm/perftest/read_lat/rxe>app            from-rxe read   4096 0 64    200 R,lat
cm/perftest/send_lat/rxe>app            from-rxe send   4096 0 64    200 R,lat
cm/perftest/atomic_lat/rxe>app          from-rxe atomic 4096 0 8     200 R,lat
cm/perftest/write_bw/gen>rxe            to-rxe   write  4096 0 65536 500 R
cm/perftest/write_bw/q2/gen>rxe         to-rxe   write  4096 0 65536 500 R,q2
cm/perftest/send_bw/gen>rxe             to-rxe   send   4096 0 4096  500 R
cm/perftest/atomic_bw/gen>rxe           to-rxe   atomic 4096 0 8     500 R
cm/perftest/write_lat/gen>rxe           to-rxe   write  4096 0 64    200 R,lat
cm/perftest/read_lat/gen>rxe            to-rxe   read   4096 0 64    200 R,lat
cm/perftest/send_lat/gen>rxe            to-rxe   send   4096 0 64    200 R,lat
cm/perftest/atomic_lat/gen>rxe          to-rxe   atomic 4096 0 8     200 R,lat
cm/perftest/send_bw/ud/rxe>app          from-rxe send   1024 0 1024  500 R,ud
cm/perftest/send_bw/ud/q2/rxe>app       from-rxe send   1024 0 1024  500 R,ud,q2
cm/perftest/send_lat/ud/rxe>app         from-rxe send   1024 0 64    200 R,lat,ud
cm/perftest/send_bw/ud/gen>rxe          to-rxe   send   1024 0 1024  500 R,ud
cm/perftest/send_lat/ud/gen>rxe         to-rxe   send   1024 0 64    200 R,lat,ud
cm/perftest/send_lat/srq/rxe>app        from-rxe send   4096 0 64    200 R,lat,srq
cm/perftest/send_lat/srq/gen>rxe        to-rxe   send   4096 0 64    200 R,lat,srq
cm/perftest/send_bw/srq/q2/gen>rxe      to-rxe   send   4096 0 4096  500 R,q2,srq
cm/perftest/write_bw/two/rxe>app        cm-from-rxe perftest2 4096 0 65536 2000 -
cm/perftest/write_bw/bidir/rxe>app      from-rxe write  4096 0 65536 200 R,b
cm/perftest/send_bw/ud/bidir/rxe>app    from-rxe send   1024 0 1024  200 R,ud,b
cm/perftest/write_bw/bidir-D2/rxe>app   from-rxe write  4096 0 65536 16  R,b,D2
cm/perftest/write_bw/D2/rxe>app         from-rxe write  4096 0 65536 16  R,D2
cm/perftest/write_bw/inf-D1/rxe>app     from-rxe write  4096 0 65536 16  R,inf,D1
cm/perftest/write_bw/bidir/gen>rxe      to-rxe   write  4096 0 65536 200 R,b
cm/perftest/send_bw/ud/bidir/gen>rxe    to-rxe   send   1024 0 1024  200 R,ud,b
cm/perftest/read_bw/D2/gen>rxe          to-rxe   read   4096 0 65536 5   R,D2
cm/perftest/write_bw/inf-D1/gen>rxe     to-rxe   write  4096 0 65536 5   R,inf,D1
LIST
  # No -R case over IPv6: Debian 12's perftest (4.5-0.17) resolves its -R addresses as AF_INET
  # only, --ipv6 or not: its client stops at "Address family for hostname not supported for
  # fd77::10:18515", and its server binds an AF_INET wildcard, which the kernel's rdma_cm keeps to
  # IPv4 (an IPv6 REQ is rejected, reason 28). Ours both ways: perftest_cm_tests (PerftestCmV6*).
}
