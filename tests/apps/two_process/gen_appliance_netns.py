#!/usr/bin/env python3
"""roce-gen against roce-appliance as two processes in two network namespaces, joined by a
veth pair that each drives through DPDK's net_af_packet: every roce-gen mode with --verify where
it applies and --json output checked, then a run long enough to show the live progress line on
a terminal (and none when stderr is piped), and a run while 80 idle TCP connections sit on the
exchange port.

Usage: gen_appliance_netns.py ROCE_GEN ROCE_APPLIANCE
Exit status 0 passed, 77 skipped (not root, no netns/veth; the reason is printed), 1 failed.
The namespaces (and with them the veth pair) and every process started are removed on any exit.
"""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time

TAG = "apt%d" % (os.getpid() % 100000)
NS_GEN, NS_APPL = TAG + "g", TAG + "a"
VETH_GEN, VETH_APPL = TAG + "g0", TAG + "a0"
TCP_GEN, TCP_APPL = "10.79.0.1", "10.79.0.2"   # kernel addresses: the TCP exchange
ROCE_GEN, ROCE_APPL = "10.79.1.1", "10.79.1.2"  # DPDK addresses: RoCEv2 on the same veth
SIZE, ITERS = 4096, 500
EAL = ["--no-huge", "--no-pci", "-m", "256", "--log-level=error", "--no-telemetry"]

procs = []
failures = []


def sh(*args, check=True):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for ns in (NS_GEN, NS_APPL):
        sh("ip", "netns", "del", ns, check=False)
    for prefix in (TAG + "_gen", TAG + "_appl"):
        sh("rm", "-rf", "/var/run/dpdk/" + prefix, check=False)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def setup_network():
    if os.geteuid() != 0:
        skip("not root: network namespaces and veth pairs need root")
    if sh("ip", "netns", "add", NS_GEN, check=False).returncode != 0:
        skip("cannot create a network namespace (ip netns add failed)")
    sh("ip", "netns", "add", NS_APPL)
    if sh("ip", "link", "add", VETH_GEN, "type", "veth", "peer", "name", VETH_APPL, check=False).returncode != 0:
        skip("cannot create a veth pair")
    for ns, dev, addr in ((NS_GEN, VETH_GEN, TCP_GEN), (NS_APPL, VETH_APPL, TCP_APPL)):
        sh("ip", "link", "set", dev, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def start_appliance(binary, tmp, extra):
    """Starts the appliance in its namespace; returns (process, report path) once it serves."""
    report = os.path.join(tmp, "report-%d.json" % len(procs))
    err = open(os.path.join(tmp, "appliance-%d.err" % len(procs)), "w+")
    cmd = ["ip", "netns", "exec", NS_APPL, binary] + EAL + ["--file-prefix=" + TAG + "_appl", "-l", "0-1", "--",
           "--vdev", "net_af_packet0,iface=" + VETH_APPL, "--dev", "net_af_packet0", "--ip", ROCE_APPL,
           "--listen-ip", TCP_APPL, "--mr-size", "16M", "--status-interval", "0", "--report", report] + extra
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


def stop_appliance(p, report):
    p.send_signal(signal.SIGTERM)
    p.wait(20)
    if p.returncode != 0:
        failures.append("roce-appliance exited %d" % p.returncode)
    with open(report) as f:
        return json.load(f)


def gen_cmd(binary, args, json_out):
    cmd = ["ip", "netns", "exec", NS_GEN, binary] + EAL + ["--file-prefix=" + TAG + "_gen", "--lcores=0@1,1@0", "--"]
    cmd += args + ["--vdev", "net_af_packet0,iface=" + VETH_GEN, "--dev", "net_af_packet0", "--ip", ROCE_GEN,
                   "--server", TCP_APPL]
    if json_out:
        cmd.append("--json")
    return cmd


def gen(binary, args, json_out=True, timeout=60):
    t0 = time.time()
    r = subprocess.run(gen_cmd(binary, args, json_out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return r, time.time() - t0


def gen_on_terminal(binary, args, timeout=60):
    """roce-gen with its stderr on a pseudo-terminal: returns (exit status, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(gen_cmd(binary, args, False), stdout=subprocess.PIPE, stderr=slave)
    procs.append(p)
    os.close(slave)
    seen = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 4096)
            except OSError:  # the other end closed: the process is gone
                break
            if not data:
                break
            seen += data
        elif p.poll() is not None:
            break
    os.close(master)
    out = p.stdout.read().decode(errors="replace")
    p.wait(10)
    return p.returncode, out, seen.decode(errors="replace")


def check_run(binary, mode, extra, expect_size):
    name = " ".join(mode + extra)
    size = [] if mode[0] == "atomic" else ["-s", str(SIZE)]  # perftest's atomics take no -s
    r, secs = gen(binary, mode + size + ["-n", str(ITERS)] + extra)
    if r.returncode != 0:
        failures.append("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
        return
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        failures.append("%s: output is not JSON (%s): %r" % (name, e, r.stdout[:200]))
        return
    problems = []
    if j.get("errors") != 0 or j.get("first_error"):
        problems.append("errors %s (%s)" % (j.get("errors"), j.get("first_error")))
    results = j.get("results") or []
    if len(results) != 1:
        problems.append("%d result rows" % len(results))
    else:
        row = results[0]
        if row.get("iterations") != ITERS:
            problems.append("iterations %s, not %d" % (row.get("iterations"), ITERS))
        if row.get("bytes") != expect_size:
            problems.append("bytes %s, not %d" % (row.get("bytes"), expect_size))
        speed = row.get("bw_average", row.get("t_avg_us"))
        if not isinstance(speed, (int, float)) or speed <= 0:
            problems.append("no bandwidth or latency figure")
    # This end's RX queue counters (dataplane/overrun.hpp, rx_backlog.hpp): present, and no
    # backlog mark with --backlog-marks at its default, off.
    rq = j.get("receive_queue")
    keys = ("rx_overrun_frames", "rx_overrun_ce_marks", "rx_backlog_bursts", "rx_backlog_ce_marks", "rx_backlog_max_frames")
    if not isinstance(rq, dict) or any(not isinstance(rq.get(k), int) for k in keys):
        problems.append("receive_queue: %r" % (rq,))
    elif rq["rx_backlog_ce_marks"] != 0:
        problems.append("backlog marks with --backlog-marks off: %d" % rq["rx_backlog_ce_marks"])
    if "--verify" in extra and j.get("verify") != "remote memory as written":
        problems.append("verify: %s" % j.get("verify"))
    print("  %-22s %-9s %5.1f s  %s" % (name, j.get("test"), secs, "; ".join(problems) or "ok"))
    for p in problems:
        failures.append("%s: %s" % (name, p))


def check_progress(binary, modes):
    # A run longer than a second keeps a progress line up to date on stderr when stderr is a
    # terminal (rewritten in place with a carriage return, erased before the results print),
    # and prints none when stderr is piped.
    for mode in modes:
        name = " ".join(mode) + " -D 2.5"
        r, secs = gen(binary, mode + ["-s", str(SIZE), "-D", "2.5"], json_out=False)
        piped = [l for l in r.stderr.splitlines() if " B: " in l]
        if r.returncode != 0:
            failures.append("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
        elif piped:
            failures.append("%s: progress lines on a piped stderr: %r" % (name, piped[:2]))
        rc, out, term = gen_on_terminal(binary, mode + ["-s", str(SIZE), "-D", "2.5"])
        updates = term.count("\r")
        print("  %-22s %5.1f s  %d progress update(s) on a terminal, %d piped" % (name, secs, updates // 2, len(piped)))
        if rc != 0:
            failures.append("%s on a terminal: exit %d: %s" % (name, rc, term.strip()[-300:]))
        elif " B: " not in term or updates < 2:
            failures.append("%s: no progress line on a terminal: %r" % (name, term[-300:]))
        elif not term.replace("\r\x1b[K", "").strip() or "\r\x1b[K" not in term:
            failures.append("%s: the progress line was not erased: %r" % (name, term[-300:]))
        if rc == 0 and "#bytes" not in out and "bytes" not in out:
            failures.append("%s: no results table on stdout: %r" % (name, out[-300:]))


IDLE_CONNECTIONS = 80  # more than --max-sessions (64)


def check_idle_connections_lock_nobody_out(gen_bin, appl_bin, tmp):
    """80 TCP connections to the exchange port that never say a word, then a real client."""
    p, report = start_appliance(appl_bin, tmp, [])
    holder = subprocess.Popen(
        ["ip", "netns", "exec", NS_GEN, sys.executable, "-c",
         "import socket, sys, time\n"
         "s = [socket.create_connection((%r, 18515)) for _ in range(%d)]\n"
         "print('open', flush=True)\n"
         "sys.stdin.read()\n" % (TCP_APPL, IDLE_CONNECTIONS)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    procs.append(holder)
    try:
        if holder.stdout.readline().strip() != "open":
            failures.append("could not open %d idle connections" % IDLE_CONNECTIONS)
            return
        print("  %d idle connections open" % IDLE_CONNECTIONS)
        check_run(gen_bin, ["write"], ["--verify"], SIZE)
        # Stopped while they are still open, so the report shows where they are.
        rep = stop_appliance(p, report)
    finally:
        holder.stdin.close()
        holder.wait(10)
    dropped, waiting = rep.get("handshakes_dropped", 0), rep.get("connections_waiting", 0)
    if rep.get("sessions_failed") != 0 or len(rep.get("sessions", [])) != 1:
        failures.append("appliance with idle connections: sessions %d, failed %s, errors %s" %
                        (len(rep.get("sessions", [])), rep.get("sessions_failed"), rep.get("errors")))
    if dropped + waiting != IDLE_CONNECTIONS:
        failures.append("appliance with idle connections: %d closed at the handshake timeout + %d waiting, not %d" %
                        (dropped, waiting, IDLE_CONNECTIONS))
    print("  idle connections: %d closed at the handshake timeout, %d still waiting at the end" % (dropped, waiting))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gen_bin, appl_bin = sys.argv[1], sys.argv[2]
    t0 = time.time()
    try:
        setup_network()
        with tempfile.TemporaryDirectory(prefix="rocev2-dp-netns-") as tmp:
            # With no option the appliance serves every bandwidth test, ib_read_lat and
            # ib_atomic_lat (SENDs are sunk). One session per run.
            p, report = start_appliance(appl_bin, tmp, [])
            runs = 0
            for verb in ("write", "read", "send", "atomic"):
                for measure in ([], ["--lat"]):
                    if measure and verb in ("write", "send"):
                        continue  # their servers act: the appliances below
                    extra = [] if verb == "send" else ["--verify"]
                    check_run(gen_bin, [verb] + measure, extra, 8 if verb == "atomic" else SIZE)
                    runs += 1
            check_progress(gen_bin, (["write"], ["read", "--lat"]))
            runs += 4  # each on a pipe and on a terminal
            rep = stop_appliance(p, report)
            if rep.get("sessions_failed") != 0 or rep.get("errors") or len(rep.get("sessions", [])) != runs:
                failures.append("appliance report: %d sessions for %d runs, failed %s, errors %s" %
                                (len(rep.get("sessions", [])), runs, rep.get("sessions_failed"), rep.get("errors")))
            # ib_write_lat's server writes first, and must know the size (as perftest's does).
            p, report = start_appliance(appl_bin, tmp, ["--perftest", "ib_write_lat", "-s", str(SIZE)])
            check_run(gen_bin, ["write", "--lat"], ["--verify"], SIZE)
            check_progress(gen_bin, (["write", "--lat"],))
            rep = stop_appliance(p, report)
            if rep.get("sessions_failed") != 0 or rep.get("errors") or len(rep.get("sessions", [])) != 3:
                failures.append("ib_write_lat appliance report: %d sessions for 3 runs, failed %s, errors %s" %
                                (len(rep.get("sessions", [])), rep.get("sessions_failed"), rep.get("errors")))
            # SEND latency and ibv_rc_pingpong need SENDs echoed.
            p, report = start_appliance(appl_bin, tmp, ["--echo"])
            check_run(gen_bin, ["send", "--lat"], [], SIZE)
            check_run(gen_bin, ["pingpong"], [], SIZE)
            check_progress(gen_bin, (["pingpong"],))
            rep = stop_appliance(p, report)
            tools = sorted(s.get("tool") for s in rep.get("sessions", []))
            check_idle_connections_lock_nobody_out(gen_bin, appl_bin, tmp)
            if rep.get("sessions_failed") != 0 or tools != ["ibv_rc_pingpong"] * 3 + ["perftest"]:
                failures.append("echoing appliance report: sessions %s, failed %s, errors %s" %
                                (tools, rep.get("sessions_failed"), rep.get("errors")))
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        failures.append(str(e))
    finally:
        cleanup()
    print("%.0f s" % (time.time() - t0))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # meson's timeout: still clean up
    sys.exit(main())
