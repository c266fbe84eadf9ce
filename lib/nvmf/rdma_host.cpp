#include "lib/nvmf/rdma_host.hpp"

#include <cstring>
#include <initializer_list>

namespace roce::nvmf {

namespace nv = proto::nvme;

namespace {
constexpr std::uint32_t kRecvStride = 64;  // a response is 16 bytes; room to see a longer one
constexpr std::uint64_t kRecvTag = 1ull << 63;
constexpr int kRw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
}  // namespace

NvmfRdmaHost::NvmfRdmaHost(rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp, rdma::CompletionQueue* cq, HostQueueConfig cfg)
    : engine_(engine), pd_(pd), qp_(qp), cq_(cq), cfg_(cfg) {}

NvmfRdmaHost::~NvmfRdmaHost() {
  // As NvmfRdmaQueue's: the QP stops using our buffers before they go.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  (void)engine_.modify_qp(qp_, a, IBV_QP_STATE);
  for (const auto& s : slots_)
    if (s.own_mr) (void)engine_.memory().deregister(s.own_mr->key);
  for (const rdma::MemoryRegion* mr : {data_mr_, capsule_mr_, raw_mr_, recv_mr_})
    if (mr) (void)engine_.memory().deregister(mr->key);
}

Result<std::unique_ptr<NvmfRdmaHost>> NvmfRdmaHost::create(rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp,
                                                           rdma::CompletionQueue* cq, HostQueueConfig cfg) {
  if (cfg.depth == 0) return make_error(EINVAL, "host queue depth 0");
  std::unique_ptr<NvmfRdmaHost> h(new NvmfRdmaHost(engine, pd, qp, cq, cfg));
  if (auto s = h->start(); !s) return s.error();
  return h;
}

Status NvmfRdmaHost::start() {
  rdma::MrTable& mrs = engine_.memory();
  data_.assign(std::size_t{cfg_.depth} * cfg_.max_transfer, std::byte{0});
  capsules_.assign(std::size_t{cfg_.depth} * (nv::kSqeSize + cfg_.inline_size), std::byte{0});
  raw_.assign(nv::kSqeSize + cfg_.max_transfer, std::byte{0});
  // One receive more than commands: a target may answer a command we did not count.
  recv_count_ = cfg_.depth + 1u;
  recv_.assign(std::size_t{recv_count_} * kRecvStride, std::byte{0});
  slots_.assign(cfg_.depth, Slot{});
  completed_.assign(cfg_.depth, 0);
  struct Region {
    std::vector<std::byte>* buf;
    const rdma::MemoryRegion** mr;
    int access;
  };
  for (const Region& g : {Region{&data_, &data_mr_, kRw}, Region{&capsules_, &capsule_mr_, 0}, Region{&raw_, &raw_mr_, 0},
                          Region{&recv_, &recv_mr_, 0}}) {
    auto r = mrs.register_region(pd_, g.buf->data(), g.buf->size(), g.access | IBV_ACCESS_LOCAL_WRITE);
    if (!r) return r.error();
    *g.mr = *r;
  }
  for (std::uint32_t i = 0; i < recv_count_; ++i)
    if (!post_recv(i)) return make_error(ENOMEM, "cannot post the host's receives");
  return {};
}

bool NvmfRdmaHost::post_recv(std::uint32_t index) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(recv_.data() + std::size_t{index} * kRecvStride), kRecvStride,
              recv_mr_->lkey()};
  ibv_recv_wr wr{};
  wr.wr_id = kRecvTag | index;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return engine_.post_recv(qp_, &wr, &bad) == 0;
}

void NvmfRdmaHost::fail(std::string why) {
  if (failed_) return;
  failed_ = true;
  failure_ = std::move(why);
}

std::span<std::byte> NvmfRdmaHost::buffer(std::uint16_t cid) {
  return std::span(data_).subspan(std::size_t{cid} * cfg_.max_transfer, cfg_.max_transfer);
}

std::optional<std::uint16_t> NvmfRdmaHost::free_cid() const {
  for (std::uint16_t i = 0; i < slots_.size(); ++i)
    if (!slots_[i].busy) return i;
  return std::nullopt;
}

Status NvmfRdmaHost::submit(std::uint16_t cid, nv::Sqe sqe, std::uint32_t data_len, SglMode mode) {
  if (cid >= slots_.size()) return make_error(EINVAL, "CID " + std::to_string(cid) + " beyond the queue depth");
  Slot& s = slots_[cid];
  if (s.busy) return make_error(EBUSY, "CID " + std::to_string(cid) + " in flight");
  if (data_len > cfg_.max_transfer) return make_error(EINVAL, "data beyond the host buffer");
  sqe.cid.set(cid);
  sqe.flags = static_cast<std::uint8_t>((sqe.flags & 0x3F) | nv::kPsdtSgl);
  const std::uint64_t va = reinterpret_cast<std::uint64_t>(buffer(cid).data());
  std::uint32_t capsule_len = nv::kSqeSize;
  const bool gather = qp_->config().cap.max_send_sge >= 2;
  std::byte* capsule = capsules_.data() + std::size_t{cid} * (nv::kSqeSize + cfg_.inline_size);
  switch (mode) {
    case SglMode::None: sqe.sgl1 = nv::SglDescriptor::keyed(0, 0, 0, false); break;
    case SglMode::Keyed: sqe.sgl1 = nv::SglDescriptor::keyed(va, data_len, data_mr_->rkey(), false); break;
    case SglMode::KeyedInvalidate: {
      auto r = engine_.memory().register_region(pd_, buffer(cid).data(), cfg_.max_transfer, kRw);
      if (!r) return r.error();
      s.own_mr = *r;
      sqe.sgl1 = nv::SglDescriptor::keyed(va, data_len, s.own_mr->rkey(), true);
      break;
    }
    case SglMode::InCapsule:
      if (data_len > cfg_.inline_size) return make_error(EINVAL, "in-capsule data beyond the queue's inline size");
      sqe.sgl1 = nv::SglDescriptor::in_capsule(0, data_len);
      if (!gather) {
        std::memcpy(capsule + nv::kSqeSize, buffer(cid).data(), data_len);
        capsule_len += data_len;
      }
      break;
    case SglMode::AsGiven: break;
  }
  std::memcpy(capsule, static_cast<const void*>(&sqe), nv::kSqeSize);
  // With two send SGEs the in-capsule data goes from the CID's buffer as it is (the SEND
  // gathers SQE and data), as Linux's nvme-rdma sends it; else it was copied behind the SQE.
  ibv_sge sge[2] = {{reinterpret_cast<std::uint64_t>(capsule), capsule_len, capsule_mr_->lkey()},
                    {reinterpret_cast<std::uint64_t>(buffer(cid).data()), data_len, data_mr_->lkey()}};
  ibv_send_wr wr{};
  wr.wr_id = cid;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = sge;
  wr.num_sge = mode == SglMode::InCapsule && gather && data_len > 0 ? 2 : 1;
  ibv_send_wr* bad = nullptr;
  if (engine_.post_send(qp_, &wr, &bad) != 0) {
    if (s.own_mr) {
      (void)engine_.memory().deregister(s.own_mr->key);
      s.own_mr = nullptr;
    }
    return make_error(ENOSPC, "cannot post the command SEND");
  }
  s.busy = true;
  s.done = false;
  return {};
}

Status NvmfRdmaHost::send_raw(std::span<const std::byte> capsule) {
  if (capsule.size() > raw_.size()) return make_error(EINVAL, "raw capsule too long");
  std::memcpy(raw_.data(), capsule.data(), capsule.size());
  ibv_sge sge{reinterpret_cast<std::uint64_t>(raw_.data()), static_cast<std::uint32_t>(capsule.size()),
              raw_mr_->lkey()};
  ibv_send_wr wr{};
  wr.wr_id = 0xFFFFFFFF;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  if (engine_.post_send(qp_, &wr, &bad) != 0) return make_error(ENOSPC, "cannot post the raw SEND");
  return {};
}

int NvmfRdmaHost::poll() {
  ibv_wc wcs[32];
  int total = 0;
  for (;;) {
    const int n = engine_.poll_cq(cq_, 32, wcs);
    if (n < 0) {
      fail("completion queue overrun");
      return total;
    }
    if (n == 0) return total;
    total += n;
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[i];
      if (wc.status != IBV_WC_SUCCESS) {
        fail(std::string("work request failed: ") + ibv_wc_status_str(wc.status));
        continue;
      }
      if (!(wc.wr_id & kRecvTag)) continue;  // a command SEND went out
      const auto idx = static_cast<std::uint32_t>(wc.wr_id & 0xFFFFFFFF);
      const std::byte* b = recv_.data() + std::size_t{idx} * kRecvStride;
      nv::Cqe cqe;
      std::memcpy(static_cast<void*>(&cqe), b, sizeof cqe);
      if (!post_recv(idx)) fail("cannot repost a receive");
      const std::uint16_t cid = cqe.cid.get();
      if (wc.byte_len != sizeof cqe || cid >= slots_.size() || !slots_[cid].busy || slots_[cid].done) {
        ++unmatched_;
        continue;
      }
      Slot& s = slots_[cid];
      s.done = true;
      push_completed(cid);
      s.completion = HostCompletion{};
      s.completion.cqe = cqe;
      if (wc.wc_flags & IBV_WC_WITH_INV) {
        s.completion.invalidated = true;
        s.completion.invalidated_rkey = wc.invalidated_rkey;
        s.completion.invalidated_expected_key = s.own_mr && s.own_mr->rkey() == wc.invalidated_rkey;
      }
    }
  }
}

void NvmfRdmaHost::push_completed(std::uint16_t cid) {
  const auto size = static_cast<std::uint32_t>(completed_.size());
  if (completed_count_ == size) {
    // Full only when callers also take() CIDs by hand: keep the entries whose CID still waits
    // (at most one per CID: a done CID is busy until taken, so it completes once).
    std::uint32_t kept = 0;
    for (std::uint32_t i = 0; i < completed_count_; ++i) {
      const std::uint16_t c = completed_[(completed_head_ + i) % size];
      bool seen = false;
      for (std::uint32_t k = 0; k < kept && !seen; ++k) seen = completed_[(completed_head_ + k) % size] == c;
      if (!seen && slots_[c].busy && slots_[c].done) completed_[(completed_head_ + kept++) % size] = c;
    }
    completed_count_ = kept;
    if (completed_count_ == size) return;  // every CID already listed, this one with them
  }
  completed_[(completed_head_ + completed_count_++) % size] = cid;
}

std::optional<std::uint16_t> NvmfRdmaHost::next_completed() {
  while (completed_count_ > 0) {
    const std::uint16_t cid = completed_[completed_head_];
    completed_head_ = (completed_head_ + 1) % static_cast<std::uint32_t>(completed_.size());
    --completed_count_;
    if (slots_[cid].busy && slots_[cid].done) return cid;
  }
  return std::nullopt;
}

std::optional<HostCompletion> NvmfRdmaHost::take(std::uint16_t cid) {
  if (cid >= slots_.size() || !slots_[cid].busy || !slots_[cid].done) return std::nullopt;
  Slot& s = slots_[cid];
  s.busy = false;
  s.done = false;
  if (s.own_mr) {
    (void)engine_.memory().deregister(s.own_mr->key);
    s.own_mr = nullptr;
  }
  return s.completion;
}

}  // namespace roce::nvmf
