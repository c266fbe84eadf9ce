#include "client/perftest_client.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <thread>

#include "client/buffers.hpp"
#include "client/cpu_util.hpp"
#include "client/driver_set.hpp"
#include "client/perftest_cm.hpp"
#include "client/runtime.hpp"
#include "client/traffic/drivers.hpp"
#include "client/traffic/perftest_text.hpp"
#include "client/traffic/srq_feeder.hpp"
#include "dataplane/signals.hpp"

namespace roce::client {

namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

std::string hex(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

// Why a server may have left the exchange at a step, for the error line.
std::string hint(const Error& e, bool after_traffic, const std::string& program, unsigned qps) {
  const std::string same = program + " -q " + std::to_string(qps);
  if (e.code == ECONNRESET)
    return "; the server ended the exchange there: it runs another test or other options than " + same +
           " (-q, -c, -a must match; its own output says why)";
  if (e.code == ETIMEDOUT)
    return after_traffic ? "; the server is still in a test of its own: is it " + same + "?"
                         : "; is it a perftest " + same + " server?";
  return "";
}

void fill_pattern(std::byte* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>((i * 131 + seed * 17 + (i >> 9)) & 0xFF);
}

// Runs one driver on its worker until it is done; false when the deadline passed first.
template <typename Driver>
bool run_to_end(DriverSet& drivers, unsigned worker, Driver& d, std::chrono::seconds limit) {
  const auto id = drivers.add(worker, [&d](rdma::Engine& e, Nanos now) { d.poll(e, now); });
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool done = false;
  while (!(done = drivers.inspect(worker, [&] { return d.status().done; })) && !dp::StopSignals::requested() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  drivers.remove(worker, id);
  return done;
}

// One READ of `len` bytes from `remote` into `into`.
Status read_back(DriverSet& drivers, const LocalQp& qp, LocalBuffer into, RemoteBuffer remote, std::uint32_t len) {
  TrafficSpec s;
  s.verb = Verb::Read;
  s.measure = Measure::Latency;
  s.size = len;
  s.iters = 1;
  LatClient reader(qp, s, into, remote);
  if (!run_to_end(drivers, qp.worker, reader, std::chrono::seconds(10)))
    return make_error(ETIMEDOUT, "the verification READ did not complete");
  if (reader.status().errors)
    return make_error(EIO, std::string("verification READ failed: ") + ibv_wc_status_str(reader.status().first_error));
  return {};
}

struct ClientQp {
  LocalQp local;
  PerftestDest mine;
  PerftestDest peer;
  rdma::AddressHandle* ah = nullptr;  // UD: the server's QP
  std::uint32_t qkey = kPerftestQkey;  // UD: the server's Q_Key (the SIDR_REP's under -R)
};

// The traffic of one run: the QPs, their buffers, and one size at a time.
class ClientTraffic {
 public:
  // The landing area is perftest's BUFF_SIZE(size, cycle_buffer): a -b server walks its
  // operations through a cycle buffer from the address we give it. A UD receive (SEND -b) has
  // the GRH in front of the message.
  // `drivers`: the dataplane's one DriverSet (an rdma_cm client's CM agent runs in it too).
  ClientTraffic(dp::Dataplane& dp, DriverSet& drivers, const ClientOptions& o, std::uint32_t max_size,
                std::uint32_t cycle_buffer, ClientRun& run, const std::function<void(const ClientProgress&)>& progress)
      : dp_(dp), o_(o), max_size_(max_size),
        landing_bytes_(std::max(max_size + (o.qp.type == IBV_QPT_UD ? kUdGrhBytes : 0), cycle_buffer)),
        per_qp_((2 * std::size_t{max_size} + landing_bytes_ + 64 + 63) / 64 * 64), run_(run), progress_(progress),
        conn_(dp, static_cast<std::uint64_t>(dp.now()) ^ 0x9E3779B97F4A7C15ULL), drivers_(drivers) {}
  ~ClientTraffic() {
    if (srq_feeder_) drivers_.remove(srq_worker_, srq_driver_id_);
    for (ClientQp& q : qps_) {
      if (q.ah) dp_.call(q.local.worker, [&](rdma::Engine& e) { return e.destroy_ah(q.ah); });
      conn_.destroy(q.local);
    }
    if (srq_feeder_) (void)conn_.destroy_srq(srq_worker_, srq_feeder_->srq());
    for (const rdma::MemoryRegion* mr : mrs_) dp_.memory().deregister(mr->rkey());
  }

  Status create(const QpParams& p) {
    params_ = p;
    auto buffer = MappedBuffer::anonymous(per_qp_ * o_.qps);
    if (!buffer) return buffer.error();
    buffer_ = std::move(*buffer);
    // One region for all QPs, or one per QP (--mr_per_qp).
    for (unsigned i = 0; i < (o_.mr_per_qp ? o_.qps : 1u); ++i) {
      auto region = o_.mr_per_qp ? conn_.register_memory(base(i), per_qp_, kAllAccess)
                                 : conn_.register_memory(buffer_.data(), buffer_.size(), kAllAccess);
      if (!region) return region.error();
      mrs_.push_back(*region);
    }
    // --use-srq where perftest's client makes its SRQ (a SEND latency test, or -b): every QP's
    // receives come from one shared receive queue of the receive depth, refilled at its limit
    // event; the QPs live on its worker.
    int worker = -1;
    if (uses_srq()) {
      const unsigned w = conn_.next_worker();
      auto srq = conn_.create_srq(w, params_.recv_depth);
      if (!srq) return srq.error();
      srq_worker_ = w;
      srq_feeder_ = std::make_unique<SrqFeeder>(*srq, LocalBuffer{landing(0), landing_bytes_, mr(0)->lkey()}, params_.recv_depth);
      SrqFeeder* f = srq_feeder_.get();
      if (Status s = dp_.call(w, [f](rdma::Engine& e) { return f->start(e); }); !s) return s;
      srq_driver_id_ = drivers_.add(w, [f](rdma::Engine& e, Nanos) { f->poll(e); });
      params_.srq = f->srq();
      worker = static_cast<int>(w);
    }
    for (unsigned i = 0; i < o_.qps; ++i) {
      auto lq = conn_.create(params_, worker);
      if (!lq) return lq.error();
      ClientQp q;
      q.local = *lq;
      q.mine.out_reads = p.max_rd_atomic;
      q.mine.qpn = lq->qpn;
      q.mine.psn = lq->psn;
      q.mine.rkey = mr(i)->rkey();
      q.mine.vaddr = reinterpret_cast<std::uint64_t>(landing(i));  // where the server's WRITEs land
      q.mine.gid = conn_.local_gid();
      qps_.push_back(q);
    }
    return {};
  }

  std::size_t qp_count() const { return qps_.size(); }
  bool on_srq() const { return srq_feeder_ != nullptr; }
  const LocalQp& local_qp(std::size_t i) const { return qps_[i].local; }

  std::vector<PerftestDest> records() const {
    std::vector<PerftestDest> r;
    for (const ClientQp& q : qps_) r.push_back(q.mine);
    return r;
  }

  // UD: QP i's address handle to `dgid`, with -T's traffic class in its GRH as perftest puts
  // it there (a UD QP's datagrams take theirs from the AH).
  Result<rdma::AddressHandle*> ud_address_handle(std::size_t i, const ibv_gid& dgid) {
    return dp_.call(qps_[i].local.worker, [&](rdma::Engine& e) {
      ibv_ah_attr a{};
      a.is_global = 1;
      a.grh.dgid = dgid;
      a.grh.hop_limit = 64;
      a.grh.traffic_class = params_.traffic_class;
      a.port_num = 1;
      return e.create_ah(qps_[i].local.pd, a);
    });
  }

  // QPs an rdma_cm exchange connected (-R) take the records' addresses and keys only.
  Status connect(const std::vector<PerftestDest>& peers, bool cm_connected = false) {
    for (std::size_t i = 0; i < qps_.size(); ++i) {
      qps_[i].peer = peers[i];
      if (!cm_connected)
        if (Status s = conn_.connect(qps_[i].local, RemoteQp{peers[i].qpn, peers[i].psn, peers[i].gid}, params_); !s) return s;
      if (params_.type == IBV_QPT_UD) {
        auto ah = ud_address_handle(i, peers[i].gid);
        if (!ah) return ah.error();
        qps_[i].ah = *ah;
      }
    }
    return {};
  }

  // -R with -c UD, once QP i's SIDR request was answered: the Q_Key the SENDs carry is the
  // SIDR_REP's, and for latency and -b tests the server learns our QPN from a 4-byte SEND with
  // our QPN as immediate data (rdma_cm_send_ud_connection_parameters), to its SIDR_REP's QPN.
  Status cm_ud_resolved(std::size_t i, const ibv_gid& server, const cm::SidrRepInfo& rep, bool send_qpn) {
    qps_[i].qkey = rep.qkey;
    if (!send_qpn) return {};
    auto ah = ud_address_handle(i, server);
    if (!ah) return ah.error();
    rdma::AddressHandle* h = *ah;
    std::byte* msg = base(i);
    const proto::Be32 qpn = proto::Be32::of(qps_[i].local.qpn);
    std::memcpy(msg, qpn.bytes.data(), 4);  // the payload perftest sends: 4 bytes, unread
    const int rc = dp_.call(qps_[i].local.worker, [&](rdma::Engine& e) {
      ibv_sge sge{reinterpret_cast<std::uint64_t>(msg), 4, mr(i)->lkey()};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND_WITH_IMM;
      wr.send_flags = IBV_SEND_SIGNALED;
      std::memcpy(&wr.imm_data, qpn.bytes.data(), 4);
      wr.wr.ud.ah = &h->base;
      wr.wr.ud.remote_qpn = rep.qpn;
      wr.wr.ud.remote_qkey = rep.qkey;
      ibv_send_wr* bad = nullptr;
      return e.post_send(qps_[i].local.qp, &wr, &bad);
    });
    Status st = rc ? make_error(rc, "posting our QPN's SEND to the server failed") : Status{};
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (bool done = st ? false : true; !done;) {
      ibv_wc wc{};
      const int n = dp_.call(qps_[i].local.worker, [&](rdma::Engine& e) { return e.poll_cq(qps_[i].local.cq, 1, &wc); });
      if (n == 1) {
        if (wc.status != IBV_WC_SUCCESS)
          st = make_error(EIO, std::string("our QPN's SEND to the server failed: ") + ibv_wc_status_str(wc.status));
        done = true;
      } else if (std::chrono::steady_clock::now() >= until) {
        st = make_error(ETIMEDOUT, "our QPN's SEND to the server did not complete");
        done = true;
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    (void)dp_.call(qps_[i].local.worker, [h](rdma::Engine& e) { return e.destroy_ah(h); });
    return st;
  }
  Status ready_ud(CmService& cms, std::size_t i) { return cms.ready_ud_qp(qps_[i].local); }

  Result<PerftestResults> run_size(const TrafficSpec& spec);
  void gather_counters();
  // SEND -b: the receives for the server's SENDs, before the sync that starts the size.
  Status prepost_receives(const TrafficSpec& spec) {
    preposted_.assign(qps_.size(), 0);
    if (!o_.duplex || spec.verb != Verb::Send || spec.measure != Measure::Bandwidth) return {};
    if (srq_feeder_) return {};  // the shared receive queue was stocked before the QPs left INIT
    for (std::size_t i = 0; i < qps_.size(); ++i) {
      const std::uint64_t want = std::min<std::uint64_t>(params_.recv_depth, spec.duration > 0 ? params_.recv_depth : spec.iters);
      preposted_[i] = dp_.call(qps_[i].local.worker, [&](rdma::Engine& e) {
        return post_receives(e, qps_[i].local, LocalBuffer{landing(i), landing_bytes_, mr(i)->lkey()},
                             static_cast<std::uint32_t>(want));
      });
    }
    return {};
  }

 private:
  std::byte* base(std::size_t i) { return buffer_.data() + i * per_qp_; }
  const rdma::MemoryRegion* mr(std::size_t i) const { return mrs_[o_.mr_per_qp ? i : 0]; }
  std::byte* landing(std::size_t i) { return base(i) + max_size_; }
  std::byte* scratch(std::size_t i) { return landing(i) + landing_bytes_; }
  RemoteBuffer remote(std::size_t i) const {
    return RemoteBuffer{qps_[i].peer.vaddr, qps_[i].peer.rkey, qps_[i].ah, qps_[i].peer.qpn, qps_[i].qkey};
  }
  Status prepare_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t& atomic_before);
  Status check_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t ops, std::uint64_t atomic_before);

  dp::Dataplane& dp_;
  const ClientOptions& o_;
  std::uint32_t max_size_;
  std::uint32_t landing_bytes_;
  std::size_t per_qp_;  // [send area | landing area | scratch of max_size and room for a GRH]
  ClientRun& run_;
  const std::function<void(const ClientProgress&)>& progress_;
  Connector conn_;
  DriverSet& drivers_;
  QpParams params_;
  MappedBuffer buffer_;
  std::vector<const rdma::MemoryRegion*> mrs_;
  std::vector<ClientQp> qps_;
  std::vector<std::uint32_t> preposted_;  // receives prepost_receives put up for the next size
  // --use-srq: perftest's client makes its SRQ for a SEND latency test or -b only.
  bool uses_srq() const {
    return o_.use_srq && o_.spec.verb == Verb::Send && (o_.spec.measure == Measure::Latency || o_.duplex);
  }
  std::unique_ptr<SrqFeeder> srq_feeder_;
  unsigned srq_worker_ = 0;
  std::uint64_t srq_driver_id_ = 0;
};

Status ClientTraffic::prepare_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t& atomic_before) {
  std::byte* send = base(i);
  if (spec.verb == Verb::Read || spec.verb == Verb::Flush) {
    // Give the far side known contents to read back (FLUSH: that the flushed range still holds).
    fill_pattern(send, spec.size, spec.size);
    TrafficSpec w = spec;
    w.verb = Verb::Write;
    w.measure = Measure::Bandwidth;
    w.iters = 1;
    w.duration = 0;
    w.cq_mod = w.post_list = 1;
    BwClient writer(qps_[i].local, w, LocalBuffer{send, spec.size, mr(i)->lkey()}, remote(i));
    if (!run_to_end(drivers_, qps_[i].local.worker, writer, std::chrono::seconds(10)))
      return make_error(ETIMEDOUT, "writing the pattern to verify READs did not complete");
    if (spec.verb == Verb::Read) std::memset(send, 0, spec.size);
  } else if (spec.verb == Verb::Atomic) {
    if (Status s = read_back(drivers_, qps_[i].local, LocalBuffer{scratch(i), 8, mr(i)->lkey()}, remote(i), 8); !s) return s;
    std::memcpy(&atomic_before, scratch(i), 8);
  } else {
    // Every QP writes the same pattern: a server may give them all the same address (the
    // appliance exposes one region), and the last writer must not make the check fail.
    fill_pattern(send, spec.size, spec.size);
  }
  return {};
}

Status ClientTraffic::check_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t ops, std::uint64_t atomic_before) {
  const LocalBuffer into{scratch(i), std::max<std::uint32_t>(spec.size, 8), mr(i)->lkey()};
  if (spec.verb == Verb::Write || spec.verb == Verb::AtomicWrite || spec.verb == Verb::Flush) {
    // ATOMIC_WRITE: the 8 bytes it stored; FLUSH: the range the pattern went to before it.
    if (Status s = read_back(drivers_, qps_[i].local, into, remote(i), spec.size); !s) return s;
    run_.verified = run_.verified && std::memcmp(scratch(i), base(i), spec.size) == 0;
  } else if (spec.verb == Verb::Read) {
    std::vector<std::byte> want(spec.size);
    fill_pattern(want.data(), spec.size, spec.size);
    run_.verified = run_.verified && std::memcmp(want.data(), base(i), spec.size) == 0;
  } else if (spec.verb == Verb::Atomic) {
    if (Status s = read_back(drivers_, qps_[i].local, into, remote(i), 8); !s) return s;
    std::uint64_t after;
    std::memcpy(&after, scratch(i), 8);
    // CMP_AND_SWAP swaps 0 for 0: the word keeps its value.
    run_.verified = run_.verified && after == (spec.atomic == AtomicOp::CmpAndSwap ? atomic_before : atomic_before + ops);
  }
  // SEND lands in the server's receive buffers, which it does not expose: nothing to read back.
  return {};
}

Result<PerftestResults> ClientTraffic::run_size(const TrafficSpec& spec) {
  // Latency tests run on QP 0 alone; the other QPs only take part in the exchange (as perftest's).
  const std::size_t active = spec.measure == Measure::Latency ? 1 : qps_.size();
  std::vector<std::unique_ptr<BwClient>> bw;
  std::vector<std::unique_ptr<LatClient>> lat;
  std::unique_ptr<WriteLatency> wlat;
  std::vector<std::uint64_t> ids;
  std::vector<std::uint64_t> atomic_before(active, 0);
  const bool write_lat = spec.measure == Measure::Latency && spec.verb == Verb::Write;
  // --run_infinitely: the drivers run until stopped; spec.duration is the reporting period.
  TrafficSpec driver_spec = spec;
  if (o_.run_infinitely) driver_spec.duration = std::numeric_limits<Nanos>::max() / 4;
  for (std::size_t i = 0; i < active; ++i) {
    if (o_.verify)
      if (Status s = prepare_verify(spec, i, atomic_before[i]); !s) return s.error();
    const LocalBuffer local{base(i), 2 * std::size_t{max_size_}, mr(i)->lkey()};
    const unsigned w = qps_[i].local.worker;
    if (spec.measure == Measure::Bandwidth) {
      bw.push_back(std::make_unique<BwClient>(qps_[i].local, driver_spec, local, remote(i)));
      BwClient* d = bw.back().get();
      // SEND -b: the server sends as many messages on each QP, into our receives.
      if (o_.duplex && spec.verb == Verb::Send && srq_feeder_)
        d->expect_sends_on_srq(spec.duration > 0 ? 0 : spec.iters);
      else if (o_.duplex && spec.verb == Verb::Send)
        d->expect_sends(LocalBuffer{landing(i), landing_bytes_, mr(i)->lkey()}, params_.recv_depth,
                        spec.duration > 0 ? 0 : spec.iters, i < preposted_.size() ? preposted_[i] : 0);
      ids.push_back(drivers_.add(w, [d](rdma::Engine& e, Nanos now) { d->poll(e, now); }));
    } else if (write_lat) {
      // ib_write_lat's client waits for the server's first WRITE.
      wlat = std::make_unique<WriteLatency>(qps_[i].local, spec.size, spec.duration > 0 ? 0 : spec.iters, false, local,
                                            landing(i), remote(i), spec.duration, spec.inline_size);
      WriteLatency* d = wlat.get();
      ids.push_back(drivers_.add(w, [d](rdma::Engine& e, Nanos now) { d->poll(e, now); }));
    } else {
      lat.push_back(std::make_unique<LatClient>(qps_[i].local, spec, local, remote(i)));
      LatClient* d = lat.back().get();
      if (srq_feeder_) d->receives_from_srq();
      ids.push_back(drivers_.add(w, [d](rdma::Engine& e, Nanos now) { d->poll(e, now); }));
    }
  }
  auto status_of = [&](std::size_t i) {
    return drivers_.inspect(qps_[i].local.worker, [&] {
      return spec.measure == Measure::Bandwidth ? bw[i]->status() : write_lat ? wlat->status() : lat[i]->status();
    });
  };
  auto remove_all = [&] {
    for (std::size_t i = 0; i < active; ++i) drivers_.remove(qps_[i].local.worker, ids[i]);
  };
  // Wait, reporting progress about once a second (and each period of --run_infinitely).
  const auto t0 = std::chrono::steady_clock::now();
  auto next_report = t0 + std::chrono::seconds(1);
  auto period_start = t0;
  std::uint64_t last_done = 0, last_seen = 0, period_done = 0;
  auto last_progress = t0;
  std::optional<CpuTimes> cpu_before, cpu_after;
  const auto margin = std::chrono::nanoseconds(spec.margin);
  bool stopping = false;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    bool all = true;
    std::uint64_t done_ops = 0;
    for (std::size_t i = 0; i < active; ++i) {
      const DriverStatus st = status_of(i);
      all = all && st.done;
      done_ops += st.completed;
    }
    if (all) break;
    const auto now = std::chrono::steady_clock::now();
    if (o_.cpu_util && spec.duration > 0 && !o_.run_infinitely) {
      if (!cpu_before && now - t0 >= margin) cpu_before = read_cpu_times();
      if (!cpu_after && now - t0 >= std::chrono::nanoseconds(spec.duration) - margin) cpu_after = read_cpu_times();
    }
    if (dp::StopSignals::requested()) {
      if (!o_.run_infinitely || stopping || bw.empty()) {
        remove_all();
        return make_error(ECANCELED, "stopped by a signal after " + std::to_string(done_ops) + " operations");
      }
      // The end of an endless run: stop posting, let what is in flight complete, then close the
      // exchange as perftest's server expects.
      dp::StopSignals::clear();
      stopping = true;
      run_.stopped = true;
      for (std::size_t i = 0; i < active; ++i) drivers_.inspect(qps_[i].local.worker, [&] {
        bw[i]->stop();
        return 0;
      });
    }
    if (done_ops != last_seen) {
      last_seen = done_ops;
      last_progress = now;
    } else if (now - last_progress > std::chrono::nanoseconds(o_.stall_timeout)) {
      remove_all();
      std::string why = ": is the peer still there?";
      if (spec.measure == Measure::Latency && spec.verb == Verb::Send)
        why = ": in ib_send_lat the server answers each SEND (is it ib_send_lat, or roce-appliance --perftest ib_send_lat?)";
      if (write_lat)
        why = done_ops == 0 ? ": in ib_write_lat the server WRITEs first (is it ib_write_lat with the same -s, or "
                              "roce-appliance --perftest ib_write_lat -s " + std::to_string(spec.size) + "?)"
                            : ": the server's WRITEs stopped coming (is its -s " + std::to_string(spec.size) + " too?)";
      return make_error(ETIMEDOUT, "no operation completed for " + std::to_string(o_.stall_timeout / kSecond) + " s (" +
                                       std::to_string(done_ops) + " done)" + why);
    }
    if (o_.run_infinitely && !stopping && now - period_start >= std::chrono::nanoseconds(spec.duration)) {
      // perftest's run_iter_bw_infinitely: a row per period, its operations over its time, no peak.
      // Under -b perftest counts both sides as twice its own (run_inf_bi_factor; SEND -b has no
      // endless mode).
      BwInput in;
      in.size = op_bytes(spec);
      in.ops = (done_ops - period_done) * (o_.duplex ? 2 : 1);
      in.last = std::chrono::duration_cast<std::chrono::nanoseconds>(now - period_start).count();
      const BwFigures f = perftest_bw(in);
      period_done = done_ops;
      period_start = now;
      run_.bw.push_back(f);
      if (o_.on_bw) o_.on_bw(f);
    }
    if (now >= next_report && progress_ && !o_.run_infinitely) {
      ClientProgress p;
      p.size = spec.size;
      p.done_ops = done_ops;
      p.target_ops = spec.duration > 0 ? 0 : spec.iters * active;
      p.elapsed_s = std::chrono::duration<double>(now - t0).count();
      p.duration_s = static_cast<double>(spec.duration) / 1e9;
      p.bytes_per_s = static_cast<double>(done_ops - last_done) * op_bytes(spec);
      progress_(p);
      last_done = done_ops;
      next_report += std::chrono::seconds(1);
    }
  }
  remove_all();
  preposted_.clear();

  auto note = [&](const DriverStatus& st) {
    run_.counters.errors += st.errors;
    if (st.errors && run_.counters.first_error.empty()) run_.counters.first_error = ibv_wc_status_str(st.first_error);
  };
  PerftestResults results;
  std::vector<std::uint64_t> ops(active, 0);
  const std::optional<double> cpu =
      cpu_before && cpu_after ? std::optional<double>(cpu_util_percent(*cpu_before, *cpu_after)) : std::nullopt;
  if (cpu) run_.cpu_util_percent = cpu;
  if (spec.measure == Measure::Bandwidth) {
    for (std::size_t i = 0; i < active; ++i) {
      ops[i] = bw[i]->status().completed;
      note(bw[i]->status());
    }
    if (!o_.run_infinitely) {
      BwFigures f = bw_figures(spec, bw);
      f.cpu_util_percent = cpu;
      run_.bw.push_back(f);
      // -b: the row is both sides' sum, shown once the server's figures came; SEND -b under -D
      // exchanges none and shows our own (perftest's print_report_bw).
      const bool own_row = !o_.duplex || (spec.verb == Verb::Send && spec.duration > 0);
      if (o_.on_bw && run_.counters.errors == 0 && own_row) o_.on_bw(f);
    }
    if (!run_.bw.empty()) {
      // In the client's units, as perftest sends them (MB/sec, or Gb/sec with --report_gbits).
      const BwFigures& f = run_.bw.back();
      results = PerftestResults{f.size, f.iterations, perftest_bw_units(f.bw_peak_bps, o_.gbits),
                                perftest_bw_units(f.bw_avg_bps, o_.gbits), f.msg_rate_mpps};
    }
  } else {
    // perftest times the intervals between its posts: iters - 1 of them. The WRITE client's
    // samples are those (it posts on the server's WRITE, the first of which it does not time);
    // the others time every operation, the last one being an interval perftest never sees.
    const DriverStatus st = write_lat ? wlat->status() : lat[0]->status();
    note(st);
    ops[0] = st.completed;
    std::vector<Nanos> samples = write_lat ? wlat->samples() : lat[0]->samples();
    const int rtt_factor = write_lat || lat[0]->round_trip() ? 2 : 1;
    if (spec.duration > 0) {
      LatDurationFigures f = perftest_latency_duration(op_bytes(spec), samples.size(),
                                                       std::accumulate(samples.begin(), samples.end(), Nanos{0}), rtt_factor);
      f.cpu_util_percent = cpu;
      run_.lat_duration.push_back(f);
      if (o_.on_lat_duration && run_.counters.errors == 0) o_.on_lat_duration(f);
    } else {
      if (!write_lat && !samples.empty()) samples.pop_back();
      run_.lat.push_back(perftest_latency(op_bytes(spec), spec.iters, std::move(samples), rtt_factor));
      if (o_.on_lat && run_.counters.errors == 0) o_.on_lat(run_.lat.back());
    }
  }
  // A failed operation never reaches the server, which keeps waiting for it and would not
  // answer the rest of the exchange: say what failed now rather than time out on the peer.
  if (run_.counters.errors) {
    gather_counters();
    return make_error(EIO, std::to_string(run_.counters.errors) + " operation(s) completed with an error (first: " +
                               run_.counters.first_error + "); retransmitted packets " +
                               std::to_string(run_.counters.retransmits) + ", NAKs " + std::to_string(run_.counters.naks) +
                               ", timeouts " + std::to_string(run_.counters.timeouts));
  }
  if (o_.verify) {
    run_.verified = true;
    for (std::size_t i = 0; i < active; ++i)
      if (Status s = check_verify(spec, i, ops[i], atomic_before[i]); !s) return s.error();
  }
  return results;
}

void ClientTraffic::gather_counters() {
  if (srq_feeder_) {
    SrqFeeder* f = srq_feeder_.get();
    run_.shared_srq = true;
    run_.srq_limit_events = drivers_.inspect(srq_worker_, [f] { return f->limit_events(); });
  }
  RunCounters& rc = run_.counters;
  rc.retransmits = rc.naks = rc.timeouts = rc.cnps_received = rc.cnps_sent = 0;
  rc.packets_sent = rc.sacks_received = rc.selective_resends = 0;
  rc.early_retransmits = rc.tail_probes = rc.oldest_probes = rc.probed_holes = 0;
  for (ClientQp& q : qps_) {
    const rdma::Counters c = dp_.call(q.local.worker, [&](rdma::Engine&) { return q.local.qp->counters(); });
    rc.retransmits += c.get(rdma::Counter::RetransmittedPkts);
    rc.naks += c.get(rdma::Counter::NaksReceived);
    rc.timeouts += c.get(rdma::Counter::RetransmitTimeouts);
    rc.cnps_received += c.get(rdma::Counter::CnpReceived);
    rc.cnps_sent += c.get(rdma::Counter::CnpSent);
    rc.packets_sent += c.get(rdma::Counter::SentPkts);
    rc.sacks_received += c.get(rdma::Counter::SacksReceived);
    rc.selective_resends += c.get(rdma::Counter::SelectiveResends);
    rc.early_retransmits += c.get(rdma::Counter::EarlyRetransmits);
    rc.tail_probes += c.get(rdma::Counter::TailProbes);
    rc.oldest_probes += c.get(rdma::Counter::OldestProbes);
    rc.probed_holes += c.get(rdma::Counter::ProbedHoles);
  }
}

}  // namespace

// perftest's figures of one size: every QP's operations together, over the whole run (with
// the peak from each operation's post and completion time), or under -D over the window.
BwFigures bw_figures(const TrafficSpec& spec, const std::vector<std::unique_ptr<BwClient>>& bw) {
  BwInput in;
  in.size = op_bytes(spec);
  in.cq_mod = spec.cq_mod;
  in.post_list = spec.post_list;
  in.first = kNever;
  BwTimestamps times;
  for (const auto& d : bw) {
    if (spec.duration > 0) {
      in.ops += d->window_ops();
      in.first = std::min(in.first, d->window_start());
      in.last = std::max(in.last, d->window_end());
    } else {
      in.ops += d->status().completed;
      in.first = std::min(in.first, d->first_post());
      in.last = std::max(in.last, d->last_completion());
      times.posted.insert(times.posted.end(), d->posted_times().begin(), d->posted_times().end());
      times.completed.insert(times.completed.end(), d->completed_times().begin(), d->completed_times().end());
    }
  }
  // The k-th operation of the run, whichever QP it went on (perftest's one loop posts them in turn).
  std::sort(times.posted.begin(), times.posted.end());
  std::sort(times.completed.begin(), times.completed.end());
  if (spec.record_peak && spec.duration == 0) in.times = &times;
  return perftest_bw(in);
}

Result<ibv_mtu> perftest_client_preamble(PerftestSession& s, ibv_mtu mine, const cm::Ece& ece) {
  if (Status st = s.exchange_versions(ece); !st) return st.error();
  if (Status st = s.exchange_sizes(); !st) return st.error();
  return s.exchange_mtu(mine);
}

Result<std::vector<PerftestDest>> perftest_client_exchange(PerftestSession& s, const PerftestTest& test,
                                                           const std::vector<PerftestDest>& mine,
                                                           const ClientHooks& hooks) {
  const auto flow = perftest_flow(test);
  const std::string program = perftest_program(test.verb, test.measure);
  const unsigned qps = static_cast<unsigned>(mine.size());
  std::vector<PerftestDest> peers;
  std::optional<PerftestDest> first;  // QP 0's record of a latency test's opening sync
  PerftestResults results;
  bool after_traffic = false;
  auto failed = [&](std::size_t step, unsigned qp, const Error& e) {
    return make_error(e.code, "the " + program + " exchange failed at " + describe_step(flow, step, qp) + ": " + e.message +
                                  hint(e, after_traffic, program, qps));
  };
  auto astray = [&](std::size_t step, unsigned qp, const std::string& what) {
    return make_error(EPROTO, "the " + program + " exchange went astray at " + describe_step(flow, step, qp) + ": " + what +
                                  "; the server runs another test or another -q than " + program + " -q " +
                                  std::to_string(qps));
  };
  // Every record of QP i after the first must name the QP the first one named.
  auto check_same = [&](std::size_t step, unsigned i, const PerftestDest& got) -> Status {
    if (got.qpn == peers[i].qpn) return {};
    return astray(step, i, "the server named QP " + hex(got.qpn) + " where it had named QP " + hex(peers[i].qpn));
  };
  for (std::size_t k = 0; k < flow.size(); ++k) {
    const FlowOp& op = flow[k];
    switch (op.step) {
      case FlowStep::RecordsAll: {
        const bool first_round = peers.empty();
        for (unsigned i = 0; i < qps; ++i) {
          auto peer = s.exchange_dest(mine[i]);
          if (!peer) return failed(k, i, peer.error());
          if (!first_round) {
            if (Status st = check_same(k, i, *peer); !st) return st.error();
            continue;
          }
          for (unsigned j = 0; j < peers.size(); ++j)
            if (peers[j].qpn == peer->qpn)
              return astray(k, i, "the server named QP " + hex(peer->qpn) + " for our QPs " + std::to_string(j) + " and " +
                                      std::to_string(i) + ": it runs fewer QPs");
          if (i == 0 && first && first->qpn != peer->qpn)
            return astray(k, i, "the server named QP " + hex(peer->qpn) + " where its first record named QP " +
                                    hex(first->qpn));
          peers.push_back(*peer);
        }
        break;
      }
      case FlowStep::RecordFirst: {
        if (hooks.before_traffic_sync && k + 1 < flow.size() && flow[k + 1].step == FlowStep::Traffic)
          if (Status st = hooks.before_traffic_sync(flow[k + 1].size_index); !st) return st.error();
        auto peer = s.exchange_dest(mine[0]);
        if (!peer) return failed(k, 0, peer.error());
        if (peers.empty()) first = *peer;
        else if (Status st = check_same(k, 0, *peer); !st) return st.error();
        break;
      }
      case FlowStep::Connect:
        if (Status st = hooks.connect(peers); !st) return st.error();
        break;
      case FlowStep::Traffic: {
        auto r = hooks.traffic(op.size_index);
        if (!r) return r.error();
        results = *r;
        after_traffic = true;
        break;
      }
      case FlowStep::Results: {
        auto r = s.exchange_results(results);
        if (!r) return failed(k, 0, r.error());
        if (hooks.results) hooks.results(*r);
        break;
      }
      case FlowStep::Done:
        if (Status st = s.exchange_done(); !st) return failed(k, 0, st.error());
        break;
      case FlowStep::CmSync: {
        // QP 0's record as perftest's main still holds it there: all zeros.
        PerftestDest zero;
        zero.out_reads = 0;
        if (auto peer = s.exchange_dest(zero); !peer) return failed(k, 0, peer.error());
        break;
      }
      case FlowStep::CmConnect:
        if (Status st = hooks.cm_connect(); !st)
          return make_error(st.error().code, "the " + program + " exchange failed " + describe_step(flow, k) + ": " +
                                                 st.error().message);
        break;
    }
  }
  return peers;
}

Result<ClientRun> run_perftest_client(dp::Dataplane& dp, const ClientOptions& o,
                                      const std::function<void(const ClientProgress&)>& progress) {
  ClientRun run;
  std::vector<std::uint32_t> sizes = o.sizes.empty() ? std::vector<std::uint32_t>{o.spec.size} : o.sizes;

  // -R: the control channel is an rdma_cm connection (its QP is the control Connector's), and
  // every CM event of the run goes through one queue on this thread.
  DriverSet drivers(dp);
  std::unique_ptr<CmService> cms;
  std::unique_ptr<CmEventQueue> events;
  std::unique_ptr<Connector> cm_conn;
  std::unique_ptr<CmChannel> cm_channel;
  cm::CmId control_id = 0;
  std::vector<cm::CmId> data_ids;
  std::optional<rdma::IpAddress> server_ip;
  std::unique_ptr<TcpStream> tcp;
  OobChannel* link = nullptr;
  if (o.rdma_cm) {
    if (o.qp.type == IBV_QPT_UC) return make_error(EINVAL, "-R: perftest's -R refuses UC (RC or UD)");
    server_ip = parse_ip(o.server);
    if (!server_ip) return make_error(EINVAL, "-R needs the server's IPv4 or IPv6 address, not '" + o.server + "'");
    if (server_ip->version != dp.local().ip.version)
      return make_error(EINVAL, "-R: the server's address " + o.server + " is not of our address's family (" + to_string(dp.local().ip) + ")");
    cms = std::make_unique<CmService>(dp, drivers);
    events = std::make_unique<CmEventQueue>(*cms);
    cm_conn = std::make_unique<Connector>(dp, static_cast<std::uint64_t>(dp.now()) ^ 0x5bd1e995ULL);
    const std::string host = server_ip->version == proto::IpVersion::V6 ? "[" + o.server + "]" : o.server;
    auto ch = CmChannel::create(*cm_conn, o.server, host + ":" + std::to_string(o.port));
    if (!ch) return ch.error();
    cm_channel = std::move(*ch);
    CmRcConnect c;
    c.server = *server_ip;
    c.port = o.port;
    c.mtu = o.qp.mtu;
    c.timeout = std::max<Nanos>(Nanos{o.oob_timeout_ms} * kMilli, kSecond);
    // perftest's control connection (rdma_client_connect): its comm parameters' verb is SEND.
    auto id = cm_connect_rc(dp, *cms, *events, cm_channel->qp(), c);
    if (!id) return make_error(id.error().code, "-R: the control channel: " + id.error().message);
    control_id = *id;
    CmChannel* ch_raw = cm_channel.get();
    CmEventQueue* ev = events.get();
    cm_channel->set_on_wait([ch_raw, ev, control_id] {
      ev->pump(0);
      while (auto e = ev->take(control_id))
        if (e->type == cm::RdmaCmEventType::Disconnected || e->type == cm::RdmaCmEventType::TimewaitExit) ch_raw->set_disconnected();
    });
    link = cm_channel.get();
  } else {
    auto t = TcpStream::connect(o.server, o.port, o.oob_timeout_ms);
    if (!t) return t.error();
    tcp = std::make_unique<TcpStream>(std::move(*t));
    link = tcp.get();
  }
  PerftestSession session(*link, OobRole::Client, o.oob_timeout_ms);
  // Over TCP the offer rides in our version record; -R's QPs offer it in their REQs instead.
  const bool rc = o.qp.type == IBV_QPT_RC;
  const cm::Ece offer = rc && !o.rdma_cm ? cm::selective_repeat_ece(o.selective_repeat) : cm::Ece{};
  auto mtu = perftest_client_preamble(session, o.qp.mtu, offer);
  if (!mtu) return mtu.error();
  run.remote_version = session.remote_version();
  run.mtu = *mtu;
  QpParams qp_params = o.qp;
  qp_params.mtu = *mtu;
  qp_params.selective_repeat = cm::agreed_selective_repeat(offer, session.remote_ece());
  run.selective_repeat = qp_params.selective_repeat;
  if (o.qp.type == IBV_QPT_UD) {
    // A UD message is one packet: perftest's sweep stops at the MTU, and a larger -s is an error.
    const std::uint32_t limit = 128u << static_cast<int>(*mtu);
    if (sizes.size() > 1) std::erase_if(sizes, [&](std::uint32_t s) { return s > limit; });
    if (sizes.empty() || sizes.back() > limit)
      return make_error(EINVAL, "a UD message must fit the path MTU of " + std::to_string(limit) + " bytes");
  }
  const std::uint32_t max_size = std::max<std::uint32_t>(*std::max_element(sizes.begin(), sizes.end()), 8);

  ClientTraffic traffic(dp, drivers, o, max_size, session.cycle_buffer(), run, progress);
  if (Status s = traffic.create(qp_params); !s) return s.error();
  run.local = traffic.records();

  PerftestTest test;
  test.verb = o.spec.verb;
  test.measure = o.spec.measure;
  test.sizes = static_cast<std::uint32_t>(sizes.size());
  test.all_sizes = sizes.size() > 1;
  test.duration = o.spec.duration > 0;
  test.duplex = o.duplex;
  test.infinite = o.run_infinitely;
  ClientHooks hooks;
  hooks.results = [&](const PerftestResults& theirs) {
    if (!o.duplex || run.bw.empty()) return;
    // perftest's print_full_bw_report(my, rem): the figures added as they came (in each side's units).
    BwFigures& f = run.bw.back();
    const double unit = o.gbits ? 125e6 : 1048576.0;  // bytes/s per Gb/sec or MB/sec
    f.bw_peak_bps += theirs.bw_peak * unit;
    f.bw_avg_bps += theirs.bw_avg * unit;
    f.msg_rate_mpps += theirs.msg_rate;
    if (o.on_bw) o.on_bw(f);
  };
  test.rdma_cm = o.rdma_cm;
  hooks.cm_connect = [&]() -> Status {
    // _rdma_cm_client_connection: one connection per QP to the server's port; a server that does
    // not listen yet (REJ, invalid service ID) is tried again, 10 times 100 ms apart, as perftest.
    const bool reads = takes_responder_resource(o.spec.verb);
    if (qp_params.type == IBV_QPT_UD) {
      // rdma_cm_establish_ud_connection: each QP resolved by SIDR (UDP port space, same port),
      // REJ / refusal tried again as for RC; latency and -b tests then SEND our QPN.
      const bool send_qpn = o.spec.measure == Measure::Latency || o.duplex;
      const ibv_gid server_gid = rdma::gid_from_ip(*server_ip);
      for (std::size_t i = 0; i < traffic.qp_count(); ++i) {
        if (Status s = traffic.ready_ud(*cms, i); !s) return s;
        CmRcConnect c;
        c.server = *server_ip;
        c.port = o.port;
        c.timeout = std::max<Nanos>(Nanos{o.oob_timeout_ms} * kMilli, kSecond);
        for (int attempt = 1;; ++attempt) {
          std::uint16_t reason = 0;
          auto rep = cm_resolve_ud(dp, *cms, *events, c, &reason);
          if (rep) {
            if (Status s = traffic.cm_ud_resolved(i, server_gid, *rep, send_qpn); !s)
              return make_error(s.error().code, "QP " + std::to_string(i) + ": " + s.error().message);
            break;
          }
          if (reason == 0 || attempt == 10)
            return make_error(rep.error().code, "QP " + std::to_string(i) + ": " + rep.error().message +
                                                    (reason ? " (tried 10 times)" : ""));
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      }
      return {};
    }
    for (std::size_t i = 0; i < traffic.qp_count(); ++i) {
      CmRcConnect c;
      c.server = *server_ip;
      c.port = o.port;
      c.mtu = run.mtu;
      c.responder_resources = c.initiator_depth = reads ? qp_params.max_rd_atomic : 0;
      c.retry_count = c.rnr_retry_count = o.retry_count;
      c.timeout = std::max<Nanos>(Nanos{o.oob_timeout_ms} * kMilli, kSecond);
      c.srq = traffic.on_srq();
      c.selective_repeat = o.selective_repeat;
      for (int attempt = 1;; ++attempt) {
        std::uint16_t reason = 0;
        std::uint32_t agreed = 0;
        auto id = cm_connect_rc(dp, *cms, *events, traffic.local_qp(i), c, &reason, &agreed);
        if (id) {
          // Every QP's REQ offers the same: the server answers them alike (QP 0's is reported).
          if (i == 0) run.selective_repeat = agreed;
          data_ids.push_back(*id);
          break;
        }
        if (reason == 0 || attempt == 10)
          return make_error(id.error().code, "QP " + std::to_string(i) + ": " + id.error().message +
                                                 (reason ? " (tried 10 times)" : ""));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    return {};
  };
  hooks.connect = [&](const std::vector<PerftestDest>& p) -> Status {
    if (Status s = traffic.connect(p, o.rdma_cm); !s) return s;
    if (o.on_connected) o.on_connected(ClientConnection{run.local, p, run.mtu, run.remote_version});
    return {};
  };
  hooks.before_traffic_sync = [&](std::uint32_t i) {
    TrafficSpec spec = o.spec;
    spec.size = sizes[i];
    return traffic.prepost_receives(spec);
  };
  hooks.traffic = [&](std::uint32_t i) {
    TrafficSpec spec = o.spec;
    spec.size = sizes[i];
    return traffic.run_size(spec);
  };
  auto peers = perftest_client_exchange(session, test, run.local, hooks);
  if (!peers) return peers.error();
  run.remote = *peers;
  traffic.gather_counters();
  if (o.rdma_cm) {
    // rdma_cm_disconnect_nodes: a DREQ per data connection, each answered; then the control
    // connection goes (perftest destroys its ID, which sends the DREQ).
    for (cm::CmId id : data_ids) (void)cms->disconnect(id);
    for (cm::CmId id : data_ids)
      for (;;) {
        auto e = events->next(id, 3 * kSecond);
        if (!e || e->type == cm::RdmaCmEventType::Disconnected || e->type == cm::RdmaCmEventType::TimewaitExit) break;
      }
    (void)cms->disconnect(control_id);
  }
  return run;
}

}  // namespace roce::client
