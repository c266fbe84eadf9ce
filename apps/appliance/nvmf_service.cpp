#include "apps/appliance/nvmf_service.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "client/runtime.hpp"
#include "lib/nvmf/cm_private_data.hpp"

namespace roce::client {

namespace {

std::string peer_of(const cm::RdmaCmEvent& e) { return e.addressing ? proto::to_string(e.addressing->src) : "?"; }

// A namespace's size: client's size syntax, at most 1 PiB.
Result<std::uint64_t> namespace_size(const std::string& s) {
  auto b = parse_byte_size(s);
  if (b && *b > (1ull << 50)) return make_error(EINVAL, "size '" + s + "' is too large");
  return b;
}

}  // namespace

Result<NvmfNamespaceSpec> parse_nvmf_namespace(const std::string& text) {
  NvmfNamespaceSpec n;
  if (text.rfind("mem:", 0) == 0) {
    auto b = namespace_size(text.substr(4));
    if (!b) return make_error(EINVAL, "'" + text + "': " + b.error().message);
    if (*b == 0) return make_error(EINVAL, "'" + text + "': a memory namespace needs a size");
    n.bytes = *b;
    return n;
  }
  if (text.rfind("file:", 0) == 0) {
    n.file = true;
    std::string rest = text.substr(5);
    // An optional ":SIZE" after the path sizes the file.
    const std::size_t colon = rest.rfind(':');
    if (colon != std::string::npos) {
      auto b = namespace_size(rest.substr(colon + 1));
      if (b) {
        n.bytes = *b;
        rest.resize(colon);
      }
    }
    if (rest.empty()) return make_error(EINVAL, "'" + text + "': no file path");
    n.path = rest;
    return n;
  }
  return make_error(EINVAL, "'" + text + "': expected mem:SIZE or file:PATH[:SIZE]");
}

NvmfService::NvmfService(dp::Dataplane& dp, DriverSet& drivers, Connector& conn, NvmfOptions o, std::shared_ptr<CmService> shared)
    : dp_(dp), drivers_(drivers), conn_(conn), o_(std::move(o)), cm_(std::move(shared)), shared_cm_(cm_ != nullptr) {}

NvmfService::~NvmfService() { stop(); }

Status NvmfService::start() {
  if (!nvmf::valid_nqn(o_.subsystem)) return make_error(EINVAL, "--nvmf-subsystem '" + o_.subsystem + "' is not a valid NQN");
  if (o_.subsystem == proto::nvme::kDiscoveryNqn)
    return make_error(EINVAL, "--nvmf-subsystem: the discovery NQN is the target's own");
  if (o_.namespaces.empty()) return make_error(EINVAL, "--nvmf-subsystem needs at least one --nvmf-namespace");
  for (const std::string& h : o_.allowed_hosts)
    if (!nvmf::valid_nqn(h)) return make_error(EINVAL, "--nvmf-allow-host '" + h + "' is not a valid NQN");
  const auto& local = dp_.local().ip;
  tcfg_.traddr = to_string(local);
  tcfg_.trsvcid = o_.port;
  // The target issues the RDMA READs of host data: no more at once than a QP may have.
  target_ = std::make_unique<nvmf::Target>(tcfg_);
  auto sub = target_->add_subsystem(o_.subsystem, "rocev2dp0001");
  if (!sub) return sub.error();
  for (const std::string& h : o_.allowed_hosts) (*sub)->allow_host(h);
  std::uint32_t nsid = 1;
  for (const NvmfNamespaceSpec& n : o_.namespaces) {
    auto store = open_store(n, nsid);
    if (!store) return store.error();
    if (Status s = (*sub)->add_namespace(nsid, std::move(*store)); !s) return s;
    ++nsid;
  }
  if (!cm_) {
    CmServiceConfig cc;
    cc.selective_repeat = o_.selective_repeat;
    cm_ = std::make_shared<CmService>(dp_, drivers_, cc);
  }
  channel_ = shared_cm_ ? cm_->open_channel() : 0;
  auto l = cm_->listen(proto::RdmaPortSpace::Tcp, o_.port, o_.accept_queue, channel_);
  if (!l) return l.error();
  driver_ = drivers_.add(0, [this](rdma::Engine&, Nanos now) { poll_worker(now); });
  thread_ = std::thread([this] { loop(); });
  return {};
}

Result<std::unique_ptr<nvmf::NamespaceStore>> NvmfService::open_store(const NvmfNamespaceSpec& n, std::uint32_t nsid) const {
  const std::uint64_t blocks = n.bytes / o_.block_size;
  if (!n.file && blocks == 0)
    return make_error(EINVAL, "namespace " + std::to_string(nsid) + ": smaller than one block (" + std::to_string(o_.block_size) + " bytes)");
  auto store = n.file ? nvmf::NamespaceStore::file(n.path, blocks, o_.block_size) : nvmf::NamespaceStore::memory(blocks, o_.block_size);
  if (!store) return make_error(store.error().code, "namespace " + std::to_string(nsid) + ": " + store.error().message);
  if ((*store)->blocks() == 0) return make_error(EINVAL, "namespace " + std::to_string(nsid) + ": " + n.path + " holds less than one block");
  return store;
}

Result<std::vector<NvmfService::NamespaceInfo>> NvmfService::namespaces(const std::string& subnqn) {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  const std::string nqn = subnqn.empty() ? o_.subsystem : subnqn;
  return dp_.call(0, [&](rdma::Engine&) -> Result<std::vector<NamespaceInfo>> {
    const nvmf::Subsystem* sub = target_->find_subsystem(nqn);
    if (!sub) return make_error(ENOENT, "no subsystem " + nqn);
    std::vector<NamespaceInfo> out;
    for (std::uint32_t nsid : sub->active_nsids()) {
      const nvmf::NamespaceStore* s = sub->find_namespace(nsid);
      out.push_back({nsid, s->file_backed(), s->path(), s->blocks(), s->block_size()});
    }
    return out;
  });
}

Result<std::uint32_t> NvmfService::add_namespace(const NvmfNamespaceSpec& spec, std::uint32_t nsid, const std::string& subnqn) {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  if (nsid > nvmf::kMaxNamespaces) return make_error(EINVAL, "NSID " + std::to_string(nsid) + " outside 1.." + std::to_string(nvmf::kMaxNamespaces));
  const std::string nqn = subnqn.empty() ? o_.subsystem : subnqn;
  std::lock_guard lock(namespaces_mutex_);
  auto in_use = namespaces(nqn);
  if (!in_use) return in_use.error();
  if (nsid == 0) {
    nsid = 1;
    for (const NamespaceInfo& n : *in_use)
      if (n.nsid == nsid) ++nsid;  // active_nsids() is sorted
    if (nsid > nvmf::kMaxNamespaces) return make_error(ENOSPC, "every NSID 1.." + std::to_string(nvmf::kMaxNamespaces) + " is in use");
  }
  for (const NamespaceInfo& n : *in_use) {
    if (n.nsid == nsid) return make_error(EEXIST, "NSID " + std::to_string(nsid) + " is already in use");
    if (spec.file && n.file && n.path == spec.path)
      return make_error(EEXIST, spec.path + " already backs NSID " + std::to_string(n.nsid));
  }
  auto store = open_store(spec, nsid);  // file I/O here, not on the dataplane's worker
  if (!store) return store.error();
  Status s = dp_.call(0, [&](rdma::Engine&) -> Status {
    nvmf::Subsystem* sub = target_->find_subsystem(nqn);
    if (!sub) return make_error(ENOENT, "no subsystem " + nqn);
    if (Status a = sub->add_namespace(nsid, std::move(*store)); !a) return a;
    target_->notify_namespace_changed(sub, nsid);
    return {};
  });
  if (!s) return s.error();
  std::fprintf(stderr, "roce-appliance: nvmf namespace %u of %s added (%s)\n", nsid, nqn.c_str(), spec.file ? spec.path.c_str() : "memory");
  return nsid;
}

Status NvmfService::remove_namespace(std::uint32_t nsid, const std::string& subnqn) {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  const std::string nqn = subnqn.empty() ? o_.subsystem : subnqn;
  std::lock_guard lock(namespaces_mutex_);
  // Commands already past their checks look the namespace up again when they run: one that
  // finds it gone answers "invalid namespace", none touches freed blocks.
  Status s = dp_.call(0, [&](rdma::Engine&) -> Status {
    nvmf::Subsystem* sub = target_->find_subsystem(nqn);
    if (!sub) return make_error(ENOENT, "no subsystem " + nqn);
    if (Status r = sub->remove_namespace(nsid); !r) return r;
    target_->notify_namespace_changed(sub, nsid);
    return {};
  });
  if (s) std::fprintf(stderr, "roce-appliance: nvmf namespace %u of %s removed\n", nsid, nqn.c_str());
  return s;
}

Result<std::vector<NvmfService::SubsystemInfo>> NvmfService::subsystems() {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  return dp_.call(0, [&](rdma::Engine&) -> Result<std::vector<SubsystemInfo>> {
    std::vector<SubsystemInfo> out;
    for (const auto& [nqn, sub] : target_->subsystems()) {
      SubsystemInfo i;
      i.nqn = nqn;
      i.serial = sub->serial();
      i.allow_any_host = sub->allows_any_host();
      i.hosts.assign(sub->allowed_hosts().begin(), sub->allowed_hosts().end());
      i.namespaces = sub->active_nsids().size();
      i.controllers = target_->controllers_of(sub.get());
      out.push_back(std::move(i));
    }
    return out;
  });
}

Status NvmfService::add_subsystem(const std::string& nqn) {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  std::lock_guard lock(namespaces_mutex_);
  Status s = dp_.call(0, [&](rdma::Engine&) -> Status {
    char serial[21];
    std::snprintf(serial, sizeof serial, "rocev2dp%04zu", target_->subsystems().size() + 1);
    auto sub = target_->add_subsystem(nqn, serial);
    if (!sub) return sub.error();
    return {};
  });
  if (s) std::fprintf(stderr, "roce-appliance: nvmf subsystem %s added (no namespaces yet; any host)\n", nqn.c_str());
  return s;
}

Status NvmfService::remove_subsystem(const std::string& nqn) {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  std::lock_guard lock(namespaces_mutex_);
  Status s = dp_.call(0, [&](rdma::Engine&) { return target_->remove_subsystem(nqn); });
  if (s) std::fprintf(stderr, "roce-appliance: nvmf subsystem %s removed\n", nqn.c_str());
  return s;
}

Status NvmfService::change_hosts(const std::string& subnqn, const std::function<Status(nvmf::Subsystem&)>& change) {
  if (!target_) return make_error(ENOTCONN, "the NVMe/RDMA target is not running");
  const std::string nqn = subnqn.empty() ? o_.subsystem : subnqn;
  std::lock_guard lock(namespaces_mutex_);
  // Connect checks the host on every queue it opens: the change holds from the next Connect
  // on (an admin or I/O queue); controllers already made keep their queues.
  return dp_.call(0, [&](rdma::Engine&) -> Status {
    nvmf::Subsystem* sub = target_->find_subsystem(nqn);
    if (!sub) return make_error(ENOENT, "no subsystem " + nqn);
    if (Status s = change(*sub); !s) return s;
    target_->bump_generation();  // what the discovery log lists for a host may have changed
    return {};
  });
}

Status NvmfService::allow_host(const std::string& host, const std::string& subnqn) {
  if (!nvmf::valid_nqn(host)) return make_error(EINVAL, "'" + host + "' is not a valid host NQN");
  return change_hosts(subnqn, [&](nvmf::Subsystem& s) -> Status {
    s.allow_host(host);
    return {};
  });
}

Status NvmfService::disallow_host(const std::string& host, const std::string& subnqn) {
  return change_hosts(subnqn, [&](nvmf::Subsystem& s) -> Status {
    if (!s.disallow_host(host)) return make_error(ENOENT, host + " is not among the allowed hosts of " + s.nqn());
    return {};
  });
}

Status NvmfService::allow_any_host(bool any, const std::string& subnqn) {
  return change_hosts(subnqn, [&](nvmf::Subsystem& s) -> Status {
    s.set_allow_any_host(any);
    return {};
  });
}

void NvmfService::poll_worker(Nanos now) {
  target_->poll(now);
  for (auto& [p, q] : queues_) q->poll(now);
}

void NvmfService::stop() {
  if (!cm_) return;
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (shared_cm_) {
    // Only this service's connections: the agent's other users keep theirs.
    std::vector<cm::CmId> ids;
    for (const auto& [id, c] : conns_) ids.push_back(id);
    cm_->disconnect_ids(ids, CmServiceConfig{}.stop_wait);
    cm_->close_channel(channel_);
  } else {
    cm_->stop();  // DREQ for every live connection
  }
  while (!conns_.empty()) release(conns_.begin()->first);
  drivers_.remove(0, driver_);
  cm_.reset();
  target_.reset();
}

NvmfService::Totals NvmfService::totals() {
  std::lock_guard lock(totals_mutex_);
  return totals_;
}

std::size_t NvmfService::live_queues() { return queue_count_.load(); }

void NvmfService::loop() {
  while (!stop_) {
    for (const auto& e : cm_->wait_events(50 * kMilli, &stop_, channel_)) on_event(e);
    // A queue the target failed (fatal capsule, keep-alive expiry, reset): the connection ends.
    std::map<nvmf::NvmfRdmaQueue*, std::string> failed = dp_.call(0, [this](rdma::Engine&) {
      std::map<nvmf::NvmfRdmaQueue*, std::string> f;
      for (auto& [p, q] : queues_)
        if (q->torn_down()) f[p] = q->queue().failure();
      return f;
    });
    for (auto& [id, c] : conns_) {
      if (c.disconnecting || !c.queue) continue;
      const auto why = failed.find(c.queue);
      if (why == failed.end()) continue;
      std::fprintf(stderr, "roce-appliance: nvmf queue %u of %s failed (%s); disconnecting\n", c.qid, c.peer.c_str(),
                   why->second.c_str());
      c.disconnecting = true;
      {
        std::lock_guard lock(totals_mutex_);
        ++totals_.torn_down;
      }
      drop_queue(c);
      (void)cm_->disconnect(id);
    }
  }
}

void NvmfService::on_event(const cm::RdmaCmEvent& e) {
  using T = cm::RdmaCmEventType;
  if (e.type == T::ConnectRequest) return on_request(e);
  const auto it = conns_.find(e.id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  switch (e.type) {
    case T::Disconnected:
      if (!c.disconnecting) {
        std::lock_guard lock(totals_mutex_);
        ++totals_.disconnected;
      }
      c.disconnecting = true;
      drop_queue(c);
      break;
    case T::TimewaitExit:
    case T::Rejected:
    case T::Unreachable:
    case T::ConnectError:
      release(e.id);
      break;
    default:
      break;
  }
}

void NvmfService::on_request(const cm::RdmaCmEvent& e) {
  const auto* req = std::get_if<cm::ReqInfo>(&e.detail);
  const std::string peer = peer_of(e);
  const auto refuse = [&](const std::string& why, std::span<const std::uint8_t> pd = {}) {
    std::fprintf(stderr, "roce-appliance: nvmf connect from %s refused: %s\n", peer.c_str(), why.c_str());
    {
      // Counted before the REJ leaves: a host that reads its REJECTED event may read the totals at once.
      std::lock_guard lock(totals_mutex_);
      ++totals_.rejected;
    }
    (void)cm_->reject(e.id, pd);
  };
  if (req == nullptr || e.ud || req->transport != proto::CmTransport::Rc) return refuse("not an RC connect request");
  const auto decision =
      nvmf::decide_cm_request(tcfg_, proto::ByteSpan(reinterpret_cast<const std::byte*>(e.private_data.data()), e.private_data.size()));
  if (const auto* rej = std::get_if<nvmf::CmReject>(&decision)) {
    const auto bytes = nvmf::to_bytes(rej->reject);
    std::vector<std::uint8_t> pd(bytes.size());
    std::memcpy(pd.data(), bytes.data(), bytes.size());
    return refuse("NVMe/RDMA status " + std::to_string(static_cast<unsigned>(rej->status)), pd);
  }
  const auto& acc = std::get<nvmf::CmAccept>(decision);
  Conn c;
  c.id = e.id;
  c.peer = peer;
  c.qid = acc.queue.qid;
  QpParams qp;
  const std::uint32_t depth = acc.queue.depth;
  qp.recv_depth = depth;
  qp.send_depth = 4 * depth;
  auto q = conn_.create(qp, 0);  // worker 0: where the target lives
  if (!q) return refuse(q.error().message);
  c.qp = *q;
  // The queue first (it posts its receives: the host SENDs its Connect as soon as it is up).
  auto made = dp_.call(0, [&](rdma::Engine& eng) -> Result<nvmf::NvmfRdmaQueue*> {
    auto r = nvmf::NvmfRdmaQueue::create(*target_, eng, c.qp.pd, c.qp.qp, c.qp.cq, acc.queue);
    if (!r) return r.error();
    nvmf::NvmfRdmaQueue* p = r->get();
    queues_[p] = std::move(*r);
    queue_count_ = queues_.size();
    return p;
  });
  Status s = made ? Status{} : Status(made.error());
  if (s) c.queue = *made;
  const cm::CmQpAttrs a = cm::passive_qp_attrs(*req, c.qp.psn, cm_->qp_limits());
  if (s) s = cm_->connect_qp(c.qp, IBV_QPT_RC, a);
  if (s) {
    cm::AcceptParams ap;
    ap.local_qpn = c.qp.qpn;
    ap.starting_psn = c.qp.psn;
    // The target READs host data; the host never reads from us.
    ap.responder_resources = 0;
    ap.initiator_depth = a.rts.max_rd_atomic;
    ap.ece = a.rep_ece;
    const auto bytes = nvmf::to_bytes(acc.reply);
    ap.private_data.resize(bytes.size());
    std::memcpy(ap.private_data.data(), bytes.data(), bytes.size());
    s = cm_->accept(e.id, ap);
  }
  conns_[e.id] = std::move(c);
  if (!s) {
    refuse(s.error().message);
    release(e.id);
    return;
  }
  std::fprintf(stderr, "roce-appliance: nvmf queue %u (depth %u) accepted from %s on QP 0x%x\n", acc.queue.qid, depth,
               peer.c_str(), conns_[e.id].qp.qpn);
  std::lock_guard lock(totals_mutex_);
  ++totals_.accepted;
}

void NvmfService::drop_queue(Conn& c) {
  if (!c.queue) return;
  nvmf::NvmfRdmaQueue* p = c.queue;
  c.queue = nullptr;
  // Destroying the queue puts its QP in the error state first (rdma_queue.hpp).
  dp_.call(0, [&](rdma::Engine&) {
    queues_.erase(p);
    queue_count_ = queues_.size();
    return 0;
  });
}

void NvmfService::release(cm::CmId id) {
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;
  drop_queue(it->second);
  if (it->second.qp.qp) (void)conn_.destroy(it->second.qp);
  conns_.erase(it);
}

}  // namespace roce::client
