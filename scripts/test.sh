#!/usr/bin/env bash
# Installs what is missing, builds with -Dwerror=true, runs every meson test suite, then every
# executable scripts/test.d/*.sh in name order, and prints a summary. Exit status is non-zero
# if anything failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

started=$SECONDS
ensure_packages
configure_and_build
declare -a summary
summary+=("packages and build: $((SECONDS - started)) s")

failed=0

log "meson test -C $BUILD_DIR (all suites)"
step_start=$SECONDS
if meson test -C "$BUILD_DIR" --print-errorlogs; then
  summary+=("meson test: ok ($((SECONDS - step_start)) s)")
else
  summary+=("meson test: FAILED after $((SECONDS - step_start)) s (log: $BUILD_DIR/meson-logs/testlog.txt)")
  failed=1
fi
testlog="$BUILD_DIR/meson-logs/testlog.txt"

# ---- extra test steps -------------------------------------------------------------------
# Every executable scripts/test.d/*.sh runs here, in name order (e.g. 10-fuzz-smoke.sh,
# 20-scapy-xcheck.sh), from the repository root with BUILD_DIR and ROOT exported. A step
# reports by its exit status: 0 passed, 77 skipped (it should print why), anything else failed.
export ROOT BUILD_DIR
shopt -s nullglob
for step in "$ROOT"/scripts/test.d/*.sh; do
  [[ -x "$step" ]] || continue
  name="test.d/$(basename "$step")"
  log "$name"
  set +e
  step_start=$SECONDS
  (cd "$ROOT" && "$step")
  rc=$?
  took="$((SECONDS - step_start)) s"
  set -e
  case $rc in
    0) summary+=("$name: ok ($took)") ;;
    77) summary+=("$name: skipped ($took)") ;;
    *) summary+=("$name: FAILED (exit $rc, after $took)"); failed=1 ;;
  esac
done
shopt -u nullglob
# ------------------------------------------------------------------------------------------

echo
log "summary"
if [[ -f "$testlog" ]]; then
  count() { awk -v k="$1:" '$1 == k { n = $2 } END { print n + 0 }' "$testlog"; }
  echo "  meson test programs: $(count Ok) ok, $(count Fail) failed, $(count Timeout) timed out, $(count Skipped) skipped"
  # GoogleTest cases that skipped themselves (e.g. ../shared/captures not found), with the reason.
  skips=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$testlog" || true)
  if ((skips > 0)); then
    echo "  $skips GoogleTest case(s) skipped:"
    awk '/: Skipped$/ { getline; print }' "$testlog" | sort | uniq -c |
      awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "    %d x %s\n", n, $0 }'
  fi
fi
# CI shows only the tail of this output: name each failed test program and its failing
# GoogleTest cases here, with the last lines it printed, so a red run says why at the bottom.
if [[ -f "$BUILD_DIR/meson-logs/testlog.json" ]]; then
  /usr/bin/env python3 - "$BUILD_DIR/meson-logs/testlog.json" <<'PY' || true
import json, re, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t.get("result") in ("OK", "SKIP", "EXPECTEDFAIL"):
        continue
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    print(f"  FAILED test program: {t['name']} ({t['result']}, {t.get('duration', 0):.1f} s)")
    for case in sorted(set(re.findall(r"^\[  FAILED  \] (\S+) \(", out, re.M))):
        print(f"    failed case: {case}")
    for l in out.splitlines()[-25:]:
        print(f"    | {l[:200]}")
PY
fi
for line in "${summary[@]}"; do echo "  $line"; done
echo "  total: $((SECONDS - started)) s"
if ((failed)); then
  echo "RESULT: FAILED"
  exit 1
fi
echo "RESULT: all passed"
