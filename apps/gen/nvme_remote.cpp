#include "apps/gen/nvme_remote.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include "client/cm_service.hpp"
#include "client/connector.hpp"
#include "client/driver_set.hpp"
#include "client/runtime.hpp"
#include "apps/gen/nvme_pattern.hpp"
#include "dataplane/dataplane.hpp"
#include "lib/cm/ece.hpp"
#include "lib/nvmf/rdma_host.hpp"
#include "lib/util/json_writer.hpp"
#include "protocol/nvme_rdma.hpp"

namespace roce::client {

namespace nv = proto::nvme;
using nvmf::HostCompletion;
using nvmf::NvmfRdmaHost;
using nvmf::SglMode;

namespace {

constexpr char kHostNqn[] = "nqn.2014-08.org.nvmexpress:uuid:6f0a1c2e-roce-gen-initiator";
constexpr std::uint16_t kAdminDepth = 32;  // as nvme-rdma's admin queue (NVME_AQ_DEPTH)

struct HostQueue {
  std::uint16_t qid = 0;
  LocalQp qp;
  cm::CmId id = 0;
  std::unique_ptr<NvmfRdmaHost> host;  // lives on worker 0
  std::uint32_t selective_repeat = 0;  // the reorder window the target agreed to; 0 = go-back-N
};

class Remote {
 public:
  Remote(const NvmeBenchOptions& o, dp::Dataplane& dp) : o_(o), dp_(dp), drivers_(dp), conn_(dp, static_cast<std::uint64_t>(dp.now()) | 1), cm_(dp, drivers_) {}
  ~Remote() { close_all(); }
  int run();

 private:
  Status setup();
  Result<HostQueue*> open(std::uint16_t qid, std::uint16_t depth);
  Result<HostCompletion> exec(HostQueue& q, const nv::Sqe& sqe, std::uint32_t len, SglMode mode);
  Result<std::uint16_t> fabrics_connect(HostQueue& q, std::uint16_t sqsize, std::uint16_t cntlid);
  Result<cm::RdmaCmEvent> next_event(cm::CmId id);
  void close_all();
  // Runs commands on every I/O queue until `next` has none left for a slot and all are in;
  // `next(slot, &unit, &write)` picks a slot's next command, `done` takes its completion.
  struct Phase;
  void drive(Phase& ph);

  const NvmeBenchOptions& o_;
  dp::Dataplane& dp_;
  DriverSet drivers_;
  Connector conn_;
  CmService cm_;
  std::vector<cm::RdmaCmEvent> pending_;
  std::vector<std::unique_ptr<HostQueue>> queues_;  // [0] admin
  std::uint32_t lba_size_ = 512;
  std::uint64_t ns_blocks_ = 0;
  std::uint32_t inline_size_ = 0;
  std::uint32_t max_transfer_ = 0;
  Nanos timeout_ = 10 * kSecond;
};

Result<cm::RdmaCmEvent> Remote::next_event(cm::CmId id) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_);
  for (;;) {
    for (std::size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i].id == id) {
        cm::RdmaCmEvent e = std::move(pending_[i]);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        return e;
      }
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0 || dp::StopSignals::requested()) return make_error(ETIMEDOUT, "no rdma_cm event within the timeout");
    for (auto& e : cm_.wait_events(left)) pending_.push_back(std::move(e));
  }
}

Result<HostQueue*> Remote::open(std::uint16_t qid, std::uint16_t depth) {
  auto q = std::make_unique<HostQueue>();
  q->qid = qid;
  QpParams qp;
  qp.send_depth = 2u * depth + 8;
  qp.recv_depth = depth + 8;
  auto made = conn_.create(qp, 0);
  if (!made) return made.error();
  q->qp = *made;
  nvmf::HostQueueConfig hc;
  hc.depth = depth;
  hc.max_transfer = std::max<std::uint32_t>(max_transfer_, nv::kConnectDataSize);
  hc.inline_size = qid == 0 ? 0 : inline_size_;
  auto h = dp_.call(0, [&](rdma::Engine& e) { return NvmfRdmaHost::create(e, q->qp.pd, q->qp.qp, q->qp.cq, hc); });
  if (!h) return make_error(h.error().code, "host queue " + std::to_string(qid) + ": " + h.error().message);
  q->host = std::move(*h);
  queues_.push_back(std::move(q));
  HostQueue& hq = *queues_.back();

  nv::CmRequestData rd;
  rd.recfmt.set(nv::kRecfmt10);
  rd.qid.set(qid);
  rd.hrqsize.set(depth);
  rd.hsqsize.set(static_cast<std::uint16_t>(depth - 1));
  cm::RdmaConnectParams cp;
  cp.port_space = proto::RdmaPortSpace::Tcp;
  cp.src = dp_.local().ip;
  cp.dst = *parse_ip(o_.target);
  cp.src_port = static_cast<std::uint16_t>(32768 + (dp_.now() / kMicro + qid) % 28232);
  cp.dst_port = o_.trsvcid;
  cp.ib.local_qpn = hq.qp.qpn;
  cp.ib.starting_psn = hq.qp.psn;
  const cm::CmQpLimits lim = cm_.qp_limits();
  // The target RDMA READs write data from us: offer it READs in flight (nvme-rdma offers the
  // device's maximum); we never read from it.
  cp.ib.responder_resources = lim.max_rd_atomic;
  cp.ib.initiator_depth = 0;
  cp.ib.retry_count = 7;
  cp.ib.rnr_retry_count = 7;
  cp.ib.path_mtu = static_cast<proto::PathMtu>(lim.max_mtu);
  cp.ib.ece = cm::selective_repeat_ece(o_.selective_repeat);
  cp.private_data.resize(sizeof rd);
  std::memcpy(cp.private_data.data(), static_cast<const void*>(&rd), sizeof rd);
  auto id = cm_.connect(cp);
  if (!id) return id.error();
  hq.id = *id;
  auto rep = next_event(*id);
  if (!rep) return make_error(ETIMEDOUT, "queue " + std::to_string(qid) + ": no answer to the rdma_cm connect");
  if (rep->type != cm::RdmaCmEventType::ConnectResponse) {
    std::string why = cm::to_string(rep->type);
    if (rep->type == cm::RdmaCmEventType::Rejected && rep->private_data.size() >= sizeof(nv::CmRejectData)) {
      nv::CmRejectData rj;
      std::memcpy(static_cast<void*>(&rj), rep->private_data.data(), sizeof rj);
      why += " with NVMe/RDMA status " + std::to_string(rj.sts.get());
    }
    return make_error(ECONNREFUSED, "queue " + std::to_string(qid) + ": " + why);
  }
  const cm::CmQpAttrs attrs = cm::active_qp_attrs(cp.ib, std::get<cm::RepInfo>(rep->detail), lim);
  if (Status s = cm_.connect_qp(hq.qp, IBV_QPT_RC, attrs); !s) return s.error();
  hq.selective_repeat = attrs.selective_repeat;
  if (Status s = cm_.ready_to_use(*id); !s) return s.error();
  return &hq;
}

Result<HostCompletion> Remote::exec(HostQueue& q, const nv::Sqe& sqe, std::uint32_t len, SglMode mode) {
  if (Status s = dp_.call(0, [&](rdma::Engine&) { return q.host->submit(0, sqe, len, mode); }); !s) return s.error();
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_);
  while (std::chrono::steady_clock::now() < until && !dp::StopSignals::requested()) {
    auto got = dp_.call(0, [&](rdma::Engine&) -> Result<std::optional<HostCompletion>> {
      q.host->poll();
      if (q.host->failed()) return make_error(EIO, "queue " + std::to_string(q.qid) + " failed: " + q.host->failure());
      return q.host->take(0);
    });
    if (!got) return got.error();
    if (*got) {
      if (!(*got)->status().ok()) return make_error(EIO, nv::to_string((*got)->status()));
      return **got;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return make_error(ETIMEDOUT, "no response within the timeout");
}

Result<std::uint16_t> Remote::fabrics_connect(HostQueue& q, std::uint16_t sqsize, std::uint16_t cntlid) {
  nv::ConnectCommand c;
  c.qid.set(q.qid);
  c.sqsize.set(sqsize);
  c.kato.set(0);
  nv::ConnectData d;
  d.cntlid.set(cntlid);
  for (std::size_t i = 0; i < d.hostid.size(); ++i) d.hostid[i] = static_cast<std::uint8_t>(0x6F ^ i * 17);
  nv::set_fixed_string(d.subnqn, o_.nqn, '\0');
  nv::set_fixed_string(d.hostnqn, kHostNqn, '\0');
  dp_.call(0, [&](rdma::Engine&) {
    std::memcpy(q.host->buffer(0).data(), static_cast<const void*>(&d), sizeof d);
    return 0;
  });
  auto r = exec(q, nv::overlay<nv::Sqe>(c), nv::kConnectDataSize, SglMode::Keyed);
  if (!r) return make_error(r.error().code, "Fabrics Connect of queue " + std::to_string(q.qid) + ": " + r.error().message);
  return static_cast<std::uint16_t>(r->cqe.dw0.get());
}

Status Remote::setup() {
  timeout_ = static_cast<Nanos>(o_.timeout_s * 1e9);
  max_transfer_ = 4096;
  auto admin = open(0, kAdminDepth);
  if (!admin) return admin.error();
  auto cntlid = fabrics_connect(**admin, kAdminDepth - 1, nv::kDynamicCntlid);
  if (!cntlid) return cntlid.error();
  nv::PropertyCommand cc;
  cc.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertySet);
  cc.ofst.set(static_cast<std::uint32_t>(nv::Property::Cc));
  cc.value.set(1u | 6u << 16 | 4u << 20);  // EN, IOSQES 6, IOCQES 4, CSS NVM, MPS 4 KiB
  if (auto r = exec(**admin, nv::overlay<nv::Sqe>(cc), 0, SglMode::None); !r) return make_error(EIO, "CC.EN: " + r.error().message);
  nv::PropertyCommand csts;
  csts.fctype = static_cast<std::uint8_t>(nv::FabricsType::PropertyGet);
  csts.ofst.set(static_cast<std::uint32_t>(nv::Property::Csts));
  for (int i = 0;; ++i) {
    auto r = exec(**admin, nv::overlay<nv::Sqe>(csts), 0, SglMode::None);
    if (!r) return make_error(EIO, "CSTS: " + r.error().message);
    if (r->cqe.dw0.get() & 2u) return make_error(EIO, "the controller reports a fatal status (CSTS.CFS)");
    if (r->cqe.dw0.get() & 1u) break;
    if (i > 100) return make_error(ETIMEDOUT, "the controller never became ready (CSTS.RDY)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  nv::Sqe idc;
  idc.opc = static_cast<std::uint8_t>(nv::AdminOpcode::Identify);
  idc.cdw10.set(1);
  if (auto r = exec(**admin, idc, nv::kIdentifySize, SglMode::Keyed); !r) return make_error(EIO, "Identify Controller: " + r.error().message);
  nv::IdentifyController ic;
  dp_.call(0, [&](rdma::Engine&) {
    std::memcpy(static_cast<void*>(&ic), (*admin)->host->buffer(0).data(), sizeof ic);
    return 0;
  });
  if (ic.ioccsz.get() * 16 > 64) inline_size_ = ic.ioccsz.get() * 16 - 64;
  const std::uint64_t mdts_bytes = ic.mdts == 0 ? (1ull << 24) : (4096ull << ic.mdts);
  if (o_.block_size > mdts_bytes) return make_error(EINVAL, "--bs " + std::to_string(o_.block_size) + " is beyond the target's MDTS (" + std::to_string(mdts_bytes) + " bytes)");
  nv::Sqe idn;
  idn.opc = static_cast<std::uint8_t>(nv::AdminOpcode::Identify);
  idn.nsid.set(1);
  idn.cdw10.set(0);
  if (auto r = exec(**admin, idn, nv::kIdentifySize, SglMode::Keyed); !r) return make_error(EIO, "Identify Namespace 1: " + r.error().message);
  nv::IdentifyNamespace in;
  dp_.call(0, [&](rdma::Engine&) {
    std::memcpy(static_cast<void*>(&in), (*admin)->host->buffer(0).data(), sizeof in);
    return 0;
  });
  ns_blocks_ = in.nsze.get();
  const std::uint8_t lbads = in.lbaf[in.flbas & 0xF].lbads;
  if (ns_blocks_ == 0 || lbads < 9 || lbads > 16) return make_error(EIO, "namespace 1 is inactive or has an LBA size we do not take");
  lba_size_ = 1u << lbads;
  if (o_.block_size % lba_size_) return make_error(EINVAL, "--bs must be a multiple of the namespace's LBA size (" + std::to_string(lba_size_) + ")");
  if (o_.namespace_mib * 1024 * 1024 > ns_blocks_ * lba_size_)
    return make_error(EINVAL, "--size " + std::to_string(o_.namespace_mib) + " MiB is more than namespace 1 holds (" + std::to_string(ns_blocks_ * lba_size_ >> 20) + " MiB)");
  nv::Sqe nq;
  nq.opc = static_cast<std::uint8_t>(nv::AdminOpcode::SetFeatures);
  nq.cdw10.set(static_cast<std::uint8_t>(nv::FeatureId::NumberOfQueues));
  nq.cdw11.set((o_.queues - 1u) | (o_.queues - 1u) << 16);
  auto granted = exec(**admin, nq, 0, SglMode::None);
  if (!granted) return make_error(EIO, "Number of Queues: " + granted.error().message);
  const std::uint32_t n = std::min(granted->cqe.dw0.get() & 0xFFFF, granted->cqe.dw0.get() >> 16) + 1;
  if (n < o_.queues) return make_error(EINVAL, "the target grants " + std::to_string(n) + " I/O queue(s), --queues asks " + std::to_string(o_.queues));
  max_transfer_ = o_.block_size;
  for (std::uint16_t q = 1; q <= o_.queues; ++q) {
    auto io = open(q, o_.queue_depth);
    if (!io) return io.error();
    if (auto c = fabrics_connect(**io, static_cast<std::uint16_t>(o_.queue_depth - 1), *cntlid); !c) return c.error();
  }
  return {};
}

void Remote::close_all() {
  for (auto it = queues_.rbegin(); it != queues_.rend(); ++it) (void)cm_.disconnect((*it)->id);  // I/O queues first, as Linux does
  cm_.disconnect_all(2 * kSecond);
  for (auto& q : queues_) {
    dp_.call(0, [&](rdma::Engine&) {
      q->host.reset();
      return 0;
    });
    (void)conn_.destroy(q->qp);
  }
  queues_.clear();
}

// One pass of commands over every I/O queue slot, run as a driver on worker 0 (where the host
// queues live); the control thread waits for `finished`.
struct Remote::Phase {
  std::function<bool(std::uint64_t slot, std::uint64_t& unit, bool& write)> next;  // false: the slot is done
  std::function<void(std::uint64_t slot, std::uint64_t unit, bool write, const HostCompletion& c, std::span<const std::byte> data, Nanos latency)> done;
  std::function<void(std::uint64_t unit, std::span<std::byte> out)> fill;  // write data
  std::atomic<bool> finished{false};
  std::atomic<bool> abort{false};
  std::string failure;  // set on the worker before `finished`
};

void Remote::drive(Phase& ph) {
  const std::uint32_t nlb = o_.block_size / lba_size_;
  const std::uint64_t slots = std::uint64_t{o_.queues} * o_.queue_depth;
  struct Slot {
    bool busy = false;
    bool write = false;
    std::uint64_t unit = 0;
    Nanos start = 0;
  };
  auto state = std::make_shared<std::vector<Slot>>(slots);
  auto started = std::make_shared<bool>(false);
  const auto issue = [this, &ph, nlb, state](std::uint16_t q, std::uint16_t cid, Nanos now) -> bool {
    const std::uint64_t s = std::uint64_t{q} * o_.queue_depth + cid;
    Slot& sl = (*state)[s];
    if (ph.abort.load() || !ph.next(s, sl.unit, sl.write)) return false;
    NvmfRdmaHost& h = *queues_[q + 1u]->host;
    if (sl.write) ph.fill(sl.unit, h.buffer(cid).first(o_.block_size));
    nv::Sqe c;
    c.opc = static_cast<std::uint8_t>(sl.write ? nv::IoOpcode::Write : nv::IoOpcode::Read);
    c.nsid.set(1);
    const std::uint64_t slba = sl.unit * nlb;
    c.cdw10.set(static_cast<std::uint32_t>(slba));
    c.cdw11.set(static_cast<std::uint32_t>(slba >> 32));
    c.cdw12.set(nlb - 1);
    const SglMode mode = sl.write && o_.block_size <= inline_size_ ? SglMode::InCapsule : SglMode::Keyed;
    if (Status st = h.submit(cid, c, o_.block_size, mode); !st) {
      ph.failure = "submit: " + st.error().message;
      ph.abort = true;
      return false;
    }
    sl.busy = true;
    sl.start = now;
    return true;
  };
  const std::uint64_t id = drivers_.add(0, [this, &ph, state, started, issue](rdma::Engine&, Nanos now) {
    if (ph.finished.load()) return;
    if (!*started) {
      *started = true;
      for (std::uint16_t q = 0; q < o_.queues; ++q)
        for (std::uint16_t cid = 0; cid < o_.queue_depth; ++cid) issue(q, cid, now);
    }
    bool any_busy = false;
    for (std::uint16_t q = 0; q < o_.queues; ++q) {
      NvmfRdmaHost& h = *queues_[q + 1u]->host;
      h.poll();
      if (h.failed()) {
        if (ph.failure.empty()) ph.failure = "I/O queue " + std::to_string(q + 1) + " failed: " + h.failure();
        ph.finished = true;
        return;
      }
      for (std::uint16_t cid = 0; cid < o_.queue_depth; ++cid) {
        Slot& sl = (*state)[std::uint64_t{q} * o_.queue_depth + cid];
        if (!sl.busy) continue;
        auto c = h.take(cid);
        if (!c) {
          any_busy = true;
          continue;
        }
        sl.busy = false;
        ph.done(std::uint64_t{q} * o_.queue_depth + cid, sl.unit, sl.write, *c, h.buffer(cid).first(o_.block_size), now - sl.start);
        if (issue(q, cid, now)) any_busy = true;
      }
    }
    if (!any_busy) ph.finished = true;
  });
  const auto until_abort = [&] { return dp::StopSignals::requested(); };
  while (!ph.finished.load()) {
    if (until_abort()) ph.abort = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  drivers_.remove(0, id);
}

int Remote::run() {
  if (Status s = setup(); !s) {
    std::fprintf(stderr, "roce-gen: NVMe-oF set-up with %s:%u (%s): %s\n", o_.target.c_str(), o_.trsvcid, o_.nqn.c_str(), s.error().message.c_str());
    return 1;
  }
  if (!o_.json) {
    const std::uint32_t sr = queues_.empty() ? 0 : queues_.back()->selective_repeat;
    const std::string mode = sr ? "selective repeat (window " + std::to_string(sr) + ")" : "go-back-N";
    std::fprintf(stderr, "roce-gen: connected to %s on %s:%u: namespace 1 of %llu blocks of %u bytes, %u I/O queue(s) of depth %u, in-capsule data up to %u bytes, %s\n",
                 o_.nqn.c_str(), o_.target.c_str(), o_.trsvcid, static_cast<unsigned long long>(ns_blocks_), lba_size_, o_.queues,
                 o_.queue_depth, inline_size_, mode.c_str());
  }
  const std::uint64_t slots = std::uint64_t{o_.queues} * o_.queue_depth;
  const std::uint64_t units = o_.namespace_mib * 1024 * 1024 / o_.block_size;
  const std::uint64_t stripe = units / slots;  // each slot owns units [slot*stripe, (slot+1)*stripe)
  std::vector<std::uint64_t> tags(units, 0);
  std::uint64_t reads = 0, writes = 0, errors = 0, mismatches = 0, media_mismatches = 0;
  std::string first_error;
  std::vector<Nanos> lat;
  lat.reserve(1 << 20);
  std::vector<std::byte> expect(o_.block_size);
  const auto note_error = [&](const std::string& e) {
    ++errors;
    if (first_error.empty()) first_error = e;
  };

  // --verify: every stripe written once first (tag 1), so every read has something to check.
  if (o_.verify) {
    std::vector<std::uint64_t> cursor(slots, 0);
    Phase fill;
    fill.next = [&](std::uint64_t s, std::uint64_t& unit, bool& write) {
      if (cursor[s] >= stripe) return false;
      unit = s * stripe + cursor[s]++;
      write = true;
      return true;
    };
    fill.fill = [&](std::uint64_t unit, std::span<std::byte> out) { fill_block(out, unit, 1); };
    fill.done = [&](std::uint64_t, std::uint64_t unit, bool, const HostCompletion& c, std::span<const std::byte>, Nanos) {
      if (c.status().ok()) tags[unit] = 1;
      else note_error("filling: " + nv::to_string(c.status()));
    };
    drive(fill);
    if (!fill.failure.empty()) note_error(fill.failure);
  }

  std::mt19937_64 rng(o_.seed);
  std::vector<std::uint64_t> cursor(slots, 0);
  const Nanos t0 = dp_.now();
  const Nanos end = t0 + static_cast<Nanos>(o_.seconds * 1e9);
  Phase work;
  work.next = [&](std::uint64_t s, std::uint64_t& unit, bool& write) {
    if (dp_.now() >= end || errors > 0) return false;
    const std::uint64_t k = o_.random ? rng() % stripe : cursor[s]++ % stripe;
    unit = s * stripe + k;
    write = o_.workload == NvmeWorkload::Write;
    if (o_.workload == NvmeWorkload::RandRw) write = rng() % 100 >= o_.read_percent;
    return true;
  };
  work.fill = [&](std::uint64_t unit, std::span<std::byte> out) { fill_block(out, unit, tags[unit] + 1); };
  work.done = [&](std::uint64_t, std::uint64_t unit, bool write, const HostCompletion& c, std::span<const std::byte> data, Nanos l) {
    lat.push_back(l);
    if (!c.status().ok()) return note_error(nv::to_string(c.status()));
    if (write) {
      ++writes;
      ++tags[unit];
      return;
    }
    ++reads;
    if (o_.verify) {
      fill_block(expect, unit, tags[unit]);
      if (std::memcmp(expect.data(), data.data(), o_.block_size) != 0) ++mismatches;
    }
  };
  if (errors == 0) drive(work);
  if (!work.failure.empty()) note_error(work.failure);
  const double secs = static_cast<double>(dp_.now() - t0) / 1e9;

  // --verify after writes: every unit read back over the wire as its last write left it.
  if (o_.verify && writes > 0 && errors == 0) {
    std::vector<std::uint64_t> back(slots, 0);
    Phase check;
    check.next = [&](std::uint64_t s, std::uint64_t& unit, bool& write) {
      if (back[s] >= stripe) return false;
      unit = s * stripe + back[s]++;
      write = false;
      return true;
    };
    check.fill = [](std::uint64_t, std::span<std::byte>) {};
    check.done = [&](std::uint64_t, std::uint64_t unit, bool, const HostCompletion& c, std::span<const std::byte> data, Nanos) {
      if (!c.status().ok()) return note_error("reading back: " + nv::to_string(c.status()));
      fill_block(expect, unit, tags[unit]);
      if (std::memcmp(expect.data(), data.data(), o_.block_size) != 0) ++media_mismatches;
    };
    drive(check);
    if (!check.failure.empty()) note_error(check.failure);
    mismatches += media_mismatches;
  }

  const Percentiles p = percentiles(lat);
  const double iops = secs > 0 ? static_cast<double>(reads + writes) / secs : 0;
  const double mib_s = iops * o_.block_size / (1024.0 * 1024.0);
  if (o_.json) {
    JsonWriter w;
    w.begin_object()
        .field("target", o_.target)
        .field("nqn", o_.nqn)
        .field("workload", workload_name(o_.workload))
        .field("pattern", o_.random ? "rand" : "seq")
        .field("block_size", std::uint64_t{o_.block_size})
        .field("queue_depth", std::uint64_t{o_.queue_depth})
        .field("queues", std::uint64_t{o_.queues})
        // The reorder window the target agreed to for the I/O queues (0: go-back-N).
        .field("selective_repeat", std::uint64_t{queues_.empty() ? 0u : queues_.back()->selective_repeat})
        .field("seconds", secs)
        .field("reads", reads)
        .field("writes", writes)
        .field("iops", iops)
        .field("mib_per_s", mib_s)
        .key("latency_us")
        .begin_object()
        .field("avg", p.avg)
        .field("p50", p.p50)
        .field("p99", p.p99)
        .field("max", p.max)
        .end_object()
        .field("errors", errors)
        .field("first_error", first_error)
        .field("verify", o_.verify ? (mismatches ? "MISMATCH" : "ok") : "off")
        .field("mismatches", mismatches)
        .end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("nvme-%s %s bs=%u qd=%u queues=%u against %s (%s): %.1f s\n", workload_name(o_.workload), o_.random ? "rand" : "seq",
                o_.block_size, o_.queue_depth, o_.queues, o_.nqn.c_str(), o_.target.c_str(), secs);
    std::printf("  IOPS %.0f (read %llu, write %llu), bandwidth %.2f MiB/s\n", iops, static_cast<unsigned long long>(reads),
                static_cast<unsigned long long>(writes), mib_s);
    std::printf("  latency us: avg %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", p.avg, p.p50, p.p90, p.p99, p.p999, p.max);
    std::printf("  errors %llu%s%s%s\n", static_cast<unsigned long long>(errors), first_error.empty() ? "" : " (first: ",
                first_error.c_str(), first_error.empty() ? "" : ")");
    if (o_.verify)
      std::printf("  verify: %s (%llu reads checked, %llu mismatched; read back after the writes: %llu units wrong)\n",
                  mismatches ? "MISMATCH" : "ok", static_cast<unsigned long long>(reads),
                  static_cast<unsigned long long>(mismatches - media_mismatches), static_cast<unsigned long long>(media_mismatches));
  }
  close_all();
  return errors > 0 || mismatches > 0 ? 1 : 0;
}

}  // namespace

int run_nvme_remote(const NvmeBenchOptions& o, const std::vector<std::string>& eal) {
  const auto fail = [](const std::string& why, int code) {
    std::fprintf(stderr, "roce-gen: %s\n", why.c_str());
    return code;
  };
  const auto me = parse_ip(o.ip);
  if (!me) return fail("--ip '" + o.ip + "' is not an IPv4 or IPv6 address", 2);
  const auto target = parse_ip(o.target);
  if (!target) return fail("--target '" + o.target + "' is not an IPv4 or IPv6 address", 2);
  if (target->version != me->version) return fail("--target " + o.target + " and --ip " + o.ip + " must be of one family", 2);
  const std::uint64_t slots = std::uint64_t{o.queues} * o.queue_depth;
  if (o.namespace_mib * 1024 * 1024 / o.block_size < slots) return fail("--size too small for every command slot to own a block", 2);
  ToolEal tool_eal;
  if (int rc = tool_eal.start(eal, o.vdevs, fail)) return rc;
  dp::DataplaneOptions dopt;
  dopt.name = "gen";
  dopt.port.name = o.dev;
  dopt.ip = *me;
  auto dpr = dp::Dataplane::create(dopt);
  if (!dpr) return fail(dpr.error().message, dpr.error().code == ENODEV ? 2 : 1);
  RunningDataplane running;
  if (Status s = running.start(**dpr); !s) return fail(s.error().message, 1);
  int rc = 0;
  {
    Remote r(o, **dpr);
    rc = r.run();
  }
  return rc;
}

}  // namespace roce::client
