#!/usr/bin/env bash
# ensure_packages (scripts/lib/common.sh) against a fake dpkg and apt-get: on a machine that
# lacks packages it must install exactly those, say so, and go on; when all are there it must
# not call apt-get; when one does not install it must fail naming it.
set -euo pipefail
root=${ROCE_SOURCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fake=$work/bin
mkdir -p "$fake"

# dpkg -s as Debian's: a stanza per installed package, a message on stderr and exit 1 for
# each missing one.
cat > "$fake/dpkg" <<'FAKE'
#!/usr/bin/env bash
[[ $1 == -s ]] || exit 2
shift
rc=0
for p in "$@"; do
  if grep -qx "$p" "$FAKE_INSTALLED"; then
    printf 'Package: %s\nStatus: install ok installed\n\n' "$p"
  else
    echo "dpkg-query: package '$p' is not installed" >&2
    rc=1
  fi
done
exit $rc
FAKE
# apt-get install marks what it is asked for as installed, except FAKE_BROKEN.
cat > "$fake/apt-get" <<'FAKE'
#!/usr/bin/env bash
echo "apt-get $*" >> "$FAKE_LOG"
[[ " $* " == *" install "* ]] || exit 0
for p in "$@"; do
  [[ $p == -* || $p == install ]] && continue
  [[ $p == "${FAKE_BROKEN:-}" ]] || echo "$p" >> "$FAKE_INSTALLED"
done
FAKE
printf '#!/bin/sh\ncat >/dev/null\n' > "$fake/debconf-set-selections"
printf '#!/bin/sh\nexec "$@"\n' > "$fake/sudo"
chmod +x "$fake"/*

export FAKE_INSTALLED=$work/installed FAKE_LOG=$work/apt.log
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Runs ensure_packages the way scripts/test.sh does (set -euo pipefail) and keeps its output.
run_ensure() {
  : > "$FAKE_LOG"
  set +e
  PATH=$fake:$PATH bash -c 'set -euo pipefail; source "$1/scripts/lib/common.sh"; ensure_packages' _ "$root" \
    > "$work/out" 2>&1
  rc=$?
  set -e
}
all_packages() { bash -c 'source "$1/scripts/lib/common.sh"; printf "%s\n" "${PACKAGES[@]}"' _ "$root"; }

# Everything present: no apt-get at all.
all_packages > "$FAKE_INSTALLED"
run_ensure
((rc == 0)) || fail "all present: exit $rc: $(cat "$work/out")"
grep -q 'packages: all .* present' "$work/out" || fail "all present: no 'all present' line: $(cat "$work/out")"
[[ ! -s $FAKE_LOG ]] || fail "all present: apt-get was called: $(cat "$FAKE_LOG")"

# Two missing (dpkg -s exits 1): exactly those two are installed and the function returns 0.
all_packages | grep -vx -e meson -e libisal-dev > "$FAKE_INSTALLED"
run_ensure
((rc == 0)) || fail "two missing: exit $rc: $(cat "$work/out")"
grep -q 'packages: installing meson libisal-dev$' "$work/out" || fail "two missing: no 'installing' line: $(cat "$work/out")"
grep -q 'apt-get .*install .* meson libisal-dev$' "$FAKE_LOG" || fail "two missing: apt-get not asked for them: $(cat "$FAKE_LOG")"
grep -qx meson "$FAKE_INSTALLED" && grep -qx libisal-dev "$FAKE_INSTALLED" || fail "two missing: not installed"

# One that apt-get does not install: a non-zero exit naming it.
all_packages | grep -vx tshark > "$FAKE_INSTALLED"
FAKE_BROKEN=tshark run_ensure
((rc != 0)) || fail "broken package: exit 0"
grep -q 'package tshark did not install' "$work/out" || fail "broken package: not named: $(cat "$work/out")"

((failures == 0)) && echo "ensure_packages: 3 scenarios passed"
exit $((failures > 0))
