#include "bench/suite/frames.hpp"

#include <rte_ethdev.h>

#include <array>
#include <vector>

#include "dataplane/port.hpp"

namespace roce::bench {

using proto::Opcode;

WriteFrames::WriteFrames(std::uint32_t payload, std::uint32_t message, std::uint32_t pmtu, std::uint32_t dest_qpn,
                         std::uint32_t rkey, std::byte* target, std::size_t target_len)
    : payload_len_(payload), message_(message), target_(target), slots_(target_len / message), rkey_(rkey) {
  spec_.eth.src = kPeerMac;
  spec_.eth.dst = kDutMac;
  spec_.ipv4.src = kPeerIp;
  spec_.ipv4.dst = kDutIp;
  spec_.udp_src_port = 0xC0DE;
  spec_.bth.pkey.set(0xFFFF);
  spec_.bth.dest_qp.set(dest_qpn);
  spec_.pmtu = pmtu;
  payload_.resize(payload);
  for (std::size_t i = 0; i < payload_.size(); ++i) payload_[i] = static_cast<std::byte>(i * 7 + 1);
}

std::size_t WriteFrames::build(std::uint64_t k, std::span<std::byte> out) {
  const std::uint32_t ppm = message_ / payload_len_;
  const std::uint64_t m = k / ppm;
  const auto i = static_cast<std::uint32_t>(k % ppm);
  proto::FrameSpec s = spec_;
  s.bth.psn.set(static_cast<std::uint32_t>(k & 0xFFFFFF));
  const Opcode op = ppm == 1 ? Opcode::RcWriteOnly
                             : (i == 0 ? Opcode::RcWriteFirst : (i + 1 == ppm ? Opcode::RcWriteLast : Opcode::RcWriteMiddle));
  s.bth.opcode = proto::raw(op);
  s.bth.set_ack_requested(ack_requests_ && (op == Opcode::RcWriteOnly || op == Opcode::RcWriteLast));
  if (i == 0) {
    const std::uint64_t va = reinterpret_cast<std::uint64_t>(target_ + (m % slots_) * message_);
    s.ext.reth = proto::Reth{proto::Be64::of(va), proto::Be32::of(rkey_), proto::Be32::of(message_)};
  }
  const auto l = proto::build_frame(s, payload_, out, proto::CrcBackend::Isal);
  return l.ok() ? l.length : 0;
}

Feeder::~Feeder() {
  if (a_open) dp::close_port(ports.a);
  if (b_open) dp::close_port(ports.b);
  if (pool) rte_mempool_free(pool);
}

bool make_feeder(Feeder& f, const std::string& tag, bool open_both, unsigned mbufs) {
  auto pair = dp::make_ring_pair("bfa" + tag, "bfb" + tag);
  if (!pair.ok()) return false;
  f.ports = *pair;
  f.pool = rte_pktmbuf_pool_create(("bfp" + tag).c_str(), mbufs, 256, 0, 4096 + 512 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  if (!f.pool) return false;
  dp::PortOptions po;
  po.name = std::to_string(f.ports.a);
  if (!dp::open_port(po, f.pool).ok()) return false;
  f.a_open = true;
  if (open_both) {
    po.name = std::to_string(f.ports.b);
    if (!dp::open_port(po, f.pool).ok()) return false;
    f.b_open = true;
  }
  return true;
}

bool preload(std::uint16_t port, rte_mempool* pool, WriteFrames& frames, std::uint64_t first, unsigned n) {
  std::vector<rte_mbuf*> m(n);
  if (rte_pktmbuf_alloc_bulk(pool, m.data(), n) != 0) return false;
  for (unsigned i = 0; i < n; ++i) {
    const std::size_t len = frames.build(first + i, {rte_pktmbuf_mtod(m[i], std::byte*), rte_pktmbuf_tailroom(m[i])});
    if (len == 0) return false;
    m[i]->data_len = static_cast<std::uint16_t>(len);
    m[i]->pkt_len = static_cast<std::uint32_t>(len);
  }
  unsigned sent = 0;
  while (sent < n) sent += rte_eth_tx_burst(port, 0, m.data() + sent, static_cast<std::uint16_t>(n - sent));
  return true;
}

void drain(std::uint16_t port) {
  std::array<rte_mbuf*, 32> m;
  while (const std::uint16_t n = rte_eth_rx_burst(port, 0, m.data(), 32)) rte_pktmbuf_free_bulk(m.data(), n);
}

}  // namespace roce::bench
