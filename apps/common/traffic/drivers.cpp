#include "apps/common/traffic/drivers.hpp"

#include <algorithm>

namespace roce::app {

namespace {

constexpr int kReap = 32;
constexpr Nanos kPeakInterval = kMilli;

int post_op(Engine& e, const LocalQp& qp, Verb verb, std::uint64_t wr_id, LocalBuffer local, std::uint32_t size,
            RemoteBuffer remote, unsigned flags = IBV_SEND_SIGNALED) {
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
    case Verb::Atomic: wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
  }
  if (verb == Verb::Atomic) {
    wr.wr.atomic.remote_addr = remote.addr;
    wr.wr.atomic.rkey = remote.rkey;
    wr.wr.atomic.compare_add = 1;
  } else {
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
  }
  ibv_send_wr* bad = nullptr;
  return e.post_send(qp.qp, &wr, &bad);
}

void note_error(DriverStatus& st, ibv_wc_status s) {
  if (st.errors++ == 0) st.first_error = s;
  st.done = true;
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
    if (post_op(e, qp_, spec_.verb, posted_, local_, spec_.size, remote_) != 0) {
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
  ++seq_;
  if (seq_ == 0) seq_ = 1;  // the buffer starts zeroed: never wait for 0
  if (spec_.verb == Verb::Send) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(local_.ptr), spec_.size, local_.lkey};
    ibv_recv_wr rwr{};
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    if (e.post_recv(qp_.qp, &rwr, &rbad) != 0) note_error(st_, IBV_WC_GENERAL_ERR);
  }
  // WRITE: the first `size` bytes go out carrying the sequence in their last byte; the peer's
  // echo lands in the next `size` bytes.
  if (spec_.verb == Verb::Write && spec_.size > 0) local_.ptr[spec_.size - 1] = std::byte{seq_};
  started_ = now;
  in_flight_ = true;
  send_done_ = recv_done_ = false;
  if (post_op(e, qp_, spec_.verb, seq_, local_, spec_.size, remote_) != 0) note_error(st_, IBV_WC_GENERAL_ERR);
}

void LatClient::poll(Engine& e, Nanos now) {
  if (st_.done) return;
  ibv_wc wc[kReap];
  const int n = e.poll_cq(qp_.cq, kReap, wc);
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      note_error(st_, wc[i].status);
      return;
    }
    if (wc[i].opcode == IBV_WC_RECV) recv_done_ = true;
    else send_done_ = true;
  }
  if (in_flight_) {
    bool complete = false;
    switch (spec_.verb) {
      case Verb::Read:
      case Verb::Atomic: complete = send_done_; break;
      case Verb::Send: complete = send_done_ && recv_done_; break;
      case Verb::Write: complete = spec_.size == 0 ? send_done_ : local_.ptr[2 * spec_.size - 1] == std::byte{seq_}; break;
    }
    if (!complete) return;
    samples_.push_back(now - started_);
    ++st_.completed;
    in_flight_ = false;
  }
  const bool more = spec_.duration > 0 ? (samples_.empty() || now - started_ < spec_.duration) && samples_.size() < samples_.capacity()
                                       : st_.completed < spec_.iters;
  if (!more) {
    st_.done = true;
    return;
  }
  start_one(e, now);
}

ReceiveServer::ReceiveServer(const LocalQp& qp, LocalBuffer region, std::uint32_t depth, bool echo)
    : qp_(qp), region_(region), depth_(depth), echo_(echo) {}

void ReceiveServer::post_receives(Engine& e) {
  while (posted_ < depth_) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(region_.ptr), static_cast<std::uint32_t>(region_.length), region_.lkey};
    ibv_recv_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (e.post_recv(qp_.qp, &wr, &bad) != 0) break;
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
    bytes_ += wc[i].byte_len;
    if (echo_) post_op(e, qp_, Verb::Send, 0, region_, wc[i].byte_len, {});
  }
  post_receives(e);
}

WriteEcho::WriteEcho(const LocalQp& qp, std::uint32_t size, LocalBuffer local, RemoteBuffer remote)
    : qp_(qp), size_(size), local_(local), remote_(remote) {}

void WriteEcho::poll(Engine& e, Nanos now) {
  (void)now;
  ibv_wc wc[kReap];
  e.poll_cq(qp_.cq, kReap, wc);
  if (size_ == 0 || local_.ptr[2 * size_ - 1] != std::byte{expect_}) return;
  local_.ptr[size_ - 1] = std::byte{expect_};
  post_op(e, qp_, Verb::Write, expect_, local_, size_, remote_);
  ++echoed_;
  ++expect_;
  if (expect_ == 0) expect_ = 1;
}

}  // namespace roce::app
