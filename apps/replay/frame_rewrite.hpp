// tcprewrite for RoCE: rewrites a captured Ethernet frame in place before it goes out again:
// MAC addresses, IP addresses (a map), the UDP source port, QPNs (a map, in the BTH and the
// DETH) and PSNs (an offset modulo 2^24), then computes the IPv4 header checksum and the ICRC
// again. A frame whose ICRC (or IPv4 checksum) was wrong stays wrong by the same bits, so a
// replay of a capture with deliberate errors still carries them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/rdma/address.hpp"
#include "protocol/be.hpp"
#include "protocol/crc32.hpp"

namespace roce::replay {

struct RewriteRules {
  std::optional<proto::MacAddr> src_mac;
  std::optional<proto::MacAddr> dst_mac;
  std::vector<std::pair<rdma::IpAddress, rdma::IpAddress>> ip_map;  // source and destination addresses
  std::optional<std::uint16_t> udp_sport;
  std::map<std::uint32_t, std::uint32_t> qpn_map;       // BTH destination QP and DETH source QP
  std::uint32_t psn_offset = 0;                         // added to every PSN but a CNP's, mod 2^24

  bool empty() const {
    return !src_mac && !dst_mac && ip_map.empty() && !udp_sport && qpn_map.empty() && psn_offset == 0;
  }
  // Something beyond the Ethernet header changes, so RoCEv2 frames need their ICRC again.
  bool touches_roce() const { return !ip_map.empty() || udp_sport || !qpn_map.empty() || psn_offset != 0; }
};

struct RewriteCounts {
  std::uint64_t frames = 0;           // frames changed at all
  std::uint64_t macs = 0;
  std::uint64_t ips = 0;
  std::uint64_t sports = 0;
  std::uint64_t qpns = 0;
  std::uint64_t psns = 0;
  std::uint64_t icrcs = 0;            // ICRCs computed again
  std::uint64_t icrcs_kept_bad = 0;   // of them, frames whose ICRC was wrong and still is
  std::uint64_t ip_checksums = 0;     // IPv4 header checksums computed again
  std::uint64_t not_roce = 0;         // IP rules not applied: not a RoCEv2 frame (only its MACs change)
};

enum class RewriteOutcome : std::uint8_t { Unchanged, Changed, NotRoce };

// `frame` is a whole Ethernet frame (not cut by a snap length).
RewriteOutcome rewrite_frame(proto::MutableByteSpan frame, const RewriteRules& rules, RewriteCounts& counts,
                             proto::CrcBackend crc = proto::CrcBackend::Isal);

// "10.0.0.1=10.0.1.1" and "5=0x105" style map entries for the command line.
std::optional<std::pair<rdma::IpAddress, rdma::IpAddress>> parse_ip_pair(const std::string& s);
std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_qpn_pair(const std::string& s);

std::string summary(const RewriteCounts& c);

}  // namespace roce::replay
