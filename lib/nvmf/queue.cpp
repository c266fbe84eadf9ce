#include "lib/nvmf/queue.hpp"

#include <cstring>

namespace roce::nvmf {

namespace nv = proto::nvme;
using nv::NvmeStatus;

QueueConfig queue_config_for(const TargetConfig& t, std::uint16_t qid, std::uint16_t depth) {
  QueueConfig q;
  q.qid = qid;
  q.depth = depth;
  q.inline_size = qid == 0 ? 0 : t.inline_data_size;
  // The admin queue moves Identify pages, Connect data and log pages, never more than 8 KiB.
  q.max_transfer = qid == 0 ? 8192 : t.max_transfer();
  return q;
}

std::string to_string(NextStep s) {
  switch (s) {
    case NextStep::FetchData: return "fetch-data";
    case NextStep::Respond: return "respond";
    case NextStep::Hold: return "hold";
    case NextStep::Fatal: return "fatal";
  }
  return "?";
}

std::string to_string(QueueCounter c) {
  switch (c) {
    case QueueCounter::Commands: return "commands";
    case QueueCounter::Errors: return "errors";
    case QueueCounter::DataFetches: return "data_fetches";
    case QueueCounter::DataFetchErrors: return "data_fetch_errors";
    case QueueCounter::ShortCapsules: return "short_capsules";
    case QueueCounter::Overflows: return "overflows";
    case QueueCounter::ZeroCopy: return "zero_copy";
    case QueueCounter::Waits: return "waits";
    case QueueCounter::Count: break;
  }
  return "?";
}

NvmfQueue::NvmfQueue(Target& target, QueueConfig cfg) : target_(target), cfg_(cfg) {
  if (cfg_.depth == 0) cfg_.depth = 1;
  // Twice the queue depth, as Linux nvmet keeps response contexts: the host reuses a CID when
  // it sees the response, which can be before the response's ACK reaches us and frees its slot.
  const std::uint32_t nslots = 2u * cfg_.depth;
  slots_.resize(nslots);
  ready_.reserve(nslots);
  pool_.assign(std::size_t{nslots} * cfg_.max_transfer, std::byte{0});
  for (std::uint16_t i = 0; i < nslots; ++i) {
    slots_[i].index = i;
    slots_[i].buffer = std::span(pool_).subspan(std::size_t{i} * cfg_.max_transfer, cfg_.max_transfer);
    slots_[i].data = slots_[i].buffer;
  }
}

NvmfQueue::~NvmfQueue() {
  release_transfers();
  disconnect();
}

void NvmfQueue::end_zero_copy(CommandSlot& s) {
  if (s.zero_copy) {
    s.zero_copy->end_transfer(&s);
    s.zero_copy.reset();
  }
  s.data = s.buffer;
}

void NvmfQueue::drop_zero_copy(CommandSlot& s) {
  if (!s.zero_copy) return;
  if (s.dir == Direction::ToHost && s.to_host_length > 0)
    std::memcpy(s.buffer.data(), s.data.data(), std::min<std::size_t>(s.to_host_length, s.buffer.size()));
  end_zero_copy(s);
}

void NvmfQueue::end_wait(CommandSlot& s) {
  if (!s.waits_on) return;
  s.waits_on->remove_waiter();
  s.waits_on.reset();
  --waiting_;
}

void NvmfQueue::release_transfers() {
  for (auto& s : slots_) {
    end_zero_copy(s);
    end_wait(s);
  }
}

void NvmfQueue::retry_waiting(Nanos now) {
  if (waiting_ == 0 || !ctrl_) return;
  for (auto& s : slots_) {
    if (s.state != SlotState::Waiting || io_conflict(*ctrl_, s)) continue;
    end_wait(s);
    s.state = SlotState::Responding;
    const Step st = execute(s, now);
    if (st.next == NextStep::Respond) ready_.push_back(&s);
  }
}

void NvmfQueue::fail(std::string why) {
  if (failed_) return;
  failed_ = true;
  failure_ = std::move(why);
}

void NvmfQueue::disconnect() {
  Controller* c = ctrl_;
  if (!c) return;
  ctrl_ = nullptr;
  if (cfg_.qid < c->queues.size() && c->queues[cfg_.qid] == this) c->queues[cfg_.qid] = nullptr;
  if (cfg_.qid != 0) return;
  // The admin queue carries the controller: its I/O queues go with it.
  for (NvmfQueue* q : c->queues) {
    if (!q) continue;
    q->ctrl_ = nullptr;
    q->fail("controller " + std::to_string(c->cntlid) + " disconnected");
  }
  target_.destroy_controller(c->cntlid);
}

Step NvmfQueue::on_capsule(proto::ByteSpan capsule, Nanos now) {
  bump(QueueCounter::Commands);
  nv::CapsuleError why{};
  const auto cap = nv::parse_command_capsule(capsule, &why);
  if (!cap) {
    bump(QueueCounter::ShortCapsules);
    fail(nv::to_string(why));
    return {NextStep::Fatal, nullptr};
  }
  CommandSlot* slot = nullptr;
  for (auto& s : slots_)
    if (s.state == SlotState::Free) {
      slot = &s;
      break;
    }
  if (!slot) {
    bump(QueueCounter::Overflows);
    fail("command with all " + std::to_string(slots_.size()) + " slots busy (host exceeded SQSIZE)");
    return {NextStep::Fatal, nullptr};
  }
  sq_head_ = static_cast<std::uint16_t>((sq_head_ + 1) % cfg_.depth);
  // Traffic-based keep-alive (CTRATT.TBKAS): any command the controller gets, on any of its
  // queues, counts as keep-alive traffic for the timer's period (Target::poll), as Linux's
  // nvmet does; a host under loss may have its Keep Alive delayed while its I/O flows.
  if (ctrl_) ctrl_->last_keep_alive = now;
  CommandSlot& s = *slot;
  ++busy_;
  s.sqe = cap->sqe;
  s.cqe = nv::Cqe{};
  s.cqe.cid = s.sqe.cid;
  s.cqe.sqid.set(cfg_.qid);
  s.dir = Direction::None;
  s.length = 0;
  s.to_host_length = 0;
  s.remote_addr = 0;
  s.rkey = 0;
  s.invalidate = false;
  s.data = s.buffer;
  s.capsule_data = {};
  s.state = SlotState::Responding;

  const bool connect = s.sqe.opc == 0x7F && s.sqe.fctype() == static_cast<std::uint8_t>(nv::FabricsType::Connect);
  if (!ctrl_ && !connect) return complete(s, nv::generic_error(nv::sc::kCommandSequenceError));
  if (failed_) return complete(s, nv::generic_error(nv::sc::kCommandSequenceError));

  const DataPlan plan = plan_data(s.sqe, cfg_.qid == 0, ctrl_);
  if (!plan.status.ok()) return complete(s, plan.status, plan.lba);
  if (plan.dir != Direction::None) {
    if (plan.length > cfg_.max_transfer) return complete(s, nv::generic_error(nv::sc::kInvalidField));
    s.dir = plan.dir;
    s.length = plan.length;
    const nv::SglDescriptor& d = s.sqe.sgl1;
    switch (nv::classify(d)) {
      case nv::SglKind::Unsupported:
        return complete(s, nv::generic_error(nv::sc::kSglDescriptorTypeInvalid));
      case nv::SglKind::InCapsule: {
        if (plan.dir == Direction::ToHost) return complete(s, nv::generic_error(nv::sc::kInvalidField));
        const std::uint64_t off = d.addr.get();
        const std::uint64_t len = d.offset_length();
        if (off != 0 || len > cap->data.size() || len > cfg_.inline_size)
          return complete(s, nv::generic_error(nv::sc::kSglOffsetInvalid));
        if (len != plan.length) return complete(s, nv::generic_error(nv::sc::kDataSglLengthInvalid));
        // A Write's data goes from the receive buffer to the blocks when it runs (below, before
        // the receive is reposted); anything else, or a Write that must wait, copies it here.
        if (cfg_.qid != 0 && s.sqe.opc == static_cast<std::uint8_t>(nv::IoOpcode::Write))
          s.capsule_data = cap->data.first(plan.length);
        else
          std::memcpy(s.buffer.data(), cap->data.data(), plan.length);
        break;
      }
      case nv::SglKind::KeyedAddress:
      case nv::SglKind::KeyedInvalidate:
        s.invalidate = nv::classify(d) == nv::SglKind::KeyedInvalidate;
        s.rkey = d.key();
        if (d.keyed_length() != plan.length) return complete(s, nv::generic_error(nv::sc::kDataSglLengthInvalid));
        s.remote_addr = d.addr.get();
        if (plan.dir == Direction::FromHost) {
          // A Write into a memory namespace: the RDMA READ lands in the blocks themselves.
          if (cfg_.qid != 0 && s.sqe.opc == static_cast<std::uint8_t>(nv::IoOpcode::Write) && plan.ns &&
              plan.ns->begin_transfer(&s, plan.lba, plan.nlb, true)) {
            s.zero_copy = plan.ns->weak_from_this().lock();
            if (s.zero_copy) {
              s.data = plan.ns->blocks_at(plan.lba, plan.nlb);
              bump(QueueCounter::ZeroCopy);
            } else {
              plan.ns->end_transfer(&s);
            }
          }
          s.state = SlotState::FetchingData;
          bump(QueueCounter::DataFetches);
          return {NextStep::FetchData, &s};
        }
        break;
    }
  } else if (nv::classify(s.sqe.sgl1) == nv::SglKind::KeyedInvalidate) {
    s.invalidate = true;
    s.rkey = s.sqe.sgl1.key();
  }
  return execute(s, now);
}

Step NvmfQueue::on_data_fetched(CommandSlot& slot, bool ok, Nanos now) {
  if (!ok) {
    // A zero-copy Write may have landed part of its data: the blocks of a failed Write are
    // undefined (as after any interrupted write), the other blocks untouched.
    end_zero_copy(slot);
    bump(QueueCounter::DataFetchErrors);
    return complete(slot, nv::generic_error(nv::sc::kDataTransferError, false));
  }
  slot.state = SlotState::Responding;
  return execute(slot, now);
}

bool NvmfQueue::complete_held(std::uint16_t cid, std::uint32_t dw0) {
  for (auto& s : slots_)
    if (s.state == SlotState::Held && s.sqe.cid.get() == cid) {
      s.cqe.dw0.set(dw0);
      complete(s, nv::kOk);
      ready_.push_back(&s);
      return true;
    }
  return false;
}

CommandSlot* NvmfQueue::pop_ready() {
  if (ready_.empty()) return nullptr;
  CommandSlot* s = ready_.back();
  ready_.pop_back();
  return s;
}

void NvmfQueue::on_response_sent(CommandSlot& slot) {
  if (slot.state == SlotState::Free) return;
  // The response's ACK covers the RDMA WRITE before it: a zero-copy read is done.
  end_zero_copy(slot);
  slot.state = SlotState::Free;
  --busy_;
}

Step NvmfQueue::complete(CommandSlot& s, NvmeStatus st, std::uint64_t lba) {
  s.cqe.sqhd.set(sq_head_);
  s.cqe.status.set(st.field());
  s.state = SlotState::Responding;
  if (!st.ok()) {
    s.to_host_length = 0;  // no data is written on an error status
    bump(QueueCounter::Errors);
    if (ctrl_) ctrl_->log_error(cfg_.qid, s.sqe, st, lba);
  }
  return {NextStep::Respond, &s};
}


Step NvmfQueue::execute(CommandSlot& s, Nanos now) {
  const nv::Sqe& sqe = s.sqe;
  if (sqe.opc == 0x7F) {
    switch (static_cast<nv::FabricsType>(sqe.fctype())) {
      case nv::FabricsType::Connect: return connect(s, now);
      case nv::FabricsType::PropertyGet:
      case nv::FabricsType::PropertySet: return property(s);
      default:
        return complete(s, nv::generic_error(nv::sc::kInvalidOpcode));
    }
  }
  Controller& c = *ctrl_;
  if (!c.ready()) return complete(s, nv::generic_error(nv::sc::kCommandSequenceError));
  if (cfg_.qid == 0) {
    if (sqe.opc == static_cast<std::uint8_t>(nv::AdminOpcode::AsyncEventRequest)) {
      if (c.held_aers.size() >= std::size_t{target_.config().aerl} + 1)
        return complete(s, nv::specific_error(nv::sc::kAsyncEventLimitExceeded));
      if (c.ns_notice_pending && !c.ns_notice_masked) {
        // An event already waits: this AER carries it at once.
        c.ns_notice_pending = false;
        c.ns_notice_masked = true;
        s.cqe.dw0.set(kAenNamespaceChanged);
        return complete(s, nv::kOk);
      }
      c.held_aers.push_back(sqe.cid.get());
      s.state = SlotState::Held;
      return {NextStep::Hold, &s};
    }
    const NvmeStatus st = execute_admin(target_, c, s, now);
    return complete(s, st);
  }
  if (NamespaceStore* ns = io_conflict(c, s)) {
    if (auto keep = ns->weak_from_this().lock()) {
      // The receive buffer goes back to the QP when on_capsule returns.
      if (!s.capsule_data.empty()) {
        std::memcpy(s.buffer.data(), s.capsule_data.data(), s.capsule_data.size());
        s.capsule_data = {};
      }
      ns->add_waiter();
      s.waits_on = std::move(keep);
      s.state = SlotState::Waiting;
      ++waiting_;
      bump(QueueCounter::Waits);
      return {NextStep::Hold, &s};
    }
  }
  const NvmeStatus st = execute_io(c, s);
  s.capsule_data = {};
  if (s.zero_copy) bump(QueueCounter::ZeroCopy);
  return complete(s, st, std::uint64_t{sqe.cdw11.get()} << 32 | sqe.cdw10.get());
}

DataPlan plan_data(const nv::Sqe& sqe, bool admin_queue, const Controller* ctrl) {
  DataPlan p;
  if (sqe.opc == 0x7F) {
    if (sqe.fctype() == static_cast<std::uint8_t>(nv::FabricsType::Connect)) {
      p.dir = Direction::FromHost;
      p.length = nv::kConnectDataSize;
    }
    return p;
  }
  if (admin_queue) {
    switch (static_cast<nv::AdminOpcode>(sqe.opc)) {
      case nv::AdminOpcode::Identify:
        p.dir = Direction::ToHost;
        p.length = nv::kIdentifySize;
        break;
      case nv::AdminOpcode::GetLogPage: {
        const std::uint64_t numd = (sqe.cdw10.get() >> 16) | std::uint64_t{sqe.cdw11.get() & 0xFFFF} << 16;
        const std::uint64_t len = (numd + 1) * 4;
        if (len > 0xFFFFFF) {
          p.status = nv::generic_error(nv::sc::kInvalidField);
          return p;
        }
        p.dir = Direction::ToHost;
        p.length = static_cast<std::uint32_t>(len);
        break;
      }
      default: break;
    }
    return p;
  }
  const auto op = static_cast<nv::IoOpcode>(sqe.opc);
  if (op != nv::IoOpcode::Read && op != nv::IoOpcode::Write && op != nv::IoOpcode::DatasetManagement) return p;
  NamespaceStore* ns = ctrl && ctrl->subsystem ? ctrl->subsystem->find_namespace(sqe.nsid.get()) : nullptr;
  if (!ns) {
    p.status = nv::generic_error(nv::sc::kInvalidNamespace);
    return p;
  }
  if (op == nv::IoOpcode::DatasetManagement) {
    p.dir = Direction::FromHost;
    p.length = ((sqe.cdw10.get() & 0xFF) + 1) * static_cast<std::uint32_t>(sizeof(nv::DsmRange));
    return p;
  }
  const std::uint64_t slba = std::uint64_t{sqe.cdw11.get()} << 32 | sqe.cdw10.get();
  const std::uint64_t nlb = (sqe.cdw12.get() & 0xFFFF) + 1u;
  p.lba = slba;
  if (slba >= ns->blocks() || nlb > ns->blocks() - slba) {
    p.status = nv::generic_error(nv::sc::kLbaOutOfRange);
    return p;
  }
  const std::uint64_t len = nlb << ns->block_shift();
  if (len > 0xFFFFFF) {  // beyond a keyed SGL's 24-bit length, and any MDTS
    p.status = nv::generic_error(nv::sc::kInvalidField);
    return p;
  }
  p.ns = ns;
  p.nlb = nlb;
  p.dir = op == nv::IoOpcode::Read ? Direction::ToHost : Direction::FromHost;
  p.length = static_cast<std::uint32_t>(len);
  return p;
}

}  // namespace roce::nvmf
