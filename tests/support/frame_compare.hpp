// Field-by-field comparison of a parsed Packet with the FrameSpec and payload it was built from,
// as a gtest AssertionResult that names every field that differs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>

#include "protocol/builder.hpp"
#include "protocol/payload_rule.hpp"
#include "tests/support/hex.hpp"

namespace roce::test {

inline ::testing::AssertionResult packet_matches_spec(const proto::FrameSpec& s, proto::ByteSpan payload,
                                                      const proto::Packet& p) {
  using namespace proto;
  std::ostringstream diff;
  auto show = [](const auto& v) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(v)>>) return std::to_string(+v);
    else return std::string(v);
  };
  auto check = [&diff, &show](const char* name, const auto& want, const auto& got) {
    if (want != got) diff << "\n  " << name << ": built " << show(want) << ", parsed " << show(got);
  };
  check("has_l2", s.with_ethernet, p.has_l2);
  if (s.with_ethernet) {
    check("eth.dst", mac_to_string(s.eth.dst), mac_to_string(p.eth.dst));
    check("eth.src", mac_to_string(s.eth.src), mac_to_string(p.eth.src));
    check("vlan_count", s.eth.vlan_count, p.eth.vlan_count);
    for (std::size_t i = 0; i < s.eth.vlan_count && i < 2; ++i) {
      check("vlan_tpid", s.eth.vlan_tpid[i], p.eth.vlan_tpid[i]);
      check("vlan_tci", s.eth.vlan_tci[i], p.eth.vlan_tci[i]);
    }
  }
  check("ip_version", static_cast<int>(s.ip_version), static_cast<int>(p.ip_version));
  if (s.ip_version == IpVersion::V4) {
    check("ipv4.src", ipv4_to_string(s.ipv4.src), ipv4_to_string(p.ipv4.src));
    check("ipv4.dst", ipv4_to_string(s.ipv4.dst), ipv4_to_string(p.ipv4.dst));
    check("ipv4.tos", s.ipv4.tos, p.ipv4.tos);
    check("ipv4.id", s.ipv4.id, p.ipv4.id);
    check("ipv4.flags_fragment", s.ipv4.flags_fragment, p.ipv4.flags_fragment);
    check("ipv4.ttl", s.ipv4.ttl, p.ipv4.ttl);
    check("ipv4_checksum_ok", true, p.ipv4_checksum_ok);
  } else {
    check("ipv6.src", ipv6_to_string(s.ipv6.src), ipv6_to_string(p.ipv6.src));
    check("ipv6.dst", ipv6_to_string(s.ipv6.dst), ipv6_to_string(p.ipv6.dst));
    check("ipv6.traffic_class", s.ipv6.traffic_class, p.ipv6.traffic_class);
    check("ipv6.flow_label", s.ipv6.flow_label & 0xFFFFF, p.ipv6.flow_label);
    check("ipv6.hop_limit", s.ipv6.hop_limit, p.ipv6.hop_limit);
  }
  check("udp_src_port", s.udp_src_port, p.udp_src_port);
  check("udp_dst_port", s.udp_dst_port, p.udp_dst_port);
  check("udp_checksum", s.udp_checksum, p.udp_checksum);

  Bth want = s.bth;
  want.set_pad_count(pad_for(static_cast<std::uint32_t>(payload.size())));
  check("bth.opcode", want.opcode, p.bth.opcode);
  check("bth.flags (SE|M|PadCnt|TVer)", want.flags, p.bth.flags);
  check("bth.pkey", want.pkey.get(), p.bth.pkey.get());
  check("bth.resv8a (FECN|BECN)", want.resv8a, p.bth.resv8a);
  check("bth.dest_qp", want.dest_qp.get(), p.bth.dest_qp.get());
  check("bth.ack_req", want.ack_req, p.bth.ack_req);
  check("bth.psn", want.psn.get(), p.bth.psn.get());

  const OpcodeInfo& info = opcode_info(s.bth.opcode);
  if (p.info != &info) diff << "\n  opcode info: parsed " << (p.info ? p.info->name : "none");
  for (std::size_t i = 0; i < kExtHeaderCount; ++i) {
    const auto h = static_cast<ExtHeader>(i);
    if (!info.has(h)) continue;
    if (std::memcmp(s.ext.storage(h), p.ext.storage(h), kExtHeaderBytes[i]) != 0)
      diff << "\n  " << to_string(h) << ": built " << to_hex(s.ext.storage(h), kExtHeaderBytes[i]) << ", parsed "
           << to_hex(p.ext.storage(h), kExtHeaderBytes[i]);
  }
  check("payload_length", payload.size(), std::size_t{p.payload_length});
  if (p.payload.size() != payload.size() || !std::equal(payload.begin(), payload.end(), p.payload.begin()))
    diff << "\n  payload bytes differ";
  const std::string d = diff.str();
  if (d.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << opcode_name(s.bth.opcode) << " differs:" << d;
}

}  // namespace roce::test
