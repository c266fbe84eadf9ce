// Frames of the golden replay scenarios, built field by field with protocol/builder: the
// requests a peer sends to our QP, and the answers the spec says our responder owes. Nothing
// here runs the engine; each expected answer is written out by the scenario that needs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/builder.hpp"

namespace roce::goldens {

inline constexpr std::int64_t kStartSec = 1'700'000'000;  // fixed: the files are reproducible

struct Host {
  proto::MacAddr mac;
  proto::Ipv4Addr ip;
  std::uint32_t qpn;
};

// Our engine and the peer whose requests the goldens replay.
inline constexpr Host kUs{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}, {10, 0, 0, 1}, 0x11};
inline constexpr Host kPeer{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}, {10, 0, 0, 2}, 0x77};
inline constexpr std::uint32_t kPmtu = 1024;

struct TimedFrame {
  std::int64_t at_ns = 0;  // since kStartSec
  std::vector<std::byte> bytes;
};

// Payload bytes that differ from the region's fill pattern and from each other's seeds.
std::vector<std::byte> data(std::size_t n, std::uint8_t seed);
// The region fill "pattern" (scenario.hpp): byte i = i * 7 + 3.
std::vector<std::byte> pattern(std::size_t offset, std::size_t n);
std::vector<std::byte> le64(std::uint64_t v);
std::uint64_t read_le64(const std::vector<std::byte>& mem, std::size_t offset);

proto::ExtHeaders reth(std::uint64_t va, std::uint32_t rkey, std::uint32_t len);
proto::ExtHeaders atomic_eth(std::uint64_t va, std::uint32_t rkey, std::uint64_t swap_add, std::uint64_t compare);
proto::ExtHeaders imm(std::uint32_t value);

// A frame from `from` to `to`, ICRC sealed.
struct Packet {
  proto::Opcode op;
  std::uint32_t psn = 0;
  proto::ExtHeaders ext{};
  std::vector<std::byte> payload{};
  bool ack_req = false;
  proto::Ecn ecn = proto::Ecn::Ect0;
};
std::vector<std::byte> build(const Host& from, const Host& to, const Packet& p);

// The two sides of one scenario on a shared timeline, in microseconds.
class Exchange {
 public:
  // A request from the peer (AckReq set unless said otherwise).
  void request(double at_us, proto::Opcode op, std::uint32_t psn, const proto::ExtHeaders& ext = {},
               std::vector<std::byte> payload = {}, bool ack_req = true, proto::Ecn ecn = proto::Ecn::Ect0);
  // A frame into the engine exactly as given (noise, corrupted frames).
  void raw_in(double at_us, std::vector<std::byte> bytes);
  // What our responder owes.
  void ack(double at_us, std::uint32_t psn, std::uint32_t msn, proto::Syndrome s = proto::Syndrome::ack());
  void read_response(double at_us, proto::Opcode op, std::uint32_t psn, std::uint32_t msn, std::vector<std::byte> payload);
  // The READ responses for `data` starting at `psn`, segmented at the path MTU.
  void read_responses(double at_us, std::uint32_t psn, std::uint32_t msn, const std::vector<std::byte>& data);
  void atomic_ack(double at_us, std::uint32_t psn, std::uint32_t msn, std::uint64_t original);
  void cnp(double at_us);
  // A request our requester owes, and a response from the peer to it.
  void our_request(double at_us, const Packet& p);
  void peer_response(double at_us, const Packet& p);

  const std::vector<TimedFrame>& in() const { return in_; }
  const std::vector<TimedFrame>& out() const { return out_; }

 private:
  std::vector<TimedFrame> in_;
  std::vector<TimedFrame> out_;
};

}  // namespace roce::goldens
