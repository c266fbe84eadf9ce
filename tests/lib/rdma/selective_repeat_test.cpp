// Selective repeat between two engines that both turned it on (docs/loss.md, part 2), on
// virtual time: frames are dropped by what they are (the first copy of a PSN, a SACK), and
// every request packet the requester puts on the wire is counted, so a loss is seen to cost
// exactly its own packets. Every byte and every completion is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <ostream>
#include <random>
#include <set>

#include "lib/rdma/reorder_buffer.hpp"
#include "protocol/parser.hpp"
#include "protocol/sack.hpp"
#include "tests/lib/rdma/frame_look.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::selective_repeat_test {
namespace {

using namespace roce::proto;

constexpr std::uint32_t kWindow = 64;
// roce-gen's, roce-appliance's and perf_suite's reorder window (client/connector.hpp
// kDefaultSelectiveRepeatWindow): the fault matrix runs at it.
constexpr std::uint32_t kDefaultWindow = 128;

bool is_request(std::uint8_t op) { return op <= 0x1D && op != 0x0D && op != 0x0E && op != 0x0F && op != 0x10 && op != 0x11 && op != 0x12; }

class SelectiveRepeat : public ::testing::Test {
 protected:
  // `sr_a`, `sr_b`: the reorder window each side was given (0: go-back-N).
  void build(std::uint32_t sr_a = kWindow, std::uint32_t sr_b = kWindow, LinkFaults fa = {}, LinkFaults fb = {}) {
    net_ = std::make_unique<SimNetwork>(net_seed_);
    // These tests count the packets of selective repeat's own mechanisms: the congestion window
    // (on by default, starting at 16 packets in slow start) would hold back what they send at
    // once. It is tested in overrun_test.cpp and SelectiveRepeatFaults (below, defaults).
    rdma::EngineConfig cfg;
    cfg.tuning.window.selective_repeat = window_;
    cfg.tuning.selective_tail_probe = probe_;
    cfg.reorder_pool_bytes = pool_bytes_;
    net_->add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
    net_->add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
    fa.drop_if = [this](std::span<const std::byte> f, std::uint64_t) { return drop("a", f); };
    fb.drop_if = [this](std::span<const std::byte> f, std::uint64_t) { return drop("b", f); };
    net_->connect("a", "b", fa, fb);
    net_->on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos) {
      const Frame x = look(f, true);
      if (!x.ok) return;
      if (from == "a" && is_request(x.opcode)) ++sent_[x.psn];
      if (x.opcode == kSackOpcode) ++sacks_on_wire_;
    };
    a_ = make_endpoint(net_->host("a"), o_);
    b_ = make_endpoint(net_->host("b"), o_);
    ASSERT_TRUE(a_.qp->set_selective_repeat(sr_a).ok());
    ASSERT_TRUE(b_.qp->set_selective_repeat(sr_b).ok());
    connect_pair(a_, b_, o_);
    src_.resize(256 * 1024);
    dst_.assign(256 * 1024, std::byte{0});
    std::mt19937_64 rng(7);
    for (auto& x : src_) x = static_cast<std::byte>(rng());
    smr_ = reg(*a_.engine, a_.pd, src_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    dmr_ = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  }
  // Drops the first copy of each PSN in `lose_` sent by a (requests) or b (READ responses),
  // and the first `lose_sacks_` SACKs b sends.
  bool drop(const std::string& from, std::span<const std::byte> f) {
    const Frame x = look(f, true);
    if (!x.ok) return false;
    if (drop_also_ && drop_also_(from, x)) {
      ++dropped_;
      return true;
    }
    if (from == "b" && x.opcode == kSackOpcode && lose_sacks_ > 0) {
      --lose_sacks_;
      ++dropped_;
      return true;
    }
    if (from == "b" && x.opcode == 0x11 && lose_acks_ && ack_copies_.insert(x.psn).second) {
      ++dropped_;
      return true;
    }
    if (from == "a" && responses_only_) return false;  // a READ request for a hole has a lost response's PSN
    const bool data = from == "a" ? is_request(x.opcode) : (x.opcode >= 0x0D && x.opcode <= 0x10);
    if (!data || !lose_.contains(x.psn)) return false;
    if (lose_twice_.contains(x.psn)) {
      if (++copies_[x.psn] > 2) return false;
      ++dropped_;
      return true;
    }
    if (!first_copy_[from].insert(x.psn).second) return false;
    ++dropped_;
    return true;
  }
  std::uint32_t psn(std::uint32_t i) const { return o_.sq_psn + i; }
  std::uint64_t resent() const { return a_.qp->counters().get(rdma::Counter::RetransmittedPkts); }
  std::uint64_t count(const Endpoint& e, rdma::Counter c) const { return e.qp->counters().get(c); }
  // Runs until `n` send completions came back on a; returns the receive completions of b.
  std::vector<ibv_wc> run(std::size_t n, std::vector<ibv_wc>* sends = nullptr) {
    std::vector<ibv_wc> recvs, mine;
    net_->run_until(
        [&] {
          for (const ibv_wc& wc : drain(a_)) mine.push_back(wc);
          for (const ibv_wc& wc : drain(b_)) recvs.push_back(wc);
          return mine.size() >= n;
        },
        10 * kSecond);
    net_->run_idle(net_->now() + 10 * kMilli);
    for (const ibv_wc& wc : drain(b_)) recvs.push_back(wc);
    EXPECT_EQ(mine.size(), n);
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].status, IBV_WC_SUCCESS) << i;
      EXPECT_EQ(mine[i].wr_id, i) << "send completions in posting order";
    }
    if (sends) *sends = mine;
    return recvs;
  }
  void write(std::uint64_t id, std::size_t off, std::uint32_t len) {
    ibv_sge g = sge(src_.data() + off, len, smr_);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, id, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data() + off), dmr_->rkey()), 0);
  }
  bool same(std::size_t off, std::size_t len) const { return std::memcmp(src_.data() + off, dst_.data() + off, len) == 0; }
  // Each PSN sent once, but those in `twice` exactly twice.
  void expect_sends(std::uint32_t packets, const std::set<std::uint32_t>& twice) {
    for (std::uint32_t i = 0; i < packets; ++i)
      EXPECT_EQ(sent_[psn(i)], twice.contains(psn(i)) ? 2 : 1) << "PSN +" << i;
    EXPECT_EQ(sent_.size(), packets);
  }

  QpOptions o_{};
  std::uint64_t net_seed_ = 21;
  std::unique_ptr<SimNetwork> net_;
  Endpoint a_, b_;
  std::vector<std::byte> src_, dst_;
  const rdma::MemoryRegion* smr_ = nullptr;
  const rdma::MemoryRegion* dmr_ = nullptr;
  std::set<std::uint32_t> lose_;
  std::map<std::string, std::set<std::uint32_t>> first_copy_;
  int lose_sacks_ = 0;
  bool lose_acks_ = false;            // the first copy of every ACK b sends
  bool window_ = false;               // the congestion window (WindowTuning::selective_repeat)
  bool probe_ = true;                 // TransportTuning::selective_tail_probe
  bool responses_only_ = false;       // lose_ applies to b's READ responses only
  std::size_t pool_bytes_ = rdma::EngineConfig{}.reorder_pool_bytes;  // each engine's reorder pool
  std::set<std::uint32_t> ack_copies_;
  std::set<std::uint32_t> lose_twice_;  // the first two copies (a subset of lose_)
  std::map<std::uint32_t, int> copies_;
  std::uint64_t dropped_ = 0, sacks_on_wire_ = 0;
  std::map<std::uint32_t, int> sent_;
  std::function<bool(const std::string& from, const Frame&)> drop_also_;  // a test's own drops, before the rules above
};

TEST_F(SelectiveRepeat, OneLostFrameCostsExactlyOneResend) {
  build();
  lose_ = {psn(5)};
  write(0, 0, 32 * 1024);  // 32 packets of 1 KiB
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(resent(), 1u);
  expect_sends(32, {psn(5)});
  EXPECT_GE(count(a_, rdma::Counter::SacksReceived), 1u);
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(count(a_, rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 26u);  // +6 .. +31 waited for +5
  // +6 .. +30 are MIDDLEs of the open message: placed at once; the LAST +31 is held whole.
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 25u);
  EXPECT_EQ(b_.qp->responder().reorder_held(), 0u);
  // +0 .. +4 in sequence and the 26 drained after the resend (placed or held whole) took the
  // responder run's straight path; only the resend, which fills the hole, took the walk.
  EXPECT_EQ(b_.qp->responder().run_writes(), 31u);
}

TEST_F(SelectiveRepeat, MiddlesBehindAHeldFirstAreHeldWhole) {
  // The hole +3 could have been an earlier WRITE to the second message's bytes (it is not here,
  // but the responder cannot know): the second message's MIDDLEs wait for it, held whole.
  build();
  lose_ = {psn(3)};
  write(0, 0, 16 * 1024);          // +0 .. +15
  write(1, 64 * 1024, 16 * 1024);  // +16 .. +31, another place
  run(2);
  EXPECT_TRUE(same(0, 16 * 1024));
  EXPECT_TRUE(same(64 * 1024, 16 * 1024));
  EXPECT_EQ(resent(), 1u);
  expect_sends(32, {psn(3)});
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 28u);  // +4 .. +31
  // +4 .. +14 from the open message; +15 .. +31 held whole.
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 11u);
}

// Two WRITEs to the same bytes, a MIDDLE of the first lost: the second one's MIDDLE for the
// same bytes must not land before the first one's resend does (requests execute in order).
// Placing MIDDLEs from a held FIRST did exactly that.
TEST_F(SelectiveRepeat, AnEarlierWriteToTheSameBytesLandsFirst) {
  build();
  lose_ = {psn(5)};
  write(0, 0, 16 * 1024);  // +0 .. +15
  std::memcpy(src_.data() + 128 * 1024, src_.data() + 200 * 1024, 16 * 1024);
  for (std::size_t i = 0; i < 16 * 1024; ++i) src_[128 * 1024 + i] ^= std::byte{0x5A};
  ibv_sge g = sge(src_.data() + 128 * 1024, 16 * 1024, smr_);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dmr_->rkey()), 0);
  run(2);
  EXPECT_EQ(std::memcmp(dst_.data(), src_.data() + 128 * 1024, 16 * 1024), 0) << "the second WRITE's bytes, everywhere";
}

TEST_F(SelectiveRepeat, MiddlesOfAMessageWhoseFirstIsMissingAreHeldWhole) {
  build();
  lose_ = {psn(16)};
  write(0, 0, 16 * 1024);
  write(1, 64 * 1024, 16 * 1024);  // its FIRST +16 lost: nothing says where +17 .. +30 go
  run(2);
  EXPECT_TRUE(same(0, 16 * 1024));
  EXPECT_TRUE(same(64 * 1024, 16 * 1024));
  EXPECT_EQ(resent(), 1u);
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 15u);
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 0u);
}

// SEND MIDDLEs: placed into the open SEND's receive when nothing before them can be a LAST.
class SelectiveRepeatSend : public SelectiveRepeat {
 protected:
  // Two receives of 32 KiB on b; SENDs of `packets` 1 KiB packets each from a, wr_id i.
  void sends(std::initializer_list<std::uint32_t> packets) {
    rbuf_.assign(64 * 1024, std::byte{0});
    rmr_ = reg(*b_.engine, b_.pd, rbuf_, IBV_ACCESS_LOCAL_WRITE);
    for (std::uint64_t i = 0; i < 2; ++i) {
      ibv_sge g = sge(rbuf_.data() + i * 32 * 1024, 32 * 1024, rmr_);
      ASSERT_EQ(post_recv(b_, 100 + i, &g, 1), 0);
    }
    std::uint64_t i = 0;
    for (const std::uint32_t n : packets) {
      ibv_sge g = sge(src_.data() + i * 32 * 1024, n * 1024, smr_);
      ASSERT_EQ(post(a_, IBV_WR_SEND, i, &g, 1, 0, 0), 0);
      lengths_.push_back(n * 1024);
      ++i;
    }
  }
  // Every receive completed once, in order, with its SEND's bytes.
  void expect_received(const std::vector<ibv_wc>& recvs) {
    ASSERT_EQ(recvs.size(), lengths_.size());
    for (std::size_t i = 0; i < recvs.size(); ++i) {
      EXPECT_EQ(recvs[i].status, IBV_WC_SUCCESS) << i;
      EXPECT_EQ(recvs[i].wr_id, 100 + i) << "receives complete in message order";
      EXPECT_EQ(recvs[i].byte_len, lengths_[i]) << i;
      EXPECT_EQ(std::memcmp(rbuf_.data() + i * 32 * 1024, src_.data() + i * 32 * 1024, lengths_[i]), 0) << i;
    }
  }
  std::vector<std::byte> rbuf_;
  const rdma::MemoryRegion* rmr_ = nullptr;
  std::vector<std::uint32_t> lengths_;
};

TEST_F(SelectiveRepeatSend, MiddlesBehindTheOpenSendsOwnHoleArePlaced) {
  build();
  lose_ = {psn(5)};
  sends({32});
  expect_received(run(1));
  EXPECT_EQ(resent(), 1u);
  expect_sends(32, {psn(5)});
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 26u);  // +6 .. +31
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 25u);        // +6 .. +30; the LAST held whole
}

TEST_F(SelectiveRepeatSend, TwoHolesInARowMayBeALastAndAFirst) {
  // +15 (the first SEND's LAST) and +16 (the second's FIRST) lost: the open message is the
  // first SEND, and +17 .. +30 would fit its receive, but for all b knows +15 ended it, so they
  // are held whole and land in the second receive in their turn. Nothing is written past the
  // first SEND's 16 KiB.
  build();
  lose_ = {psn(15), psn(16)};
  sends({16, 16});
  expect_received(run(2));
  EXPECT_EQ(resent(), 2u);
  expect_sends(32, {psn(15), psn(16)});
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 15u);  // +17 .. +31
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 0u);
  EXPECT_TRUE(std::all_of(rbuf_.begin() + 16 * 1024, rbuf_.begin() + 32 * 1024, [](std::byte b) { return b == std::byte{0}; }));
}

TEST_F(SelectiveRepeatSend, MiddlesBehindAHeldLastAreHeldWhole) {
  // +14 (a MIDDLE of the first SEND) and +16 (the second's FIRST) lost: the held LAST +15 says
  // a new message began, so the second SEND's MIDDLEs +17 .. +30 are held whole.
  build();
  lose_ = {psn(14), psn(16)};
  sends({16, 16});
  expect_received(run(2));
  EXPECT_EQ(resent(), 2u);
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 16u);  // +15, +17 .. +31
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 0u);
}

TEST_F(SelectiveRepeatSend, AMiddleThatWouldSpanTwoScatterEntriesIsHeldWhole) {
  // A receive of two entries, 2.5 KiB and the rest: +2 (bytes 2048 .. 3071) spans both, the
  // MIDDLEs after it fit one entry each.
  build();
  rbuf_.assign(64 * 1024, std::byte{0});
  rmr_ = reg(*b_.engine, b_.pd, rbuf_, IBV_ACCESS_LOCAL_WRITE);
  std::array<ibv_sge, 2> g{sge(rbuf_.data(), 2560, rmr_), sge(rbuf_.data() + 4096, 16 * 1024, rmr_)};
  ASSERT_EQ(post_recv(b_, 100, g.data(), 2), 0);
  lose_ = {psn(1)};
  ibv_sge s = sge(src_.data(), 8 * 1024, smr_);
  ASSERT_EQ(post(a_, IBV_WR_SEND, 0, &s, 1, 0, 0), 0);
  const std::vector<ibv_wc> recvs = run(1);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(recvs[0].byte_len, 8u * 1024);
  EXPECT_EQ(std::memcmp(rbuf_.data(), src_.data(), 2560), 0);
  EXPECT_EQ(std::memcmp(rbuf_.data() + 4096, src_.data() + 2560, 8 * 1024 - 2560), 0);
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 4u);  // +3 .. +6; +2 spans the two, +7 is the LAST
}

TEST_F(SelectiveRepeat, APlacedMiddleNeverWritesWhereTheRkeyDoesNotReach) {
  // The target region is the first 72 KiB of dst_; the second WRITE runs 8 KiB past it. Its
  // FIRST is held behind a hole, and so are its MIDDLEs (only the open message's are placed);
  // when the FIRST's turn comes the message fails its R_Key check and nothing was written.
  build();
  auto small_mr = b_.engine->memory().register_region(b_.pd, dst_.data(), 72 * 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_TRUE(small_mr.ok());
  const rdma::MemoryRegion* small = *small_mr;
  lose_ = {psn(3)};
  write(0, 0, 16 * 1024);
  ibv_sge g = sge(src_.data() + 64 * 1024, 16 * 1024, smr_);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, 1, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data() + 64 * 1024), small->rkey()), 0);
  std::vector<ibv_wc> mine;
  net_->run_until(
      [&] {
        for (const ibv_wc& wc : drain(a_)) mine.push_back(wc);
        return mine.size() >= 2;
      },
      10 * kSecond);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(mine[1].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(same(0, 16 * 1024));
  for (std::size_t i = 72 * 1024; i < 80 * 1024; ++i) ASSERT_EQ(dst_[i], std::byte{0}) << "byte " << i << " outside the region";
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPlaced), 11u);  // the first WRITE's +4 .. +14 alone
}

TEST_F(SelectiveRepeat, SeveralLossesInOneWindowEachCostOneResend) {
  build();
  lose_ = {psn(3), psn(7), psn(8), psn(20)};
  write(0, 0, 32 * 1024);
  write(1, 32 * 1024, 16 * 1024);
  run(2);
  EXPECT_TRUE(same(0, 48 * 1024));
  EXPECT_EQ(resent(), 4u);
  expect_sends(48, lose_);
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts) + count(a_, rdma::Counter::EarlyRetransmits), 0u);
}

// held_ahead() is kept, not counted per call (Requester::set_una, on_sack): at every step it
// equals the count from the latest SACK's bits at or after una. Two holes: the SACKs behind the
// first hold packets that una then passes (the first hole filled: a plain ACK or a SACK naming
// the second hole), so the kept value must follow una's moves as well as each new SACK.
TEST_F(SelectiveRepeat, HeldAheadFollowsEachSackAndEachUnaMove) {
  build();
  lose_ = {psn(5), psn(40)};
  write(0, 0, 32 * 1024);
  write(1, 32 * 1024, 32 * 1024);
  const rdma::Requester& req = a_.qp->requester();
  std::uint32_t most = 0, checks = 0, una_moves_while_held = 0;
  std::uint32_t una = a_.qp->completer().una(), held = 0;
  std::vector<ibv_wc> mine;
  net_->run_until(
      [&] {
        EXPECT_EQ(req.held_ahead(), req.held_ahead_counted()) << "step " << checks;
        ++checks;
        if (a_.qp->completer().una() != una && held != 0) ++una_moves_while_held;
        una = a_.qp->completer().una();
        held = req.held_ahead();
        most = std::max(most, held);
        for (const ibv_wc& wc : drain(a_)) mine.push_back(wc);
        return mine.size() >= 2;
      },
      10 * kSecond);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_TRUE(same(0, 64 * 1024));
  EXPECT_EQ(resent(), 2u);
  EXPECT_GE(most, 20u);  // a SACK held the packets behind a hole
  EXPECT_GE(una_moves_while_held, 1u);
  EXPECT_EQ(req.held_ahead(), 0u);  // every hole filled: nothing past una is held
}

TEST_F(SelectiveRepeat, ALostSackIsCoveredByTheNext) {
  // At 10 Gbit/s the packets behind the hole arrive apart and each draws a SACK of its own.
  LinkFaults f;
  f.bandwidth_bps = 10e9;
  build(kWindow, kWindow, f, f);
  lose_ = {psn(5)};
  lose_sacks_ = 1;
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(dropped_, 2u);
  EXPECT_GE(sacks_on_wire_, 2u);
  EXPECT_EQ(resent(), 1u);
  expect_sends(32, {psn(5)});
}

TEST_F(SelectiveRepeat, ALostResendIsFoundByTheNextSackNotATimer) {
  // At 10 Gbit/s new data still flows behind the resend: a SACK holding a packet sent after it
  // shows the resend lost too.
  LinkFaults f;
  f.bandwidth_bps = 10e9;
  build(kWindow, kWindow, f, f);
  lose_ = {psn(5)};
  lose_twice_ = {psn(5)};
  write(0, 0, 48 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 48 * 1024));
  EXPECT_EQ(dropped_, 2u);
  EXPECT_EQ(resent(), 2u);
  EXPECT_EQ(sent_[psn(5)], 3);
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts) + count(a_, rdma::Counter::EarlyRetransmits), 0u);
}

TEST_F(SelectiveRepeat, ATailLossTimerResendsOnlyWhatIsUnacknowledged) {
  build();
  // Sixteen one-packet WRITEs, each acknowledged; the last one's only packet is lost and
  // nothing follows it to draw a SACK.
  lose_ = {psn(15)};
  for (std::uint32_t i = 0; i < 16; ++i) write(i, i * 1024, 1024);
  run(16);
  EXPECT_TRUE(same(0, 16 * 1024));
  EXPECT_EQ(resent(), 1u);
  expect_sends(16, {psn(15)});
  EXPECT_EQ(count(a_, rdma::Counter::TailProbes), 1u);  // one timer, its probe
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts) + count(a_, rdma::Counter::EarlyRetransmits), 0u);
}

// The timer's resend is a probe: the newest packet no SACK reported goes alone. When only the
// ACKs were lost (a starved receive ring drops whatever arrives), it is one duplicate, which
// the responder answers with an ACK for everything, not a window of duplicates.
TEST_F(SelectiveRepeat, WhenOnlyTheAcksWereLostTheTimerResendsOnePacket) {
  build();
  lose_acks_ = true;
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(resent(), 1u);
  expect_sends(32, {psn(31)});
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts) + count(a_, rdma::Counter::EarlyRetransmits), 1u);
}

// The same after an RTT sample on a path whose SACKs report frequent losses: the probe goes
// after the tail probe's short wait (max(20 us, 2 srtt) on this path's few-microsecond round
// trip), not after the early timer's 250 us floor. On a CPU-bound path the reorder window is full
// every round trip and a lost ACK stalled it for the floor (docs/loss.md, part 2, "The missing
// tenth"). Without reported losses (a starved poller's silence, af_packet) the floor stays.
// Virtual time: counted, not timed.
TEST_F(SelectiveRepeat, ALostAckIsProbedAfterTwoRoundTripsNotTheTimersFloor) {
  struct Case {
    bool probe, lossy;
  };
  for (const Case c : {Case{true, true}, Case{false, true}, Case{true, false}}) {
    probe_ = c.probe;
    sent_.clear();
    ack_copies_.clear();
    first_copy_.clear();
    lose_acks_ = false;
    lose_ = c.lossy ? std::set<std::uint32_t>{psn(3)} : std::set<std::uint32_t>{};
    build();
    write(0, 0, 8 * 1024);  // +3 lost: a SACK reports it (lossy)
    run(1);
    lose_acks_ = true;
    const std::uint64_t before = resent();
    write(1, 32 * 1024, 32 * 1024);
    const Nanos t0 = net_->now();
    std::size_t done = 0;
    net_->run_until([&] { return (done += drain(a_).size()) >= 1; }, kSecond);
    const Nanos took = net_->now() - t0;
    EXPECT_TRUE(same(32 * 1024, 32 * 1024));
    EXPECT_EQ(resent() - before, 1u) << "one probe";
    if (c.probe && c.lossy) {
      EXPECT_LT(took, 100 * kMicro) << "the probe waited the floor";
    } else {
      EXPECT_GT(took, 250 * kMicro) << "the floor (switched off, or no loss reported)";
    }
  }
}

// A lost tail of several packets: the probe (the newest) arrives past the holes and its SACK
// names them; each is resent once, after one timer.
TEST_F(SelectiveRepeat, ALostTailOfSeveralPacketsCostsOneProbeAndItsHoles) {
  build();
  lose_ = {psn(26), psn(27), psn(28), psn(29), psn(30), psn(31)};
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(resent(), 6u);
  expect_sends(32, lose_);
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts) + count(a_, rdma::Counter::EarlyRetransmits), 1u);
}

// A request beyond the responder's reorder window is dropped as go-back-N would drop it
// (reorder_overflows); the SACKs that follow show it missing and it is resent. The windows
// differ here only to reach that case: agreed windows are equal (lib/cm/ece.hpp), so a peer
// sending beyond ours is not one of ours.
TEST_F(SelectiveRepeat, ARequestBeyondTheReorderWindowIsDroppedCountedAndResent) {
  build(kWindow, 8);
  // +1 lost: +2 .. +9 fit b's 8-PSN window behind the hole, +10 .. +31 do not (22 drops). The
  // SACKs name +1 alone; the timer's probe (+31) is beyond the window again (the 23rd); the
  // next timer, finding it unanswered, probes the oldest unreported packet (+10), which b takes
  // as new and acknowledges alone (it holds nothing after it): that answer shows the hole, and
  // everything from +11 goes again, in order (timer_probes; docs/loss.md).
  lose_ = {psn(1)};
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(count(b_, rdma::Counter::ReorderOverflows), 23u);
  EXPECT_EQ(b_.qp->responder().reorder_held(), 0u);
  for (std::uint32_t i = 10; i < 32; ++i) EXPECT_GE(sent_[psn(i)], 2) << "PSN +" << i;
  EXPECT_EQ(count(a_, rdma::Counter::TailProbes), 1u);
  EXPECT_EQ(count(a_, rdma::Counter::OldestProbes), 1u);
  EXPECT_EQ(count(a_, rdma::Counter::ProbedHoles), 1u);
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts) + count(a_, rdma::Counter::EarlyRetransmits), 0u);
}

// The reorder buffer's slots come from the engine's pool (reorder_pool.hpp): none is taken when
// the QP connects, a chunk is taken when a request arrives behind a hole, only the chunks the
// held PSNs fall in (not the whole window's), and every one goes back once the hole is filled.
TEST_F(SelectiveRepeat, ReorderChunksAreTakenAtAHoleAndGivenBackWhenItCloses) {
  build(kDefaultWindow, kDefaultWindow);
  const rdma::ReorderPool& pool = b_.engine->reorder_pool();
  EXPECT_EQ(b_.qp->responder().reorder_chunks(), 0u) << "nothing taken at connect";
  ASSERT_GT(pool.chunks(), 4u) << "the pool grew by the window's chunks when the QP entered RTR";
  EXPECT_EQ(pool.free_chunks(), pool.chunks());
  lose_ = {psn(1)};
  write(0, 0, 16 * 1024);  // +0 .. +15 (1 KiB MTU: 16 slots to a chunk); +2 .. +15 wait for +1
  std::size_t most = 0, done = 0;
  std::uint32_t held_most = 0;
  net_->run_until(
      [&] {
        most = std::max(most, b_.qp->responder().reorder_chunks());
        held_most = std::max(held_most, b_.qp->responder().reorder_held());
        EXPECT_EQ(pool.free_chunks() + b_.qp->responder().reorder_chunks(), pool.chunks());
        done += drain(a_).size();
        return done == 1;
      },
      10 * kSecond);
  ASSERT_EQ(done, 1u);
  EXPECT_TRUE(same(0, 16 * 1024));
  EXPECT_EQ(held_most, 14u);
  EXPECT_GE(most, 1u) << "a chunk taken at the hole";
  EXPECT_LE(most, 2u) << "14 held PSNs span at most two chunks of 16, not the window's";
  EXPECT_EQ(b_.qp->responder().reorder_chunks(), 0u) << "given back when the hole closed";
  EXPECT_EQ(pool.free_chunks(), pool.chunks());
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPoolExhausted), 0u);
}

// A QP that enters ERR, or is destroyed, while it holds requests behind a hole gives their
// chunks back (they will never run) and its window leaves the pool, whose free chunks above what
// the other QPs joined are freed: b's engine has no other selective repeat QP.
TEST_F(SelectiveRepeat, AQpInErrorOrDestroyedGivesItsReorderChunksBack) {
  for (const bool destroy : {false, true}) {
    SCOPED_TRACE(destroy ? "destroyed" : "ERR");
    build(kDefaultWindow, kDefaultWindow);
    const rdma::ReorderPool& pool = b_.engine->reorder_pool();
    ASSERT_GT(pool.chunks(), 0u);
    first_copy_.clear();
    lose_ = {psn(1)};
    write(0, 0, 16 * 1024);
    net_->run_until([&] { return b_.qp->responder().reorder_held() >= 14; }, kSecond);
    ASSERT_EQ(b_.qp->responder().reorder_held(), 14u);
    ASSERT_GE(b_.qp->responder().reorder_chunks(), 1u);
    ASSERT_LT(pool.free_chunks(), pool.chunks());
    if (destroy) {
      ASSERT_TRUE(b_.engine->destroy_qp(b_.qp).ok());
      b_.qp = nullptr;
    } else {
      ibv_qp_attr attr{};
      attr.qp_state = IBV_QPS_ERR;
      ASSERT_TRUE(b_.engine->modify_qp(b_.qp, attr, IBV_QP_STATE).ok());
      EXPECT_EQ(b_.qp->responder().reorder_held(), 0u);
      EXPECT_EQ(b_.qp->responder().reorder_chunks(), 0u);
    }
    EXPECT_EQ(pool.chunks(), 0u);
    EXPECT_EQ(pool.free_chunks(), 0u);
  }
}

// A pool too small for the hole: what finds no chunk is dropped as go-back-N would drop it
// (reorder_pool_exhausted), the SACK shows it missing, it is resent, and every byte arrives
// once, in order. One chunk of 16 slots: of the 62 PSNs behind the hole, the ones whose slots
// lie outside the chunk taken first are dropped.
TEST_F(SelectiveRepeat, AnEmptyReorderPoolDropsCountedAndEveryByteArrives) {
  pool_bytes_ = rdma::ReorderPool::kChunkBytes;
  build(kDefaultWindow, kDefaultWindow);
  ASSERT_EQ(b_.engine->reorder_pool().chunks(), 1u);
  lose_ = {psn(1)};
  write(0, 0, 64 * 1024);  // +0 .. +63
  run(1);
  EXPECT_TRUE(same(0, 64 * 1024));
  const std::uint64_t exhausted = count(b_, rdma::Counter::ReorderPoolExhausted);
  EXPECT_GE(exhausted, 40u);
  EXPECT_EQ(count(b_, rdma::Counter::ReorderOverflows), 0u) << "within the window: not an overflow";
  // Every PSN dropped for want of a chunk was sent again (the SACKs and timers found it missing).
  std::uint32_t again = 0;
  for (std::uint32_t i = 2; i < 64; ++i) again += sent_[psn(i)] >= 2;
  std::printf("[reorder pool of one chunk] dropped for want of a chunk %llu, PSNs sent again %u, resent %llu, SACKs %llu\n",
              static_cast<unsigned long long>(exhausted), again, static_cast<unsigned long long>(resent()),
              static_cast<unsigned long long>(count(a_, rdma::Counter::SacksReceived)));
  EXPECT_GE(again, 40u);
  EXPECT_EQ(b_.qp->responder().reorder_held(), 0u);
  EXPECT_EQ(b_.qp->responder().reorder_chunks(), 0u);
  EXPECT_EQ(b_.engine->reorder_pool().free_chunks(), 1u);
}

// The pool grows as selective repeat QPs enter RTR (a window's chunks each, up to the engine's
// limit) and frees what they no longer need when they are destroyed.
TEST(ReorderPool, GrowsWithTheQpsThatJoinUpToItsLimitAndShrinksWhenTheyLeave) {
  rdma::ReorderPool pool(5 * rdma::ReorderPool::kChunkBytes + 1);
  EXPECT_EQ(pool.max_chunks(), 5u);
  EXPECT_EQ(pool.chunks(), 0u);
  pool.join(2);
  EXPECT_EQ(pool.chunks(), 2u);
  pool.join(4);
  EXPECT_EQ(pool.chunks(), 5u) << "up to the limit";
  std::vector<std::byte*> taken;
  while (std::byte* c = pool.take()) taken.push_back(c);
  EXPECT_EQ(taken.size(), 5u);
  EXPECT_EQ(std::set<std::byte*>(taken.begin(), taken.end()).size(), 5u);
  for (std::byte* c : taken) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c) % rdma::ReorderPool::kAlign, 0u);
  pool.leave(4);
  EXPECT_EQ(pool.chunks(), 5u) << "chunks in use stay";
  for (std::byte* c : taken) pool.give(c);
  EXPECT_EQ(pool.free_chunks(), 5u);
  pool.leave(0);
  EXPECT_EQ(pool.chunks(), 2u) << "free chunks above what the buffers joined go";
  pool.leave(2);
  EXPECT_EQ(pool.chunks(), 0u);
  EXPECT_EQ(pool.take(), nullptr);
}

TEST_F(SelectiveRepeat, AHoleAndALostTailCostTheirOwnPacketsOnly) {
  build();
  // +4 comes back through the SACK the packets behind it draw; the tail (+31) through the
  // timer, which resends nothing the SACK reported.
  lose_ = {psn(4), psn(31)};
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(resent(), 2u);
  expect_sends(32, lose_);
}

TEST_F(SelectiveRepeat, SendAndWriteWithImmediateCompleteInOrder) {
  build();
  std::vector<std::byte> rbuf(64 * 1024);
  const rdma::MemoryRegion* rmr = reg(*b_.engine, b_.pd, rbuf, IBV_ACCESS_LOCAL_WRITE);
  constexpr int kMessages = 12;
  for (int i = 0; i < kMessages; ++i) {
    ibv_sge g = sge(rbuf.data() + i * 4096, 4096, rmr);
    ASSERT_EQ(post_recv(b_, 100 + i, &g, 1), 0);
  }
  // Alternating 3-packet SENDs and 2-packet WRITEs with immediate; a packet lost in most.
  std::uint32_t next = 0;
  for (int i = 0; i < kMessages; ++i) {
    const bool send = i % 2 == 0;
    const std::uint32_t len = send ? 3 * 1024 : 2 * 1024;
    if (i % 3 != 2) lose_.insert(psn(next + (i % 2)));
    ibv_send_wr wr{};
    ibv_sge g = sge(src_.data() + i * 4096, len, smr_);
    wr.wr_id = static_cast<std::uint64_t>(i);
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.opcode = send ? IBV_WR_SEND_WITH_IMM : IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = 0x1000 + i;
    wr.wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(dst_.data() + i * 4096);
    wr.wr.rdma.rkey = dmr_->rkey();
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(a_.engine->post_send(a_.qp, &wr, &bad), 0);
    next += send ? 3 : 2;
  }
  const std::vector<ibv_wc> recvs = run(kMessages);
  ASSERT_EQ(recvs.size(), static_cast<std::size_t>(kMessages));
  for (int i = 0; i < kMessages; ++i) {
    const ibv_wc& wc = recvs[i];
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, static_cast<std::uint64_t>(100 + i)) << "receives complete in message order";
    EXPECT_EQ(wc.imm_data, static_cast<std::uint32_t>(0x1000 + i));
    if (i % 2 == 0) {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      EXPECT_EQ(std::memcmp(rbuf.data() + i * 4096, src_.data() + i * 4096, 3 * 1024), 0) << i;
    } else {
      EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
      EXPECT_TRUE(same(static_cast<std::size_t>(i) * 4096, 2 * 1024)) << i;
    }
  }
  EXPECT_EQ(resent(), lose_.size());
  expect_sends(next, lose_);
}

TEST_F(SelectiveRepeat, ReadResponsesAndRequestsLostStillCompleteInOrder) {
  build();
  // a READs b's buffer: the second READ's request is lost, and one response packet of the first.
  for (std::size_t i = 0; i < dst_.size(); ++i) dst_[i] = static_cast<std::byte>(i * 7 + 1);
  std::vector<std::byte> back(64 * 1024);
  const rdma::MemoryRegion* bmr = reg(*a_.engine, a_.pd, back, IBV_ACCESS_LOCAL_WRITE);
  lose_ = {psn(3), psn(16)};  // response +3 of READ 0 (PSNs +0..+15), the request of READ 1 (+16)
  for (std::uint64_t i = 0; i < 3; ++i) {
    ibv_sge g = sge(back.data() + i * 16384, 16384, bmr);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, i, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data() + i * 16384), dmr_->rkey()), 0);
  }
  write(3, 100 * 1024, 8 * 1024);
  run(4);
  EXPECT_EQ(std::memcmp(back.data(), dst_.data(), 3 * 16384), 0);
  EXPECT_TRUE(same(100 * 1024, 8 * 1024));
}

// A READ whose local buffer overlaps an earlier unfinished READ's takes its responses in order
// (go-back-N on it). Its request arrived behind a hole and a SACK reported it held; its first
// response is lost, and so is the re-ask that loss starts. Every answer after that is a
// duplicate loss signal (the go-back made no progress), so only a timer can ask again, and the
// timer must go back N to the READ: before, it probed the WRITE after it (the READ's request
// was reported held, so no probe would send it) and the READ's retries ran out
// (ROCE_FAULT_SEED=108000 and 145000 in RcFaultMatrix).
TEST_F(SelectiveRepeat, AGoBackNReadWhoseRequestWasHeldIsAskedAgainByTheTimer) {
  build();
  for (std::size_t i = 0; i < dst_.size(); ++i) dst_[i] = static_cast<std::byte>(i * 7 + 1);
  std::vector<std::byte> back(16 * 1024);
  const rdma::MemoryRegion* bmr = reg(*a_.engine, a_.pd, back, IBV_ACCESS_LOCAL_WRITE);
  int read0_requests = 0, read1_requests = 0;
  bool read1_first_response_lost = false;
  drop_also_ = [&](const std::string& from, const Frame& x) {
    // READ 0's request: READ 1's is held, and a SACK reports it.
    if (from == "a" && x.opcode == 0x0C && x.psn == psn(0)) return ++read0_requests == 1;
    if (from == "a" && x.opcode == 0x0C && x.psn == psn(4)) return ++read1_requests == 2;  // the re-ask
    if (from == "b" && x.opcode == 0x0D && x.psn == psn(4) && !read1_first_response_lost) return read1_first_response_lost = true;
    return false;
  };
  ibv_sge g0 = sge(back.data(), 4096, bmr);  // READ 0: PSNs +0 .. +3
  ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, 0, &g0, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dmr_->rkey()), 0);
  ibv_sge g1 = sge(back.data() + 2048, 8192, bmr);  // READ 1: PSNs +4 .. +11, over READ 0's second half
  ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, 1, &g1, 1, reinterpret_cast<std::uint64_t>(dst_.data() + 8192), dmr_->rkey()), 0);
  net_->run_until([&] { return count(a_, rdma::Counter::SacksReceived) > 0; }, kSecond);
  ASSERT_GT(count(a_, rdma::Counter::SacksReceived), 0u);
  write(2, 100 * 1024, 1024);  // +12, sent after the SACK: acknowledged, never reported held
  run(3);
  EXPECT_TRUE(read1_first_response_lost);
  EXPECT_EQ(read1_requests, 3);  // the first, the lost re-ask, the timer's
  // The local ACK timer's (no round trip was sampled yet: una never moved past READ 1, so no
  // early timer); before, it fired seven times, probing the WRITE, and READ 1 failed.
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts), 1u);
  EXPECT_EQ(std::memcmp(back.data(), dst_.data(), 2048), 0);
  EXPECT_EQ(std::memcmp(back.data() + 2048, dst_.data() + 8192, 8192), 0);
  EXPECT_TRUE(same(100 * 1024, 1024));
}

// Selective READ responses (docs/loss.md, part 2, "READ responses"): two READs of 32 and 16
// packets, response +5 of the first lost. The responses behind it are placed as they come, the
// hole is asked for by a READ request for PSN +5 alone, and b sends exactly one response again.
// Toward a QP that did not agree (go-back-N), the READ is asked again from +5 to its end.
TEST_F(SelectiveRepeat, OneLostReadResponseCostsOneResponse) {
  for (const std::uint32_t window : {kWindow, 0u}) {
    SCOPED_TRACE(window ? "selective repeat" : "go-back-N");
    build(window, window);
    first_copy_.clear();
    sent_.clear();
    responses_only_ = true;
    for (std::size_t i = 0; i < dst_.size(); ++i) dst_[i] = static_cast<std::byte>(i * 13 + 5);
    std::vector<std::byte> back(48 * 1024, std::byte{0});
    const rdma::MemoryRegion* bmr = reg(*a_.engine, a_.pd, back, IBV_ACCESS_LOCAL_WRITE);
    lose_ = {psn(5)};  // READ 0 takes PSNs +0 .. +31, READ 1 +32 .. +47
    ibv_sge g0 = sge(back.data(), 32 * 1024, bmr);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, 0, &g0, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dmr_->rkey()), 0);
    ibv_sge g1 = sge(back.data() + 32 * 1024, 16 * 1024, bmr);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, 1, &g1, 1, reinterpret_cast<std::uint64_t>(dst_.data() + 100 * 1024), dmr_->rkey()), 0);
    run(2);
    EXPECT_EQ(std::memcmp(back.data(), dst_.data(), 32 * 1024), 0);
    EXPECT_EQ(std::memcmp(back.data() + 32 * 1024, dst_.data() + 100 * 1024, 16 * 1024), 0);
    const std::uint64_t responses = count(b_, rdma::Counter::ReadResponsesSent);
    if (window) {
      EXPECT_EQ(responses, 48u + 1u) << "only the hole goes again";
      EXPECT_EQ(count(a_, rdma::Counter::ReadHoleRequests), 1u);
      EXPECT_EQ(count(a_, rdma::Counter::ReadResponsesAhead), 26u);  // +6 .. +31
      EXPECT_EQ(count(a_, rdma::Counter::EarlyRetransmits) + count(a_, rdma::Counter::RetransmitTimeouts), 0u);
    } else {
      EXPECT_GE(responses, 48u + 27u) << "go-back-N asks again from +5 to the end";
      EXPECT_EQ(count(a_, rdma::Counter::ReadHoleRequests), 0u);
    }
  }
}

// The last response of a READ with nothing after it: only a timer finds it, and asks for that
// one alone.
TEST_F(SelectiveRepeat, ALostLastReadResponseIsAskedForAlone) {
  build();
  for (std::size_t i = 0; i < dst_.size(); ++i) dst_[i] = static_cast<std::byte>(i * 3 + 1);
  std::vector<std::byte> back(16 * 1024, std::byte{0});
  const rdma::MemoryRegion* bmr = reg(*a_.engine, a_.pd, back, IBV_ACCESS_LOCAL_WRITE);
  lose_ = {psn(15)};
  responses_only_ = true;
  ibv_sge g = sge(back.data(), 16 * 1024, bmr);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, 0, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dmr_->rkey()), 0);
  run(1);
  EXPECT_EQ(std::memcmp(back.data(), dst_.data(), 16 * 1024), 0);
  EXPECT_EQ(count(b_, rdma::Counter::ReadResponsesSent), 16u + 1u);
  EXPECT_EQ(count(a_, rdma::Counter::ReadHoleRequests), 1u);
}

// A hole's answer lost too: the next hole's answer (asked later) shows it, and it is asked again.
TEST_F(SelectiveRepeat, AHolesAnswerLostAgainIsAskedAgain) {
  build();
  for (std::size_t i = 0; i < dst_.size(); ++i) dst_[i] = static_cast<std::byte>(i * 5 + 3);
  std::vector<std::byte> back(32 * 1024, std::byte{0});
  const rdma::MemoryRegion* bmr = reg(*a_.engine, a_.pd, back, IBV_ACCESS_LOCAL_WRITE);
  lose_ = {psn(4), psn(20)};
  lose_twice_ = {psn(4)};
  responses_only_ = true;
  ibv_sge g = sge(back.data(), 32 * 1024, bmr);
  ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, 0, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data()), dmr_->rkey()), 0);
  run(1);
  EXPECT_EQ(std::memcmp(back.data(), dst_.data(), 32 * 1024), 0);
  EXPECT_EQ(count(b_, rdma::Counter::ReadResponsesSent), 32u + 3u);  // +4 twice, +20 once
  EXPECT_EQ(count(a_, rdma::Counter::ReadHoleRequests), 3u);
  EXPECT_EQ(count(a_, rdma::Counter::RetransmitTimeouts), 0u);
}

TEST_F(SelectiveRepeat, AtomicsBehindAHoleRunOnceInOrder) {
  // Eight FETCH_ADDs with 1 << i behind a lost WRITE packet, and one of them lost itself: each
  // runs once, in order, so each sees the sum of those before it.
  build();
  std::vector<std::byte> back(8 * 8);
  const rdma::MemoryRegion* bmr = reg(*a_.engine, a_.pd, back, IBV_ACCESS_LOCAL_WRITE);
  auto* word = reinterpret_cast<std::uint64_t*>(dst_.data() + 200 * 1024);
  *word = 0;
  lose_ = {psn(1), psn(7)};  // a packet of the WRITE (+0..+3), the atomic at +7
  write(0, 0, 4 * 1024);
  for (std::uint32_t i = 0; i < 8; ++i) {
    ibv_sge g = sge(back.data() + 8 * i, 8, bmr);
    ibv_send_wr wr{};
    wr.wr_id = 1 + i;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = reinterpret_cast<std::uint64_t>(word);
    wr.wr.atomic.rkey = dmr_->rkey();
    wr.wr.atomic.compare_add = std::uint64_t{1} << i;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(a_.engine->post_send(a_.qp, &wr, &bad), 0);
  }
  run(9);
  EXPECT_TRUE(same(0, 4 * 1024));
  EXPECT_EQ(*word, 0xFFu);
  for (std::uint32_t i = 0; i < 8; ++i)
    EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(back.data() + 8 * i), (std::uint64_t{1} << i) - 1) << i;
}

TEST_F(SelectiveRepeat, AQpWithoutItNeitherSendsNorTakesASack) {
  build(0, 0);
  lose_ = {psn(5)};
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_EQ(sacks_on_wire_, 0u);
  EXPECT_EQ(count(b_, rdma::Counter::OutOfOrderBuffered), 0u);
  EXPECT_GT(resent(), 1u) << "go-back-N resends what followed the hole";
  EXPECT_FALSE(a_.qp->set_selective_repeat(kWindow).ok()) << "only before RTR";
}

// Only b agreed: its SACKs reach a QP that never did, which takes them for the unknown opcode
// they are to any standard peer (counted), and recovers by its own go-back-N timer.
TEST_F(SelectiveRepeat, ASackToAQpThatDidNotAgreeIsAnUnknownOpcodeDrop) {
  build(0, kWindow);
  lose_ = {psn(5)};
  write(0, 0, 32 * 1024);
  run(1);
  EXPECT_TRUE(same(0, 32 * 1024));
  EXPECT_GT(sacks_on_wire_, 0u);
  EXPECT_GT(a_.engine->parse_drops(proto::ParseError::UnknownOpcode), 0u);
  EXPECT_EQ(count(a_, rdma::Counter::SacksReceived), 0u);
}

TEST(SelectiveRepeatConfig, RefusesAWindowThatIsNoPowerOfTwoInRange) {
  rdma::MrTable mrs;
  rdma::Engine e(rdma::EngineConfig{}, mrs);
  Endpoint ep = make_endpoint(e, QpOptions{});
  EXPECT_FALSE(ep.qp->set_selective_repeat(48).ok());
  EXPECT_FALSE(ep.qp->set_selective_repeat(4).ok());
  EXPECT_FALSE(ep.qp->set_selective_repeat(2 * kSackSpan).ok());
  EXPECT_TRUE(ep.qp->set_selective_repeat(kSackSpan).ok());
  EXPECT_TRUE(ep.qp->set_selective_repeat(0).ok());
}

// Random loss both ways (data, SACKs and ACKs) with duplication and reordering: every byte
// arrives, every completion once and in order; under loss alone each lost data frame costs
// about one resend. The `_gbn` cases run the same checks between two go-back-N QPs.
// ROCE_FAULT_SEED sets the network seed (default 21) for sweeps.
struct Mix {
  double loss, duplicate, reorder, corrupt;
  bool read = false;  // a READs from b's memory instead of writing to it
  bool go_back_n = false;  // neither side turned selective repeat on: the same checks of every byte and completion
  std::uint32_t window = kDefaultWindow;
  std::size_t pool_chunks = 0;  // each engine's reorder pool, in chunks (0: the default)
};
// gtest prints a parameter without one byte by byte, padding included (valgrind: uninitialised).
void PrintTo(const Mix& m, std::ostream* os) {
  *os << "loss " << m.loss << " dup " << m.duplicate << " reorder " << m.reorder << " corrupt " << m.corrupt << (m.read ? " read" : "")
      << (m.go_back_n ? " go-back-N" : "") << " window " << m.window << " pool chunks " << m.pool_chunks;
}

class SelectiveRepeatFaults : public SelectiveRepeat, public ::testing::WithParamInterface<Mix> {};

TEST_P(SelectiveRepeatFaults, EveryByteOnceAndInOrder) {
  const Mix m = GetParam();
  LinkFaults f;
  f.loss = m.loss;
  f.duplicate = m.duplicate;
  f.reorder = m.reorder;
  f.corrupt = m.corrupt;
  f.bandwidth_bps = 25e9;
  o_.depth = 64;
  window_ = true;  // the default tuning: the congestion window on
  // ROCE_FAULT_SEED replays another network seed (a failure names its seed).
  if (const char* env = std::getenv("ROCE_FAULT_SEED")) net_seed_ = std::strtoull(env, nullptr, 10);
  const std::uint32_t sr = m.go_back_n ? 0 : m.window;
  if (m.pool_chunks != 0) pool_bytes_ = m.pool_chunks * rdma::ReorderPool::kChunkBytes;
  build(sr, sr, f, f);
  constexpr std::uint32_t kMsg = 16 * 1024;
  // Which arrivals must be placed at once, from the wire and b's expected PSN alone: a good
  // WRITE MIDDLE ahead of the expected PSN, within the reorder window, not held yet, in the
  // same message as the expected PSN, whose FIRST already ran (every message is 16 packets).
  std::uint64_t placeable = 0;
  std::set<std::uint32_t> ahead;  // PSN offsets that arrived ahead of the expected PSN
  const std::uint32_t per_msg = kMsg / 1024;
  net_->on_deliver = [&](const std::string& to, std::span<const std::byte> frame, Nanos) {
    if (to != "b" || m.read || m.go_back_n) return;
    Packet p;
    ParseOptions po;
    po.mtu_rules = false;
    if (parse_frame(frame, po, p) != ParseError::None || p.icrc_status != IcrcStatus::Ok || p.bth.opcode != 0x07) return;  // good RC WRITE MIDDLEs
    const std::uint32_t d = (p.psn() - o_.sq_psn) & kPsnMask, e = (b_.qp->responder().expected_psn() - o_.sq_psn) & kPsnMask;
    if (d <= e || d - e > m.window || !ahead.insert(d).second) return;
    if (d / per_msg == e / per_msg && e % per_msg != 0) ++placeable;
  };
  constexpr std::uint64_t kWrites = 400;
  std::uint64_t posted = 0, done = 0, bad = 0;
  // Each WRITE carries bytes of its own into a place cleared for it: a packet placed at the
  // wrong offset, or not at all, shows (16 places reused: the same bytes each time would not).
  std::mt19937_64 fill(11);
  // READs: b's bytes come back into a's, which are cleared first (src_ and dst_ swap roles).
  const auto post_one = [&] {
    const std::uint64_t w = posted++;
    const std::size_t off = (w % 16) * kMsg;
    std::vector<std::byte>& from = m.read ? dst_ : src_;
    for (std::size_t i = 0; i < kMsg; ++i) from[off + i] = static_cast<std::byte>(fill());
    std::memset((m.read ? src_ : dst_).data() + off, 0, kMsg);
    if (m.read) {
      ibv_sge g = sge(src_.data() + off, kMsg, smr_);
      ASSERT_EQ(post(a_, IBV_WR_RDMA_READ, w, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data() + off), dmr_->rkey()), 0);
    } else {
      write(w, off, kMsg);
    }
  };
  for (int i = 0; i < 8; ++i) post_one();
  net_->run_until(
      [&] {
        for (const ibv_wc& wc : drain(a_)) {
          if (wc.status != IBV_WC_SUCCESS || wc.wr_id != done) ++bad;
          if (!same((wc.wr_id % 16) * kMsg, kMsg)) ++bad;
          ++done;
          if (posted < kWrites) post_one();
        }
        return done == kWrites || bad > 0;
      },
      60 * kSecond);
  EXPECT_EQ(done, kWrites);
  EXPECT_EQ(bad, 0u);
  const std::uint64_t lost = net_->stats("a").lost;
  const std::uint64_t held = count(b_, rdma::Counter::OutOfOrderBuffered), placed = count(b_, rdma::Counter::ReorderPlaced);
  std::printf("[%s] %s loss %.1f %% dup %.1f %% reorder %.1f %% corrupt %.1f %%: data lost %llu, resent %llu, "
              "held %llu (placed %llu), SACKs %llu, early %llu, timeouts %llu, %.2f ms\n",
              m.go_back_n ? "go-back-N" : "selective repeat", m.read ? "READs" : "WRITEs", m.loss * 100, m.duplicate * 100, m.reorder * 100, m.corrupt * 100, static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(resent()), static_cast<unsigned long long>(held),
              static_cast<unsigned long long>(placed), static_cast<unsigned long long>(count(a_, rdma::Counter::SacksReceived)),
              static_cast<unsigned long long>(count(a_, rdma::Counter::EarlyRetransmits)),
              static_cast<unsigned long long>(count(a_, rdma::Counter::RetransmitTimeouts)), static_cast<double>(net_->now()) / 1e6);
  if (m.read) {
    // READ responses: every one b sent beyond the first copies is a resend (the requests, one
    // packet per READ, are few). Go-back-N on the READ resent the rest of the READ per loss.
    const std::uint64_t responses = count(b_, rdma::Counter::ReadResponsesSent), first = kWrites * (kMsg / 1024);
    const std::uint64_t resp_lost = net_->stats("b").lost;
    std::printf("[%s] READ responses: lost %llu, sent again %llu, holes asked for %llu\n", m.go_back_n ? "go-back-N" : "selective repeat",
                static_cast<unsigned long long>(resp_lost), static_cast<unsigned long long>(responses - first),
                static_cast<unsigned long long>(count(a_, rdma::Counter::ReadHoleRequests)));
    if (!m.go_back_n && m.duplicate == 0 && m.reorder == 0 && m.corrupt == 0 && resp_lost > 20) {
      EXPECT_LE(static_cast<double>(responses - first) / static_cast<double>(resp_lost), 1.5);
    }
    return;
  }
  // The MIDDLEs behind a hole in their own message were placed at once, every one of them
  // (those of the messages after it wait for the hole: they may overlap what it writes).
  // How many there are depends on where the losses fell, not on how many there were: at 5 %
  // several holes are open at once and only the first one's message is placed behind.
  std::printf("[selective repeat] WRITE MIDDLEs placeable on arrival %llu, placed %llu; window %u, dropped for want of a chunk %llu\n",
              static_cast<unsigned long long>(placeable), static_cast<unsigned long long>(placed), m.window,
              static_cast<unsigned long long>(count(b_, rdma::Counter::ReorderPoolExhausted)));
  EXPECT_EQ(b_.qp->responder().reorder_chunks(), 0u) << "every chunk given back";
  if (m.pool_chunks != 0) {
    // A pool smaller than the holes: what found no chunk was dropped, resent, and arrived.
    if (lost > 20) {
      EXPECT_GT(count(b_, rdma::Counter::ReorderPoolExhausted), 0u);
    }
    return;
  }
  EXPECT_EQ(count(b_, rdma::Counter::ReorderPoolExhausted), 0u);
  EXPECT_EQ(placed, placeable);
  if (m.go_back_n) {
    EXPECT_EQ(held, 0u);
    return;
  }
  if (lost > 20) {
    EXPECT_GT(placed, 0u);
  }
  if (m.duplicate == 0 && m.reorder == 0 && m.corrupt == 0 && lost > 20) {
    // Loss both ways: a lost SACK or ACK can leave a hole to the timer, which resends what no
    // SACK reported. Go-back-N resends 10-20 per lost frame here (random_loss_test.cpp).
    EXPECT_LE(static_cast<double>(resent()) / static_cast<double>(lost), 1.5);
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, SelectiveRepeatFaults,
                         ::testing::Values(Mix{0.001, 0, 0, 0}, Mix{0.01, 0, 0, 0}, Mix{0.05, 0, 0, 0}, Mix{0.02, 0.02, 0, 0},
                                           Mix{0.02, 0, 0.02, 0}, Mix{0.02, 0, 0, 0.02}, Mix{0.02, 0.01, 0.01, 0.01},
                                           Mix{0.001, 0, 0, 0, true}, Mix{0.01, 0, 0, 0, true}, Mix{0.05, 0, 0, 0, true},
                                           Mix{0.02, 0.01, 0.01, 0.01, true}, Mix{0.05, 0, 0, 0, false, true}, Mix{0.02, 0.01, 0.01, 0.01, false, true},
                                           Mix{0.02, 0.01, 0.01, 0.01, true, true},
                                           // The window of sessions 1-12, and pools too small for the holes.
                                           Mix{0.01, 0, 0, 0, false, false, 64}, Mix{0.05, 0, 0, 0, false, false, 64},
                                           Mix{0.02, 0.01, 0.01, 0.01, false, false, 64}, Mix{0.05, 0, 0, 0, false, false, kDefaultWindow, 2},
                                           Mix{0.02, 0.01, 0.01, 0.01, false, false, kDefaultWindow, 1}),
                         [](const ::testing::TestParamInfo<Mix>& i) {
                           const Mix& m = i.param;
                           return "loss" + std::to_string(static_cast<int>(m.loss * 1000)) + "_dup" +
                                  std::to_string(static_cast<int>(m.duplicate * 1000)) + "_reorder" +
                                  std::to_string(static_cast<int>(m.reorder * 1000)) + "_corrupt" +
                                  std::to_string(static_cast<int>(m.corrupt * 1000)) + (m.read ? "_read" : "") + (m.go_back_n ? "_gbn" : "") +
                                  (m.window != kDefaultWindow ? "_window" + std::to_string(m.window) : "") +
                                  (m.pool_chunks != 0 ? "_pool" + std::to_string(m.pool_chunks) : "");
                         });

// The SACK bitmap the responder builds from its held slots (one pass over them) names exactly
// the PSNs that ran or are held, as a look-up per PSN of the span does: random held sets, a
// cumulative point behind the expected PSN (a SACK queued before packets ran), stale slots the
// window has passed, and the 24-bit PSN wrap.
TEST(ReorderBufferSack, ArrivedAfterIsEveryPsnRunOrHeld) {
  std::mt19937 rng(11);
  for (const std::uint32_t window : {8u, 64u, 128u}) {
    for (int round = 0; round < 400; ++round) {
      rdma::ReorderBuffer rb;
      rb.start(window, 256);
      const std::uint32_t epsn = round % 3 == 0 ? proto::psn_add(0, -static_cast<std::int32_t>(rng() % 200)) : rng() & 0xFFFFFF;
      const std::uint32_t missing = proto::psn_add(epsn, -static_cast<std::int32_t>(rng() % 140));
      std::array<std::byte, 64> frame{};
      proto::Packet pkt;
      pkt.payload = {frame.data() + 40, 8};
      const auto put = [&](std::uint32_t p) {
        ASSERT_TRUE(rb.claim(p));
        rb.put_whole(p, pkt, frame.data(), 48);
      };
      if (round % 5 == 0) put(proto::psn_add(epsn, -static_cast<std::int32_t>(window)));  // stale
      for (std::uint32_t d = 1; d <= window; ++d)
        if (rng() % 3 == 0) put(proto::psn_add(epsn, static_cast<std::int32_t>(d)));
      const proto::SackBitmap got = rb.arrived_after(missing, epsn);
      for (std::uint32_t i = 0; i < proto::kSackSpan; ++i) {
        const std::uint32_t p = proto::psn_add(missing, static_cast<std::int32_t>(1 + i));
        ASSERT_EQ(got.has(i), proto::psn_before(p, epsn) || rb.holds(p)) << "window " << window << " epsn " << epsn << " missing " << missing << " bit " << i;
      }
    }
  }
}

}  // namespace
}  // namespace roce::test::selective_repeat_test
