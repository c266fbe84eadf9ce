// What a switch reads and rewrites in an Ethernet frame: where the IP header is (past up to two
// VLAN tags), the destination address, the ECN codepoint, and setting CE the way a congestion
// point marks on dequeue. Frames that are not IPv4/IPv6 are reported as such, never guessed at.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "lib/rdma/address.hpp"
#include "protocol/headers.hpp"

namespace roce::test {

struct IpHeaderAt {
  proto::IpVersion version = proto::IpVersion::V4;
  std::size_t offset = 0;  // of the IPv4/IPv6 header in the frame
};

// Where the IP header starts; nullopt for a frame too short or not carrying IPv4/IPv6.
std::optional<IpHeaderAt> find_ip_header(std::span<const std::byte> frame);
std::optional<rdma::IpAddress> ip_destination(std::span<const std::byte> frame);
// Not-ECT for a frame without an IP header.
proto::Ecn ip_ecn(std::span<const std::byte> frame);

// Sets CE on an ECN-capable (ECT(0)/ECT(1)) frame and, for IPv4, rewrites the header checksum.
// The ICRC masks the TOS/traffic class and the IPv4 checksum, so the RoCE packet stays valid.
// Returns false and leaves the frame alone when it is not IP or not ECN-capable.
bool mark_ce(std::span<std::byte> frame);

}  // namespace roce::test
