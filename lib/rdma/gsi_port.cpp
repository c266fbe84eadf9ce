#include "lib/rdma/gsi_port.hpp"

#include <algorithm>

#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

GsiPort::GsiPort(GsiConfig cfg) : cfg_(cfg), rx_(std::max<std::uint32_t>(cfg.ring_size, 1)), tx_(std::max<std::uint32_t>(cfg.ring_size, 1)) {}

void GsiPort::on_packet(const Packet& p, ByteSpan) {
  switch (check_gsi_packet(p, cfg_.port_pkey)) {
    case GsiError::None: break;
    case GsiError::NotUdSend: return count(GsiCounter::NotUdSend);
    case GsiError::NotQp1: return count(GsiCounter::NotQp1);
    case GsiError::BadQkey: return count(GsiCounter::BadQkey);
    case GsiError::BadPkey: return count(GsiCounter::BadPkey);
    case GsiError::WrongLength: return count(GsiCounter::WrongLength);
    case GsiError::Count: return count(GsiCounter::WrongLength);
  }
  if (p.payload.size() < kMadBytes) return count(GsiCounter::WrongLength);  // snap-truncated
  if (rx_count_ == rx_.size()) return count(GsiCounter::RxRingFull);
  GsiReceived& r = rx_[(rx_head_ + rx_count_) % rx_.size()];
  std::copy_n(p.payload.begin(), kMadBytes, r.mad.begin());
  r.from = p.ip_version == IpVersion::V4 ? IpAddress::ipv4(p.ipv4.src) : IpAddress::ipv6(p.ipv6.src);
  r.from_mac = p.eth.src;
  r.src_qp = p.ext.deth.src_qp.get();
  r.pkey = p.bth.pkey.get();
  ++rx_count_;
  count(GsiCounter::RxMads);
}

bool GsiPort::pop(GsiReceived& out) {
  if (rx_count_ == 0) return false;
  out = rx_[rx_head_];
  rx_head_ = (rx_head_ + 1) % rx_.size();
  --rx_count_;
  return true;
}

bool GsiPort::push(const GsiSend& m) {
  if (tx_count_ == tx_.size()) {
    count(GsiCounter::TxRingFull);
    return false;
  }
  tx_[(tx_head_ + tx_count_) % tx_.size()] = m;
  ++tx_count_;
  return true;
}

bool GsiPort::build_next(TxFrame& frame, const LocalAddress& local, std::uint8_t ttl) {
  while (tx_count_ > 0) {
    const GsiSend& m = tx_[tx_head_];
    tx_head_ = (tx_head_ + 1) % tx_.size();
    --tx_count_;
    if (m.to.version != local.ip.version) {
      count(GsiCounter::TxBuildFailed);
      continue;
    }
    GsiRoute route;
    route.eth.src = local.mac;
    route.eth.dst = m.to_mac;
    route.ip_version = local.ip.version;
    route.ipv4.src = local.ip.v4;
    route.ipv4.dst = m.to.v4;
    route.ipv4.ttl = ttl;
    route.ipv6.src = local.ip.v6;
    route.ipv6.dst = m.to.v6;
    route.ipv6.hop_limit = ttl;
    route.udp_src_port = cfg_.udp_src_port;
    route.pkey = m.pkey;
    route.dest_qp = m.dest_qp;
    const FrameLayout l = build_gsi_frame(route, psn_, m.mad, MutableByteSpan(frame.data, frame.capacity));
    if (!l.ok()) {
      count(GsiCounter::TxBuildFailed);
      continue;
    }
    psn_ = (psn_ + 1) & kPsnMask;
    frame.length = static_cast<std::uint32_t>(l.length);
    count(GsiCounter::TxMads);
    return true;
  }
  return false;
}

std::string to_string(GsiCounter c) {
  switch (c) {
    case GsiCounter::RxMads: return "gsi_rx_mads";
    case GsiCounter::TxMads: return "gsi_tx_mads";
    case GsiCounter::RxRingFull: return "gsi_rx_ring_full";
    case GsiCounter::TxRingFull: return "gsi_tx_ring_full";
    case GsiCounter::TxBuildFailed: return "gsi_tx_build_failed";
    case GsiCounter::NotUdSend: return "gsi_not_ud_send";
    case GsiCounter::NotQp1: return "gsi_not_qp1";
    case GsiCounter::BadQkey: return "gsi_bad_qkey";
    case GsiCounter::BadPkey: return "gsi_bad_pkey";
    case GsiCounter::WrongLength: return "gsi_wrong_length";
    case GsiCounter::Count: break;
  }
  return "unknown";
}

}  // namespace roce::rdma
