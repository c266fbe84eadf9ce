"""The golden replay captures (pcap/replay) read by an independent implementation.

The goldens are written by protocol/builder, the same code the engine sends with, so a builder
bug would be in both and the golden tests would still pass. Here scapy (Debian's scapy 2.5.0,
run under /usr/bin/python3) reads every frame instead: every IPv4 RoCEv2 frame must carry the
ICRC scapy computes (its BTH.compute_icrc), except the frames a scenario says are bad
(`drop.icrc_bad = N` in its [expect] section, for NAME.in.pcap), and every ACKNOWLEDGE must
decode to an AETH (scapy has no AtomicAckETH layer). IPv6 frames are counted but not checked: scapy 2.5.0 has no IPv6 ICRC.

Usage: scapy_goldens_check.py PCAP_REPLAY_DIR
Exit status: 0 all agree, 1 a difference (printed), 2 bad usage, 77 scapy not importable.
"""
import logging
import pathlib
import re
import sys

try:
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.compat import raw
    from scapy.contrib.roce import AETH, BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap
except ImportError as e:  # depends on the interpreter
    print(f"SKIP: scapy not importable by {sys.executable}: {e}")
    sys.exit(77)

ROCE_PORT = 4791
ACKNOWLEDGE = 0x11  # scapy 2.5.0 binds AETH to this opcode only (not to ATOMIC_ACKNOWLEDGE)


def bad_icrcs_expected(scenario: pathlib.Path) -> int:
    m = re.search(r"^drop\.icrc_bad\s*=\s*(\d+)", scenario.read_text(), re.MULTILINE)
    return int(m.group(1)) if m else 0


def check(path: pathlib.Path, bad_expected: int) -> list:
    problems = []
    v4 = v6 = bad = 0
    for i, pkt in enumerate(rdpcap(str(path)), start=1):
        if UDP not in pkt or pkt[UDP].dport != ROCE_PORT:
            continue
        if IPv6 in pkt:
            v6 += 1
            continue
        if IP not in pkt or BTH not in pkt:
            problems.append(f"{path.name} frame {i}: UDP port {ROCE_PORT} but scapy finds no IPv4 BTH")
            continue
        v4 += 1
        bth = pkt[BTH]
        wire = bth.icrc
        again = pkt.copy()
        again[BTH].icrc = None
        computed = Ether(raw(again))[BTH].icrc
        if computed != wire:
            bad += 1
        if bth.opcode == ACKNOWLEDGE and AETH not in pkt:
            problems.append(f"{path.name} frame {i}: ACKNOWLEDGE without an AETH in scapy's decoding")
    if bad != bad_expected:
        problems.append(f"{path.name}: {bad} frames whose ICRC differs from scapy's, expected {bad_expected}")
    print(f"{path.name}: {v4} IPv4 RoCEv2 frames checked ({bad} with a bad ICRC, as expected: "
          f"{bad == bad_expected}), {v6} IPv6 frames not checked")
    if v4 == 0:
        problems.append(f"{path.name}: no IPv4 RoCEv2 frame to check")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    pcaps = sorted(root.glob("*.pcap"))
    if not pcaps:
        print(f"no pcap in {root}", file=sys.stderr)
        return 2
    problems = []
    for p in pcaps:
        name = p.name.split(".")[0]
        bad_expected = bad_icrcs_expected(root / f"{name}.scenario") if p.name.endswith(".in.pcap") else 0
        problems += check(p, bad_expected)
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
