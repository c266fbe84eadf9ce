#!/usr/bin/env python3
"""Writes the dcqcn-trace test cases T1-T6 of ../shared/spec/dcqcn.md section 9: for each, an
event file (first line `# dcqcn-trace <options>`) and the expected CSV.

The expected values come from an exact-arithmetic (fractions) model of the paper profile
written independently of lib/cc, with the same event-ordering rules as dcqcn-trace:
timers due at or before an event's time fire first, in deadline order, alpha before the
increase timer at a shared deadline; a CNP goes before timers due exactly at its time.
trace_tool_test.cpp also checks the spec's table values directly.

T6 is packetised: from t = 0 every whole microsecond the sender reports the bytes it puts on
the wire in the next microsecond at its current Rc (carrying the fractions), so each "packet"
is 1 us of data and the byte-counter events land within 1 us of the spec's fluid times.

Run from anywhere: python3 make_traces.py [output_dir]   (default: this file's directory)
                   python3 make_traces.py --check      (exit 1 if the files are out of date)
"""

import os
import sys
from fractions import Fraction as Fr

C = Fr(100)           # Gb/s
G = Fr(1, 256)
K_US = 55
T_US = 55
B = 10_000_000        # bytes
F = 5
RAI = Fr(40, 1000)    # Gb/s
RHAI = Fr(200, 1000)  # Gb/s


class Rp:
    def __init__(self, f=F, timer=True):
        self.f = f
        self.timer = timer
        self.rc = C
        self.rt = C
        self.alpha = Fr(1)
        self.t = 0
        self.bc = 0
        self.acc = 0
        self.alpha_dl = None
        self.inc_dl = None
        self.active = False

    def cnp(self, now):
        self.rt = self.rc
        self.rc = self.rc * (1 - self.alpha / 2)
        self.alpha = (1 - G) * self.alpha + G
        self.t = self.bc = self.acc = 0
        self.alpha_dl = now + K_US
        self.inc_dl = now + T_US if self.timer else None
        self.active = True

    def increase(self):
        hi, lo = max(self.t, self.bc), min(self.t, self.bc)
        if hi <= self.f:
            pass
        elif lo > self.f:
            self.rt = min(self.rt + (lo - self.f) * RHAI, C)
        else:
            self.rt = min(self.rt + RAI, C)
        self.rc = min((self.rt + self.rc) / 2, C)

    def next_timer(self, up_to):
        due = [(dl, order, name) for order, (dl, name) in enumerate(
            [(self.alpha_dl, "alpha"), (self.inc_dl, "inc_timer")]) if dl is not None and dl <= up_to]
        return min(due) if due else None

    def fire(self, name):
        if name == "alpha":
            self.alpha *= 1 - G
            self.alpha_dl += K_US
        else:
            self.t += 1
            self.increase()
            self.inc_dl += T_US


class Run:
    def __init__(self, rp):
        self.rp = rp
        self.events = []
        self.out = []

    def line(self, t, name):
        r = self.rp
        self.out.append("{},{},{!r},{!r},{!r}".format(t, name, float(r.rc), float(r.rt), float(r.alpha)))

    def timers(self, up_to):
        while True:
            nxt = self.rp.next_timer(up_to)
            if nxt is None:
                return
            self.rp.fire(nxt[2])
            self.line(nxt[0], nxt[2])

    def cnp(self, t):
        self.events.append("{} cnp".format(t))
        self.timers(t - 1)
        self.rp.cnp(t)
        self.line(t, "cnp")

    def sent(self, t, nbytes):
        self.events.append("{} sent {}".format(t, nbytes))
        self.timers(t)
        if not self.rp.active:
            return
        self.rp.acc += nbytes
        while self.rp.acc >= B:
            self.rp.acc -= B
            self.rp.bc += 1
            self.rp.increase()
            self.line(t, "bytes")

    def end(self, t):
        self.events.append("{} end".format(t))
        self.timers(t)


def t1():
    r = Run(Rp())
    r.cnp(0)
    r.end(0)
    return r


def t2():
    r = Run(Rp())
    r.cnp(0)
    r.end(560)
    return r


def t3():
    r = Run(Rp())
    r.cnp(0)
    r.cnp(50)
    r.end(490)
    return r


def t4():
    # F = 2, start Rt 50 / Rc 25 (two CNPs), then T,T,T,B,B,B,T,T,B: the timer fires at
    # 56, 111, 166, 221, 276 us; B = exactly 10 MB reported at once.
    r = Run(Rp(f=2))
    r.cnp(0)
    r.cnp(1)
    for _ in range(3):
        r.sent(166, B)
    r.sent(276, B)
    r.end(276)
    return r


def t5():
    r = Run(Rp())
    r.cnp(0)
    r.cnp(560)
    r.end(615)
    return r


def t6():
    r = Run(Rp(timer=False))
    r.cnp(0)
    carry = Fr(0)
    for t in range(0, 6100):
        r.timers(t)  # so that the batch uses the rate in force at t
        carry += r.rp.rc * 125  # bytes per microsecond at rc Gb/s
        nbytes = int(carry)
        carry -= nbytes
        r.sent(t, nbytes)
    r.end(6100)
    return r


CASES = {
    "t1": ("--rmin-mbps 0", t1, "one CNP from line rate"),
    "t2": ("--rmin-mbps 0", t2, "timer-driven recovery after one CNP"),
    "t3": ("--rmin-mbps 0", t3, "second CNP before any increase"),
    "t4": ("--rmin-mbps 0 --f 2", t4, "FR -> AI -> HAI by event injection, F = 2"),
    "t5": ("--rmin-mbps 0", t5, "alpha decay, then a CNP at 560 us"),
    "t6": ("--rmin-mbps 0 --t-us inf", t6, "byte-counter-only recovery, 1 us packets"),
}


def render():
    files = {}
    for name, (args, make, title) in CASES.items():
        r = make()
        files[name + ".events"] = "# dcqcn-trace {}\n# dcqcn.md {}: {}\n".format(args, name.upper(), title) + \
            "\n".join(r.events) + "\n"
        files[name + ".expected.csv"] = "\n".join(r.out) + "\n"
    return files


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ["--check"]:
        stale = []
        for name, text in render().items():
            path = os.path.join(here, name)
            if not os.path.exists(path) or open(path).read() != text:
                stale.append(name)
        if stale:
            sys.stderr.write("make_traces: out of date: {} (re-run make_traces.py)\n".format(", ".join(stale)))
            return 1
        print("make_traces: all trace files up to date")
        return 0
    out_dir = sys.argv[1] if len(sys.argv) > 1 else here
    for name, text in render().items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
