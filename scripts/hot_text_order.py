#!/usr/bin/env python3
"""Writes scripts/hot-text.order: the hot path's functions, hottest first, as the section names
that g++ -ffunction-sections gives them, for gold's --section-ordering-file (meson.build).

  scripts/hot_text_order.py BINARY CALLGRIND_OUT... > scripts/hot-text.order
  scripts/hot_text_order.py --check BINARY [ORDER]   (default ORDER: scripts/hot-text.order)

BINARY is the perf_suite the profiles ran (any build with symbols; it need not have been built
with -ffunction-sections: a function's section name is its symbol's name). Each CALLGRIND_OUT is
one case's profile taken with --demangle=no (so that the names are the symbols the sections
carry), e.g. the rtt, rate and responder cases (docs/perf-changes.md section 85 has the commands).
A function's weight is the sum over the profiles of its share of that profile's instructions in
BINARY, so each case counts the same however long it ran. The list takes functions by weight
until each profile's instructions in BINARY are covered to --coverage (default 0.999), and never
a function below --min-share of every profile (default 1e-5: run once in 100,000 instructions).

The list's order is only a hint to the linker: a name that matches no section (a function
renamed, inlined or gone since the profile) is skipped by gold, and the function lands where it
would have without the list. The list ends with `.text.*`, a glob gold matches against every
other function, so that they all follow the hot run. --check tells how much of the list a linked binary still matches
(listed functions found, and whether they lie together in the list's order); regenerate when
it reports stale names in the hot path.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

# Clones GCC makes (.part.N, .isra.N, .constprop.N, .cold) are their own symbols; their section is
# .text.<symbol>, except a function's cold part, which g++ puts in .text.unlikely.<function>.
COLD = re.compile(r"^(?P<base>.*)\.cold(?:\.\d+)?$")


def self_costs(path, binary):
    """Self instructions per function of BINARY in one callgrind file (first event)."""
    names = {}  # compressed id -> name, for fn= and ob=
    costs = collections.Counter()
    obj = fn = None
    skip_next = False

    def name_of(value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if sep and key.isalpha():
                if key == "ob":
                    obj = name_of(value)
                elif key == "fn":
                    fn = name_of(value)
                elif key in ("cob", "cfn", "cfi", "cfl"):
                    # Keep the id table complete; the caller's context does not change.
                    if key == "cfn" or key == "cob":
                        name_of(value)
                elif key == "calls":
                    skip_next = True  # the next cost line is the call's inclusive cost
                continue
            if line[0] in "+-*0123456789":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2 and obj == binary and fn:
                    costs[fn] += int(parts[1])
    return costs


def symbols(binary):
    """Text symbols of BINARY: name -> (address, size)."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], check=True,
                         capture_output=True, text=True).stdout
    where = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            where[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return where


def section_symbol(line):
    """The symbol a listed section holds: .text.S -> S, .text.unlikely.S -> S.cold."""
    if line.startswith(".text.unlikely."):
        return line[len(".text.unlikely."):] + ".cold"
    return line[len(".text."):] if line.startswith(".text.") else None


def check(binary, order):
    """Which listed functions BINARY still has, and whether they lie together in list order."""
    where = symbols(binary)
    listed = [s for s in (section_symbol(l.strip()) for l in open(order)) if s and "*" not in s]
    found = [s for s in listed if s in where]
    stale = [s for s in listed if s not in where]
    for s in stale:
        print(f"stale: {s}")
    if found:
        starts = [where[s][0] for s in found]
        in_order = all(a < b for a, b in zip(starts, starts[1:]))
        lo = min(starts)
        hi = max(where[s][0] + where[s][1] for s in found)
        print(f"{len(found)} of {len(listed)} listed functions in {binary}, "
              f"{'in the list order' if in_order else 'NOT in the list order'}, "
              f"spanning {hi - lo} bytes from {lo:#x}")
    else:
        print(f"none of the {len(listed)} listed functions in {binary}")
    return 0 if found else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        if len(sys.argv) not in (3, 4):
            sys.exit("usage: hot_text_order.py --check BINARY [ORDER]")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        default = os.path.join(root, "scripts", "hot-text.order")
        sys.exit(check(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else default))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("profiles", nargs="+")
    ap.add_argument("--coverage", type=float, default=0.999)
    ap.add_argument("--min-share", type=float, default=1e-5)
    args = ap.parse_args()

    sizes = symbols(args.binary)
    # callgrind names the object by the path it was run as: match on the resolved path's tail.
    profiles = []
    for path in args.profiles:
        with open(path) as f:
            objs = {m.group(1) for m in re.finditer(r"^c?ob=\(\d+\) (.*)$", f.read(), re.M)}
        binary = next((o for o in objs if o.endswith("/" + args.binary.split("/")[-1])), None)
        if binary is None:
            sys.exit(f"{path}: no object named like {args.binary}")
        costs = self_costs(path, binary)
        total = sum(costs.values())
        if total == 0:
            sys.exit(f"{path}: no instructions in {binary}")
        profiles.append((path, costs, total))

    weight = collections.Counter()
    for _, costs, total in profiles:
        for fn, ir in costs.items():
            weight[fn] += ir / total
    chosen, covered = [], [0] * len(profiles)
    for fn, _ in weight.most_common():
        if all(c >= p[2] * args.coverage for c, p in zip(covered, profiles)):
            break
        if all(p[1][fn] < p[2] * args.min_share for p in profiles):
            break
        if fn not in sizes:
            print(f"hot_text_order.py: {fn} is not a text symbol of {args.binary}; left out",
                  file=sys.stderr)
            continue
        chosen.append(fn)
        covered = [c + p[1][fn] for c, p in zip(covered, profiles)]

    hot_bytes = sum(sizes[fn][1] for fn in chosen)
    for (path, _, total), c in zip(profiles, covered):
        print(f"hot_text_order.py: {path}: {c / total:.4%} of {total} instructions in the binary",
              file=sys.stderr)
    print(f"hot_text_order.py: {len(chosen)} functions, {hot_bytes} bytes before alignment",
          file=sys.stderr)
    print("# The hot path's functions, hottest first, as g++ -ffunction-sections names their sections;")
    print("# gold places them together (meson.build, -Dcode_order). Lines that are not section names")
    print("# (these comments) and names that match no section (a function renamed or gone) are skipped.")
    print("# Written by scripts/hot_text_order.py from callgrind profiles (--demangle=no) of:")
    for path, _, _ in profiles:
        with open(path) as f:
            cmd = next((l[4:].split() for l in f if l.startswith("cmd:")), [])
        print("#   " + " ".join([cmd[0].rsplit("/", 1)[-1]] + cmd[1:]) if cmd else f"#   {path}")
    print("# (the toggles and the build: docs/perf-changes.md section 85)")
    for fn in chosen:
        m = COLD.match(fn)
        print(f".text.unlikely.{m.group('base')}" if m else f".text.{fn}")
    # gold puts the sections no line names before the listed ones; this last line names all the
    # rest, so that they follow the list and the hot run starts .text, next to the PLT's stubs.
    print("# Every other function after the list (the round trip measured faster so: section 85).")
    print(".text.*")


if __name__ == "__main__":
    main()
