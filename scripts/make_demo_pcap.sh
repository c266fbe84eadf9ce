#!/usr/bin/env bash
# Regenerates pcap/demo_write_read.pcap with roce-make-demo-pcap (apps/demo_pcap), the only
# way that fixture is made: never edit it by hand. Usage: scripts/make_demo_pcap.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[[ -f "$build/build.ninja" ]] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" apps/demo_pcap/roce-make-demo-pcap >/dev/null
"$build/apps/demo_pcap/roce-make-demo-pcap" "$root/pcap/demo_write_read.pcap"
echo "wrote $root/pcap/demo_write_read.pcap"
