#!/usr/bin/env python3
"""roce-replay --dev onto a real interface: a veth pair between two network namespaces made
here, roce-replay driving one end through DPDK's net_af_packet, tcpdump counting on the other.
Every frame sent must arrive, as sent: once as the capture holds them, once rewritten (IP
addresses, QPN, PSN base), where roce-inspect must find the new values and good ICRCs.

Usage: replay_netns.py ROCE_REPLAY ROCE_INSPECT CAPTURE
Exit status 0 passed, 77 skipped (not root, no tcpdump, no netns; the reason is printed),
1 failed. The namespaces (and with them the veth pair) are removed on any exit.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TAG = "rpl%d" % (os.getpid() % 100000)
NS_TX, NS_RX = TAG + "t", TAG + "r"
VETH_TX, VETH_RX = TAG + "t0", TAG + "r0"
EAL = ["--no-huge", "--no-pci", "-m", "256", "--log-level=error", "--no-telemetry", "--file-prefix=" + TAG]


def sh(*args, check=True):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def cleanup():
    for ns in (NS_TX, NS_RX):
        sh("ip", "netns", "del", ns, check=False)
    sh("rm", "-rf", "/var/run/dpdk/" + TAG, check=False)


def setup():
    if os.geteuid() != 0:
        skip("not root: network namespaces and veth pairs need root")
    if not shutil.which("tcpdump"):
        skip("tcpdump not installed (Debian package tcpdump)")
    if sh("ip", "netns", "add", NS_TX, check=False).returncode != 0:
        skip("cannot create network namespaces here")
    sh("ip", "netns", "add", NS_RX)
    sh("ip", "link", "add", VETH_TX, "netns", NS_TX, "type", "veth", "peer", "name", VETH_RX, "netns", NS_RX)
    for ns, dev in ((NS_TX, VETH_TX), (NS_RX, VETH_RX)):
        # No IPv6 on the pair: the kernel's own router solicitations would join the count.
        sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.%s.disable_ipv6=1" % dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")


def count_received(replay, inspect, capture, extra):
    """Sends `capture` with `extra` options; returns (roce-replay's output, inspect JSON lines)."""
    work = tempfile.mkdtemp(prefix="replay-netns-")
    rx = os.path.join(work, "rx.pcap")
    try:
        dump = subprocess.Popen(["ip", "netns", "exec", NS_RX, "tcpdump", "-i", VETH_RX, "--immediate-mode", "-U", "-s", "0",
                                 "-w", rx],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = dump.stderr.readline()  # "tcpdump: listening on ..." once it captures
        if "listening" not in line:
            raise RuntimeError("tcpdump did not start: " + line)
        r = subprocess.run(["ip", "netns", "exec", NS_TX, replay] + EAL + ["--vdev=net_af_packet0,iface=" + VETH_TX, "--",
                            "-i", capture, "--dev", "net_af_packet0", "--topspeed"] + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        # Without --immediate-mode tcpdump's TPACKET_V3 ring hands a block over only when it is
        # full or its timeout expires, and frames still in the ring at SIGINT are never written.
        time.sleep(1.0)
        dump.send_signal(signal.SIGINT)
        dump.wait(10)
        if r.returncode != 0:
            raise RuntimeError("roce-replay failed (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
        got = subprocess.run([inspect, rx, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if got.returncode != 0:
            raise RuntimeError("roce-inspect %s: %s" % (rx, got.stderr))
        return r.stdout, [json.loads(l) for l in got.stdout.splitlines()]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sent_count(out):
    for line in out.splitlines():
        if line.startswith("Actual: "):
            return int(line.split()[1])
    raise RuntimeError("no 'Actual:' line in: " + out)


def main():
    replay, inspect, capture = sys.argv[1:4]
    original = [json.loads(l) for l in subprocess.run([inspect, capture, "--json"], stdout=subprocess.PIPE, text=True,
                                                        check=True).stdout.splitlines()]
    setup()
    failures = []

    out, frames = count_received(replay, inspect, capture, [])
    sent = sent_count(out)
    print("as captured: %d frames in the capture, %d sent, %d seen by tcpdump" % (len(original), sent, len(frames)))
    if not (sent == len(original) == len(frames)):
        failures.append("unchanged: %d in the capture, %d sent, %d received" % (len(original), sent, len(frames)))
    for a, b in zip(original, frames):
        keep = ("opcode", "qpn", "psn", "ip.src", "icrc", "payload.len", "len")
        if any(a.get(k) != b.get(k) for k in keep):
            failures.append("frame %d differs: %s / %s" % (a["frame"], {k: a.get(k) for k in keep}, {k: b.get(k) for k in keep}))
            break

    roce = [f for f in original if f["verdict"] == "roce"]
    src, qpn = roce[0]["ip.src"], roce[0]["qpn"]
    out, frames = count_received(replay, inspect, capture, ["--ip-map", "%s=10.123.0.9" % src, "--qpn-map",
                                                             "%d=0x42424" % qpn, "--psn-base", "7"])
    got = [f for f in frames if f["verdict"] == "roce"]
    print("rewritten: %d RoCEv2 frames in the capture, %d received" % (len(roce), len(got)))
    if len(got) != len(roce):
        failures.append("rewritten: %d RoCEv2 frames in the capture, %d received" % (len(roce), len(got)))
    if got:
        if got[0]["psn"] != 7:
            failures.append("first PSN %d, not the base 7" % got[0]["psn"])
        if got[0]["ip.src"] != "10.123.0.9" or got[0]["qpn"] != 0x42424:
            failures.append("first frame not rewritten: %s" % got[0])
        bad = [f["frame"] for f in got if f["icrc"] != "ok"]
        if bad:
            failures.append("ICRC not ok after the rewrite in frames %s" % bad[:10])
        if any(f["ip.src"] == src or f["ip.dst"] == src for f in got):
            failures.append("the old address %s is still there" % src)

    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
    finally:
        cleanup()
