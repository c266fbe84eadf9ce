// A hand-driven peer for responder tests: builds request frames field by field, feeds them
// to an engine and parses what the engine answers.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "lib/rdma/engine.hpp"
#include "lib/rdma/qp_bring_up.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"

namespace roce::test {

struct Reply {
  proto::Packet pkt;
  std::vector<std::byte> frame;
  std::vector<std::byte> payload() const { return {pkt.payload.begin(), pkt.payload.end()}; }
};

class RawPeer {
 public:
  RawPeer(rdma::Engine& target, proto::MacAddr my_mac, proto::Ipv4Addr my_ip, std::uint32_t my_qpn,
          std::uint32_t target_qpn)
      : target_(target), qpn_(my_qpn) {
    spec_.eth.src = my_mac;
    spec_.eth.dst = target.config().path.local.mac;
    spec_.ipv4.src = my_ip;
    spec_.ipv4.dst = target.config().path.local.ip.v4;
    spec_.udp_src_port = 0xC123;
    spec_.bth.pkey.set(0xFFFF);
    spec_.bth.dest_qp.set(target_qpn);
    spec_.validate = false;
  }

  // The P_Key of the frames made from now on (0xFFFF, the default partition's, at first).
  void set_pkey(std::uint16_t pkey) { spec_.bth.pkey.set(pkey); }

  // A request frame of `op` at `psn` with the given extension headers and payload.
  std::vector<std::byte> frame(proto::Opcode op, std::uint32_t psn, const proto::ExtHeaders& ext,
                               std::span<const std::byte> payload = {}, bool ack_req = true,
                               proto::Ecn ecn = proto::Ecn::Ect0) const {
    proto::FrameSpec s = spec_;
    s.bth.opcode = proto::raw(op);
    s.bth.psn.set(psn);
    s.bth.set_ack_requested(ack_req);
    s.ext = ext;
    s.set_ecn(ecn);
    std::vector<std::byte> out(payload.size() + 256);
    const auto l = proto::build_frame(s, payload, out, proto::CrcBackend::Isal);
    EXPECT_TRUE(l.ok()) << proto::to_string(l.error);
    out.resize(l.length);
    return out;
  }

  void send(const std::vector<std::byte>& f, Nanos now = 0) { target_.receive(f, now); }

  // Everything the engine has to send now.
  std::vector<Reply> collect(Nanos now = 0) {
    std::vector<Reply> out;
    std::vector<std::vector<std::byte>> bufs(32, std::vector<std::byte>(8192));
    for (;;) {
      std::vector<rdma::TxFrame> frames(bufs.size());
      for (std::size_t i = 0; i < bufs.size(); ++i) frames[i] = rdma::TxFrame{bufs[i].data(), 8192, 0};
      const std::size_t n = target_.transmit(frames, now);
      for (std::size_t i = 0; i < n; ++i) {
        Reply r;
        r.frame.assign(frames[i].data, frames[i].data + frames[i].length);
        const auto err = proto::parse_frame(r.frame, {}, r.pkt);
        EXPECT_EQ(err, proto::ParseError::None);
        EXPECT_EQ(r.pkt.icrc_status, proto::IcrcStatus::Ok);
        out.push_back(std::move(r));
      }
      if (n < bufs.size()) break;
    }
    // Payload spans point into r.frame, which moved: parse again in place.
    for (Reply& r : out) (void)proto::parse_frame(r.frame, {}, r.pkt);
    return out;
  }

  std::uint32_t qpn() const { return qpn_; }
  // The template every frame starts from: hostile-input tests bend its fields (P_Key, TVer,
  // addresses) to build what a well-behaved peer never sends.
  proto::FrameSpec& spec() { return spec_; }

 private:
  rdma::Engine& target_;
  std::uint32_t qpn_;
  proto::FrameSpec spec_;
};

// The engine a RawPeer drives: 02:00:00:00:00:01 at 10.0.0.1, every address resolving to the
// peer's MAC.
inline rdma::EngineConfig raw_peer_target(proto::MacAddr peer_mac) {
  rdma::EngineConfig cfg;
  cfg.path.local.mac = {2, 0, 0, 0, 0, 1};
  cfg.path.local.ip = rdma::IpAddress::ipv4({10, 0, 0, 1});
  cfg.path.resolve_mac = [peer_mac](const rdma::IpAddress&) -> std::optional<proto::MacAddr> { return peer_mac; };
  return cfg;
}

// What the target QP is told about the raw peer on its way to RTR.
struct RawPeerPath {
  proto::Ipv4Addr peer_ip{};
  std::uint32_t peer_qpn = 0;
  std::uint32_t rq_psn = 0;
  unsigned access = 0;
  std::uint8_t max_dest_rd_atomic = 4;
  std::uint8_t min_rnr_timer = 14;
  ibv_mtu mtu = IBV_MTU_1024;
};

inline void to_init(rdma::Engine& e, rdma::QueuePair* qp, unsigned access) {
  const Status s = rdma::modify_to_init(e, qp, IBV_QPT_RC, static_cast<int>(access), 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

// INIT, then RTR towards the raw peer.
inline void to_rtr(rdma::Engine& e, rdma::QueuePair* qp, const RawPeerPath& p) {
  to_init(e, qp, p.access);
  rdma::PeerPath path;
  path.mtu = p.mtu;
  path.dest_qpn = p.peer_qpn;
  path.rq_psn = p.rq_psn;
  path.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4(p.peer_ip));
  path.max_dest_rd_atomic = p.max_dest_rd_atomic;
  path.min_rnr_timer = p.min_rnr_timer;
  const Status s = rdma::modify_to_rtr(e, qp, IBV_QPT_RC, path);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

// RTR to RTS with perftest's retry settings.
inline void to_rts(rdma::Engine& e, rdma::QueuePair* qp, std::uint32_t sq_psn, std::uint8_t max_rd_atomic) {
  rdma::SendSide send;
  send.sq_psn = sq_psn;
  send.max_rd_atomic = max_rd_atomic;
  const rdma::QpTransition t = rdma::rts_transition(IBV_QPT_RC, send);
  const Status s = e.modify_qp(qp, t.attr, t.mask);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

inline proto::ExtHeaders reth(std::uint64_t va, std::uint32_t rkey, std::uint32_t len) {
  proto::ExtHeaders e;
  e.reth = proto::Reth{proto::Be64::of(va), proto::Be32::of(rkey), proto::Be32::of(len)};
  return e;
}

inline proto::ExtHeaders atomic_eth(std::uint64_t va, std::uint32_t rkey, std::uint64_t swap_add, std::uint64_t cmp) {
  proto::ExtHeaders e;
  e.atomic = proto::AtomicEth{proto::Be64::of(va), proto::Be32::of(rkey), proto::Be64::of(swap_add), proto::Be64::of(cmp)};
  return e;
}

// Where `qp` would place the payload of `frame` if it came in now, and what it would ask for
// ahead (QueuePair::payload_dest).
inline rdma::PayloadDest payload_dest_of(const rdma::QueuePair& qp, std::span<const std::byte> frame) {
  proto::Packet pkt;
  EXPECT_EQ(proto::parse_frame(frame, {}, pkt), proto::ParseError::None);
  return qp.payload_dest(pkt);
}

}  // namespace roce::test
