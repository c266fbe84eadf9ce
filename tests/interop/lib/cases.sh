# Sourced by run.sh: the case list and how one case runs.
#
# A case is one line: NAME KIND VERB MTU LOSS SIZE ITERS [FLAGS]
#   KIND  to-rxe     our roce-gen is the client of a guest server (ibv_rc_pingpong, ib_VERB_bw,
#                    ib_VERB_lat, ibv_ud_pingpong)
#         from-rxe   the guest's client (ibv_rc_pingpong, ib_VERB_bw, ib_VERB_lat) against
#                    roce-appliance
#   VERB  pingpong | ud-pingpong | uc-pingpong | srq-pingpong (verbs cases) | write | read | send | atomic
#   LOSS  percent of the guest's egress frames dropped by netem (0: none)
#   FLAGS comma-separated, given to both programs: lat (ib_VERB_lat; roce-gen --lat), qN (-q N),
#         cas (-A CMP_AND_SWAP), uc / ud (-c UC / -c UD), all (-a: every size, SIZE unused),
#         gbits (--report_gbits), DN (-D N), oN (-o N), b (-b; from-rxe: the appliance gets
#         --perftest ib_VERB_bw -b with the case's -s and -n), inf (--run_infinitely: the client is
#         stopped by SIGINT after its third row; roce-gen must end cleanly; from-rxe: a normal run
#         of the same test must then pass against the same appliance, which logged no error);
#         R (-R: perftest's rdma_cm mode; from-rxe: the appliance gets --rdma-cm perftest and the
#         client the engine's address),
#         to roce-gen alone, perftest's client flags: tN, QN, lN, IN, TN (-t -Q -l -I -T), mrqp
#         (--mr_per_qp), cpu (--cpu_util), devflags (-d rxe0 -i 1 -x 1 -F: accepted with a note each)
#         v6: RoCE over IPv6: the guest's tools take its fd77:: GID ($G6), our side --ip fd77::10
#         (neighbour discovery instead of ARP); the TCP exchange stays on IPv4

# Cases known to fail against rxe, with the reason: "NAME-GLOB|reason" lines. A known failure
# is reported as XFAIL and does not fail the run; if it passes it shows as XPASS.
KNOWN_FAILURES=(
)

has_flag() { [[ ,$1, == *,$2,* ]]; }

# perftest/ibverbs example program of a verb.
guest_tool() {
  local verb=$1 flags=${2:-}
  case $verb in
    pingpong) echo ibv_rc_pingpong ;;
    ud-pingpong) echo ibv_ud_pingpong ;;
    uc-pingpong) echo ibv_uc_pingpong ;;
    srq-pingpong) echo ibv_srq_pingpong ;;
    *) if has_flag "$flags" lat; then echo "ib_${verb}_lat"; else echo "ib_${verb}_bw"; fi ;;
  esac
}

# The perftest options a case's FLAGS stand for; both sides take the same spelling.
perftest_flags() {
  local flags=$1 f out=()
  for f in ${flags//,/ }; do
    case $f in
      q[0-9]*) out+=(-q "${f#q}") ;;
      cas) out+=(-A CMP_AND_SWAP) ;;
      uc) out+=(-c UC) ;;
      ud) out+=(-c UD) ;;
      all) out+=(-a) ;;
      gbits) out+=(--report_gbits) ;;
      D[0-9]*) out+=(-D "${f#D}") ;;
      o[0-9]*) out+=(-o "${f#o}") ;;
      b) out+=(-b) ;;
      inf) out+=(--run_infinitely) ;;
      R) out+=(-R) ;;
      srq) out+=(--use-srq) ;;
    esac
  done
  echo "${out[*]}"
}

# perftest's client-side flags in a case's FLAGS: roce-gen takes them, the guest's server does
# not need them.
gen_flags() {
  local flags=$1 f out=()
  for f in ${flags//,/ }; do
    case $f in
      t[0-9]*) out+=(-t "${f#t}") ;;
      Q[0-9]*) out+=(-Q "${f#Q}") ;;
      l[0-9]*) out+=(-l "${f#l}") ;;
      I[0-9]*) out+=(-I "${f#I}") ;;
      T[0-9]*) out+=(-T "${f#T}") ;;
      mrqp) out+=(--mr_per_qp) ;;
      cpu) out+=(--cpu_util) ;;
      devflags) out+=(-d rxe0 -i 1 -x 1 -F) ;;
    esac
  done
  echo "${out[*]}"
}

# The TOS byte -T gave roce-gen, as tcpdump prints it, or nothing.
tos_of() {
  local f
  for f in ${1//,/ }; do [[ $f == T[0-9]* ]] && printf 'tos 0x%x' "${f#T}"; done
  return 0
}

# -s SIZE, or nothing for atomics (always 8) and -a sweeps.
size_flag() {
  local verb=$1 size=$2 flags=$3
  [[ $verb == atomic ]] || has_flag "$flags" all || echo "-s $size"
}

# Arguments of the guest tool for a case (server side when no address is given).
guest_args() {
  local verb=$1 mtu=$2 size=$3 iters=$4 flags=${5:-} g='$G'
  has_flag "$flags" v6 && g='$G6'
  case $verb in
    pingpong | uc-pingpong) echo "-d rxe0 -g $g -m $mtu -s $size -n $iters" ;;
    srq-pingpong) echo "-d rxe0 -g $g -m $mtu -s $size -n $iters $(perftest_flags "$flags")" ;;
    ud-pingpong) echo "-d rxe0 -g $g -s $size -n $iters" ;;
    *) echo "-d rxe0 -x $g -F -m $mtu $(size_flag "$verb" "$size" "$flags") -n $iters $(perftest_flags "$flags")" ;;
  esac
}

# roce-appliance's options for a case beyond port and MTU: the transport (-c) and, for the two
# latency tests whose server does more than answer (ib_write_lat writes first, ib_send_lat
# echoes), the test it serves, with the size and iterations ib_write_lat's own server needs.
appliance_args() {
  local verb=$1 size=$2 iters=$3 flags=$4 out=()
  has_flag "$flags" uc && out+=(-c UC)
  has_flag "$flags" ud && out+=(-c UD)
  # -R: the client reaches the appliance through its rdma_cm perftest listener.
  has_flag "$flags" R && out+=(--rdma-cm perftest)
  # --use-srq: as perftest's server given it, the session's QPs share one receive queue.
  has_flag "$flags" srq && out+=(--use-srq)
  # -b: perftest's server is given -b and the client's -s (or -a) and -n; so is ours.
  if has_flag "$flags" b; then
    out+=(--perftest "ib_${verb}_bw" -b -n "$iters")
    if has_flag "$flags" all; then out+=(-a); elif [[ $verb != atomic ]]; then out+=(-s "$size"); fi
    # and its -D / --run_infinitely
    local f
    for f in ${flags//,/ }; do [[ $f == D[0-9]* ]] && out+=(-D "${f#D}"); done
    has_flag "$flags" inf && out+=(--run_infinitely)
  fi
  if has_flag "$flags" lat; then
    case $verb in
      write) out+=(--perftest ib_write_lat -n "$iters")
        if has_flag "$flags" all; then out+=(-a); else out+=(-s "$size"); fi ;;
      send) out+=(--perftest ib_send_lat) ;;
    esac
  fi
  echo "${out[*]}"
}

cases_quick() {
  cat <<'LIST'
pingpong/gen>rxe/m1024/s4096            to-rxe   pingpong 1024 0 4096 8
pingpong/rxe>app/m1024/s4096            from-rxe pingpong 1024 0 4096 8
write/gen>rxe/m4096/s65536              to-rxe   write    4096 0 65536 16
read/rxe>app/m1024/s65536               from-rxe read     1024 0 65536 16
LIST
}

# Sizes: 1 B (one packet, no payload split), 64 KiB (64 or 16 packets per message), 1 MiB (1024
# or 256; perftest runs at least 5 iterations); every size at MTU 1024, the large ones again at
# 4096. The 5 % loss cases use 100 x 4 KiB at MTU 1024 (when the guest only answers, 100 ACKs:
# a few are lost) and 5 x 1 MiB at 4096. Iterations are few: the guest runs rxe under TCG at a few MB/s.
# cases_base [ci]: with "ci", CI's list leaves out the cases whose feature another CI case of the
# same direction also runs (--full runs them all):
#   1 MiB at MTU 1024, 64 KiB at MTU 4096 and the 8-byte atomic at MTU 4096 (the middle sizes:
#     the smallest and largest message at each MTU stay);
#   64 KiB at MTU 1024 (multi-packet messages at MTU 1024 without loss: the exchange's -q cases
#     at 4 KiB, for every verb and direction; with loss: the loss5 cases at 4 KiB);
#   pingpong at MTU 4096 (pingpong at 1024 with 4-packet messages stays; MTU 4096 is in the
#     1 MiB cases);
#   the lossless 8-byte atomic (the loss5 atomic case is the same run under 5 % loss);
#   ud-pingpong at 1 KiB (the 4 KiB case, UD's largest message at MTU 4096, stays).
cases_base() {
  local dir kind verb ci=${1:-}
  for dir in to-rxe from-rxe; do
    [[ $dir == to-rxe ]] && kind="gen>rxe" || kind="rxe>app"
    echo "pingpong/$kind/m1024/s4096 $dir pingpong 1024 0 4096 16"
    [[ -n $ci ]] || echo "pingpong/$kind/m4096/s65536 $dir pingpong 4096 0 65536 8"
    for verb in write read send; do
      echo "$verb/$kind/m1024/s1 $dir $verb 1024 0 1 64"
      [[ -n $ci ]] || echo "$verb/$kind/m1024/s65536 $dir $verb 1024 0 65536 16"
      [[ -n $ci ]] || echo "$verb/$kind/m1024/s1048576 $dir $verb 1024 0 1048576 5"
      [[ -n $ci ]] || echo "$verb/$kind/m4096/s65536 $dir $verb 4096 0 65536 16"
      echo "$verb/$kind/m4096/s1048576 $dir $verb 4096 0 1048576 5"
      echo "$verb/$kind/m1024/loss5/s4096 $dir $verb 1024 5 4096 100"
      echo "$verb/$kind/m4096/loss5/s1048576 $dir $verb 4096 5 1048576 5"
    done
    [[ -n $ci ]] || echo "atomic/$kind/m1024/s8 $dir atomic 1024 0 8 64"
    [[ -n $ci ]] || echo "atomic/$kind/m4096/s8 $dir atomic 4096 0 8 64"
    echo "atomic/$kind/m1024/loss5/s8 $dir atomic 1024 5 8 64"
  done
  [[ -n $ci ]] || echo "ud-pingpong/gen>rxe/s1024 to-rxe ud-pingpong 4096 0 1024 16"
  echo "ud-pingpong/gen>rxe/s4096 to-rxe ud-pingpong 4096 0 4096 16"
}

# The exchange and the roles of every perftest test (issue 19): -q 2/4/8 for each verb (perftest's
# latency tests refuse -q), each _lat test, CMP_AND_SWAP, UC, UD and -a, in both directions. Small sizes and few iterations:
# the point is the exchange and who does what, not the data path (the cases above cover that).
cases_exchange_full() {
  local dir kind verb q size
  for dir in to-rxe from-rxe; do
    [[ $dir == to-rxe ]] && kind="gen>rxe" || kind="rxe>app"
    for verb in write read send atomic; do
      size=4096
      [[ $verb == atomic ]] && size=8
      for q in 2 4 8; do echo "$verb/$kind/m1024/q$q/s$size $dir $verb 1024 0 $size 16 q$q"; done
      [[ $verb == atomic ]] || size=64
      echo "$verb-lat/$kind/m1024/s$size $dir $verb 1024 0 $size 16 lat"
      [[ $verb == atomic ]] || size=65536
      echo "$verb-lat/$kind/m4096/s$size $dir $verb 4096 0 $size 8 lat"
    done
    echo "atomic/$kind/m1024/cas/s8 $dir atomic 1024 0 8 16 cas"
    echo "atomic/$kind/m1024/cas/q2/s8 $dir atomic 1024 0 8 16 cas,q2"
    echo "atomic-lat/$kind/m1024/cas/s8 $dir atomic 1024 0 8 16 lat,cas"
    echo "write/$kind/m1024/uc/s4096 $dir write 1024 0 4096 16 uc"
    echo "send/$kind/m1024/uc/s4096 $dir send 1024 0 4096 16 uc"
    echo "write-lat/$kind/m1024/uc/s64 $dir write 1024 0 64 16 lat,uc"
    echo "send-lat/$kind/m1024/uc/s64 $dir send 1024 0 64 16 lat,uc"
    echo "send/$kind/m1024/ud/s1024 $dir send 1024 0 1024 16 ud"
    echo "send-lat/$kind/m1024/ud/s64 $dir send 1024 0 64 16 lat,ud"
    echo "send/$kind/m4096/ud/q4/s4096 $dir send 4096 0 4096 16 ud,q4"
    # -a: 2 B to 8 MiB, -n 5 each (perftest's least); UD stops at the MTU.
    echo "send/$kind/m1024/ud/all $dir send 1024 0 0 5 ud,all"
    for verb in write read send; do  # perftest's atomic tests refuse -a
      echo "$verb/$kind/m4096/all $dir $verb 4096 0 0 5 all"
      echo "$verb-lat/$kind/m4096/all $dir $verb 4096 0 0 5 lat,all"
    done
  done
}

# The CI list: every test in both directions, each verb with one -q, and every flag (lat, cas,
# uc, ud, all) at least once per direction, some cases combining two; -a only where it is cheap
# (UD's sweep ends at the MTU; an RC sweep to 8 MiB takes 10-30 s against the emulated guest).
CASES_EXCHANGE_CI=(
  "write/gen>rxe/m1024/q2/s4096" "read/gen>rxe/m1024/q4/s4096" "send/gen>rxe/m1024/q8/s4096"
  "atomic/gen>rxe/m1024/cas/q2/s8" "write-lat/gen>rxe/m1024/s64" "read-lat/gen>rxe/m1024/s64"
  "send-lat/gen>rxe/m1024/uc/s64" "atomic-lat/gen>rxe/m1024/s8" "write/gen>rxe/m1024/uc/s4096"
  "send/gen>rxe/m1024/ud/all" "send-lat/gen>rxe/m1024/ud/s64"
  "write/rxe>app/m1024/q8/s4096" "read/rxe>app/m1024/q2/s4096" "send/rxe>app/m1024/q4/s4096"
  "atomic/rxe>app/m1024/q4/s8" "write-lat/rxe>app/m1024/s64" "write-lat/rxe>app/m1024/uc/s64"
  "read-lat/rxe>app/m1024/s64" "send-lat/rxe>app/m1024/s64" "atomic-lat/rxe>app/m1024/cas/s8"
  "send/rxe>app/m1024/uc/s4096" "send/rxe>app/m1024/ud/all" "send-lat/rxe>app/m1024/ud/s64"
)

cases_exchange_ci() {
  local line
  while read -r line; do
    printf '%s\n' "${CASES_EXCHANGE_CI[@]}" | grep -qxF -- "${line%% *}" && echo "$line"
  done < <(cases_exchange_full)
}

# roce-gen as a drop-in for perftest's client with its common flags, against the real server
# (issue 19): several flags at once, short runs. TOS 98 is DSCP 24 with ECN ECT(0).
cases_flags() {
  echo "write/gen>rxe/m1024/flags/s4096 to-rxe write 1024 0 4096 200 q2,gbits,t32,Q2,l4,T98,mrqp,devflags"
  echo "send/gen>rxe/m1024/flags/s64 to-rxe send 1024 0 64 100 t16,Q4,I64,T98"
  echo "read/gen>rxe/m1024/flags-D2/s65536 to-rxe read 1024 0 65536 5 D2,o4,cpu,gbits"
  echo "write/gen>rxe/m1024/bidir/s65536 to-rxe write 1024 0 65536 16 b"
  # Stopped by a signal, roce-gen closes the exchange the one-way server still waits in (results,
  # "done"), so both programs succeed; a period's row a second.
  echo "write/gen>rxe/m1024/inf-D1/s65536 to-rxe write 1024 0 65536 5 inf,D1"
  # The real clients of the same: ib_write_bw -b against the appliance told -b, and an endless
  # ib_write_bw killed by SIGINT, after which the appliance serves the next client.
  echo "write/rxe>app/m1024/bidir/s65536 from-rxe write 1024 0 65536 16 b"
  echo "write/rxe>app/m1024/inf-D1/s65536 from-rxe write 1024 0 65536 16 inf,D1"
  echo "write/rxe>app/m1024/bidir-D2/s65536 from-rxe write 1024 0 65536 16 b,D2"
}

# More of the same for --full: -b on READ with -D, on atomics, on small WRITEs (the server's
# operations walk our cycle buffer).
cases_flags_full() {
  echo "read/gen>rxe/m1024/bidir-D2/s65536 to-rxe read 1024 0 65536 5 b,D2"
  echo "atomic/gen>rxe/m1024/bidir/s8 to-rxe atomic 1024 0 8 64 b"
  echo "write/gen>rxe/m1024/bidir/s64 to-rxe write 1024 0 64 100 b"
  echo "read/rxe>app/m1024/bidir/s65536 from-rxe read 1024 0 65536 16 b"
  echo "send/rxe>app/m1024/bidir/s4096 from-rxe send 1024 0 4096 64 b"
  echo "write/rxe>app/m1024/uc/bidir/s4096 from-rxe write 1024 0 4096 64 b,uc"
  echo "send/rxe>app/m1024/ud/bidir/s1024 from-rxe send 1024 0 1024 64 b,ud"
  echo "send/rxe>app/m1024/uc/bidir/s4096 from-rxe send 1024 0 4096 64 b,uc"
  echo "write/rxe>app/m1024/q2/bidir/s4096 from-rxe write 1024 0 4096 64 b,q2"
  echo "send/gen>rxe/m1024/ud/bidir/s1024 to-rxe send 1024 0 1024 64 b,ud"
  # UD datagrams take the traffic class of the address handle they go through (issue 27): -T 98
  # in roce-gen's AHs, every datagram of ours with TOS 0x62.
  echo "send/gen>rxe/m1024/ud/T98/s1024 to-rxe send 1024 0 1024 16 ud,T98"
  echo "send/gen>rxe/m1024/bidir/s4096 to-rxe send 1024 0 4096 64 b"
  echo "send/gen>rxe/m1024/uc/bidir-D2/s4096 to-rxe send 1024 0 4096 16 b,uc,D2"
  echo "read/rxe>app/m1024/bidir-D2/s65536 from-rxe read 1024 0 65536 16 b,D2"
  echo "send/rxe>app/m1024/bidir-D2/s4096 from-rxe send 1024 0 4096 16 b,D2"
  echo "write/rxe>app/m1024/bidir-inf-D1/s65536 from-rxe write 1024 0 65536 16 b,inf,D1"
  echo "write/rxe>app/m1024/bidir/all from-rxe write 1024 0 0 5 b,all"
  # ibv_srq_pingpong's client (256 records each way, the unused ones zeroed) against the
  # appliance: its default 16 QPs, and -q 4 with messages of 3 packets.
  echo "srq-pingpong/rxe>app/m1024/s4096 from-rxe srq-pingpong 1024 0 4096 16"
  echo "srq-pingpong/rxe>app/m1024/q4/s3000 from-rxe srq-pingpong 1024 0 3000 16 q4"
  # perftest's --use-srq (issue 27), on both sides: the wire and the exchange are as without it
  # (the SRQ number in the record stays 0, as perftest fills it for XRC only); each side with an
  # SRQ takes its receives from it: perftest's server, and a client's SEND latency test or -b
  # (the guest's perftest and roce-gen alike); the appliance given --use-srq as its server.
  local dir kind
  for dir in to-rxe from-rxe; do
    [[ $dir == to-rxe ]] && kind="gen>rxe" || kind="rxe>app"
    echo "send/$kind/m1024/srq/q4/s4096 $dir send 1024 0 4096 200 srq,q4"
    echo "send-lat/$kind/m1024/srq/s64 $dir send 1024 0 64 200 srq,lat"
    echo "send/$kind/m1024/srq/bidir/s4096 $dir send 1024 0 4096 100 srq,b"
  done
  # UD over perftest's SRQ: its server stocks the SRQ with -r receives (at most -n) for all its
  # QPs together, and a datagram that finds none is gone (no RNR on UD): -q 2 -n 100 sends 200
  # into 100 receives, and perftest's server then waits for ever (seen live). One QP against
  # the guest; two against the appliance, whose SRQ is refilled at its limit event.
  echo "send/gen>rxe/m1024/ud/srq/s1024 to-rxe send 1024 0 1024 100 srq,ud"
  echo "send/rxe>app/m1024/ud/srq/q2/s1024 from-rxe send 1024 0 1024 100 srq,ud,q2"
}

# RoCE over IPv6 (issue 27): the guest's fd77:: GID, our --ip fd77::10, neighbour discovery both
# ways. RC WRITE/READ/SEND, the verbs pingpongs and UD in both directions, and one lossy case.
cases_ipv6() {
  local dir kind verb
  for dir in to-rxe from-rxe; do
    [[ $dir == to-rxe ]] && kind="gen>rxe" || kind="rxe>app"
    echo "pingpong/$kind/v6/m1024/s4096 $dir pingpong 1024 0 4096 16 v6"
    for verb in write read send; do echo "$verb/$kind/v6/m1024/s65536 $dir $verb 1024 0 65536 16 v6"; done
    echo "send/$kind/v6/m1024/ud/s1024 $dir send 1024 0 1024 16 ud,v6"
  done
  echo "ud-pingpong/gen>rxe/v6/s1024 to-rxe ud-pingpong 4096 0 1024 16 v6"
  echo "write/gen>rxe/v6/m1024/loss5/s4096 to-rxe write 1024 5 4096 100 v6"
}

# The default list (CI: scripts/test.d/60-interop.sh) and --full; the verbs device's cases are
# in verbs.sh.
cases_ci() { cases_agent; cases_base ci; cases_exchange_ci; cases_flags; cases_verbs_ci; cases_cm_ci; cases_nvmf_ci; }
cases_full() { cases_agent; cases_base; cases_exchange_full; cases_flags; cases_flags_full; cases_ipv6; cases_verbs_full; cases_cm_full; cases_nvmf_full; }

known_failure() {
  local name=$1 entry
  for entry in "${KNOWN_FAILURES[@]}"; do
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    [[ $name == ${entry%%|*} ]] && { echo "${entry#*|}"; return 0; }
  done
  return 1
}

# First row of a perftest-style table (#bytes #iterations peak avg Mpps): the average in MB/s (or
# Gb/s under --report_gbits) and, for small messages where that rounds to nothing, the message rate.
bw_figure() {
  awk '/BW average\[Gb\/sec\]/ { unit = "Gb/s" }
    $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {
    if ($1 < 4096) printf "%.0fmsg/s", $5 * 1e6; else printf "%s%s", $4, unit ? unit : "MB/s"; exit }' "$1"
}
# roce-gen's latency table: typical microseconds (column 5).
lat_figure() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 9 { print $5; exit }' "$1"; }
# perftest's latency table (#bytes #iterations t_min t_max t_typical ...): t_typical.
perftest_lat_figure() {
  awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 7 { printf "%sus", $5; exit }' "$1"
}

# case_begin NAME: every case's start: its directory CASE_DIR (made), CASE_T0, and the results
# (CASE_VERDICT, CASE_FIGURE, CASE_NOTE, CASE_CAPTURE, CASE_SECONDS) reset, so that a case that
# returns early never reports the previous case's figures.
case_begin() {
  CASE_DIR=$OUT_DIR/cases/${1//[\/>]/_}
  mkdir -p "$CASE_DIR"
  CASE_VERDICT=FAIL CASE_FIGURE="-" CASE_NOTE="" CASE_CAPTURE="-" CASE_SECONDS="?" CASE_T0=$SECONDS
}

# run_case LINE: runs one case; sets CASE_VERDICT (pass/FAIL), CASE_FIGURE, CASE_NOTE and CASE_DIR
# (its logs and capture).
run_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  ENGINE_ROCE_IP=""  # NET_ENGINE_IP unless this case says otherwise (v6)
  is_verbs_kind "$kind" && { run_verbs_case "$1"; return; }
  is_cm_kind "$kind" && { run_cm_case "$1"; return; }
  is_nvmf_kind "$kind" && { run_nvmf_case "$1"; return; }
  is_agent_kind "$kind" && { run_agent_case "$1"; return; }
  case_begin "$name"
  local dir=$CASE_DIR tool args ok=1
  tool=$(guest_tool "$verb" "$flags")
  args=$(guest_args "$verb" "$mtu" "$size" "$iters" "$flags")
  # The RoCE addresses of both sides (IPv6 cases: the fd77:: ones).
  local our_ip=$NET_ENGINE_IP peer_ip=$NET_GUEST_IP
  has_flag "$flags" v6 && our_ip=$NET_ENGINE_IP6 peer_ip=$NET_GUEST_IP6
  ENGINE_ROCE_IP=$our_ip

  if [[ $kind == from-rxe ]]; then
    local app_args
    app_args=$(appliance_args "$verb" "$size" "$iters" "$flags")
    # shellcheck disable=SC2086  # options are words
    appliance_keep "$mtu" $app_args || return
  else
    appliance_none
  fi
  if [[ $loss != 0 ]]; then
    guest_run 10 "/sbin/tc qdisc add dev eth0 root netem loss $loss%" || { CASE_NOTE="netem: $GUEST_OUT"; return; }
  fi
  capture_start "$dir/capture.pcap"

  if [[ $kind == to-rxe ]]; then
    # Wait for the server's TCP port, or for the server to end (bad arguments).
    # (One line: the guest agent reads a command per line.)
    if has_flag "$flags" R; then
      # -R: the server listens on rdma_cm, not on a TCP port: it is given a second to bind.
      guest_run 20 "bg server $tool $args; sleep 1; [ ! -f /tmp/server.rc ]" > /dev/null
    else
      guest_run 40 "bg server $tool $args; s=0; until netstat -ltn | grep -q ':18515 '; do [ -f /tmp/server.rc ] || [ \$s -ge 200 ] && exit 1; sleep 0.1; s=\$((s + 1)); done" > /dev/null
    fi
    if [[ $? != 0 ]]; then
      ok=0 CASE_NOTE="guest server did not listen"
    fi
    local gen_args=()
    # QP timeout 17 (537 ms) instead of perftest's 14 (67 ms): the emulated rxe takes longer
    # than 67 ms to answer a 1 MiB READ or to catch up with a burst, and it replays every
    # re-issued READ in full and in order, so with 14 our re-issues queue up behind each other
    # until retry_cnt runs out (docs/interop.md).
    case $verb in
      pingpong) gen_args=(pingpong -s "$size" -n "$iters" -m "$mtu" -u 17) ;;
      ud-pingpong) gen_args=(ud-pingpong -s "$size" -n "$iters") ;;
      # No --verify: it READs back what was written (and WRITEs what is to be read), and a
      # perftest server grants its QP and MR only the access of its own verb.
      *)
        # shellcheck disable=SC2046  # options are words
        gen_args=("$verb" $(size_flag "$verb" "$size" "$flags") -n "$iters" -m "$mtu" -u 17 $(perftest_flags "$flags")
                  $(gen_flags "$flags"))
        has_flag "$flags" lat && gen_args+=(--lat) ;;
    esac
    # --run_infinitely ends by a signal only: SIGINT after its third row.
    local GEN_STOP_ROWS=""
    has_flag "$flags" inf && GEN_STOP_ROWS=3
    if ((ok)); then
      # -R: rdma_cm connects to the guest's RoCE address (v6: its fd77:: one); otherwise the
      # TCP exchange's IPv4 one.
      local gen_server=$NET_GUEST_IP
      has_flag "$flags" R && gen_server=$peer_ip
      gen_run "$dir/roce-gen.log" "${gen_args[@]}" --server "$gen_server" || { local grc=$?; ok=0; CASE_NOTE="roce-gen exit $grc: $(grep -m1 'roce-gen:' "$dir/roce-gen.log" || tail -3 "$dir/roce-gen.log" | tr '\n' ' ')"; }
      grep -q "MISMATCH" "$dir/roce-gen.log" && { ok=0; CASE_NOTE="data check failed"; }
    fi
    # A server whose client failed may wait for ever (ib_write_lat polls its memory): 10 s then.
    if ((ok)); then guest_run 90 "fg server 60"; else guest_run 40 "fg server 10"; fi
    local grc=$?
    printf '%s' "$GUEST_OUT" > "$dir/guest.log"
    ((grc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest $tool exit $grc"; }
    if [[ $verb == *pingpong ]] || has_flag "$flags" lat; then
      CASE_FIGURE=$(lat_figure "$dir/roce-gen.log")
      [[ -n $CASE_FIGURE ]] && CASE_FIGURE="${CASE_FIGURE}us"
      [[ $verb == *pingpong ]] && ! grep -q "iters in" "$dir/guest.log" && { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest did not finish its iterations"; }
    else
      CASE_FIGURE=$(bw_figure "$dir/roce-gen.log")
    fi
    # perftest's printout: the test's header and its table's columns.
    if ((ok)) && [[ $verb != *pingpong ]]; then
      grep -q "^                    .* Test$" "$dir/roce-gen.log" && grep -q "^ #bytes" "$dir/roce-gen.log" ||
        { ok=0; CASE_NOTE+="${CASE_NOTE:+; }no perftest header or table"; }
      # A sweep's BW peak is a rate some interval of the run really carried: never the bursts of
      # coalesced completions (8000 MB/s on a 20 MB/s link once). 10x the average is far above
      # what a 5-operation row can show.
      if has_flag "$flags" all && ! has_flag "$flags" lat; then
        local peak_bad
        peak_bad=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 && $3 > 10 * $4 && $3 > 0.05 {
          printf "%s B: peak %s, average %s", $1, $3, $4; exit }' "$dir/roce-gen.log")
        [[ -z $peak_bad ]] || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }BW peak above 10x the average ($peak_bad)"; }
      fi
      if has_flag "$flags" inf; then
        local rows
        rows=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5' "$dir/roce-gen.log" | wc -l)
        ((rows >= 2)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }--run_infinitely: $rows rows, not one per -D period"; }
        [[ -n $(bw_figure "$dir/guest.log") ]] || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }the server printed no result row"; }
      fi
      if has_flag "$flags" gbits && ! grep -q "BW peak\[Gb/sec\]" "$dir/roce-gen.log"; then
        ok=0 CASE_NOTE+="${CASE_NOTE:+; }no Gb/sec columns"
      fi
    fi
    local rt
    rt=$(grep -o 'retransmitted packets [0-9]*, NAKs [0-9]*, timeouts [0-9]*' "$dir/roce-gen.log")
    [[ -n $rt ]] && CASE_NOTE+="${CASE_NOTE:+; }${rt/retransmitted packets/retx}"
  else
    local app_lines
    app_lines=$(wc -l < "$APPLIANCE_LOG")
    if has_flag "$flags" inf; then
      # perftest's endless client ends only by a signal: SIGINT after 12 s (a row a second once
      # connected), then the same test without --run_infinitely against the same appliance. The
      # client prints to the agent's terminal: into a file or pipe its rows would stay in its stdio
      # buffer and die with it. It runs in the foreground (a background job of a non-interactive
      # shell ignores SIGINT). The guest's busybox has pidof, no pkill.
      # -b: an appliance told -b --run_infinitely serves only that, so the next client is another
      # endless one (perftest's client has no other end); each must be ended by the SIGINT (130).
      local run runs=1 inf_rows inf_ip=$NET_BRIDGE_IP
      has_flag "$flags" b && runs=2
      has_flag "$flags" R && inf_ip=$NET_ENGINE_IP  # -R: rdma_cm resolves the engine's RoCE address
      for ((run = 1; run <= runs; run++)); do
        guest_run 90 "(sleep 12; kill -INT \$(pidof $tool)) & timeout 60 $tool $args $inf_ip; echo \"exit status \$?\""
        printf '%s' "$GUEST_OUT" > "$dir/guest_inf$run.log"
        inf_rows=$(grep -cE '^ *[0-9]+ +[0-9]+ +[0-9.]+ ' "$dir/guest_inf$run.log")
        ((inf_rows >= 3)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }--run_infinitely (run $run): $inf_rows rows before SIGINT"; }
        if has_flag "$flags" b && ! grep -q "exit status 130" "$dir/guest_inf$run.log"; then
          ok=0 CASE_NOTE+="${CASE_NOTE:+; }--run_infinitely (run $run) did not end by the SIGINT: $(grep -m1 'exit status' "$dir/guest_inf$run.log")"
        fi
      done
      args=$(guest_args "$verb" "$mtu" "$size" "$iters" "$(has_flag "$flags" R && echo R)")
    fi
    local grc=0
    if has_flag "$flags" inf && has_flag "$flags" b; then
      cp "$dir/guest_inf2.log" "$dir/guest.log"
    else
      # -R: rdma_cm resolves the engine's RoCE address (the exchange runs there too).
      local server_ip=$NET_BRIDGE_IP
      has_flag "$flags" R && server_ip=$our_ip
      guest_run 150 "timeout 120 $tool $args $server_ip"
      grc=$?
      printf '%s' "$GUEST_OUT" > "$dir/guest.log"
    fi
    if ((grc != 0)); then
      ok=0 CASE_NOTE+="${CASE_NOTE:+; }guest $tool exit $grc: $(grep -m1 -iE 'error|fail|couldn' "$dir/guest.log")"
    fi
    if has_flag "$flags" inf; then
      # The killed client's session ends quietly: no error line from the appliance.
      sleep 0.5
      tail -n +"$((app_lines + 1))" "$APPLIANCE_LOG" > "$dir/appliance.log"
      local app_errors
      app_errors=$(grep -ciE 'error|fail' "$dir/appliance.log")
      ((app_errors == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }appliance: $app_errors error line(s): $(grep -m1 -iE 'error|fail' "$dir/appliance.log")"; }
    fi
    if [[ $verb == pingpong || $verb == srq-pingpong ]]; then
      CASE_FIGURE=$(awk '/usec\/iter/ { print $(NF-1) "us/iter"; exit }' "$dir/guest.log")
      grep -q "iters in" "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }no iterations reported"; }
    elif has_flag "$flags" lat; then
      CASE_FIGURE=$(perftest_lat_figure "$dir/guest.log")
      [[ -n $CASE_FIGURE ]] || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }no result line"; }
    else
      CASE_FIGURE=$(bw_figure "$dir/guest.log")
      [[ -n $CASE_FIGURE ]] || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }no result line"; }
    fi
  fi

  capture_stop
  if [[ $loss != 0 ]]; then
    guest_run 10 "/sbin/tc -s qdisc show dev eth0; /sbin/tc qdisc del dev eth0 root"
    CASE_NOTE+="${CASE_NOTE:+; }netem dropped $(grep -o 'dropped [0-9]*' <<< "$GUEST_OUT" | head -1 | cut -d' ' -f2)"
  fi
  local pmtu=$mtu
  [[ $verb == ud-pingpong ]] && pmtu=0
  local sender=ours
  [[ $kind == to-rxe ]] || sender=peer
  capture_verdict "$dir" "$peer_ip" "$pmtu" "$flags" "$sender" "$our_ip" || ok=0
  # -T: every RoCEv2 frame of ours carries that TOS byte.
  local tos
  tos=$(tos_of "$flags")
  if [[ -n $tos && $kind == to-rxe ]]; then
    local ours mine
    ours=$(tcpdump -r "$dir/capture.pcap" -nn -v "src host $NET_ENGINE_IP and udp dst port 4791" 2>/dev/null | grep -c "(tos ")
    mine=$(tcpdump -r "$dir/capture.pcap" -nn -v "src host $NET_ENGINE_IP and udp dst port 4791" 2>/dev/null | grep -c "($tos,")
    if ((ours == 0 || mine != ours)); then
      ok=0 CASE_NOTE+="${CASE_NOTE:+; }-T: $mine of $ours frames with $tos"
    else
      CASE_NOTE+="${CASE_NOTE:+; }$ours frames with $tos"
    fi
  fi
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# capture_verdict DIR PEER_IP PMTU FLAGS SENDER [OUR_IP]: the capture check of a case's capture
# (our side is OUR_IP, default NET_ENGINE_IP); sets CASE_CAPTURE, fails when the check does. UC and UD bandwidth tests send
# one way (SENDER: ours or peer), and nothing is acknowledged.
capture_verdict() {
  local dir=$1 peer=$2 pmtu=$3 flags=$4 sender=$5 ours=${6:-$NET_ENGINE_IP} one_way=()
  if { has_flag "$flags" uc || has_flag "$flags" ud; } && ! has_flag "$flags" lat && ! has_flag "$flags" b; then
    one_way=(--one-way "$sender")
  fi
  if "$BUILD_DIR/tests/interop/interop_capture_check" "$dir/capture.pcap" --ours "$ours" \
      --peer "$peer" --pmtu "$pmtu" "${one_way[@]}" > "$dir/capture_check.txt" 2>&1; then
    CASE_CAPTURE=ok
  else
    CASE_CAPTURE=FAIL
    return 1
  fi
}

# case_dump DIR: the tails of a failed case's logs and of its capture, for the run's output.
case_dump() {
  local dir=$1 f
  for f in "$dir"/*.log "$dir"/capture_check.txt; do
    [[ -s $f ]] || continue
    echo "---- $(basename "$f") (last 25 lines)"
    tail -25 "$f" | sed 's/^/    /'
  done
  [[ -s $dir/capture.pcap ]] || return 0
  echo "---- capture.pcap: the last 40 frames (seconds, source, destination, PSN, AETH syndrome, summary)"
  if command -v tshark >/dev/null; then
    tshark -r "$dir/capture.pcap" -T fields -E separator=' ' -e frame.time_relative -e ip.src -e ip.dst \
      -e infiniband.bth.psn -e infiniband.aeth.syndrome -e _ws.col.Info 2>/dev/null | tail -40 | sed 's/^/    /'
  else
    tcpdump -r "$dir/capture.pcap" -nn -tt 2>/dev/null | tail -40 | sed 's/^/    /'
  fi
}

capture_start() {
  CAPTURE_FILE=$1
  # --immediate-mode: without it packets wait in the kernel's TPACKET_V3 blocks, and a stop
  # under load lost a whole case ("132 packets received by filter, 0 captured").
  ip netns exec "$NETNS" tcpdump -i veng0-br --immediate-mode -s 0 -U -B 16384 -w "$CAPTURE_FILE" > "$CAPTURE_FILE.log" 2>&1 &
  CAPTURE_PID=$!
  local i
  for i in $(seq 50); do grep -q "listening on" "$CAPTURE_FILE.log" 2>/dev/null && return 0; sleep 0.1; done
}

capture_stop() {
  [[ -n ${CAPTURE_PID:-} ]] || return 0
  sleep 0.5
  kill -INT "$CAPTURE_PID" 2>/dev/null
  wait "$CAPTURE_PID" 2>/dev/null
  CAPTURE_PID=""
}
