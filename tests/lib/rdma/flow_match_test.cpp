// A QP's ACKs matched against their flow's header image instead of parsed (Engine::match_flow,
// docs/perf-changes.md section 87): every scenario is played on two engines built alike, one
// matching (EngineConfig::match_flows) and one parsing every frame, and after every step what
// each sends (byte for byte), its completions, counters, QP state, completer timers, the engine's
// drops and parse drops must be the same. The ACKs come plain and edited (each edit a check the
// match must make or leave to the parse), and the matching engine must have matched the plain
// ones (without the change: none).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "protocol/aeth.hpp"
#include "protocol/psn.hpp"
#include "tests/support/frame_edit.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::flow_match_test {
namespace {

using namespace roce::proto;
namespace fe = frame_edit;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBE};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 12};
constexpr std::uint32_t kPeerQpn = 0x150;
constexpr std::uint32_t kS = 0xFFFFFD;  // the requester's first PSN: the scenarios cross the PSN wrap
constexpr std::uint64_t kRemote = 0x10000;
constexpr std::uint32_t kRkey = 0x1234;

std::uint32_t psn(std::int32_t i) { return psn_add(kS, i); }

// An ACK's edits: each one a check of parse_frame's or the engine's.
enum class Edit {
  None, IcrcBad, Ipv4ChecksumBad, DestIp, Pkey, PadCnt, TVer, UnknownQpn, UdpPort, Payload, Cut, EthernetPadding,
  Ttl, CeMark, SrcPort, Fecn, IpOptions, Vlan, Opcode,
};

struct Observed {
  std::vector<std::vector<std::byte>> sent;
  std::vector<std::array<std::uint64_t, 5>> completions;  // wr_id, status, opcode, byte_len, qp_num
  std::array<std::uint64_t, rdma::kCounterCount> counters{};
  std::array<std::uint64_t, static_cast<std::size_t>(rdma::EngineDrop::Count)> drops{};
  std::array<std::uint64_t, static_cast<std::size_t>(ParseError::Count)> parse_drops{};
  rdma::QpState state{};
  std::uint32_t una = 0, sent_end = 0;
  Nanos deadline = 0, retransmit = 0, srtt = 0;
  bool operator==(const Observed&) const = default;
};

class World {
 public:
  explicit World(bool match) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.match_flows = match;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    ep_ = make_endpoint(*engine_, QpOptions{});
    to_rtr(*engine_, ep_.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
    to_rts(*engine_, ep_.qp, kS, 4);
    peer_ = std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn, ep_.qp->qpn());
    buf_.assign(64 * 1024, std::byte{5});
    mr_ = reg(*engine_, ep_.pd, buf_, IBV_ACCESS_LOCAL_WRITE);
  }

  void post(std::uint64_t wr_id) {
    ibv_sge g = sge(buf_.data(), 64, mr_);
    ASSERT_EQ(test::post(ep_, IBV_WR_RDMA_WRITE, wr_id, &g, 1, kRemote, kRkey, IBV_SEND_SIGNALED), 0);
  }
  void answer(Syndrome s, std::uint32_t p, Edit e, bool in_burst) {
    now_ += 1000;
    engine_->advance(now_);
    ExtHeaders ext;
    ext.aeth = Aeth{s.raw, Be24::of(p & 0xFF)};
    std::vector<std::byte> f = peer_->frame(Opcode::RcAck, p, ext, {}, false, e == Edit::CeMark ? Ecn::Ce : Ecn::Ect0);
    edit(f, e);
    if (in_burst) {
      engine_->begin_receive_burst();
      peer_->send(f, now_);
      engine_->end_receive_burst();
    } else {
      peer_->send(f, now_);
    }
  }
  // A control call between ACKs (the RNR timer again: the QP's path is the same).
  void modify() {
    ibv_qp_attr a{};
    a.min_rnr_timer = 14;
    ASSERT_TRUE(engine_->modify_qp(ep_.qp, a, IBV_QP_MIN_RNR_TIMER).ok());
  }

  Observed observe() {
    Observed o;
    for (const Reply& r : peer_->collect(now_)) o.sent.push_back(r.frame);
    for (const ibv_wc& wc : drain(ep_))
      o.completions.push_back({wc.wr_id, static_cast<std::uint64_t>(wc.status), static_cast<std::uint64_t>(wc.opcode), wc.byte_len, wc.qp_num});
    o.counters = ep_.qp->counters().values();
    for (std::size_t d = 0; d < o.drops.size(); ++d) o.drops[d] = engine_->drops(static_cast<rdma::EngineDrop>(d));
    for (std::size_t d = 0; d < o.parse_drops.size(); ++d) o.parse_drops[d] = engine_->parse_drops(static_cast<ParseError>(d));
    o.state = ep_.qp->state();
    const rdma::Completer& c = ep_.qp->completer();
    o.una = c.una();
    o.sent_end = ep_.qp->requester().sent_end_psn();
    o.deadline = c.deadline();
    o.retransmit = c.retransmit_deadline();
    o.srtt = c.srtt();
    return o;
  }
  const rdma::Engine& engine() const { return *engine_; }

 private:
  static void edit(std::vector<std::byte>& f, Edit e) {
    auto ip = fe::read_header<Ipv4Header>(f, fe::kIpOffset);
    auto udp = fe::read_header<UdpHeader>(f, fe::kUdpOffset);
    auto bth = fe::read_header<Bth>(f, fe::kBthOffset);
    switch (e) {
      case Edit::None: case Edit::CeMark: return;
      case Edit::IcrcBad: f.back() ^= std::byte{0x40}; return;
      case Edit::Ipv4ChecksumBad: ip.checksum.set(static_cast<std::uint16_t>(ip.checksum.get() ^ 0x100)); fe::write_header(f, fe::kIpOffset, ip); return;
      case Edit::DestIp: ip.dst[3] = 99; break;
      case Edit::Ttl: --ip.ttl; break;
      case Edit::Pkey: bth.pkey.set(0x8001); break;  // another partition
      case Edit::PadCnt: bth.flags = static_cast<std::uint8_t>(bth.flags | 1u << Bth::kPadCntShift); break;
      case Edit::TVer: bth.flags = static_cast<std::uint8_t>(bth.flags | 1u); break;
      case Edit::UnknownQpn: bth.dest_qp.set(bth.dest_qp.get() + 1); break;
      case Edit::Fecn: bth.resv8a = Bth::kFecn; break;
      case Edit::Opcode: bth.opcode = raw(Opcode::RcReadResponseOnly); break;
      case Edit::UdpPort: udp.dst_port.set(4792); break;
      case Edit::SrcPort: udp.src_port.set(0xC124); break;  // the peer's flow changed: learnt again
      case Edit::Payload: f = fe::with_tail(f, 4); fe::reseal(f); return;
      case Edit::Cut: f.pop_back(); return;
      case Edit::EthernetPadding: f.insert(f.end(), 6, std::byte{0}); return;
      case Edit::IpOptions:
        f.insert(f.begin() + static_cast<long>(fe::kUdpOffset), 4, std::byte{1});
        ip.version_ihl = 0x46;
        ip.total_length.set(static_cast<std::uint16_t>(ip.total_length.get() + 4));
        fe::write_header(f, fe::kIpOffset, ip);
        fe::fix_ipv4_checksum(f);
        return;
      case Edit::Vlan: {
        const std::byte tag[4] = {std::byte{0x81}, std::byte{0}, std::byte{0}, std::byte{5}};
        f.insert(f.begin() + 12, tag, tag + 4);
        return;
      }
    }
    fe::write_header(f, fe::kIpOffset, ip);
    fe::write_header(f, fe::kUdpOffset, udp);
    fe::write_header(f, fe::kBthOffset, bth);
    fe::fix_ipv4_checksum(f);
    fe::reseal(f);
  }

  Nanos now_ = 0;
  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
  std::vector<std::byte> buf_;
  const rdma::MemoryRegion* mr_ = nullptr;
};

class FlowMatch : public ::testing::Test {
 protected:
  template <typename Fn>
  void step(Fn&& fn) {
    Observed o[2];
    for (int i = 0; i < 2; ++i) {
      fn(*worlds_[i]);
      o[i] = worlds_[i]->observe();
    }
    EXPECT_EQ(o[0], o[1]) << "step " << steps_;
    ++steps_;
  }
  void post(std::uint64_t wr_id) {
    step([&](World& w) { w.post(wr_id); });
  }
  void ack(std::uint32_t p, Edit e = Edit::None, Syndrome s = Syndrome::ack(), bool in_burst = false) {
    step([&](World& w) { w.answer(s, p, e, in_burst); });
  }

  std::unique_ptr<World> worlds_[2] = {std::make_unique<World>(true), std::make_unique<World>(false)};
  const rdma::Engine& matching() const { return worlds_[0]->engine(); }
  const rdma::Engine& parsing() const { return worlds_[1]->engine(); }
  unsigned steps_ = 0;
};

TEST_F(FlowMatch, AcksOneAtATimeAreMatchedAfterTheFirstAndHandledAsParsed) {
  for (std::int32_t i = 0; i < 8; ++i) {
    post(10 + i);
    ack(psn(i), Edit::None, Syndrome::ack(), i % 2 == 1);
  }
  EXPECT_EQ(matching().flow_matched(), 7u) << "the first ACK teaches the flow";
  EXPECT_EQ(matching().parsed(), 1u);
  EXPECT_EQ(parsing().flow_matched(), 0u);
  EXPECT_EQ(parsing().parsed(), 8u);
}

TEST_F(FlowMatch, EditedAcksBetweenPlainOnesAreParsedAndDroppedOrTakenAsByTheParse) {
  std::int32_t n = 0;
  post(1);
  ack(psn(n++));  // learnt
  const Edit edits[] = {Edit::IcrcBad, Edit::Ipv4ChecksumBad, Edit::DestIp, Edit::Pkey, Edit::PadCnt, Edit::TVer,
                        Edit::UnknownQpn, Edit::UdpPort, Edit::Payload, Edit::Cut, Edit::EthernetPadding, Edit::Ttl,
                        Edit::CeMark, Edit::SrcPort, Edit::Fecn, Edit::IpOptions, Edit::Vlan, Edit::Opcode};
  for (const Edit e : edits) {
    post(100 + n);
    post(200 + n);
    ack(psn(n), e);        // edited: dropped, or taken where the edit leaves a good ACK
    ack(psn(n + 1));       // plain: the rest acknowledged (or the same again)
    n += 2;
  }
  // A NAK and an RNR NAK of the flow, a control call, and ACKs after them.
  post(300);
  post(301);
  ack(psn(n), Edit::None, Syndrome::nak(NakCode::PsnSequenceError));
  ack(psn(n + 1));
  n += 2;
  step([](World& w) { w.modify(); });
  post(302);
  ack(psn(n), Edit::None, Syndrome::rnr_nak(1));
  ack(psn(n));
  // Every drop reason above was met by both engines alike (compared at each step). Matched: the
  // plain ACK after each edit (18) but after those that the QP took as its flow's new one (TTL,
  // UDP source port, FECN: 3), the Ethernet-padded ACK (1), the NAK and the ACK after it (2), the
  // last ACK (1; the RNR NAK after modify_qp was parsed and taught the flow again): 19.
  EXPECT_EQ(matching().flow_matched(), 19u);
  EXPECT_EQ(parsing().flow_matched(), 0u);
  EXPECT_GT(matching().drops(rdma::EngineDrop::IcrcBad), 0u);
  EXPECT_GT(matching().drops(rdma::EngineDrop::NotForUs), 0u);
  EXPECT_GT(matching().drops(rdma::EngineDrop::PkeyMismatch), 0u);
  EXPECT_GT(matching().drops(rdma::EngineDrop::Ipv4ChecksumBad), 0u);
  EXPECT_GT(matching().drops(rdma::EngineDrop::UnknownQp), 0u);
  EXPECT_GT(matching().drops(rdma::EngineDrop::Ipv4Options), 0u);
  EXPECT_GT(matching().parse_drops(ParseError::PadCntInconsistent), 0u);
  EXPECT_GT(matching().parse_drops(ParseError::BadTver), 0u);
  EXPECT_GT(matching().parse_drops(ParseError::NotRoceV2Port), 0u);
  EXPECT_GT(matching().parse_drops(ParseError::PayloadNotAllowed), 0u);
  EXPECT_GT(matching().parse_drops(ParseError::Truncated), 0u);
}

}  // namespace
}  // namespace roce::test::flow_match_test
