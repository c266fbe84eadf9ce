#!/usr/bin/env bash
# Extracts the TCP port 18515 exchanges (perftest and ibv_rc_pingpong set-up) from the real
# captures in ../shared/captures into small text fixtures for tests/apps/oob_replay_test.cpp,
# so the tests do not read the captures at run time. One line per TCP segment with payload, in
# capture order: "C <hex>" from the client, "S <hex>" from the server (port 18515).
# Usage: scripts/extract_oob_streams.sh [CAPTURES_DIR]   (needs tshark)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
captures=${1:-${ROCE_CAPTURES_DIR:-$root/../shared/captures}}
out=$root/tests/apps/fixtures/oob
mkdir -p "$out"
for pair in connectx_ib_send_bw.pcap:connectx_ib_send_bw rxe/ib_write_bw.pcap:rxe_ib_write_bw \
            rxe/ib_read_bw.pcap:rxe_ib_read_bw rxe/ib_send_bw.pcap:rxe_ib_send_bw rxe/rc_pingpong.pcap:rxe_rc_pingpong; do
  pcap=$captures/${pair%%:*}
  [[ -r $pcap ]] || { echo "cannot read $pcap (set ROCE_CAPTURES_DIR or pass the folder)" >&2; exit 1; }
  name=${pair##*:}
  {
    echo "# TCP 18515 segments of ${pair%%:*} (scripts/extract_oob_streams.sh); C = client, S = server"
    tshark -r "$pcap" 2>/dev/null -Y 'tcp.port == 18515 && tcp.len > 0' -T fields -e tcp.srcport -e tcp.payload |
      awk '{ gsub(":", "", $2); print ($1 == 18515 ? "S " : "C ") $2 }'
  } > "$out/$name.txt"
  echo "$out/$name.txt: $(grep -c '^[CS] ' "$out/$name.txt") segments"
done
