#include "apps/common/traffic/drivers.hpp"

#include <algorithm>

namespace roce::app {

namespace {

constexpr int kReap = 32;
constexpr Nanos kPeakInterval = kMilli;

int post_op(Engine& e, const LocalQp& qp, Verb verb, AtomicOp atomic, std::uint64_t wr_id, LocalBuffer local,
            std::uint32_t size, RemoteBuffer remote, unsigned flags = IBV_SEND_SIGNALED) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(local.ptr), verb == Verb::Atomic ? 8u : size, local.lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = flags;
  switch (verb) {
    case Verb::Write: wr.opcode = IBV_WR_RDMA_WRITE; break;
    case Verb::Read: wr.opcode = IBV_WR_RDMA_READ; break;
    case Verb::Send: wr.opcode = IBV_WR_SEND; break;
    case Verb::Atomic:
      wr.opcode = atomic == AtomicOp::CmpAndSwap ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
      break;
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
    wr.wr.ud.remote_qkey = kPerftestQkey;
  } else {
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
  }
  ibv_send_wr* bad = nullptr;
  return e.post_send(qp.qp, &wr, &bad);
}

int post_recv(Engine& e, const LocalQp& qp, std::byte* at, std::uint32_t len, std::uint32_t lkey) {
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
bool reap(Engine& e, const LocalQp& qp, DriverStatus& st, Each&& each) {
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
    : qp_(qp), spec_(spec), local_(local), remote_(remote) {}

bool BwClient::may_post(Nanos now) {
  if (st_.done) return false;
  if (spec_.duration > 0 ? now >= deadline_ : posted_ >= spec_.iters) return false;
  if (posted_ - st_.completed >= spec_.tx_depth) return false;
  if (spec_.rate_limit_gbps > 0) {
    // A token bucket of one message: the average stays at the limit.
    const double rate = spec_.rate_limit_gbps * 1e9 / 8;
    tokens_ = std::min<double>(tokens_ + rate * static_cast<double>(now - tokens_at_) / 1e9, op_bytes(spec_));
    tokens_at_ = now;
    if (tokens_ < op_bytes(spec_)) return false;
    tokens_ -= op_bytes(spec_);
  }
  return true;
}

void BwClient::poll(Engine& e, Nanos now) {
  if (first_post_ < 0) {
    first_post_ = now;
    bucket_start_ = now;
    tokens_at_ = now;
    tokens_ = op_bytes(spec_);
    if (spec_.duration > 0) deadline_ = now + spec_.duration;
  }
  ibv_wc wc[kReap];
  const int n = e.poll_cq(qp_.cq, kReap, wc);
  if (n < 0) note_error(st_, IBV_WC_GENERAL_ERR);  // CQ overrun
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      note_error(st_, wc[i].status);
      continue;
    }
    ++st_.completed;
    last_completion_ = now;
    ++bucket_ops_;
  }
  // Completions arrive in bursts (one coalesced ACK retires many WRs), so the peak is measured
  // over whole intervals, never over a handful of completions.
  if (now - bucket_start_ >= kPeakInterval) {
    const double rate = static_cast<double>(bucket_ops_) * op_bytes(spec_) * 1e9 / static_cast<double>(now - bucket_start_);
    if (bucket_start_ > first_post_ || bucket_ops_ > 0) peak_ = std::max(peak_, rate);
    bucket_start_ = now;
    bucket_ops_ = 0;
  }
  while (may_post(now)) {
    if (post_op(e, qp_, spec_.verb, spec_.atomic, posted_, local_, spec_.size, remote_) != 0) {
      note_error(st_, IBV_WC_GENERAL_ERR);
      break;
    }
    ++posted_;
  }
  const bool all_posted = spec_.duration > 0 ? now >= deadline_ : posted_ >= spec_.iters;
  if (all_posted && st_.completed + st_.errors >= posted_) st_.done = true;
}

LatClient::LatClient(const LocalQp& qp, const TrafficSpec& spec, LocalBuffer local, RemoteBuffer remote)
    : qp_(qp), spec_(spec), local_(local), remote_(remote) {
  samples_.reserve(spec.duration > 0 ? 1'000'000 : spec.iters);
}

void LatClient::start_one(Engine& e, Nanos now) {
  if (spec_.verb == Verb::Send) {
    // The answer lands in front of what we send (it comes only after ours arrived).
    const std::uint32_t len = spec_.size + (remote_.ah ? kUdGrhBytes : 0);
    if (post_recv(e, qp_, local_.ptr, len, local_.lkey) != 0) note_error(st_, IBV_WC_GENERAL_ERR);
  }
  started_ = now;
  if (run_started_ < 0) run_started_ = now;
  in_flight_ = true;
  send_done_ = recv_done_ = false;
  if (post_op(e, qp_, spec_.verb, spec_.atomic, st_.completed, local_, spec_.size, remote_) != 0)
    note_error(st_, IBV_WC_GENERAL_ERR);
}

void LatClient::poll(Engine& e, Nanos now) {
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
                           LocalBuffer send, const std::byte* landing, RemoteBuffer remote, Nanos duration)
    : qp_(qp),
      size_(std::max<std::uint32_t>(size, 1)),
      iters_(iters),
      send_(send),
      poll_byte_(landing + size_ - 1),
      remote_(remote),
      duration_(duration),
      posting_next_(writes_first) {
  samples_.reserve(iters ? iters : 1 << 16);
}

void WriteLatency::poll(Engine& e, Nanos now) {
  if (st_.done) return;
  if (run_started_ < 0) run_started_ = now;
  if (!reap(e, qp_, st_, [this](const ibv_wc&) { ++st_.completed; })) return;
  const bool out_of_time = duration_ > 0 && now - run_started_ >= duration_;
  for (;;) {
    if (posting_next_) {
      if ((iters_ && posted_ >= iters_) || out_of_time) break;
      send_.ptr[size_ - 1] = static_cast<std::byte>(static_cast<std::uint8_t>(posted_ + 1));
      if (post_op(e, qp_, Verb::Write, AtomicOp::FetchAndAdd, posted_, send_, size_, remote_) != 0) {
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

void ReceiveServer::post_receives(Engine& e) {
  while (posted_ < depth_) {
    if (post_recv(e, qp_, region_.ptr, static_cast<std::uint32_t>(region_.length), region_.lkey) != 0) break;
    ++posted_;
  }
}

void ReceiveServer::poll(Engine& e, Nanos now) {
  (void)now;
  post_receives(e);
  ibv_wc wc[kReap];
  const int n = e.poll_cq(qp_.cq, kReap, wc);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (wc[i].status != IBV_WC_WR_FLUSH_ERR) note_error(st_, wc[i].status);
      if (wc[i].opcode & IBV_WC_RECV) --posted_;
      continue;
    }
    if (!(wc[i].opcode & IBV_WC_RECV)) continue;  // our echo SEND finished
    --posted_;
    ++received_;
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

}  // namespace roce::app
