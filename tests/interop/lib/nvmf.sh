# Sourced by run.sh: NVMe-oF cases (issue 24). The guest kernel's NVMe/RDMA host (nvme_rdma,
# driven by nvme-cli) against roce-appliance --nvmf-subsystem on rdma_cm TCP port 4420:
#
#   nvmf-from-rxe  nvme discover (the discovery controller's log must list our subsystem),
#                  nvme connect, SIZE MiB of random data written with dd to the namespace,
#                  page cache dropped, read back, hashes compared, nvme disconnect. The
#                  namespace is a file on our side: its first SIZE MiB must hash the same as
#                  what the guest wrote.
#
#   nvmf-fs        nvme connect, mkfs.ext4 on the namespace, mount, files written (SIZE MiB of
#                  random data, a second file, a small text), their hashes taken, umount, nvme
#                  disconnect; then connect again, mount, the hashes checked, umount, disconnect.
#                  After the appliance stops, the namespace file on our side is read with
#                  debugfs: every file must be in it with the hash the guest wrote.
#
#   nvmf-to-rxe    the other way round: the guest kernel's own target (nvmet_rdma, configured
#                  through configfs: a 64 MiB file namespace under $NVMF_REF_NQN on the guest's
#                  address, port 4420) and roce-gen's initiator (VERB = nvme-write, nvme-read or
#                  nvme-randrw, SIZE = block size, ITERS = queue depth, FLAGS = more roce-gen
#                  options) with --verify: it writes every block it uses first, checks every
#                  read, and reads the whole range back at the end.
#
# FLAGS v6 (any kind): over IPv6, both sides' fd77:: addresses (the host's rdma_cm and ours
# carry IPv6 in the cma_hdr; nvmet's port is adrfam ipv6).
#
# A case passes only when every guest command succeeds, the guest's written and read-back
# hashes match each other and the appliance's backing file, and the appliance saw the queues go.

NVMF_NQN=nqn.2026-12.io.rocev2-dp:interop-disk

# Under 5 % loss on the guest's egress the guest's rxe at times stalls a queue: after our
# responder NAKs a PSN sequence error (a SEND lost, later ones in), it retransmits only the
# NAKed SEND and, once that is acknowledged, neither the later SENDs nor anything on its
# retransmission timer. The commands in them never arrive; the host's I/O times out after 30 s
# and it resets the controller (and reconnects: the data still verifies, in 150+ s, at times past
# the guest's 120 s). Seen in the captures of 2026-12-05 (docs/nvmf.md, "Still to do").
KNOWN_FAILURES+=("nvmf/rxe>app/loss5/*|the guest's rxe stalls a queue after a sequence-error NAK; the host resets after 30 s (docs/nvmf.md)")

is_nvmf_kind() { [[ $1 == nvmf-* ]]; }

# nvmf_addresses FLAGS: NVMF_OURS and NVMF_PEER (v6: the fd77:: ones) and ENGINE_ROCE_IP.
nvmf_addresses() {
  NVMF_OURS=$NET_ENGINE_IP NVMF_PEER=$NET_GUEST_IP
  has_flag "$1" v6 && NVMF_OURS=$NET_ENGINE_IP6 NVMF_PEER=$NET_GUEST_IP6
  ENGINE_ROCE_IP=$NVMF_OURS
}

NVMF_REF_NQN=nqn.2026-12.io.rocev2-dp:guest-nvmet

# nvmet_guest_setup / nvmet_guest_teardown: the guest's nvmet target, as nvmetcli would make it
# (one command line: the guest agent reads one per line).
nvmet_guest_setup() {
  local c=/sys/kernel/config/nvmet s=/sys/kernel/config/nvmet/subsystems/$NVMF_REF_NQN fam=ipv4
  [[ $NVMF_PEER == *:* ]] && fam=ipv6
  echo "set -e; mount -t configfs none /sys/kernel/config 2>/dev/null || true; dd if=/dev/zero of=/tmp/nvmet.img bs=1048576 count=64 2>/dev/null;"
  echo " mkdir $s; echo 1 > $s/attr_allow_any_host; mkdir $s/namespaces/1; echo -n /tmp/nvmet.img > $s/namespaces/1/device_path;"
  # /tmp is a tmpfs, which has no O_DIRECT: the file backend must use the page cache.
  echo " echo 1 > $s/namespaces/1/buffered_io;"
  echo " echo 1 > $s/namespaces/1/enable; mkdir $c/ports/1; echo rdma > $c/ports/1/addr_trtype; echo $fam > $c/ports/1/addr_adrfam;"
  echo " echo $NVMF_PEER > $c/ports/1/addr_traddr; echo 4420 > $c/ports/1/addr_trsvcid; ln -s $s $c/ports/1/subsystems/; echo NVMET_READY"
}
nvmet_guest_teardown() {
  local c=/sys/kernel/config/nvmet s=/sys/kernel/config/nvmet/subsystems/$NVMF_REF_NQN
  echo "rm -f $c/ports/1/subsystems/$NVMF_REF_NQN; rmdir $c/ports/1; echo 0 > $s/namespaces/1/enable; rmdir $s/namespaces/1; rmdir $s; rm -f /tmp/nvmet.img; dmesg | grep -i nvmet | tail -20"
}

run_nvmf_to_rxe_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  case_begin "$name"
  local dir=$CASE_DIR ok=1
  nvmf_addresses "$flags"
  appliance_none
  capture_start "$dir/capture.pcap"
  guest_run 30 "$(nvmet_guest_setup | tr '\n' ' ')" && grep -q NVMET_READY <<< "$GUEST_OUT" ||
    { ok=0; CASE_NOTE="guest nvmet set-up: $(tr '\n' ' ' <<< "$GUEST_OUT" | cut -c1-200)"; }
  printf '%s\n' "$GUEST_OUT" > "$dir/guest.log"
  local extra=() f
  # FLAGS are roce-gen's own options (v6 aside).
  for f in ${flags//,/ }; do [[ $f == - || $f == v6 ]] || extra+=("$f"); done
  if ((ok)); then
    gen_run "$dir/roce-gen.log" "$verb" --target "$NVMF_PEER" --nqn "$NVMF_REF_NQN" --bs "$size" --qd "$iters" \
      --time 3 --size 16 --verify "${extra[@]}" ||
      { ok=0; CASE_NOTE="roce-gen: $(grep -m1 -E 'roce-gen|errors [1-9]|MISMATCH' "$dir/roce-gen.log" || tail -1 "$dir/roce-gen.log")"; }
  fi
  guest_run 30 "$(nvmet_guest_teardown)"
  printf '%s\n' "$GUEST_OUT" >> "$dir/guest.log"
  capture_stop
  grep -q "^  verify: ok" "$dir/roce-gen.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }roce-gen did not verify"; }
  CASE_FIGURE="$(grep -o 'IOPS [0-9]*' "$dir/roce-gen.log" | head -1)"
  capture_verdict "$dir" "$NVMF_PEER" "$mtu" "-" ours "$NVMF_OURS" || ok=0
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# nvmf_guest_connect: connect to the subsystem and wait for its namespace's block device ($dev).
nvmf_guest_connect() {
  local s=" nvme connect -t rdma -a $NVMF_OURS -s 4420 -n $NVMF_NQN;"
  s+=" dev=''; for i in \$(seq 100); do for d in /sys/class/nvme/nvme*; do"
  s+=" [ \"\$(cat \$d/subsysnqn 2>/dev/null)\" = $NVMF_NQN ] && [ -b /dev/\${d##*/}n1 ] && dev=/dev/\${d##*/}n1; done;"
  s+=" [ -n \"\$dev\" ] && break; sleep 0.1; done; [ -n \"\$dev\" ]; echo DEV \$dev;"
  echo "$s"
}

# nvmf_guest_fs_script SIZE_MIB: the nvmf-fs guest commands; prints "SUM <sha256> <file>" for
# each file written and "VERIFIED" once the second mount read them all back unchanged.
nvmf_guest_fs_script() {
  local mib=$1
  local s="set -e; mkdir -p /mnt/nvmf;"
  s+="$(nvmf_guest_connect)"
  s+=" mkfs.ext4 -q -F -b 4096 \$dev; mount -t ext4 \$dev /mnt/nvmf;"
  s+=" dd if=/dev/urandom of=/mnt/nvmf/big.bin bs=1048576 count=$mib 2>/dev/null;"
  s+=" mkdir /mnt/nvmf/dir; dd if=/dev/urandom of=/mnt/nvmf/dir/small.bin bs=4096 count=37 2>/dev/null;"
  s+=" echo 'written by the guest over NVMe/RDMA' > /mnt/nvmf/hello.txt;"
  s+=" (cd /mnt/nvmf && sha256sum big.bin dir/small.bin hello.txt > /tmp/sums); sed 's/^/SUM /' /tmp/sums;"
  s+=" umount /mnt/nvmf; nvme disconnect -n $NVMF_NQN; echo FIRST_DONE;"
  s+="$(nvmf_guest_connect)"
  s+=" mount -t ext4 \$dev /mnt/nvmf; (cd /mnt/nvmf && sha256sum -c /tmp/sums) && echo VERIFIED;"
  s+=" umount /mnt/nvmf; nvme disconnect -n $NVMF_NQN"
  echo "$s"
}

# nvmf_guest_script SIZE_MIB FLAGS: the guest's commands, one shell line; it prints
# "DISCOVERED", "DEV /dev/...", "WROTE <sha256>", "READ <sha256>" on the way.
nvmf_guest_script() {
  local mib=$1 flags=$2 a=$NVMF_OURS
  local s="set -e; nvme discover -t rdma -a $a -s 4420 > /tmp/disc.txt; cat /tmp/disc.txt;"
  s+=" grep -q 'subnqn: *$NVMF_NQN' /tmp/disc.txt && echo DISCOVERED;"
  s+=" nvme connect -t rdma -a $a -s 4420 -n $NVMF_NQN;"
  s+=" dev=''; for i in \$(seq 100); do for d in /sys/class/nvme/nvme*; do"
  s+=" [ \"\$(cat \$d/subsysnqn 2>/dev/null)\" = $NVMF_NQN ] && [ -b /dev/\${d##*/}n1 ] && dev=/dev/\${d##*/}n1; done;"
  s+=" [ -n \"\$dev\" ] && break; sleep 0.1; done; [ -n \"\$dev\" ]; echo DEV \$dev;"
  s+=" dd if=/dev/urandom of=/tmp/pattern bs=1048576 count=$mib 2>/dev/null;"
  s+=" dd if=/tmp/pattern of=\$dev bs=1048576 conv=fsync 2>&1 | tail -1;"
  s+=" echo WROTE \$(sha256sum < /tmp/pattern | cut -d' ' -f1);"
  s+=" echo 3 > /proc/sys/vm/drop_caches;"
  s+=" echo READ \$(dd if=\$dev bs=1048576 count=$mib 2>/dev/null | sha256sum | cut -d' ' -f1);"
  s+=" nvme disconnect -n $NVMF_NQN; rm -f /tmp/pattern"
  echo "$s"
}

# nvmf_check_fs GUEST_LOG IMG: the second mount verified the files, and the namespace file (the
# appliance stopped) holds an ext4 file system with each file at the hash the guest wrote.
nvmf_check_fs() {
  local log=$1 img=$2 good=1 n=0 sum name got
  grep -q "^VERIFIED" "$log" || { good=0; CASE_NOTE+="${CASE_NOTE:+; }the second mount did not read the files back unchanged"; }
  command -v debugfs >/dev/null || { CASE_NOTE+="${CASE_NOTE:+; }debugfs missing (apt-get install e2fsprogs)"; return 1; }
  while read -r _ sum name; do
    n=$((n + 1))
    got=$(debugfs -R "cat /$name" "$img" 2>/dev/null | sha256sum | cut -d' ' -f1)
    [[ $got == "$sum" ]] || { good=0; CASE_NOTE+="${CASE_NOTE:+; }$name in the namespace file: $got, the guest wrote $sum"; }
  done < <(grep "^SUM " "$log")
  ((n == 3)) || { good=0; CASE_NOTE+="${CASE_NOTE:+; }$n files hashed by the guest, 3 expected"; }
  ((good))
}

run_nvmf_case() {
  local name kind verb mtu loss size iters flags
  read -r name kind verb mtu loss size iters flags <<< "$1"
  [[ $kind == nvmf-to-rxe ]] && { run_nvmf_to_rxe_case "$1"; return; }
  case_begin "$name"
  local dir=$CASE_DIR ok=1
  nvmf_addresses "$flags"
  # A fresh appliance and namespace file per case: the file is what the hashes are checked against.
  appliance_none
  local img=$dir/namespace.img
  rm -f "$img"
  APPLIANCE_N=$((${APPLIANCE_N:-0} + 1))
  appliance_start "$OUT_DIR/appliance_${APPLIANCE_N}_nvmf.log" "$mtu" --nvmf-subsystem "$NVMF_NQN" \
    --nvmf-namespace "file:$img:${iters}M" ||
    { CASE_NOTE="roce-appliance did not start"; return; }
  if [[ $loss != 0 ]]; then
    guest_run 10 "/sbin/tc qdisc add dev eth0 root netem loss $loss%" || { CASE_NOTE="netem: $GUEST_OUT"; appliance_stop; return; }
  fi
  capture_start "$dir/capture.pcap"
  local script
  if [[ $kind == nvmf-fs ]]; then script=$(nvmf_guest_fs_script "$size"); else script=$(nvmf_guest_script "$size" "$flags"); fi
  guest_run 120 "$script"
  local grc=$?
  printf '%s' "$GUEST_OUT" > "$dir/guest.log"
  capture_stop
  if [[ $loss != 0 ]]; then
    guest_run 10 "/sbin/tc -s qdisc show dev eth0; /sbin/tc qdisc del dev eth0 root"
    CASE_NOTE+="${CASE_NOTE:+; }netem dropped $(grep -o 'dropped [0-9]*' <<< "$GUEST_OUT" | head -1 | cut -d' ' -f2)"
  fi
  ((grc == 0)) || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }guest exit $grc: $(grep -m1 -iE 'error|fail|invalid|no such' "$dir/guest.log")"; }
  if [[ $kind == nvmf-fs ]]; then
    appliance_stop
    nvmf_check_fs "$dir/guest.log" "$img" || ok=0
  else
    grep -q "^DISCOVERED" "$dir/guest.log" || { ok=0; CASE_NOTE+="${CASE_NOTE:+; }discovery log did not list $NVMF_NQN"; }
    local wrote read file_hash
    wrote=$(awk '$1 == "WROTE" { print $2 }' "$dir/guest.log")
    read=$(awk '$1 == "READ" { print $2 }' "$dir/guest.log")
    file_hash=$(head -c "$((size * 1048576))" "$img" 2>/dev/null | sha256sum | cut -d' ' -f1)
    if [[ -z $wrote || $wrote != "$read" ]]; then
      ok=0 CASE_NOTE+="${CASE_NOTE:+; }read-back hash ${read:-none} != written ${wrote:-none}"
    elif [[ $file_hash != "$wrote" ]]; then
      ok=0 CASE_NOTE+="${CASE_NOTE:+; }the namespace file does not hold what the guest wrote"
    fi
    appliance_stop
  fi
  cp "$APPLIANCE_LOG" "$dir/appliance.log"
  local accepted
  accepted=$(grep -c "nvmf queue .* accepted" "$dir/appliance.log")
  CASE_FIGURE="${size} MiB, $accepted QPs"
  grep -q "refused\|failed" "$dir/appliance.log" && CASE_NOTE+="${CASE_NOTE:+; }appliance: $(grep -m1 'refused\|failed' "$dir/appliance.log")"
  capture_verdict "$dir" "$NVMF_PEER" "$mtu" "-" ours "$NVMF_OURS" || ok=0
  rm -f "$img"
  CASE_SECONDS=$((SECONDS - CASE_T0))
  ((ok)) && CASE_VERDICT=pass
}

# name kind verb mtu loss size(MiB written) iters(namespace MiB) flags
cases_nvmf_ci() {
  cat <<'LIST'
nvmf/rxe>app/dd4M                       nvmf-from-rxe nvme 4096 0 4 32 -
LIST
}

cases_nvmf_full() {
  cases_nvmf_ci
  cat <<'LIST'
nvmf/rxe>app/loss5/dd4M                 nvmf-from-rxe nvme 4096 5 4 32 -
nvmf/rxe>app/ext4                       nvmf-fs nvme 4096 0 4 32 -
nvmf/app>rxe/write                      nvmf-to-rxe nvme-write 1024 0 4k 16 -
nvmf/app>rxe/randrw                     nvmf-to-rxe nvme-randrw 1024 0 4k 16 --queues,2
nvmf/rxe>app/v6/dd4M                    nvmf-from-rxe nvme 4096 0 4 32 v6
nvmf/app>rxe/v6/write                   nvmf-to-rxe nvme-write 1024 0 4k 16 v6
LIST
}
