// Seeded random RoCEv2 frames for every opcode of the table: the input of the property tests,
// the tshark cross-check, the fuzzer's seed corpus and the benchmarks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "protocol/builder.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::test {

using Rng = std::mt19937_64;

inline std::vector<std::uint8_t> valid_opcodes() {
  std::vector<std::uint8_t> ops;
  for (unsigned op = 0; op < 256; ++op)
    if (proto::opcode_info(static_cast<std::uint8_t>(op)).valid) ops.push_back(static_cast<std::uint8_t>(op));
  return ops;
}

template <typename T>
T uniform(Rng& rng, T lo, T hi) {
  return static_cast<T>(std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng));
}

inline void fill_random(Rng& rng, std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(rng());
}

template <typename T>
void fill_random(Rng& rng, T& obj) {
  fill_random(rng, reinterpret_cast<std::byte*>(&obj), sizeof obj);
}

// Payload lengths the opcode allows (PMTU unknown, so up to 4096). `pad` asks for a length with
// that PadCnt; it is ignored where the rule leaves no choice (FIRST/MIDDLE, no payload, 8 bytes).
inline std::uint32_t random_payload_length(Rng& rng, const proto::OpcodeInfo& info, std::optional<std::uint8_t> pad,
                                           std::uint32_t max_len = proto::kMaxPmtuBytes) {
  using proto::PayloadRule;
  auto with_pad = [&](std::uint32_t lo, std::uint32_t hi) {
    std::uint32_t len = uniform<std::uint32_t>(rng, lo, hi);
    if (!pad) return len;
    len = (len & ~3u) + (4u - *pad) % 4u;  // same multiple of 4, residue giving that PadCnt
    if (len < lo) len += 4;
    if (len > hi) len -= 4;
    return len;
  };
  switch (info.payload) {
    case PayloadRule::None: return 0;
    case PayloadRule::Exactly8: return 8;
    case PayloadRule::ExactPmtu: {
      static constexpr std::array<std::uint32_t, 5> kMtus{256, 512, 1024, 2048, 4096};
      std::uint32_t m;
      do m = kMtus[uniform<std::size_t>(rng, 0, kMtus.size() - 1)];
      while (m > max_len && m != 256);
      return m;
    }
    case PayloadRule::OneToPmtu: return with_pad(1, max_len);
    case PayloadRule::ZeroToPmtu: return with_pad(0, max_len);
  }
  return 0;
}

struct RandomFrameOptions {
  proto::IpVersion ip_version = proto::IpVersion::V4;
  bool with_ethernet = true;
  std::uint8_t vlan_count = 0;
  std::optional<std::uint8_t> pad;  // wanted PadCnt, where the opcode allows a choice
  std::uint32_t max_payload = proto::kMaxPmtuBytes;
};

struct RandomFrame {
  proto::FrameSpec spec;
  std::vector<std::byte> payload;
};

// Every field random, except what a valid RoCEv2 frame pins down: TVer 0, no IPv4 fragment,
// UDP port 4791, and the lengths/PadCnt/checksum/ICRC the builder computes.
inline RandomFrame random_frame(Rng& rng, std::uint8_t opcode, const RandomFrameOptions& o) {
  using namespace proto;
  RandomFrame f;
  FrameSpec& s = f.spec;
  s.with_ethernet = o.with_ethernet;
  s.ip_version = o.ip_version;
  fill_random(rng, s.eth.dst);
  fill_random(rng, s.eth.src);
  s.eth.vlan_count = o.vlan_count;
  for (std::uint8_t i = 0; i < o.vlan_count; ++i) {
    s.eth.vlan_tpid[i] = (o.vlan_count == 2 && i == 0) ? kEtherTypeQinQ : kEtherTypeVlan;
    s.eth.vlan_tci[i] = static_cast<std::uint16_t>(rng());
  }
  fill_random(rng, s.ipv4.src);
  fill_random(rng, s.ipv4.dst);
  s.ipv4.tos = static_cast<std::uint8_t>(rng());
  s.ipv4.id = static_cast<std::uint16_t>(rng());
  s.ipv4.flags_fragment = (rng() & 1) ? Ipv4Header::kDontFragment : 0;
  s.ipv4.ttl = static_cast<std::uint8_t>(rng());
  fill_random(rng, s.ipv6.src);
  fill_random(rng, s.ipv6.dst);
  s.ipv6.traffic_class = static_cast<std::uint8_t>(rng());
  s.ipv6.flow_label = static_cast<std::uint32_t>(rng() & 0xFFFFF);
  s.ipv6.hop_limit = static_cast<std::uint8_t>(rng());
  s.udp_src_port = static_cast<std::uint16_t>(rng());
  s.udp_checksum = (rng() & 3) == 0 ? static_cast<std::uint16_t>(rng()) : 0;

  fill_random(rng, s.bth);
  s.bth.opcode = opcode;
  s.bth.flags = static_cast<std::uint8_t>(s.bth.flags & ~Bth::kTVerMask);
  fill_random(rng, s.ext);

  const OpcodeInfo& info = opcode_info(opcode);
  f.payload.resize(random_payload_length(rng, info, o.pad, o.max_payload));
  fill_random(rng, f.payload.data(), f.payload.size());
  return f;
}

// Builds into a vector sized to the frame.
inline std::vector<std::byte> build(const RandomFrame& f, proto::CrcBackend crc = proto::CrcBackend::Isal) {
  std::vector<std::byte> out(f.payload.size() + 256);
  const auto l = proto::build_frame(f.spec, f.payload, out, crc);
  if (!l.ok()) return {};
  out.resize(l.length);
  return out;
}

}  // namespace roce::test
