#include "lib/nvmf/target.hpp"

#include <algorithm>
#include <cstring>

#include "lib/nvmf/queue.hpp"

namespace roce::nvmf {

namespace nv = proto::nvme;

void Controller::log_error(std::uint16_t sqid, const nv::Sqe& sqe, nv::NvmeStatus st, std::uint64_t lba) {
  // Newest first: shift the ring down one entry (64 entries, error path only).
  for (std::size_t i = error_log.size() - 1; i > 0; --i) error_log[i] = error_log[i - 1];
  nv::ErrorLogEntry e;
  e.error_count.set(++error_count);
  e.sqid.set(sqid);
  e.cid.set(sqe.cid.get());
  e.status.set(st.field());
  e.param_location.set(0xFFFF);
  e.lba.set(lba);
  e.nsid.set(sqe.opc == 0x7F ? 0 : sqe.nsid.get());
  e.trtype = static_cast<std::uint8_t>(nv::TrType::Rdma);
  error_log[0] = e;
}

Target::Target(TargetConfig cfg) : cfg_(std::move(cfg)) {}
Target::~Target() = default;

Result<Subsystem*> Target::add_subsystem(const std::string& nqn, const std::string& serial) {
  if (!valid_nqn(nqn)) return make_error(EINVAL, "'" + nqn + "' is not an NQN (nqn.yyyy-mm.reverse-domain:name, <= 223 bytes)");
  if (nqn == nv::kDiscoveryNqn) return make_error(EINVAL, "the discovery NQN is served by the target itself");
  if (subsystems_.count(nqn)) return make_error(EEXIST, "subsystem " + nqn + " exists");
  auto s = std::make_unique<Subsystem>(nqn, serial);
  Subsystem* raw = s.get();
  subsystems_.emplace(nqn, std::move(s));
  ++generation_;
  return raw;
}

Subsystem* Target::find_subsystem(const std::string& nqn) const {
  const auto it = subsystems_.find(nqn);
  return it == subsystems_.end() ? nullptr : it->second.get();
}

std::size_t Target::controllers_of(const Subsystem* sub) const {
  std::size_t n = 0;
  for (const auto& [id, c] : controllers_) n += c->subsystem == sub ? 1 : 0;
  return n;
}

Status Target::remove_subsystem(const std::string& nqn) {
  const auto it = subsystems_.find(nqn);
  if (it == subsystems_.end()) return make_error(ENOENT, "no subsystem " + nqn);
  if (const std::size_t n = controllers_of(it->second.get()); n > 0)
    return make_error(EBUSY, "subsystem " + nqn + " has " + std::to_string(n) + " connected controller(s); their hosts disconnect first");
  subsystems_.erase(it);
  ++generation_;
  return {};
}

Controller* Target::create_controller(Subsystem* subsystem, const std::string& hostnqn, Nanos now) {
  // CNTLID 0xFFF0..0xFFFF are reserved (0xFFFF asks for a dynamic controller).
  for (std::uint32_t tries = 0; tries < 0xFFEF; ++tries) {
    const std::uint16_t id = next_cntlid_;
    next_cntlid_ = static_cast<std::uint16_t>(next_cntlid_ >= 0xFFEF ? 1 : next_cntlid_ + 1);
    if (controllers_.count(id)) continue;
    auto c = std::make_unique<Controller>();
    c->cntlid = id;
    c->subsystem = subsystem;
    c->hostnqn = hostnqn;
    c->last_keep_alive = now;
    c->queues.assign(std::size_t{cfg_.max_io_queues} + 1, nullptr);
    Controller* raw = c.get();
    controllers_.emplace(id, std::move(c));
    return raw;
  }
  return nullptr;
}

Controller* Target::find_controller(std::uint16_t cntlid) const {
  const auto it = controllers_.find(cntlid);
  return it == controllers_.end() ? nullptr : it->second.get();
}

void Target::destroy_controller(std::uint16_t cntlid) { controllers_.erase(cntlid); }

std::size_t Target::poll(Nanos now) {
  std::size_t expired = 0;
  for (auto& [id, c] : controllers_) {
    if (c->kato_ms == 0 || (c->csts & reg::kCstsCfs)) continue;
    const Nanos kato = from_ms(c->kato_ms);
    if (c->ka_deadline == 0) c->ka_deadline = c->last_keep_alive + kato;
    // Each period that has ended, in order (a late poll catches up): one with traffic starts
    // the next, the first without fails the controller.
    while (now >= c->ka_deadline && c->last_keep_alive >= c->ka_deadline - kato) c->ka_deadline += kato;
    if (now < c->ka_deadline) continue;
    fail_controller(*c);
    ++expired;
    ++keep_alive_expiries_;
  }
  return expired;
}

void Target::notify_namespace_changed(const Subsystem* sub, std::uint32_t nsid) {
  for (auto& [id, c] : controllers_) {
    if (c->subsystem != sub || !(c->async_event_config & kAecNamespaceAttribute)) continue;
    if (std::find(c->changed_nsids.begin(), c->changed_nsids.end(), nsid) == c->changed_nsids.end() &&
        c->changed_nsids.size() <= kChangedNsListMax)
      c->changed_nsids.push_back(nsid);  // one past the maximum means "more than fit"
    if (c->ns_notice_masked) continue;  // the host has not read the log since the last notice
    NvmfQueue* admin = c->queues.empty() ? nullptr : c->queues[0];
    if (!c->held_aers.empty() && admin && admin->complete_held(c->held_aers.front(), kAenNamespaceChanged)) {
      c->held_aers.erase(c->held_aers.begin());
      c->ns_notice_masked = true;
      c->ns_notice_pending = false;
    } else {
      c->ns_notice_pending = true;
    }
  }
}

std::vector<std::byte> Target::discovery_log(const std::string& hostnqn) const {
  std::vector<const Subsystem*> visible;
  for (const auto& [nqn, s] : subsystems_)
    if (s->host_allowed(hostnqn)) visible.push_back(s.get());
  std::vector<std::byte> page(sizeof(nv::DiscoveryLogHeader) + visible.size() * sizeof(nv::DiscoveryLogEntry));
  nv::DiscoveryLogHeader h;
  h.genctr.set(generation_);
  h.numrec.set(visible.size());
  std::memcpy(page.data(), static_cast<const void*>(&h), sizeof h);
  std::size_t off = sizeof h;
  for (const Subsystem* s : visible) {
    nv::DiscoveryLogEntry e;
    e.trtype = static_cast<std::uint8_t>(nv::TrType::Rdma);
    e.adrfam = static_cast<std::uint8_t>(cfg_.traddr.find(':') == std::string::npos ? nv::AdrFam::Ipv4 : nv::AdrFam::Ipv6);
    e.subtype = static_cast<std::uint8_t>(nv::DiscoverySubtype::Nvm);
    e.treq = 0;  // secure channel not specified
    e.portid.set(cfg_.portid);
    e.cntlid.set(nv::kDynamicCntlid);
    e.asqsz.set(cfg_.admin_queue_depth);
    nv::set_fixed_string(e.trsvcid, std::to_string(cfg_.trsvcid), ' ');
    nv::set_fixed_string(e.subnqn, s->nqn(), '\0');
    nv::set_fixed_string(e.traddr, cfg_.traddr, ' ');
    e.rdma_qptype = 1;  // RC
    e.rdma_prtype = 1;  // no provider type given, as Linux nvmet
    e.rdma_cms = 1;     // RDMA_CM
    std::memcpy(page.data() + off, static_cast<const void*>(&e), sizeof e);
    off += sizeof e;
  }
  return page;
}

void fail_controller(Controller& c) {
  c.csts |= reg::kCstsCfs;
  c.csts &= ~reg::kCstsRdy;
  for (NvmfQueue* q : c.queues)
    if (q) q->fail("controller " + std::to_string(c.cntlid) + " failed");
}

void reset_controller(Controller& c) {
  c.csts = 0;
  for (std::size_t qid = 1; qid < c.queues.size(); ++qid)
    if (c.queues[qid]) c.queues[qid]->fail("controller " + std::to_string(c.cntlid) + " reset");
  c.io_queues_set = false;
  c.io_queues = 0;
}

}  // namespace roce::nvmf
