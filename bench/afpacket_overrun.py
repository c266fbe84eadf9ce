#!/usr/bin/env python3
"""Issue 21's af_packet case: `roce-gen write -q 4 -s 16K -n 500` against roce-appliance, two
processes in two network namespaces joined by a veth pair that each drives through DPDK's
net_af_packet, no configured loss. What is lost there is what af_packet's receive ring drops when
the receiving poller is starved, so the figure depends on the load: the load average is printed
beside every run.

Each run starts a fresh appliance and runs the client once per mode, the modes taking turns:
selective repeat (both ends' --selective-repeat, the default), and go-back-N (both at 0). Per run
and mode it prints the retransmitted packets as a fraction of the packets the client sent
(data packets: a WRITE client sends nothing else), NAKs, timeouts, SACKs, bandwidth.

With --dcqcn both ends run DCQCN (the appliance's QPs then answer CE with CNPs, the client's
cut their rate; --line-rate-gbps is DCQCN's line rate and --dcqcn-profile its profile at both ends). --marks on,off runs each
mode with the appliance's receive-overrun CE marks on and off (--overrun-marks; off, the drops
are still counted), alternating: the A/B of dataplane/overrun.hpp. --backlog SPEC/SPEC/... runs each with the appliance's
--backlog-marks SPEC (off, on or KMIN,KMAX,PMAX: marks from the RX queue's backlog,
dataplane/rx_backlog.hpp), alternating the same way; the appliance's rx_backlog_bursts,
rx_backlog_ce_marks and rx_backlog_max_frames are printed. --busy N runs N busy loops (`while :; do :;
done`, nice 0) beside the two processes for the whole run and kills them at the end. --ring DEVARGS gives both vdevs that af_packet ring (e.g.
blocksz=4096,framesz=2048,framecnt=512, the PMD's own default); without it each binary uses
its default (since 2026-12-06 ours: dataplane/eal.hpp). From the appliance's report it prints
what the port dropped before the poller read it (rx_overrun_frames: af_packet ring drops,
imissed, rx_nombuf; "-" from binaries that do not count them), the frames marked CE for
them, the CE frames and CNPs its QPs saw and sent, and its engine's drops; then the kernel's
drops on both veth ends (rx/tx, since the namespaces were made), and the CNPs the client received.
The summary gives, per mode and marking, the sums over the runs: resent / sent, ring drops, CNPs,
and the median bandwidth.

Usage: afpacket_overrun.py ROCE_GEN ROCE_APPLIANCE [--runs N] [--qps 4] [--size 16K] [--iters 500]
       [--window 64] [--modes sr,gbn] [--mtu 1024] [--dcqcn] [--line-rate-gbps G] [--dcqcn-profile P] [--ring DEVARGS]
       [--marks on,off] [--backlog off/on/KMIN,KMAX,PMAX] [--busy N] [--tag NAME] [--qp-timeout N]
Root only. Namespaces and processes are removed on any exit. Two busy-polling DPDK processes:
the figures are the machine's at that moment, not the code's alone.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TAG = "afo%d" % (os.getpid() % 100000)  # --tag replaces it (namespace and interface names)
TCP_GEN, TCP_APPL = "10.78.0.1", "10.78.0.2"
ROCE_GEN, ROCE_APPL = "10.78.1.1", "10.78.1.2"
EAL = ["--no-huge", "--no-pci", "-m", "256", "--log-level=error", "--no-telemetry"]

procs = []
busy = []  # the --busy loops, killed by their own pid at the end


def sh(*args, check=True):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def names():
    return TAG + "g", TAG + "a", TAG + "g0", TAG + "a0"


def vdev(iface, ring):
    return "net_af_packet0,iface=" + iface + ("," + ring if ring else "")


def cleanup():
    NS_GEN, NS_APPL, _, _ = names()
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for b in busy:
        if b.poll() is None:
            b.kill()
            b.wait()
    for ns in (NS_GEN, NS_APPL):
        sh("ip", "netns", "del", ns, check=False)
    for prefix in (TAG + "_gen", TAG + "_appl"):
        sh("rm", "-rf", "/var/run/dpdk/" + prefix, check=False)


def setup_network():
    NS_GEN, NS_APPL, VETH_GEN, VETH_APPL = names()
    if os.geteuid() != 0:
        sys.exit("needs root: network namespaces and a veth pair")
    sh("ip", "netns", "add", NS_GEN)
    sh("ip", "netns", "add", NS_APPL)
    sh("ip", "link", "add", VETH_GEN, "type", "veth", "peer", "name", VETH_APPL)
    for ns, dev, addr in ((NS_GEN, VETH_GEN, TCP_GEN), (NS_APPL, VETH_APPL, TCP_APPL)):
        sh("ip", "link", "set", dev, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def dcqcn_args(a):
    return ["--dcqcn", "on", "--line-rate-gbps", str(a.line_rate_gbps), "--dcqcn-profile", a.dcqcn_profile] if a.dcqcn else []


def start_appliance(binary, tmp, window, marks, backlog, a):
    _, NS_APPL, _, VETH_APPL = names()
    report = os.path.join(tmp, "report-%d.json" % len(procs))
    err = open(os.path.join(tmp, "appliance-%d.err" % len(procs)), "w+")
    cmd = ["ip", "netns", "exec", NS_APPL, binary] + EAL + ["--file-prefix=" + TAG + "_appl", "-l", "0-1", "--",
           "--vdev", vdev(VETH_APPL, a.ring), "--dev", "net_af_packet0", "--ip", ROCE_APPL,
           "--listen-ip", TCP_APPL, "--mr-size", "16M", "--status-interval", "0", "--report", report,
           "--mtu", str(a.mtu), "--selective-repeat", str(window)] + dcqcn_args(a)
    if marks is not None:  # None: the binary's default (and binaries from before the flag)
        cmd += ["--overrun-marks", "on" if marks else "off"]
    if backlog is not None:  # None: the binary's default (and binaries from before the flag)
        cmd += ["--backlog-marks", backlog]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
    procs.append(p)
    deadline = time.time() + 40
    while time.time() < deadline:
        err.seek(0)
        text = err.read()
        if "serving " in text:
            return p, report
        if p.poll() is not None:
            raise RuntimeError("roce-appliance exited %d: %s" % (p.returncode, text.strip()))
        time.sleep(0.1)
    raise RuntimeError("roce-appliance did not start in 40 s")


def stop_appliance(p):
    p.send_signal(signal.SIGTERM)
    p.wait(20)


def appliance_figures(report):
    """rx_overrun_frames, rx_overrun_ce_marks, ecn_ce_received, cnp_sent, the engine's drops, then
    "backlog B/M/D" (rx_backlog_bursts, rx_backlog_ce_marks, rx_backlog_max_frames) and "stalls N"
    (gaps over 200 us between two polls: the poller was descheduled) from the report ("-": absent)."""
    try:
        with open(report) as f:
            w = json.load(f)["workers"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return ["-"] * 7
    counters = w.get("counters", {})
    dropped = ["%s=%d" % (k, v) for k, v in list(w.get("drops", {}).items()) + list(w.get("parse_drops", {}).items()) if v]
    return [w.get("rx_overrun_frames", "-"), w.get("rx_overrun_ce_marks", "-"), counters.get("ecn_ce_received", "-"),
            counters.get("cnp_sent", "-"), "drops: " + (",".join(dropped) or "none"),
            "backlog %s/%s/%s" % tuple(w.get(k, "-") for k in ("rx_backlog_bursts", "rx_backlog_ce_marks", "rx_backlog_max_frames")),
            "stalls %s" % w.get("stalls", "-")]


def veth_drops():
    """Frames the kernel dropped on each veth end since the namespaces were made, as "rx/tx" for
    the client's end then the appliance's (a full backlog drops there, not in af_packet's ring)."""
    out = []
    for ns, dev in ((names()[0], names()[2]), (names()[1], names()[3])):
        r = sh("ip", "-n", ns, "-s", "-j", "link", "show", dev, check=False)
        try:
            st = json.loads(r.stdout)[0]["stats64"]
            out.append("%d/%d" % (st["rx"]["dropped"], st["tx"]["dropped"]))
        except (ValueError, KeyError, IndexError):
            out.append("-")
    return out


def run_gen(binary, a, window):
    NS_GEN, _, VETH_GEN, _ = names()
    cmd = ["ip", "netns", "exec", NS_GEN, binary] + EAL + ["--file-prefix=" + TAG + "_gen", "--lcores=0@1,1@0", "--",
           "write", "-q", str(a.qps), "-s", a.size, "-n", str(a.iters), "-m", str(a.mtu),
           "--selective-repeat", str(window),
           "--vdev", vdev(VETH_GEN, a.ring), "--dev", "net_af_packet0", "--ip", ROCE_GEN,
           "--server", TCP_APPL, "--json"] + dcqcn_args(a) + \
          (["--qp-timeout", str(a.qp_timeout)] if a.qp_timeout else [])
    """The client's JSON, or a string saying why there is none (the run is reported and skipped)."""
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return "did not finish in %d s" % a.timeout
    if r.returncode != 0:
        return "exited %d: %s" % (r.returncode, r.stderr.strip()[-200:])
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gen")
    ap.add_argument("appliance")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--qps", type=int, default=4)
    ap.add_argument("--size", default="16K")
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--mtu", type=int, default=1024)
    ap.add_argument("--modes", default="sr,gbn")
    ap.add_argument("--dcqcn", action="store_true")
    ap.add_argument("--ring", default="")
    ap.add_argument("--tag", default="")
    ap.add_argument("--qp-timeout", type=int, default=0)
    ap.add_argument("--line-rate-gbps", type=float, default=10)
    ap.add_argument("--dcqcn-profile", default="paper", help="paper, mlx or hpcc (with --dcqcn, both ends)")
    ap.add_argument("--marks", default="", help="on,off: A/B of the appliance's overrun marks (default: the binary's own)")
    ap.add_argument("--backlog", default="", help="off/on/KMIN,KMAX,PMAX: A/B of the appliance's backlog marks")
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=120, help="seconds one client run may take")
    a = ap.parse_args()
    global TAG
    if a.tag:
        TAG = a.tag
    modes = a.modes.split(",")
    marks = [{"on": True, "off": False}[x] for x in a.marks.split(",")] if a.marks else [None]
    setup_network()
    for _ in range(a.busy):
        # At nice 0 whatever this script runs at (a neighbour, not one of ours).
        busy.append(subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                     preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, 0)))
    backlogs = a.backlog.split("/") if a.backlog else [None]
    cases = [(m, k, b) for m in modes for k in marks for b in backlogs]
    totals = {c: {"rt": 0, "sent": 0, "drops": 0, "cnps": 0, "bmarks": 0, "bw": [], "failed": 0} for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        print("run mode marks backlog window  retransmitted / sent = fraction  NAKs timeouts SACKs CNPs  MB/s  load (1 min)"
              "  | appliance: ring drops, CE marks, CE received, CNPs sent")
        for run in range(a.runs):
            for m, k, b in (cases if run % 2 == 0 else cases[::-1]):  # each run reverses the order
                window = a.window if m == "sr" else 0
                p, report = start_appliance(a.appliance, tmp, window, k, b, a)
                try:
                    j = run_gen(a.gen, a, window)
                finally:
                    stop_appliance(p)
                figures = appliance_figures(report) + ["| veth drops"] + veth_drops()
                load = os.getloadavg()[0]
                if isinstance(j, str):
                    print("%3d %-4s %-5s %-10s roce-gen %s  load %.1f  | %s" % (run, m, {None: "-", True: "on", False: "off"}[k],
                                                                               b or "-", j, load, " ".join(str(x) for x in figures)))
                    sys.stdout.flush()
                    totals[(m, k, b)]["failed"] += 1
                    continue
                rt, sent = j["retransmits"], j["packets_sent"]
                bw = (j.get("results") or [{}])[0].get("bw_average", 0)
                print("%3d %-4s %-5s %-10s %6d  %6d / %6d = %.4f  %5d %8d %5d %4d  %6.1f  %.1f  | %s" %
                      (run, m, {None: "-", True: "on", False: "off"}[k], b or "-", j["selective_repeat"], rt, sent,
                       rt / max(sent, 1), j["naks"], j["timeouts"], j["sacks_received"], j.get("cnps_received", 0),
                       bw, load, " ".join(str(x) for x in figures)))
                sys.stdout.flush()
                t = totals[(m, k, b)]
                t["rt"] += rt
                t["sent"] += sent
                t["drops"] += figures[0] if isinstance(figures[0], int) else 0
                t["cnps"] += j.get("cnps_received", 0)
                bl = figures[5].split()[1].split("/") if figures[5] != "-" else []
                t["bmarks"] += int(bl[1]) if len(bl) == 3 and bl[1].isdigit() else 0
                t["bw"].append(bw)
        for (m, k, b), t in totals.items():
            print("all  %-4s marks %-3s backlog %-10s %d runs: %d / %d = %.4f retransmitted per packet sent, ring drops %d,"
                  " backlog marks %d, CNPs %d, median %.1f MB/s; %d runs without figures" %
                  (m, {None: "-", True: "on", False: "off"}[k], b or "-", len(t["bw"]), t["rt"], t["sent"],
                   t["rt"] / max(t["sent"], 1), t["drops"], t["bmarks"], t["cnps"], statistics.median(t["bw"]) if t["bw"] else 0,
                   t["failed"]))


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
