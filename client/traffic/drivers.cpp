#include "client/traffic/drivers.hpp"

#include <algorithm>

namespace roce::client {

namespace {

constexpr int kReap = 32;

ibv_send_wr work_request(Verb verb, AtomicOp atomic, std::uint64_t wr_id, ibv_sge* sge, RemoteBuffer remote,
                         unsigned flags) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.send_flags = flags;
  switch (verb) {
    case Verb::Write: wr.opcode = IBV_WR_RDMA_WRITE; break;
    case Verb::Read: wr.opcode = IBV_WR_RDMA_READ; break;
    case Verb::Send: wr.opcode = IBV_WR_SEND; break;
    case Verb::Atomic:
      wr.opcode = atomic == AtomicOp::CmpAndSwap ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
      break;
    case Verb::AtomicWrite: wr.opcode = IBV_WR_ATOMIC_WRITE; break;  // RETH + the 8 bytes of the sge
    case Verb::Flush:
      // Global visibility of the range [remote, remote + -s): FETH placement 1, selectivity range.
      return rdma::flush_wr(wr_id, remote.rkey, remote.addr, sge->length, rdma::kFlushGlobal, rdma::kFlushRange, flags);
  }
  if (verb == Verb::Atomic) {
    wr.wr.atomic.remote_addr = remote.addr;
    wr.wr.atomic.rkey = remote.rkey;
    // perftest: FETCH_AND_ADD adds 1; CMP_AND_SWAP compares with 0 and swaps in 0.
    wr.wr.atomic.compare_add = atomic == AtomicOp::FetchAndAdd ? 1 : 0;
    wr.wr.atomic.swap = 0;
  } else if (verb == Verb::Send && remote.ah) {
    wr.wr.ud.ah = &remote.ah->base;
    wr.wr.ud.remote_qpn = remote.ud_qpn;
    wr.wr.ud.remote_qkey = remote.ud_qkey;
  } else {
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
  }
  return wr;
}

int post_op(rdma::Engine& e, const LocalQp& qp, Verb verb, AtomicOp atomic, std::uint64_t wr_id, LocalBuffer local,
            std::uint32_t size, RemoteBuffer remote, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(local.ptr), eight_byte_verb(verb) ? 8u : size, local.lkey};
  ibv_send_wr wr = work_request(verb, atomic, wr_id, &sge, remote, flags);
  ibv_send_wr* bad = nullptr;
  return e.post_send(qp.qp, &wr, &bad);
}

int post_recv(rdma::Engine& e, const LocalQp& qp, std::byte* at, std::uint32_t len, std::uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(at), len, lkey};
  ibv_recv_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return e.post_recv(qp.qp, &wr, &bad);
}

void note_error(DriverStatus& st, ibv_wc_status s) {
  if (st.errors++ == 0) st.first_error = s;
  st.done = true;
}

// Reaps the QP's CQ; `each` sees every successful completion. False once one failed (noted).
template <typename Each>
bool reap(rdma::Engine& e, const LocalQp& qp, DriverStatus& st, Each&& each) {
  ibv_wc wc[kReap];
  const int n = e.poll_cq(qp.cq, kReap, wc);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      note_error(st, wc[i].status);
      return false;
    }
    each(wc[i]);
  }
  return true;
}

}  // namespace

BwClient::BwClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote)
    : qp_(qp), spec_(spec), local_(local), remote_(remote) {
  spec_.cq_mod = std::max<std::uint32_t>(spec_.cq_mod, 1);
  spec_.post_list = std::max<std::uint32_t>(spec_.post_list, 1);
  wrs_.resize(spec_.post_list);
  sges_.resize(spec_.post_list);
  if (spec_.record_peak && spec_.duration == 0) {
    posted_at_.resize(spec_.iters);
    completed_at_.resize(spec_.iters);
  }
}

// How many operations to post now: a post list, or none. After a -D run's deadline, single
// operations up to the next signalled one, so that the last operation posted is signalled and
// the run ends with nothing unaccounted in flight.
std::uint32_t BwClient::may_post(Nanos now) {
  if (st_.done) return 0;
  std::uint32_t n = spec_.post_list;
  if (spec_.duration > 0) {
    if (now >= deadline_) {
      if (posted_ % spec_.cq_mod == 0) return 0;
      n = 1;
    }
  } else {
    if (posted_ >= spec_.iters) return 0;
    n = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, spec_.iters - posted_));
  }
  if (posted_ - st_.completed + n > spec_.tx_depth) return 0;
  if (spec_.rate_limit_gbps > 0) {
    // A token bucket of one post list: the average stays at the limit.
    const double rate = spec_.rate_limit_gbps * 1e9 / 8;
    const double want = static_cast<double>(n) * op_bytes(spec_);
    tokens_ = std::min<double>(tokens_ + rate * static_cast<double>(now - tokens_at_) / 1e9, want);
    tokens_at_ = now;
    if (tokens_ < want) return 0;
    tokens_ -= want;
  }
  return n;
}

std::uint32_t post_receives(rdma::Engine& e, const LocalQp& qp, LocalBuffer landing, std::uint32_t count) {
  std::uint32_t n = 0;
  while (n < count && post_recv(e, qp, landing.ptr, static_cast<std::uint32_t>(landing.length), landing.lkey) == 0) ++n;
  return n;
}

void BwClient::poll(rdma::Engine& e, Nanos now) {
  if (first_post_ < 0) {
    first_post_ = now;
    tokens_at_ = now;
    tokens_ = static_cast<double>(spec_.post_list) * op_bytes(spec_);
    if (spec_.duration > 0) deadline_ = now + spec_.duration;
  }
  if (stopping_) deadline_ = std::min(deadline_, now);
  // SEND -b: receives for the peer's SENDs, never more than it will send (a sweep's next size
  // finds the queue empty).
  const bool endless_receives = recv_expected_ == 0;
  while (recv_posted_ < recv_depth_ && (endless_receives || received_ + recv_posted_ < recv_expected_)) {
    if (post_recv(e, qp_, recv_landing_.ptr, static_cast<std::uint32_t>(recv_landing_.length), recv_landing_.lkey) != 0) break;
    ++recv_posted_;
  }
  ibv_wc wc[kReap];
  const int n = e.poll_cq(qp_.cq, kReap, wc);
  if (n < 0) note_error(st_, IBV_WC_GENERAL_ERR);  // CQ overrun
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      note_error(st_, wc[i].status);
      continue;
    }
    if (wc[i].opcode & IBV_WC_RECV) {
      if (recv_posted_ > 0) --recv_posted_;  // none of ours on a shared receive queue
      ++received_;
      continue;
    }
    // A signalled completion retires every operation up to its own (the queue completes in order).
    const std::uint64_t upto = wc[i].wr_id + 1;
    if (upto <= st_.completed) continue;
    for (std::uint64_t k = st_.completed; k < upto && stamped_completions_ < completed_at_.size(); ++k)
      completed_at_[stamped_completions_++] = now;
    st_.completed = upto;
    last_completion_ = now;
  }
  if (spec_.duration > 0) {
    if (window_start_ == 0 && now >= first_post_ + spec_.margin) {
      window_start_ = now;
      window_start_ops_ = st_.completed;
    }
    if (window_end_ == 0 && now >= deadline_ - spec_.margin) {
      window_end_ = now;
      window_end_ops_ = st_.completed;
    }
  }
  const bool inline_ok = (spec_.verb == Verb::Write || spec_.verb == Verb::Send) && spec_.size <= spec_.inline_size;
  for (std::uint32_t count = may_post(now); count > 0; count = may_post(now)) {
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint64_t index = posted_ + k;
      const bool last = spec_.duration == 0 && index + 1 == spec_.iters;
      unsigned flags = inline_ok ? IBV_SEND_INLINE : 0;
      if ((index + 1) % spec_.cq_mod == 0 || last) flags |= IBV_SEND_SIGNALED;
      sges_[k] = ibv_sge{reinterpret_cast<std::uint64_t>(local_.ptr), op_bytes(spec_), local_.lkey};
      wrs_[k] = work_request(spec_.verb, spec_.atomic, index, &sges_[k], remote_, flags);
      wrs_[k].next = k + 1 < count ? &wrs_[k + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    if (e.post_send(qp_.qp, wrs_.data(), &bad) != 0) {
      note_error(st_, IBV_WC_GENERAL_ERR);
      break;
    }
    for (std::uint32_t k = 0; k < count && stamped_posts_ < posted_at_.size(); ++k) posted_at_[stamped_posts_++] = now;
    posted_ += count;
  }
  const bool all_posted = spec_.duration > 0 ? now >= deadline_ && posted_ % spec_.cq_mod == 0 : posted_ >= spec_.iters;
  const bool all_received = (recv_depth_ == 0 && !srq_fed_) || endless_receives || received_ >= recv_expected_;
  if (all_posted && st_.completed + st_.errors >= posted_ && all_received) st_.done = true;
}

LatClient::LatClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote)
    : qp_(qp), spec_(spec), local_(local), remote_(remote) {
  samples_.reserve(spec.duration > 0 ? 1'000'000 : spec.iters);
}

void LatClient::start_one(rdma::Engine& e, Nanos now) {
  if (spec_.verb == Verb::Send && !srq_fed_) {
    // The answer lands in front of what we send (it comes only after ours arrived).
    const std::uint32_t len = spec_.size + (remote_.ah ? kUdGrhBytes : 0);
    if (post_recv(e, qp_, local_.ptr, len, local_.lkey) != 0) note_error(st_, IBV_WC_GENERAL_ERR);
  }
  started_ = now;
  if (run_started_ < 0) run_started_ = now;
  in_flight_ = true;
  send_done_ = recv_done_ = false;
  // perftest's -I: WRITE and SEND payloads up to inline_size bytes are copied at post time.
  const bool inline_ok = (spec_.verb == Verb::Write || spec_.verb == Verb::Send) && spec_.size <= spec_.inline_size;
  if (post_op(e, qp_, spec_.verb, spec_.atomic, st_.completed, local_, spec_.size, remote_,
              IBV_SEND_SIGNALED | (inline_ok ? IBV_SEND_INLINE : 0)) != 0)
    note_error(st_, IBV_WC_GENERAL_ERR);
}

void LatClient::poll(rdma::Engine& e, Nanos now) {
  if (st_.done) return;
  const bool ok = reap(e, qp_, st_, [this](const ibv_wc& wc) {
    if (wc.opcode == IBV_WC_RECV) recv_done_ = true;
    else send_done_ = true;
  });
  if (!ok) return;
  if (in_flight_) {
    if (!send_done_ || (spec_.verb == Verb::Send && !recv_done_)) return;
    samples_.push_back(now - started_);
    ++st_.completed;
    in_flight_ = false;
  }
  const bool more = spec_.duration > 0 ? (samples_.empty() || now - run_started_ < spec_.duration) && samples_.size() < samples_.capacity()
                                       : st_.completed < spec_.iters;
  if (!more) {
    st_.done = true;
    return;
  }
  start_one(e, now);
}

WriteLatency::WriteLatency(const LocalQp& qp, std::uint32_t size, std::uint64_t iters, bool writes_first,
                           LocalBuffer send, const std::byte* landing, RemoteBuffer remote, Nanos duration,
                           std::uint32_t inline_size)
    : qp_(qp),
      size_(std::max<std::uint32_t>(size, 1)),
      iters_(iters),
      send_flags_(IBV_SEND_SIGNALED | (size_ <= inline_size ? IBV_SEND_INLINE : 0)),
      send_(send),
      poll_byte_(landing + size_ - 1),
      remote_(remote),
      duration_(duration),
      posting_next_(writes_first) {
  samples_.reserve(iters ? iters : 1 << 16);
}

void WriteLatency::poll(rdma::Engine& e, Nanos now) {
  if (st_.done) return;
  if (run_started_ < 0) run_started_ = now;
  if (!reap(e, qp_, st_, [this](const ibv_wc&) { ++st_.completed; })) return;
  const bool out_of_time = duration_ > 0 && now - run_started_ >= duration_;
  for (;;) {
    if (posting_next_) {
      if ((iters_ && posted_ >= iters_) || out_of_time) break;
      send_.ptr[size_ - 1] = static_cast<std::byte>(static_cast<std::uint8_t>(posted_ + 1));
      if (post_op(e, qp_, Verb::Write, AtomicOp::FetchAndAdd, posted_, send_, size_, remote_, send_flags_) != 0) {
        note_error(st_, IBV_WC_GENERAL_ERR);
        return;
      }
      ++posted_;
      last_post_ = now;
      posting_next_ = false;
    } else {
      if (iters_ && received_ >= iters_) break;
      if (*poll_byte_ != static_cast<std::byte>(static_cast<std::uint8_t>(received_ + 1))) break;
      ++received_;
      if (last_post_ >= 0 && samples_.size() < samples_.capacity()) samples_.push_back(now - last_post_);
      posting_next_ = true;
    }
  }
  const bool finished = out_of_time || (iters_ && posted_ >= iters_ && received_ >= iters_);
  if (finished && st_.completed + st_.errors >= posted_) st_.done = true;
}

ReceiveServer::ReceiveServer(const LocalQp& qp, LocalBuffer region, std::uint32_t depth, bool echo, bool ud)
    : qp_(qp), region_(region), depth_(depth), echo_(echo), ud_(ud) {}

void ReceiveServer::post_receives(rdma::Engine& e) {
  while (posted_ < depth_) {
    if (post_recv(e, qp_, region_.ptr, static_cast<std::uint32_t>(region_.length), region_.lkey) != 0) break;
    ++posted_;
  }
}

void ReceiveServer::poll(rdma::Engine& e, Nanos now) {
  post_receives(e);
  ibv_wc wc[kReap];
  const int n = e.poll_cq(qp_.cq, kReap, wc);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (wc[i].status != IBV_WC_WR_FLUSH_ERR) note_error(st_, wc[i].status);
      if ((wc[i].opcode & IBV_WC_RECV) && depth_ > 0) --posted_;
      continue;
    }
    if (!(wc[i].opcode & IBV_WC_RECV)) continue;  // our echo SEND finished
    if (depth_ > 0) --posted_;
    if (received_++ == 0) first_received_ = now;
    last_received_ = now;
    const std::uint32_t grh = ud_ ? kUdGrhBytes : 0;
    const std::uint32_t len = wc[i].byte_len > grh ? wc[i].byte_len - grh : 0;
    bytes_ += len;
    if (echo_ && (!ud_ || ud_peer_.ah)) {
      const LocalBuffer payload{region_.ptr + grh, region_.length - grh, region_.lkey};
      post_op(e, qp_, Verb::Send, AtomicOp::FetchAndAdd, 0, payload, len, ud_peer_);
    }
  }
  post_receives(e);
}

}  // namespace roce::client
