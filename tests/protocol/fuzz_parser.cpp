// libFuzzer target for the parser. Every input goes through parse_frame and parse_ip under
// several ParseOptions; besides "no crash, no out-of-bounds read" (ASan/UBSan), an accepted
// packet must be self-consistent, must rebuild through frame_spec_from + build_frame into a
// frame that parses to the same fields, and must rebuild byte for byte when nothing in it was
// left to the builder to recompute. The payload of every accepted packet also goes through the
// CM's MAD parser and, as a REQ's or SIDR_REQ's private data would, rdma_cm's cma_hdr parser
// (IPv4 and IPv6 addresses): a header it accepts must write back and parse to the same
// addressing. Build: scripts/fuzz.sh.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "protocol/builder.hpp"
#include "protocol/cm_connect.hpp"
#include "protocol/cm_sidr.hpp"
#include "protocol/cma_header.hpp"
#include "protocol/mad_parser.hpp"
#include "protocol/parser.hpp"
#include "protocol/payload_rule.hpp"

namespace roce::proto {
namespace {

[[noreturn]] void fail(const char* what, const ParseOptions& o, bool l2) {
  std::fprintf(stderr, "fuzz_parser invariant violated: %s (crc %s, verify %d, pmtu %u, snap %d, %s)\n", what,
               to_string(o.crc).c_str(), o.verify_icrc, o.pmtu, o.allow_snap_truncation,
               l2 ? "parse_frame" : "parse_ip");
  std::abort();
}

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) fail(#cond, opts, l2); \
  } while (0)

const ParseOptions kOptions[] = {
    {CrcBackend::Isal, true, 0, false},
    {CrcBackend::Portable, true, 1024, true},
    {CrcBackend::Zlib, false, 256, false},
    {CrcBackend::Isal, true, 4096, true},
};

bool same_ext_headers(const OpcodeInfo& info, const ExtHeaders& a, const ExtHeaders& b) {
  for (std::size_t i = 0; i < kExtHeaderCount; ++i) {
    const auto h = static_cast<ExtHeader>(i);
    if (info.has(h) && std::memcmp(a.storage(h), b.storage(h), kExtHeaderBytes[i]) != 0) return false;
  }
  return true;
}

bool pad_bytes_are_zero(ByteSpan in, const Packet& p) {
  const std::size_t pad_off = p.payload_offset + p.payload_length;
  for (std::size_t i = 0; i < p.bth.pad_count(); ++i)
    if (in[pad_off + i] != std::byte{0}) return false;
  return true;
}

// A cma_hdr the parser accepts: one family for both addresses, and it writes back to bytes that
// parse to the same addressing.
void check_cma(std::span<const std::uint8_t> private_data, const ParseOptions& opts, bool l2) {
  CmaAddressing a;
  const CmaHeaderError err = parse_cma_header(private_data, a);
  if (err != CmaHeaderError::None) {
    FUZZ_CHECK(private_data.size() >= kCmaHeaderBytes || err == CmaHeaderError::TooShort);
    return;
  }
  FUZZ_CHECK(private_data.size() >= kCmaHeaderBytes);
  FUZZ_CHECK(a.src.version == a.dst.version);
  FUZZ_CHECK(a.src.version == IpVersion::V4 || a.src.version == IpVersion::V6);
  std::array<std::uint8_t, kCmaHeaderBytes> out{};
  FUZZ_CHECK(write_cma_header(a, out));
  CmaAddressing b;
  FUZZ_CHECK(parse_cma_header(out, b) == CmaHeaderError::None);
  FUZZ_CHECK(b.src == a.src && b.dst == a.dst && b.src_port == a.src_port);
}

// The payload as a MAD (QP1's), and the cma_hdr where a REQ or SIDR_REQ carries it.
void check_mad(ByteSpan payload, const ParseOptions& opts, bool l2) {
  const auto raw = std::span(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size());
  check_cma(raw, opts, l2);
  ParsedMad m;
  const MadError err = parse_mad(payload, m);
  FUZZ_CHECK(err < MadError::Count);
  if (err != MadError::None) return;
  if (m.attribute == CmAttribute::Req) {
    const CmReq r = m.as<CmReq>();
    check_cma(r.private_data, opts, l2);
  } else if (m.attribute == CmAttribute::SidrReq) {
    const CmSidrReq r = m.as<CmSidrReq>();
    check_cma(r.private_data, opts, l2);
  }
}

// The 8 KiB the largest acceptable packet needs, plus room.
std::byte g_rebuilt[70'000];

void check(ByteSpan in, const ParseOptions& opts, bool l2) {
  Packet p;
  const ParseError err = l2 ? parse_frame(in, opts, p) : parse_ip(in, opts, p);
  if (err != ParseError::None) {
    FUZZ_CHECK(err < ParseError::Count);
    return;
  }

  // Self-consistency of what the parser reports.
  FUZZ_CHECK(p.info == &opcode_info(p.bth.opcode) && p.info->valid);
  FUZZ_CHECK(p.has_l2 == l2);
  FUZZ_CHECK(p.l3_offset < p.l4_offset && p.l4_offset < p.bth_offset && p.bth_offset < p.payload_offset);
  FUZZ_CHECK(p.bth_offset + sizeof(Bth) + p.info->ext_bytes == p.payload_offset);
  FUZZ_CHECK(p.payload_offset + p.payload_length + p.bth.pad_count() + kIcrcBytes == p.datagram_end);
  FUZZ_CHECK(p.udp_length == p.datagram_end - p.l4_offset);
  FUZZ_CHECK(p.udp_dst_port == kRoceV2Port && p.bth.tver() == 0);
  FUZZ_CHECK(check_payload_length(*p.info, p.payload_length, opts.pmtu, opts.mtu_rules) == PayloadVerdict::Ok);
  FUZZ_CHECK(p.payload.data() >= in.data() && p.payload.data() + p.payload.size() <= in.data() + in.size());
  FUZZ_CHECK(p.snap_truncated == (p.datagram_end > in.size()));
  FUZZ_CHECK(!p.snap_truncated || opts.allow_snap_truncation);
  FUZZ_CHECK(p.snap_truncated ? p.payload.size() <= p.payload_length : p.payload.size() == p.payload_length);
  if (p.snap_truncated) {
    FUZZ_CHECK(p.icrc_status == IcrcStatus::NotCheckable);
    return;
  }
  check_mad(p.payload, opts, l2);
  const bool ipv4_options = p.ip_version == IpVersion::V4 && p.l4_offset - p.l3_offset != kIpv4HeaderBytes;
  if (ipv4_options) {
    FUZZ_CHECK(p.icrc_status == IcrcStatus::NotCheckable);
  } else if (!opts.verify_icrc) {
    FUZZ_CHECK(p.icrc_status == IcrcStatus::NotChecked);
  } else {
    // Every CRC backend reaches the same verdict.
    const auto datagram = in.subspan(p.l3_offset, p.datagram_end - kIcrcBytes - p.l3_offset);
    const std::uint32_t isal = compute_icrc(CrcBackend::Isal, p.ip_version, datagram);
    FUZZ_CHECK(compute_icrc(CrcBackend::Portable, p.ip_version, datagram) == isal);
    FUZZ_CHECK(compute_icrc(CrcBackend::Zlib, p.ip_version, datagram) == isal);
    FUZZ_CHECK(p.icrc_status == (isal == p.icrc ? IcrcStatus::Ok : IcrcStatus::Bad));
  }

  // Rebuild and parse again.
  const FrameSpec spec = frame_spec_from(p);
  const FrameLayout l = build_frame(spec, p.payload, g_rebuilt, opts.crc);
  FUZZ_CHECK(l.ok());
  const ByteSpan rebuilt(g_rebuilt, l.length);
  Packet q;
  const ParseError again = l2 ? parse_frame(rebuilt, opts, q) : parse_ip(rebuilt, opts, q);
  FUZZ_CHECK(again == ParseError::None);
  FUZZ_CHECK(q.icrc_status == (opts.verify_icrc ? IcrcStatus::Ok : IcrcStatus::NotChecked));
  FUZZ_CHECK(q.ip_version == p.ip_version && q.eth.vlan_count == p.eth.vlan_count);
  FUZZ_CHECK(std::memcmp(&q.bth, &p.bth, sizeof(Bth)) == 0);
  FUZZ_CHECK(same_ext_headers(*p.info, q.ext, p.ext));
  FUZZ_CHECK(q.payload_length == p.payload_length);
  FUZZ_CHECK(q.payload.size() == 0 || std::memcmp(q.payload.data(), p.payload.data(), q.payload.size()) == 0);
  FUZZ_CHECK(q.udp_src_port == p.udp_src_port && q.udp_checksum == p.udp_checksum);
  FUZZ_CHECK(q.ecn() == p.ecn());
  if (p.ip_version == IpVersion::V4) {
    FUZZ_CHECK(q.ipv4.src == p.ipv4.src && q.ipv4.dst == p.ipv4.dst && q.ipv4.tos == p.ipv4.tos &&
               q.ipv4.id == p.ipv4.id && q.ipv4.flags_fragment == p.ipv4.flags_fragment && q.ipv4.ttl == p.ipv4.ttl);
    FUZZ_CHECK(q.ipv4_checksum_ok);
  } else {
    FUZZ_CHECK(q.ipv6.traffic_class == p.ipv6.traffic_class && q.ipv6.flow_label == p.ipv6.flow_label &&
               q.ipv6.hop_limit == p.ipv6.hop_limit && q.ipv6.src == p.ipv6.src && q.ipv6.dst == p.ipv6.dst);
  }

  // When the input already holds what the builder computes (a valid ICRC and IPv4 header
  // checksum, zero pad, no IPv4 options), the rebuilt frame is the input's datagram exactly.
  if (p.icrc_status == IcrcStatus::Ok && (p.ip_version == IpVersion::V6 || p.ipv4_checksum_ok) &&
      pad_bytes_are_zero(in, p)) {
    FUZZ_CHECK(l.length == p.datagram_end);
    FUZZ_CHECK(std::memcmp(g_rebuilt, in.data(), l.length) == 0);
  }
}

}  // namespace
}  // namespace roce::proto

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const roce::proto::ByteSpan in(reinterpret_cast<const std::byte*>(data), size);
  for (const auto& o : roce::proto::kOptions) {
    roce::proto::check(in, o, true);
    roce::proto::check(in, o, false);
  }
  return 0;
}
