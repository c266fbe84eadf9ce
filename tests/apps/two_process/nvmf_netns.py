#!/usr/bin/env python3
"""roce-gen's NVMe-oF initiator (--target) against roce-appliance's NVMe/RDMA target as two
processes in two network namespaces (the veth pair of gen_appliance_netns.py), connected through
rdma_cm as a Linux host connects: nvme-randrw on two I/O queues with --verify (every read
checked, the range read back at the end), with the appliance's --rdma-cm rping listener on the
same CM agent (nvmf_service_tests serves both at once); the namespace's backing file holds
data afterwards.

Usage: nvmf_netns.py ROCE_GEN ROCE_APPLIANCE
Exit status 0 passed, 77 skipped (not root, no netns/veth; the reason is printed), 1 failed.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_appliance_netns as base  # noqa: E402  (the namespaces, veth pair and appliance start)

NQN = "nqn.2026-12.io.rocev2-dp:netns-test"


def gen(binary, args, timeout=60):
    cmd = ["ip", "netns", "exec", base.NS_GEN, binary] + base.EAL + ["--file-prefix=" + base.TAG + "_gen",
                                                                   "--lcores=0@1,1@0", "--"]
    cmd += args + ["--vdev", "net_af_packet0,iface=" + base.VETH_GEN, "--dev", "net_af_packet0", "--ip", base.ROCE_GEN]
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return r, time.time() - t0


def check_nvme(binary, mode, extra):
    name = " ".join([mode] + extra)
    r, secs = gen(binary, [mode, "--target", base.ROCE_APPL, "--nqn", NQN, "--bs", "4k", "--qd", "8", "--time", "0.5",
                           "--size", "2", "--verify", "--json"] + extra)
    if r.returncode != 0:
        base.failures.append("%s: exit %d: %s %s" % (name, r.returncode, r.stderr.strip()[-400:], r.stdout.strip()[-400:]))
        return
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        base.failures.append("%s: output is not JSON (%s): %r" % (name, e, r.stdout[:200]))
        return
    problems = []
    if j.get("errors") != 0 or j.get("first_error"):
        problems.append("errors %s (%s)" % (j.get("errors"), j.get("first_error")))
    if j.get("verify") != "ok" or j.get("mismatches") != 0:
        problems.append("verify %s, %s mismatches" % (j.get("verify"), j.get("mismatches")))
    if not j.get("iops", 0) > 0 or j.get("reads", 0) + j.get("writes", 0) == 0:
        problems.append("no I/O")
    # Both ends are ours at their defaults: the queues agree on selective repeat (window 128).
    if j.get("selective_repeat") != 128:
        problems.append("selective_repeat %s, not 128" % j.get("selective_repeat"))
    print("  %-28s %5.1f s  %.0f IOPS  %s" % (name, secs, j.get("iops", 0), "; ".join(problems) or "ok"))
    for p in problems:
        base.failures.append("%s: %s" % (name, p))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gen_bin, appl_bin = sys.argv[1], sys.argv[2]
    t0 = time.time()
    try:
        base.setup_network()
        with tempfile.TemporaryDirectory(prefix="rocev2-dp-nvmf-") as tmp:
            img = os.path.join(tmp, "ns.img")
            p, report = base.start_appliance(appl_bin, tmp, ["--nvmf-subsystem", NQN, "--nvmf-namespace",
                                                             "file:%s:16M" % img, "--rdma-cm", "rping"])
            check_nvme(gen_bin, "nvme-randrw", ["--queues", "2"])
            base.stop_appliance(p, report)
            with open(img, "rb") as f:
                if not any(f.read(1 << 20)):
                    base.failures.append("the namespace file holds no data after the writes")
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        base.failures.append(str(e))
    finally:
        base.cleanup()
    print("%.0f s" % (time.time() - t0))
    for f in base.failures:
        print("FAIL: " + f)
    return 1 if base.failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # meson's timeout: still clean up
    sys.exit(main())
