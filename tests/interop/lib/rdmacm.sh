# Sourced by run.sh: rdma_cm cases (issue 23). Nothing connects over TCP here: librdmacm's
# programs reach roce-appliance's --rdma-cm listeners through IB CM MADs on QP1 (and back).
#
#   cm-from-rxe   the guest's librdmacm client against roce-appliance --rdma-cm all:
#                 rping -c -V (the server READs the client's buffer and WRITEs it back, every
#                 round checked by rping itself), ucmatose -s (messages both ways)
#
# A case passes when the real program exits 0 and says what success says; SIZE is rping's -S /
# ucmatose's -S, ITERS their -C.

is_cm_kind() { [[ $1 == cm-* ]]; }

# cm_guest_cmd VERB SIZE ITERS: the guest's client command line.
cm_guest_cmd() {
  case $1 in
    rping) echo "rping -c -a $NET_ENGINE_IP -V -C $3 -S $2" ;;
    ucmatose) echo "ucmatose -s $NET_ENGINE_IP -C $3 -S $2" ;;
  esac
}

# cm_guest_succeeded VERB LOG: what the program prints when it worked (its exit status is checked
# as well): rping -V exits non-zero on a mismatch, but says "data mismatch" too; cmatose ends with
# "return status 0".
cm_guest_succeeded() {
  case $1 in
    rping) ! grep -qiE "mismatch|error|fail" "$2" ;;
    ucmatose) grep -q "return status 0" "$2" && ! grep -qiE "failed|error" "$2" ;;
  esac
}

run_cm_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  local dir=$OUT_DIR/cases/${name//[\/>]/_}
  mkdir -p "$dir"
  CASE_DIR=$dir CASE_VERDICT=FAIL CASE_FIGURE="-" CASE_NOTE="" CASE_CAPTURE="-"
  local ok=1 t0=$SECONDS
  local app_args="--rdma-cm all --cm-messages $iters --cm-message-size $size"
  if [[ ${APPLIANCE_KEY:-} != "$mtu $app_args" ]]; then
    appliance_stop
    APPLIANCE_N=$((${APPLIANCE_N:-0} + 1))
    # shellcheck disable=SC2086  # options are words
    appliance_start "$OUT_DIR/appliance_${APPLIANCE_N}_m$mtu.log" "$mtu" $app_args ||
      { CASE_NOTE="roce-appliance did not start"; APPLIANCE_KEY=""; return; }
    APPLIANCE_KEY="$mtu $app_args"
  fi
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
  local i
  for i in $(seq 30); do
    tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" | grep -q "$verb client .* \(done\|failed\)" && break
    sleep 0.1
  done
  tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" > "$dir/appliance.log"
  if grep -q "$verb client .* failed" "$dir/appliance.log"; then
    ok=0 CASE_NOTE+="${CASE_NOTE:+; }appliance: $(grep -m1 "failed" "$dir/appliance.log")"
  fi
  case $verb in
    rping) CASE_FIGURE="$(grep -o '[0-9]* rounds' "$dir/appliance.log" | head -1)" ;;
    ucmatose) CASE_FIGURE="$(grep -o '[0-9]* messages sent' "$dir/appliance.log" | head -1 | cut -d' ' -f1) msgs" ;;
  esac
  capture_stop
  capture_verdict "$dir" "$NET_GUEST_IP" "$mtu" "$flags" peer || ok=0
  CASE_SECONDS=$((SECONDS - t0))
  ((ok)) && CASE_VERDICT=pass
}

cases_cm_ci() {
  cat <<'LIST'
cm/rping/rxe>app/s64                    cm-from-rxe rping    1024 0 64    10 -
LIST
}

cases_cm_full() {
  cases_cm_ci
  cat <<'LIST'
cm/rping/rxe>app/s65536                 cm-from-rxe rping    1024 0 65536 4  -
cm/ucmatose/rxe>app                     cm-from-rxe ucmatose 1024 0 100   10 -
LIST
}
