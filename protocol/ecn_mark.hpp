// The ECN field of an Ethernet frame, as a switch sees it: found behind up to two VLAN tags in
// an IPv4 or IPv6 header, read, and set to CE. Plain byte spans (no DPDK): the link emulator's
// bottleneck marks with it, and so does a dataplane loop for its own receive overruns
// (dataplane/overrun.hpp). The RoCEv2 ICRC masks the ECN bits, so a mark
// never invalidates it; the IPv4 header checksum does cover them and is updated here.
#pragma once

#include <cstddef>
#include <optional>

#include "protocol/be.hpp"
#include "protocol/headers.hpp"

namespace roce::proto {

struct EcnLocation {
  bool ipv6 = false;
  std::size_t l3_offset = 0;  // where the IP header starts
};

// nullopt for frames that are not IP (ARP, ...) or too short to hold the IP header.
std::optional<EcnLocation> locate_ecn(proto::ByteSpan frame) noexcept;
proto::Ecn read_ecn(proto::ByteSpan frame, const EcnLocation& at) noexcept;
// Sets CE; for IPv4 the header checksum is updated incrementally (RFC 1624), so a header
// that arrived with a bad checksum keeps a bad one.
void set_ce(proto::MutableByteSpan frame, const EcnLocation& at) noexcept;

}  // namespace roce::proto
