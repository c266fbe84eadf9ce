# Sourced by run.sh: one qemu guest running Debian's rdma_rxe, and its command channel.
# The guest's /init (guest/init) reads "ID COMMAND" lines on its second serial port and answers
# with the output and "@@ID STATUS"; here that port is a pair of FIFOs (qemu's pipe chardev).
#   guest_boot DIR IMAGE_DIR MTU   boot and wait for the agent (sets GUEST_GID_INDEX)
#   guest_run SECONDS CMD          run CMD in the guest, its output in GUEST_OUT, returns its status
#   guest_stop

guest_boot() {
  GUEST_DIR=$1
  local image=$2 mtu=$3
  mkdir -p "$GUEST_DIR"
  rm -f "$GUEST_DIR"/agent.in "$GUEST_DIR"/agent.out
  mkfifo "$GUEST_DIR/agent.in" "$GUEST_DIR/agent.out"
  # no_timer_check: under TCG on a loaded host the kernel's early check of the IO-APIC timer can
  # see too few ticks and panic ("IO-APIC + timer doesn't work!"; seen on svc8's run at load 9,
  # the run then waited 120 s for an agent that never came).
  ip netns exec "$NETNS" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 1 -m 768 \
    -display none -monitor none -no-reboot -nodefaults \
    -serial "file:$GUEST_DIR/console.log" -chardev "pipe,id=agent,path=$GUEST_DIR/agent" -serial chardev:agent \
    -kernel "$image/vmlinuz" -initrd "$image/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 no_timer_check roce_ip=$NET_GUEST_IP roce_mtu=$mtu" \
    -netdev tap,id=n0,ifname=gtap0,script=no,downscript=no \
    -device virtio-net-pci,netdev=n0,mac=$NET_GUEST_MAC,host_mtu=$mtu \
    > "$GUEST_DIR/qemu.log" 2>&1 &
  GUEST_PID=$!
  exec {GUEST_TX}>"$GUEST_DIR/agent.in" {GUEST_RX}<"$GUEST_DIR/agent.out"
  GUEST_SEQ=0
  local line
  while IFS= read -r -t 120 -u "$GUEST_RX" line; do
    line=${line%$'\r'}
    if [[ $line == "@@READY "* ]]; then
      GUEST_GID_INDEX=${line#@@READY }
      [[ -n $GUEST_GID_INDEX ]] && return 0
      echo "guest: rxe0 has no RoCEv2 IPv4 GID" >&2
      return 1
    fi
  done
  echo "guest: no agent after 120 s (console: $GUEST_DIR/console.log)" >&2
  return 1
}

guest_run() {
  local timeout=$1 line rc
  shift
  GUEST_SEQ=$((GUEST_SEQ + 1))
  GUEST_OUT=""
  printf '%s %s\n' "$GUEST_SEQ" "$*" >&"$GUEST_TX"
  while IFS= read -r -t "$timeout" -u "$GUEST_RX" line; do
    line=${line%$'\r'}
    if [[ $line == "@@$GUEST_SEQ "* ]]; then
      rc=${line#@@$GUEST_SEQ }
      return "$rc"
    fi
    GUEST_OUT+="$line"$'\n'
  done
  GUEST_OUT+="(no answer from the guest within ${timeout}s)"$'\n'
  return 124
}

guest_stop() {
  [[ -n ${GUEST_PID:-} ]] || return 0
  kill "$GUEST_PID" 2>/dev/null
  wait "$GUEST_PID" 2>/dev/null
  GUEST_PID=""
  [[ -n ${GUEST_TX:-} ]] && exec {GUEST_TX}>&- {GUEST_RX}<&-
  GUEST_TX=""
  return 0
}

# The command channel itself, as a case ("agent/..." lines, kind guest-agent): a command line that
# arrives in two parts while a background program of an earlier command exits in between must
# still run whole. busybox ash's read starts over when a signal interrupts it and drops what it
# had read; the agent therefore must not be the shell that such a program's exit signals (PID 1,
# which inherits it). Without that, a line sent as a guest server ends loses its start and the
# case waits for an answer that never comes (read/verbs>rxe/m1024/q4/s4096, CI 2026-12-05).
is_agent_kind() { [[ $1 == guest-agent ]]; }
cases_agent() { echo "agent/split-line guest-agent split-line 0 0 0 0"; }

run_agent_case() {
  local name line got log seq
  read -r name _ <<< "$1"
  case_begin "$name"
  log=$CASE_DIR/agent.log
  guest_run 20 "bg orphan sleep 1" > "$log" 2>&1 || { CASE_NOTE="bg: $GUEST_OUT"; return; }
  GUEST_SEQ=$((GUEST_SEQ + 1))
  seq=$GUEST_SEQ
  printf '%s echo first-half-' "$seq" >&"$GUEST_TX"
  sleep 2.5   # the orphan exits while the agent holds half a line
  printf 'second-half\n' >&"$GUEST_TX"
  got=""
  while IFS= read -r -t 15 -u "$GUEST_RX" line; do
    line=${line%$'\r'}
    [[ $line == "@@$seq "* ]] && { got+="[$line]"; break; }
    got+="$line"
  done
  echo "split line answered: $got" >> "$log"
  guest_run 20 "fg orphan 10" >> "$log" 2>&1
  CASE_SECONDS=$((SECONDS - CASE_T0))
  if [[ $got == "first-half-second-half[@@$seq 0]" ]]; then
    CASE_VERDICT=pass CASE_FIGURE="line whole"
  else
    CASE_NOTE="the agent lost part of a line: '${got:0:60}'"
  fi
}
