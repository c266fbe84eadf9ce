// The responder's side of IBA annex A19 (memory placement extensions), as Linux 6.2+ rxe
// implements it: ATOMIC_WRITE (RETH + 8 bytes, written as one 8-byte store after everything
// before it) and FLUSH (FETH + RETH: make earlier writes globally visible or persistent, for a
// range or a whole region). Both take a responder resource like a READ, are answered with a
// zero-length RDMA READ response ONLY, and a duplicate is answered again, never executed again.
#include <atomic>
#include <cstring>

#include "lib/rdma/responder.hpp"
#include "lib/rdma/verbs_ext.hpp"
#include "protocol/feth.hpp"
#include "protocol/psn.hpp"

namespace roce::rdma {

using namespace roce::proto;

namespace {

// The memory access flags a FLUSH of this placement type needs (rxe: the same bits on the QP).
int flush_access(std::uint8_t placement) {
  int need = 0;
  if (placement & kFlushGlobal) need |= kAccessFlushGlobal;
  if (placement & kFlushPersistent) need |= kAccessFlushPersistent;
  return need;
}

}  // namespace

RespState Responder::check_placement_access(const QpContext& qp, const Walk& w) const {
  const Feth& f = w.pkt.ext.feth;
  const std::uint8_t placement = feth_placement(f);
  const std::uint8_t level = feth_selectivity(f);
  // A placement type outside the two the IBA defines, none at all, or a reserved selectivity
  // level is not a request this responder can carry out: invalid request.
  if (placement == 0 || (placement & ~kFlushPlacementMask) || level > kFlushMr) return RespState::ErrUnsupportedOpcode;
  const int need = flush_access(placement);
  return (qp.cfg.access & need) == need ? RespState::CheckResource : RespState::ErrUnsupportedOpcode;
}

RespState Responder::check_placement_rkey(const QpContext& qp, Walk& w) const {
  const Packet& pkt = w.pkt;
  const std::uint64_t va = pkt.ext.reth.va.get();
  const std::uint32_t rkey = pkt.ext.reth.rkey.get();
  if (pkt.info->operation == Operation::AtomicWrite) {
    if (va % 8 != 0) return RespState::ErrMisalignedAtomic;
    return qp.mrs->check_remote(rkey, qp.cfg.pd, qp.cfg.qpn, va, 8, IBV_ACCESS_REMOTE_WRITE, &w.target) == AccessResult::Ok
               ? RespState::Execute
               : RespState::ErrRkeyViolation;
  }
  const int need = flush_access(feth_placement(pkt.ext.feth));
  if (feth_selectivity(pkt.ext.feth) == kFlushMr)  // the whole region: VA and length carry nothing
    return qp.mrs->find_remote(rkey, qp.cfg.pd, qp.cfg.qpn, need) ? RespState::Execute : RespState::ErrRkeyViolation;
  std::byte* at = nullptr;
  return qp.mrs->check_remote(rkey, qp.cfg.pd, qp.cfg.qpn, va, pkt.ext.reth.dma_length.get(), need, &at) == AccessResult::Ok
             ? RespState::Execute
             : RespState::ErrRkeyViolation;
}

void Responder::queue_empty_read_response(std::uint32_t psn, bool replay) {
  Item& it = push_item();
  it.kind = Item::Kind::ReadResponse;
  it.psn = psn;
  it.msn = msn_;
  it.npackets = 1;
  it.length = 0;
  it.replay = replay;
  it.reexecuted = replay;
}

RespState Responder::execute_atomic_write(Walk& w) {
  const Packet& pkt = w.pkt;
  drop_stale_replays();
  std::uint64_t value = 0;
  std::memcpy(&value, pkt.payload.data(), sizeof value);  // the bytes as they came, in one store
  // Release: every earlier request's bytes are visible before this word is (the point of it).
  std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(w.target)).store(value, std::memory_order_release);
  msn_ = psn_next(msn_);
  Resource& r = next_resource();
  r = Resource{Resource::Kind::AtomicWrite, pkt.psn(), 1, pkt.ext.reth.va.get(), pkt.ext.reth.rkey.get(), 8, 0};
  queue_empty_read_response(pkt.psn(), false);
  epsn_ = psn_next(pkt.psn());
  seq_ = SequenceState::Normal;
  w.outcome = ResponderOutcome::Progress;
  return RespState::Done;
}

RespState Responder::execute_flush(Walk& w) {
  const Packet& pkt = w.pkt;
  drop_stale_replays();
  // Global visibility: every byte placed before this request reaches memory other CPUs see
  // before the answer goes out. Persistence is never granted: regions are ordinary host memory
  // (MrTable refuses IBV_ACCESS_FLUSH_PERSISTENT, as rxe does for memory that is not pmem), so
  // such a FLUSH failed its R_Key check.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  msn_ = psn_next(msn_);
  Resource& r = next_resource();
  r = Resource{Resource::Kind::Flush, pkt.psn(), 1, pkt.ext.reth.va.get(), pkt.ext.reth.rkey.get(),
               pkt.ext.reth.dma_length.get(), 0};
  queue_empty_read_response(pkt.psn(), false);
  epsn_ = psn_next(pkt.psn());
  seq_ = SequenceState::Normal;
  w.outcome = ResponderOutcome::Progress;
  return RespState::Done;
}

RespState Responder::duplicate_placement(QpContext& qp, Walk& w) {
  const std::uint32_t psn = w.pkt.psn();
  const Resource::Kind kind =
      w.pkt.info->operation == Operation::AtomicWrite ? Resource::Kind::AtomicWrite : Resource::Kind::Flush;
  for (const Resource& r : resources_) {
    if (r.kind != kind || r.first_psn != psn) continue;
    replays_queued_ = true;
    queue_empty_read_response(psn, true);  // answered again (IBA oA19-14/-15), never executed twice
    qp.counters.inc(Counter::DuplicateAtomicReplayed);
    w.outcome = ResponderOutcome::Progress;
    return RespState::Done;
  }
  return RespState::Done;  // too old to answer: the requester has moved on
}

}  // namespace roce::rdma
