#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on its embedded default: roce-demo,
# which runs roce-gen against roce-appliance over virtual DPDK ports (net_ring, no NIC, no
# hugepages) through a link emulator with a little loss and an ECN-marking bottleneck. Then it
# draws the DCQCN pictures (flows sharing the bottleneck, and the live run's sender rates) and
# summarises the captured first packets with roce-inspect.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ensure_packages
configure_and_build

out="${DEMO_OUT:-$ROOT/demo-out}"
log "roce-demo (write bandwidth through an emulated link; output in ${out#"$ROOT"/})"
"$BUILD_DIR/apps/demo/roce-demo" --out "$out" "$@"

echo
log "DCQCN pictures -> ${out#"$ROOT"/}/dcqcn_share.svg (flows sharing the bottleneck), dcqcn_rates.svg (this run)"
python3 "$ROOT/scripts/plot_rates.py" --rt "$out/dcqcn_share.csv" "$out/dcqcn_share.svg"
python3 "$ROOT/scripts/plot_rates.py" --rt "$out/dcqcn_rates.csv" "$out/dcqcn_rates.svg"

echo
log "roce-inspect ${out#"$ROOT"/}/first_packets.pcap --summary"
"$BUILD_DIR/apps/inspect/roce-inspect" "$out/first_packets.pcap" --summary
