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
  ip netns exec "$NETNS" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 1 -m 768 \
    -display none -monitor none -no-reboot -nodefaults \
    -serial "file:$GUEST_DIR/console.log" -chardev "pipe,id=agent,path=$GUEST_DIR/agent" -serial chardev:agent \
    -kernel "$image/vmlinuz" -initrd "$image/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 roce_ip=$NET_GUEST_IP roce_mtu=$mtu" \
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
