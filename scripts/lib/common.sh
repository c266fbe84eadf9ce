# Shared by scripts/run.sh and scripts/test.sh (sourced, not run): the Debian 12 packages the
# project needs, installed only when missing, and the meson build in $BUILD_DIR.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"

PACKAGES=(
  build-essential meson ninja-build pkg-config
  libdpdk-dev dpdk dpdk-dev libibverbs-dev libtbb-dev libcxxopts-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpcap-dev libisal-dev zlib1g-dev
  tshark python3-scapy clang libclang-rt-14-dev iproute2 tcpdump
  qemu-system-x86 busybox-static kmod cpio
  perftest ibverbs-utils librdmacm-dev rdmacm-utils
)

log() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The packages of "$@" that dpkg reports as installed, one per line (one dpkg call for all).
# dpkg -s exits 1 when any of them is missing; under pipefail and set -e that status would end
# the calling script silently, before it installs anything, so it is not passed on.
installed_packages() {
  { dpkg -s "$@" 2>/dev/null || true; } | awk '/^Package:/ { p = $2 } /^Status: install ok installed/ { print p }'
}

# apt-get runs only when something is missing, so a re-run costs one dpkg query.
ensure_packages() {
  local missing=() p have
  have=" $(installed_packages "${PACKAGES[@]}" | tr '\n' ' ') "
  for p in "${PACKAGES[@]}"; do [[ "$have" == *" $p "* ]] || missing+=("$p"); done
  if ((${#missing[@]} == 0)); then
    log "packages: all ${#PACKAGES[@]} present"
    return
  fi
  log "packages: installing ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "not root and no sudo: install ${missing[*]}"
    sudo=(sudo)
  fi
  # tshark asks whether non-root users may capture; answer no instead of stopping at a dialog.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' | "${sudo[@]}" debconf-set-selections
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  have=" $(installed_packages "${missing[@]}" | tr '\n' ' ') "
  for p in "${missing[@]}"; do [[ "$have" == *" $p "* ]] || die "package $p did not install"; done
}

# Configures once (with -Dwerror=true, the setting CI builds with), then lets ninja rebuild what
# changed; ninja re-runs meson by itself when a meson.build changes.
configure_and_build() {
  if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
    # ROCE_MESON_SETUP_ARGS: extra options for a new build tree (.ci/run leaves out debug
    # information, which is a third of the compile time and nothing a CI log shows).
    local extra=()
    read -r -a extra <<< "${ROCE_MESON_SETUP_ARGS:-}"
    log "configure: meson setup $BUILD_DIR -Dwerror=true ${extra[*]}"
    meson setup "$BUILD_DIR" "$ROOT" -Dwerror=true "${extra[@]}" >"$ROOT/.meson-setup.log" 2>&1 ||
      { cat "$ROOT/.meson-setup.log" >&2; die "meson setup failed"; }
    rm -f "$ROOT/.meson-setup.log"
  elif ! grep -q '"name": "werror", "value": true' "$BUILD_DIR/meson-info/intro-buildoptions.json" 2>/dev/null; then
    log "configure: meson configure $BUILD_DIR -Dwerror=true"
    meson configure "$BUILD_DIR" -Dwerror=true >/dev/null
  fi
  log "build: ninja -C $BUILD_DIR"
  ninja -C "$BUILD_DIR" >/dev/null || { ninja -C "$BUILD_DIR"; die "build failed"; }
}
