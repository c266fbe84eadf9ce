#include "client/cm_channel.hpp"

#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "client/oob/cm_record.hpp"

namespace roce::client {

namespace {

constexpr std::uint64_t kSendId = ~std::uint64_t{0};

std::chrono::steady_clock::time_point deadline_of(int timeout_ms) {
  return timeout_ms < 0 ? std::chrono::steady_clock::time_point::max()
                        : std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
}

}  // namespace

QpParams CmChannel::qp_params() {
  QpParams p;
  p.send_depth = 4;
  p.recv_depth = kReceives;
  p.max_rd_atomic = 0;
  p.access = IBV_ACCESS_LOCAL_WRITE;
  return p;
}

Result<std::unique_ptr<CmChannel>> CmChannel::create(Connector& conn, std::string peer_address, std::string peer_endpoint) {
  std::unique_ptr<CmChannel> c(new CmChannel(conn, std::move(peer_address), std::move(peer_endpoint)));
  auto buf = MappedBuffer::anonymous(std::size_t{kSlotBytes} * (kReceives + 1));
  if (!buf) return buf.error();
  c->buffer_ = std::move(*buf);
  auto mr = conn.register_memory(c->buffer_.data(), c->buffer_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return mr.error();
  c->mr_ = *mr;
  auto qp = conn.create(qp_params());
  if (!qp) return qp.error();
  c->qp_ = *qp;
  CmChannel* raw = c.get();
  const int rc = conn.dataplane().call(raw->qp_.worker, [raw](rdma::Engine& e) {
    for (std::uint32_t i = 0; i < kReceives; ++i) {
      ibv_sge sge{reinterpret_cast<std::uint64_t>(raw->buffer_.data() + std::size_t{i} * kSlotBytes), kSlotBytes,
                  raw->mr_->lkey()};
      ibv_recv_wr wr{};
      wr.wr_id = i;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      if (const int r = e.post_recv(raw->qp_.qp, &wr, &bad); r) return r;
    }
    return 0;
  });
  if (rc) return make_error(rc, "the rdma_cm control channel's receives: " + std::string(std::strerror(rc)));
  return c;
}

CmChannel::~CmChannel() {
  if (qp_.qp) (void)conn_.destroy(qp_);
  if (mr_) (void)conn_.dataplane().memory().deregister(mr_->rkey());
}

Status CmChannel::poll() const {
  if (!failure_.ok()) return failure_;
  CmChannel* self = const_cast<CmChannel*>(this);
  std::vector<std::vector<std::byte>> messages;
  const Status s = conn_.dataplane().call(qp_.worker, [&](rdma::Engine& e) -> Status {
    ibv_wc wc[8];
    const int n = e.poll_cq(self->qp_.cq, 8, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS)
        return make_error(EIO, std::string(wc[i].wr_id == kSendId ? "our SEND" : "a receive") +
                                   " on the rdma_cm control channel completed with " + ibv_wc_status_str(wc[i].status));
      if (wc[i].wr_id == kSendId) {
        ++self->sends_completed_;
        continue;
      }
      std::byte* slot = self->buffer_.data() + wc[i].wr_id * kSlotBytes;
      messages.emplace_back(slot, slot + wc[i].byte_len);
      ibv_sge sge{reinterpret_cast<std::uint64_t>(slot), kSlotBytes, self->mr_->lkey()};
      ibv_recv_wr wr{};
      wr.wr_id = wc[i].wr_id;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      if (const int r = e.post_recv(self->qp_.qp, &wr, &bad); r)
        return make_error(r, "re-posting a receive on the rdma_cm control channel: " + std::string(std::strerror(r)));
    }
    return {};
  });
  for (const auto& m : messages) {
    ++received_;
    // -R's QP record reads as the TCP exchange's text record.
    if (m.size() == kPerftestCmRecordBytes) {
      auto d = parse_perftest_cm(m);
      if (!d) return failure_ = d.error();
      const std::string text = format_perftest(*d);
      inbox_.insert(inbox_.end(), reinterpret_cast<const std::byte*>(text.data()),
                    reinterpret_cast<const std::byte*>(text.data()) + text.size());
    } else {
      inbox_.insert(inbox_.end(), m.begin(), m.end());
    }
  }
  if (!s.ok()) failure_ = s;
  return s;
}

bool CmChannel::wait_readable(int timeout_ms) const {
  const auto deadline = deadline_of(timeout_ms);
  for (;;) {
    if (!poll().ok() || !inbox_.empty() || disconnected_.load()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (on_wait_) on_wait_();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

Status CmChannel::read_exact(std::span<std::byte> out, int timeout_ms) {
  const auto deadline = deadline_of(timeout_ms);
  for (;;) {
    if (Status s = poll(); !s) return s;
    if (inbox_.size() >= out.size()) {
      std::copy_n(inbox_.begin(), out.size(), out.begin());
      inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(out.size()));
      return {};
    }
    if (disconnected_.load()) {
      // What came is the caller's (a refusal cut short, say), as a closed socket leaves it.
      std::copy(inbox_.begin(), inbox_.end(), out.begin());
      inbox_.clear();
      return make_error(ECONNRESET, "the peer disconnected the rdma_cm control channel");
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return make_error(ETIMEDOUT, "nothing on the rdma_cm control channel within " + std::to_string(timeout_ms) + " ms");
    if (on_wait_) on_wait_();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

Status CmChannel::write_all(std::span<const std::byte> data) {
  if (disconnected_.load()) return make_error(ECONNRESET, "the rdma_cm control channel is disconnected");
  // The TCP exchange's text record goes out as -R's binary one.
  std::array<std::byte, kPerftestCmRecordBytes> binary{};
  if (data.size() == kPerftestRecordBytes) {
    if (auto d = parse_perftest(data)) {
      binary = format_perftest_cm(*d);
      data = binary;
    }
  }
  if (data.size() > kSlotBytes)
    return make_error(EMSGSIZE, "a message of " + std::to_string(data.size()) + " bytes on the rdma_cm control channel");
  std::byte* slot = buffer_.data() + std::size_t{kReceives} * kSlotBytes;
  std::memcpy(slot, data.data(), data.size());
  const int rc = conn_.dataplane().call(qp_.worker, [&](rdma::Engine& e) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(slot), static_cast<std::uint32_t>(data.size()), mr_->lkey()};
    ibv_send_wr wr{};
    wr.wr_id = kSendId;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return e.post_send(qp_.qp, &wr, &bad);
  });
  if (rc) return make_error(rc, "a SEND on the rdma_cm control channel: " + std::string(std::strerror(rc)));
  ++sent_;
  // perftest waits for its SEND's completion before it goes on (rdma_write_data); so do we, and
  // the slot is free again. The retry and RNR counts end a peer that is gone.
  const auto deadline = deadline_of(60'000);
  std::optional<std::chrono::steady_clock::time_point> gone;
  while (sends_completed_ < sent_) {
    if (Status s = poll(); !s) return s;
    if (sends_completed_ >= sent_) break;
    // A peer that read our message may disconnect at once (perftest's client after the closing
    // sync): its ACK is in, our poll may lag the CM's event. A moment's grace, then it is lost.
    if (disconnected_.load()) {
      if (!gone) gone = std::chrono::steady_clock::now();
      else if (std::chrono::steady_clock::now() - *gone > std::chrono::milliseconds(200))
        return make_error(ECONNRESET, "the peer disconnected the rdma_cm control channel before our SEND completed");
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return make_error(ETIMEDOUT, "our SEND on the rdma_cm control channel did not complete within 60 s");
    if (on_wait_) on_wait_();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {};
}

}  // namespace roce::client
