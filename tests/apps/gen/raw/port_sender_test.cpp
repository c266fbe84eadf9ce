// Raw mode onto a DPDK port: a net_ring pair in one process, the sender on one side and the
// test counting what arrives on the other. Pacing is checked as "never early"; how fast the
// stream can go is a benchmark matter, not asserted here.
#include "apps/gen/raw/port_sender.hpp"

#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <map>
#include <optional>

#include "dataplane/port.hpp"
#include "dataplane/ring_port.hpp"
#include "dataplane/tsc_clock.hpp"
#include "protocol/parser.hpp"

namespace roce::gen {
namespace {

using namespace roce::proto;

struct Received {
  std::uint32_t psn = 0;
  std::uint8_t opcode = 0;
  Ecn ecn = Ecn::NotEct;
  IcrcStatus icrc = IcrcStatus::NotChecked;
  Nanos at = 0;
};

class PortSender : public ::testing::Test {
 public:
  void SetUp() override {
    static int n = 0;
    const std::string s = std::to_string(n++);
    pool_ = rte_pktmbuf_pool_create(("rg_pool" + s).c_str(), 8191, 256, 0, 2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    auto pair = dp::make_ring_pair("rg_tx" + s, "rg_rx" + s, ring_size_);
    ASSERT_TRUE(pair.ok()) << pair.error().message;
    dp::PortOptions po;
    po.name = std::to_string(pair->a);
    auto a = dp::open_port(po, pool_);
    ASSERT_TRUE(a.ok()) << a.error().message;
    tx_ = a->id;
    po.name = std::to_string(pair->b);
    auto b = dp::open_port(po, pool_);
    ASSERT_TRUE(b.ok()) << b.error().message;
    rx_ = b->id;
  }
  void TearDown() override {
    if (rx_) collect(0);
    if (tx_) dp::close_port(*tx_);
    if (rx_) dp::close_port(*rx_);
    if (pool_) {
      EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
      rte_mempool_free(pool_);
    }
  }

  void collect(Nanos at) {
    std::array<rte_mbuf*, 32> rx;
    std::uint16_t n;
    do {
      n = rte_eth_rx_burst(*rx_, 0, rx.data(), 32);
      for (std::uint16_t i = 0; i < n; ++i) {
        Packet p;
        const ByteSpan f{rte_pktmbuf_mtod(rx[i], const std::byte*), rx[i]->data_len};
        EXPECT_EQ(parse_frame(f, {}, p), ParseError::None);
        got.push_back({p.psn(), p.opcode(), p.ecn(), p.icrc_status, at});
        rte_pktmbuf_free(rx[i]);
      }
    } while (n == 32);
  }

  PortSenderOptions options(Rate rate, std::uint64_t count) const {
    PortSenderOptions o;
    o.port = *tx_;
    o.pool = pool_;
    o.rate = rate;
    o.count = count;
    return o;
  }

  std::vector<Received> got;
  unsigned ring_size_ = 4096;
  rte_mempool* pool_ = nullptr;
  std::optional<std::uint16_t> tx_, rx_;
};

RawStreamSpec mixed_stream() {
  RawStreamSpec s;
  s.opcodes = {raw(Opcode::RcWriteOnly), raw(Opcode::RcSendOnlyImm), raw(Opcode::RcReadRequest), raw(Opcode::Cnp)};
  s.payload_bytes = 512;
  s.ce_every.n = 5;
  s.bad_icrc_every.n = 8;
  return s;
}

TEST_F(PortSender, PacedStreamArrivesCompleteInOrderAndNeverEarly) {
  auto gen = RawFrameGenerator::create(mixed_stream());
  ASSERT_TRUE(gen.ok());
  constexpr std::uint64_t kCount = 2000;
  constexpr double kPps = 200e3;  // one frame every 5 us
  auto sender = RawPortSender::create(std::move(*gen), options(Rate::pps(kPps), kCount));
  ASSERT_TRUE(sender.ok()) << sender.error().message;
  const dp::TscClock clock;
  const Nanos start = clock.now();
  while (got.size() < kCount) {
    ASSERT_LT(clock.now() - start, 10 * kSecond) << got.size() << " frames arrived";
    sender->poll(clock.now() - start);
    collect(clock.now() - start);
  }
  EXPECT_TRUE(sender->done());
  std::map<std::uint8_t, unsigned> by_opcode;
  unsigned ce = 0, bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].psn, i);
    // Frame i may leave at i / rate at the earliest.
    EXPECT_GE(got[i].at, static_cast<Nanos>(static_cast<double>(i) * 1e9 / kPps)) << "frame " << i << " early";
    ++by_opcode[got[i].opcode];
    ce += got[i].ecn == Ecn::Ce;
    bad += got[i].icrc == IcrcStatus::Bad;
  }
  for (const auto& [op, n] : by_opcode) EXPECT_EQ(n, kCount / 4) << opcode_name(op);
  EXPECT_EQ(ce, kCount / 5);
  EXPECT_EQ(bad, kCount / 8);
  const auto& st = sender->stats();
  EXPECT_EQ(st.crafted.frames, kCount);
  EXPECT_EQ(st.crafted.ce, kCount / 5);
  EXPECT_EQ(st.crafted.bad_icrc, kCount / 8);
  std::printf("  %llu frames paced at 200 kpps arrived over %.3f ms (at least %.3f ms)\n",
              static_cast<unsigned long long>(kCount), static_cast<double>(got.back().at) / 1e6,
              (kCount - 1) / kPps * 1e3);
}

// A port that takes frames slower than they come: the refused ones wait and go first, none is
// lost or reordered.
TEST_F(PortSender, AFullPortDelaysFramesButLosesNone) {
  ring_size_ = 64;
  TearDown();
  got.clear();
  pool_ = nullptr;
  tx_.reset();
  rx_.reset();
  SetUp();
  auto gen = RawFrameGenerator::create(RawStreamSpec{});
  ASSERT_TRUE(gen.ok());
  constexpr std::uint64_t kCount = 3000;
  auto sender = RawPortSender::create(std::move(*gen), options(Rate{}, kCount));
  ASSERT_TRUE(sender.ok());
  for (int round = 0; got.size() < kCount; ++round) {
    ASSERT_LT(round, 1'000'000);
    sender->poll(round);
    if (round % 3 == 0) collect(round);  // the receiver lags behind
  }
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].psn, i);
  EXPECT_GT(sender->stats().tx_busy, 0u);
  EXPECT_EQ(sender->stats().crafted.frames, kCount);
}

TEST_F(PortSender, RunsOnTheTscUntilItsTimeIsUpAndFreesWhatThePortNeverTook) {
  auto gen = RawFrameGenerator::create(RawStreamSpec{});
  ASSERT_TRUE(gen.ok());
  std::atomic<bool> stop{false};
  std::uint64_t taken = 0;
  {
    auto sender = RawPortSender::create(std::move(*gen), options(Rate{}, 0));  // endless, unpaced
    ASSERT_TRUE(sender.ok());
    const Nanos ran = sender->run(stop, 20 * kMilli);
    EXPECT_GE(ran, 20 * kMilli);
    taken = sender->stats().crafted.frames;
    EXPECT_GT(sender->stats().tx_busy, 0u) << "nobody read the ring, so the port must have filled";
  }
  collect(0);
  EXPECT_EQ(got.size(), taken);
}

TEST_F(PortSender, SetUpErrorsAreRefusedWithTheirReason) {
  RawStreamSpec big;
  big.payload_bytes = 4096;
  big.pmtu = 4096;
  auto gen = RawFrameGenerator::create(big);
  ASSERT_TRUE(gen.ok());
  auto too_big = RawPortSender::create(std::move(*gen), options(Rate{}, 1));
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message.find("do not fit"), std::string::npos) << too_big.error().message;
  auto g2 = RawFrameGenerator::create(RawStreamSpec{});
  ASSERT_TRUE(g2.ok());
  PortSenderOptions o = options(Rate::pps(-1), 1);
  auto bad_rate = RawPortSender::create(std::move(*g2), o);
  ASSERT_FALSE(bad_rate.ok());
  EXPECT_NE(bad_rate.error().message.find("rate"), std::string::npos);
  auto g3 = RawFrameGenerator::create(RawStreamSpec{});
  o = options(Rate{}, 1);
  o.port = RTE_MAX_ETHPORTS - 1;
  auto bad_port = RawPortSender::create(std::move(*g3), o);
  ASSERT_FALSE(bad_port.ok());
  EXPECT_NE(bad_port.error().message.find("no DPDK port"), std::string::npos);
}

}  // namespace
}  // namespace roce::gen
