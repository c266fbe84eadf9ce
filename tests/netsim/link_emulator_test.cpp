// The link emulator between two net_ring pairs, driven on virtual time: the test puts frames
// into side X, polls the emulator at chosen instants and collects what leaves side Y, so every
// delay, rate and fate can be checked exactly, and the fault rates statistically against the
// seeded counters.
#include "netsim/link_emulator.hpp"

#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "dataplane/ring_port.hpp"
#include "lib/cc/pacer.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"

namespace roce::netsim::link_emulator_test {
namespace {

using namespace roce::dp;
using namespace roce::proto;

constexpr Nanos kStart = kSecond;  // virtual time starts here

struct Arrival {
  std::uint32_t psn = 0;
  Nanos at = 0;
  Ecn ecn = Ecn::NotEct;
  IpVersion ip = IpVersion::V4;
  bool checksum_ok = false;
  IcrcStatus icrc = IcrcStatus::NotChecked;
  std::uint32_t length = 0;
};

struct FrameOptions {
  std::uint32_t payload = 64;
  Ecn ecn = Ecn::Ect0;
  IpVersion ip = IpVersion::V4;
};

// Test port `in` -> emulator X ... emulator Y -> test port `out` (and back for the reverse).
class EmulatorBench {
 public:
  explicit EmulatorBench(LinkEmulatorOptions o) {
    static int n = 0;
    const std::string s = std::to_string(n++);
    pool_ = rte_pktmbuf_pool_create(("lt_pool" + s).c_str(), 8191, 256, 0, 4096 + 512 + RTE_PKTMBUF_HEADROOM,
                                    SOCKET_ID_ANY);
    if (!pool_) {
      fail("cannot create the test pool: " + std::string(rte_strerror(rte_errno)));
      return;
    }
    auto left = make_ring_pair("lt_in" + s, "lt_ex" + s);
    if (!left) {
      fail(left.error().message);
      return;
    }
    auto right = make_ring_pair("lt_ey" + s, "lt_out" + s);
    if (!right) {
      fail(right.error().message);
      return;
    }
    PortOptions po;
    po.name = std::to_string(left->a);
    auto in = open_port(po, pool_);
    if (!in) {
      fail(in.error().message);
      return;
    }
    in_ = in->id;
    po.name = std::to_string(right->b);
    auto out = open_port(po, pool_);
    if (!out) {
      fail(out.error().message);
      return;
    }
    out_ = out->id;
    o.name = "lt_emu" + s;
    o.x.name = std::to_string(left->b);
    o.y.name = std::to_string(right->a);
    o.mbufs = 2047;
    auto e = LinkEmulator::create(o);
    if (!e) {
      fail(e.error().message);
      return;
    }
    emu = std::move(*e);
  }
  const std::string& error() const { return error_; }
  ~EmulatorBench() {
    emu.reset();
    if (in_) close_port(*in_);
    if (out_) close_port(*out_);
    rte_mempool_free(pool_);
  }

  // Puts `count` RC SEND ONLY frames with consecutive PSNs into side X (or Y when reverse).
  void inject(std::uint32_t first_psn, unsigned count, const FrameOptions& fo = {}, bool reverse = false) {
    std::vector<rte_mbuf*> ms(count);
    ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool_, ms.data(), count), 0);
    std::vector<std::byte> payload(fo.payload);
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::byte>(i * 7);
    for (unsigned i = 0; i < count; ++i) {
      FrameSpec s;
      s.eth.src = {2, 0, 0, 0, 0, 1};
      s.eth.dst = {2, 0, 0, 0, 0, 2};
      s.ip_version = fo.ip;
      s.ipv4.src = {10, 0, 0, 1};
      s.ipv4.dst = {10, 0, 0, 2};
      s.ipv6.src[15] = 1;
      s.ipv6.dst[15] = 2;
      s.set_ecn(fo.ecn);
      s.bth.opcode = raw(Opcode::RcSendOnly);
      s.bth.dest_qp.set(0x11);
      s.bth.psn.set((first_psn + i) & 0xFFFFFF);
      const auto l = build_frame(s, payload, {rte_pktmbuf_mtod(ms[i], std::byte*), 4096 + 512}, CrcBackend::Isal);
      ASSERT_TRUE(l.ok());
      ms[i]->data_len = static_cast<std::uint16_t>(l.length);
      ms[i]->pkt_len = static_cast<std::uint32_t>(l.length);
    }
    const std::uint16_t port = reverse ? *out_ : *in_;
    unsigned sent = 0;
    while (sent < count) {
      const auto k = rte_eth_tx_burst(port, 0, ms.data() + sent, static_cast<std::uint16_t>(count - sent));
      ASSERT_GT(k, 0) << "ring towards the emulator is full";
      sent += k;
    }
  }

  // Polls the emulator at `now` until it has taken every frame waiting for it, and collects
  // what it sent to side Y (X when reverse).
  void step(Nanos now, bool reverse = false) {
    while (emu->poll(now) > 0) collect(now, reverse);
    collect(now, reverse);
  }
  void collect(Nanos now, bool reverse = false) {
    std::array<rte_mbuf*, 32> rx;
    for (;;) {
      const auto n = rte_eth_rx_burst(reverse ? *in_ : *out_, 0, rx.data(), 32);
      for (std::uint16_t i = 0; i < n; ++i) {
        Packet p;
        const ByteSpan f{rte_pktmbuf_mtod(rx[i], const std::byte*), rx[i]->data_len};
        EXPECT_EQ(parse_frame(f, {}, p), ParseError::None);
        arrivals.push_back({p.psn(), now, p.ecn(), p.ip_version, p.ipv4_checksum_ok, p.icrc_status, rx[i]->pkt_len});
        rte_pktmbuf_free(rx[i]);
      }
      if (n < 32) break;
    }
  }
  // Steps in `dt` increments until the emulator holds nothing; returns the last instant.
  Nanos drain(Nanos from, Nanos dt, bool reverse = false) {
    Nanos t = from;
    step(t, reverse);
    for (int guard = 0; guard < 10'000'000 && emu->frames_held() > 0; ++guard) step(t += dt, reverse);
    return t;
  }
  unsigned test_mbufs_in_use() const { return rte_mempool_in_use_count(pool_); }

  std::unique_ptr<LinkEmulator> emu;
  std::vector<Arrival> arrivals;

 private:
  void fail(std::string why) { error_ = std::move(why); }

  rte_mempool* pool_ = nullptr;
  std::optional<std::uint16_t> in_, out_;
  std::string error_;
};

LinkEmulatorOptions with(const DirectionFaults& x_to_y, std::uint64_t seed = 1) {
  LinkEmulatorOptions o;
  o.x_to_y = x_to_y;
  o.seed = seed;
  return o;
}

void expect_conserved(const LinkStats& s) {
  using C = LinkCounter;
  EXPECT_EQ(s.get(C::Received) + s.get(C::Duplicated),
            s.get(C::Forwarded) + s.get(C::Lost) + s.get(C::TailDropped) + s.get(C::DelayLineFull) + s.get(C::Held))
      << to_string(s);
}

void expect_no_leak(EmulatorBench& b) {
  EXPECT_EQ(b.emu->frames_held(), 0u);
  EXPECT_EQ(b.test_mbufs_in_use(), 0u);
  EXPECT_EQ(b.emu->mbufs_in_use(), 0u);
}

// Binomial check: `k` successes out of `n` trials at probability `p`, within 5 sigma.
::testing::AssertionResult rate_matches(const char* what, std::uint64_t k, std::uint64_t n, double p) {
  const double sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
  const double expected = static_cast<double>(n) * p;
  std::printf("  %-10s %7llu of %7llu = %.5f (asked %.5f, %.1f sigma)\n", what, static_cast<unsigned long long>(k),
              static_cast<unsigned long long>(n), static_cast<double>(k) / static_cast<double>(n), p,
              (static_cast<double>(k) - expected) / sigma);
  if (std::abs(static_cast<double>(k) - expected) <= 5 * sigma) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << k << " of " << n << ", expected " << expected << " +- "
                                       << 5 * sigma;
}

TEST(LinkEmulator, WithoutFaultsEveryFrameCrossesUnchangedBothWays) {
  EmulatorBench b(with({}));
  ASSERT_TRUE(b.emu) << b.error();
  b.inject(100, 300);
  b.step(kStart);
  ASSERT_EQ(b.arrivals.size(), 300u);
  for (std::size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(b.arrivals[i].psn, 100 + i);
    EXPECT_EQ(b.arrivals[i].icrc, IcrcStatus::Ok);
    EXPECT_EQ(b.arrivals[i].ecn, Ecn::Ect0);
  }
  b.arrivals.clear();
  b.inject(1000, 50, {}, true);
  b.step(kStart + 1, true);
  EXPECT_EQ(b.arrivals.size(), 50u);
  const LinkStats xy = b.emu->stats(Direction::XtoY), yx = b.emu->stats(Direction::YtoX);
  EXPECT_EQ(xy.get(LinkCounter::Received), 300u);
  EXPECT_EQ(xy.get(LinkCounter::Forwarded), 300u);
  EXPECT_EQ(xy.get(LinkCounter::ForwardedBytes), xy.get(LinkCounter::ReceivedBytes));
  EXPECT_EQ(yx.get(LinkCounter::Forwarded), 50u);
  expect_conserved(xy);
  expect_conserved(yx);
  expect_no_leak(b);
}

TEST(LinkEmulator, FixedDelayHoldsEveryFrameExactlyThatLong) {
  DirectionFaults f;
  f.delay = 50 * kMicro;
  EmulatorBench b(with(f));
  ASSERT_TRUE(b.emu) << b.error();
  b.inject(0, 10);
  b.step(kStart);
  b.step(kStart + 50 * kMicro - 1);
  EXPECT_TRUE(b.arrivals.empty());
  EXPECT_EQ(b.emu->stats(Direction::XtoY).get(LinkCounter::Held), 10u);
  EXPECT_EQ(b.emu->next_release(), kStart + 50 * kMicro);
  b.step(kStart + 50 * kMicro);
  EXPECT_EQ(b.arrivals.size(), 10u);
  expect_no_leak(b);
}

// Frames spaced wider than the jitter: each delay is delay + U[0, jitter], seen exactly by
// polling at the emulator's own next release time.
TEST(LinkEmulator, JitterAddsAUniformDelayWithinItsRange) {
  DirectionFaults f;
  f.delay = 10 * kMicro;
  f.jitter = 20 * kMicro;
  EmulatorBench b(with(f, 3));
  ASSERT_TRUE(b.emu) << b.error();
  const unsigned n = 3000;
  const Nanos gap = 25 * kMicro;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Nanos sent = kStart + i * gap;
    b.inject(i, 1);
    b.step(sent);
    while (b.emu->next_release() < sent + gap) b.step(b.emu->next_release());
  }
  ASSERT_EQ(b.arrivals.size(), n);
  double sum = 0, sum2 = 0;
  Nanos lo = kNever, hi = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(b.arrivals[i].psn, i);
    const Nanos d = b.arrivals[i].at - (kStart + static_cast<Nanos>(i) * gap);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    sum += static_cast<double>(d);
    sum2 += static_cast<double>(d) * static_cast<double>(d);
  }
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  std::printf("  delay 10us + jitter 20us: min %lld ns, mean %.0f ns, sd %.0f ns, max %lld ns\n",
              static_cast<long long>(lo), mean, sd, static_cast<long long>(hi));
  EXPECT_GE(lo, 10 * kMicro);
  EXPECT_LE(hi, 30 * kMicro);
  EXPECT_LT(lo, 10 * kMicro + 200);
  EXPECT_GT(hi, 30 * kMicro - 200);
  // U[0, 20 us]: mean 10 us (standard error 0.1 us over 3000), sd 20/sqrt(12) = 5.77 us.
  EXPECT_NEAR(mean, 20'000, 500);
  EXPECT_NEAR(sd, 5774, 300);
  expect_no_leak(b);
}

// Frames closer together than the jitter: a frame waits for the one ahead instead of passing it.
TEST(LinkEmulator, JitterNeverReordersFrames) {
  DirectionFaults f;
  f.delay = 10 * kMicro;
  f.jitter = 20 * kMicro;
  EmulatorBench b(with(f, 3));
  ASSERT_TRUE(b.emu) << b.error();
  Nanos t = kStart;
  for (std::uint32_t i = 0; i < 3000; ++i, t += kMicro) {
    b.inject(i, 1);
    b.step(t);
  }
  b.drain(t, kMicro);
  ASSERT_EQ(b.arrivals.size(), 3000u);
  for (std::size_t i = 0; i < b.arrivals.size(); ++i) ASSERT_EQ(b.arrivals[i].psn, i);
  EXPECT_EQ(b.emu->stats(Direction::XtoY).get(LinkCounter::Reordered), 0u);
  expect_no_leak(b);
}

TEST(LinkEmulator, ReorderHoldsTheChosenFramesBackSoLaterOnesOvertakeThem) {
  DirectionFaults f;
  f.reorder = 0.05;
  f.reorder_delay = 20 * kMicro;
  EmulatorBench b(with(f, 4));
  ASSERT_TRUE(b.emu) << b.error();
  Nanos t = kStart;
  const unsigned n = 20000;
  for (std::uint32_t i = 0; i < n; ++i, t += kMicro) {
    b.inject(i, 1);
    b.step(t);
  }
  b.drain(t, kMicro);
  ASSERT_EQ(b.arrivals.size(), n);
  // A frame arrives late when a higher PSN came before it.
  std::uint64_t late = 0;
  std::uint32_t highest = 0;
  std::set<std::uint32_t> seen;
  for (std::size_t i = 0; i < b.arrivals.size(); ++i) {
    const std::uint32_t psn = b.arrivals[i].psn;
    if (i && psn < highest) ++late;
    highest = std::max(highest, psn);
    seen.insert(psn);
  }
  EXPECT_EQ(seen.size(), n);
  const LinkStats s = b.emu->stats(Direction::XtoY);
  EXPECT_EQ(late, s.get(LinkCounter::Reordered));
  EXPECT_TRUE(rate_matches("reordered", s.get(LinkCounter::Reordered), n, 0.05));
  expect_conserved(s);
  expect_no_leak(b);
}

// Loss, duplication and reordering together over 100k frames: each fate's count against its
// probability, and what the far side sees against the counters.
TEST(LinkEmulator, LossDuplicationAndReorderRatesMatchTheirProbabilities) {
  DirectionFaults f;
  f.loss = 0.02;
  f.duplicate = 0.01;
  f.reorder = 0.01;
  f.reorder_delay = 5 * kMicro;
  EmulatorBench b(with(f, 42));
  ASSERT_TRUE(b.emu) << b.error();
  const unsigned n = 100'000, chunk = 500;
  Nanos t = kStart;
  for (unsigned i = 0; i < n; i += chunk) {
    b.inject(i, chunk);
    b.step(t += kMicro);
  }
  b.drain(t, kMicro);
  const LinkStats s = b.emu->stats(Direction::XtoY);
  std::printf("  %s\n", to_string(s).c_str());
  EXPECT_EQ(s.get(LinkCounter::Received), n);
  const std::uint64_t lost = s.get(LinkCounter::Lost), dup = s.get(LinkCounter::Duplicated);
  EXPECT_TRUE(rate_matches("lost", lost, n, 0.02));
  EXPECT_TRUE(rate_matches("duplicated", dup, n - lost, 0.01));
  EXPECT_TRUE(rate_matches("reordered", s.get(LinkCounter::Reordered), n - lost + dup, 0.01));
  EXPECT_EQ(s.get(LinkCounter::DuplicateNoMbuf), 0u);
  EXPECT_EQ(s.get(LinkCounter::TxBusy), 0u);
  // The far side: every frame the counters say was forwarded, each surviving PSN once or (when
  // duplicated) twice.
  ASSERT_EQ(b.arrivals.size(), s.get(LinkCounter::Forwarded));
  std::map<std::uint32_t, int> copies;
  for (const Arrival& a : b.arrivals) {
    ++copies[a.psn];
    EXPECT_EQ(a.icrc, IcrcStatus::Ok);
  }
  std::uint64_t twice = 0;
  for (const auto& [psn, c] : copies) {
    EXPECT_LE(c, 2) << "psn " << psn;
    twice += c == 2;
  }
  EXPECT_EQ(copies.size(), n - lost);
  EXPECT_EQ(twice, dup);
  expect_conserved(s);
  expect_no_leak(b);
}

TEST(LinkEmulator, TheSameSeedGivesTheSameFates) {
  DirectionFaults f;
  f.loss = 0.1;
  f.duplicate = 0.1;
  std::vector<std::uint32_t> runs[2];
  for (auto& psns : runs) {
    EmulatorBench b(with(f, 77));
    ASSERT_TRUE(b.emu) << b.error();
    b.inject(0, 2000);
    b.step(kStart);
    for (const Arrival& a : b.arrivals) psns.push_back(a.psn);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_LT(runs[0].size(), 2000u + 400u);
}

// bench/suite Rig::step's order on one thread: side X sends, the emulator, side Y reads and
// answers, the emulator, and X reads at the next step. Polling X -> Y after X and Y -> X after Y
// (poll(Direction)) must hand every frame to its reader at the same step, in the same order,
// with the same fate, as two full polls a step: with loss, duplication, delay and jitter both
// ways, 400 steps, every (step, PSN) each side read compared.
TEST(LinkEmulator, PollingOneDirectionAtATimeDeliversAtTheSameStepAsTwoFullPolls) {
  DirectionFaults f;
  f.loss = 0.05;
  f.duplicate = 0.02;
  f.delay = 3 * kMicro;
  f.jitter = 2 * kMicro;
  LinkEmulatorOptions o = with(f, 91);
  o.y_to_x = f;
  std::vector<std::pair<unsigned, std::uint32_t>> read[2][2];  // [full, by direction][at Y, at X]
  for (int mode = 0; mode < 2; ++mode) {
    EmulatorBench b(o);
    ASSERT_TRUE(b.emu) << b.error();
    ASSERT_TRUE(b.emu->per_direction_exact());
    Nanos t = kStart;
    const auto take = [&](unsigned step, bool at_x, auto&& poll) {
      b.arrivals.clear();
      poll();
      b.collect(t, at_x);
      for (const Arrival& a : b.arrivals) read[mode][at_x ? 1 : 0].push_back({step, a.psn});
    };
    for (unsigned step = 0; step < 400; ++step) {
      // X reads what the emulator sent it last step (collected below), then sends 1-8 frames.
      b.inject(step * 16, 1 + step % 8);
      t += 700;  // X's poll took a while
      take(step, false, [&] { mode == 0 ? (void)b.emu->poll(t) : (void)b.emu->poll(Direction::XtoY, t); });
      b.inject(0x100000 + step, 1, {}, true);  // Y answers what it read
      t += 1100;  // and Y's
      take(step, true, [&] { mode == 0 ? (void)b.emu->poll(t) : (void)b.emu->poll(Direction::YtoX, t); });
    }
    EXPECT_EQ(b.emu->stats(Direction::XtoY).get(LinkCounter::Received), 1800u);  // 50 x (1 + ... + 8)
    b.drain(t, kMicro);
    b.collect(t, true);
    expect_no_leak(b);
  }
  EXPECT_EQ(read[0][0], read[1][0]);
  EXPECT_EQ(read[0][1], read[1][1]);
  // Something was lost, duplicated and delayed past a step both ways: the comparison covers them.
  EXPECT_LT(read[0][0].size(), 1800u);
  EXPECT_GT(read[0][0].size(), 1600u);
  EXPECT_GT(read[0][1].size(), 300u);
  EXPECT_LT(read[0][1].size(), 400u);
}

TEST(LinkEmulator, PollingOneDirectionAtATimeIsNotExactWithABottleneckQueue) {
  DirectionFaults f;
  f.rate_bps = 1e9;
  EmulatorBench b(with(f));
  ASSERT_TRUE(b.emu) << b.error();
  EXPECT_FALSE(b.emu->per_direction_exact());
}

TEST(LinkEmulator, BottleneckSendsAtItsRateAndLaterFramesWaitInTheQueue) {
  DirectionFaults f;
  f.rate_bps = 1e9;
  f.delay = 1 * kMicro;
  f.ecn_marking = false;
  EmulatorBench b(with(f));
  ASSERT_TRUE(b.emu) << b.error();
  const FrameOptions fo{1000, Ecn::Ect0, IpVersion::V4};
  b.inject(0, 100, fo);
  b.step(kStart);
  const Nanos end = b.drain(kStart, 10);
  ASSERT_EQ(b.arrivals.size(), 100u);
  const std::uint32_t wire = cc::link_bytes(b.arrivals[0].length);
  for (std::size_t k = 0; k < 100; ++k) {
    // The last bit of frame k leaves at (k+1) serialisation times, rounded up to the ns, and
    // is seen at the first 10 ns poll after the delay.
    const Nanos due = kStart + static_cast<Nanos>(std::ceil((k + 1) * wire * 8.0)) + kMicro;
    EXPECT_GE(b.arrivals[k].at, due) << k;
    EXPECT_LT(b.arrivals[k].at, due + 10) << k;
  }
  const double gbps = 99.0 * wire * 8 / static_cast<double>(b.arrivals[99].at - b.arrivals[0].at);
  EXPECT_NEAR(gbps, 1.0, 0.001);
  EXPECT_EQ(b.emu->stats(Direction::XtoY).get(LinkCounter::QueueMaxBytes), 99u * wire);
  (void)end;
  expect_no_leak(b);
}

TEST(LinkEmulator, FramesBeyondTheQueueCapacityAreTailDropped) {
  const FrameOptions fo{1000, Ecn::Ect0, IpVersion::V4};
  DirectionFaults f;
  f.rate_bps = 10e9;
  f.ecn_marking = false;
  // Room for exactly 10 frames; the first of a burst starts on the idle link at once.
  f.queue_bytes = 10ull * cc::link_bytes(1000 + 58);  // Ethernet, IPv4, UDP, BTH, ICRC: 58 B
  EmulatorBench b(with(f));
  ASSERT_TRUE(b.emu) << b.error();
  b.inject(0, 50, fo);
  b.step(kStart);
  b.drain(kStart, 100);
  const LinkStats s = b.emu->stats(Direction::XtoY);
  EXPECT_EQ(b.arrivals.size(), 11u);
  EXPECT_EQ(s.get(LinkCounter::TailDropped), 39u);
  for (std::size_t i = 0; i < b.arrivals.size(); ++i) EXPECT_EQ(b.arrivals[i].psn, i);
  expect_conserved(s);
  expect_no_leak(b);
}

// RED with Kmin 0 and Kmax 1 byte marks an ECT frame whenever anything is still queued behind
// it, so the marks are known exactly: all but the first frame (the link was idle) and the last
// one (nothing behind it) of a burst.
TEST(LinkEmulator, RedMarksEctFramesWithCeOnDequeueAndKeepsThemValid) {
  DirectionFaults f;
  f.rate_bps = 10e9;
  f.red = {0, 1, 1.0};
  EmulatorBench b(with(f));
  ASSERT_TRUE(b.emu) << b.error();
  b.inject(0, 20, {256, Ecn::Ect0, IpVersion::V4});
  b.inject(20, 20, {256, Ecn::Ect1, IpVersion::V6});
  b.inject(40, 10, {256, Ecn::NotEct, IpVersion::V4});
  b.inject(50, 5, {256, Ecn::Ect0, IpVersion::V6});
  b.step(kStart);
  b.drain(kStart, 100);
  ASSERT_EQ(b.arrivals.size(), 55u);
  unsigned ce = 0;
  for (const Arrival& a : b.arrivals) {
    const bool ect_before = a.psn < 40 || a.psn >= 50;
    const bool expect_ce = ect_before && a.psn != 0 && a.psn != 54;
    EXPECT_EQ(a.ecn == Ecn::Ce, expect_ce) << "psn " << a.psn << " " << to_string(a.ecn);
    if (!ect_before) {
      EXPECT_EQ(a.ecn, Ecn::NotEct);
    }
    EXPECT_TRUE(a.checksum_ok) << a.psn;
    EXPECT_EQ(a.icrc, IcrcStatus::Ok) << a.psn;
    ce += a.ecn == Ecn::Ce;
  }
  EXPECT_EQ(ce, 43u);
  EXPECT_EQ(b.emu->stats(Direction::XtoY).get(LinkCounter::Marked), 43u);
  expect_no_leak(b);
}

TEST(LinkEmulator, AFullDelayLineDropsAndCountsInsteadOfLeaking) {
  DirectionFaults f;
  f.delay = kMilli;
  LinkEmulatorOptions o = with(f);
  o.delay_line_frames = 8;
  EmulatorBench b(o);
  ASSERT_TRUE(b.emu) << b.error();
  b.inject(0, 20);
  b.step(kStart);
  const LinkStats s = b.emu->stats(Direction::XtoY);
  EXPECT_EQ(s.get(LinkCounter::DelayLineFull), 12u);
  EXPECT_EQ(s.get(LinkCounter::Held), 8u);
  expect_conserved(s);
  b.drain(kStart, 100 * kMicro);
  EXPECT_EQ(b.arrivals.size(), 8u);
  expect_no_leak(b);
}

// Every path at once (loss, duplicates, reordering, jitter, tail drop, marking), both ways,
// then the emulator destroyed while it still holds frames: every mbuf is back in its pool.
TEST(LinkEmulator, NoMbufLeaksOnAnyPathOrWhenDestroyedWhileHoldingFrames) {
  DirectionFaults f;
  f.loss = 0.05;
  f.duplicate = 0.05;
  f.reorder = 0.05;
  f.reorder_delay = 30 * kMicro;
  f.delay = 10 * kMicro;
  f.jitter = 5 * kMicro;
  f.rate_bps = 5e9;
  f.queue_bytes = 40'000;
  f.red = {5'000, 20'000, 0.5};
  LinkEmulatorOptions o = with(f, 9);
  o.y_to_x = f;
  {
    EmulatorBench b(o);
    ASSERT_TRUE(b.emu) << b.error();
    Nanos t = kStart;
    for (int round = 0; round < 40; ++round) {
      b.inject(static_cast<std::uint32_t>(round * 100), 100, {512, Ecn::Ect0, IpVersion::V4});
      b.inject(static_cast<std::uint32_t>(round * 100), 100, {512, Ecn::Ect0, IpVersion::V6}, true);
      b.emu->poll(t += 2 * kMicro);
      b.collect(t);
      b.collect(t, true);
    }
    b.drain(t, kMicro);
    b.collect(t, true);
    for (Direction d : {Direction::XtoY, Direction::YtoX}) {
      const LinkStats s = b.emu->stats(d);
      std::printf("  %s: %s\n", to_string(d).c_str(), to_string(s).c_str());
      for (LinkCounter c : {LinkCounter::Lost, LinkCounter::Duplicated, LinkCounter::Reordered, LinkCounter::Marked,
                            LinkCounter::TailDropped})
        EXPECT_GT(s.get(c), 0u) << to_string(d) << " never took path " << to_string(c);
      expect_conserved(s);
    }
    expect_no_leak(b);
  }
  {
    DirectionFaults slow;
    slow.delay = kSecond;
    slow.rate_bps = 1e9;
    slow.duplicate = 0.5;
    EmulatorBench b(with(slow));
    ASSERT_TRUE(b.emu) << b.error();
    b.inject(0, 200);
    b.step(kStart);
    EXPECT_EQ(b.emu->frames_held(), 200u + b.emu->stats(Direction::XtoY).get(LinkCounter::Duplicated));
    b.emu.reset();
    EXPECT_EQ(b.test_mbufs_in_use(), 0u);
  }
}

TEST(LinkEmulator, RunsOnItsOwnLcoreWithTheTscClock) {
  const unsigned lcore = rte_get_next_lcore(-1, 1, 0);
  if (lcore >= RTE_MAX_LCORE) GTEST_SKIP() << "no worker lcore in this EAL (one core): cannot launch the emulator";
  DirectionFaults f;
  f.delay = 20 * kMicro;
  f.loss = 0.1;
  EmulatorBench b(with(f, 5));
  ASSERT_TRUE(b.emu) << b.error();
  ASSERT_TRUE(b.emu->launch(lcore).ok());
  EXPECT_FALSE(b.emu->launch(lcore).ok());
  b.inject(0, 1000);
  const Nanos deadline = b.emu->now() + 5 * kSecond;
  while (b.emu->stats(Direction::XtoY).get(LinkCounter::Received) < 1000 || b.emu->stats(Direction::XtoY).get(LinkCounter::Held))
    ASSERT_LT(b.emu->now(), deadline) << to_string(b.emu->stats(Direction::XtoY));
  b.emu->stop();
  b.emu->wait();
  b.collect(0);
  const LinkStats s = b.emu->stats(Direction::XtoY);
  EXPECT_EQ(b.arrivals.size(), s.get(LinkCounter::Forwarded));
  EXPECT_EQ(s.get(LinkCounter::Forwarded) + s.get(LinkCounter::Lost), 1000u);
  expect_no_leak(b);
}

TEST(LinkEmulator, BadSettingsAreRefusedWithAReason) {
  const std::pair<DirectionFaults, std::string> cases[] = {
      {DirectionFaults{.loss = 1.5}, "loss"},
      {DirectionFaults{.duplicate = -0.1}, "duplicate"},
      {DirectionFaults{.reorder = 2}, "reorder"},
      {DirectionFaults{.delay = -1}, "negative"},
      {DirectionFaults{.rate_bps = 1e9, .red = {10, 5, 0.1}}, "Kmax"},
      {DirectionFaults{.rate_bps = 1e9, .queue_frames = 0}, "slot"},
  };
  for (const auto& [f, word] : cases) {
    const auto e = check(f);
    ASSERT_TRUE(e) << word;
    EXPECT_NE(e->find(word), std::string::npos) << *e;
  }
  EXPECT_FALSE(check(DirectionFaults{}));
  LinkEmulatorOptions o;
  o.x.name = o.y.name = "nosuchport";
  auto same = LinkEmulator::create(o);
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.error().message.find("both sides"), std::string::npos) << same.error().message;
  o.y.name = "other";
  o.y_to_x.loss = 7;
  auto bad = LinkEmulator::create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("y->x"), std::string::npos) << bad.error().message;
  o.y_to_x.loss = 0;
  o.name = "lt_noport";
  auto missing = LinkEmulator::create(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("nosuchport"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace roce::netsim::link_emulator_test
