#!/bin/bash
# Builds the interop guest: Debian 12's kernel with rdma_rxe, rdma-core's example programs,
# librdmacm's (rping, ucmatose, udaddy, rdma_client, rdma_server: rdmacm-utils, with the kernel's
# rdma_ucm), perftest, iproute2 (ip, tc with netem, rdma) and nvme-cli (with the kernel's nvme_rdma
# host and nvmet_rdma target), e2fsprogs (mkfs.ext4) with the ext4 module, packed into an
# initramfs whose /init is guest/init. Nothing is installed on the host: the .deb files are fetched with
# `apt-get download` and unpacked with `dpkg -x` under the output folder.
#
#   guest/build.sh OUT_DIR      -> OUT_DIR/{vmlinuz,initrd.gz,KVER,stamp}
#
# The image is rebuilt only when it is missing or this script or guest/init changed (the
# stamp holds their hash); the downloaded packages stay in OUT_DIR/debs.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stamp=$(cat "$here/build.sh" "$here/init" | sha256sum | cut -c1-16)
if [[ -f $out/initrd.gz && -f $out/vmlinuz && "$(cat "$out/stamp" 2>/dev/null)" == "$stamp" ]]; then
  exit 0
fi
for tool in depmod:kmod cpio:cpio busybox:busybox-static dpkg-deb:dpkg; do
  command -v "${tool%%:*}" >/dev/null || { echo "guest build: ${tool%%:*} missing (apt-get install ${tool#*:})" >&2; exit 77; }
done
[[ -x /bin/busybox ]] || { echo "guest build: /bin/busybox missing (apt-get install busybox-static)" >&2; exit 77; }

# The kernel the linux-image-amd64 metapackage points at (bookworm: linux-image-6.1.0-NN-amd64).
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[[ -n $kpkg ]] || { echo "guest build: apt knows no linux-image-amd64 (run apt-get update)" >&2; exit 77; }
kver=${kpkg#linux-image-}

# Userspace: the programs the cases run, and every library they load.
pkgs=(
  "$kpkg" ibverbs-providers libibverbs1 librdmacm1 libibumad3 ibverbs-utils perftest iproute2 rdmacm-utils
  libc6 libgcc-s1 libnl-3-200 libnl-route-3-200 libelf1 libmnl0 libbpf1 libcap2 libbsd0 libmd0
  libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libcom-err2 libkrb5support0 libkeyutils1
  libssl3 libxtables12 libdb5.3 libselinux1 libpcre2-8-0 zlib1g libpci3 libudev1
  nvme-cli libnvme1 libjson-c5 libdbus-1-3 libsystemd0 libgcrypt20 libgpg-error0 liblz4-1 liblzma5 libzstd1
  libuuid1 e2fsprogs libext2fs2 libss2 libblkid1
)
debs=$out/debs
mkdir -p "$debs"
(
  cd "$debs"
  for p in "${pkgs[@]}"; do
    compgen -G "${p}_*.deb" >/dev/null || apt-get download -qq "$p" 2>/dev/null ||
      echo "guest build: apt-get download $p failed" >&2
  done
)
compgen -G "$debs/${kpkg}_*.deb" >/dev/null || { echo "guest build: cannot download $kpkg" >&2; exit 77; }

stage=$out/stage root=$out/root
rm -rf "$stage" "$root"
mkdir -p "$stage" "$root"
# Of the kernel package only the boot image, the module lists and the module folders the image
# loads from (unpacking all of it takes minutes on a busy 2-core machine); configfs is rdma_cm's.
for d in "$debs"/*.deb; do
  if [[ $(basename "$d") == "${kpkg}"_* ]]; then
    dpkg-deb --fsys-tarfile "$d" | tar -x -C "$stage" --wildcards --no-wildcards-match-slash \
      "./boot/vmlinuz-*" "./lib/modules/*/modules.*" "./lib/modules/*/kernel/drivers/infiniband" \
      "./lib/modules/*/kernel/drivers/net" "./lib/modules/*/kernel/drivers/virtio" "./lib/modules/*/kernel/net" \
      "./lib/modules/*/kernel/crypto" "./lib/modules/*/kernel/lib" "./lib/modules/*/kernel/fs/configfs" \
      "./lib/modules/*/kernel/drivers/nvme" "./lib/modules/*/kernel/drivers/hwmon" "./lib/modules/*/kernel/block" \
      "./lib/modules/*/kernel/fs/ext4" "./lib/modules/*/kernel/fs/jbd2" "./lib/modules/*/kernel/fs/mbcache.ko"
  else
    dpkg -x "$d" "$stage"
  fi
done
depmod -b "$stage" "$kver"   # the .deb ships no modules.dep

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,lib64}
cp /bin/busybox "$root/bin/"
for applet in $(/bin/busybox --list); do [[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"; done

# Copies a file of the stage into the image at the same path, following symlinks.
# (The target is removed first: busybox's applet links must not be written through.)
put() { local rel=${1#"$stage"/}; mkdir -p "$root/$(dirname "$rel")"; rm -f "$root/$rel"; cp -L "$1" "$root/$rel"; }
libpath=$stage/lib/x86_64-linux-gnu:$stage/usr/lib/x86_64-linux-gnu
programs=(
  usr/bin/ibv_devinfo usr/bin/ibv_rc_pingpong usr/bin/ibv_ud_pingpong usr/bin/ibv_uc_pingpong usr/bin/ibv_srq_pingpong
  usr/bin/ib_write_bw usr/bin/ib_read_bw usr/bin/ib_send_bw usr/bin/ib_atomic_bw
  usr/bin/ib_write_lat usr/bin/ib_read_lat usr/bin/ib_send_lat usr/bin/ib_atomic_lat
  bin/ip sbin/tc usr/bin/rdma usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
  usr/bin/rping usr/bin/ucmatose usr/bin/udaddy usr/bin/rdma_client usr/bin/rdma_server usr/sbin/nvme
  sbin/mke2fs sbin/e2fsck
)
for p in "${programs[@]}"; do
  [[ -e $stage/$p ]] || { echo "guest build: $p is not in the packages" >&2; exit 1; }
  put "$stage/$p"
  deps=$(LD_LIBRARY_PATH=$libpath ldd "$stage/$p")
  if grep -q "not found" <<< "$deps"; then
    echo "guest build: $p needs $(grep "not found" <<< "$deps" | awk '{ print $1 }' | tr '\n' ' ')which no listed package has" >&2
    exit 1
  fi
  while read -r lib; do
    [[ $lib == "$stage"/* ]] || { echo "guest build: $p needs $lib, which no listed package has" >&2; exit 1; }
    put "$lib"
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<< "$deps")
done
put "$stage/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
put "$stage/lib/x86_64-linux-gnu/libgcc_s.so.1"   # glibc loads it at thread exit; ldd does not list it
mkdir -p "$root/etc/libibverbs.d"
cp "$stage/etc/libibverbs.d/rxe.driver" "$root/etc/libibverbs.d/"
# mke2fs reads its defaults (the ext4 features) from here; mkfs.ext4 is mke2fs by another name.
cp "$stage/etc/mke2fs.conf" "$root/etc/"
ln -sf mke2fs "$root/sbin/mkfs.ext4"
# tc finds netem's delay distributions here (loss alone does not need them, but tc looks).
[[ -d $stage/usr/lib/x86_64-linux-gnu/tc ]] && cp -r "$stage/usr/lib/x86_64-linux-gnu/tc" "$root/usr/lib/x86_64-linux-gnu/"
echo "root:x:0:0:root:/:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"

# Kernel modules in load order: virtio networking, the CRC rxe's ICRC uses, rxe itself with the
# verbs user interface, rdma_cm's user interface (librdmacm's programs), netem for the loss cases,
# the kernel's NVMe/RDMA host (nvme_rdma, with nvme_fabrics and nvme_core) for the nvmf cases, its
# NVMe/RDMA target (nvmet_rdma, configured through configfs) as a reference target for roce-gen's
# initiator, and ext4 (with the crc32c its metadata checksums need: a soft dependency modprobe does
# not list) for the file-system case.
: > "$root/etc/modules"
for m in virtio_pci virtio_net crc32_generic rdma_rxe ib_uverbs rdma_ucm sch_netem nvme_rdma nvmet_rdma crc32c_generic ext4; do
  modprobe -d "$stage" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
  put "$ko"
  echo "/${ko#"$stage"/}" >> "$root/etc/modules"
done

cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp "$stage/boot/vmlinuz-$kver" "$out/vmlinuz"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initrd.gz.tmp"
mv "$out/initrd.gz.tmp" "$out/initrd.gz"
echo "$kver" > "$out/KVER"
echo "$stamp" > "$out/stamp"
rm -rf "$stage"
echo "guest image: kernel $kver, initramfs $(du -h "$out/initrd.gz" | cut -f1), modules: $(wc -l < "$root/etc/modules")"
