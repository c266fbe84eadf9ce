#!/usr/bin/env bash
# perf_suite refuses a malformed option value the way every tool does (tools_bad_input_test.cpp):
# one line on stderr naming it, nothing on stdout, exit status 2, before the EAL starts.
set -u
suite=$1
fail=0
check() {
  local out err rc
  out=$(mktemp) err=$(mktemp)
  "$suite" -- "$@" >"$out" 2>"$err"
  rc=$?
  if [[ $rc -ne 2 || -s $out || $(wc -l <"$err") -ne 1 ]] || ! grep -q '^perf_suite: ' "$err"; then
    echo "FAIL: perf_suite $* -> exit $rc, stdout $(wc -c <"$out") bytes, stderr: $(cat "$err")"
    fail=1
  else
    echo "ok: perf_suite $* -> $(cat "$err")"
  fi
  rm -f "$out" "$err"
}
check --runs abc
check --window x
check --sr-reorder-window abc
check --sr-reorder-window 5
check --sr-reorder-window 4096
check --loss-rates x
check --fanout-qps q
check --ack-template maybe
check --bdp-shrink yes
check --bdp-growth 2
check --ack-hold 1
check --bdp-judge maybe
check --write-runs maybe
check --scaling-slots maybe
check --scaling-reclaim maybe
check --scaling-feed maybe
check --straight-acks maybe
check --seal-runs maybe
check --seal-clmul maybe
check --icrc-clmul maybe
check --shared-pool maybe
check --split-small-window x
check --split-parts 0
check --split-parts -3
check --bdp-parts 0
check --bdp-split sometimes
check --tail-probe-floor-us -5
check --tail-probe-floor-us x
check --loss-baseline-split-small-window 2
check --loss-baseline-max-inflight 99999999999
check --max-inflight -1
check --sizes 64,x
check --no-such-option
exit $fail
