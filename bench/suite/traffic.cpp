#include "bench/suite/traffic.hpp"

#include <rte_cycles.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "protocol/psn.hpp"

namespace roce::bench {

const char* to_string(Verb v) {
  switch (v) {
    case Verb::Write: return "WRITE";
    case Verb::Read: return "READ";
    case Verb::Send: return "SEND";
  }
  return "?";
}

namespace {
constexpr std::uint32_t kRecvDepth = 256;
constexpr std::uint64_t kQpShift = 40;  // wr_id = qp index << 40 | messages posted so far
}  // namespace

Traffic::Traffic(Rig& rig, std::vector<QpPair> qps, Verb verb, std::uint32_t size, Region& region_a, Region& region_b,
                 std::vector<std::uint32_t>& recvs, std::uint32_t recv_len)
    : rig_(rig),
      qps_(std::move(qps)),
      st_(qps_.size()),
      verb_(verb),
      size_(size),
      ra_(region_a),
      rb_(region_b),
      recvs_(recvs),
      recv_len_(recv_len) {
  recvs_.resize(qps_.size());
  recv_slots_ = std::max<std::uint64_t>(1, (region_b.bytes.size() - recv_len) / size + 1);
  // About 1 MiB in flight per QP, at least 2 and at most 256 messages.
  depth_ = static_cast<std::uint32_t>(std::clamp<std::uint64_t>((1u << 20) / size, 2, 256));
  batch_ = std::min<std::uint32_t>(16, depth_ / 2 ? depth_ / 2 : 1);
  slots_ = std::max<std::uint64_t>(1, std::min(region_a.bytes.size(), region_b.bytes.size()) / size);
  for (std::size_t i = 0; i < st_.size(); ++i) st_[i].src_offset = (i * std::uint64_t{size}) % (region_a.bytes.size() - size + 1);
  // The chain of batch_ WRs, made once as an application keeps its WRs: what differs between
  // posts (the ids and the two addresses) is set per post (post()).
  const ibv_wr_opcode op = verb == Verb::Write ? IBV_WR_RDMA_WRITE : verb == Verb::Read ? IBV_WR_RDMA_READ : IBV_WR_SEND;
  for (unsigned k = 0; k < batch_; ++k) {
    sg_[k] = ibv_sge{0, size_, ra_.mr->lkey()};
    ibv_send_wr& w = wr_[k];
    w = ibv_send_wr{};
    w.opcode = op;
    w.sg_list = &sg_[k];
    w.num_sge = 1;
    w.send_flags = k + 1 == batch_ ? IBV_SEND_SIGNALED : 0;
    w.wr.rdma.rkey = rb_.mr->rkey();
    w.next = k + 1 == batch_ ? nullptr : &wr_[k + 1];
  }
}

bool Traffic::post(unsigned i) {
  PerQp& q = st_[i];
  rdma::Engine& ea = rig_.ea();
  if (verb_ == Verb::Send) {
    // Receives first, as an application would, into consecutive slots of B's region.
    std::uint32_t& recvs = recvs_[i];
    while (recvs + 32 <= kRecvDepth) {
      std::array<ibv_sge, 32> sg;
      std::array<ibv_recv_wr, 32> wr{};
      for (unsigned k = 0; k < 32; ++k) {
        // Receives outlive a case (the QPs carry on with the next size), so each takes the
        // largest message of the suite.
        const std::uint64_t slot = next_slot_++ % recv_slots_;
        if (++send_slot_ == slots_) send_slot_ = 0;
        sg[k] = ibv_sge{reinterpret_cast<std::uint64_t>(rb_.bytes.data() + slot * size_), recv_len_, rb_.mr->lkey()};
        wr[k].wr_id = i;
        wr[k].sg_list = &sg[k];
        wr[k].num_sge = 1;
        wr[k].next = k == 31 ? nullptr : &wr[k + 1];
      }
      ibv_recv_wr* bad = nullptr;
      if (rig_.eb().post_recv(qps_[i].b, wr.data(), &bad) != 0) return false;
      recvs += 32;
    }
  }
  while (posting_ && q.posted - q.completed + batch_ <= depth_) {
    for (unsigned k = 0; k < batch_; ++k) {
      const std::uint64_t slot = take_slot();
      // The data goes from a hot source to consecutive slots of the far buffer (larger than
      // the LLC); READ moves it the other way.
      std::byte* local = ra_.bytes.data() + q.src_offset;
      std::byte* remote = rb_.bytes.data() + slot * size_;
      if (verb_ == Verb::Read) {
        local = ra_.bytes.data() + slot * size_;
        remote = rb_.bytes.data() + q.src_offset;
      }
      sg_[k].addr = reinterpret_cast<std::uint64_t>(local);
      wr_[k].wr_id = (std::uint64_t{i} << kQpShift) | (q.posted + k + 1);
      wr_[k].wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(remote);
    }
    ibv_send_wr* bad = nullptr;
    if (ea.post_send(qps_[i].a, wr_.data(), &bad) != 0) return false;
    q.posted += batch_;
  }
  return true;
}

bool Traffic::reap() {
  std::array<ibv_wc, 32> wc;
  int n;
  while ((n = rig_.ea().poll_cq(rig_.cqa(), 32, wc.data())) > 0) {
    for (int k = 0; k < n; ++k) {
      if (wc[k].status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "%s %u B: completion %s\n", to_string(verb_), size_, ibv_wc_status_str(wc[k].status));
        return false;
      }
      PerQp& q = st_[wc[k].wr_id >> kQpShift];
      const std::uint64_t upto = wc[k].wr_id & ((std::uint64_t{1} << kQpShift) - 1);
      bytes_ += (upto - q.completed) * size_;
      q.completed = upto;
    }
  }
  if (verb_ == Verb::Send) {
    while ((n = rig_.eb().poll_cq(rig_.cqb(), 32, wc.data())) > 0) {
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != IBV_WC_SUCCESS) {
          std::fprintf(stderr, "SEND receive: completion %s\n", ibv_wc_status_str(wc[k].status));
          return false;
        }
        --recvs_[wc[k].wr_id];
      }
    }
  }
  return true;
}

bool Traffic::step() {
  for (unsigned i = 0; i < qps_.size(); ++i)
    if (!post(i)) {
      std::fprintf(stderr, "%s %u B: post failed\n", to_string(verb_), size_);
      return false;
    }
  // Side B on its own lcore is not read from here: a stall is then a step in which A sent nothing.
  const auto sent = [&] {
    return rig_.a().worker(0).stats().tx_packets + (rig_.b_remote() ? 0 : rig_.b().worker(0).stats().tx_packets);
  };
  const std::uint64_t before = sent();
  const Nanos t0 = rig_.now();
  const std::uint64_t rx0 = rig_.a().worker(0).stats().rx_packets;
  const std::uint64_t c0 = rig_.b_remote() ? rte_rdtsc() : 0;
  rig_.step();
  if (rig_.b_remote()) {
    a_loop_.add(sent() != before || rig_.a().worker(0).stats().rx_packets != rx0, rte_rdtsc() - c0);
  }
  if (sent() == before) {
    if (stall_since_ == kNever) stall_since_ = t0;
    held_[static_cast<std::size_t>(why_held())] += rig_.now() - t0;
  } else if (stall_since_ != kNever) {
    stalled_ += t0 - stall_since_;
    stall_since_ = kNever;
  }
  return reap();
}

Traffic::Held Traffic::why_held() const {
  const rdma::QueuePair& qp = *qps_.front().a;
  const rdma::QpContext& ctx = qp.context();
  const std::int32_t inflight = proto::psn_diff(qp.requester().sent_end_psn(), qp.completer().una());
  if (ctx.cfg.selective_repeat != 0 && inflight >= static_cast<std::int32_t>(ctx.cfg.selective_repeat)) return Held::ReorderReach;
  // The caps and the window count what is in the network, not what the responder holds.
  const std::int32_t pipe = inflight - static_cast<std::int32_t>(qp.requester().held_ahead());
  if (pipe >= static_cast<std::int32_t>(ctx.tuning->max_inflight_packets) ||
      (ctx.tuning->max_inflight_bytes != 0 && static_cast<std::uint64_t>(std::max(pipe, 0)) * ctx.cfg.pmtu >= ctx.tuning->max_inflight_bytes))
    return Held::InflightCap;
  if (static_cast<std::int64_t>(pipe) >= static_cast<std::int64_t>(qp.requester().window_limit())) return Held::SendWindow;
  return Held::Other;
}

bool Traffic::finish(Nanos timeout) {
  posting_ = false;
  const Nanos until = rig_.now() + timeout;
  auto pending = [&] {
    return std::any_of(st_.begin(), st_.end(), [](const PerQp& q) { return q.completed < q.posted; });
  };
  while (pending()) {
    if (!step()) return false;
    if (rig_.now() > until) {
      std::fprintf(stderr, "%s %u B: messages still outstanding after the run\n", to_string(verb_), size_);
      return false;
    }
  }
  posting_ = true;
  return true;
}

}  // namespace roce::bench
