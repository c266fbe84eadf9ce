// A host engine and a target engine joined by a simulated (optionally lossy) link, with one
// pair of RC QPs per NVMe queue: NvmfRdmaHost on one side, NvmfRdmaQueue on the other. The
// QPs are connected directly (as ibv_rc_pingpong does) until the rdma_cm path carries them.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "lib/nvmf/rdma_host.hpp"
#include "lib/nvmf/rdma_queue.hpp"
#include "tests/support/sim_network.hpp"
#include "tests/support/verbs_helpers.hpp"

namespace roce::nvmf::test {

namespace nv = proto::nvme;
using roce::test::Endpoint;
using roce::test::LinkFaults;
using roce::test::QpOptions;
using roce::test::SimNetwork;

inline constexpr char kSubNqn[] = "nqn.2026-12.io.rocev2-dp:disk1";
inline constexpr char kHostNqn[] = "nqn.2014-08.org.nvmexpress:uuid:host-one";
inline constexpr std::uint32_t kEnableCc = 1u | 6u << 16 | 4u << 20;  // EN, IOSQES 6, IOCQES 4

struct QueueLink {
  Endpoint host_ep, target_ep;
  std::unique_ptr<NvmfRdmaQueue> target;
  std::unique_ptr<NvmfRdmaHost> host;
};

class NvmfPair {
 public:
  // `engine`: both hosts' engine configuration (the transport tuning).
  explicit NvmfPair(TargetConfig cfg = small_config(), LinkFaults faults = {}, std::uint64_t seed = 1,
                    const rdma::EngineConfig& engine = {})
      : net(seed), target(cfg) {
    net.add_host("host", {2, 0, 0, 0, 0, 1}, {10, 0, 0, 1}, engine);
    net.add_host("target", {2, 0, 0, 0, 0, 2}, {10, 0, 0, 2}, engine);
    net.connect("host", "target", faults, faults);
    auto s = target.add_subsystem(kSubNqn, "SN-0001");
    EXPECT_TRUE(s.ok());
    sub = *s;
    auto ns = NamespaceStore::memory(2048, 512);  // 1 MiB
    EXPECT_TRUE(ns.ok());
    EXPECT_TRUE(sub->add_namespace(1, std::move(*ns)).ok());
  }

  static TargetConfig small_config() {
    TargetConfig c;
    c.max_io_queues = 4;
    c.max_queue_depth = 32;
    c.mdts = 2;  // 16 KiB
    c.traddr = "10.0.0.2";
    return c;
  }

  // Opens the QP pair for `qid` with room for `depth` commands.
  QueueLink& open(std::uint16_t qid, std::uint16_t depth) {
    QueueLink& l = links[qid];
    l = QueueLink{};
    QpOptions o;
    o.depth = 4u * depth + 8;
    o.max_rd_atomic = 8;
    l.host_ep = roce::test::make_endpoint(net.host("host"), o);
    l.target_ep = roce::test::make_endpoint(net.host("target"), o);
    roce::test::connect_pair(l.host_ep, l.target_ep, o);
    auto t = NvmfRdmaQueue::create(target, net.host("target"), l.target_ep.pd, l.target_ep.qp, l.target_ep.cq,
                                   queue_config_for(target.config(), qid, depth));
    EXPECT_TRUE(t.ok()) << t.error().message;
    l.target = std::move(*t);
    HostQueueConfig hc;
    hc.depth = depth;
    hc.max_transfer = target.config().max_transfer();
    hc.inline_size = qid == 0 ? 0 : target.config().inline_data_size;
    auto h = NvmfRdmaHost::create(net.host("host"), l.host_ep.pd, l.host_ep.qp, l.host_ep.cq, hc);
    EXPECT_TRUE(h.ok()) << h.error().message;
    l.host = std::move(*h);
    return l;
  }

  // The fixture's clock: the network's, moved on by run_for over idle stretches (the network
  // stops its clock when nothing is in flight).
  Nanos now() const { return net.now() + skew_; }

  void poll_all() {
    target.poll(now());
    for (auto& [qid, l] : links) {
      if (l.target) l.target->poll(now());
      if (l.host) l.host->poll();
    }
  }

  bool run_until(const std::function<bool()>& done, Nanos limit = 5 * kSecond) {
    return net.run_until(
        [&] {
          poll_all();
          return done();
        },
        net.now() + limit);
  }
  void run_for(Nanos d) {
    const Nanos end = now() + d;
    net.run_until(
        [&] {
          poll_all();
          return now() >= end;
        },
        net.now() + d);
    if (now() < end) skew_ += end - now();
    poll_all();
  }

  // Submits and waits for the response.
  std::optional<HostCompletion> exec(std::uint16_t qid, const nv::Sqe& sqe, std::uint32_t len = 0,
                                     SglMode mode = SglMode::None, std::uint16_t cid = 0) {
    NvmfRdmaHost& h = *links.at(qid).host;
    const auto st = h.submit(cid, sqe, len, mode);
    EXPECT_TRUE(st.ok()) << st.error().message;
    if (!st) return std::nullopt;
    std::optional<HostCompletion> got;
    run_until([&] {
      got = h.take(cid);
      return got.has_value() || h.failed() || links.at(qid).target->torn_down();
    });
    return got;
  }

  // Connect on `qid` (data via keyed SGL); returns the completion.
  std::optional<HostCompletion> connect(std::uint16_t qid, std::uint16_t sqsize, std::uint16_t cntlid,
                                        const std::string& subnqn = kSubNqn, const std::string& hostnqn = kHostNqn,
                                        std::uint16_t recfmt = 0, std::uint32_t kato = 0) {
    nv::ConnectCommand c;
    c.qid.set(qid);
    c.sqsize.set(sqsize);
    c.recfmt.set(recfmt);
    c.kato.set(kato);
    nv::ConnectData d;
    d.cntlid.set(cntlid);
    nv::set_fixed_string(d.subnqn, subnqn, '\0');
    nv::set_fixed_string(d.hostnqn, hostnqn, '\0');
    auto buf = links.at(qid).host->buffer(0);
    std::memcpy(buf.data(), static_cast<const void*>(&d), sizeof d);
    return exec(qid, nv::overlay<nv::Sqe>(c), nv::kConnectDataSize, SglMode::Keyed);
  }

  std::optional<HostCompletion> property_get(nv::Property p, bool eight) {
    nv::PropertyCommand c;
    c.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertyGet);
    c.attrib = eight ? 1 : 0;
    c.ofst.set(static_cast<std::uint32_t>(p));
    return exec(0, nv::overlay<nv::Sqe>(c));
  }
  std::optional<HostCompletion> property_set(nv::Property p, std::uint64_t v, bool eight = false) {
    nv::PropertyCommand c;
    c.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertySet);
    c.attrib = eight ? 1 : 0;
    c.ofst.set(static_cast<std::uint32_t>(p));
    c.value.set(v);
    return exec(0, nv::overlay<nv::Sqe>(c));
  }

  // Admin queue up: connect, enable; returns the CNTLID.
  std::uint16_t bring_up_admin(std::uint32_t kato = 0) {
    open(0, 32);
    auto c = connect(0, 31, nv::kDynamicCntlid, kSubNqn, kHostNqn, 0, kato);
    EXPECT_TRUE(c && c->status().ok()) << (c ? nv::to_string(c->status()) : "no response");
    auto e = property_set(nv::Property::Cc, kEnableCc);
    EXPECT_TRUE(e && e->status().ok());
    return c ? static_cast<std::uint16_t>(c->cqe.dw0.get()) : 0;
  }
  void bring_up_io(std::uint16_t qid, std::uint16_t cntlid, std::uint16_t depth = 16) {
    open(qid, depth);
    auto c = connect(qid, static_cast<std::uint16_t>(depth - 1), cntlid);
    ASSERT_TRUE(c && c->status().ok()) << (c ? nv::to_string(c->status()) : "no response");
  }

  SimNetwork net;
  Target target;
  Subsystem* sub = nullptr;
  std::map<std::uint16_t, QueueLink> links;

 private:
  Nanos skew_ = 0;
};

inline nv::Sqe io_cmd(nv::IoOpcode op, std::uint32_t nsid, std::uint64_t slba, std::uint32_t nlb) {
  nv::Sqe s;
  s.opc = static_cast<std::uint8_t>(op);
  s.nsid.set(nsid);
  s.cdw10.set(static_cast<std::uint32_t>(slba));
  s.cdw11.set(static_cast<std::uint32_t>(slba >> 32));
  s.cdw12.set(nlb - 1);
  return s;
}

inline nv::Sqe admin_cmd(nv::AdminOpcode op, std::uint32_t nsid = 0, std::uint32_t cdw10 = 0, std::uint32_t cdw11 = 0) {
  nv::Sqe s;
  s.opc = static_cast<std::uint8_t>(op);
  s.nsid.set(nsid);
  s.cdw10.set(cdw10);
  s.cdw11.set(cdw11);
  return s;
}

}  // namespace roce::nvmf::test
