// Receive overruns marked CE (dataplane/overrun.hpp): the arithmetic of drops owed as marks,
// which frames a burst gives them to, one marker per port however many workers, the marks
// answered by DCQCN (CNPs, the sender's rate cut), and an af_packet ring that overflows for real
// (the drops only the socket counts, dataplane/port_drops.hpp).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <thread>

#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "lib/cc/params.hpp"
#include "protocol/builder.hpp"
#include "protocol/ecn_mark.hpp"
#include "tests/support/packet_socket.hpp"
#include "tests/dataplane/ecn_frame.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::overrun_test {
namespace {

using dp::OverrunConfig;
using dp::OverrunMarker;
using namespace roce::proto;

TEST(OverrunMarker, TheFirstReadingIsTheBaselineAndGrowthIsOwed) {
  OverrunMarker m;
  EXPECT_TRUE(m.due(0));
  m.on_port_drops(0, 500);  // drops before the loop started: nobody's to answer now
  EXPECT_EQ(m.owed(), 0u);
  EXPECT_FALSE(m.due(kMilli - 1));
  EXPECT_TRUE(m.due(kMilli));
  m.on_port_drops(kMilli, 507);
  EXPECT_EQ(m.owed(), 7u);
  m.marked(3);
  EXPECT_EQ(m.owed(), 4u);
  m.on_port_drops(2 * kMilli, 510);
  EXPECT_EQ(m.owed(), 7u);
  m.marked(100);  // never more than owed
  EXPECT_EQ(m.owed(), 0u);
  EXPECT_EQ(m.counters().frames_lost, 10u);
  EXPECT_EQ(m.counters().ce_marked, 10u);
}

TEST(OverrunMarker, OwedMarksAreCappedAndACounterResetIsANewBaseline) {
  OverrunMarker m(OverrunConfig{kMilli, 256});
  m.on_port_drops(0, 0);
  m.on_port_drops(kMilli, 10'000);
  EXPECT_EQ(m.owed(), 256u);
  EXPECT_EQ(m.counters().frames_lost, 10'000u);
  m.on_port_drops(2 * kMilli, 3);  // the port's statistics were reset
  EXPECT_EQ(m.counters().frames_lost, 10'000u);
  m.on_port_drops(3 * kMilli, 5);
  EXPECT_EQ(m.counters().frames_lost, 10'002u);
  m.skip(4 * kMilli);  // an unreadable count keeps the baseline
  EXPECT_FALSE(m.due(4 * kMilli + 1));
  m.on_port_drops(5 * kMilli, 6);
  EXPECT_EQ(m.counters().frames_lost, 10'003u);
  OverrunMarker off(OverrunConfig{0, 256});
  EXPECT_FALSE(off.due(kSecond));
}

TEST(OverrunMarker, WithMarksOffTheDropsAreCountedAndNothingIsOwed) {
  OverrunMarker m(OverrunConfig{kMilli, 256, false});
  m.on_port_drops(0, 0);
  m.on_port_drops(kMilli, 30);
  EXPECT_EQ(m.counters().frames_lost, 30u);
  EXPECT_EQ(m.owed(), 0u);
}

std::string fresh(const std::string& stem) {
  static int n = 0;
  return stem + std::to_string(n++);
}

// A plain worker's poll enters the marking only at `now >= attention_at()` (one compare): that
// must be exactly when on_burst would read the drops or owe a mark. Without a reader, or with the
// reading off, never; a first reading at once; then the interval's end; the least time while
// marks are owed, until they are paid; and an unreadable count moves the next try as a reading does.
TEST(OverrunMarking, AttentionIsDueExactlyWhenABurstWouldReadTheDropsOrMark) {
  constexpr Nanos kLeast = std::numeric_limits<Nanos>::min();
  EXPECT_EQ(dp::OverrunMarking().attention_at(), kNever) << "no reader";
  EXPECT_EQ(dp::OverrunMarking(OverrunConfig{0, 256}, [] { return std::optional<std::uint64_t>(5); }).attention_at(), kNever)
      << "never read";
  std::optional<std::uint64_t> dropped = 0;
  unsigned reads = 0;
  dp::OverrunMarking marking(OverrunConfig{kMilli, 256}, [&] {
    ++reads;
    return dropped;
  });
  EXPECT_EQ(marking.attention_at(), 0) << "the baseline is read at the first burst";
  EXPECT_TRUE(marking.due_or_owed(0));
  marking.on_burst(nullptr, 0, 10);
  EXPECT_EQ(reads, 1u);
  EXPECT_EQ(marking.attention_at(), 10 + kMilli);
  EXPECT_FALSE(marking.due_or_owed(10 + kMilli - 1));
  marking.on_burst(nullptr, 0, 10 + kMilli - 1);
  EXPECT_EQ(reads, 1u) << "read before the interval";
  dropped = 2;
  EXPECT_TRUE(marking.due_or_owed(10 + kMilli));
  marking.on_burst(nullptr, 0, 10 + kMilli);  // two owed, no frame to mark in an empty burst
  EXPECT_EQ(reads, 2u);
  EXPECT_EQ(marking.attention_at(), kLeast) << "marks owed: every burst is a candidate";
  EXPECT_TRUE(marking.due_or_owed(0));
  // Paid by a burst of two ECN-capable frames: the next reading is an interval after the last.
  rte_mempool* pool = rte_pktmbuf_pool_create(fresh("ovr_att").c_str(), 7, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr) << rte_strerror(rte_errno);
  std::array<rte_mbuf*, 2> rx{};
  const std::vector<std::byte> f = frame_with(Ecn::Ect0);
  for (rte_mbuf*& m : rx) {
    m = rte_pktmbuf_alloc(pool);
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<std::uint16_t>(f.size())), f.data(), f.size());
  }
  marking.on_burst(rx.data(), 2, 10 + kMilli + 5);
  EXPECT_EQ(marking.counters().ce_marked, 2u);
  EXPECT_EQ(marking.attention_at(), 10 + 2 * kMilli);
  // An unreadable count: the next try is an interval later, as after a reading.
  dropped.reset();
  marking.on_burst(rx.data(), 2, 10 + 2 * kMilli + 3);
  EXPECT_EQ(reads, 3u);
  EXPECT_EQ(marking.attention_at(), 10 + 3 * kMilli + 3);
  rte_pktmbuf_free_bulk(rx.data(), 2);
  rte_mempool_free(pool);
}

TEST(OverrunMarking, OwedMarksGoToTheBurstsEcnCapableFramesOnly) {
  rte_mempool* pool = rte_pktmbuf_pool_create(fresh("ovr_pool").c_str(), 63, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr) << rte_strerror(rte_errno);
  std::uint64_t dropped = 0;
  dp::OverrunMarking marking(OverrunConfig{kMilli, 256}, [&] { return std::optional<std::uint64_t>(dropped); });
  const std::vector<std::vector<std::byte>> frames = {
      frame_with(Ecn::NotEct), frame_with(Ecn::Ect0), frame_with(Ecn::Ce), frame_with(Ecn::Ect1, IpVersion::V6),
      frame_with(Ecn::Ect0),   frame_with(Ecn::Ect0)};
  const auto burst = [&](std::vector<rte_mbuf*>& out) {
    out.clear();
    for (const auto& f : frames) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool);
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_mtod(m, void*), f.data(), f.size());
      m->data_len = static_cast<std::uint16_t>(f.size());
      m->pkt_len = m->data_len;
      out.push_back(m);
    }
  };
  const auto ecn_of = [](rte_mbuf* m) {
    const ByteSpan f{rte_pktmbuf_mtod(m, const std::byte*), m->data_len};
    return read_ecn(f, *locate_ecn(f));
  };
  std::vector<rte_mbuf*> rx;
  burst(rx);
  marking.on_burst(rx.data(), static_cast<unsigned>(rx.size()), 0);  // the baseline: nothing owed
  EXPECT_EQ(marking.counters().ce_marked, 0u);
  for (std::size_t i = 0; i < rx.size(); ++i) EXPECT_EQ(ecn_of(rx[i]), read_ecn(frames[i], *locate_ecn(frames[i]))) << i;
  rte_pktmbuf_free_bulk(rx.data(), static_cast<unsigned>(rx.size()));

  dropped = 3;  // three frames lost: the next three ECN-capable ones are marked, in order
  burst(rx);
  marking.on_burst(rx.data(), static_cast<unsigned>(rx.size()), kMilli);
  const Ecn want[] = {Ecn::NotEct, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ce, Ecn::Ect0};
  for (std::size_t i = 0; i < rx.size(); ++i) EXPECT_EQ(ecn_of(rx[i]), want[i]) << "frame " << i;
  EXPECT_EQ(marking.counters().frames_lost, 3u);
  EXPECT_EQ(marking.counters().ce_marked, 3u);
  rte_pktmbuf_free_bulk(rx.data(), static_cast<unsigned>(rx.size()));
  // Nothing new, nothing owed: a burst goes through untouched (and the count is not read again
  // before the interval).
  burst(rx);
  marking.on_burst(rx.data(), static_cast<unsigned>(rx.size()), kMilli + 1);
  EXPECT_EQ(ecn_of(rx[1]), Ecn::Ect0);
  EXPECT_EQ(marking.counters().ce_marked, 3u);
  rte_pktmbuf_free_bulk(rx.data(), static_cast<unsigned>(rx.size()));
  rte_mempool_free(pool);
}

// Two dataplanes a -> b with two workers each and DCQCN on, one QP pair per worker, b's port
// drop count injected: WRITEs run, then the count grows by `drops`, then more WRITEs run.
struct MarkedWrites {
  std::unique_ptr<dp::Dataplane> a, b;
  std::vector<std::pair<Endpoint, Endpoint>> qps;
  std::uint64_t ce_before = 0;

  void run(dp::Mode mode, std::uint64_t drops) {
    const unsigned queues = mode == dp::Mode::Pipeline ? 1 : 2;
    auto pair = dp::make_ring_pair(fresh("ovrA"), fresh("ovrB"), 4096, queues);
    ASSERT_TRUE(pair.ok()) << pair.error().message;
    std::atomic<std::uint64_t> dropped{0};
    const auto make = [&](std::uint16_t port, std::uint8_t host, bool inject) {
      dp::DataplaneOptions o;
      o.name = fresh("ovr");
      o.port.name = std::to_string(port);
      o.ip = rdma::IpAddress::ipv4({10, 0, 0, host});
      o.mac = proto::MacAddr{2, 0, 0, 0, 0, host};
      o.workers = 2;
      o.mode = mode;
      o.mbufs = 4095;
      o.engine.tuning.congestion.enabled = true;
      o.engine.tuning.congestion.rp = cc::paper_params(10e9);
      if (inject) o.port_drops = [&] { return std::optional<std::uint64_t>(dropped.load()); };
      o.overrun.check_interval = 100 * kMicro;  // read well inside the WRITEs after the drops, however fast they go
      auto d = dp::Dataplane::create(o);
      EXPECT_TRUE(d.ok()) << d.error().message;
      return d.ok() ? std::move(*d) : nullptr;
    };
    a = make(pair->a, 1, false);
    b = make(pair->b, 2, true);
    ASSERT_TRUE(a && b);
    a->learn(rdma::IpAddress::ipv4({10, 0, 0, 2}), {2, 0, 0, 0, 0, 2});
    b->learn(rdma::IpAddress::ipv4({10, 0, 0, 1}), {2, 0, 0, 0, 0, 1});
    QpOptions qo;
    for (unsigned w = 0; w < 2; ++w) {
      Endpoint ea = make_endpoint(a->worker(w).engine(), qo), eb = make_endpoint(b->worker(w).engine(), qo);
      connect_pair(ea, eb, qo);
      qps.emplace_back(ea, eb);
    }
    std::vector<std::byte> src(64 * 1024, std::byte{7}), dst(64 * 1024);
    std::vector<const rdma::MemoryRegion*> smr, dmr;
    for (auto& [ea, eb] : qps) {
      smr.push_back(reg(*ea.engine, ea.pd, src, IBV_ACCESS_LOCAL_WRITE));
      dmr.push_back(reg(*eb.engine, eb.pd, dst, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    }
    std::uint64_t id = 0;
    std::size_t completed = 0, posted = 0;
    const auto write_and_wait = [&](unsigned per_qp) {
      for (std::size_t i = 0; i < qps.size(); ++i)
        for (unsigned k = 0; k < per_qp; ++k, ++posted) {
          ibv_sge g = sge(src.data(), static_cast<std::uint32_t>(src.size()), smr[i]);
          ASSERT_EQ(post(qps[i].first, IBV_WR_RDMA_WRITE, id++, &g, 1, reinterpret_cast<std::uint64_t>(dst.data()), dmr[i]->rkey()), 0);
        }
      const Nanos limit = a->now() + 30 * kSecond;
      while (completed < posted && a->now() < limit) {
        a->poll_once();
        b->poll_once();
        for (auto& qp : qps)
          for (const ibv_wc& wc : drain(qp.first)) {
            EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << describe(wc);
            ++completed;
          }
      }
      ASSERT_EQ(completed, posted);
    };
    write_and_wait(4);  // long enough for the baseline reading
    ce_before = ce_received();
    dropped = drops;
    write_and_wait(16);
  }
  std::uint64_t ce_received() const {
    std::uint64_t n = 0;
    for (const auto& qp : qps) n += qp.second.qp->counters().get(rdma::Counter::EcnCeReceived);
    return n;
  }
  // The marks reached the QPs as CE (ACKs from a go the other way), and DCQCN answered: the
  // receiver's notification point sent CNPs and a sender's reaction point cut its rate (counted:
  // by the end the rate may have recovered).
  void expect_dcqcn_answered(std::uint64_t drops) const {
    EXPECT_EQ(ce_before, 0u);
    EXPECT_EQ(ce_received(), drops);
    std::uint64_t cnps_sent = 0, cnps_received = 0;
    bool cut = false;
    for (const auto& qp : qps) {
      cnps_sent += qp.second.qp->counters().get(rdma::Counter::CnpSent);
      cnps_received += qp.first.qp->counters().get(rdma::Counter::CnpReceived);
      if (const auto* cc = qp.first.qp->congestion()) cut |= cc->reaction_point().counters().rate_decreases > 0;
    }
    EXPECT_GT(cnps_sent, 0u);
    EXPECT_EQ(cnps_received, cnps_sent);
    EXPECT_TRUE(cut) << "no sender's rate was cut";
  }
};

// Two run-to-completion workers on one two-queue port: only worker 0 reads the port's drops, so
// each lost frame is owed once, not once per worker.
TEST(OverrunMarking, TwoWorkersMarkEachLostFrameOnceAndDcqcnAnswersTheMarks) {
  MarkedWrites t;
  t.run(dp::Mode::RunToCompletion, 40);
  ASSERT_FALSE(HasFatalFailure());
  const dp::WorkerStats w0 = t.b->worker(0).stats(), w1 = t.b->worker(1).stats();
  EXPECT_EQ(w0.rx_overrun_frames, 40u);
  EXPECT_EQ(w0.rx_overrun_ce_marks, 40u);
  EXPECT_EQ(w1.rx_overrun_frames, 0u) << "only worker 0 reads the port";
  EXPECT_EQ(w1.rx_overrun_ce_marks, 0u);
  t.expect_dcqcn_answered(40);
}

// Pipeline mode: the IO loop reads the port, so it counts and marks; the workers never do.
TEST(OverrunMarking, InPipelineModeTheIoLoopMarks) {
  MarkedWrites t;
  t.run(dp::Mode::Pipeline, 25);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_NE(t.b->io_stats(), nullptr);
  EXPECT_EQ(t.b->io_stats()->rx_overrun_frames, 25u);
  EXPECT_EQ(t.b->io_stats()->rx_overrun_ce_marks, 25u);
  for (unsigned w = 0; w < 2; ++w) EXPECT_EQ(t.b->worker(w).stats().rx_overrun_frames, 0u);
  t.expect_dcqcn_answered(25);
}

int shell(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// A network namespace of the test's own with a veth pair in it: an af_packet port on one end
// (made from inside the namespace, where its sockets then live; the port is started from there
// too, inside()) with a ring of `framecnt` slots, and a raw socket on the other end to send from.
class AfPacketNamespace {
 public:
  explicit AfPacketNamespace(unsigned framecnt) {
    const std::string id = std::to_string(::getpid());
    ns_ = "ovr" + id;
    port_ = "ovr" + id + "a";
    peer_ = "ovr" + id + "b";
    vdev_ = "net_af_packet_" + port_;
    if (shell("ip netns add " + ns_) != 0) {
      why_ = "cannot create a network namespace (ip netns add failed)";
      return;
    }
    made_ = true;
    const std::string in = "ip -n " + ns_ + " ";
    if (shell(in + "link add " + port_ + " type veth peer name " + peer_) != 0) {
      why_ = "cannot create a veth pair";
      return;
    }
    for (const std::string& dev : {port_, peer_})  // nothing but the test's frames on the link
      shell("ip netns exec " + ns_ + " sysctl -w net.ipv6.conf." + dev + ".disable_ipv6=1");
    if (shell(in + "link set " + port_ + " up") != 0 || shell(in + "link set " + peer_ + " up") != 0) {
      why_ = "cannot bring the veth pair up";
      return;
    }
    self_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    target_ = ::open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (!inside([&] {
          const std::string args = vdev_ + ",iface=" + port_ + ",blocksz=4096,framesz=2048,framecnt=" + std::to_string(framecnt);
          probed_ = rte_dev_probe(args.c_str()) == 0;
          fd_ = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
          ifindex_ = static_cast<int>(::if_nametoindex(peer_.c_str()));
        }))
      why_ = "cannot enter the namespace";
    else if (!probed_) why_ = "the af_packet PMD could not attach to " + port_;
    else if (fd_ < 0 || ifindex_ == 0) why_ = "cannot open a packet socket in the namespace";
  }
  ~AfPacketNamespace() {
    if (fd_ >= 0) ::close(fd_);
    for (int fd : {self_, target_})
      if (fd >= 0) ::close(fd);
    if (probed_) rte_eal_hotplug_remove("vdev", vdev_.c_str());
    if (made_) shell("ip netns del " + ns_);
  }
  AfPacketNamespace(const AfPacketNamespace&) = delete;
  AfPacketNamespace& operator=(const AfPacketNamespace&) = delete;

  const std::string& why_not() const { return why_; }
  // Runs `fn` on this thread inside the namespace (interface names there resolve); false when
  // it could not enter.
  template <typename Fn>
  bool inside(Fn&& fn) {
    if (self_ < 0 || target_ < 0 || ::setns(target_, CLONE_NEWNET) != 0) return false;
    fn();
    ::setns(self_, CLONE_NEWNET);
    return true;
  }
  std::string port_id() const {
    std::uint16_t id = 0;
    rte_eth_dev_get_port_by_name(vdev_.c_str(), &id);
    return std::to_string(id);
  }
  bool send(std::span<const std::byte> frame) const {
    return send_on_packet_socket(fd_, ifindex_, frame);
  }

 private:
  std::string ns_, port_, peer_, vdev_, why_;
  bool made_ = false, probed_ = false;
  int fd_ = -1, ifindex_ = 0, self_ = -1, target_ = -1;
};

// What the issue is about: an af_packet port whose poller does not read while frames arrive.
// The kernel's ring (16 slots here) takes what fits and drops the rest, counting them only in
// the socket's PACKET_STATISTICS (DPDK's PMD reports no imissed). The worker sees them, and the
// frames it then reads are marked CE for them.
TEST(OverrunMarking, AnAfPacketRingThatOverflowsIsSeenAndMarked) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace, a veth pair and an af_packet port";
  constexpr unsigned kRing = 16, kSent = 100;
  AfPacketNamespace net(kRing);
  if (!net.why_not().empty()) GTEST_SKIP() << net.why_not();
  dp::DataplaneOptions o;
  o.name = fresh("ovraf");
  o.port.name = net.port_id();
  o.mbufs = 1023;
  Result<std::unique_ptr<dp::Dataplane>> d = make_error(EINVAL, "not made");
  ASSERT_TRUE(net.inside([&] { d = dp::Dataplane::create(o); }));
  ASSERT_TRUE(d.ok()) << d.error().message;
  dp::Dataplane& dp = **d;
  dp.poll_once();  // the baseline reading
  const std::vector<std::byte> frame = frame_with(Ecn::Ect0);
  for (unsigned i = 0; i < kSent; ++i) ASSERT_TRUE(net.send(frame)) << std::strerror(errno);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // nobody polls: the ring overflows
  const Nanos until = dp.now() + 200 * kMilli;
  while (dp.now() < until) dp.poll_once();
  const dp::WorkerStats& s = dp.worker(0).stats();
  EXPECT_EQ(s.rx_packets, kRing) << "the ring holds what fits";
  EXPECT_EQ(s.rx_packets + s.rx_overrun_frames, kSent) << "every frame either read or counted as dropped";
  EXPECT_EQ(s.rx_overrun_ce_marks, s.rx_packets) << "every frame read after the overrun is marked";
}

}  // namespace
}  // namespace roce::test::overrun_test
