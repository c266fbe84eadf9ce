// net_pcap: a capture of requests goes in through the PMD's rx_pcap file, the dataplane's
// answers come out in its tx_pcap file, and the protocol parser reads them back.
//
// What the PMD does (DPDK 22.11 drivers/net/pcap): it opens rx_pcap at probe and again at
// every start, replays it once (then rx_burst returns 0; infinite_rx is off), writes every
// transmitted frame to tx_pcap with a flush per burst, and closes the dumper at stop. Its
// MAC is 02:70:63:61:70:<n-th pcap device of the process> and it filters nothing, so the
// dataplane is given its own MAC and the capture is addressed to that.
#include <gtest/gtest.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_ethdev.h>

#include <cstdlib>
#include <filesystem>

#include "dataplane/dataplane.hpp"
#include "tests/support/capture_file.hpp"
#include "tests/support/raw_peer.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::test::pcap_pmd_test {
namespace {

using proto::Opcode;

constexpr proto::MacAddr kMyMac{0x02, 0x00, 0x00, 0x00, 0x09, 0x01};
constexpr proto::Ipv4Addr kMyIp{10, 0, 9, 1};
constexpr proto::MacAddr kPeerMac{0x02, 0x00, 0x00, 0x00, 0x09, 0x02};
constexpr proto::Ipv4Addr kPeerIp{10, 0, 9, 2};
constexpr std::uint32_t kPeerQpn = 0x99;
constexpr std::uint32_t kPsn = 0xFFFFFE;  // the run crosses the 24-bit PSN wrap
constexpr std::uint32_t kPmtu = 1024;
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

std::uint32_t psn(std::uint32_t off) { return (kPsn + off) & 0xFFFFFF; }

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return v;
}

// Where the test's capture files go: ROCE_TEST_PCAP_DIR keeps them, else a temporary folder.
class CaptureDir {
 public:
  explicit CaptureDir(const std::string& name) {
    const char* keep = std::getenv("ROCE_TEST_PCAP_DIR");
    keep_ = keep && *keep;
    dir_ = keep_ ? std::filesystem::path(keep) : std::filesystem::temp_directory_path() / ("roce_" + name + "_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    prefix_ = keep_ ? name + "-" : "";
  }
  ~CaptureDir() {
    if (!keep_) std::filesystem::remove_all(dir_);
  }
  std::string path(const std::string& file) const { return (dir_ / (prefix_ + file)).string(); }

 private:
  std::filesystem::path dir_;
  std::string prefix_;
  bool keep_ = false;
};

void bring_up(rdma::Engine& e, rdma::QueuePair* qp) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAll;
  ASSERT_TRUE(e.modify_qp(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS).ok());
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = kPeerQpn;
  a.rq_psn = kPsn;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4(kPeerIp));
  a.ah_attr.port_num = 1;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  const auto rtr = e.modify_qp(qp, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  ASSERT_TRUE(rtr.ok()) << rtr.error().message;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0x100;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  ASSERT_TRUE(e.modify_qp(qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_MAX_QP_RD_ATOMIC).ok());
}

struct Expected {
  Opcode op;
  std::uint32_t psn;
  std::optional<std::uint32_t> msn;  // when the response carries an AETH
  std::vector<std::byte> payload;
};

TEST(PcapPmd, RequestCaptureInAnswersOutAndMemoryWritten) {
  CaptureDir dir("pcap_pmd");
  const std::string in = dir.path("requests.pcap"), out = dir.path("responses.pcap");
  // The PMD opens rx_pcap at probe: start with an empty capture, fill it once the QP exists.
  ASSERT_EQ(write_capture(in, {}), "");
  const std::string vdev = "net_pcap_rocetest";
  ASSERT_EQ(rte_dev_probe((vdev + ",rx_pcap=" + in + ",tx_pcap=" + out).c_str()), 0) << "cannot create " << vdev;

  dp::DataplaneOptions o;
  o.name = "pcapdp";
  o.port.name = vdev;
  o.ip = rdma::IpAddress::ipv4(kMyIp);
  o.mac = kMyMac;
  o.mbufs = 1023;
  auto made = dp::Dataplane::create(o);
  ASSERT_TRUE(made.ok()) << made.error().message;
  std::unique_ptr<dp::Dataplane> d = std::move(*made);
  EXPECT_EQ(d->port().driver, "net_pcap");
  EXPECT_EQ(proto::mac_to_string(d->port().mac).substr(0, 14), "02:70:63:61:70") << proto::mac_to_string(d->port().mac);
  const unsigned pool_start = d->mbufs_in_use();

  d->arp().learn(kPeerIp, kPeerMac);
  rdma::Engine& e = d->worker(0).engine();
  QpOptions qo;
  Endpoint ep = make_endpoint(e, qo);
  bring_up(e, ep.qp);
  if (HasFatalFailure()) return;

  std::vector<std::byte> mem = pattern(16384, 7), recv(4096);
  const std::vector<std::byte> original = mem;
  auto* mr = reg(e, ep.pd, mem, kAll);
  auto* rmr = reg(e, ep.pd, recv, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge rs = sge(recv.data(), 4096, rmr);
  ASSERT_EQ(post_recv(ep, 42, &rs, 1), 0);
  const auto va = [&](std::size_t off) { return reinterpret_cast<std::uint64_t>(mem.data() + off); };
  std::uint64_t word = 0x1122334455667788;
  std::memcpy(mem.data() + 8192, &word, 8);

  RawPeer peer(e, kPeerMac, kPeerIp, kPeerQpn, ep.qp->qpn());
  const auto write_data = pattern(64, 1), send_data = pattern(200, 2);
  std::vector<std::vector<std::byte>> frames;
  frames.push_back(peer.frame(Opcode::RcWriteOnly, psn(0), reth(va(100), mr->rkey(), 64), write_data));
  frames.push_back(peer.frame(Opcode::RcReadRequest, psn(1), reth(va(1000), mr->rkey(), 3000)));  // 3 responses
  frames.push_back(peer.frame(Opcode::RcSendOnly, psn(4), {}, send_data));
  frames.push_back(peer.frame(Opcode::RcFetchAdd, psn(5), atomic_eth(va(8192), mr->rkey(), 5, 0)));
  // Three frames that must be counted and dropped, never answered: a bad ICRC, an unknown
  // QP, and a UDP datagram that is not RoCEv2.
  auto bad = peer.frame(Opcode::RcWriteOnly, psn(6), reth(va(200), mr->rkey(), 64), write_data);
  bad.back() ^= std::byte{0x01};
  frames.push_back(bad);
  RawPeer stranger(e, kPeerMac, kPeerIp, kPeerQpn, 0x7777);
  frames.push_back(stranger.frame(Opcode::RcWriteOnly, 0, reth(va(300), mr->rkey(), 64), write_data));
  auto not_roce = peer.frame(Opcode::RcSendOnly, psn(6), {}, send_data);
  not_roce[14 + 20 + 2] = std::byte{0};  // UDP destination port 4791 -> 0x00B7
  frames.push_back(not_roce);
  ASSERT_EQ(write_capture(in, frames), "");

  // The PMD reopens its files at start: this start reads the capture from its first record.
  ASSERT_EQ(rte_eth_dev_stop(d->port().id), 0);
  ASSERT_EQ(rte_eth_dev_start(d->port().id), 0);

  rte_eth_stats st{};
  const Nanos limit = d->now() + 10 * kSecond;
  while (d->now() < limit) {
    d->poll_once();
    rte_eth_stats_get(d->port().id, &st);
    if (st.ipackets == frames.size() && !e.has_tx_work()) break;
  }
  ASSERT_EQ(st.ipackets, frames.size());
  // Replayed once: nothing more arrives however long we poll.
  for (int i = 0; i < 1000; ++i) d->poll_once();
  d->flush();
  rte_eth_stats_get(d->port().id, &st);
  EXPECT_EQ(st.ipackets, frames.size());
  EXPECT_EQ(d->worker(0).stats().rx_packets, frames.size());

  // Memory: the WRITE and the atomic landed, the bad-ICRC and unknown-QP WRITEs did not.
  EXPECT_TRUE(std::equal(write_data.begin(), write_data.end(), mem.begin() + 100));
  std::memcpy(&word, mem.data() + 8192, 8);
  EXPECT_EQ(word, 0x1122334455667788u + 5);
  EXPECT_TRUE(std::equal(original.begin() + 200, original.begin() + 400, mem.begin() + 200));
  const auto wcs = drain(ep);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << describe(wcs[0]);
  EXPECT_EQ(wcs[0].wr_id, 42u);
  EXPECT_EQ(wcs[0].byte_len, 200u);
  EXPECT_TRUE(std::equal(send_data.begin(), send_data.end(), recv.begin()));
  EXPECT_EQ(e.drops(rdma::EngineDrop::IcrcBad), 1u);
  EXPECT_EQ(e.drops(rdma::EngineDrop::UnknownQp), 1u);
  EXPECT_EQ(e.parse_drops(proto::ParseError::NotRoceV2Port), 1u);

  // Every mbuf the PMD filled and every one the worker sent came back.
  d->worker(0).release_stash();
  EXPECT_EQ(d->mbufs_in_use(), pool_start);
  const std::uint64_t sent = d->worker(0).stats().tx_packets;
  d.reset();  // closes the port: the PMD closes its dumper
  EXPECT_EQ(rte_eal_hotplug_remove("vdev", vdev.c_str()), 0);

  const std::vector<std::byte> read_data(original.begin() + 1000, original.begin() + 4000);
  const std::vector<Expected> expected{
      {Opcode::RcAck, psn(0), 1, {}},
      {Opcode::RcReadResponseFirst, psn(1), 2, {read_data.begin(), read_data.begin() + kPmtu}},
      {Opcode::RcReadResponseMiddle, psn(2), std::nullopt, {read_data.begin() + kPmtu, read_data.begin() + 2 * kPmtu}},
      {Opcode::RcReadResponseLast, psn(3), 2, {read_data.begin() + 2 * kPmtu, read_data.end()}},
      {Opcode::RcAck, psn(4), 3, {}},
      {Opcode::RcAtomicAck, psn(5), 4, {}},
  };
  const CaptureContents got = read_capture(out);
  ASSERT_EQ(got.error, "");
  ASSERT_EQ(got.records.size(), expected.size());
  EXPECT_EQ(sent, expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("response " + std::to_string(i));
    proto::Packet p;
    ASSERT_EQ(proto::parse_frame(got.records[i].data, {}, p), proto::ParseError::None);
    EXPECT_EQ(p.icrc_status, proto::IcrcStatus::Ok);
    EXPECT_EQ(p.eth.dst, kPeerMac);
    EXPECT_EQ(p.eth.src, kMyMac);
    EXPECT_EQ(p.ipv4.src, kMyIp);
    EXPECT_EQ(p.ipv4.dst, kPeerIp);
    EXPECT_TRUE(p.ipv4_checksum_ok);
    EXPECT_EQ(p.dest_qp(), kPeerQpn);
    EXPECT_EQ(p.opcode(), proto::raw(expected[i].op)) << proto::to_string(static_cast<Opcode>(p.opcode()));
    EXPECT_EQ(p.psn(), expected[i].psn);
    if (expected[i].msn) {
      const proto::Syndrome syn{p.ext.aeth.syndrome};
      EXPECT_TRUE(syn.is_ack()) << proto::to_string(syn);
      EXPECT_EQ(p.ext.aeth.msn.get(), *expected[i].msn);
    }
    EXPECT_TRUE(std::equal(p.payload.begin(), p.payload.end(), expected[i].payload.begin(), expected[i].payload.end()));
    if (expected[i].op == Opcode::RcAtomicAck) {
      EXPECT_EQ(p.ext.atomic_ack.original_data.get(), 0x1122334455667788u);
    }
  }
}

}  // namespace
}  // namespace roce::test::pcap_pmd_test
