#!/usr/bin/env python3
"""Asks a link for an IPv4 address's MAC, as a peer's dataplane does, and counts the attempts.

    arp_probe.py IFACE SENDER_IP TARGET_IP [--attempts N] [--interval-ms MS] [--rounds R]

Sends an ARP who-has TARGET_IP (from SENDER_IP and IFACE's MAC) on IFACE, waits up to one
interval for the answer, and asks again, up to N attempts (as Dataplane::resolve re-asks every
200 ms); R rounds of that. Prints the attempt that was answered in each round ("none": no
answer in N) and exits 0 when every round was answered, 1 otherwise. The bound is in attempts,
so a loaded machine changes how long it takes, not the verdict.
Run inside the namespace that holds IFACE; needs CAP_NET_RAW.
"""
import argparse
import select
import socket
import struct
import sys
import time

ETH_P_ARP = 0x0806


def mac_of(iface):
    with open(f"/sys/class/net/{iface}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def request(mac, sender, target):
    eth = b"\xff" * 6 + mac + struct.pack("!H", ETH_P_ARP)
    arp = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac + socket.inet_aton(sender) + b"\x00" * 6 + socket.inet_aton(target)
    return eth + arp


def is_reply(frame, mac, sender, target):
    if len(frame) < 42 or struct.unpack("!H", frame[12:14])[0] != ETH_P_ARP:
        return False
    htype, ptype, hlen, plen, oper = struct.unpack("!HHBBH", frame[14:22])
    return (oper == 2 and frame[0:6] == mac and frame[28:32] == socket.inet_aton(target)
            and frame[38:42] == socket.inet_aton(sender))


def ask(s, frame, mac, a):
    """The attempt whose answer came, or None. Answers of earlier rounds that came late are read
    first: each would otherwise pass for this round's."""
    while select.select([s], [], [], 0)[0]:
        s.recv(2048)
    for attempt in range(1, a.attempts + 1):
        s.send(frame)
        until = time.monotonic() + a.interval_ms / 1000
        while (left := until - time.monotonic()) > 0:
            if not select.select([s], [], [], left)[0]:
                break
            if is_reply(s.recv(2048), mac, a.sender, a.target):
                return attempt
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("iface")
    p.add_argument("sender")
    p.add_argument("target")
    p.add_argument("--attempts", type=int, default=15)
    p.add_argument("--interval-ms", type=int, default=200)
    p.add_argument("--rounds", type=int, default=1)
    a = p.parse_args()
    mac = mac_of(a.iface)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    s.bind((a.iface, 0))
    frame = request(mac, a.sender, a.target)
    answered = [ask(s, frame, mac, a) for _ in range(a.rounds)]
    print(f"arp probe: {a.target} answered at attempts {' '.join(str(k or 'none') for k in answered)}"
          f" (of {a.attempts}, {a.interval_ms} ms apart)")
    return 0 if all(answered) else 1


if __name__ == "__main__":
    sys.exit(main())
