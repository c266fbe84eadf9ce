// roce-appliance's NVMe-oF service (apps/appliance/nvmf_service.hpp) against our own host
// queues (lib/nvmf/rdma_host.hpp), each connected through rdma_cm as a Linux nvme-rdma host
// connects: REQ with the NVMe/RDMA private data on TCP port 4420, REP with CRQSIZE, one QP per
// queue. Both dataplanes run in one process over a net_ring pair. The Linux host itself is the
// interop suite's (tests/interop, nvmf case).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <cstring>
#include <thread>

#include "apps/appliance/cm_listeners.hpp"
#include "apps/appliance/nvmf_service.hpp"
#include "apps/gen/cm_clients.hpp"
#include "lib/nvmf/rdma_host.hpp"
#include "tests/support/dataplane_pair.hpp"

namespace roce::test::nvmf_service_test {
namespace {

namespace nv = proto::nvme;

constexpr char kSubNqn[] = "nqn.2026-12.io.rocev2-dp:nvmf-service";
constexpr char kHostNqn[] = "nqn.2014-08.org.nvmexpress:uuid:0c3a61d4-host";
constexpr std::uint32_t kEnableCc = 1u | 6u << 16 | 4u << 20;  // EN, IOSQES 6, IOCQES 4

nv::Sqe io_cmd(nv::IoOpcode op, std::uint64_t slba, std::uint32_t nlb) {
  nv::Sqe s;
  s.opc = static_cast<std::uint8_t>(op);
  s.nsid.set(1);
  s.cdw10.set(static_cast<std::uint32_t>(slba));
  s.cdw11.set(static_cast<std::uint32_t>(slba >> 32));
  s.cdw12.set(nlb - 1);
  return s;
}

nv::Sqe admin_cmd(nv::AdminOpcode op, std::uint32_t nsid, std::uint32_t cdw10) {
  nv::Sqe s;
  s.opc = static_cast<std::uint8_t>(op);
  s.nsid.set(nsid);
  s.cdw10.set(cdw10);
  return s;
}

std::vector<std::uint8_t> request_data(std::uint16_t qid, std::uint16_t hrqsize, std::uint16_t hsqsize) {
  nv::CmRequestData r;
  r.recfmt.set(nv::kRecfmt10);
  r.qid.set(qid);
  r.hrqsize.set(hrqsize);
  r.hsqsize.set(hsqsize);
  std::vector<std::uint8_t> b(sizeof r);
  std::memcpy(b.data(), static_cast<const void*>(&r), sizeof r);
  return b;
}

class NvmfService : public DataplanePairTest {
 protected:
  explicit NvmfService(bool share_cm = false) : DataplanePairTest("nvs"), share_cm_(share_cm) {}
  void SetUp() override {
    DataplanePairTest::SetUp();
    server_drivers = std::make_unique<client::DriverSet>(*server_dp_);
    server_conn = std::make_unique<client::Connector>(*server_dp_, 0x77);
    client::NvmfOptions o;
    o.subsystem = kSubNqn;
    client::NvmfNamespaceSpec ns;
    ns.bytes = 1 << 20;
    o.namespaces.push_back(ns);
    if (share_cm_) {
      // As roce-appliance runs --rdma-cm and --nvmf-subsystem together: one CM agent for both.
      shared_cm = std::make_shared<client::CmService>(*server_dp_, *server_drivers);
      auto lo = client::parse_cm_listeners("rping,rdma_server");
      ASSERT_TRUE(lo.ok());
      listeners = std::make_unique<client::CmListeners>(*server_dp_, *server_drivers, *server_conn, *lo, shared_cm);
      ASSERT_TRUE(listeners->start().ok());
    }
    service = std::make_unique<client::NvmfService>(*server_dp_, *server_drivers, *server_conn, o, shared_cm);
    ASSERT_TRUE(service->start().ok());
    client_drivers = std::make_unique<client::DriverSet>(*client_dp_);
    client_conn = std::make_unique<client::Connector>(*client_dp_, 0x99);
    client_cm = std::make_unique<client::CmService>(*client_dp_, *client_drivers);
  }
  void TearDown() override {
    for (auto& q : queues) close(q);
    client_cm.reset();
    listeners.reset();
    service.reset();
    shared_cm.reset();
    client_conn.reset();
    server_conn.reset();
    client_drivers.reset();
    server_drivers.reset();
    DataplanePairTest::TearDown();
  }

  struct HostQueue {
    std::uint16_t qid = 0;
    cm::CmId id = 0;
    client::LocalQp qp;
    std::unique_ptr<nvmf::NvmfRdmaHost> host;
  };

  std::optional<cm::RdmaCmEvent> wait_for(cm::RdmaCmEventType type, Nanos wait = 5 * kSecond) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
    while (std::chrono::steady_clock::now() < until) {
      for (auto& e : client_cm->wait_events(50 * kMilli)) pending.push_back(std::move(e));
      for (std::size_t i = 0; i < pending.size(); ++i)
        if (pending[i].type == type) {
          cm::RdmaCmEvent e = pending[i];
          pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
          return e;
        }
    }
    return std::nullopt;
  }

  cm::RdmaConnectParams connect_params(const client::LocalQp& q, std::vector<std::uint8_t> pd) {
    cm::RdmaConnectParams p;
    p.port_space = proto::RdmaPortSpace::Tcp;
    p.src = proto::IpAddress::of(proto::Ipv4Addr{10, 0, 0, 1});
    p.dst = proto::IpAddress::of(proto::Ipv4Addr{10, 0, 0, 2});
    p.src_port = static_cast<std::uint16_t>(42000 + queues.size());
    p.dst_port = proto::nvme::kNvmeRdmaPort;
    p.ib.local_qpn = q.qpn;
    p.ib.starting_psn = q.psn;
    p.ib.responder_resources = 0;
    p.ib.initiator_depth = 0;
    p.ib.path_mtu = proto::PathMtu::Mtu1024;
    p.private_data = std::move(pd);
    return p;
  }

  // A host queue through rdma_cm: QP, host queue (its receives), REQ, REP, RTR/RTS, RTU.
  HostQueue* open(std::uint16_t qid, std::uint16_t depth) {
    HostQueue h;
    h.qid = qid;
    client::QpParams qp;
    qp.send_depth = 2u * depth + 8;
    qp.recv_depth = depth + 8;
    auto q = client_conn->create(qp, 0);
    EXPECT_TRUE(q.ok());
    if (!q) return nullptr;
    h.qp = *q;
    nvmf::HostQueueConfig hc;
    hc.depth = depth;
    hc.max_transfer = service->target_config().max_transfer();
    hc.inline_size = qid == 0 ? 0 : service->target_config().inline_data_size;
    auto made = client_dp_->call(0, [&](rdma::Engine& e) {
      return nvmf::NvmfRdmaHost::create(e, h.qp.pd, h.qp.qp, h.qp.cq, hc);
    });
    EXPECT_TRUE(made.ok()) << made.error().message;
    if (!made) return nullptr;
    h.host = std::move(*made);
    auto cp = connect_params(h.qp, request_data(qid, depth, static_cast<std::uint16_t>(depth - 1)));
    auto id = client_cm->connect(cp);
    EXPECT_TRUE(id.ok());
    if (!id) return nullptr;
    h.id = *id;
    auto rep = wait_for(cm::RdmaCmEventType::ConnectResponse);
    EXPECT_TRUE(rep);
    if (!rep) return nullptr;
    // The REP's private data: RECFMT 0 and CRQSIZE = HSQSIZE + 1.
    // (The REP MAD carries 196 bytes of private data; ours comes first, zeros after it.)
    EXPECT_GE(rep->private_data.size(), sizeof(nv::CmReplyData));
    if (rep->private_data.size() >= sizeof(nv::CmReplyData)) {
      nv::CmReplyData r;
      std::memcpy(static_cast<void*>(&r), rep->private_data.data(), sizeof r);
      EXPECT_EQ(r.recfmt.get(), 0u);
      EXPECT_EQ(r.crqsize.get(), depth);
    }
    const auto a = cm::active_qp_attrs(cp.ib, std::get<cm::RepInfo>(rep->detail), client_cm->qp_limits());
    EXPECT_TRUE(client_cm->connect_qp(h.qp, IBV_QPT_RC, a).ok());
    EXPECT_TRUE(client_cm->ready_to_use(h.id).ok());
    queues.push_back(std::move(h));
    return &queues.back();
  }

  void close(HostQueue& h) {
    if (!h.host) return;
    (void)client_cm->disconnect(h.id);
    client_dp_->call(0, [&](rdma::Engine&) {
      h.host.reset();
      return 0;
    });
    (void)client_conn->destroy(h.qp);
  }

  std::optional<nvmf::HostCompletion> exec(HostQueue& h, const nv::Sqe& sqe, std::uint32_t len = 0,
                                           nvmf::SglMode mode = nvmf::SglMode::None, std::uint16_t cid = 0) {
    const Status s = client_dp_->call(0, [&](rdma::Engine&) { return h.host->submit(cid, sqe, len, mode); });
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) return std::nullopt;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      auto got = client_dp_->call(0, [&](rdma::Engine&) {
        h.host->poll();
        return h.host->take(cid);
      });
      if (got) return got;
      if (h.host->failed()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return std::nullopt;
  }

  std::optional<nvmf::HostCompletion> fabrics_connect(HostQueue& h, std::uint16_t cntlid, const std::string& subnqn) {
    nv::ConnectCommand c;
    c.qid.set(h.qid);
    c.sqsize.set(static_cast<std::uint16_t>(h.qid == 0 ? 31 : 15));
    c.kato.set(h.qid == 0 ? 5000 : 0);
    nv::ConnectData d;
    d.cntlid.set(cntlid);
    nv::set_fixed_string(d.subnqn, subnqn, '\0');
    nv::set_fixed_string(d.hostnqn, kHostNqn, '\0');
    client_dp_->call(0, [&](rdma::Engine&) {
      std::memcpy(h.host->buffer(0).data(), static_cast<const void*>(&d), sizeof d);
      return 0;
    });
    return exec(h, nv::overlay<nv::Sqe>(c), nv::kConnectDataSize, nvmf::SglMode::Keyed);
  }

  std::optional<nvmf::HostCompletion> enable(HostQueue& h) {
    nv::PropertyCommand c;
    c.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertySet);
    c.ofst.set(static_cast<std::uint32_t>(nv::Property::Cc));
    c.value.set(kEnableCc);
    return exec(h, nv::overlay<nv::Sqe>(c));
  }

  std::vector<std::byte> copy_out(HostQueue& h, std::uint16_t cid, std::size_t n) {
    return client_dp_->call(0, [&](rdma::Engine&) {
      auto b = h.host->buffer(cid);
      return std::vector<std::byte>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    });
  }

  bool settle(const std::function<bool()>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  std::unique_ptr<client::DriverSet> server_drivers, client_drivers;
  std::unique_ptr<client::Connector> server_conn, client_conn;
  bool share_cm_ = false;
  std::shared_ptr<client::CmService> shared_cm;
  std::unique_ptr<client::CmListeners> listeners;
  std::unique_ptr<client::NvmfService> service;
  std::unique_ptr<client::CmService> client_cm;
  std::deque<HostQueue> queues;
  std::vector<cm::RdmaCmEvent> pending;
};

TEST_F(NvmfService, AdminAndTwoIoQueuesEachOnItsOwnQpConnectIdentifyWriteReadAndDisconnect) {
  HostQueue* admin = open(0, 32);
  ASSERT_NE(admin, nullptr);
  auto c = fabrics_connect(*admin, nv::kDynamicCntlid, kSubNqn);
  ASSERT_TRUE(c && c->status().ok()) << (c ? nv::to_string(c->status()) : "no response");
  const auto cntlid = static_cast<std::uint16_t>(c->cqe.dw0.get());
  auto en = enable(*admin);
  ASSERT_TRUE(en && en->status().ok());

  // Identify Controller: what a Linux host sizes its queues by (MDTS, in-capsule data, NQN).
  auto id = exec(*admin, admin_cmd(nv::AdminOpcode::Identify, 0, 1), 4096, nvmf::SglMode::Keyed);
  ASSERT_TRUE(id && id->status().ok());
  nv::IdentifyController ic;
  const auto idb = copy_out(*admin, 0, sizeof ic);
  std::memcpy(static_cast<void*>(&ic), idb.data(), sizeof ic);
  EXPECT_EQ(ic.mdts, service->target_config().mdts);
  EXPECT_EQ(ic.cntlid.get(), cntlid);
  EXPECT_EQ(std::string(ic.subnqn.data()), kSubNqn);
  EXPECT_EQ(ic.ioccsz.get(), (64 + service->target_config().inline_data_size) / 16);

  HostQueue* q1 = open(1, 16);
  ASSERT_NE(q1, nullptr);
  auto c1 = fabrics_connect(*q1, cntlid, kSubNqn);
  ASSERT_TRUE(c1 && c1->status().ok()) << (c1 ? nv::to_string(c1->status()) : "no response");
  HostQueue* q2 = open(2, 16);
  ASSERT_NE(q2, nullptr);
  auto c2 = fabrics_connect(*q2, cntlid, kSubNqn);
  ASSERT_TRUE(c2 && c2->status().ok());
  EXPECT_EQ(service->live_queues(), 3u);
  EXPECT_NE(q1->qp.qpn, q2->qp.qpn);

  // 8 KiB written on queue 1 (the target RDMA READs it), read back on queue 2 (RDMA WRITE).
  constexpr std::uint32_t kLen = 8192;
  client_dp_->call(0, [&](rdma::Engine&) {
    auto b = q1->host->buffer(1);
    for (std::uint32_t i = 0; i < kLen; ++i) b[i] = static_cast<std::byte>(i * 7 + 3);
    return 0;
  });
  auto w = exec(*q1, io_cmd(nv::IoOpcode::Write, 100, kLen / 512), kLen, nvmf::SglMode::Keyed, 1);
  ASSERT_TRUE(w && w->status().ok()) << (w ? nv::to_string(w->status()) : "no response");
  auto r = exec(*q2, io_cmd(nv::IoOpcode::Read, 100, kLen / 512), kLen, nvmf::SglMode::KeyedInvalidate, 2);
  ASSERT_TRUE(r && r->status().ok());
  EXPECT_TRUE(r->invalidated);
  const auto got = copy_out(*q2, 2, kLen);
  for (std::uint32_t i = 0; i < kLen; ++i) ASSERT_EQ(got[i], static_cast<std::byte>(i * 7 + 3)) << "byte " << i;

  // In-capsule write data on an I/O queue, read back on the other.
  client_dp_->call(0, [&](rdma::Engine&) {
    auto b = q2->host->buffer(3);
    std::memset(b.data(), 0x5A, 512);
    return 0;
  });
  auto wi = exec(*q2, io_cmd(nv::IoOpcode::Write, 7, 1), 512, nvmf::SglMode::InCapsule, 3);
  ASSERT_TRUE(wi && wi->status().ok());
  auto ri = exec(*q1, io_cmd(nv::IoOpcode::Read, 7, 1), 512, nvmf::SglMode::Keyed, 4);
  ASSERT_TRUE(ri && ri->status().ok());
  const auto one = copy_out(*q1, 4, 512);
  for (std::byte b : one) ASSERT_EQ(b, std::byte{0x5A});

  // A read past the namespace's end: LBA out of range, nothing moved.
  auto past = exec(*q1, io_cmd(nv::IoOpcode::Read, 2047, 2), 1024, nvmf::SglMode::Keyed, 5);
  ASSERT_TRUE(past);
  EXPECT_FALSE(past->status().ok());

  // The host disconnects its queues (DREQ), I/O queues first as Linux does: the target drops them.
  for (auto it = queues.rbegin(); it != queues.rend(); ++it) close(*it);
  EXPECT_TRUE(settle([&] { return service->live_queues() == 0; }));
  const auto t = service->totals();
  EXPECT_EQ(t.accepted, 3u);
  EXPECT_EQ(t.disconnected, 3u);
  EXPECT_EQ(t.rejected, 0u);
}

TEST_F(NvmfService, DiscoveryControllerListsTheSubsystem) {
  HostQueue* admin = open(0, 32);
  ASSERT_NE(admin, nullptr);
  auto c = fabrics_connect(*admin, nv::kDynamicCntlid, nv::kDiscoveryNqn);
  ASSERT_TRUE(c && c->status().ok()) << (c ? nv::to_string(c->status()) : "no response");
  ASSERT_TRUE(enable(*admin));
  constexpr std::uint32_t kLog = 2048;  // header and one entry
  auto lp = exec(*admin, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x70u | (kLog / 4 - 1) << 16), kLog,
                 nvmf::SglMode::Keyed);
  ASSERT_TRUE(lp && lp->status().ok());
  const auto page = copy_out(*admin, 0, kLog);
  nv::DiscoveryLogHeader h;
  std::memcpy(static_cast<void*>(&h), page.data(), sizeof h);
  EXPECT_EQ(h.numrec.get(), 1u);
  nv::DiscoveryLogEntry e;
  std::memcpy(static_cast<void*>(&e), page.data() + sizeof h, sizeof e);
  EXPECT_EQ(e.trtype, static_cast<std::uint8_t>(nv::TrType::Rdma));
  EXPECT_EQ(std::string(e.subnqn.data()), kSubNqn);
  EXPECT_EQ(std::string(e.traddr.data(), 8), "10.0.0.2");
  EXPECT_EQ(std::string(e.trsvcid.data(), 4), "4420");
}

TEST_F(NvmfService, BadConnectPrivateDataIsRejectedWithTheNvmeRdmaStatus) {
  const auto try_connect = [&](std::vector<std::uint8_t> pd) -> std::uint16_t {
    auto q = client_conn->create(client::QpParams{}, 0);
    EXPECT_TRUE(q.ok());
    auto cp = connect_params(*q, std::move(pd));
    auto id = client_cm->connect(cp);
    EXPECT_TRUE(id.ok());
    auto rej = wait_for(cm::RdmaCmEventType::Rejected);
    (void)client_conn->destroy(*q);
    EXPECT_TRUE(rej);
    if (!rej || rej->private_data.size() < 4) return 0xFFFF;
    nv::CmRejectData r;
    std::memcpy(static_cast<void*>(&r), rej->private_data.data(), std::min(sizeof r, rej->private_data.size()));
    return r.sts.get();
  };
  EXPECT_EQ(try_connect(request_data(0, 32, 0)), static_cast<std::uint16_t>(nv::CmRejectStatus::InvalidHsqsize));
  EXPECT_EQ(try_connect(request_data(200, 32, 31)), static_cast<std::uint16_t>(nv::CmRejectStatus::InvalidQid));
  EXPECT_EQ(try_connect(request_data(1, 4, 15)), static_cast<std::uint16_t>(nv::CmRejectStatus::InvalidHrqsize));
  // The REQ pads its private data with zeros, so a short record arrives as a bad RECFMT.
  EXPECT_EQ(try_connect({1, 2, 3}), static_cast<std::uint16_t>(nv::CmRejectStatus::InvalidRecfmt));
  EXPECT_EQ(service->totals().rejected, 4u);
  EXPECT_EQ(service->live_queues(), 0u);
}

// A namespace added while a host is connected: the held AER completes with the Namespace
// Attribute Changed notice, the active namespace list has it, I/O reaches it; removed, its
// NSID answers "invalid namespace" and the notice comes again on the next AER.
TEST_F(NvmfService, NamespacesAddedAndRemovedWhileConnectedAreAnnouncedAndServed) {
  HostQueue* admin = open(0, 32);
  ASSERT_NE(admin, nullptr);
  auto c = fabrics_connect(*admin, nv::kDynamicCntlid, kSubNqn);
  ASSERT_TRUE(c && c->status().ok());
  const auto cntlid = static_cast<std::uint16_t>(c->cqe.dw0.get());
  ASSERT_TRUE(enable(*admin));
  auto aec = exec(*admin, admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x0B), 0, nvmf::SglMode::None, 1);
  ASSERT_TRUE(aec);
  nv::Sqe enable_ns = admin_cmd(nv::AdminOpcode::SetFeatures, 0, 0x0B);
  enable_ns.cdw11.set(1u << 8);  // Namespace Attribute notices
  auto aec2 = exec(*admin, enable_ns, 0, nvmf::SglMode::None, 1);
  ASSERT_TRUE(aec2 && aec2->status().ok());
  const auto submit_aer = [&](std::uint16_t cid) {
    const Status st = client_dp_->call(0, [&](rdma::Engine&) {
      return admin->host->submit(cid, admin_cmd(nv::AdminOpcode::AsyncEventRequest, 0, 0), 0, nvmf::SglMode::None);
    });
    ASSERT_TRUE(st.ok()) << st.error().message;
  };
  const auto wait_aer = [&](std::uint16_t cid) -> std::optional<nvmf::HostCompletion> {
    for (int i = 0; i < 500; ++i) {
      auto got = client_dp_->call(0, [&](rdma::Engine&) {
        admin->host->poll();
        return admin->host->take(cid);
      });
      if (got) return got;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  };
  submit_aer(20);

  client::NvmfNamespaceSpec extra;
  extra.bytes = 64 << 10;
  auto added = service->add_namespace(extra);
  ASSERT_TRUE(added.ok()) << added.error().message;
  EXPECT_EQ(*added, 2u);
  auto aer = wait_aer(20);
  ASSERT_TRUE(aer) << "the held AER did not complete";
  EXPECT_TRUE(aer->status().ok());
  EXPECT_EQ(aer->cqe.dw0.get() & 0xFFFFFFu, 0x040002u);  // notice, namespace attribute changed, log 0x04
  // The Changed Namespace List names NSID 2 (and reading it re-arms the notice).
  auto log = exec(*admin, admin_cmd(nv::AdminOpcode::GetLogPage, 0, 0x04u | (4096 / 4 - 1) << 16), 4096, nvmf::SglMode::Keyed, 2);
  ASSERT_TRUE(log && log->status().ok());
  const auto changed = copy_out(*admin, 2, 8);
  EXPECT_EQ(std::to_integer<int>(changed[0]), 2);
  EXPECT_EQ(std::to_integer<int>(changed[4]), 0);
  auto list = exec(*admin, admin_cmd(nv::AdminOpcode::Identify, 0, 2), 4096, nvmf::SglMode::Keyed, 3);
  ASSERT_TRUE(list && list->status().ok());
  const auto ids = copy_out(*admin, 3, 12);
  EXPECT_EQ(std::to_integer<int>(ids[0]), 1);
  EXPECT_EQ(std::to_integer<int>(ids[4]), 2);
  EXPECT_EQ(std::to_integer<int>(ids[8]), 0);

  HostQueue* q1 = open(1, 16);
  ASSERT_NE(q1, nullptr);
  auto c1 = fabrics_connect(*q1, cntlid, kSubNqn);
  ASSERT_TRUE(c1 && c1->status().ok());
  nv::Sqe w = io_cmd(nv::IoOpcode::Write, 127, 1);
  w.nsid.set(2);
  auto wr = exec(*q1, w, 512, nvmf::SglMode::Keyed, 1);
  ASSERT_TRUE(wr && wr->status().ok()) << (wr ? nv::to_string(wr->status()) : "no response");
  nv::Sqe past = io_cmd(nv::IoOpcode::Write, 128, 1);  // 64 KiB = LBAs 0..127
  past.nsid.set(2);
  auto pr = exec(*q1, past, 512, nvmf::SglMode::Keyed, 2);
  ASSERT_TRUE(pr);
  EXPECT_EQ(pr->status().sc, nv::sc::kLbaOutOfRange);

  submit_aer(21);
  ASSERT_TRUE(service->remove_namespace(2).ok());
  EXPECT_FALSE(service->remove_namespace(2).ok());
  auto aer2 = wait_aer(21);
  ASSERT_TRUE(aer2) << "no notice for the removal";
  auto gone = exec(*q1, w, 512, nvmf::SglMode::Keyed, 3);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status().sc, nv::sc::kInvalidNamespace);
  ASSERT_EQ(service->namespaces()->size(), 1u);
  EXPECT_EQ((*service->namespaces())[0].nsid, 1u);
}

// Subsystems and allowed hosts changed while the target runs (the control socket's nvmf_*
// commands call these): a second subsystem with a namespace of its own, open to one host; that
// host connects; the subsystem is not removed under its controller; the host taken off the list
// is refused at its next Connect (an I/O queue of the controller it already has) with "invalid
// host"; once its admin queue is gone the subsystem goes, and the discovery log follows.
TEST_F(NvmfService, SubsystemsAndAllowedHostsChangeWhileTheTargetRuns) {
  const std::string second = "nqn.2026-12.io.rocev2-dp:second";
  auto subs = service->subsystems();
  ASSERT_TRUE(subs.ok());
  ASSERT_EQ(subs->size(), 1u);
  EXPECT_EQ((*subs)[0].nqn, kSubNqn);
  EXPECT_TRUE((*subs)[0].allow_any_host);
  EXPECT_EQ((*subs)[0].namespaces, 1u);
  ASSERT_TRUE(service->add_subsystem(second).ok());
  EXPECT_EQ(service->add_subsystem(second).code(), EEXIST);
  EXPECT_EQ(service->add_subsystem("not-an-nqn").code(), EINVAL);
  client::NvmfNamespaceSpec mem;
  mem.bytes = 64 << 10;
  auto nsid = service->add_namespace(mem, 0, second);
  ASSERT_TRUE(nsid.ok()) << nsid.error().message;
  EXPECT_EQ(*nsid, 1u);
  EXPECT_EQ(service->allow_host(kHostNqn, "nqn.2026-12.io.rocev2-dp:none").code(), ENOENT);
  EXPECT_EQ(service->allow_host("bad host", second).code(), EINVAL);
  ASSERT_TRUE(service->allow_host(kHostNqn, second).ok());

  HostQueue* admin = open(0, 32);
  ASSERT_NE(admin, nullptr);
  auto c = fabrics_connect(*admin, nv::kDynamicCntlid, second);
  ASSERT_TRUE(c && c->status().ok());
  const auto cntlid = static_cast<std::uint16_t>(c->cqe.dw0.get());
  ASSERT_TRUE(enable(*admin));
  subs = service->subsystems();
  ASSERT_TRUE(subs.ok());
  ASSERT_EQ(subs->size(), 2u);
  const auto& info = (*subs)[0].nqn == second ? (*subs)[0] : (*subs)[1];
  EXPECT_FALSE(info.allow_any_host);
  EXPECT_EQ(info.hosts, std::vector<std::string>{kHostNqn});
  EXPECT_EQ(info.namespaces, 1u);
  EXPECT_EQ(info.controllers, 1u);
  EXPECT_EQ(service->remove_subsystem(second).code(), EBUSY);

  ASSERT_TRUE(service->disallow_host(kHostNqn, second).ok());
  EXPECT_EQ(service->disallow_host(kHostNqn, second).code(), ENOENT);
  HostQueue* q1 = open(1, 16);
  ASSERT_NE(q1, nullptr);
  auto refused = fabrics_connect(*q1, cntlid, second);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status(), nv::specific_error(nv::sc::kConnectInvalidHost));
  // The first subsystem still admits any host.
  HostQueue* other = open(0, 32);
  ASSERT_NE(other, nullptr);
  auto ok = fabrics_connect(*other, nv::kDynamicCntlid, kSubNqn);
  ASSERT_TRUE(ok && ok->status().ok());

  close(*q1);
  close(*admin);
  Status removed = make_error(EBUSY, "not tried");
  for (int i = 0; i < 300 && !removed; ++i) {
    removed = service->remove_subsystem(second);
    if (!removed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(service->remove_subsystem(second).code(), ENOENT);
  EXPECT_EQ(service->namespaces(second).error().code, ENOENT);
  subs = service->subsystems();
  ASSERT_TRUE(subs.ok());
  EXPECT_EQ(subs->size(), 1u);
}

// roce-appliance with --rdma-cm and --nvmf-subsystem: one CM agent on QP1 serves both. An
// NVMe/RDMA host's queues and an rping client (on the same client CM) connect at once, each
// to its own service; the rping rounds are verified while the NVMe queues stay up and carry I/O.
class NvmfServiceSharedCm : public NvmfService {
 protected:
  NvmfServiceSharedCm() : NvmfService(true) {}
};

TEST_F(NvmfServiceSharedCm, RdmaCmListenersAndTheNvmeTargetServeAtOnce) {
  HostQueue* admin = open(0, 32);
  ASSERT_NE(admin, nullptr);
  auto c = fabrics_connect(*admin, nv::kDynamicCntlid, kSubNqn);
  ASSERT_TRUE(c && c->status().ok());
  const auto cntlid = static_cast<std::uint16_t>(c->cqe.dw0.get());
  ASSERT_TRUE(enable(*admin));
  HostQueue* q1 = open(1, 16);
  ASSERT_NE(q1, nullptr);
  auto c1 = fabrics_connect(*q1, cntlid, kSubNqn);
  ASSERT_TRUE(c1 && c1->status().ok());

  client::CmClientOptions o;
  o.tool = "rping";
  o.server = rdma::IpAddress::ipv4({10, 0, 0, 2});
  o.timeout = 5 * kSecond;
  o.count = 3;
  o.size = 2000;
  o.verify = true;
  std::vector<std::string> said;
  auto r = client::run_cm_client(*client_dp_, *client_cm, *client_conn, o, [&](const std::string& l) { said.push_back(l); });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rounds, 3u);

  // The NVMe queues were not disturbed: I/O still flows on them.
  client_dp_->call(0, [&](rdma::Engine&) {
    std::memset(q1->host->buffer(1).data(), 0xC3, 4096);
    return 0;
  });
  auto w = exec(*q1, io_cmd(nv::IoOpcode::Write, 8, 8), 4096, nvmf::SglMode::Keyed, 1);
  ASSERT_TRUE(w && w->status().ok());
  auto rd = exec(*q1, io_cmd(nv::IoOpcode::Read, 8, 8), 4096, nvmf::SglMode::Keyed, 2);
  ASSERT_TRUE(rd && rd->status().ok());
  for (std::byte b : copy_out(*q1, 2, 4096)) ASSERT_EQ(b, std::byte{0xC3});
  EXPECT_EQ(service->live_queues(), 2u);
  EXPECT_TRUE(settle([&] { return listeners->totals().completed == 1; }));
  const auto lt = listeners->totals();
  EXPECT_EQ(lt.connections, 1u);
  EXPECT_EQ(lt.rping_rounds, 3u);
  EXPECT_EQ(lt.failed, 0u);
  EXPECT_EQ(service->totals().accepted, 2u);
  EXPECT_EQ(service->totals().rejected, 0u);

  // Stopping one service leaves the other's connections up.
  listeners->stop();
  auto again = exec(*q1, io_cmd(nv::IoOpcode::Read, 8, 8), 4096, nvmf::SglMode::Keyed, 3);
  ASSERT_TRUE(again && again->status().ok());
  EXPECT_EQ(service->live_queues(), 2u);
  for (auto it = queues.rbegin(); it != queues.rend(); ++it) close(*it);
  EXPECT_TRUE(settle([&] { return service->live_queues() == 0; }));
}

TEST(NvmfNamespaceOption, ParsesMemoryAndFileBackings) {
  auto m = client::parse_nvmf_namespace("mem:16M");
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->file);
  EXPECT_EQ(m->bytes, 16u << 20);
  auto f = client::parse_nvmf_namespace("file:/tmp/disk.img:64M");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->file);
  EXPECT_EQ(f->path, "/tmp/disk.img");
  EXPECT_EQ(f->bytes, 64u << 20);
  auto p = client::parse_nvmf_namespace("file:/tmp/disk.img");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->path, "/tmp/disk.img");
  EXPECT_EQ(p->bytes, 0u);
  EXPECT_FALSE(client::parse_nvmf_namespace("mem:0").ok());
  EXPECT_FALSE(client::parse_nvmf_namespace("mem:12X").ok());
  EXPECT_FALSE(client::parse_nvmf_namespace("disk:/x").ok());
}

}  // namespace
}  // namespace roce::test::nvmf_service_test
