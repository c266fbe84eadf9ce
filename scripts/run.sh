#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on its embedded default: roce-demo,
# which runs roce-gen against roce-appliance over virtual DPDK ports (net_ring, no NIC, no
# hugepages) through a link emulator with a little loss and an ECN-marking bottleneck. Then it
# draws the DCQCN rate trace and summarises the captured first packets with roce-inspect.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ensure_packages
configure_and_build

out="${DEMO_OUT:-$ROOT/demo-out}"
log "roce-demo (write bandwidth through an emulated link; output in ${out#"$ROOT"/})"
"$BUILD_DIR/apps/demo/roce-demo" --out "$out" "$@"

echo
log "DCQCN rate trace -> ${out#"$ROOT"/}/dcqcn_rates.svg"
python3 "$ROOT/scripts/plot_rates.py" --rt --title "roce-demo: sender rate (DCQCN)" \
  "$out/dcqcn_rates.csv" "$out/dcqcn_rates.svg"

echo
log "roce-inspect ${out#"$ROOT"/}/first_packets.pcap --summary"
"$BUILD_DIR/apps/inspect/roce-inspect" "$out/first_packets.pcap" --summary
