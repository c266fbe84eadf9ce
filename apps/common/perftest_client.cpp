#include "apps/common/perftest_client.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "apps/common/buffers.hpp"
#include "apps/common/driver_set.hpp"
#include "apps/common/oob/perftest.hpp"
#include "apps/common/traffic/drivers.hpp"
#include "dataplane/signals.hpp"

namespace roce::app {

namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct ClientQp {
  LocalQp local;
  PerftestDest mine;
  PerftestDest peer;
};

// Swaps each QP's record once (a perftest handshake round); the peers' records when `peers`.
Status handshake(PerftestSession& s, const std::vector<PerftestDest>& mine, std::vector<PerftestDest>* peers) {
  for (const PerftestDest& d : mine) {
    auto peer = s.exchange_dest(d);
    if (!peer) return peer.error();
    if (peers) peers->push_back(*peer);
  }
  return {};
}

void fill_pattern(std::byte* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>((i * 131 + seed * 17 + (i >> 9)) & 0xFF);
}

// Runs one READ of `len` bytes from `remote` into `into` on `qp` and waits for it.
Status read_back(dp::Dataplane& dp, DriverSet& drivers, const LocalQp& qp, LocalBuffer into, RemoteBuffer remote,
                 std::uint32_t len) {
  TrafficSpec s;
  s.verb = Verb::Read;
  s.measure = Measure::Latency;
  s.size = len;
  s.iters = 1;
  LatClient reader(qp, s, into, remote);
  const auto id = drivers.add(qp.worker, [&reader](Engine& e, Nanos now) { reader.poll(e, now); });
  DriverStatus st;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    st = drivers.inspect(qp.worker, [&] { return reader.status(); });
  } while (!st.done && !dp::StopSignals::requested() && std::chrono::steady_clock::now() < deadline);
  if (!st.done) {
    drivers.remove(qp.worker, id);
    return make_error(ETIMEDOUT, "the verification READ did not complete");
  }
  drivers.remove(qp.worker, id);
  (void)dp;
  if (st.errors) return make_error(EIO, std::string("verification READ failed: ") + ibv_wc_status_str(st.first_error));
  return {};
}

}  // namespace

Result<ibv_mtu> perftest_client_preamble(PerftestSession& s, ibv_mtu mine) {
  if (Status st = s.exchange_versions(); !st) return st.error();
  if (Status st = s.exchange_sizes(); !st) return st.error();
  return s.exchange_mtu(mine);
}

Result<std::vector<PerftestDest>> perftest_client_handshakes(
    PerftestSession& s, const std::vector<PerftestDest>& mine, const TrafficSpec& spec,
    const std::function<Status(const std::vector<PerftestDest>&)>& connect) {
  std::vector<PerftestDest> peers;
  if (Status st = handshake(s, mine, &peers); !st) return st.error();
  if (Status st = connect(peers); !st) return st.error();
  for (int r = 1; r < pre_traffic_handshakes(spec); ++r)
    if (Status st = handshake(s, mine, nullptr); !st) return st.error();
  return peers;
}

Status perftest_client_epilogue(PerftestSession& s, const std::vector<PerftestDest>& mine, const TrafficSpec& spec,
                                const PerftestResults& results) {
  if (Status st = handshake(s, mine, nullptr); !st) return st;
  if (spec.measure == Measure::Bandwidth && spec.verb != Verb::Send) {
    if (auto r = s.exchange_results(results); !r) return r.error();
    if (Status st = handshake(s, mine, nullptr); !st) return st;
  }
  if (spec.measure == Measure::Bandwidth)
    if (Status st = s.exchange_done(); !st) return st;
  return {};
}

int pre_traffic_handshakes(const TrafficSpec& s) {
  // As perftest 4.5 does it (../shared/captures/rxe): the record, "remote print", "after RTR",
  // and for SEND bandwidth one more so the server's receives are up before the first SEND.
  return s.measure == Measure::Bandwidth && s.verb == Verb::Send ? 4 : 3;
}

Result<ClientRun> run_perftest_client(dp::Dataplane& dp, const ClientOptions& o,
                                      const std::function<void(const std::string&)>& progress) {
  ClientRun run;
  const std::vector<std::uint32_t> sizes = o.sizes.empty() ? std::vector<std::uint32_t>{o.spec.size} : o.sizes;
  const std::uint32_t max_size = std::max<std::uint32_t>(*std::max_element(sizes.begin(), sizes.end()), 8);

  auto tcp = TcpStream::connect(o.server, o.port, o.oob_timeout_ms);
  if (!tcp) return tcp.error();
  PerftestSession session(*tcp, OobRole::Client, o.oob_timeout_ms);
  auto mtu = perftest_client_preamble(session, o.qp.mtu);
  if (!mtu) return mtu.error();
  run.remote_version = session.remote_version();
  run.mtu = *mtu;
  QpParams qp_params = o.qp;
  qp_params.mtu = *mtu;

  // Per QP: [send area | landing area] of max_size each, plus a scratch area for --verify.
  const std::size_t per_qp = 3 * std::size_t{max_size};
  auto buffer = MappedBuffer::anonymous(per_qp * o.qps);
  if (!buffer) return buffer.error();
  Connector conn(dp, static_cast<std::uint64_t>(dp.now()) ^ 0x9E3779B97F4A7C15ULL);
  auto mr = conn.register_memory(buffer->data(), buffer->size(), kAllAccess);
  if (!mr) return mr.error();

  std::vector<ClientQp> qps;
  for (unsigned i = 0; i < o.qps; ++i) {
    auto lq = conn.create(qp_params);
    if (!lq) return lq.error();
    ClientQp q;
    q.local = *lq;
    q.mine.out_reads = qp_params.max_rd_atomic;
    q.mine.qpn = lq->qpn;
    q.mine.psn = lq->psn;
    q.mine.rkey = (*mr)->rkey();
    q.mine.vaddr = reinterpret_cast<std::uint64_t>(buffer->data() + i * per_qp) + max_size;  // landing area
    q.mine.gid = conn.local_gid();
    qps.push_back(q);
  }
  std::vector<PerftestDest> mine;
  for (const ClientQp& q : qps) mine.push_back(q.mine);
  auto peers = perftest_client_handshakes(session, mine, o.spec, [&](const std::vector<PerftestDest>& p) -> Status {
    for (std::size_t i = 0; i < qps.size(); ++i) {
      qps[i].peer = p[i];
      if (Status s = conn.connect(qps[i].local, RemoteQp{p[i].qpn, p[i].psn, p[i].gid}, qp_params); !s) return s;
    }
    return {};
  });
  if (!peers) return peers.error();

  DriverSet drivers(dp);
  for (std::uint32_t size : sizes) {
    TrafficSpec spec = o.spec;
    spec.size = size;
    std::vector<std::unique_ptr<BwClient>> bw;
    std::vector<std::unique_ptr<LatClient>> lat;
    std::vector<std::uint64_t> ids;
    std::vector<std::uint64_t> atomic_before(qps.size(), 0);
    for (std::size_t i = 0; i < qps.size(); ++i) {
      std::byte* base = buffer->data() + i * per_qp;
      if (o.verify && spec.verb == Verb::Read) {
        // Give the far side known contents to read back.
        fill_pattern(base, size, size);
        TrafficSpec w = spec;
        w.verb = Verb::Write;
        w.measure = Measure::Bandwidth;
        w.iters = 1;
        BwClient writer(qps[i].local, w, LocalBuffer{base, size, (*mr)->lkey()}, RemoteBuffer{qps[i].peer.vaddr, qps[i].peer.rkey});
        const auto id = drivers.add(qps[i].local.worker, [&writer](Engine& e, Nanos now) { writer.poll(e, now); });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!drivers.inspect(qps[i].local.worker, [&] { return writer.status().done; })) {
          if (dp::StopSignals::requested() || std::chrono::steady_clock::now() > deadline) {
            drivers.remove(qps[i].local.worker, id);
            return make_error(ETIMEDOUT, "writing the pattern to verify READs did not complete");
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        drivers.remove(qps[i].local.worker, id);
        std::memset(base, 0, size);
      }
      if (o.verify && spec.verb == Verb::Atomic) {
        if (Status s = read_back(dp, drivers, qps[i].local, LocalBuffer{base + 2 * std::size_t{max_size}, 8, (*mr)->lkey()},
                                 RemoteBuffer{qps[i].peer.vaddr, qps[i].peer.rkey}, 8);
            !s)
          return s.error();
        std::memcpy(&atomic_before[i], base + 2 * std::size_t{max_size}, 8);
      }
      // Every QP writes the same pattern: a server may give them all the same address (the
      // appliance exposes one region), and the last writer must not make the check fail.
      if (o.verify && spec.verb != Verb::Read) fill_pattern(base, size, size);
      const LocalBuffer local{base, 2 * std::size_t{max_size}, (*mr)->lkey()};
      const RemoteBuffer remote{qps[i].peer.vaddr, qps[i].peer.rkey};
      if (spec.measure == Measure::Bandwidth) {
        bw.push_back(std::make_unique<BwClient>(qps[i].local, spec, local, remote));
        BwClient* d = bw.back().get();
        ids.push_back(drivers.add(qps[i].local.worker, [d](Engine& e, Nanos now) { d->poll(e, now); }));
      } else {
        lat.push_back(std::make_unique<LatClient>(qps[i].local, spec, local, remote));
        LatClient* d = lat.back().get();
        ids.push_back(drivers.add(qps[i].local.worker, [d](Engine& e, Nanos now) { d->poll(e, now); }));
      }
    }
    // Wait, with a progress line each second.
    const auto t0 = std::chrono::steady_clock::now();
    auto next_report = t0 + std::chrono::seconds(1);
    std::uint64_t last_done = 0, last_seen = 0;
    auto last_progress = t0;
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      bool all = true;
      std::uint64_t done_ops = 0;
      for (std::size_t i = 0; i < qps.size(); ++i) {
        const DriverStatus st = drivers.inspect(qps[i].local.worker, [&] {
          return spec.measure == Measure::Bandwidth ? bw[i]->status() : lat[i]->status();
        });
        all = all && st.done;
        done_ops += st.completed;
      }
      if (all) break;
      const auto now = std::chrono::steady_clock::now();
      if (dp::StopSignals::requested()) {
        for (std::size_t i = 0; i < qps.size(); ++i) drivers.remove(qps[i].local.worker, ids[i]);
        for (ClientQp& q : qps) conn.destroy(q.local);
        return make_error(ECANCELED, "stopped by a signal after " + std::to_string(done_ops) + " operations");
      }
      if (done_ops != last_seen) {
        last_seen = done_ops;
        last_progress = now;
      } else if (now - last_progress > std::chrono::nanoseconds(o.stall_timeout)) {
        for (std::size_t i = 0; i < qps.size(); ++i) drivers.remove(qps[i].local.worker, ids[i]);
        for (ClientQp& q : qps) conn.destroy(q.local);
        return make_error(ETIMEDOUT, "no operation completed for " + std::to_string(o.stall_timeout / kSecond) +
                                         " s (" + std::to_string(done_ops) + " done)" +
                                         (spec.verb == Verb::Send && spec.measure == Measure::Latency
                                              ? ": a SEND latency test needs a server that echoes (roce-appliance --echo)"
                                          : spec.verb == Verb::Write && spec.measure == Measure::Latency
                                              ? ": a WRITE latency test needs a server that writes back (roce-appliance --write-echo SIZE)"
                                              : ": is the peer still there?"));
      }
      if (now >= next_report && progress) {
        const double secs = std::chrono::duration<double>(now - t0).count();
        const double gbps = static_cast<double>(done_ops - last_done) * op_bytes(spec) * 8 / 1e9;
        progress("  " + std::to_string(size) + " B: " + std::to_string(done_ops) + " ops after " +
                 std::to_string(static_cast<int>(secs)) + " s, " + std::to_string(gbps).substr(0, 6) + " Gb/s in the last second");
        last_done = done_ops;
        next_report += std::chrono::seconds(1);
      }
    }
    for (std::size_t i = 0; i < qps.size(); ++i) drivers.remove(qps[i].local.worker, ids[i]);

    if (spec.measure == Measure::Bandwidth) {
      BwFigures f;
      f.size = op_bytes(spec);
      Nanos first = kNever, last = 0;
      for (auto& d : bw) {
        f.iterations += d->status().completed;
        run.counters.errors += d->status().errors;
        if (d->status().errors && run.counters.first_error.empty())
          run.counters.first_error = ibv_wc_status_str(d->status().first_error);
        first = std::min(first, d->first_post());
        last = std::max(last, d->last_completion());
        f.bw_peak_bps += d->peak_bytes_per_s();
      }
      f.elapsed = last > first ? last - first : 0;
      if (f.elapsed > 0) {
        f.bw_avg_bps = static_cast<double>(f.iterations) * f.size * 1e9 / static_cast<double>(f.elapsed);
        f.msg_rate_mpps = static_cast<double>(f.iterations) / static_cast<double>(f.elapsed) * 1e3;
      }
      f.bw_peak_bps = std::max(f.bw_peak_bps, f.bw_avg_bps);
      run.bw.push_back(f);
    } else {
      std::vector<Nanos> all;
      for (auto& d : lat) {
        all.insert(all.end(), d->samples().begin(), d->samples().end());
        run.counters.errors += d->status().errors;
        if (d->status().errors && run.counters.first_error.empty())
          run.counters.first_error = ibv_wc_status_str(d->status().first_error);
      }
      run.lat.push_back(summarise_latency(op_bytes(spec), std::move(all), lat.front()->round_trip()));
    }

    if (o.verify && run.counters.errors == 0) {
      run.verified = true;
      for (std::size_t i = 0; i < qps.size(); ++i) {
        std::byte* base = buffer->data() + i * per_qp;
        std::byte* scratch = base + 2 * std::size_t{max_size};
        const RemoteBuffer remote{qps[i].peer.vaddr, qps[i].peer.rkey};
        if (spec.verb == Verb::Write) {
          if (Status s = read_back(dp, drivers, qps[i].local, LocalBuffer{scratch, size, (*mr)->lkey()}, remote, size); !s)
            return s.error();
          run.verified = run.verified && std::memcmp(scratch, base, size) == 0;
        } else if (spec.verb == Verb::Read) {
          std::vector<std::byte> want(size);
          fill_pattern(want.data(), size, size);
          run.verified = run.verified && std::memcmp(want.data(), base, size) == 0;
        } else if (spec.verb == Verb::Atomic) {
          if (Status s = read_back(dp, drivers, qps[i].local, LocalBuffer{scratch, 8, (*mr)->lkey()}, remote, 8); !s)
            return s.error();
          std::uint64_t after;
          std::memcpy(&after, scratch, 8);
          const std::uint64_t ops = spec.measure == Measure::Bandwidth ? bw[i]->status().completed : lat[i]->status().completed;
          run.verified = run.verified && after == atomic_before[i] + ops;
        }
        // SEND lands in the server's receive buffers, which it does not expose: nothing to read back.
      }
    }
  }

  // Post-traffic: one handshake, the results (RDMA bandwidth tests), another handshake, "done".
  PerftestResults results;
  if (!run.bw.empty()) {
    const BwFigures& f = run.bw.back();
    results = PerftestResults{f.size, f.iterations, f.bw_peak_bps / (1024.0 * 1024.0), f.bw_avg_bps / (1024.0 * 1024.0),
                              f.msg_rate_mpps};
  }
  for (ClientQp& q : qps) {
    const Counters c = dp.call(q.local.worker, [&](Engine&) { return q.local.qp->counters(); });
    run.counters.retransmits += c.get(Counter::RetransmittedPkts);
    run.counters.naks += c.get(Counter::NaksReceived);
    run.counters.timeouts += c.get(Counter::RetransmitTimeouts);
    run.counters.cnps_received += c.get(Counter::CnpReceived);
    run.counters.cnps_sent += c.get(Counter::CnpSent);
  }
  // A failed operation never reaches the server, which keeps waiting for it and would not
  // answer the closing exchange: say what failed now rather than time out on the peer.
  if (run.counters.errors) {
    for (ClientQp& q : qps) conn.destroy(q.local);
    return make_error(EIO, std::to_string(run.counters.errors) + " operation(s) completed with an error (first: " +
                               run.counters.first_error + "); retransmitted packets " +
                               std::to_string(run.counters.retransmits) + ", NAKs " + std::to_string(run.counters.naks) +
                               ", timeouts " + std::to_string(run.counters.timeouts));
  }
  if (Status s = perftest_client_epilogue(session, mine, o.spec, results); !s) return s.error();
  for (ClientQp& q : qps) conn.destroy(q.local);
  dp.memory().deregister((*mr)->rkey());
  return run;
}

}  // namespace roce::app
