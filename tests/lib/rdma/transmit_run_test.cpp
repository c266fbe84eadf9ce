// A run of frames (QueuePair::build_run, TransportTuning::tx_runs): consecutive one-packet SENDs
// and WRITEs of an RC QP built in one call with the windows asked once. Each case posts the same
// list on two QPs, one with runs and one without, and compares what they send: the run must stop
// exactly where the frame-at-a-time path stops (the in-flight caps, the reorder reach, a
// multi-packet WQE, a READ, a fence behind a READ) and leave the rest to it. And post_send over a
// list: a bad WR in the middle fails there with bad_wr pointing at it, the earlier ones posted;
// the lkey check remembered from one WR to the next still checks each SGE's bounds and access.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "protocol/aeth.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::transmit_run_test {
namespace {

using namespace roce::proto;

constexpr MacAddr kPeerMac{2, 0, 0, 0, 0, 0xBE};
constexpr Ipv4Addr kPeerIp{10, 0, 0, 12};
constexpr std::uint32_t kPeerQpn = 0x140;
constexpr std::uint32_t kS = 0xFFFFFA;  // the requester's first PSN: runs cross the wrap

struct Shape {
  std::uint32_t max_inflight = 4096;
  std::uint64_t max_inflight_bytes = 0;
  std::uint32_t selective = 0;  // reorder window (0: go-back-N)
  bool window = true;           // go-back-N's congestion window (its static cap: the caps above)
  std::uint32_t depth = 64;     // send queue slots
  bool request_template = true; // off: the builder writes each frame's headers
};

struct Wr {
  ibv_wr_opcode op = IBV_WR_RDMA_WRITE;
  std::uint32_t len = 64;
  unsigned flags = 0;
};

// One requester QP toward a raw peer, with or without runs.
class Side {
 public:
  Side(bool runs, const Shape& shape) {
    rdma::EngineConfig cfg = raw_peer_target(kPeerMac);
    cfg.tuning.tx_runs = runs;
    cfg.tuning.request_template = shape.request_template;
    cfg.tuning.max_inflight_packets = shape.max_inflight;
    cfg.tuning.max_inflight_bytes = shape.max_inflight_bytes;
    cfg.tuning.window.go_back_n_congestion = shape.window;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    QpOptions o;
    o.depth = shape.depth;
    ep_ = make_endpoint(*engine_, o);
    if (shape.selective != 0) {
      const Status s = ep_.qp->set_selective_repeat(shape.selective);
      EXPECT_TRUE(s.ok()) << s.error().message;
    }
    to_rtr(*engine_, ep_.qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
    to_rts(*engine_, ep_.qp, kS, 4);
    peer_ = std::make_unique<RawPeer>(*engine_, kPeerMac, kPeerIp, kPeerQpn, ep_.qp->qpn());
    src_.resize(8192);
    for (std::size_t i = 0; i < src_.size(); ++i) src_[i] = static_cast<std::byte>(i * 7 + 3);
    mr_ = reg(*engine_, ep_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
  }

  // Posts `wrs` as one list.
  void post(const std::vector<Wr>& wrs) {
    std::vector<ibv_sge> sg(wrs.size());
    std::vector<ibv_send_wr> list(wrs.size());
    for (std::size_t i = 0; i < wrs.size(); ++i) {
      sg[i] = sge(src_.data() + 16 * i, wrs[i].len, mr_);
      ibv_send_wr& w = list[i];
      w.wr_id = ++posted_;
      w.opcode = wrs[i].op;
      w.sg_list = &sg[i];
      w.num_sge = 1;
      w.send_flags = wrs[i].flags | IBV_SEND_SIGNALED;
      w.imm_data = 0x01020304u + static_cast<std::uint32_t>(i);
      if (wrs[i].op == IBV_WR_SEND_WITH_INV) w.invalidate_rkey = 0x5500u + static_cast<std::uint32_t>(i);
      w.wr.rdma.remote_addr = 0x10000 + 0x1000 * i;
      w.wr.rdma.rkey = 0x1234;
      w.next = i + 1 < wrs.size() ? &list[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(engine_->post_send(ep_.qp, list.data(), &bad), 0);
  }

  // The QP's frames by direct calls, as one transmit turn makes them: with runs, build_run
  // first (its counts in *runs) and build_next where it returns 0; without, build_next alone.
  std::vector<std::vector<std::byte>> turn(std::vector<std::size_t>* runs, Nanos now = 0, std::size_t burst = 16) {
    std::vector<std::vector<std::byte>> out;
    std::vector<std::vector<std::byte>> bufs(burst, std::vector<std::byte>(4096));
    std::vector<rdma::TxFrame> frames(bufs.size());
    for (;;) {
      for (std::size_t i = 0; i < bufs.size(); ++i) frames[i] = rdma::TxFrame{bufs[i].data(), 4096, 0};
      std::size_t n = ep_.qp->build_run(frames, now);
      if (n != 0) {
        runs->push_back(n);
      } else if (ep_.qp->build_next(frames[0], now)) {
        n = 1;
      } else {
        break;
      }
      for (std::size_t i = 0; i < n; ++i) out.emplace_back(frames[i].data, frames[i].data + frames[i].length);
    }
    ep_.qp->end_send_turn(now);
    return out;
  }

  // Everything the engine sends, call by call (32 frames a call).
  std::vector<std::vector<std::vector<std::byte>>> transmit() {
    std::vector<std::vector<std::vector<std::byte>>> calls;
    std::vector<std::vector<std::byte>> bufs(32, std::vector<std::byte>(4096));
    std::vector<rdma::TxFrame> frames(bufs.size());
    for (;;) {
      for (std::size_t i = 0; i < bufs.size(); ++i) frames[i] = rdma::TxFrame{bufs[i].data(), 4096, 0};
      const std::size_t n = engine_->transmit(frames, 0);
      if (n == 0) break;
      auto& call = calls.emplace_back();
      for (std::size_t i = 0; i < n; ++i) call.emplace_back(frames[i].data, frames[i].data + frames[i].length);
    }
    return calls;
  }

  void ack(std::uint32_t psn, Nanos now = 0) {
    ExtHeaders e;
    e.aeth = Aeth{Syndrome::ack().raw, Be24::of(0)};
    peer_->send(peer_->frame(Opcode::RcAck, psn & kPsnMask, e, {}, false), now);
  }
  // A NAK (PSN sequence error) at `psn`: go-back-N rewinds to it.
  void nak(std::uint32_t psn, Nanos now = 0) {
    ExtHeaders e;
    e.aeth = Aeth{Syndrome::nak(NakCode::PsnSequenceError).raw, Be24::of(0)};
    peer_->send(peer_->frame(Opcode::RcAck, psn & kPsnMask, e, {}, false), now);
  }
  // A READ's one response (its payload at most one MTU), completing it.
  void read_response(std::uint32_t psn, std::uint32_t len) {
    ExtHeaders e;
    e.aeth = Aeth{Syndrome::ack().raw, Be24::of(0)};
    const std::vector<std::byte> payload(len, std::byte{9});
    peer_->send(peer_->frame(Opcode::RcReadResponseOnly, psn & kPsnMask, e, payload, false));
  }
  rdma::QueuePair& qp() { return *ep_.qp; }
  Endpoint& ep() { return ep_; }
  const rdma::MemoryRegion* mr() const { return mr_; }
  std::vector<std::byte>& src() { return src_; }

 private:
  rdma::MrTable mrs_;
  std::unique_ptr<rdma::Engine> engine_;
  Endpoint ep_;
  std::unique_ptr<RawPeer> peer_;
  std::vector<std::byte> src_;
  const rdma::MemoryRegion* mr_ = nullptr;
  std::uint64_t posted_ = 0;
};

std::vector<std::uint32_t> psns_of(const std::vector<std::vector<std::byte>>& frames) {
  std::vector<std::uint32_t> psns;
  for (const auto& f : frames) {
    Packet pkt;
    EXPECT_EQ(parse_frame(f, {}, pkt), ParseError::None);
    EXPECT_EQ(pkt.icrc_status, IcrcStatus::Ok);
    psns.push_back(pkt.psn());
  }
  return psns;
}

// Posts `wrs` on a QP with runs and one without, runs one turn of direct calls on each, and
// checks both sent the same bytes; returns the run side's run lengths.
class TransmitRun : public ::testing::Test {
 protected:
  void start(const Shape& shape) {
    runs_ = std::make_unique<Side>(true, shape);
    plain_ = std::make_unique<Side>(false, shape);
  }
  void post(const std::vector<Wr>& wrs) {
    runs_->post(wrs);
    plain_->post(wrs);
  }
  // One turn on each side: the frames (compared) and the run lengths.
  std::vector<std::size_t> turn(std::size_t expect_frames, Nanos now = 0, std::size_t burst = 16) {
    std::vector<std::size_t> runs, none;
    const auto a = runs_->turn(&runs, now, burst);
    const auto b = plain_->turn(&none, now, burst);
    EXPECT_TRUE(none.empty()) << "runs are off on the plain side";
    EXPECT_EQ(a.size(), expect_frames);
    EXPECT_EQ(psns_of(a), psns_of(b));
    EXPECT_TRUE(a == b) << "a frame differs from the frame-at-a-time path's";
    return runs;
  }
  void ack(std::uint32_t psn, Nanos now = 0) {
    runs_->ack(psn, now);
    plain_->ack(psn, now);
  }
  // The completer's timers as the frame-at-a-time path left them.
  void expect_same_timers(const char* when) {
    const rdma::Completer& a = runs_->qp().completer();
    const rdma::Completer& b = plain_->qp().completer();
    EXPECT_EQ(a.retransmit_deadline(), b.retransmit_deadline()) << when;
    EXPECT_EQ(a.deadline(), b.deadline()) << when;
    EXPECT_EQ(runs_->qp().deadline(), plain_->qp().deadline()) << when;
  }
  std::unique_ptr<Side> runs_, plain_;
};

TEST_F(TransmitRun, EveryRunOpcodeAsFrameByFrame) {
  start({});
  post({{IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_WRITE_WITH_IMM, 13},
        {IBV_WR_SEND, 1024},
        {IBV_WR_SEND_WITH_IMM, 0},
        {IBV_WR_SEND_WITH_INV, 7},
        {IBV_WR_RDMA_WRITE, 0},
        {IBV_WR_SEND, 30, IBV_SEND_SOLICITED},
        {IBV_WR_RDMA_WRITE_WITH_IMM, 64, IBV_SEND_SOLICITED}});
  EXPECT_EQ(turn(8), (std::vector<std::size_t>{8}));
}

// The same through the builder: a run keeps one set of extension headers for its frames (each
// stores its opcode's), and the builder's FrameSpec carries all of them.
TEST_F(TransmitRun, EveryRunOpcodeAsFrameByFrameWithoutTheTemplate) {
  start({.request_template = false});
  ASSERT_FALSE(runs_->qp().context().request_template.ready());
  post({{IBV_WR_SEND_WITH_INV, 7},
        {IBV_WR_RDMA_WRITE_WITH_IMM, 13, IBV_SEND_SOLICITED},
        {IBV_WR_SEND, 1024},
        {IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_SEND_WITH_IMM, 0},
        {IBV_WR_SEND_WITH_INV, 30}});
  EXPECT_EQ(turn(6), (std::vector<std::size_t>{6}));
}

// A run's frames share their headers' image while opcode, SE and length agree (the request
// template's RequestTemplate::Image, Requester::build_run): one of them changed alone, and back,
// and frames of one image with their own PSNs, immediates, keys and remote addresses, as frame by
// frame.
TEST_F(TransmitRun, AFrameDifferingInOneHeaderFieldGetsItsOwnHeaders) {
  start({});
  post({{IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_WRITE, 64, IBV_SEND_SOLICITED},
        {IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_WRITE, 65},
        {IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_SEND, 64},
        {IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_WRITE_WITH_IMM, 64},
        {IBV_WR_RDMA_WRITE_WITH_IMM, 64},
        {IBV_WR_SEND_WITH_IMM, 64, IBV_SEND_SOLICITED},
        {IBV_WR_SEND_WITH_IMM, 64, IBV_SEND_SOLICITED},
        {IBV_WR_SEND_WITH_INV, 64},
        {IBV_WR_SEND_WITH_INV, 64},
        {IBV_WR_RDMA_WRITE, 0},
        {IBV_WR_RDMA_WRITE, 0}});
  EXPECT_EQ(turn(16), (std::vector<std::size_t>{16}));
}

// Runs of 32 and of 40 frames, the payloads of every pad from 0 to 300 bytes: a run's frames are
// sealed together after all of them are written (Requester::seal_run, icrc_batch.hpp), 32 at the
// most at a time, and must be the frames sealed one by one.
TEST_F(TransmitRun, LongRunsSealedTogetherAsFrameByFrame) {
  for (const std::size_t run : {32u, 40u}) {
    start({.window = false});  // go-back-N's window starts at 16 packets
    std::vector<Wr> wrs(run);
    const ibv_wr_opcode ops[] = {IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM};
    for (std::size_t i = 0; i < run; ++i) wrs[i] = {ops[i % 4], static_cast<std::uint32_t>(i * 7 % 301), 0};
    wrs[3].len = 0;
    wrs[run - 1].len = 300;
    post(wrs);
    EXPECT_EQ(turn(run, 0, run), (std::vector<std::size_t>{run})) << "a run of " << run;
  }
}

TEST_F(TransmitRun, StopsAtTheInflightCap) {
  start({.max_inflight = 5});
  post(std::vector<Wr>(8));
  EXPECT_EQ(turn(5), (std::vector<std::size_t>{5}));
  ack(kS + 2);  // three acknowledged: three more go
  EXPECT_EQ(turn(3), (std::vector<std::size_t>{3}));
}

TEST_F(TransmitRun, StopsAtTheInflightBytes) {
  start({.max_inflight_bytes = 3 * 1024 - 1, .window = false});  // three 1 KiB packets, less a byte
  post(std::vector<Wr>(6));
  EXPECT_EQ(turn(3), (std::vector<std::size_t>{3}));
  ack(kS);
  EXPECT_EQ(turn(1), (std::vector<std::size_t>{1}));
}

TEST_F(TransmitRun, StopsAtTheSendWindow) {
  // The window's static cap is the bytes' whole packets (two), below the byte cap's three.
  start({.max_inflight_bytes = 3 * 1024 - 1});
  post(std::vector<Wr>(6));
  EXPECT_EQ(turn(2), (std::vector<std::size_t>{2}));
  EXPECT_EQ(runs_->qp().requester().window_limit(), 2u);
  ack(kS);
  EXPECT_EQ(turn(1), (std::vector<std::size_t>{1}));
}

TEST_F(TransmitRun, StopsAtTheReorderReach) {
  start({.selective = 8});
  post(std::vector<Wr>(12));
  EXPECT_EQ(turn(8), (std::vector<std::size_t>{8}));
  ack(kS + 3);
  EXPECT_EQ(turn(4), (std::vector<std::size_t>{4}));
}

TEST_F(TransmitRun, StopsAtTheSelectiveWindow) {
  // Selective repeat's window starts at WindowTuning::initial_packets (16), inside the reach.
  start({.selective = 64});
  post(std::vector<Wr>(24));
  EXPECT_EQ(turn(16), (std::vector<std::size_t>{16}));
  EXPECT_EQ(runs_->qp().requester().window_limit(), 16u);
}

TEST_F(TransmitRun, StopsAtAMultiPacketWqe) {
  start({});
  post({{IBV_WR_RDMA_WRITE, 64}, {IBV_WR_SEND, 1000}, {IBV_WR_RDMA_WRITE, 1025}, {IBV_WR_RDMA_WRITE, 64}, {IBV_WR_SEND, 8}});
  // Two in a run; the two-packet WRITE and the rest frame by frame, then a run again.
  EXPECT_EQ(turn(6), (std::vector<std::size_t>{2, 2}));
}

TEST_F(TransmitRun, StopsAtAReadAndAFenceBehindIt) {
  start({});
  post({{IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_READ, 64},
        {IBV_WR_RDMA_WRITE, 64},
        {IBV_WR_RDMA_WRITE, 64, IBV_SEND_FENCE},
        {IBV_WR_RDMA_WRITE, 64}});
  // WRITE; the READ frame by frame; one WRITE; the fenced WRITE waits for the READ.
  EXPECT_EQ(turn(3), (std::vector<std::size_t>{1, 1}));
  runs_->read_response(kS + 1, 64);
  plain_->read_response(kS + 1, 64);
  EXPECT_EQ(turn(2), (std::vector<std::size_t>{2})) << "with the READ done the fence holds nothing back";
}

TEST_F(TransmitRun, AFenceWithNothingOutstandingDoesNotStopIt) {
  start({});
  post({{IBV_WR_RDMA_WRITE, 64}, {IBV_WR_RDMA_WRITE, 64, IBV_SEND_FENCE}, {IBV_WR_SEND, 64}});
  EXPECT_EQ(turn(3), (std::vector<std::size_t>{3}));
}

// The completer told once per run (Completer::on_run_sent) arms the retransmission and early
// timers as a call per frame did, and starts the RTT sample at the run's first PSN: an ACK of
// that PSN alone completes it.
TEST_F(TransmitRun, TimersAndTheRttSampleAsFrameByFrame) {
  start({});
  constexpr Nanos kT0 = 1'000'000, kRtt = 7'000;
  post(std::vector<Wr>(6));
  EXPECT_EQ(turn(6, kT0), (std::vector<std::size_t>{6}));
  EXPECT_NE(runs_->qp().completer().retransmit_deadline(), kNever);
  expect_same_timers("after the run");
  ack(kS, kT0 + kRtt);
  EXPECT_EQ(plain_->qp().completer().srtt(), kRtt);
  EXPECT_EQ(runs_->qp().completer().srtt(), kRtt) << "the sample starts at the first frame";
  expect_same_timers("after the first ACK");
  // A second run while five are outstanding: its frames start no sample (one completed; the
  // next starts at the new run's first PSN) and move the early timer to its last AckReq.
  post(std::vector<Wr>(3));
  EXPECT_EQ(turn(3, kT0 + 2 * kRtt), (std::vector<std::size_t>{3}));
  EXPECT_LT(runs_->qp().completer().deadline(), runs_->qp().completer().retransmit_deadline())
      << "with an RTT known, the early timer runs from the run's AckReq";
  expect_same_timers("after the second run");
  ack(kS + 6, kT0 + 4 * kRtt);
  EXPECT_EQ(runs_->qp().completer().srtt(), plain_->qp().completer().srtt());
  expect_same_timers("after the second ACK");
}

// Through Engine::transmit: the same frames in the same calls, a long stream with ACKs between
// turns (the quantum, the cap, runs resumed after a multi-packet WQE).
TEST_F(TransmitRun, EngineTransmitSendsWhatFrameByFrameSends) {
  start({.max_inflight = 40});
  std::uint32_t acked = 0;
  for (int round = 0; round < 6; ++round) {
    std::vector<Wr> wrs(20);
    wrs[5].len = 2048;
    wrs[11].op = IBV_WR_SEND_WITH_IMM;
    wrs[17].len = 3000;
    post(wrs);
    const auto a = runs_->transmit();
    const auto b = plain_->transmit();
    ASSERT_EQ(a.size(), b.size()) << "round " << round;
    for (std::size_t c = 0; c < a.size(); ++c) EXPECT_TRUE(a[c] == b[c]) << "round " << round << " call " << c;
    std::size_t sent = 0;
    for (const auto& call : a) sent += call.size();
    EXPECT_GT(sent, 0u);
    acked += static_cast<std::uint32_t>(sent);
    ack(kS + acked - 1);
  }
  EXPECT_EQ(drain(runs_->ep()).size(), drain(plain_->ep()).size());
}

// Engine::transmit does not try QueuePair::build_run where rdma::no_run_at_cursor says no run
// can start (docs/perf-changes.md section 89): every turn of a multi-packet message paid the
// run's room and walk to be told so. Where it says so, build_run builds nothing and moves neither
// the cursor nor the PSN; it says so for a WQE posted longer than a packet, one under way, and
// one a go-back-N NAK rewound into (a one-packet one too), and not for an empty queue, a WQE a
// run takes, or a cursor on a WQE all sent (skip_sent passes it; a run may follow).
TEST_F(TransmitRun, NoRunAtTheCursorOnlyWhereBuildRunBuildsNothing) {
  start({});
  Side& s = *runs_;
  std::vector<std::byte> buf(4096);
  const auto check = [&](bool no_run, const char* when) {
    ASSERT_EQ(rdma::no_run_at_cursor(s.qp()), no_run) << when;
    if (!no_run) return;
    const std::uint64_t cursor = s.qp().requester().cursor();
    const std::uint32_t psn = s.qp().requester().next_psn();
    std::array<rdma::TxFrame, 4> frames{};
    for (auto& f : frames) f = rdma::TxFrame{buf.data(), 4096, 0};
    EXPECT_EQ(s.qp().build_run(frames, 0), 0u) << when;
    EXPECT_EQ(s.qp().requester().cursor(), cursor) << when;
    EXPECT_EQ(s.qp().requester().next_psn(), psn) << when;
  };
  const auto send_one = [&] {
    rdma::TxFrame f{buf.data(), 4096, 0};
    ASSERT_TRUE(s.qp().build_next(f, 0));
  };
  check(false, "an empty queue");
  s.post({{IBV_WR_RDMA_WRITE, 3000}});  // three packets at an MTU of 1024: kS .. kS + 2
  check(true, "a WRITE longer than a packet, not started");
  send_one();
  check(true, "its first packet sent");
  send_one();
  send_one();
  check(false, "all three sent: skip_sent passes it");
  s.nak(kS + 1);
  check(true, "a NAK rewound into it");
  send_one();
  send_one();
  s.ack(kS + 2);
  s.post({{IBV_WR_RDMA_WRITE, 64}});
  check(false, "a one-packet WRITE: a run");
  std::vector<std::size_t> runs;
  EXPECT_EQ(s.turn(&runs).size(), 1u);
  EXPECT_EQ(runs, (std::vector<std::size_t>{1})) << "the run that no_run_at_cursor left to build_run";
  s.nak(kS + 3);
  check(true, "a NAK rewound into the one-packet WRITE");
}

// post_send over a list: the WR with too many SGEs fails with bad_wr at it, the two before it
// are posted (and sent), the two after it are not.
TEST(PostSendList, ABadWrInTheMiddleFailsThere) {
  Side side(true, {});
  std::vector<ibv_sge> sg(8, sge(side.src().data(), 64, side.mr()));
  std::array<ibv_send_wr, 5> list{};
  for (std::size_t i = 0; i < list.size(); ++i) {
    list[i].wr_id = 100 + i;
    list[i].opcode = IBV_WR_RDMA_WRITE;
    list[i].sg_list = sg.data();
    list[i].num_sge = 1;
    list[i].send_flags = IBV_SEND_SIGNALED;
    list[i].wr.rdma.remote_addr = 0x10000;
    list[i].wr.rdma.rkey = 0x1234;
    list[i].next = i + 1 < list.size() ? &list[i + 1] : nullptr;
  }
  list[2].num_sge = 5;  // the QP takes 4
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(side.ep().engine->post_send(side.ep().qp, list.data(), &bad), EINVAL);
  EXPECT_EQ(bad, &list[2]);
  EXPECT_EQ(psns_of(side.transmit().at(0)), (std::vector<std::uint32_t>{kS, kS + 1}));
  // The same list from the failed WR on: the fixed one and the rest go.
  list[2].num_sge = 2;
  list[3].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;  // 64 bytes: an atomic takes 8
  bad = nullptr;
  EXPECT_EQ(side.ep().engine->post_send(side.ep().qp, &list[2], &bad), EINVAL);
  EXPECT_EQ(bad, &list[3]);
  EXPECT_EQ(psns_of(side.transmit().at(0)), (std::vector<std::uint32_t>{kS + 2}));
}

// Every WR the table-driven checks refuse (send_wr_rules.hpp), at every position of a list of
// five: post_send fails with EINVAL and bad_wr at it, the WRs before it posted and sent, none
// after it; a send queue that fills fails with ENOMEM where it fills.
TEST(PostSendList, ABadWrInEveryPositionFailsThere) {
  struct Bad {
    const char* what;
    void (*make)(ibv_send_wr&, ibv_sge*);
  };
  const Bad kinds[] = {
      {"five SGEs (the QP takes 4)", [](ibv_send_wr& w, ibv_sge*) { w.num_sge = 5; }},
      {"a negative SGE count", [](ibv_send_wr& w, ibv_sge*) { w.num_sge = -1; }},
      {"IBV_WR_TSO", [](ibv_send_wr& w, ibv_sge*) { w.opcode = IBV_WR_TSO; }},
      {"an opcode past the table", [](ibv_send_wr& w, ibv_sge*) { w.opcode = static_cast<ibv_wr_opcode>(200); }},
      {"an atomic of 64 bytes", [](ibv_send_wr& w, ibv_sge*) { w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; }},
      {"an inline READ", [](ibv_send_wr& w, ibv_sge*) {
         w.opcode = IBV_WR_RDMA_READ;
         w.send_flags |= IBV_SEND_INLINE;
       }},
      {"inline data past max_inline_data", [](ibv_send_wr& w, ibv_sge* g) {
         w.send_flags |= IBV_SEND_INLINE;
         g->length = 65;
       }},
      {"a misaligned ATOMIC_WRITE", [](ibv_send_wr& w, ibv_sge* g) {
         w.opcode = IBV_WR_ATOMIC_WRITE;
         g->length = 8;
         w.wr.rdma.remote_addr = 0x10004;
       }},
      {"LOCAL_INV with an SGE", [](ibv_send_wr& w, ibv_sge*) { w.opcode = IBV_WR_LOCAL_INV; }},
      {"FLUSH without a placement type", [](ibv_send_wr& w, ibv_sge*) {
         w = rdma::flush_wr(w.wr_id, 0x1234, 0x10000, 64, 0, rdma::kFlushRange);
       }},
      {"BIND_MW without a window", [](ibv_send_wr& w, ibv_sge*) {
         w.opcode = IBV_WR_BIND_MW;
         w.num_sge = 0;
         w.bind_mw = {};
       }},
  };
  for (const Bad& kind : kinds) {
    for (std::size_t at = 0; at < 5; ++at) {
      Side side(true, {});
      std::vector<ibv_sge> sg(5 * 8, sge(side.src().data(), 64, side.mr()));
      std::array<ibv_send_wr, 5> list{};
      for (std::size_t i = 0; i < list.size(); ++i) {
        list[i].wr_id = 100 + i;
        list[i].opcode = IBV_WR_RDMA_WRITE;
        list[i].sg_list = &sg[8 * i];
        list[i].num_sge = 1;
        list[i].send_flags = IBV_SEND_SIGNALED;
        list[i].wr.rdma.remote_addr = 0x10000;
        list[i].wr.rdma.rkey = 0x1234;
      }
      kind.make(list[at], &sg[8 * at]);
      for (std::size_t i = 0; i < list.size(); ++i) list[i].next = i + 1 < list.size() ? &list[i + 1] : nullptr;
      ibv_send_wr* bad = nullptr;
      EXPECT_EQ(side.ep().engine->post_send(side.ep().qp, list.data(), &bad), EINVAL) << kind.what << " at " << at;
      EXPECT_EQ(bad, &list[at]) << kind.what << " at " << at;
      EXPECT_EQ(side.qp().context().sq.size(), at) << kind.what << " at " << at;
      std::vector<std::uint32_t> sent;
      for (const auto& call : side.transmit())
        for (std::uint32_t psn : psns_of(call)) sent.push_back(psn);
      std::vector<std::uint32_t> want;
      for (std::size_t i = 0; i < at; ++i) want.push_back((kS + static_cast<std::uint32_t>(i)) & kPsnMask);
      EXPECT_EQ(sent, want) << kind.what << " at " << at;
    }
  }
  Side small(true, {.depth = 3});
  std::vector<ibv_sge> sg(5, sge(small.src().data(), 64, small.mr()));
  std::array<ibv_send_wr, 5> list{};
  for (std::size_t i = 0; i < list.size(); ++i) {
    list[i].opcode = IBV_WR_RDMA_WRITE;
    list[i].sg_list = &sg[i];
    list[i].num_sge = 1;
    list[i].next = i + 1 < list.size() ? &list[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(small.ep().engine->post_send(small.ep().qp, list.data(), &bad), ENOMEM);
  EXPECT_EQ(bad, &list[3]);
}

// post_send writes only the WQE fields a WR's opcode reads (not the whole slot): a slot used
// again keeps nothing of its previous WR that shows. On a one-slot queue: a SEND with immediate
// and SE, then a plain SEND; a WRITE with immediate, then a WRITE; a READ, then a WRITE. Each
// goes out as its own WR says, and completes.
TEST(PostSendList, AReusedSlotKeepsNothingOfItsLastWr) {
  Side side(true, {.depth = 1});
  struct Step {
    ibv_wr_opcode op;
    unsigned flags;
    std::uint32_t len;
    Opcode want;
  };
  const Step steps[] = {
      {IBV_WR_SEND_WITH_IMM, IBV_SEND_SOLICITED, 32, Opcode::RcSendOnlyImm},
      {IBV_WR_SEND, 0, 16, Opcode::RcSendOnly},
      {IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SOLICITED, 40, Opcode::RcWriteOnlyImm},
      {IBV_WR_RDMA_WRITE, 0, 24, Opcode::RcWriteOnly},
      {IBV_WR_RDMA_READ, 0, 48, Opcode::RcReadRequest},
      {IBV_WR_RDMA_WRITE, 0, 8, Opcode::RcWriteOnly},
  };
  std::uint32_t psn = kS;
  for (std::size_t k = 0; k < std::size(steps); ++k) {
    const Step& st = steps[k];
    ibv_sge g = sge(side.src().data() + 8 * k, st.len, side.mr());
    ibv_send_wr wr{};
    wr.wr_id = 500 + k;
    wr.opcode = st.op;
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = st.flags | IBV_SEND_SIGNALED;
    wr.imm_data = st.op == IBV_WR_SEND || st.op == IBV_WR_RDMA_WRITE ? 0 : 0xA0B0C0D0u;
    wr.wr.rdma.remote_addr = 0x40000 + 0x100 * k;
    wr.wr.rdma.rkey = 0x777 + static_cast<std::uint32_t>(k);
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(side.ep().engine->post_send(side.ep().qp, &wr, &bad), 0) << k;
    const auto calls = side.transmit();
    ASSERT_EQ(calls.size(), 1u) << k;
    ASSERT_EQ(calls[0].size(), 1u) << k;
    Packet pkt;
    ASSERT_EQ(parse_frame(calls[0][0], {}, pkt), ParseError::None) << k;
    EXPECT_EQ(pkt.opcode(), raw(st.want)) << k;
    EXPECT_EQ(pkt.psn(), psn & kPsnMask) << k;
    EXPECT_EQ(pkt.bth.se(), (st.flags & IBV_SEND_SOLICITED) != 0) << k;
    EXPECT_EQ(pkt.info->has(ExtHeader::ImmDt), st.op == IBV_WR_SEND_WITH_IMM || st.op == IBV_WR_RDMA_WRITE_WITH_IMM) << k;
    if (pkt.info->has(ExtHeader::Reth)) {
      EXPECT_EQ(pkt.ext.reth.va.get(), 0x40000u + 0x100 * k) << k;
      EXPECT_EQ(pkt.ext.reth.rkey.get(), 0x777u + k) << k;
      EXPECT_EQ(pkt.ext.reth.dma_length.get(), st.len) << k;
    }
    const std::uint32_t payload = st.op == IBV_WR_RDMA_READ ? 0 : st.len;
    ASSERT_EQ(pkt.payload_length, payload) << k;
    EXPECT_TRUE(std::equal(pkt.payload.begin(), pkt.payload.end(), side.src().begin() + 8 * k)) << k;
    if (st.op == IBV_WR_RDMA_READ) side.read_response(psn, st.len);
    else side.ack(psn);
    const auto wcs = drain(side.ep());
    ASSERT_EQ(wcs.size(), 1u) << k;
    EXPECT_EQ(wcs[0].wr_id, 500 + k);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
    ++psn;
  }
}

// After a QP reset the send queue's slots hold what their last WQEs left (one Done with a
// local error, one flushed): a WR posted into such a slot once the QP is back in RTS goes out and completes.
TEST(PostSendList, ASlotLeftByAResetKeepsNothing) {
  Side side(true, {.depth = 2});
  ibv_sge good = sge(side.src().data(), 64, side.mr());
  ibv_sge wrong = good;
  wrong.lkey ^= 0x100;  // no such region: a local protection error when it is reached
  for (ibv_sge* g : {&good, &wrong}) {
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(side.ep().engine->post_send(side.ep().qp, &wr, &bad), 0);
  }
  // The first goes out, the second fails (the QP enters ERR and flushes the first): both slots
  // retired, one Done with a local error.
  EXPECT_EQ(psns_of(side.transmit().at(0)), (std::vector<std::uint32_t>{kS}));
  ibv_qp_attr reset{};
  reset.qp_state = IBV_QPS_RESET;
  ASSERT_TRUE(side.ep().engine->modify_qp(side.ep().qp, reset, IBV_QP_STATE).ok());
  (void)drain(side.ep());
  to_rtr(*side.ep().engine, side.ep().qp, RawPeerPath{kPeerIp, kPeerQpn, 0, 0, 4, 14, IBV_MTU_1024});
  to_rts(*side.ep().engine, side.ep().qp, kS, 4);
  for (std::uint64_t id : {7u, 8u}) {  // both slots, the one the bad WR had among them
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = &good;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(side.ep().engine->post_send(side.ep().qp, &wr, &bad), 0);
  }
  const auto calls = side.transmit();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(psns_of(calls[0]), (std::vector<std::uint32_t>{kS, kS + 1}));
  side.ack(kS + 1);
  const auto wcs = drain(side.ep());
  ASSERT_EQ(wcs.size(), 2u);
  for (const ibv_wc& wc : wcs) EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
}

// A send queue of a depth that is not a power of two: full at its depth, its slots (the depth
// rounded up: WorkQueue masks the index) each used in turn and never two live WQEs in one. Ten
// rounds of three WRITEs on a 3-deep QP go out with their own bytes and complete.
TEST(PostSendList, AQueueOfDepthThreeGoesRoundItsSlots) {
  rdma::WorkQueue<rdma::SendWqe> q(3);
  EXPECT_EQ(q.depth(), 3u);
  EXPECT_EQ(q.slots(), 4u);
  std::vector<std::uint32_t> taken;
  for (int i = 0; i < 3; ++i) {
    std::uint32_t slot = 0;
    q.push(&slot);
    taken.push_back(slot);
  }
  EXPECT_TRUE(q.full());
  q.pop();
  std::uint32_t slot = 0;
  q.push(&slot);
  taken.push_back(slot);
  EXPECT_EQ(taken, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(q.slot_of(q.tail()), 0u) << "after the last slot the first";

  Side side(true, {.depth = 3});
  std::uint32_t psn = kS;
  for (int round = 0; round < 10; ++round) {
    std::array<ibv_sge, 3> sg{};
    std::array<ibv_send_wr, 3> list{};
    for (std::size_t i = 0; i < list.size(); ++i) {
      sg[i] = sge(side.src().data() + 40 * round + 8 * i, 16, side.mr());
      list[i].wr_id = 1000 + 3 * round + i;
      list[i].opcode = IBV_WR_RDMA_WRITE;
      list[i].sg_list = &sg[i];
      list[i].num_sge = 1;
      list[i].send_flags = IBV_SEND_SIGNALED;
      list[i].next = i + 1 < list.size() ? &list[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(side.ep().engine->post_send(side.ep().qp, list.data(), &bad), 0) << round;
    const auto calls = side.transmit();
    ASSERT_EQ(calls.size(), 1u) << round;
    ASSERT_EQ(calls[0].size(), 3u) << round;
    for (std::size_t i = 0; i < 3; ++i) {
      Packet pkt;
      ASSERT_EQ(parse_frame(calls[0][i], {}, pkt), ParseError::None);
      EXPECT_EQ(pkt.psn(), (psn + i) & kPsnMask);
      ASSERT_EQ(pkt.payload.size(), 16u);
      EXPECT_TRUE(std::equal(pkt.payload.begin(), pkt.payload.end(), side.src().begin() + 40 * round + 8 * i))
          << round << " " << i;
    }
    psn += 3;
    side.ack(psn - 1);
    EXPECT_EQ(drain(side.ep()).size(), 3u) << round;
  }
}

// An empty queue restarted at its first slot: its indices move on to the next multiple of the
// slot count (still growing), and the next push takes slot 0; a queue that holds entries is left
// as it is, and so is one already at such a multiple.
TEST(PostSendList, AnEmptyQueueRestartsAtItsFirstSlot) {
  rdma::WorkQueue<rdma::SendWqe> q(3);  // 4 slots
  std::vector<std::uint32_t> taken;
  const auto push = [&](std::uint64_t wr_id) {
    std::uint32_t slot = 99;
    q.push(&slot).wr_id = wr_id;
    taken.push_back(slot);
  };
  push(1);
  push(2);
  q.pop();
  push(3);
  q.restart_at_first_slot();  // holds 2 and 3: left alone
  EXPECT_EQ(q.head(), 1u);
  EXPECT_EQ(q.tail(), 3u);
  EXPECT_EQ(q.at(q.head()).wr_id, 2u);
  EXPECT_EQ(q.at(q.head() + 1).wr_id, 3u);
  q.pop();
  q.pop();
  q.restart_at_first_slot();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.head(), 4u);
  EXPECT_EQ(q.tail(), 4u);
  push(4);
  push(5);
  push(6);
  EXPECT_TRUE(q.full());
  for (std::uint64_t i = q.head(), want = 4; i < q.tail(); ++i, ++want) EXPECT_EQ(q.at(i).wr_id, want);
  q.pop();
  q.pop();
  q.pop();
  q.restart_at_first_slot();  // empty at 7: on to 8
  EXPECT_EQ(q.tail(), 8u);
  q.restart_at_first_slot();  // at a multiple already: stays
  EXPECT_EQ(q.head(), 8u);
  push(7);
  EXPECT_EQ(taken, (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2, 0}));
}

// A completion into an empty CQ goes into the ring's first entry (the one the last lone
// completion used); completions queued behind others still wrap round the ring in order, and a
// full ring still overruns.
TEST(CompletionRing, AnEmptyRingStartsAgainAtItsFirstEntry) {
  rdma::CompletionQueue cq(4);
  std::uint64_t next_id = 1;
  const auto add = [&]() {
    ibv_wc* wc = cq.emplace();
    if (wc != nullptr) wc->wr_id = next_id++;
    return wc;
  };
  const auto take = [&](int n) {
    std::vector<std::uint64_t> ids;
    std::array<ibv_wc, 8> out{};
    const int got = cq.poll(n, out.data());
    for (int i = 0; i < got; ++i) ids.push_back(out[static_cast<std::size_t>(i)].wr_id);
    return ids;
  };
  ibv_wc* first = add();
  EXPECT_EQ(take(1), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(add(), first) << "empty: the first entry again";
  EXPECT_EQ(take(1), (std::vector<std::uint64_t>{2}));
  add();
  add();
  add();
  EXPECT_EQ(take(2), (std::vector<std::uint64_t>{3, 4}));
  add();
  add();  // behind 5: the ring wraps
  EXPECT_EQ(take(3), (std::vector<std::uint64_t>{5, 6, 7}));
  for (int i = 0; i < 4; ++i) add();
  EXPECT_EQ(cq.size(), 4u);
  EXPECT_EQ(add(), nullptr) << "full: an overrun";
  EXPECT_EQ(cq.overruns(), 1u);
  std::array<ibv_wc, 8> out{};
  EXPECT_EQ(cq.poll(8, out.data()), -1);
}

// At queue depth 1 every WRITE is posted into a drained send queue: each goes into the same WQE
// slot (whose lines are still in cache) and out with its own bytes, key, address and PSN, and
// completes.
TEST(PostSendList, OneWriteAtATimeReusesTheFirstSlot) {
  Side side(true, {.depth = 8});
  const rdma::WorkQueue<rdma::SendWqe>& sq = side.qp().context().sq;
  std::uint32_t psn = kS;
  for (std::uint32_t k = 0; k < 12; ++k) {
    ibv_sge g = sge(side.src().data() + 64 * k, 32, side.mr());
    ibv_send_wr wr{};
    wr.wr_id = 900 + k;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = 0x50000 + 0x40 * k;
    wr.wr.rdma.rkey = 0x900 + k;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(side.ep().engine->post_send(side.ep().qp, &wr, &bad), 0) << k;
    ASSERT_EQ(sq.size(), 1u) << k;
    EXPECT_EQ(sq.slot_of(sq.head()), 0u) << k;
    EXPECT_EQ(&sq.at(sq.head()), &sq.at(0)) << k;
    const auto calls = side.transmit();
    ASSERT_EQ(calls.size(), 1u) << k;
    ASSERT_EQ(calls[0].size(), 1u) << k;
    Packet pkt;
    ASSERT_EQ(parse_frame(calls[0][0], {}, pkt), ParseError::None) << k;
    EXPECT_EQ(pkt.psn(), psn & kPsnMask) << k;
    EXPECT_EQ(pkt.ext.reth.va.get(), 0x50000u + 0x40 * k) << k;
    EXPECT_EQ(pkt.ext.reth.rkey.get(), 0x900u + k) << k;
    ASSERT_EQ(pkt.payload.size(), 32u) << k;
    EXPECT_TRUE(std::equal(pkt.payload.begin(), pkt.payload.end(), side.src().begin() + 64 * k)) << k;
    side.ack(psn);
    const auto wcs = drain(side.ep());
    ASSERT_EQ(wcs.size(), 1u) << k;
    EXPECT_EQ(wcs[0].wr_id, 900u + k);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
    ++psn;
  }
}

// The lkey check remembered within a list (one region validated, the next SGE under the same
// lkey) still checks each SGE: one past the region's end and a READ into a region without local
// write fail with a local protection error, the WRs around them succeed.
TEST(PostSendList, TheRememberedLkeyStillChecksBoundsAndAccess) {
  Side side(true, {});
  std::vector<std::byte>& src = side.src();
  const std::uint32_t lkey = side.mr()->lkey();
  std::vector<std::byte> ro(256);
  auto ro_mr = side.ep().engine->memory().register_region(side.ep().pd, ro.data(), ro.size(), 0);
  ASSERT_TRUE(ro_mr.ok());
  std::array<ibv_sge, 6> sg{
      ibv_sge{reinterpret_cast<std::uint64_t>(src.data()), 64, lkey},
      ibv_sge{reinterpret_cast<std::uint64_t>(src.data() + src.size() - 63), 64, lkey},  // one byte past the end
      ibv_sge{reinterpret_cast<std::uint64_t>(src.data() + src.size() - 64), 64, lkey},  // the last 64 bytes
      ibv_sge{reinterpret_cast<std::uint64_t>(ro.data()), 64, (*ro_mr)->lkey()},
      ibv_sge{reinterpret_cast<std::uint64_t>(ro.data()), 64, (*ro_mr)->lkey()},        // a READ into it: no local write
      ibv_sge{reinterpret_cast<std::uint64_t>(src.data() - 1), 64, lkey},                // one byte before the start
  };
  std::array<ibv_send_wr, 6> list{};
  for (std::size_t i = 0; i < list.size(); ++i) {
    list[i].wr_id = i;
    list[i].opcode = i == 4 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    list[i].sg_list = &sg[i];
    list[i].num_sge = 1;
    list[i].send_flags = IBV_SEND_SIGNALED;
    list[i].wr.rdma.remote_addr = 0x10000;
    list[i].wr.rdma.rkey = 0x1234;
    list[i].next = i + 1 < list.size() ? &list[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(side.ep().engine->post_send(side.ep().qp, list.data(), &bad), 0);
  const rdma::WorkQueue<rdma::SendWqe>& sq = side.qp().context().sq;
  ASSERT_EQ(sq.size(), list.size());
  std::vector<bool> failed;
  for (std::uint64_t i = sq.head(); i < sq.tail(); ++i) failed.push_back(sq.at(i).local_error);
  EXPECT_EQ(failed, (std::vector<bool>{false, true, false, false, true, true}));
  // The requester sends WR 0 and finishes WR 1 with a local protection error (the QP enters ERR
  // and flushes the rest).
  EXPECT_EQ(psns_of(side.transmit().at(0)), (std::vector<std::uint32_t>{kS}));
  const auto wcs = drain(side.ep());
  ASSERT_EQ(wcs.size(), list.size());
  const auto second = std::find_if(wcs.begin(), wcs.end(), [](const ibv_wc& wc) { return wc.wr_id == 1; });
  ASSERT_NE(second, wcs.end());
  EXPECT_EQ(second->status, IBV_WC_LOC_PROT_ERR) << describe(*second);
}

}  // namespace
}  // namespace roce::test::transmit_run_test
