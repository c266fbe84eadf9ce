// What roce-gen's raw packet mode crafts: one RoCEv2 stream described field by field (addressing,
// the opcodes to cycle through with every extension header's fields, PSN pattern, payload,
// ECN marks, deliberate ICRC errors) and the rate it goes out at. Plain data plus validation;
// frame_generator.hpp turns it into frames.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/packet.hpp"

namespace roce::gen {

enum class PsnMode : std::uint8_t {
  Increment,  // start, start+1, ... modulo 2^24
  Fixed,      // every frame carries `psn_start`
  Random,     // uniform 24-bit values from the seed
  Wrap,       // Increment from 8 below 2^24 (unless a start is given), to cross the wrap
};

enum class PayloadPattern : std::uint8_t {
  Zero,       // all bytes 0
  Increment,  // byte i is i mod 256
  Random,     // bytes from the seed (the same block in every frame)
  Byte,       // every byte is `pattern_byte`
};

// "Every Nth frame" (the Nth, 2Nth, ...); n = 0 is never.
struct EveryN {
  std::uint64_t n = 0;
  constexpr bool due(std::uint64_t index) const { return n != 0 && (index + 1) % n == 0; }
  constexpr std::uint64_t count_in(std::uint64_t frames) const { return n ? frames / n : 0; }
};

inline constexpr std::uint32_t kPsnModulus = 1u << 24;
inline constexpr std::uint32_t kWrapLead = 8;  // PsnMode::Wrap starts this many PSNs below 2^24

struct RawStreamSpec {
  // Addressing.
  proto::EthernetFields eth{{0x02, 0, 0, 0, 0, 0x02}, {0x02, 0, 0, 0, 0, 0x01}};
  proto::IpVersion ip_version = proto::IpVersion::V4;
  proto::Ipv4Fields ipv4{{10, 0, 0, 1}, {10, 0, 0, 2}};
  proto::Ipv6Fields ipv6{};
  std::uint8_t dscp = 0;
  std::uint16_t udp_src_port = 0xC000;

  // BTH. Opcodes are used in turn, frame by frame.
  std::vector<std::uint8_t> opcodes{proto::raw(proto::Opcode::RcWriteOnly)};
  std::uint32_t dest_qp = 0x11;
  std::uint16_t pkey = proto::Bth::kDefaultPkey;
  bool solicited = false;
  bool mig_req = false;
  bool ack_req = false;
  bool fecn = false;
  bool becn = false;
  // Field values of every extension header; each frame carries the ones its opcode has. The
  // RETH DMA length left at 0 is set to the frame's payload length (READ requests: size).
  proto::ExtHeaders ext{};

  // PSN pattern: a gap skips `psn_gap` PSNs before every psn_gap_every-th frame; a duplicate
  // repeats the previous frame's PSN on every psn_dup_every-th frame.
  PsnMode psn_mode = PsnMode::Increment;
  std::optional<std::uint32_t> psn_start;  // default 0 (Wrap: 2^24 - kWrapLead)
  EveryN psn_gap_every{};
  std::uint32_t psn_gap = 1;
  EveryN psn_dup_every{};

  // Payload: ONLY and LAST packets carry `payload_bytes`, FIRST and MIDDLE exactly `pmtu`,
  // ATOMIC_WRITE 8, and opcodes without payload none.
  std::uint32_t payload_bytes = 1024;
  std::uint32_t pmtu = 1024;
  PayloadPattern pattern = PayloadPattern::Increment;
  std::uint8_t pattern_byte = 0;

  // Marks and deliberate errors.
  proto::Ecn ecn = proto::Ecn::Ect0;
  EveryN ce_every{};       // these frames carry CE instead of `ecn`
  EveryN bad_icrc_every{};  // these frames carry a wrong ICRC

  std::uint64_t seed = 1;
};

// Payload length of a frame with this opcode.
std::uint32_t payload_length(const RawStreamSpec& s, std::uint8_t opcode);
// nullopt when every opcode of the stream can be built as asked, else the reason.
std::optional<std::string> check(const RawStreamSpec& s);

// How fast frames go: not paced, frames per second, or bits per second on the wire (frame,
// FCS, preamble and inter-frame gap: what a link of that speed carries).
struct Rate {
  enum class Kind : std::uint8_t { Unlimited, Pps, Bps } kind = Kind::Unlimited;
  double value = 0;
  static Rate pps(double v) { return {Kind::Pps, v}; }
  static Rate bps(double v) { return {Kind::Bps, v}; }
};
std::optional<std::string> check(const Rate& r);

std::string to_string(PsnMode m);
std::string to_string(PayloadPattern p);
std::string to_string(Rate::Kind k);
std::string to_string(const Rate& r);  // "unlimited", "1000000 pps", "10 Gb/s"

std::optional<PsnMode> psn_mode_from_string(std::string_view s);
std::optional<proto::Ecn> ecn_from_string(std::string_view s);  // not-ect|none, ect0, ect1, ce
// A table name (RC_RDMA_WRITE_ONLY, rc-rdma-write-only, any case) or a number (10, 0x0a) of an
// opcode the table defines.
std::optional<std::uint8_t> opcode_from_string(std::string_view s);
// Every opcode the table defines, in numeric order.
std::vector<std::uint8_t> all_opcodes();

}  // namespace roce::gen
