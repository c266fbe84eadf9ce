# Sourced by run.sh: our side of a case, roce-gen or roce-appliance, on the veth end veng0
# through DPDK's net_af_packet. A ring frame of 4608 bytes holds a 4096-byte-MTU packet (4170
# bytes) and fits the dataplane's 4608-byte mbufs. The block size must be a multiple of the frame
# size: the PMD walks its ring as frames back to back, the kernel lays them out block by block,
# and with 4640-byte frames in 8192-byte blocks the two disagree from the second frame on (the
# port then receives one frame and sends one, and stalls).

ENGINE_VDEV="net_af_packet0,iface=veng0,blocksz=36864,framesz=4608,framecnt=512"

# EAL arguments: no hugepages or PCI, a per-run file prefix; the worker on lcore 1, the
# control thread on lcore 0 (the qemu guest shares the machine).
engine_eal() { echo "--no-huge --no-pci -m 512 --file-prefix=interop_$1_$$ --log-level=error -l 0-1"; }

# ENGINE_ROCE_IP: our RoCE address (GID) when not NET_ENGINE_IP (the IPv6 cases).
# gen_run LOG ARGS...: roce-gen client against the guest; returns roce-gen's status. With
# GEN_STOP_ROWS=N it gets SIGINT once its log shows N result rows (a --run_infinitely client),
# counted from its output rather than a fixed time: on a busy machine the EAL start and the
# exchange alone can take most of a fixed budget (CI saw one row in 6 s). 60 s at most.
gen_run() {
  local log=$1
  shift
  # shellcheck disable=SC2046  # EAL arguments are words
  if [[ -z ${GEN_STOP_ROWS:-} ]]; then
    timeout 120 ip netns exec "$NETNS" "$BUILD_DIR/apps/gen/roce-gen" $(engine_eal gen) -- "$@" \
      --vdev "$ENGINE_VDEV" --dev net_af_packet0 --ip "${ENGINE_ROCE_IP:-$NET_ENGINE_IP}" > "$log" 2>&1
    return
  fi
  # The log exists before the watch below reads it: the background job's redirect may open it later.
  : > "$log"
  # shellcheck disable=SC2046
  ip netns exec "$NETNS" "$BUILD_DIR/apps/gen/roce-gen" $(engine_eal gen) -- "$@" \
    --vdev "$ENGINE_VDEV" --dev net_af_packet0 --ip "${ENGINE_ROCE_IP:-$NET_ENGINE_IP}" > "$log" 2>&1 &
  local pid=$! i rows
  for i in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || break
    rows=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5' "$log" | wc -l)
    ((rows >= GEN_STOP_ROWS)) && break
    sleep 0.1
  done
  kill -INT "$pid" 2>/dev/null
  for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
}

# appliance_start LOG MTU [OPTIONS...]: roce-appliance serving the guest's clients until
# appliance_stop.
appliance_start() {
  APPLIANCE_LOG=$1
  local mtu=$2
  shift 2
  # shellcheck disable=SC2046
  ip netns exec "$NETNS" "$BUILD_DIR/apps/appliance/roce-appliance" $(engine_eal app) -- \
    --vdev "$ENGINE_VDEV" --dev net_af_packet0 --ip "${ENGINE_ROCE_IP:-$NET_ENGINE_IP}" --mtu "$mtu" --status-interval 0 \
    --report "$APPLIANCE_LOG.report.json" "$@" > "$APPLIANCE_LOG" 2>&1 &
  APPLIANCE_PID=$!
  local i
  for i in $(seq 100); do
    grep -q "serving" "$APPLIANCE_LOG" 2>/dev/null && return 0
    kill -0 "$APPLIANCE_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "roce-appliance did not start: $(tail -3 "$APPLIANCE_LOG")" >&2
  return 1
}

# appliance_keep MTU [OPTIONS...]: a roce-appliance with these options (and our RoCE address,
# ENGINE_ROCE_IP) for the next case; one
# appliance serves consecutive cases that need the same options, so it restarts only when they
# change. Returns 1 with CASE_NOTE set when it does not start.
appliance_keep() {
  local key="${ENGINE_ROCE_IP:-$NET_ENGINE_IP} $*"
  [[ ${APPLIANCE_KEY:-} == "$key" && -n ${APPLIANCE_PID:-} ]] && return 0
  appliance_stop
  APPLIANCE_N=$((${APPLIANCE_N:-0} + 1))
  appliance_start "$OUT_DIR/appliance_${APPLIANCE_N}_m$1.log" "$@" ||
    { CASE_NOTE="roce-appliance did not start"; APPLIANCE_KEY=""; return 1; }
  APPLIANCE_KEY=$key
}

# appliance_none: no roce-appliance for the next case (the guest's peer is ours in another form).
appliance_none() {
  appliance_stop
  APPLIANCE_KEY=""
}

appliance_stop() {
  [[ -n ${APPLIANCE_PID:-} ]] || return 0
  kill -INT "$APPLIANCE_PID" 2>/dev/null
  local i
  for i in $(seq 50); do kill -0 "$APPLIANCE_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$APPLIANCE_PID" 2>/dev/null
  wait "$APPLIANCE_PID" 2>/dev/null
  APPLIANCE_PID=""
}
