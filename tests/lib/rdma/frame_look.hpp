#pragma once
// What a transport test needs to know of a frame on the wire: its opcode and PSN (no ICRC or
// MTU check). Shared by the tests that count which packets a requester sent.
#include <cstdint>
#include <span>

#include "protocol/parser.hpp"
#include "protocol/sack.hpp"

namespace roce::test {

struct Frame {
  bool ok = false;
  std::uint8_t opcode = 0;
  std::uint32_t psn = 0;
  bool ack_req = false;
};

// `sack`: also accept our selective ACK (an opcode the standard parser does not know).
inline Frame look(std::span<const std::byte> f, bool sack = false) {
  proto::Packet p;
  proto::ParseOptions o;
  o.verify_icrc = false;
  o.mtu_rules = false;
  const proto::ParseError e = proto::parse_frame(f, o, p);
  if (e != proto::ParseError::None && !(sack && e == proto::ParseError::UnknownOpcode && p.bth.opcode == proto::kSackOpcode))
    return {};
  return {true, p.bth.opcode, p.psn(), p.bth.ack_requested()};
}

}  // namespace roce::test
