// The out-of-band records real RDMA tools exchange over TCP before their QPs talk
// (../shared/interop/OOB.md): rdma-core's ibv_*_pingpong 52-byte record and perftest's
// 108-byte key record (59 bytes without a GID).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "lib/status.hpp"

namespace roce::client {

inline constexpr std::size_t kPingpongRecordBytes = 52;
inline constexpr std::size_t kPerftestRecordBytes = 108;
inline constexpr std::size_t kPerftestRecordNoGidBytes = 59;

// "LID:QPN:PSN:GID\0" as sprintf("%04x:%06x:%06x:%s") writes it, the GID as 32 hex digits.
struct PingpongDest {
  std::uint16_t lid = 0;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  ibv_gid gid{};
};

std::array<std::byte, kPingpongRecordBytes> format_pingpong(const PingpongDest& d);
Result<PingpongDest> parse_pingpong(std::span<const std::byte> record);

// perftest's KEY_PRINT_FMT_GID: LID:OUT_READS:QPN:PSN:RKEY:VADDR:GID(16 x "%02x:"):SRQN:\0, or
// without a GID (KEY_PRINT_FMT): LID:OUT_READS:QPN:PSN:RKEY:VADDR:SRQN\0
struct PerftestDest {
  std::uint16_t lid = 0;
  std::uint16_t out_reads = 1;
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint32_t rkey = 0;
  std::uint64_t vaddr = 0;
  ibv_gid gid{};
  std::uint32_t srqn = 0;
  bool has_gid = true;
};

std::string format_perftest(const PerftestDest& d);  // with its NUL: 108 or 59 bytes
Result<PerftestDest> parse_perftest(std::span<const std::byte> record);

std::string gid_to_string(const ibv_gid& g);  // "::ffff:10.77.0.2"-style text for messages

}  // namespace roce::client
