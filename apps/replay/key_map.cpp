#include "apps/replay/key_map.hpp"

#include "protocol/parser.hpp"

namespace roce::replay {

using namespace roce::proto;

const KeyMapping* KeyMap::find(std::uint32_t capture_rkey) const {
  for (const KeyMapping& m : maps_)
    if (m.capture_rkey == capture_rkey) return &m;
  return nullptr;
}

Rewrite KeyMap::rewrite(MutableByteSpan frame, CrcBackend crc) const {
  Packet p;
  if (parse_frame(frame, ParseOptions{crc, true, 0, false}, p) != ParseError::None || p.icrc_status != IcrcStatus::Ok ||
      !p.info->is_request)
    return Rewrite::None;
  if (local_) {
    const rdma::IpAddress to = p.ip_version == IpVersion::V4 ? rdma::IpAddress::ipv4(p.ipv4.dst) : rdma::IpAddress::ipv6(p.ipv6.dst);
    if (!(to == *local_)) return Rewrite::None;
  }
  const OpcodeInfo& info = *p.info;
  const std::size_t ext = p.bth_offset + sizeof(Bth);
  bool mapped = false, unmapped = false;
  // The VA moves by the same offset as the region, so an access outside the declared region
  // stays outside ours.
  auto translate = [&](Be32& rkey, Be64* va) {
    if (const KeyMapping* m = find(rkey.get())) {
      rkey.set(m->rkey);
      if (va) va->set(va->get() - m->capture_va + m->va);
      mapped = true;
    } else {
      rkey.set(0);
      unmapped = true;
    }
  };
  auto patch = [&](ExtHeader h, auto header, auto&& edit) {
    if (!info.has(h)) return;
    const std::size_t off = ext + info.offset[static_cast<std::size_t>(h)];
    header = load_header<decltype(header)>(frame, off);
    edit(header);
    store_header(frame, off, header);
  };
  patch(ExtHeader::Reth, Reth{}, [&](Reth& r) { translate(r.rkey, &r.va); });
  patch(ExtHeader::AtomicEth, AtomicEth{}, [&](AtomicEth& a) { translate(a.rkey, &a.va); });
  patch(ExtHeader::Ieth, Ieth{}, [&](Ieth& i) { translate(i.rkey, nullptr); });
  if (!mapped && !unmapped) return Rewrite::None;
  const std::size_t icrc_at = p.datagram_end - kIcrcBytes;
  const auto datagram = ByteSpan(frame).subspan(p.l3_offset, icrc_at - p.l3_offset);
  write_icrc(frame.subspan(icrc_at, kIcrcBytes), compute_icrc(crc, p.ip_version, datagram));
  return unmapped ? Rewrite::Unmapped : Rewrite::Mapped;
}

std::string to_string(Rewrite r) {
  switch (r) {
    case Rewrite::None: return "none";
    case Rewrite::Mapped: return "mapped";
    case Rewrite::Unmapped: return "unmapped";
  }
  return "unknown";
}

}  // namespace roce::replay
