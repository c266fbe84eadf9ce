#include "apps/common/perftest_client.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "apps/common/buffers.hpp"
#include "apps/common/driver_set.hpp"
#include "apps/common/traffic/drivers.hpp"
#include "dataplane/signals.hpp"

namespace roce::app {

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
  const auto id = drivers.add(worker, [&d](Engine& e, Nanos now) { d.poll(e, now); });
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
  AddressHandle* ah = nullptr;  // UD: the server's QP
};

// The traffic of one run: the QPs, their buffers, and one size at a time.
class ClientTraffic {
 public:
  ClientTraffic(dp::Dataplane& dp, const ClientOptions& o, std::uint32_t max_size, ClientRun& run,
                const std::function<void(const std::string&)>& progress)
      : dp_(dp), o_(o), max_size_(max_size), per_qp_(3 * std::size_t{max_size} + 64), run_(run), progress_(progress),
        conn_(dp, static_cast<std::uint64_t>(dp.now()) ^ 0x9E3779B97F4A7C15ULL), drivers_(dp) {}
  ~ClientTraffic() {
    for (ClientQp& q : qps_) {
      if (q.ah) dp_.call(q.local.worker, [&](Engine& e) { return e.destroy_ah(q.ah); });
      conn_.destroy(q.local);
    }
    if (mr_) dp_.memory().deregister(mr_->rkey());
  }

  Status create(const QpParams& p) {
    params_ = p;
    auto buffer = MappedBuffer::anonymous(per_qp_ * o_.qps);
    if (!buffer) return buffer.error();
    buffer_ = std::move(*buffer);
    auto mr = conn_.register_memory(buffer_.data(), buffer_.size(), kAllAccess);
    if (!mr) return mr.error();
    mr_ = *mr;
    for (unsigned i = 0; i < o_.qps; ++i) {
      auto lq = conn_.create(p);
      if (!lq) return lq.error();
      ClientQp q;
      q.local = *lq;
      q.mine.out_reads = p.max_rd_atomic;
      q.mine.qpn = lq->qpn;
      q.mine.psn = lq->psn;
      q.mine.rkey = mr_->rkey();
      q.mine.vaddr = reinterpret_cast<std::uint64_t>(landing(i));  // where the server's WRITEs land
      q.mine.gid = conn_.local_gid();
      qps_.push_back(q);
    }
    return {};
  }

  std::vector<PerftestDest> records() const {
    std::vector<PerftestDest> r;
    for (const ClientQp& q : qps_) r.push_back(q.mine);
    return r;
  }

  Status connect(const std::vector<PerftestDest>& peers) {
    for (std::size_t i = 0; i < qps_.size(); ++i) {
      qps_[i].peer = peers[i];
      if (Status s = conn_.connect(qps_[i].local, RemoteQp{peers[i].qpn, peers[i].psn, peers[i].gid}, params_); !s) return s;
      if (params_.type == IBV_QPT_UD) {
        auto ah = dp_.call(qps_[i].local.worker, [&](Engine& e) {
          ibv_ah_attr a{};
          a.is_global = 1;
          a.grh.dgid = peers[i].gid;
          a.grh.hop_limit = 64;
          a.port_num = 1;
          return e.create_ah(qps_[i].local.pd, a);
        });
        if (!ah) return ah.error();
        qps_[i].ah = *ah;
      }
    }
    return {};
  }

  Result<PerftestResults> run_size(const TrafficSpec& spec);
  void gather_counters();

 private:
  std::byte* base(std::size_t i) { return buffer_.data() + i * per_qp_; }
  std::byte* landing(std::size_t i) { return base(i) + max_size_; }
  std::byte* scratch(std::size_t i) { return base(i) + 2 * std::size_t{max_size_}; }
  RemoteBuffer remote(std::size_t i) const {
    return RemoteBuffer{qps_[i].peer.vaddr, qps_[i].peer.rkey, qps_[i].ah, qps_[i].peer.qpn};
  }
  Status prepare_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t& atomic_before);
  Status check_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t ops, std::uint64_t atomic_before);

  dp::Dataplane& dp_;
  const ClientOptions& o_;
  std::uint32_t max_size_;
  std::size_t per_qp_;  // [send area | landing area | scratch] of max_size each, and room for a GRH
  ClientRun& run_;
  const std::function<void(const std::string&)>& progress_;
  Connector conn_;
  DriverSet drivers_;
  QpParams params_;
  MappedBuffer buffer_;
  const MemoryRegion* mr_ = nullptr;
  std::vector<ClientQp> qps_;
};

Status ClientTraffic::prepare_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t& atomic_before) {
  std::byte* send = base(i);
  if (spec.verb == Verb::Read) {
    // Give the far side known contents to read back.
    fill_pattern(send, spec.size, spec.size);
    TrafficSpec w = spec;
    w.verb = Verb::Write;
    w.measure = Measure::Bandwidth;
    w.iters = 1;
    BwClient writer(qps_[i].local, w, LocalBuffer{send, spec.size, mr_->lkey()}, remote(i));
    if (!run_to_end(drivers_, qps_[i].local.worker, writer, std::chrono::seconds(10)))
      return make_error(ETIMEDOUT, "writing the pattern to verify READs did not complete");
    std::memset(send, 0, spec.size);
  } else if (spec.verb == Verb::Atomic) {
    if (Status s = read_back(drivers_, qps_[i].local, LocalBuffer{scratch(i), 8, mr_->lkey()}, remote(i), 8); !s) return s;
    std::memcpy(&atomic_before, scratch(i), 8);
  } else {
    // Every QP writes the same pattern: a server may give them all the same address (the
    // appliance exposes one region), and the last writer must not make the check fail.
    fill_pattern(send, spec.size, spec.size);
  }
  return {};
}

Status ClientTraffic::check_verify(const TrafficSpec& spec, std::size_t i, std::uint64_t ops, std::uint64_t atomic_before) {
  const LocalBuffer into{scratch(i), std::max<std::uint32_t>(spec.size, 8), mr_->lkey()};
  if (spec.verb == Verb::Write) {
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
  for (std::size_t i = 0; i < active; ++i) {
    if (o_.verify)
      if (Status s = prepare_verify(spec, i, atomic_before[i]); !s) return s.error();
    const LocalBuffer local{base(i), 2 * std::size_t{max_size_}, mr_->lkey()};
    const unsigned w = qps_[i].local.worker;
    if (spec.measure == Measure::Bandwidth) {
      bw.push_back(std::make_unique<BwClient>(qps_[i].local, spec, local, remote(i)));
      BwClient* d = bw.back().get();
      ids.push_back(drivers_.add(w, [d](Engine& e, Nanos now) { d->poll(e, now); }));
    } else if (write_lat) {
      // ib_write_lat's client waits for the server's first WRITE.
      wlat = std::make_unique<WriteLatency>(qps_[i].local, spec.size, spec.duration > 0 ? 0 : spec.iters, false, local,
                                            landing(i), remote(i), spec.duration);
      WriteLatency* d = wlat.get();
      ids.push_back(drivers_.add(w, [d](Engine& e, Nanos now) { d->poll(e, now); }));
    } else {
      lat.push_back(std::make_unique<LatClient>(qps_[i].local, spec, local, remote(i)));
      LatClient* d = lat.back().get();
      ids.push_back(drivers_.add(w, [d](Engine& e, Nanos now) { d->poll(e, now); }));
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
  // Wait, with a progress line each second.
  const auto t0 = std::chrono::steady_clock::now();
  auto next_report = t0 + std::chrono::seconds(1);
  std::uint64_t last_done = 0, last_seen = 0;
  auto last_progress = t0;
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
    if (dp::StopSignals::requested()) {
      remove_all();
      return make_error(ECANCELED, "stopped by a signal after " + std::to_string(done_ops) + " operations");
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
    if (now >= next_report && progress_) {
      const double secs = std::chrono::duration<double>(now - t0).count();
      const double gbps = static_cast<double>(done_ops - last_done) * op_bytes(spec) * 8 / 1e9;
      progress_("  " + std::to_string(spec.size) + " B: " + std::to_string(done_ops) + " ops after " +
                std::to_string(static_cast<int>(secs)) + " s, " + std::to_string(gbps).substr(0, 6) + " Gb/s in the last second");
      last_done = done_ops;
      next_report += std::chrono::seconds(1);
    }
  }
  remove_all();

  auto note = [&](const DriverStatus& st) {
    run_.counters.errors += st.errors;
    if (st.errors && run_.counters.first_error.empty()) run_.counters.first_error = ibv_wc_status_str(st.first_error);
  };
  PerftestResults results;
  std::vector<std::uint64_t> ops(active, 0);
  if (spec.measure == Measure::Bandwidth) {
    BwFigures f;
    f.size = op_bytes(spec);
    Nanos first = kNever, last = 0;
    for (std::size_t i = 0; i < active; ++i) {
      const BwClient& d = *bw[i];
      ops[i] = d.status().completed;
      f.iterations += d.status().completed;
      note(d.status());
      first = std::min(first, d.first_post());
      last = std::max(last, d.last_completion());
      f.bw_peak_bps += d.peak_bytes_per_s();
    }
    f.elapsed = last > first ? last - first : 0;
    if (f.elapsed > 0) {
      f.bw_avg_bps = static_cast<double>(f.iterations) * f.size * 1e9 / static_cast<double>(f.elapsed);
      f.msg_rate_mpps = static_cast<double>(f.iterations) / static_cast<double>(f.elapsed) * 1e3;
    }
    f.bw_peak_bps = std::max(f.bw_peak_bps, f.bw_avg_bps);
    run_.bw.push_back(f);
    results = PerftestResults{f.size, f.iterations, f.bw_peak_bps / (1024.0 * 1024.0), f.bw_avg_bps / (1024.0 * 1024.0),
                              f.msg_rate_mpps};
  } else if (write_lat) {
    note(wlat->status());
    ops[0] = wlat->status().completed;
    LatFigures f = summarise_latency(op_bytes(spec), wlat->samples(), true);
    f.iterations = wlat->status().completed;
    run_.lat.push_back(f);
  } else {
    note(lat[0]->status());
    ops[0] = lat[0]->status().completed;
    run_.lat.push_back(summarise_latency(op_bytes(spec), lat[0]->samples(), lat[0]->round_trip()));
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
  RunCounters& rc = run_.counters;
  rc.retransmits = rc.naks = rc.timeouts = rc.cnps_received = rc.cnps_sent = 0;
  for (ClientQp& q : qps_) {
    const Counters c = dp_.call(q.local.worker, [&](Engine&) { return q.local.qp->counters(); });
    rc.retransmits += c.get(Counter::RetransmittedPkts);
    rc.naks += c.get(Counter::NaksReceived);
    rc.timeouts += c.get(Counter::RetransmitTimeouts);
    rc.cnps_received += c.get(Counter::CnpReceived);
    rc.cnps_sent += c.get(Counter::CnpSent);
  }
}

}  // namespace

Result<ibv_mtu> perftest_client_preamble(PerftestSession& s, ibv_mtu mine) {
  if (Status st = s.exchange_versions(); !st) return st.error();
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
      case FlowStep::Results:
        if (auto r = s.exchange_results(results); !r) return failed(k, 0, r.error());
        break;
      case FlowStep::Done:
        if (Status st = s.exchange_done(); !st) return failed(k, 0, st.error());
        break;
    }
  }
  return peers;
}

Result<ClientRun> run_perftest_client(dp::Dataplane& dp, const ClientOptions& o,
                                      const std::function<void(const std::string&)>& progress) {
  ClientRun run;
  std::vector<std::uint32_t> sizes = o.sizes.empty() ? std::vector<std::uint32_t>{o.spec.size} : o.sizes;

  auto tcp = TcpStream::connect(o.server, o.port, o.oob_timeout_ms);
  if (!tcp) return tcp.error();
  PerftestSession session(*tcp, OobRole::Client, o.oob_timeout_ms);
  auto mtu = perftest_client_preamble(session, o.qp.mtu);
  if (!mtu) return mtu.error();
  run.remote_version = session.remote_version();
  run.mtu = *mtu;
  QpParams qp_params = o.qp;
  qp_params.mtu = *mtu;
  if (o.qp.type == IBV_QPT_UD) {
    // A UD message is one packet: perftest's sweep stops at the MTU, and a larger -s is an error.
    const std::uint32_t limit = 128u << static_cast<int>(*mtu);
    if (sizes.size() > 1) std::erase_if(sizes, [&](std::uint32_t s) { return s > limit; });
    if (sizes.empty() || sizes.back() > limit)
      return make_error(EINVAL, "a UD message must fit the path MTU of " + std::to_string(limit) + " bytes");
  }
  const std::uint32_t max_size = std::max<std::uint32_t>(*std::max_element(sizes.begin(), sizes.end()), 8);

  ClientTraffic traffic(dp, o, max_size, run, progress);
  if (Status s = traffic.create(qp_params); !s) return s.error();
  run.local = traffic.records();

  PerftestTest test;
  test.verb = o.spec.verb;
  test.measure = o.spec.measure;
  test.sizes = static_cast<std::uint32_t>(sizes.size());
  test.all_sizes = sizes.size() > 1;
  test.duration = o.spec.duration > 0;
  ClientHooks hooks;
  hooks.connect = [&](const std::vector<PerftestDest>& p) { return traffic.connect(p); };
  hooks.traffic = [&](std::uint32_t i) {
    TrafficSpec spec = o.spec;
    spec.size = sizes[i];
    return traffic.run_size(spec);
  };
  auto peers = perftest_client_exchange(session, test, run.local, hooks);
  if (!peers) return peers.error();
  run.remote = *peers;
  traffic.gather_counters();
  return run;
}

}  // namespace roce::app
