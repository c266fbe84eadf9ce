// libFuzzer target for the whole receive path: parser, engine dispatch, responder and
// completer, with an RC, a UC and a UD QP set up in one engine (fuzz_receive_world.hpp) and
// requests of our own outstanding. Each input is a burst of frames; after each frame the engine
// transmits and its timers run, and at the end time runs on until every retry is spent.
// Invariants besides ASan/UBSan: no byte outside the registered regions (guard bands) and no
// byte of the read-only region changes; QPs never leave RTS except for ERR (SQE for UC/UD);
// the shared receive queue never hands out a receive twice;
// every completion is for a WR we posted, at most once, with a valid status, and a QP in ERR
// has completed every send WR; every frame the engine sends parses, with a good ICRC, to the peer.
// Build and run: scripts/fuzz.sh.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "lib/rdma/engine.hpp"
#include "lib/rdma/verbs_ext.hpp"
#include "protocol/builder.hpp"
#include "protocol/parser.hpp"
#include "protocol/psn.hpp"
#include "tests/lib/rdma/fuzz_receive_world.hpp"

namespace roce::fuzz {
namespace {

using namespace roce::proto;

constexpr std::size_t kGuard = 128;
constexpr std::size_t kRegionBytes = 8192;
enum Region : std::size_t { Exposed, ReadOnly, Local, kRegions };
enum QpIndex : std::size_t { Rc, Uc, Ud, kQps };
constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::uint32_t kRecvBytes = 2048;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_receive invariant violated: %s\n", what);
  std::abort();
}

#define FUZZ_CHECK(cond)          \
  do {                            \
    if (!(cond)) fail(#cond);     \
  } while (0)

constexpr std::size_t kAnySrqQp = 99;  // a receive posted to the SRQ: UC or UD may take it

struct Posted {
  std::size_t qp;
  bool recv;
  ibv_wc_opcode opcode;  // what a successful completion says
  bool done = false;     // (an unsignaled WR counts as done unless it completes with an error)
};

class World {
 public:
  World() : mrs_(16), arena_(kGuard + kRegions * (kRegionBytes + kGuard)) {
    for (std::size_t i = 0; i < arena_.size(); ++i) arena_[i] = static_cast<std::byte>(0x5A ^ (i * 13));
    initial_ = arena_;
    rdma::EngineConfig cfg;
    cfg.path.local.mac = kOurMac;
    cfg.path.local.ip = rdma::IpAddress::ipv4(kOurIp);
    cfg.path.resolve_mac = [](const rdma::IpAddress&) -> std::optional<MacAddr> { return kPeerMac; };
    cfg.max_qps = 4;
    engine_ = std::make_unique<rdma::Engine>(cfg, mrs_);
    const rdma::PdHandle pd = engine_->alloc_pd();
    const int access[kRegions] = {kAll | rdma::kAccessFlushGlobal | IBV_ACCESS_MW_BIND, IBV_ACCESS_REMOTE_READ,
                                  IBV_ACCESS_LOCAL_WRITE};
    for (std::size_t r = 0; r < kRegions; ++r) mr_[r] = *mrs_.register_region(pd, region(r), kRegionBytes, access[r]);
    cq_ = *engine_->create_cq(256);
    srq_ = *engine_->create_srq(pd, ibv_srq_attr{8, 2, 2});
    const ibv_qp_type types[kQps] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
    for (std::size_t q = 0; q < kQps; ++q) {
      rdma::QpInit init;
      init.type = types[q];
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.cap = ibv_qp_cap{16, 16, 2, 2, 64};
      if (q != Rc) init.srq = srq_;
      qp_[q] = *engine_->create_qp(pd, init);
      bring_up(q);
    }
    bind_windows(pd);
    post_requests();
    for (int i = 0; i < 2; ++i) post_recv(Rc, i * kRecvBytes);
    for (int i = 2; i < 6; ++i) post_recv(kAnySrqQp, static_cast<std::size_t>(i % 4) * kRecvBytes);
    pump();
    for (std::size_t k = 0; k < 2; ++k) window_[k] = mrs_.find(window_key_[k]);
    FUZZ_CHECK(window_[0] && window_[1]);  // both binds were done
  }

  void deliver(ByteSpan frame) {
    engine_->receive(frame, now_);
    pump();
    now_ += 50 * kMicro;
    engine_->advance(now_);
    pump();
  }

  // Runs time forward until the timers have nothing left to do (retries spent or all answered).
  void settle() {
    for (int i = 0; i < 64; ++i) {
      const Nanos d = engine_->next_deadline();
      if (d == kNever) break;
      now_ = std::max(now_ + kMicro, d);
      engine_->advance(now_);
      pump();
    }
  }

  void check() {
    for (std::size_t g = 0; g <= kRegions; ++g) {
      const std::size_t off = g * (kRegionBytes + kGuard);
      FUZZ_CHECK(std::memcmp(arena_.data() + off, initial_.data() + off, kGuard) == 0);  // a guard band changed
    }
    FUZZ_CHECK(std::memcmp(region(ReadOnly), initial_.data() + (region(ReadOnly) - arena_.data()), kRegionBytes) == 0);
    for (std::size_t q = 0; q < kQps; ++q) {
      const rdma::QpState s = qp_[q]->state();
      const bool sqe_ok = q != Rc && s == rdma::QpState::Sqe;
      FUZZ_CHECK(s == rdma::QpState::Rts || s == rdma::QpState::Err || sqe_ok);
    }
    ibv_wc wc[32];
    for (int n; (n = engine_->poll_cq(cq_, 32, wc)) > 0;) {
      for (int i = 0; i < n; ++i) check_completion(wc[i]);
    }
    // A QP in ERR has flushed everything it owed.
    for (const auto& [id, p] : posted_)
      if (!p.recv && qp_[p.qp]->state() == rdma::QpState::Err) FUZZ_CHECK(p.done);
  }

 private:
  std::byte* region(std::size_t r) { return arena_.data() + kGuard + r * (kRegionBytes + kGuard); }

  void bring_up(std::size_t q) {
    rdma::QueuePair* qp = qp_[q];
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (q == Ud) {
      a.qkey = kQkey;
      mask |= IBV_QP_QKEY;
    } else {
      a.qp_access_flags = kAll | (q == Rc ? rdma::kAccessFlushGlobal : 0);
      mask |= IBV_QP_ACCESS_FLAGS;
    }
    FUZZ_CHECK(engine_->modify_qp(qp, a, mask).ok());
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    mask = IBV_QP_STATE;
    if (q != Ud) {
      a.path_mtu = IBV_MTU_1024;
      a.dest_qp_num = kPeerQpn;
      a.rq_psn = kRqPsn;
      a.ah_attr.is_global = 1;
      a.ah_attr.grh.dgid = rdma::gid_from_ip(rdma::IpAddress::ipv4(kPeerIp));
      mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (q == Rc) {
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer = 1;
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      }
    }
    FUZZ_CHECK(engine_->modify_qp(qp, a, mask).ok());
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = kSqPsn;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (q == Rc) {
      a.timeout = 10;
      a.retry_cnt = 3;
      a.rnr_retry = 3;
      a.max_rd_atomic = 4;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    FUZZ_CHECK(engine_->modify_qp(qp, a, mask).ok());
  }

  void post_send(std::size_t q, ibv_wr_opcode op, ibv_wc_opcode wc_op, std::size_t local_off, std::uint32_t len) {
    ibv_sge g{reinterpret_cast<std::uint64_t>(region(Local) + local_off), len, mr_[Local]->lkey()};
    ibv_send_wr wr{};
    wr.wr_id = next_wr_id_++;
    wr.opcode = op;
    wr.sg_list = &g;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = 0x7000'0000'0000ull;
    wr.wr.rdma.rkey = 0x4242;
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = 0x7000'0000'0000ull;
      wr.wr.atomic.rkey = 0x4242;
      wr.wr.atomic.compare_add = 1;
    }
    ibv_send_wr* bad = nullptr;
    FUZZ_CHECK(engine_->post_send(qp_[q], &wr, &bad) == 0);
    posted_[wr.wr_id] = Posted{q, false, wc_op};
  }

  void post_requests() {
    post_send(Rc, IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, kWriteBytes);
    post_send(Rc, IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, 0, kReadBytes);
    post_send(Rc, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD, kRegionBytes - 8, 8);
    post_send(Rc, IBV_WR_SEND, IBV_WC_SEND, 0, kSendBytes);
    post_send(Rc, IBV_WR_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE, 64, 8);
    ibv_send_wr fl = rdma::flush_wr(next_wr_id_++, 0x4242, 0x7000'0000'0000ull, 4096, rdma::kFlushGlobal, rdma::kFlushRange);
    ibv_send_wr* bad = nullptr;
    FUZZ_CHECK(engine_->post_send(qp_[Rc], &fl, &bad) == 0);
    posted_[fl.wr_id] = Posted{Rc, false, rdma::kWcFlush};
    post_send(Uc, IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, 1500);
  }

  // A type 1 window over the exposed region's first half, a type 2 one over its second half,
  // both bound through the RC QP (unsignaled: they complete only if they fail).
  void bind_windows(rdma::PdHandle pd) {
    ibv_mr h{};
    h.lkey = mr_[Exposed]->lkey();
    for (std::size_t k = 0; k < 2; ++k) {
      rdma::MemoryWindow* mw = *engine_->alloc_mw(pd, k == 0 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
      ibv_send_wr wr{};
      wr.wr_id = next_wr_id_++;
      wr.opcode = IBV_WR_BIND_MW;
      wr.bind_mw.mw = &mw->base;
      wr.bind_mw.rkey = rdma::next_window_key(mw->base.rkey);
      wr.bind_mw.bind_info.mr = &h;
      wr.bind_mw.bind_info.addr = mr_[Exposed]->iova + k * (kRegionBytes / 2);
      wr.bind_mw.bind_info.length = kRegionBytes / 2;
      wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
      ibv_send_wr* bad = nullptr;
      FUZZ_CHECK(engine_->post_send(qp_[Rc], &wr, &bad) == 0);
      window_key_[k] = wr.bind_mw.rkey;
      posted_[wr.wr_id] = Posted{Rc, false, IBV_WC_BIND_MW, true};  // unsignaled: done unless it fails
    }
  }

  void post_recv(std::size_t q, std::size_t local_off) {
    ibv_sge g{reinterpret_cast<std::uint64_t>(region(Local) + local_off), kRecvBytes, mr_[Local]->lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = next_wr_id_++;
    wr.sg_list = &g;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (q == kAnySrqQp)
      FUZZ_CHECK(engine_->post_srq_recv(srq_, &wr, &bad) == 0);
    else
      FUZZ_CHECK(engine_->post_recv(qp_[q], &wr, &bad) == 0);
    posted_[wr.wr_id] = Posted{q, true, IBV_WC_RECV};
  }

  void pump() {
    for (int round = 0; round < 64; ++round) {
      rdma::TxFrame frames[8];
      for (std::size_t i = 0; i < 8; ++i) frames[i] = rdma::TxFrame{tx_[i], sizeof tx_[i], 0};
      const std::size_t n = engine_->transmit(frames, now_);
      for (std::size_t i = 0; i < n; ++i) check_output(ByteSpan{frames[i].data, frames[i].length});
      if (n < 8) return;
    }
  }

  void check_output(ByteSpan f) {
    Packet p;
    FUZZ_CHECK(parse_frame(f, {}, p) == ParseError::None);
    FUZZ_CHECK(p.icrc_status == IcrcStatus::Ok);
    FUZZ_CHECK(p.ipv4.src == kOurIp);
    FUZZ_CHECK(p.ipv4.dst == kPeerIp);
    FUZZ_CHECK(p.dest_qp() == kPeerQpn);
    FUZZ_CHECK(p.payload_length <= kPmtu);
  }

  void check_completion(const ibv_wc& wc) {
    FUZZ_CHECK(wc.status <= IBV_WC_TM_RNDV_INCOMPLETE);
    const auto it = posted_.find(wc.wr_id);
    FUZZ_CHECK(it != posted_.end());  // a completion for a WR nobody posted
    Posted& p = it->second;
    FUZZ_CHECK(!p.done || (p.opcode == IBV_WC_BIND_MW && wc.status != IBV_WC_SUCCESS));  // completed twice
    p.done = true;
    if (p.qp == kAnySrqQp)
      FUZZ_CHECK(wc.qp_num == qp_[Uc]->qpn() || wc.qp_num == qp_[Ud]->qpn());
    else
      FUZZ_CHECK(wc.qp_num == qp_[p.qp]->qpn());
    if (wc.status != IBV_WC_SUCCESS) return;  // the opcode of an error completion is undefined
    if (p.recv) {
      FUZZ_CHECK(wc.opcode == IBV_WC_RECV || wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
      if (wc.opcode == IBV_WC_RECV) FUZZ_CHECK(wc.byte_len <= kRecvBytes);
    } else {
      FUZZ_CHECK(wc.opcode == p.opcode);
    }
  }

  rdma::MrTable mrs_;
  std::vector<std::byte> arena_;
  std::vector<std::byte> initial_;
  std::unique_ptr<rdma::Engine> engine_;
  const rdma::MemoryRegion* mr_[kRegions] = {};
  rdma::CompletionQueue* cq_ = nullptr;
  rdma::SharedReceiveQueue* srq_ = nullptr;
  rdma::QueuePair* qp_[kQps] = {};
  std::uint32_t window_key_[2] = {};
  const rdma::MemoryRegion* window_[2] = {};
  std::map<std::uint64_t, Posted> posted_;
  std::uint64_t next_wr_id_ = 1;
  Nanos now_ = 0;
  std::byte tx_[8][kMaxFrame];

 public:
  std::uint32_t qpn(std::size_t q) const { return qp_[q]->qpn(); }
  const rdma::MemoryRegion* mr(std::size_t r) const { return mr_[r]; }
  const rdma::MemoryRegion* window(std::size_t k) const { return window_[k]; }
};

// Aims a parsed frame at the world (see fuzz_receive_world.hpp). False: leave it as it came.
bool retarget(const World& w, ByteSpan in, std::uint8_t flags, std::vector<std::byte>& out) {
  ParseOptions opts;
  opts.verify_icrc = false;
  Packet p;
  if (parse_frame(in, opts, p) != ParseError::None) return false;
  FrameSpec s = frame_spec_from(p);
  s.validate = false;
  s.with_ethernet = true;
  s.eth.dst = kOurMac;
  s.eth.src = kPeerMac;
  s.ip_version = IpVersion::V4;
  s.ipv4.src = kPeerIp;
  s.ipv4.dst = kOurIp;
  s.bth.pkey.set(Bth::kDefaultPkey);
  const Transport t = p.info->transport;
  const std::size_t q = t == Transport::Uc ? Uc : t == Transport::Ud ? Ud : Rc;
  s.bth.dest_qp.set(w.qpn(q));
  const std::uint32_t base = p.info->is_request ? kRqPsn : kSqPsn;
  s.bth.psn.set(psn_add(base, static_cast<std::int32_t>(p.psn() & kPsnMask)));
  if (p.info->has(ExtHeader::Deth)) s.ext.deth.qkey.set(kQkey);
  if (flags & kMapRkeys) {
    auto map = [&](Be32& rkey, Be64& va) {
      const std::uint32_t pick = rkey.get() % 4;
      const rdma::MemoryRegion* mr = pick < 2 ? w.mr(pick == 1 ? ReadOnly : Exposed) : w.window(pick - 2);
      va.set(mr->iova + va.get() % (mr->length + 64));  // a little past the end, on purpose
      rkey.set(mr->key);
    };
    if (p.info->has(ExtHeader::Reth)) map(s.ext.reth.rkey, s.ext.reth.va);
    if (p.info->has(ExtHeader::AtomicEth)) map(s.ext.atomic.rkey, s.ext.atomic.va);
  }
  out.resize(p.payload.size() + 256);
  const FrameLayout l = build_frame(s, p.payload, out, CrcBackend::Isal);
  if (!l.ok()) return false;
  out.resize(l.length);
  return true;
}

}  // namespace
}  // namespace roce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace roce::fuzz;
  if (size < 1) return 0;
  const std::uint8_t flags = data[0];
  std::size_t pos = 1;
  World w;
  std::vector<std::byte> aimed;
  for (int frames = 0; frames < 64 && pos + 2 <= size; ++frames) {
    const std::size_t len = std::min<std::size_t>(data[pos] | (data[pos + 1] << 8), size - pos - 2);
    const roce::proto::ByteSpan raw{reinterpret_cast<const std::byte*>(data + pos + 2), len};
    pos += 2 + len;
    if ((flags & kRetarget) && retarget(w, raw, flags, aimed))
      w.deliver(aimed);
    else
      w.deliver(raw);
    w.check();
  }
  w.settle();
  w.check();
  return 0;
}
