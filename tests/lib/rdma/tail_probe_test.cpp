// Go-back-N's tail loss probe (docs/loss.md, part 1), on virtual time: when the packet that
// asked for the ACK, or the ACK itself, is lost, nothing behind it draws a NAK. The early
// timer's first try then resends the newest packet alone, asking for an ACK: a lost tail is
// refilled, a lost ACK answered again (the probe is a duplicate the responder ACKs), for one
// packet, not the whole window the old early retransmission resent. Every request packet on the
// wire is counted by PSN and every byte checked.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>

#include "protocol/parser.hpp"
#include "tests/lib/rdma/frame_look.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::tail_probe_test {
namespace {

using namespace roce::proto;

constexpr std::uint32_t kMessage = 32 * 1024;  // 32 packets at the 1 KiB MTU

bool is_write(std::uint8_t op) { return op >= 0x06 && op <= 0x0B; }

class TailProbe : public ::testing::Test {
 protected:
  // `probe`: the tuning's tail_probe_min (0 turns the probe off: the early timer goes back from una).
  void build(Nanos probe) {
    net_ = std::make_unique<SimNetwork>(31);
    rdma::EngineConfig cfg;
    cfg.tuning.tail_probe_min = probe;
    net_->add_host("a", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, cfg);
    net_->add_host("b", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, cfg);
    LinkFaults fa, fb;
    fa.drop_if = [this](std::span<const std::byte> f, std::uint64_t) {
      const Frame x = look(f);
      return x.ok && is_write(x.opcode) && lose_.contains(x.psn) && first_copy_.insert(x.psn).second;
    };
    fb.drop_if = [this](std::span<const std::byte> f, std::uint64_t) {
      const Frame x = look(f);
      return x.ok && x.opcode == 0x11 && lose_ack_.contains(x.psn) && ack_copy_.insert(x.psn).second;
    };
    net_->connect("a", "b", fa, fb);
    net_->on_transmit = [this](const std::string& from, std::span<const std::byte> f, Nanos) {
      const Frame x = look(f);
      if (x.ok && from == "a" && is_write(x.opcode)) ++sent_[x.psn];
    };
    a_ = make_endpoint(net_->host("a"), o_);
    b_ = make_endpoint(net_->host("b"), o_);
    connect_pair(a_, b_, o_);
    src_.resize(2 * kMessage);
    dst_.assign(2 * kMessage, std::byte{0});
    std::mt19937_64 rng(5);
    for (auto& x : src_) x = static_cast<std::byte>(rng());
    smr_ = reg(*a_.engine, a_.pd, src_, IBV_ACCESS_LOCAL_WRITE);
    dmr_ = reg(*b_.engine, b_.pd, dst_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  // One WRITE of kMessage at `off`, run until it completes.
  void write(std::uint64_t id, std::size_t off) {
    ibv_sge g = sge(src_.data() + off, kMessage, smr_);
    ASSERT_EQ(post(a_, IBV_WR_RDMA_WRITE, id, &g, 1, reinterpret_cast<std::uint64_t>(dst_.data() + off), dmr_->rkey()), 0);
    std::vector<ibv_wc> done;
    net_->run_until(
        [&] {
          for (const ibv_wc& wc : drain(a_)) done.push_back(wc);
          return !done.empty();
        },
        10 * kSecond);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(std::memcmp(src_.data() + off, dst_.data() + off, kMessage), 0);
  }
  // The first WRITE goes through untouched (the RTT sample the probe's wait comes from); the
  // second loses what the test set. Returns the packets resent.
  std::uint64_t run_second() {
    write(0, 0);
    const std::uint64_t before = resent();
    write(1, kMessage);
    return resent() - before;
  }
  std::uint32_t psn(std::uint32_t i) const { return o_.sq_psn + i; }
  std::uint64_t resent() const { return count(rdma::Counter::RetransmittedPkts); }
  std::uint64_t count(rdma::Counter c) const { return a_.qp->counters().get(c); }

  QpOptions o_{};
  std::unique_ptr<SimNetwork> net_;
  Endpoint a_, b_;
  std::vector<std::byte> src_, dst_;
  const rdma::MemoryRegion* smr_ = nullptr;
  const rdma::MemoryRegion* dmr_ = nullptr;
  std::set<std::uint32_t> lose_, first_copy_, lose_ack_, ack_copy_;
  std::map<std::uint32_t, int> sent_;
};

// The second WRITE's last packet (the one that asks for the ACK) is lost: one probe, one resend.
TEST_F(TailProbe, ALostTailCostsOnePacket) {
  build(20 * kMicro);
  lose_ = {psn(63)};
  EXPECT_EQ(run_second(), 1u);
  EXPECT_EQ(sent_[psn(63)], 2);
  for (std::uint32_t i = 32; i < 63; ++i) EXPECT_EQ(sent_[psn(i)], 1) << "PSN +" << i;
  EXPECT_EQ(count(rdma::Counter::TailProbes), 1u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
}

// The ACK of the second WRITE is lost: the probe is a duplicate, the responder ACKs everything.
TEST_F(TailProbe, ALostAckCostsOnePacket) {
  build(20 * kMicro);
  lose_ack_ = {psn(63)};
  EXPECT_EQ(run_second(), 1u);
  EXPECT_EQ(sent_[psn(63)], 2);
  EXPECT_EQ(count(rdma::Counter::TailProbes), 1u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
}

// Without the probe the early timer goes back from una: the whole message goes again.
TEST_F(TailProbe, WithoutItTheTimerResendsTheWholeMessage) {
  build(0);
  lose_ = {psn(63)};
  EXPECT_EQ(run_second(), 32u);
  EXPECT_EQ(count(rdma::Counter::TailProbes), 0u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 1u);
}

// A probe that draws no answer (lost too) is followed by a probe of the oldest packet, not the
// go-back: the responder (which has +32 .. +62) answers that duplicate with its latest PSN, so
// una moves to +63, and the next tail probe refills it. Three packets, not the window.
TEST_F(TailProbe, AnUnansweredProbeIsFollowedByAProbeOfTheOldestPacket) {
  build(20 * kMicro);
  lose_ = {psn(63)};
  net_->on_transmit = [this, probe_lost = false](const std::string& from, std::span<const std::byte> f, Nanos) mutable {
    const Frame x = look(f);
    if (!x.ok || from != "a" || !is_write(x.opcode)) return;
    // The probe is the second copy of +63: drop it as well (first_copy_ holds +63 by then).
    if (++sent_[x.psn] == 2 && x.psn == psn(63) && !probe_lost) {
      probe_lost = true;
      first_copy_.erase(x.psn);
    }
  };
  EXPECT_EQ(run_second(), 3u);  // the probe (lost), +32, the second probe
  EXPECT_EQ(sent_[psn(32)], 2);
  EXPECT_EQ(sent_[psn(63)], 3);
  for (std::uint32_t i = 33; i < 63; ++i) EXPECT_EQ(sent_[psn(i)], 1) << "PSN +" << i;
  EXPECT_EQ(count(rdma::Counter::TailProbes), 2u);
  EXPECT_EQ(count(rdma::Counter::OldestProbes), 1u);
  EXPECT_EQ(count(rdma::Counter::ProbedHoles), 0u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
}

// +40 is lost and so is the responder's one NAK for it (its PSN is +40): the tail probe, beyond
// the hole, draws silence (one NAK per hole). The oldest packet's probe then reaches the hole
// (at once, or after a probe of a duplicate moved una up to it): its ACK comes alone, and only
// then does the go-back resend what the responder dropped. No timeout, no window from +32.
TEST_F(TailProbe, AProbedHoleIsFollowedByTheGoBackFromTheNextPacket) {
  build(20 * kMicro);
  lose_ = {psn(40)};
  lose_ack_ = {psn(40)};
  run_second();
  EXPECT_EQ(count(rdma::Counter::ProbedHoles), 1u);
  EXPECT_EQ(count(rdma::Counter::EarlyRetransmits), 0u);
  EXPECT_EQ(count(rdma::Counter::RetransmitTimeouts), 0u);
  EXPECT_EQ(sent_[psn(40)], 2);  // lost, then the probe that filled it
  for (std::uint32_t i = 41; i < 63; ++i) EXPECT_EQ(sent_[psn(i)], 2) << "PSN +" << i;  // dropped behind the hole
}

}  // namespace
}  // namespace roce::test::tail_probe_test
