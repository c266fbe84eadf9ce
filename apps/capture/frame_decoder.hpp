// Decodes one capture record of any supported link type with the protocol/ parser, and sorts
// the result into the four verdicts the tools report.
#pragma once

#include <cstdint>
#include <string>

#include "apps/capture/link_layer.hpp"
#include "protocol/parser.hpp"

namespace roce::capture {

enum class Verdict : std::uint8_t {
  Roce,       // a RoCEv2 packet the parser accepts
  RoceV1,     // EtherType 0x8915 (IB GRH + BTH): RoCEv1, not decoded further
  NotRoce,    // ARP, TCP, UDP to another port, IP fragments: other traffic
  Malformed,  // the frame is (or may be) RoCEv2 but breaks a rule, or is cut inside a header
};

std::string to_string(Verdict v);
Verdict verdict_of(proto::ParseError e);

// True when the parser had read the BTH before it stopped with `e`, so packet.bth and
// packet.info describe the frame even though it was rejected.
bool bth_decoded(proto::ParseError e);

struct DecodedFrame {
  proto::ParseError error = proto::ParseError::None;
  Verdict verdict = Verdict::Roce;
  std::size_t ip_offset = 0;  // where the IP header starts in the record (packet offsets count from it when !packet.has_l2)
  proto::Packet packet{};
};

// Strips the link header and parses; never reads outside `record`.
void decode_frame(LinkType link, proto::ByteSpan record, const proto::ParseOptions& opts, DecodedFrame& out) noexcept;

}  // namespace roce::capture
