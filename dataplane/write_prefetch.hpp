// Where a received WRITE will store its first bytes, asked for a couple of frames ahead. A worker
// whose QPs write many regions waits otherwise on a read-for-ownership per 64 B message: the
// hardware prefetcher follows one sequential stream, not sixteen (docs/perf-changes.md
// section 29). Only what a prefetch needs is looked at; the engine checks everything when the
// frame's turn comes, and a prefetch of a wrong address costs a cache line, never a fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "lib/rdma/memory.hpp"
#include "protocol/be.hpp"
#include "protocol/headers.hpp"
#include "protocol/opcode.hpp"

namespace roce::dp {

// The local address an RC or UC WRITE_FIRST / WRITE_ONLY (with or without immediate) in `frame`
// writes first, from its RETH through `mrs`; nullptr for any other frame, or a key or range
// the table does not hold.
const std::byte* write_destination(std::span<const std::byte> frame, const rdma::MrTable& mrs) noexcept;

// The same for a worker's frames one after the other, with the region the last R_Key named
// remembered (rdma::RememberedRegion: one acquire load tests that the key still names it; never a
// window): a stream of WRITEs into one region looks its key up once, not per frame (64 B: 68
// instructions a frame for write_destination, docs/perf-changes.md section 47). Kept across
// bursts: a prefetch only reads ahead. Frames over IPv4 without VLAN tag or IP options (every
// frame of such an endpoint) are read at fixed offsets; any other takes the walk.
class WriteDestinations {
 public:
  const std::byte* find(std::span<const std::byte> frame, const rdma::MrTable& mrs) noexcept {
    std::size_t reth = kPlainIpv4Reth;
    if (!plain_ipv4(frame) && (reth = write_reth_offset(frame)) == 0) return nullptr;
    if (!starts_write(static_cast<std::uint8_t>(frame[reth - sizeof(proto::Bth)]))) return nullptr;
    const std::uint32_t rkey = proto::load_header<proto::Be32>(frame, reth + offsetof(proto::Reth, rkey)).get();
    const std::uint64_t va = proto::load_header<proto::Be64>(frame, reth + offsetof(proto::Reth, va)).get();
    return last_.holds(rkey) ? last_.address_of(va) : look_up(rkey, va, mrs);
  }

  // The RETH of a frame that starts a WRITE, bytes from the frame's start; 0 for any other frame
  // (the opcode is not looked at) or one too short to hold it. The general walk, VLAN tags and
  // IPv6 included.
  static std::size_t write_reth_offset(std::span<const std::byte> frame) noexcept;
  // Whether the opcode starts a WRITE with a RETH (FIRST, ONLY, ONLY with immediate; RC or UC).
  static bool starts_write(std::uint8_t opcode) noexcept {
    using proto::Opcode;
    constexpr auto bit = [](Opcode op) { return std::uint64_t{1} << proto::raw(op); };
    constexpr std::uint64_t kStarts = bit(Opcode::RcWriteFirst) | bit(Opcode::RcWriteOnly) | bit(Opcode::RcWriteOnlyImm) |
                                      bit(Opcode::UcWriteFirst) | bit(Opcode::UcWriteOnly) | bit(Opcode::UcWriteOnlyImm);
    return opcode < 64 && ((kStarts >> opcode) & 1) != 0;
  }

 private:
  static constexpr std::size_t kPlainIpv4Reth =
      sizeof(proto::EthernetHeader) + sizeof(proto::Ipv4Header) + sizeof(proto::UdpHeader) + sizeof(proto::Bth);
  // IPv4, no VLAN tag, no IP options, UDP to the RoCEv2 port, long enough for a RETH.
  static bool plain_ipv4(std::span<const std::byte> frame) noexcept {
    constexpr std::size_t ip = sizeof(proto::EthernetHeader);
    constexpr std::size_t udp = ip + sizeof(proto::Ipv4Header);
    return frame.size() >= kPlainIpv4Reth + sizeof(proto::Reth) &&
           proto::load_header<proto::Be16>(frame, offsetof(proto::EthernetHeader, ether_type)).get() == proto::kEtherTypeIpv4 &&
           frame[ip] == std::byte{0x45} && frame[ip + offsetof(proto::Ipv4Header, protocol)] == std::byte{proto::kIpProtoUdp} &&
           proto::load_header<proto::Be16>(frame, udp + offsetof(proto::UdpHeader, dst_port)).get() == proto::kRoceV2Port;
  }
  // The key's region from the table (remembered when it is a region), or nullptr.
  const std::byte* look_up(std::uint32_t rkey, std::uint64_t va, const rdma::MrTable& mrs) noexcept;

  rdma::RememberedRegion last_;
};

}  // namespace roce::dp
