// libFuzzer target for IPv6 neighbour discovery (dataplane/ndp.hpp): any bytes as a received
// frame, or (first byte odd) the rest XORed onto a valid solicitation for our address, with its
// checksum made right again when the first byte says so, to reach past the checksum without
// seeds. Besides "no crash, no read past the frame" (ASan/UBSan): a message it believes has a
// correct checksum, and the advertisement it answers with is one the solicitor believes and
// learns our MAC from. Plain byte spans, no DPDK: built from ndp.cpp alone. Build and run:
// scripts/fuzz.sh ndp; meson's fuzz suite runs a short deterministic pass.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>

#include "dataplane/ndp.hpp"

namespace roce::dp {
namespace {

constexpr proto::MacAddr kMyMac{2, 0, 0, 0, 0, 1};
constexpr proto::Ipv6Addr kMyIp{0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr std::size_t kIcmp = sizeof(proto::EthernetHeader) + sizeof(proto::Ipv6Header);

#define FUZZ_CHECK(cond)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "fuzz_ndp invariant violated: %s\n", #cond);       \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

bool checksum_holds(std::span<const std::byte> f) {
  proto::Ipv6Header ip;
  std::memcpy(&ip, f.data() + sizeof(proto::EthernetHeader), sizeof ip);
  const std::size_t len = ip.payload_length.get();
  return len <= f.size() - kIcmp && proto::icmpv6_checksum(ip.src, ip.dst, proto::ByteSpan{f.data() + kIcmp, len}) == 0;
}

void check(std::span<const std::byte> frame) {
  NeighborCache cache;
  std::byte reply[kNdFrameBytes];
  const NdpAction a = handle_ndp(frame, kMyMac, kMyIp, cache, reply);
  if (a == NdpAction::Learned || a == NdpAction::Reply) FUZZ_CHECK(checksum_holds(frame));
  if (a != NdpAction::Reply) return;
  FUZZ_CHECK(checksum_holds(reply));
  proto::Ipv6Header ip;
  std::memcpy(&ip, reply + sizeof(proto::EthernetHeader), sizeof ip);
  NeighborCache theirs;
  std::byte none[kNdFrameBytes];
  FUZZ_CHECK(handle_ndp(reply, proto::MacAddr{2, 0, 0, 0, 0, 2}, ip.dst, theirs, none) == NdpAction::Learned);
  FUZZ_CHECK(theirs.lookup(kMyIp) == kMyMac);
}

}  // namespace
}  // namespace roce::dp

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace roce;
  if (size == 0 || (data[0] & 1) == 0) {
    dp::check({reinterpret_cast<const std::byte*>(data), size});
    return 0;
  }
  // Structured: edits of a valid solicitation (a length byte may shorten it).
  std::byte f[dp::kNdFrameBytes + 32] = {};
  dp::build_neighbor_solicitation({2, 0, 0, 0, 0, 2}, {0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
                                  dp::kMyIp, {f, dp::kNdFrameBytes});
  std::size_t len = dp::kNdFrameBytes;
  if (size > 1 && (data[0] & 4)) len = data[1] % sizeof f;
  for (std::size_t i = 2; i < size && i - 2 < sizeof f; ++i) f[i - 2] ^= std::byte{data[i]};
  if ((data[0] & 2) && len >= dp::kIcmp + 4) {
    proto::Ipv6Header ip;
    std::memcpy(&ip, f + sizeof(proto::EthernetHeader), sizeof ip);
    const std::size_t body = std::min<std::size_t>(ip.payload_length.get(), len - dp::kIcmp);
    f[dp::kIcmp + 2] = f[dp::kIcmp + 3] = std::byte{0};
    const std::uint16_t sum = proto::icmpv6_checksum(ip.src, ip.dst, proto::ByteSpan{f + dp::kIcmp, body});
    f[dp::kIcmp + 2] = std::byte{static_cast<std::uint8_t>(sum >> 8)};
    f[dp::kIcmp + 3] = std::byte{static_cast<std::uint8_t>(sum)};
  }
  dp::check({f, len});
  return 0;
}
