// Where a received WRITE will store its first bytes, asked for a couple of frames ahead. A worker
// whose QPs write many regions waits otherwise on a read-for-ownership per 64 B message: the
// hardware prefetcher follows one sequential stream, not sixteen (docs/perf-changes.md
// section 29). Only what a prefetch needs is looked at; the engine checks everything when the
// frame's turn comes, and a prefetch of a wrong address costs a cache line, never a fault.
#pragma once

#include <atomic>
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
// remembered: a stream of WRITEs into one region looks its key up once, not per frame (64 B:
// 68 instructions a frame for write_destination, docs/perf-changes.md section 47). A remembered
// key is tested again with one acquire load of the word MrTable::find tests (published_key), so
// a deregistration or an invalidation since is seen as find would see it; only regions are
// remembered (a window's range changes with each bind under the same key). What a region's key
// names (address, iova, length) does not change while the key is published: a new registration
// in the slot publishes another generation. Frames over IPv4 without VLAN tag or IP options
// (every frame of such an endpoint) are read at fixed offsets; any other takes the walk.
class WriteDestinations {
 public:
  const std::byte* find(std::span<const std::byte> frame, const rdma::MrTable& mrs) noexcept {
    std::size_t reth = kPlainIpv4Reth;
    if (!plain_ipv4(frame) && (reth = write_reth_offset(frame)) == 0) return nullptr;
    if (!starts_write(static_cast<std::uint8_t>(frame[reth - sizeof(proto::Bth)]))) return nullptr;
    const std::uint32_t rkey = proto::load_header<proto::Be32>(frame, reth + offsetof(proto::Reth, rkey)).get();
    const std::uint64_t va = proto::load_header<proto::Be64>(frame, reth + offsetof(proto::Reth, va)).get();
    if (rkey != rkey_ || published_->load(std::memory_order_acquire) != rkey)
      return look_up(rkey, va, mrs);
    const std::uint64_t at = va - iova_;  // wraps below iova
    return at < length_ ? addr_ + at : nullptr;
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

  // Nothing remembered yet: key 0, which no region has (MrTable::find), and a length of 0.
  static inline const std::atomic<std::uint32_t> kNone{0};
  std::uint32_t rkey_ = 0;  // the region last found under this key ...
  const std::atomic<std::uint32_t>* published_ = &kNone;  // ... the word that says it still names it
  std::byte* addr_ = nullptr;  // ... and the region's address, iova and length
  std::uint64_t iova_ = 0;
  std::uint64_t length_ = 0;
};

}  // namespace roce::dp
