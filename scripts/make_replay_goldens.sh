#!/usr/bin/env bash
# Regenerates pcap/replay/ (the golden replay scenarios) with roce-make-replay-goldens
# (apps/replay_goldens), the only way those files are made: never edit them by hand.
# Usage: scripts/make_replay_goldens.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[[ -f "$build/build.ninja" ]] || meson setup "$build" "$root" >/dev/null
ninja -C "$build" apps/replay_goldens/roce-make-replay-goldens >/dev/null
rm -f "$root"/pcap/replay/*.scenario "$root"/pcap/replay/*.pcap
"$build/apps/replay_goldens/roce-make-replay-goldens" "$root/pcap/replay"
echo "wrote $root/pcap/replay"
