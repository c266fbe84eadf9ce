#include "apps/replay/frame_rewrite.hpp"

#include <cstring>

#include "capture/frame_decoder.hpp"
#include "apps/replay/text_values.hpp"
#include "protocol/checksum.hpp"
#include "protocol/icrc.hpp"
#include "protocol/opcode.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"

namespace roce::replay {
namespace {

using namespace roce::proto;

template <typename T>
bool store_if_different(MutableByteSpan f, std::size_t off, const T& v) {
  if (std::memcmp(f.data() + off, &v, sizeof v) == 0) return false;
  std::memcpy(f.data() + off, &v, sizeof v);
  return true;
}

bool map_ip(MutableByteSpan f, std::size_t off, IpVersion v, const RewriteRules& r) {
  for (const auto& [from, to] : r.ip_map) {
    if (from.version != v || to.version != v) continue;
    if (v == IpVersion::V4 && std::memcmp(f.data() + off, from.v4.data(), 4) == 0) return store_if_different(f, off, to.v4);
    if (v == IpVersion::V6 && std::memcmp(f.data() + off, from.v6.data(), 16) == 0) return store_if_different(f, off, to.v6);
  }
  return false;
}

// RFC 768 over the pseudo header and the datagram, with the checksum field taken as zero.
std::uint16_t udp_checksum(ByteSpan frame, const Packet& p) {
  std::vector<std::byte> pseudo;
  auto put16 = [&](std::uint16_t v) {
    pseudo.push_back(static_cast<std::byte>(v >> 8));
    pseudo.push_back(static_cast<std::byte>(v & 0xFF));
  };
  const std::size_t udp_len = p.datagram_end - p.l4_offset;
  if (p.ip_version == IpVersion::V4) {
    pseudo.insert(pseudo.end(), frame.begin() + static_cast<std::ptrdiff_t>(p.l3_offset + 12),
                  frame.begin() + static_cast<std::ptrdiff_t>(p.l3_offset + 20));
    put16(kIpProtoUdp);
    put16(static_cast<std::uint16_t>(udp_len));
  } else {
    pseudo.insert(pseudo.end(), frame.begin() + static_cast<std::ptrdiff_t>(p.l3_offset + 8),
                  frame.begin() + static_cast<std::ptrdiff_t>(p.l3_offset + 40));
    put16(static_cast<std::uint16_t>(udp_len >> 16));
    put16(static_cast<std::uint16_t>(udp_len));
    put16(0);
    put16(kIpProtoUdp);
  }
  pseudo.insert(pseudo.end(), frame.begin() + static_cast<std::ptrdiff_t>(p.l4_offset),
                frame.begin() + static_cast<std::ptrdiff_t>(p.datagram_end));
  pseudo[pseudo.size() - udp_len + 6] = std::byte{0};
  pseudo[pseudo.size() - udp_len + 7] = std::byte{0};
  const std::uint16_t sum = internet_checksum(pseudo);
  return sum == 0 ? 0xFFFF : sum;
}

}  // namespace

RewriteOutcome rewrite_frame(MutableByteSpan frame, const RewriteRules& r, RewriteCounts& c, CrcBackend crc) {
  bool changed = false;
  if (frame.size() >= sizeof(EthernetHeader)) {
    bool mac = false;
    if (r.dst_mac) mac |= store_if_different(frame, offsetof(EthernetHeader, dst), *r.dst_mac);
    if (r.src_mac) mac |= store_if_different(frame, offsetof(EthernetHeader, src), *r.src_mac);
    c.macs += mac;
    changed |= mac;
  }
  if (!r.touches_roce()) {
    c.frames += changed;
    return changed ? RewriteOutcome::Changed : RewriteOutcome::Unchanged;
  }
  Packet p;
  ParseOptions opts;
  opts.crc = crc;
  const ParseError e = parse_frame(frame, opts, p);
  const bool whole = frame.size() >= p.datagram_end && p.datagram_end != 0;
  if (!(capture::bth_decoded(e) && whole)) {
    ++c.not_roce;
    c.frames += changed;
    return RewriteOutcome::NotRoce;
  }
  const std::size_t icrc_off = p.datagram_end - kIcrcBytes;
  const bool icrc_checkable = !(p.ip_version == IpVersion::V4 && p.l4_offset - p.l3_offset != kIpv4HeaderBytes);
  const auto covered = [&] { return ByteSpan(frame).subspan(p.l3_offset, icrc_off - p.l3_offset); };
  const std::uint32_t stored = read_icrc(ByteSpan(frame).subspan(icrc_off, kIcrcBytes));
  const std::uint32_t error_bits = icrc_checkable ? stored ^ compute_icrc(crc, p.ip_version, covered()) : 0;

  bool ip = false, sport = false, qpn = false, psn = false;
  const std::size_t src_off = p.l3_offset + (p.ip_version == IpVersion::V4 ? 12 : 8);
  const std::size_t dst_off = p.l3_offset + (p.ip_version == IpVersion::V4 ? 16 : 24);
  ip |= map_ip(frame, src_off, p.ip_version, r);
  ip |= map_ip(frame, dst_off, p.ip_version, r);
  if (r.udp_sport) sport = store_if_different(frame, p.l4_offset, Be16::of(*r.udp_sport));
  Bth bth = load_header<Bth>(frame, p.bth_offset);
  if (const auto it = r.qpn_map.find(bth.dest_qp.get()); it != r.qpn_map.end()) {
    bth.dest_qp.set(it->second & kPsnMask);
    qpn = true;
  }
  if (r.psn_offset != 0 && bth.opcode != raw(Opcode::Cnp)) {
    bth.psn.set(psn_add(bth.psn.get(), r.psn_offset));
    psn = true;
  }
  store_if_different(frame, p.bth_offset, bth);
  if (e == ParseError::None && p.info && p.info->has(ExtHeader::Deth)) {
    const std::size_t deth = p.bth_offset + sizeof(Bth) + p.info->offset[static_cast<std::size_t>(ExtHeader::Deth)];
    auto d = load_header<Deth>(frame, deth);
    if (const auto it = r.qpn_map.find(d.source_qp()); it != r.qpn_map.end()) {
      d.src_qp.set((d.src_qp.get() & 0xFF000000u) | (it->second & 0xFFFFFF));
      qpn |= store_if_different(frame, deth, d);
    }
  }
  c.ips += ip;
  c.sports += sport;
  c.qpns += qpn;
  c.psns += psn;
  if (!(ip || sport || qpn || psn)) {
    c.frames += changed;
    return changed ? RewriteOutcome::Changed : RewriteOutcome::Unchanged;
  }
  if (ip && p.ip_version == IpVersion::V4 && p.ipv4_checksum_ok) {
    const std::size_t hlen = p.l4_offset - p.l3_offset;
    store_header(frame, p.l3_offset + offsetof(Ipv4Header, checksum), Be16::of(0));
    store_header(frame, p.l3_offset + offsetof(Ipv4Header, checksum),
                 Be16::of(internet_checksum(ByteSpan(frame).subspan(p.l3_offset, hlen))));
    ++c.ip_checksums;
  }
  // RoCEv2 senders leave the UDP checksum at zero (the ICRC covers the packet); one that did
  // not gets a correct one again.
  if ((ip || sport) && p.udp_checksum != 0)
    store_header(frame, p.l4_offset + offsetof(UdpHeader, checksum), Be16::of(udp_checksum(frame, p)));
  if (icrc_checkable) {
    write_icrc(frame.subspan(icrc_off, kIcrcBytes), compute_icrc(crc, p.ip_version, covered()) ^ error_bits);
    ++c.icrcs;
    c.icrcs_kept_bad += error_bits != 0;
  }
  ++c.frames;
  return RewriteOutcome::Changed;
}

std::optional<std::pair<rdma::IpAddress, rdma::IpAddress>> parse_ip_pair(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos) return std::nullopt;
  const auto a = parse_ip(s.substr(0, eq)), b = parse_ip(s.substr(eq + 1));
  if (!a || !b || a->version != b->version) return std::nullopt;
  return std::make_pair(*a, *b);
}

std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_qpn_pair(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos) return std::nullopt;
  const auto a = parse_u64(s.substr(0, eq)), b = parse_u64(s.substr(eq + 1));
  if (!a || !b || *a > proto::kPsnMask || *b > proto::kPsnMask) return std::nullopt;
  return std::make_pair(static_cast<std::uint32_t>(*a), static_cast<std::uint32_t>(*b));
}

std::string summary(const RewriteCounts& c) {
  std::string s = std::to_string(c.frames) + " frames rewritten (MACs " + std::to_string(c.macs) + ", IP addresses " +
                  std::to_string(c.ips) + ", UDP source port " + std::to_string(c.sports) + ", QPN " + std::to_string(c.qpns) +
                  ", PSN " + std::to_string(c.psns) + "); ICRC computed again in " + std::to_string(c.icrcs) + " (" +
                  std::to_string(c.icrcs_kept_bad) + " kept as wrong as they were), IPv4 header checksum in " +
                  std::to_string(c.ip_checksums);
  if (c.not_roce) s += "; " + std::to_string(c.not_roce) + " frames not RoCEv2 (TCP, ARP, ...): IP, port, QPN and PSN rules not applied";
  return s;
}

}  // namespace roce::replay
