#include "lib/nvmf/rdma_queue.hpp"

#include <cstring>

namespace roce::nvmf {

namespace nv = proto::nvme;

namespace {
enum class WrKind : std::uint64_t { Recv = 1, Read = 2, Write = 3, Send = 4 };
std::uint64_t wr_id(WrKind k, std::uint32_t index) { return static_cast<std::uint64_t>(k) << 56 | index; }
WrKind kind_of(std::uint64_t id) { return static_cast<WrKind>(id >> 56); }
std::uint32_t index_of(std::uint64_t id) { return static_cast<std::uint32_t>(id & 0xFFFFFFFF); }
}  // namespace

NvmfRdmaQueue::NvmfRdmaQueue(Target& target, rdma::Engine& engine, rdma::PdHandle pd, rdma::QueuePair* qp, rdma::CompletionQueue* cq,
                             QueueConfig cfg)
    : engine_(engine), pd_(pd), qp_(qp), cq_(cq), queue_(target, cfg),
      recv_stride_(static_cast<std::uint32_t>(nv::kSqeSize) + cfg.inline_size) {}

NvmfRdmaQueue::~NvmfRdmaQueue() {
  // The QP outlives this object (its owner destroys it): in the error state it neither places
  // a frame into our receive buffers nor sends from our data buffers again.
  teardown("queue destroyed");
  for (const rdma::MemoryRegion* mr : {recv_mr_, data_mr_, resp_mr_})
    if (mr) (void)engine_.memory().deregister(mr->key);
  for (const NamespaceRegion& r : ns_regions_) (void)engine_.memory().deregister(r.mr->key);
}

Result<std::unique_ptr<NvmfRdmaQueue>> NvmfRdmaQueue::create(Target& target, rdma::Engine& engine, rdma::PdHandle pd,
                                                             rdma::QueuePair* qp, rdma::CompletionQueue* cq, QueueConfig cfg) {
  if (!qp || !cq) return make_error(EINVAL, "NVMe/RDMA queue needs a QP and a CQ");
  if (qp->type() != IBV_QPT_RC) return make_error(EINVAL, "NVMe/RDMA needs an RC QP");
  std::unique_ptr<NvmfRdmaQueue> q(new NvmfRdmaQueue(target, engine, pd, qp, cq, cfg));
  if (auto s = q->start(); !s) return s.error();
  return q;
}

Status NvmfRdmaQueue::start() {
  const std::uint32_t depth = queue_.config().depth;
  recv_buf_.assign(std::size_t{depth} * recv_stride_, std::byte{0});
  backlog_.assign(depth, {0, 0});  // at most every receive
  responses_.assign(2u * depth, nv::Cqe{});  // one per command slot
  ns_regions_.reserve(kNamespaceRegions);
  rdma::MrTable& mrs = engine_.memory();
  auto r = mrs.register_region(pd_, recv_buf_.data(), recv_buf_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!r) return r.error();
  recv_mr_ = *r;
  auto pool = queue_.data_pool();
  auto d = mrs.register_region(pd_, pool.data(), pool.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!d) return d.error();
  data_mr_ = *d;
  auto c = mrs.register_region(pd_, responses_.data(), responses_.size() * sizeof(nv::Cqe), IBV_ACCESS_LOCAL_WRITE);
  if (!c) return c.error();
  resp_mr_ = *c;
  for (std::uint32_t i = 0; i < depth; ++i)
    if (!post_recv(i)) return make_error(ENOMEM, "cannot post " + std::to_string(depth) + " receives on QP " +
                                                     std::to_string(qp_->qpn()) + " (max_recv_wr too small?)");
  return {};
}

bool NvmfRdmaQueue::post_recv(std::uint32_t index) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(recv_buf_.data() + std::size_t{index} * recv_stride_), recv_stride_,
              recv_mr_->lkey()};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id(WrKind::Recv, index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return engine_.post_recv(qp_, &wr, &bad) == 0;
}

std::uint32_t NvmfRdmaQueue::data_lkey(CommandSlot& s) {
  if (!s.zero_copy) return data_mr_->lkey();
  const std::uint64_t id = s.zero_copy->id();
  for (const NamespaceRegion& r : ns_regions_)
    if (r.ns_id == id) return r.mr->lkey();
  if (ns_regions_.size() == kNamespaceRegions) {
    // Room for another namespace: the oldest region no slot in flight uses goes (it may be of
    // a namespace long removed: ids are never reused, so nothing finds it again).
    for (std::size_t i = 0; i < ns_regions_.size(); ++i) {
      bool used = false;
      for (std::uint32_t k = 0; k < 2u * queue_.config().depth && !used; ++k) {
        const CommandSlot& o = queue_.slot(k);
        used = o.zero_copy && o.zero_copy->id() == ns_regions_[i].ns_id;
      }
      if (used) continue;
      (void)engine_.memory().deregister(ns_regions_[i].mr->key);
      ns_regions_.erase(ns_regions_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  const std::span<std::byte> mem = s.zero_copy->memory();
  if (ns_regions_.size() < kNamespaceRegions) {
    auto r = engine_.memory().register_region(pd_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
    if (r) {
      ns_regions_.push_back(NamespaceRegion{id, *r});
      return (*r)->lkey();
    }
  }
  queue_.drop_zero_copy(s);
  return data_mr_->lkey();
}

void NvmfRdmaQueue::teardown(const std::string& why) {
  if (torn_down_) return;
  torn_down_ = true;
  queue_.fail(why);
  queue_.disconnect();
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  (void)engine_.modify_qp(qp_, a, IBV_QP_STATE);
  // In the error state the QP touches no slot's data again: zero-copy namespaces are let go.
  queue_.release_transfers();
}

void NvmfRdmaQueue::act(const Step& step, Nanos now) {
  (void)now;
  CommandSlot* s = step.slot;
  ibv_send_wr* bad = nullptr;
  switch (step.next) {
    case NextStep::FetchData: {
      const std::uint32_t lkey = data_lkey(*s);
      ibv_sge sge{reinterpret_cast<std::uint64_t>(s->data.data()), s->length, lkey};
      ibv_send_wr wr{};
      wr.wr_id = wr_id(WrKind::Read, s->index);
      wr.opcode = IBV_WR_RDMA_READ;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = s->remote_addr;
      wr.wr.rdma.rkey = s->rkey;
      if (engine_.post_send(qp_, &wr, &bad) != 0) teardown("cannot post RDMA READ");
      return;
    }
    case NextStep::Respond: {
      responses_[s->index] = s->cqe;
      const std::uint32_t lkey = s->to_host_length > 0 ? data_lkey(*s) : 0;
      ibv_sge data{reinterpret_cast<std::uint64_t>(s->data.data()), s->to_host_length, lkey};
      ibv_sge resp{reinterpret_cast<std::uint64_t>(&responses_[s->index]), sizeof(nv::Cqe), resp_mr_->lkey()};
      ibv_send_wr send{};
      send.wr_id = wr_id(WrKind::Send, s->index);
      send.opcode = s->invalidate ? IBV_WR_SEND_WITH_INV : IBV_WR_SEND;
      send.invalidate_rkey = s->rkey;
      send.sg_list = &resp;
      send.num_sge = 1;
      send.send_flags = IBV_SEND_SIGNALED;
      ibv_send_wr write{};
      ibv_send_wr* first = &send;
      if (s->to_host_length > 0) {
        write.wr_id = wr_id(WrKind::Write, s->index);
        write.opcode = IBV_WR_RDMA_WRITE;
        write.sg_list = &data;
        write.num_sge = 1;
        write.wr.rdma.remote_addr = s->remote_addr;
        write.wr.rdma.rkey = s->rkey;
        write.next = &send;
        first = &write;
      }
      if (engine_.post_send(qp_, first, &bad) != 0) teardown("cannot post the response");
      return;
    }
    case NextStep::Hold: return;
    case NextStep::Fatal: teardown(queue_.failure()); return;
  }
}

void NvmfRdmaQueue::take_capsule(std::uint32_t idx, std::uint32_t length, Nanos now) {
  const proto::ByteSpan capsule(recv_buf_.data() + std::size_t{idx} * recv_stride_, length);
  const Step st = queue_.on_capsule(capsule, now);
  // The capsule was copied into its slot: the receive can take the next one.
  if (st.next != NextStep::Fatal && !post_recv(idx)) {
    teardown("cannot repost a receive");
    return;
  }
  act(st, now);
}

int NvmfRdmaQueue::poll(Nanos now) {
  if (torn_down_) return 0;
  ibv_wc wcs[32];
  int total = 0;
  for (;;) {
    const int n = engine_.poll_cq(cq_, 32, wcs);
    if (n < 0) {
      teardown("completion queue overrun");
      return total;
    }
    if (n == 0) break;
    total += n;
    for (int i = 0; i < n && !torn_down_; ++i) {
      const ibv_wc& wc = wcs[i];
      if (wc.status != IBV_WC_SUCCESS) {
        ++rdma_errors_;
        teardown(std::string("work request failed: ") + ibv_wc_status_str(wc.status));
        break;
      }
      const std::uint32_t idx = index_of(wc.wr_id);
      switch (kind_of(wc.wr_id)) {
        case WrKind::Recv:
          if (!queue_.has_free_slot() || backlog_count_ > 0) {
            backlog_[(backlog_head_ + backlog_count_++) % backlog_.size()] = {idx, wc.byte_len};
            ++backlogged_;
          } else {
            take_capsule(idx, wc.byte_len, now);
          }
          break;
        case WrKind::Read: act(queue_.on_data_fetched(queue_.slot(idx), true, now), now); break;
        case WrKind::Send:
          queue_.on_response_sent(queue_.slot(idx));
          while (!torn_down_ && backlog_count_ > 0 && queue_.has_free_slot()) {
            const auto next = backlog_[backlog_head_];
            backlog_head_ = (backlog_head_ + 1) % backlog_.size();
            --backlog_count_;
            take_capsule(next.first, next.second, now);
          }
          break;
        case WrKind::Write: break;
      }
    }
  }
  // Commands that waited for an overlapping zero-copy transfer, and held commands an event
  // completed (AERs), go out like any response.
  if (!torn_down_) queue_.retry_waiting(now);
  while (!torn_down_)
    if (CommandSlot* s = queue_.pop_ready())
      act(Step{NextStep::Respond, s}, now);
    else
      break;
  if (!torn_down_ && queue_.failed()) teardown(queue_.failure());
  return total;
}

}  // namespace roce::nvmf
