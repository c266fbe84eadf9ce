#!/usr/bin/python3
"""Independent RoCEv2 packets for cross-checking our parser and ICRC.

Builds seeded random RoCEv2 frames with scapy (Debian's scapy 2.5.0, so run it under
/usr/bin/python3) for every opcode the wire spec lists (RC, UC, UD, CNP, FLUSH, ATOMIC_WRITE),
over IPv4 and IPv6, with random ECN/DSCP, 0-2 VLAN tags and payload sizes giving every PadCnt.
Writes them to a pcap and a CSV sidecar holding the fields each frame was built with.

Where the ICRC comes from:
  * IPv4: scapy's own BTH.compute_icrc (scapy/contrib/roce.py), which BTH.post_build calls
    when the icrc field is left unset; the sidecar records the four bytes scapy wrote.
  * IPv6: scapy 2.5.0's compute_icrc returns 0 for IPv6, so this script computes it itself
    from rocev2-wire.md section 6 with zlib.crc32 (spec_icrc below). The same function is
    checked against scapy on every IPv4 frame, and the run fails if they ever differ.

Only scapy's BTH, AETH (for ACKNOWLEDGE) and CNP padding layers exist in 2.5.0; every other
extension header is packed here with struct, from the spec's layouts, as raw bytes after BTH.

Exit status 77 means scapy is not importable (the caller skips).
"""
import argparse
import csv
import logging
import random
import struct
import sys
import zlib

try:
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.compat import raw
    from scapy.contrib.roce import AETH, BTH, CNPPadding
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.packet import Raw
    from scapy.utils import RawPcapWriter
    import scapy
except ImportError as e:  # pragma: no cover - depends on the interpreter
    print(f"scapy not importable by {sys.executable}: {e}", file=sys.stderr)
    sys.exit(77)

ROCE_PORT = 4791

# Payload rules (rocev2-wire.md section 3 and 5).
NONE, EXACT_PMTU, ONE_TO_PMTU, ZERO_TO_PMTU, EXACTLY_8 = "none", "pmtu", "1..pmtu", "0..pmtu", "8"

# Operations shared by RC and UC (UC has 0x00-0x0B only), in the spec's table.
SEND_WRITE_OPS = {
    0x00: ([], EXACT_PMTU),
    0x01: ([], EXACT_PMTU),
    0x02: ([], ONE_TO_PMTU),
    0x03: (["ImmDt"], ONE_TO_PMTU),
    0x04: ([], ZERO_TO_PMTU),
    0x05: (["ImmDt"], ZERO_TO_PMTU),
    0x06: (["RETH"], EXACT_PMTU),
    0x07: ([], EXACT_PMTU),
    0x08: ([], ONE_TO_PMTU),
    0x09: (["ImmDt"], ONE_TO_PMTU),
    0x0A: (["RETH"], ZERO_TO_PMTU),
    0x0B: (["RETH", "ImmDt"], ZERO_TO_PMTU),
}
RC_ONLY_OPS = {
    0x0C: (["RETH"], NONE),                   # RDMA READ request: length in RETH
    0x0D: (["AETH"], EXACT_PMTU),             # READ response first
    0x0E: ([], EXACT_PMTU),                   # READ response middle
    0x0F: (["AETH"], ONE_TO_PMTU),            # READ response last
    0x10: (["AETH"], ZERO_TO_PMTU),           # READ response only
    0x11: (["AETH"], NONE),                   # ACKNOWLEDGE
    0x12: (["AETH", "AtomicAckETH"], NONE),   # ATOMIC ACKNOWLEDGE
    0x13: (["AtomicETH"], NONE),              # COMPARE_SWAP
    0x14: (["AtomicETH"], NONE),              # FETCH_ADD
    0x16: (["IETH"], ONE_TO_PMTU),            # SEND_LAST_WITH_INVALIDATE
    0x17: (["IETH"], ZERO_TO_PMTU),           # SEND_ONLY_WITH_INVALIDATE
    0x1C: (["FETH", "RETH"], NONE),           # FLUSH (IBTA 1.5)
    0x1D: (["RETH"], EXACTLY_8),              # ATOMIC_WRITE (IBTA 1.5)
}
OPCODES = {}
OPCODES.update(SEND_WRITE_OPS)
OPCODES.update(RC_ONLY_OPS)
OPCODES.update({0x20 + op: v for op, v in SEND_WRITE_OPS.items()})
OPCODES.update({0x64: (["DETH"], ZERO_TO_PMTU), 0x65: (["DETH", "ImmDt"], ZERO_TO_PMTU)})
OPCODES.update({0x81: (["CNP"], NONE)})

EXT_COLUMNS = [
    "reth_va", "reth_rkey", "reth_dmalen", "aeth_syndrome", "aeth_msn", "deth_qkey", "deth_srcqp",
    "immdt", "ieth_rkey", "atomic_va", "atomic_rkey", "atomic_swap_add", "atomic_compare",
    "atomicack_orig", "feth",
]
COLUMNS = [
    "index", "ip_version", "vlan_count", "frame_length", "opcode", "dest_qp", "psn", "pad_count", "se",
    "migreq", "ackreq", "pkey", "fecn", "becn", "tos", "ecn", "ttl", "udp_sport", "udp_checksum",
    "payload_length", "payload_crc32", "ext_hex",
] + EXT_COLUMNS + ["icrc", "icrc_source"]


def rand_bits(rng, n):
    return rng.getrandbits(n)


def ext_header(rng, name, fields):
    """Random extension header `name` as wire bytes; its field values go into `fields`."""
    if name == "RETH":
        va, rkey, dmalen = rand_bits(rng, 64), rand_bits(rng, 32), rand_bits(rng, 32)
        fields.update(reth_va=va, reth_rkey=rkey, reth_dmalen=dmalen)
        return struct.pack("!QII", va, rkey, dmalen)
    if name == "AETH":
        syndrome, msn = rand_bits(rng, 8), rand_bits(rng, 24)
        fields.update(aeth_syndrome=syndrome, aeth_msn=msn)
        return struct.pack("!I", syndrome << 24 | msn)
    if name == "DETH":
        qkey, reserved, srcqp = rand_bits(rng, 32), rand_bits(rng, 8), rand_bits(rng, 24)
        fields.update(deth_qkey=qkey, deth_srcqp=srcqp)
        return struct.pack("!II", qkey, reserved << 24 | srcqp)
    if name == "ImmDt":
        imm = rand_bits(rng, 32)
        fields.update(immdt=imm)
        return struct.pack("!I", imm)
    if name == "IETH":
        rkey = rand_bits(rng, 32)
        fields.update(ieth_rkey=rkey)
        return struct.pack("!I", rkey)
    if name == "AtomicETH":
        va, rkey, swap, cmp = rand_bits(rng, 64), rand_bits(rng, 32), rand_bits(rng, 64), rand_bits(rng, 64)
        fields.update(atomic_va=va, atomic_rkey=rkey, atomic_swap_add=swap, atomic_compare=cmp)
        return struct.pack("!QIQQ", va, rkey, swap, cmp)
    if name == "AtomicAckETH":
        orig = rand_bits(rng, 64)
        fields.update(atomicack_orig=orig)
        return struct.pack("!Q", orig)
    if name == "FETH":
        feth = rand_bits(rng, 32)
        fields.update(feth=feth)
        return struct.pack("!I", feth)
    raise ValueError(name)


def payload_length(rng, rule, pad):
    if rule == NONE:
        return 0
    if rule == EXACTLY_8:
        return 8
    if rule == EXACT_PMTU:
        return rng.choice([256, 512, 1024, 2048, 4096])
    lo = 1 if rule == ONE_TO_PMTU else 0
    r = rng.random()
    hi = 64 if r < 0.5 else (1500 if r < 0.85 else 4096)
    n = rng.randint(lo, hi)
    n = (n & ~3) + (4 - pad) % 4  # keep the multiple of 4, take the residue giving `pad`
    if n < lo:
        n += 4
    if n > 4096:
        n -= 4
    return n


def spec_icrc(datagram, version):
    """ICRC per rocev2-wire.md 6.1 over the IP datagram up to the pad (ICRC excluded)."""
    b = bytearray(datagram)
    if version == 4:
        assert b[0] == 0x45, "IPv4 options are not covered here"
        ip_len = 20
        b[1] = 0xFF                  # TOS
        b[8] = 0xFF                  # TTL
        b[10:12] = b"\xff\xff"       # header checksum
    else:
        ip_len = 40
        b[0] |= 0x0F                 # top nibble of the traffic class
        b[1:4] = b"\xff\xff\xff"     # rest of the traffic class + flow label
        b[7] = 0xFF                  # hop limit
    b[ip_len + 6:ip_len + 8] = b"\xff\xff"  # UDP checksum
    b[ip_len + 8 + 4] = 0xFF                 # BTH FECN/BECN/Resv6
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


def random_mac(rng):
    return ":".join(f"{rng.getrandbits(8):02x}" for _ in range(6))


def make_frame(rng, index, opcode, version, pad):
    headers, rule = OPCODES[opcode]
    f = {c: "" for c in COLUMNS}
    f.update(index=index, ip_version=version, opcode=opcode)

    eth = Ether(src=random_mac(rng), dst=random_mac(rng))
    vlans = rng.choice([0, 0, 1, 2])
    l2 = eth
    if vlans == 2:
        l2 = l2 / Dot1AD(vlan=rng.getrandbits(12), prio=rng.getrandbits(3)) / Dot1Q(vlan=rng.getrandbits(12))
    elif vlans == 1:
        l2 = l2 / Dot1Q(vlan=rng.getrandbits(12), prio=rng.getrandbits(3), id=rng.getrandbits(1))
    f["vlan_count"] = vlans

    ecn = rng.getrandbits(2)
    tos = rng.getrandbits(6) << 2 | ecn
    ttl = rng.getrandbits(8)
    if version == 4:
        ip = IP(src=".".join(str(rng.getrandbits(8)) for _ in range(4)),
                dst=".".join(str(rng.getrandbits(8)) for _ in range(4)),
                tos=tos, ttl=ttl, id=rng.getrandbits(16), flags=rng.choice(["DF", 0]))
    else:
        ip = IPv6(src=":".join(f"{rng.getrandbits(16):x}" for _ in range(8)),
                  dst=":".join(f"{rng.getrandbits(16):x}" for _ in range(8)),
                  tc=tos, fl=rng.getrandbits(20), hlim=ttl)
    f.update(tos=tos, ecn=ecn, ttl=ttl)

    sport = rng.getrandbits(16)
    udp_checksum = 0 if rng.random() < 0.75 else rng.getrandbits(16)  # masked; RoCE sends 0
    f.update(udp_sport=sport, udp_checksum=udp_checksum)

    plen = payload_length(rng, rule, pad)
    payload = bytes(rng.getrandbits(8) for _ in range(plen))
    pad_bytes = (4 - plen % 4) % 4
    bth_fields = dict(
        opcode=opcode, solicited=rng.getrandbits(1), migreq=rng.getrandbits(1), padcount=pad_bytes,
        pkey=rng.getrandbits(16), fecn=rng.getrandbits(1), becn=rng.getrandbits(1),
        dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1), psn=rng.getrandbits(24))
    if opcode == 0x81:  # CNP as scapy's cnp() helper makes it: BECN set, 16 reserved zero bytes
        bth_fields.update(becn=1, ackreq=0, psn=0, padcount=0)
    f.update(dest_qp=bth_fields["dqpn"], psn=bth_fields["psn"], pad_count=bth_fields["padcount"],
             se=bth_fields["solicited"], migreq=bth_fields["migreq"], ackreq=bth_fields["ackreq"],
             pkey=bth_fields["pkey"], fecn=bth_fields["fecn"], becn=bth_fields["becn"])

    fields = {}
    if opcode == 0x81:
        upper = BTH(**bth_fields) / CNPPadding()
        ext = bytes(16)
    elif opcode == 0x11:  # scapy has an AETH layer, bound for RC ACKNOWLEDGE
        syndrome, msn = rng.getrandbits(8), rng.getrandbits(24)
        fields.update(aeth_syndrome=syndrome, aeth_msn=msn)
        upper = BTH(**bth_fields) / AETH(syndrome=syndrome, msn=msn)
        ext = struct.pack("!I", syndrome << 24 | msn)
    else:
        ext = b"".join(ext_header(rng, h, fields) for h in headers)
        upper = BTH(**bth_fields) / Raw(ext + payload + bytes(pad_bytes))
    f.update(fields)
    f.update(ext_hex=ext.hex(), payload_length=plen, payload_crc32=zlib.crc32(payload) & 0xFFFFFFFF)

    pkt = l2 / ip / UDP(sport=sport, dport=ROCE_PORT, chksum=udp_checksum) / upper
    frame = bytearray(raw(pkt))
    ip_layer = pkt[IP] if version == 4 else pkt[IPv6]
    datagram = raw(ip_layer)[:-4]
    if version == 4:
        scapy_wire = bytes(frame[-4:])
        ours = struct.pack("<I", spec_icrc(datagram, 4))
        if scapy_wire != ours:
            sys.exit(f"frame {index}: scapy ICRC {scapy_wire.hex()} != spec_icrc {ours.hex()}: "
                     "this script's ICRC code is wrong, so its IPv6 values cannot be trusted")
        f["icrc_source"] = "scapy"
    else:
        frame[-4:] = struct.pack("<I", spec_icrc(datagram, 6))
        f["icrc_source"] = "script"
    f["icrc"] = struct.unpack("<I", frame[-4:])[0]
    f["frame_length"] = len(frame)
    return bytes(frame), f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--extra", type=int, default=200, help="random frames on top of the full sweep")
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--csv", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    cases = []
    for opcode, (_, rule) in sorted(OPCODES.items()):
        pads = [0, 1, 2, 3] if rule in (ONE_TO_PMTU, ZERO_TO_PMTU) else [0]
        for version in (4, 6):
            cases.extend((opcode, version, pad) for pad in pads)
    ops = sorted(OPCODES)
    cases.extend((rng.choice(ops), rng.choice((4, 6)), rng.getrandbits(2)) for _ in range(args.extra))

    writer = RawPcapWriter(args.pcap, linktype=1, sync=False)
    with open(args.csv, "w", newline="") as out:
        out.write(f"# scapy {scapy.VERSION} seed {args.seed}\n")
        w = csv.DictWriter(out, fieldnames=COLUMNS)
        w.writeheader()
        for index, (opcode, version, pad) in enumerate(cases):
            frame, fields = make_frame(rng, index, opcode, version, pad)
            writer.write(frame)
            w.writerow({k: (hex(v) if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in fields.items()})
    writer.close()
    print(f"scapy {scapy.VERSION}: {len(cases)} frames, seed {args.seed} -> {args.pcap}")


if __name__ == "__main__":
    main()
