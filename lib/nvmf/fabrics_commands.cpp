// Fabrics commands on a queue: Connect (creating or joining a controller) and Property Get/Set
// (the controller registers, CC's enable/reset/shutdown).
#include <cstring>

#include "lib/nvmf/queue.hpp"

namespace roce::nvmf {

namespace nv = proto::nvme;
using nv::NvmeStatus;

namespace {

NvmeStatus connect_params(std::uint16_t ipo, bool in_data, CommandSlot& s) {
  s.cqe.dw0.set(std::uint32_t{ipo} | (in_data ? 1u << 16 : 0u));
  return nv::specific_error(nv::sc::kConnectInvalidParameters);
}

std::uint64_t cap_register(std::uint16_t max_queue_depth) {
  const std::uint64_t mqes = max_queue_depth - 1u;
  return mqes | 1ull << 16 /* CQR */ | 15ull << 24 /* TO: 7.5 s */ | 1ull << 37 /* CSS: NVM */;
}

bool valid_enable(const Controller& c, std::uint32_t cc) {
  const std::uint32_t css = (cc >> 4) & 7, mps = (cc >> 7) & 0xF, iosqes = (cc >> 16) & 0xF, iocqes = (cc >> 20) & 0xF;
  if (css != 0 || mps != 0) return false;
  // A discovery controller has no I/O queues: the entry sizes do not matter there.
  return c.discovery() || (iosqes == 6 && iocqes == 4);
}

NvmeStatus write_cc(Controller& c, std::uint32_t cc) {
  const std::uint32_t old = c.cc;
  c.cc = cc;
  if ((cc & reg::kCcEn) && !(old & reg::kCcEn)) {
    if (valid_enable(c, cc))
      c.csts = (c.csts & ~reg::kCstsShstComplete) | reg::kCstsRdy;
    else
      c.csts |= reg::kCstsCfs;
  } else if (!(cc & reg::kCcEn) && (old & reg::kCcEn)) {
    reset_controller(c);
  }
  if ((cc & reg::kCcShnMask) && !(old & reg::kCcShnMask)) {
    if (c.subsystem)
      for (std::uint32_t nsid : c.subsystem->active_nsids()) (void)c.subsystem->find_namespace(nsid)->flush();
    c.csts |= reg::kCstsShstComplete;
  }
  return nv::kOk;
}

}  // namespace

Step NvmfQueue::connect(CommandSlot& s, Nanos now) {
  const nv::Sqe& sqe = s.sqe;
  const auto cmd = nv::overlay<nv::ConnectCommand>(sqe);
  nv::ConnectData d;
  std::memcpy(static_cast<void*>(&d), s.buffer.data(), sizeof d);
  if (cmd.recfmt.get() != nv::kRecfmt10) return complete(s, nv::specific_error(nv::sc::kConnectIncompatibleFormat));
  if (ctrl_) return complete(s, nv::generic_error(nv::sc::kCommandSequenceError));
  const std::uint16_t qid = cmd.qid.get();
  const std::uint32_t sqsize = cmd.sqsize.get();
  if (qid != cfg_.qid) return complete(s, connect_params(42, false, s));
  const std::uint32_t depth_limit =
      qid == 0 ? target_.config().admin_queue_depth : target_.config().max_queue_depth;
  if (sqsize == 0 || sqsize + 1 > cfg_.depth || sqsize + 1 > depth_limit)
    return complete(s, connect_params(44, false, s));
  const std::string subnqn = nv::fixed_string(d.subnqn);
  const std::string hostnqn = nv::fixed_string(d.hostnqn);
  const bool discovery = subnqn == nv::kDiscoveryNqn;
  Subsystem* sub = discovery ? nullptr : target_.find_subsystem(subnqn);
  if (!discovery && !sub) return complete(s, connect_params(256, true, s));
  if (!valid_nqn(hostnqn)) return complete(s, connect_params(512, true, s));
  if (sub && !sub->host_allowed(hostnqn)) {
    s.cqe.dw0.set(512u | 1u << 16);
    return complete(s, nv::specific_error(nv::sc::kConnectInvalidHost));
  }
  Controller* c = nullptr;
  if (qid == 0) {
    if (d.cntlid.get() != nv::kDynamicCntlid) return complete(s, connect_params(16, true, s));
    c = target_.create_controller(sub, hostnqn, now);
    if (!c) return complete(s, nv::specific_error(nv::sc::kConnectControllerBusy, false));
    c->kato_ms = cmd.kato.get();
    std::memcpy(c->hostid.data(), d.hostid.data(), c->hostid.size());
  } else {
    if (discovery) return complete(s, connect_params(42, false, s));
    c = target_.find_controller(d.cntlid.get());
    if (!c || c->subsystem != sub || c->hostnqn != hostnqn) return complete(s, connect_params(16, true, s));
    if (!c->ready()) return complete(s, nv::generic_error(nv::sc::kCommandSequenceError));
    const std::uint16_t limit = c->io_queues_set ? c->io_queues : target_.config().max_io_queues;
    if (qid > limit || qid >= c->queues.size()) return complete(s, connect_params(42, false, s));
    if (c->queues[qid]) return complete(s, nv::specific_error(nv::sc::kConnectControllerBusy));
  }
  c->queues[qid] = this;
  ctrl_ = c;
  s.cqe.dw0.set(c->cntlid);
  return complete(s, nv::kOk);
}

Step NvmfQueue::property(CommandSlot& s) {
  const nv::Sqe& sqe = s.sqe;
  if (cfg_.qid != 0) return complete(s, nv::generic_error(nv::sc::kInvalidField));
  const auto p = nv::overlay<nv::PropertyCommand>(sqe);
  const std::uint8_t size_code = p.attrib & 7;
  if (size_code > 1) return complete(s, nv::generic_error(nv::sc::kInvalidField));
  const bool eight = size_code == 1;
  Controller& c = *ctrl_;
  const auto ofst = static_cast<nv::Property>(p.ofst.get());
  if (sqe.fctype() == static_cast<std::uint8_t>(nv::FabricsType::PropertyGet)) {
    std::uint64_t v = 0;
    switch (ofst) {
      case nv::Property::Cap:
        if (!eight) return complete(s, nv::generic_error(nv::sc::kInvalidField));
        v = cap_register(target_.config().max_queue_depth);
        break;
      case nv::Property::Vs: v = reg::kVersion; break;
      case nv::Property::Cc: v = c.cc; break;
      case nv::Property::Csts: v = c.csts; break;
      default: return complete(s, nv::generic_error(nv::sc::kInvalidField));
    }
    if (ofst != nv::Property::Cap && eight) return complete(s, nv::generic_error(nv::sc::kInvalidField));
    s.cqe.dw0.set(static_cast<std::uint32_t>(v));
    s.cqe.dw1.set(static_cast<std::uint32_t>(v >> 32));
    return complete(s, nv::kOk);
  }
  if (ofst != nv::Property::Cc || eight) return complete(s, nv::generic_error(nv::sc::kInvalidField));
  return complete(s, write_cc(c, static_cast<std::uint32_t>(p.value.get())));
}

}  // namespace roce::nvmf
