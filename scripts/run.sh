#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job. Until the dataplane apps exist the
# main job is roce-inspect on the project's demo capture (pcap/demo_write_read.pcap): its
# summary, then its frame table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ensure_packages
configure_and_build

inspect="$BUILD_DIR/apps/inspect/roce-inspect"
demo="$ROOT/pcap/demo_write_read.pcap"
log "roce-inspect ${demo#"$ROOT"/} --summary"
"$inspect" "$demo" --summary
echo
log "roce-inspect ${demo#"$ROOT"/}"
"$inspect" "$demo"
