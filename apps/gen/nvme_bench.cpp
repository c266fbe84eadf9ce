#include "apps/gen/nvme_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <cxxopts.hpp>
#include <map>
#include <memory>
#include <random>

#include "client/cli.hpp"
#include "client/connector.hpp"
#include "client/runtime.hpp"
#include "apps/gen/nvme_pattern.hpp"
#include "apps/gen/nvme_remote.hpp"
#include "apps/gen/nvme_target_lcore.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/ring_port.hpp"
#include "lib/nvmf/rdma_host.hpp"
#include "lib/nvmf/rdma_queue.hpp"
#include "lib/rdma/qp_bring_up.hpp"
#include "lib/util/json_writer.hpp"
#include "netsim/link_emulator.hpp"

namespace roce::client {

namespace nv = proto::nvme;
using nvmf::HostCompletion;
using nvmf::NvmfRdmaHost;
using nvmf::NvmfRdmaQueue;
using nvmf::SglMode;

namespace {

constexpr char kUsage[] =
    "NVMe-oF initiator against an in-process NVMe-oF target over a net_ring pair";
constexpr char kSubNqn[] = "nqn.2026-12.io.rocev2-dp:bench";
constexpr char kHostNqn[] = "nqn.2014-08.org.nvmexpress:uuid:roce-gen";

}  // namespace

Result<NvmeBenchOptions> parse_nvme_bench_options(const std::vector<std::string>& args) {
  NvmeBenchOptions o;
  const std::string mode = args.size() > 1 ? args[1] : "";
  if (mode == "nvme-read") o.workload = NvmeWorkload::Read;
  else if (mode == "nvme-write") o.workload = NvmeWorkload::Write;
  else if (mode == "nvme-randrw") o.workload = NvmeWorkload::RandRw, o.random = true;
  else return make_error(EINVAL, "unknown NVMe mode '" + mode + "' (nvme-read, nvme-write, nvme-randrw)");
  cxxopts::Options opts("roce-gen " + mode, kUsage);
  opts.custom_help("[EAL args --] " + mode + " [--bs 4k] [--qd 16] [--queues 1] [--time 2] [--rw seq|rand] [--verify]");
  std::string bs = "4k", rw = "seq", ns = "64";
  unsigned qd = 16, queues = 1;
  opts.add_options()
      ("bs", "block size of each command (bytes; k and m suffixes), a multiple of the LBA size", cxxopts::value<std::string>(bs)->default_value("4k"))
      ("qd", "commands in flight per I/O queue", cxxopts::value<unsigned>(qd)->default_value("16"))
      ("queues", "I/O queues, each on its own QP", cxxopts::value<unsigned>(queues)->default_value("1"))
      ("time", "seconds to run", cxxopts::value<double>(o.seconds)->default_value("2"))
      ("rw", "offsets: seq (each queue walks its own share) or rand (nvme-randrw: always rand)", cxxopts::value<std::string>(rw)->default_value("seq"))
      ("rwmix", "nvme-randrw: percent of commands that read", cxxopts::value<unsigned>(o.read_percent)->default_value("50"))
      ("size", "namespace size in MiB (memory-backed)", cxxopts::value<std::string>(ns)->default_value("64"))
      ("file", "back the namespace with this file (created, sized to --size) instead of memory", cxxopts::value<std::string>(o.file))
      ("lba", "LBA size: 512 or 4096", cxxopts::value<std::uint32_t>(o.lba_size)->default_value("512"))
      ("verify", "check every read against what was written (each command slot owns its own LBAs)")
      ("seed", "seed of the random offsets and of the link's faults", cxxopts::value<std::uint64_t>(o.seed)->default_value("1"))
      ("loss", "probability a frame is lost, each way (link emulator between the two)", cxxopts::value<double>(o.loss)->default_value("0"))
      ("dup", "probability a frame arrives twice, each way", cxxopts::value<double>(o.duplicate)->default_value("0"))
      ("reorder", "probability a frame is held back 100 us, each way", cxxopts::value<double>(o.reorder)->default_value("0"))
      ("lcores", "1: initiator and target stepped by one thread; 2: the target on a worker lcore of its own, the initiator on the main one", cxxopts::value<unsigned>(o.lcores)->default_value("2"))
      ("baseline", "also measure RDMA WRITE goodput (same size, depth, queues, time) and print IOPS x bs against it")
      ("json", "print the result as JSON")
      ("target", "a remote NVMe/RDMA target's IPv4 or IPv6 address: connect to it through rdma_cm instead of running one here", cxxopts::value<std::string>(o.target))
      ("trsvcid", "--target: its rdma_cm port", cxxopts::value<std::uint16_t>(o.trsvcid)->default_value("4420"))
      ("nqn", "--target: the subsystem NQN to connect to", cxxopts::value<std::string>(o.nqn))
      ("dev", "--target: our DPDK port (name or number)", cxxopts::value<std::string>(o.dev))
      ("vdev", "--target: create a DPDK virtual device first (repeatable)", cxxopts::value<std::vector<std::string>>(o.vdevs))
      ("ip", "--target: our IPv4 or IPv6 address on that port", cxxopts::value<std::string>(o.ip))
      ("timeout", "--target: seconds each set-up step and the last commands may take", cxxopts::value<double>(o.timeout_s)->default_value("10"))
      ("selective-repeat", std::string("the in-process target's QPs run it with this window; --target: ") + kSelectiveRepeatHelp,
       cxxopts::value<std::uint32_t>(o.selective_repeat)->default_value(std::to_string(kDefaultSelectiveRepeatWindow)))
      ("h,help", "this text");
  std::vector<std::string> rest{args.empty() ? "roce-gen" : args[0]};
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    // fio spells options with one dash: -bs 4k, -qd 32, -time 5.
    rest.push_back(a.size() > 2 && a[0] == '-' && a[1] != '-' ? "-" + a : a);
  }
  auto parsed = parse_cli(opts, rest);
  if (!parsed) return parsed.error();
  const cxxopts::ParseResult& r = *parsed;
  if (r.count("help")) {
    o.help = true;
    o.help_text = opts.help();
    return o;
  }
  if (!r.unmatched().empty()) return make_error(EINVAL, "unexpected argument '" + r.unmatched().front() + "'");
  if (o.lba_size != 512 && o.lba_size != 4096) return make_error(EINVAL, "--lba must be 512 or 4096");
  const auto b = parse_size(bs);
  if (!b || *b == 0 || *b % o.lba_size || *b > 128 * 1024)
    return make_error(EINVAL, "--bs '" + bs + "': a multiple of the LBA size (" + std::to_string(o.lba_size) + ") up to 128k");
  o.block_size = static_cast<std::uint32_t>(*b);
  if (qd == 0 || qd > 64) return make_error(EINVAL, "--qd must be 1..64");
  if (queues == 0 || queues > 8) return make_error(EINVAL, "--queues must be 1..8");
  o.queue_depth = static_cast<std::uint16_t>(qd);
  o.queues = static_cast<std::uint16_t>(queues);
  if (!(o.seconds > 0) || o.seconds > 3600) return make_error(EINVAL, "--time must be in (0, 3600] seconds");
  if (rw == "rand") o.random = true;
  else if (rw != "seq") return make_error(EINVAL, "--rw must be seq or rand");
  if (o.lcores != 1 && o.lcores != 2) return make_error(EINVAL, "--lcores must be 1 or 2");
  if (o.read_percent > 100) return make_error(EINVAL, "--rwmix is a percentage");
  const auto mib = parse_size(ns);
  if (!mib || *mib == 0 || *mib > 4096) return make_error(EINVAL, "--size must be 1..4096 MiB");
  o.namespace_mib = *mib;
  const std::uint64_t slots = std::uint64_t{o.queues} * o.queue_depth;
  if (o.namespace_mib * 1024 * 1024 < slots * o.block_size)
    return make_error(EINVAL, "--size too small for every command slot to own a block");
  for (double p : {o.loss, o.duplicate, o.reorder})
    if (!(p >= 0 && p < 1)) return make_error(EINVAL, "--loss, --dup and --reorder are probabilities in [0, 1)");
  o.verify = r.count("verify") > 0;
  o.baseline = r.count("baseline") > 0;
  if (!o.target.empty()) {
    if (o.nqn.empty()) return make_error(EINVAL, "--target needs --nqn: the subsystem to connect to");
    if (o.dev.empty() || o.ip.empty()) return make_error(EINVAL, "--target needs --dev and --ip: our DPDK port and address");
    if (o.baseline || o.loss > 0 || o.duplicate > 0 || o.reorder > 0 || !o.file.empty() || r.count("lba") || r.count("lcores"))
      return make_error(EINVAL, "--baseline, --loss, --dup, --reorder, --file, --lba and --lcores are for the in-process target, not --target (the target's namespace gives the LBA size)");
    if (!(o.timeout_s > 0)) return make_error(EINVAL, "--timeout must be positive");
  } else if (!o.nqn.empty() || !o.dev.empty() || !o.ip.empty() || !o.vdevs.empty() || r.count("trsvcid")) {
    return make_error(EINVAL, "--nqn, --trsvcid, --dev, --vdev and --ip need --target");
  }
  if (!valid_selective_repeat_window(o.selective_repeat))
    return make_error(EINVAL, "--selective-repeat takes 0 (go-back-N) or a power of two from 8 to 128, not " + std::to_string(o.selective_repeat));
  o.json = r.count("json") > 0;
  return o;
}

namespace {

struct Side {
  rdma::Engine* engine;
  rdma::PdHandle pd;
};

Result<std::pair<rdma::QueuePair*, rdma::CompletionQueue*>> make_qp(Side& s, std::uint32_t depth) {
  auto cq = s.engine->create_cq(8 * depth + 16);
  if (!cq) return cq.error();
  rdma::QpInit init;
  init.send_cq = *cq;
  init.recv_cq = *cq;
  // Two send SGEs: the host gathers a command's SQE and its in-capsule data in one SEND.
  init.cap = ibv_qp_cap{4 * depth + 8, 2 * depth + 8, 2, 1, 64};
  auto qp = s.engine->create_qp(s.pd, init);
  if (!qp) return qp.error();
  return std::pair{*qp, *cq};
}

// `selective_repeat`: both ends are ours, so both take the window (docs/loss.md, part 2); 0: go-back-N.
Status bring_up(Side& me, rdma::QueuePair* qp, const rdma::IpAddress& peer_ip, std::uint32_t peer_qpn, std::uint32_t my_psn,
                std::uint32_t peer_psn, std::uint32_t selective_repeat) {
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  rdma::PeerPath path;
  path.mtu = IBV_MTU_4096;
  path.dest_qpn = peer_qpn;
  path.rq_psn = peer_psn;
  path.dgid = rdma::gid_from_ip(peer_ip);
  path.max_dest_rd_atomic = 16;
  // Local ACK timeout 18 (about 1.07 s, eight tries: 8.6 s) rather than the usual 14 (67 ms,
  // 0.54 s): with the two sides on two threads of a busy machine, one may get no CPU (or sit in
  // a file namespace's fdatasync) for half a second while the other's timer runs. Losses are
  // still resent after a few round trips by the early retransmission, which uses no retries.
  if (Status s = rdma::modify_to_init(*me.engine, qp, IBV_QPT_RC, kAccess, 0); !s) return s;
  if (Status s = qp->set_selective_repeat(selective_repeat); !s) return s;  // before RTR
  return rdma::modify_to_rts(*me.engine, qp, IBV_QPT_RC, path, rdma::SendSide{my_psn, 18, 7, 7, 16});
}

std::unique_ptr<dp::Dataplane> make_dp(const std::string& name, std::uint16_t port, proto::Ipv4Addr ip,
                                       std::uint32_t mbufs) {
  dp::DataplaneOptions o;
  o.name = name;
  o.port.name = std::to_string(port);
  o.ip = rdma::IpAddress::ipv4(ip);
  o.mbufs = mbufs;
  o.engine.max_inline = 64;
  auto d = dp::Dataplane::create(o);
  if (!d) {
    std::fprintf(stderr, "roce-gen: %s\n", d.error().message.c_str());
    return nullptr;
  }
  return std::move(*d);
}

// CPU time of the calling thread: on a machine shared with other work the wall-clock ratio
// swings with what else runs; the ratio of work per CPU second is what dedicated cores would
// show.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

class Bench {
 public:
  Bench(const NvmeBenchOptions& o, dp::Dataplane& ini, dp::Dataplane& tgt, netsim::LinkEmulator* emu)
      : o_(o), ini_(ini), tgt_(tgt), emu_(emu), tgt_lcore_(tgt), lcores_(o.lcores) {}
  ~Bench() { teardown(); }

  int run();

 private:
  Status setup();
  void teardown();
  // The initiator's lcore (this thread): its dataplane, the link emulator, its host queues.
  void poll() {
    step_dataplanes();
    for (auto& h : hosts_) h->poll();
  }
  // With --lcores 1 this thread steps the target's dataplane too (its hook polls the target).
  void step_dataplanes() {
    ini_.poll_once();
    if (emu_) emu_->poll(emu_->now());
    if (lcores_ == 1) tgt_.poll_once();
  }
  // Runs one admin/connect command to completion.
  Result<HostCompletion> exec(std::size_t link, const nv::Sqe& sqe, std::uint32_t len, SglMode mode);
  // Connect on a queue; the CNTLID the target answered.
  Result<std::uint16_t> connect(std::size_t link, std::uint16_t qid, std::uint16_t sqsize, std::uint16_t cntlid);
  Status open(std::uint16_t qid, std::uint16_t depth);
  // A connected RC QP pair: the initiator's end (made here) and the target's (made on its lcore).
  struct QpPair {
    rdma::QueuePair* ini_qp;
    rdma::CompletionQueue* ini_cq;
    rdma::QueuePair* tgt_qp;
    rdma::CompletionQueue* tgt_cq;
  };
  Result<QpPair> make_pair(std::uint16_t depth);
  // What the NVMe queues' QPs (both ends) resent: the loss figures of the run.
  struct Resends {
    std::uint64_t retransmitted = 0;     // request packets sent again, by go-back-N or selectively
    std::uint64_t selective = 0;         // ... of them resent alone (a SACK or timer named them)
    std::uint64_t sacks = 0;             // SACKs received
  };
  Resends resends();
  // Bytes per second of RDMA WRITEs, `queues` QPs with `queue_depth` WRITEs of `block_size`
  // each in flight, for `seconds`.
  struct Goodput {
    double wall_bps = 0;  // bytes per second
    double cpu_bps = 0;   // bytes per CPU second of both lcores together
    double frames_per_write = 0;
  };
  // Frames both dataplanes have sent so far: per command, what the NVMe path costs on the
  // wire next to one RDMA WRITE.
  std::uint64_t frames_sent() { return frames_sent_by(ini_) + frames_sent_by(tgt_); }
  static std::uint64_t frames_sent_by(dp::Dataplane& d) {
    d.publish_stats();
    std::uint64_t n = 0;
    for (const dp::WorkerSnapshot& w : d.snapshot().workers) n += w.stats.tx_packets;
    return n;
  }
  // CPU seconds of both lcores: this thread's and the target's.
  double cpu_seconds() {
    if (lcores_ == 1) return thread_cpu_seconds();
    return thread_cpu_seconds() + tgt_.call(0, [](rdma::Engine&) { return thread_cpu_seconds(); });
  }
  bool target_failed() const { return ts_.failed.load(std::memory_order_acquire); }
  Result<Goodput> write_baseline(double seconds);

  static double frames_per(std::uint64_t frames, std::uint64_t ops) {
    return ops ? static_cast<double>(frames) / static_cast<double>(ops) : 0;
  }
  double cpu_ratio(std::uint64_t ops, double cpu_secs, double baseline_cpu_bps) const {
    return cpu_secs > 0 && baseline_cpu_bps > 0
               ? static_cast<double>(ops) * o_.block_size / cpu_secs / baseline_cpu_bps
               : 0;
  }

  const NvmeBenchOptions& o_;
  dp::Dataplane& ini_;
  dp::Dataplane& tgt_;
  netsim::LinkEmulator* emu_;
  NvmeTargetLcore tgt_lcore_;
  NvmeTargetSide ts_;  // touched only on the target's lcore once it runs
  unsigned lcores_;    // --lcores, or 1 when the EAL has no worker lcore
  Side ini_side_{}, tgt_side_{};
  std::vector<std::unique_ptr<NvmfRdmaHost>> hosts_;  // [0] admin
  std::uint32_t inline_size_ = 0;                     // the target's in-capsule data size
  std::uint32_t psn_ = 0x1000;
  std::vector<QpPair> nvme_pairs_;  // the admin and I/O queues' QPs (not the baseline's)
};

Result<Bench::QpPair> Bench::make_pair(std::uint16_t depth) {
  auto a = make_qp(ini_side_, depth);
  if (!a) return a.error();
  auto b = tgt_.call(0, [&](rdma::Engine&) { return make_qp(tgt_side_, depth); });
  if (!b) return b.error();
  psn_ += 0x100;
  if (Status s = bring_up(ini_side_, a->first, tgt_.local().ip, b->first->qpn(), psn_, psn_ + 0x80, o_.selective_repeat); !s) return s.error();
  const std::uint32_t ini_qpn = a->first->qpn();
  if (Status s = tgt_.call(0, [&](rdma::Engine&) { return bring_up(tgt_side_, b->first, ini_.local().ip, ini_qpn, psn_ + 0x80, psn_, o_.selective_repeat); });
      !s)
    return s.error();
  return QpPair{a->first, a->second, b->first, b->second};
}

Bench::Resends Bench::resends() {
  const auto sum = [](const std::vector<rdma::QueuePair*>& qps) {
    Resends r;
    for (const rdma::QueuePair* qp : qps) {
      r.retransmitted += qp->counters().get(rdma::Counter::RetransmittedPkts);
      r.selective += qp->counters().get(rdma::Counter::SelectiveResends);
      r.sacks += qp->counters().get(rdma::Counter::SacksReceived);
    }
    return r;
  };
  std::vector<rdma::QueuePair*> ini_qps, tgt_qps;
  for (const QpPair& p : nvme_pairs_) {
    ini_qps.push_back(p.ini_qp);
    tgt_qps.push_back(p.tgt_qp);
  }
  Resends r = sum(ini_qps);
  const Resends t = tgt_.call(0, [&](rdma::Engine&) { return sum(tgt_qps); });  // the target's QPs live on its lcore
  r.retransmitted += t.retransmitted;
  r.selective += t.selective;
  r.sacks += t.sacks;
  return r;
}

Status Bench::open(std::uint16_t qid, std::uint16_t depth) {
  auto p = make_pair(depth);
  if (!p) return p.error();
  nvme_pairs_.push_back(*p);
  if (Status s = tgt_.call(0, [&](rdma::Engine&) -> Status {
        auto t = NvmfRdmaQueue::create(*ts_.target, *tgt_side_.engine, tgt_side_.pd, p->tgt_qp, p->tgt_cq,
                                       nvmf::queue_config_for(ts_.target->config(), qid, depth));
        if (!t) return t.error();
        ts_.queues.push_back(std::move(*t));
        return {};
      });
      !s)
    return s;
  nvmf::HostQueueConfig hc;
  hc.depth = depth;
  hc.max_transfer = std::max<std::uint32_t>(o_.block_size, 4096);
  hc.inline_size = qid == 0 ? 0 : inline_size_;
  auto h = NvmfRdmaHost::create(*ini_side_.engine, ini_side_.pd, p->ini_qp, p->ini_cq, hc);
  if (!h) return h.error();
  hosts_.push_back(std::move(*h));
  return {};
}

Result<Bench::Goodput> Bench::write_baseline(double seconds) {
  std::vector<std::byte> src(std::size_t{o_.block_size} * o_.queue_depth, std::byte{0x5A});
  std::vector<std::byte> dst(src.size());
  auto smr = ini_side_.engine->memory().register_region(ini_side_.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  auto dmr = tgt_.call(0, [&](rdma::Engine&) {
    return tgt_side_.engine->memory().register_region(tgt_side_.pd, dst.data(), dst.size(),
                                                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  });
  if (!smr || !dmr) return make_error(ENOMEM, "cannot register the baseline's buffers");
  const std::uint32_t lkey = (*smr)->lkey(), rkey = (*dmr)->rkey();
  std::vector<QpPair> qps;
  for (std::uint16_t q = 0; q < o_.queues; ++q) {
    auto p = make_pair(o_.queue_depth);
    if (!p) return make_error(p.error().code, "the baseline's QPs: " + p.error().message);
    qps.push_back(*p);
  }
  auto post = [&](const QpPair& q, std::uint16_t i) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(src.data() + std::size_t{i} * o_.block_size), o_.block_size, lkey};
    ibv_send_wr wr{};
    wr.wr_id = i;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(dst.data() + std::size_t{i} * o_.block_size);
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    return ini_side_.engine->post_send(q.ini_qp, &wr, &bad) == 0;
  };
  for (const QpPair& q : qps)
    for (std::uint16_t i = 0; i < o_.queue_depth; ++i)
      if (!post(q, i)) return make_error(ENOSPC, "cannot post the baseline's WRITEs");
  const std::uint64_t frames0 = frames_sent();
  const Nanos t0 = ini_.now();
  const double cpu0 = cpu_seconds();
  const Nanos end = t0 + static_cast<Nanos>(seconds * 1e9);
  std::uint64_t done = 0, outstanding = std::uint64_t{o_.queue_depth} * o_.queues;
  ibv_wc wc[32];
  while (outstanding > 0 && ini_.now() < end + 10 * kSecond) {
    step_dataplanes();
    const bool stopping = ini_.now() >= end;
    for (const QpPair& q : qps) {
      const int n = ini_side_.engine->poll_cq(q.ini_cq, 32, wc);
      if (n < 0) return make_error(EIO, "baseline CQ overrun");
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != IBV_WC_SUCCESS) return make_error(EIO, std::string("baseline WRITE: ") + ibv_wc_status_str(wc[k].status));
        ++done;
        if (stopping || !post(q, static_cast<std::uint16_t>(wc[k].wr_id))) --outstanding;
      }
    }
  }
  const double secs = static_cast<double>(ini_.now() - t0) / 1e9;
  const double cpu = cpu_seconds() - cpu0;
  const std::uint64_t frames = frames_sent() - frames0;
  for (const QpPair& q : qps) {
    (void)ini_side_.engine->destroy_qp(q.ini_qp);
    (void)tgt_.call(0, [&](rdma::Engine&) { return tgt_side_.engine->destroy_qp(q.tgt_qp); });
  }
  (void)ini_side_.engine->memory().deregister((*smr)->key);
  (void)tgt_.call(0, [&](rdma::Engine&) { return tgt_side_.engine->memory().deregister((*dmr)->key); });
  const double bytes = static_cast<double>(done) * o_.block_size;
  return Goodput{bytes / secs, cpu > 0 ? bytes / cpu : 0,
                 done ? static_cast<double>(frames) / static_cast<double>(done) : 0};
}

Result<HostCompletion> Bench::exec(std::size_t link, const nv::Sqe& sqe, std::uint32_t len, SglMode mode) {
  NvmfRdmaHost& h = *hosts_[link];
  if (Status s = h.submit(0, sqe, len, mode); !s) return s.error();
  const Nanos deadline = ini_.now() + 5 * kSecond;
  while (ini_.now() < deadline) {
    poll();
    if (auto c = h.take(0)) {
      if (!c->status().ok()) return make_error(EIO, "command failed: " + nv::to_string(c->status()));
      return *c;
    }
    if (h.failed()) return make_error(EIO, "host queue failed: " + h.failure());
    if (target_failed()) return make_error(EIO, ts_.failure);
  }
  return make_error(ETIMEDOUT, "no response in 5 s");
}

Result<std::uint16_t> Bench::connect(std::size_t link, std::uint16_t qid, std::uint16_t sqsize, std::uint16_t cntlid) {
  nv::ConnectCommand c;
  c.qid.set(qid);
  c.sqsize.set(sqsize);
  c.kato.set(qid == 0 ? 120000 : 0);
  nv::ConnectData d;
  d.cntlid.set(cntlid);
  nv::set_fixed_string(d.subnqn, kSubNqn, '\0');
  nv::set_fixed_string(d.hostnqn, kHostNqn, '\0');
  std::memcpy(hosts_[link]->buffer(0).data(), static_cast<const void*>(&d), sizeof d);
  auto r = exec(link, nv::overlay<nv::Sqe>(c), nv::kConnectDataSize, SglMode::Keyed);
  if (!r) return make_error(EIO, "Connect QID " + std::to_string(qid) + ": " + r.error().message);
  return static_cast<std::uint16_t>(r->cqe.dw0.get());
}

Status Bench::setup() {
  nvmf::TargetConfig tc;
  tc.max_io_queues = o_.queues;
  tc.max_queue_depth = 128;
  tc.mdts = 5;  // 128 KiB
  tc.traddr = to_string(tgt_.local().ip);
  ts_.target = std::make_unique<nvmf::Target>(tc);
  auto sub = ts_.target->add_subsystem(kSubNqn, "ROCEGEN0001");
  if (!sub) return sub.error();
  const std::uint64_t nblocks = o_.namespace_mib * 1024 * 1024 / o_.lba_size;
  auto ns = o_.file.empty() ? nvmf::NamespaceStore::memory(nblocks, o_.lba_size)
                            : nvmf::NamespaceStore::file(o_.file, nblocks, o_.lba_size);
  if (!ns) return ns.error();
  if (Status s = (*sub)->add_namespace(1, std::move(*ns)); !s) return s;
  inline_size_ = ts_.target->config().inline_data_size;
  ini_side_ = Side{&ini_.worker(0).engine(), ini_.worker(0).engine().alloc_pd()};
  tgt_side_ = Side{&tgt_.worker(0).engine(), tgt_.worker(0).engine().alloc_pd()};
  // Both ends are in this process: each learns the other's MAC without ARP.
  ini_.arp().learn(tgt_.local().ip.v4, tgt_.local().mac);
  tgt_.arp().learn(ini_.local().ip.v4, ini_.local().mac);
  // From here on the target side lives on its own lcore.
  tgt_.worker(0).app_hook = [this](rdma::Engine&, Nanos now) { ts_.poll(now); };
  if (lcores_ == 2 && !NvmeTargetLcore::available()) {
    std::fprintf(stderr, "roce-gen: the EAL has no worker lcore for the target (-l 0-1 gives it one): one thread steps both sides\n");
    lcores_ = 1;
  }
  if (Status s = lcores_ == 1 ? Status{} : tgt_lcore_.start(); !s) return make_error(s.error().code, "the target's lcore: " + s.error().message);

  if (Status s = open(0, 32); !s) return s;
  auto cntlid = connect(0, 0, 31, nv::kDynamicCntlid);
  if (!cntlid) return cntlid.error();
  nv::PropertyCommand cc;
  cc.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertySet);
  cc.ofst.set(static_cast<std::uint32_t>(nv::Property::Cc));
  cc.value.set(1u | 6u << 16 | 4u << 20);
  if (auto r = exec(0, nv::overlay<nv::Sqe>(cc), 0, SglMode::None); !r) return make_error(EIO, "enable: " + r.error().message);
  nv::Sqe nq;
  nq.opc = static_cast<std::uint8_t>(nv::AdminOpcode::SetFeatures);
  nq.cdw10.set(static_cast<std::uint8_t>(nv::FeatureId::NumberOfQueues));
  nq.cdw11.set((o_.queues - 1u) | (o_.queues - 1u) << 16);
  if (auto r = exec(0, nq, 0, SglMode::None); !r) return make_error(EIO, "number of queues: " + r.error().message);
  for (std::uint16_t q = 1; q <= o_.queues; ++q) {
    if (Status s = open(q, o_.queue_depth); !s) return s;
    if (auto c = connect(q, q, static_cast<std::uint16_t>(o_.queue_depth - 1), *cntlid); !c) return c.error();
  }
  return {};
}

// The target's lcore stops first; then everything is torn down on this thread: the queues
// deregister their memory and the controller goes.
void Bench::teardown() {
  tgt_lcore_.stop();
  tgt_.worker(0).app_hook = nullptr;
  hosts_.clear();
  ts_.queues.clear();
  ts_.target.reset();
}

int Bench::run() {
  if (Status s = setup(); !s) {
    std::fprintf(stderr, "roce-gen: NVMe-oF set-up: %s\n", s.error().message.c_str());
    return 1;
  }
  // The baseline runs half its time before the NVMe run and half after: on a shared machine
  // whose load drifts, the two figures then see the same load on average.
  double baseline_bps = 0, baseline_cpu_bps = 0, baseline_frames = 0;
  auto baseline_half = [&]() -> bool {
    auto b = write_baseline(o_.seconds / 2);
    if (!b) {
      std::fprintf(stderr, "roce-gen: baseline: %s\n", b.error().message.c_str());
      return false;
    }
    baseline_bps += b->wall_bps / 2;
    baseline_cpu_bps += b->cpu_bps / 2;
    baseline_frames += b->frames_per_write / 2;
    return true;
  };
  if (o_.baseline && !baseline_half()) return 1;
  const std::uint32_t nlb = o_.block_size / o_.lba_size;
  const std::uint64_t blocks = o_.namespace_mib * 1024 * 1024 / o_.lba_size;
  const std::uint64_t slots = std::uint64_t{o_.queues} * o_.queue_depth;
  // Each command slot owns a stripe of the namespace, so no two commands in flight touch the
  // same LBA and --verify knows what every read must return.
  const std::uint64_t stripe_cmds = blocks / nlb / slots;
  std::vector<std::uint64_t> tags(blocks / nlb, 0);  // per block-size unit: writes so far
  std::vector<std::uint64_t> cursor(slots, 0);
  struct InFlight {
    Nanos start = 0;
    bool write = false;
    std::uint64_t unit = 0;
  };
  std::vector<InFlight> inflight(slots);
  std::vector<Nanos> lat;
  lat.reserve(1 << 20);
  std::mt19937_64 rng(o_.seed);
  std::uint64_t reads = 0, writes = 0, errors = 0, mismatches = 0;
  std::string first_error;
  std::vector<std::byte> expect(o_.block_size);

  auto issue = [&](std::uint16_t q, std::uint16_t cid) {
    const std::uint64_t slot = std::uint64_t{q} * o_.queue_depth + cid;
    const std::uint64_t k = o_.random ? rng() % stripe_cmds : cursor[slot]++ % stripe_cmds;
    const std::uint64_t unit = slot * stripe_cmds + k;
    bool write = o_.workload == NvmeWorkload::Write;
    if (o_.workload == NvmeWorkload::RandRw) write = rng() % 100 >= o_.read_percent;
    NvmfRdmaHost& h = *hosts_[q + 1u];
    if (write && o_.verify) fill_block(h.buffer(cid).first(o_.block_size), unit, tags[unit] + 1);
    nv::Sqe s;
    s.opc = static_cast<std::uint8_t>(write ? nv::IoOpcode::Write : nv::IoOpcode::Read);
    s.nsid.set(1);
    const std::uint64_t slba = unit * nlb;
    s.cdw10.set(static_cast<std::uint32_t>(slba));
    s.cdw11.set(static_cast<std::uint32_t>(slba >> 32));
    s.cdw12.set(nlb - 1);
    const SglMode mode = write && o_.block_size <= inline_size_ ? SglMode::InCapsule : SglMode::Keyed;
    inflight[slot] = InFlight{ini_.now(), write, unit};
    if (Status st = h.submit(cid, s, o_.block_size, mode); !st) {
      ++errors;
      if (first_error.empty()) first_error = st.error().message;
    }
  };

  // Reads that verify need something to check: the namespace starts with every unit written
  // once (through the store, before the clock starts).
  if (o_.verify) {
    const bool filled = tgt_.call(0, [&](rdma::Engine&) {
      nvmf::NamespaceStore& ns = *ts_.target->find_subsystem(kSubNqn)->find_namespace(1);
      for (std::uint64_t u = 0; u < tags.size(); ++u) {
        fill_block(expect, u, 1);
        if (ns.write(u * nlb, expect) != nvmf::MediaResult::Ok) return false;
        tags[u] = 1;
      }
      return true;
    });
    if (!filled) {
      std::fprintf(stderr, "roce-gen: cannot fill the namespace\n");
      return 1;
    }
  }
  const std::uint64_t ini_frames0 = frames_sent_by(ini_), tgt_frames0 = frames_sent_by(tgt_);
  const Nanos t0 = ini_.now();
  const double cpu0 = cpu_seconds();
  const Nanos end = t0 + static_cast<Nanos>(o_.seconds * 1e9);
  for (std::uint16_t q = 0; q < o_.queues; ++q)
    for (std::uint16_t cid = 0; cid < o_.queue_depth; ++cid) issue(q, cid);
  bool stopping = false;
  std::uint64_t outstanding = slots;
  std::uint64_t spins = 0;
  while (outstanding > 0) {
    poll();
    const Nanos now = ini_.now();
    if (!stopping && (now >= end || ((++spins & 0x3ff) == 0 && dp::StopSignals::requested()))) stopping = true;
    if (now > end + 10 * kSecond) {
      if (first_error.empty()) first_error = "commands still outstanding 10 s after the end";
      ++errors;
      break;
    }
    for (std::uint16_t q = 0; q < o_.queues; ++q) {
      NvmfRdmaHost& h = *hosts_[q + 1u];
      if (h.failed() || target_failed()) {
        ++errors;
        if (first_error.empty()) first_error = h.failed() ? h.failure() : ts_.failure;
        outstanding = 0;
        break;
      }
      while (const auto done = h.next_completed()) {
        const std::uint16_t cid = *done;
        auto c = h.take(cid);
        if (!c) continue;
        const std::uint64_t slot = std::uint64_t{q} * o_.queue_depth + cid;
        const InFlight& f = inflight[slot];
        lat.push_back(now - f.start);
        if (!c->status().ok()) {
          ++errors;
          if (first_error.empty()) first_error = nv::to_string(c->status());
        } else if (f.write) {
          ++writes;
          ++tags[f.unit];
        } else {
          ++reads;
          if (o_.verify) {
            fill_block(expect, f.unit, tags[f.unit]);
            if (std::memcmp(expect.data(), h.buffer(cid).data(), o_.block_size) != 0) ++mismatches;
          }
        }
        if (stopping) {
          --outstanding;
        } else {
          issue(q, cid);
        }
      }
    }
  }
  const double secs = static_cast<double>(ini_.now() - t0) / 1e9;
  const double cpu_secs = cpu_seconds() - cpu0;
  const std::uint64_t ini_frames = frames_sent_by(ini_) - ini_frames0, tgt_frames = frames_sent_by(tgt_) - tgt_frames0;
  const std::uint64_t frames = ini_frames + tgt_frames;
  if (o_.baseline && errors == 0 && !baseline_half()) return 1;
  // What the writes left in the namespace: every unit as its last completed write made it.
  std::uint64_t media_mismatches = 0;
  if (o_.verify && writes > 0 && errors == 0) {
    media_mismatches = tgt_.call(0, [&](rdma::Engine&) {
      const nvmf::NamespaceStore& ns = *ts_.target->find_subsystem(kSubNqn)->find_namespace(1);
      std::vector<std::byte> got(o_.block_size);
      std::uint64_t wrong = 0;
      for (std::uint64_t u = 0; u < tags.size(); ++u) {
        fill_block(expect, u, tags[u]);
        if (ns.read(u * nlb, got) != nvmf::MediaResult::Ok || got != expect) ++wrong;
      }
      return wrong;
    });
    mismatches += media_mismatches;
  }
  const Percentiles p = percentiles(lat);
  const double iops = static_cast<double>(reads + writes) / secs;
  const double mib_s = iops * o_.block_size / (1024.0 * 1024.0);
  const bool failed = errors > 0 || mismatches > 0;
  const Resends rs = resends();
  if (o_.json) {
    JsonWriter w;
    w.begin_object()
        .field("workload", workload_name(o_.workload))
        .field("pattern", o_.random ? "rand" : "seq")
        .field("block_size", std::uint64_t{o_.block_size})
        .field("queue_depth", std::uint64_t{o_.queue_depth})
        .field("queues", std::uint64_t{o_.queues})
        .field("lcores", std::uint64_t{lcores_})
        .field("seconds", secs)
        .field("reads", reads)
        .field("writes", writes)
        .field("iops", iops)
        .field("mib_per_s", mib_s)
        .key("latency_us")
        .begin_object()
        .field("avg", p.avg)
        .field("p50", p.p50)
        .field("p90", p.p90)
        .field("p99", p.p99)
        .field("p99.9", p.p999)
        .field("max", p.max)
        .end_object()
        .field("errors", errors)
        .field("first_error", first_error)
        .field("verify", o_.verify ? (mismatches ? "MISMATCH" : "ok") : "off")
        .field("mismatches", mismatches)
        .field("frames_per_command", frames_per(frames, reads + writes))
        .field("initiator_frames_per_command", frames_per(ini_frames, reads + writes))
        .field("target_frames_per_command", frames_per(tgt_frames, reads + writes))
        .field("selective_repeat", std::uint64_t{o_.selective_repeat})
        .field("retransmitted_packets", rs.retransmitted)
        .field("selective_resends", rs.selective)
        .field("sacks_received", rs.sacks);
    if (o_.baseline)
      w.field("write_baseline_mib_per_s", baseline_bps / (1024.0 * 1024.0))
          .field("ratio_to_write_baseline", iops * o_.block_size / baseline_bps)
          .field("cpu_ratio_to_write_baseline", cpu_ratio(reads + writes, cpu_secs, baseline_cpu_bps))
          .field("baseline_frames_per_write", baseline_frames);
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("nvme-%s %s bs=%u qd=%u queues=%u lcores=%u: %.1f s\n", workload_name(o_.workload), o_.random ? "rand" : "seq",
                o_.block_size, o_.queue_depth, o_.queues, lcores_, secs);
    std::printf("  IOPS %.0f (read %llu, write %llu), bandwidth %.2f MiB/s\n", iops,
                static_cast<unsigned long long>(reads), static_cast<unsigned long long>(writes), mib_s);
    std::printf("  latency us: avg %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", p.avg, p.p50, p.p90,
                p.p99, p.p999, p.max);
    std::printf("  frames on the wire per command: %.2f (initiator %.2f, target %.2f)\n", frames_per(frames, reads + writes),
                frames_per(ini_frames, reads + writes), frames_per(tgt_frames, reads + writes));
    std::printf("  %s: %llu packets resent (%llu of them alone), %llu SACKs received\n",
                o_.selective_repeat ? ("selective repeat (window " + std::to_string(o_.selective_repeat) + ")").c_str() : "go-back-N",
                static_cast<unsigned long long>(rs.retransmitted), static_cast<unsigned long long>(rs.selective),
                static_cast<unsigned long long>(rs.sacks));
    std::printf("  errors %llu%s%s%s\n", static_cast<unsigned long long>(errors), first_error.empty() ? "" : " (first: ",
                first_error.c_str(), first_error.empty() ? "" : ")");
    if (o_.baseline)
      std::printf("  same-run RDMA WRITE baseline: %.2f MiB/s (%.2f frames per WRITE); IOPS x bs / baseline = %.3f (per CPU second: %.3f)\n",
                  baseline_bps / (1024.0 * 1024.0), baseline_frames, iops * o_.block_size / baseline_bps,
                  cpu_ratio(reads + writes, cpu_secs, baseline_cpu_bps));
    if (o_.verify)
      std::printf("  verify: %s (%llu reads checked, %llu mismatched; namespace after the writes: %llu units wrong)\n",
                  mismatches ? "MISMATCH" : "ok", static_cast<unsigned long long>(reads),
                  static_cast<unsigned long long>(mismatches - media_mismatches),
                  static_cast<unsigned long long>(media_mismatches));
  }
  teardown();
  return failed ? 1 : 0;
}

}  // namespace

int run_nvme_bench(const NvmeBenchOptions& o, const std::vector<std::string>& eal) {
  if (!o.target.empty()) return run_nvme_remote(o, eal);
  ToolEal tool_eal;
  if (int rc = tool_eal.start(eal, {}, [](const std::string& why, int code) { return report_error("roce-gen", why, code); }))
    return rc;
  const bool faults = o.loss > 0 || o.duplicate > 0 || o.reorder > 0;
  auto left = dp::make_ring_pair("nvme_ini", faults ? "nvme_emu_x" : "nvme_tgt");
  auto right = faults ? dp::make_ring_pair("nvme_emu_y", "nvme_tgt") : left;
  if (!left || !right) {
    std::fprintf(stderr, "roce-gen: cannot create the ring ports\n");
    return 1;
  }
  // Frames in flight: every command's data (4 KiB frames) plus its capsule, response and ACKs,
  // twice over for retransmissions; a pool no larger makes start-up quicker for small runs.
  const std::uint64_t in_flight = std::uint64_t{o.queues} * o.queue_depth * (o.block_size / 4096 + 4) * 2;
  const auto mbufs = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(in_flight, 4095, 32767) | 1);
  auto ini = make_dp("nvme_ini", left->a, {10, 44, 20, 1}, mbufs);
  auto tgt = make_dp("nvme_tgt", right->b, {10, 44, 20, 2}, mbufs);
  if (!ini || !tgt) return 1;
  std::unique_ptr<netsim::LinkEmulator> emu;
  if (faults) {
    netsim::LinkEmulatorOptions eo;
    eo.name = "nvme_emu";
    eo.x.name = std::to_string(left->b);
    eo.y.name = std::to_string(right->a);
    netsim::DirectionFaults f;
    f.loss = o.loss;
    f.duplicate = o.duplicate;
    f.reorder = o.reorder;
    eo.x_to_y = f;
    eo.y_to_x = f;
    eo.seed = o.seed;
    auto e = netsim::LinkEmulator::create(eo);
    if (!e) {
      std::fprintf(stderr, "roce-gen: link emulator: %s\n", e.error().message.c_str());
      return 1;
    }
    emu = std::move(*e);
    if (!o.json) std::fprintf(stderr, "roce-gen: link %s, seed %llu\n", netsim::to_string(f).c_str(), static_cast<unsigned long long>(o.seed));
  }
  Bench b(o, *ini, *tgt, emu.get());
  return b.run();
}

}  // namespace roce::client
