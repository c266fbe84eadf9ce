#include "apps/gen/pingpong_client.hpp"

#include <chrono>
#include <thread>

#include "client/buffers.hpp"
#include "client/driver_set.hpp"
#include "client/oob/pingpong.hpp"
#include "client/traffic/drivers.hpp"
#include "dataplane/signals.hpp"

namespace roce::client {

Result<PingpongRun> run_pingpong_client(dp::Dataplane& dp, const std::string& server, std::uint16_t port,
                                        const TrafficSpec& spec, const QpParams& qp,
                                        const std::function<void(const std::string&)>& progress) {
  auto tcp = TcpStream::connect(server, port, 30'000);
  if (!tcp) return tcp.error();
  auto buf = MappedBuffer::anonymous(std::max<std::size_t>(spec.size, 64));
  if (!buf) return buf.error();
  Connector conn(dp, static_cast<std::uint64_t>(dp.now()) | 1);
  auto mr = conn.register_memory(buf->data(), buf->size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return mr.error();
  QpParams p = qp;
  p.max_rd_atomic = 1;
  auto lq = conn.create(p);
  if (!lq) return lq.error();
  PingpongDest mine;
  mine.qpn = lq->qpn;
  mine.psn = lq->psn;
  mine.gid = conn.local_gid();
  auto peer = pingpong_client_exchange(*tcp, mine);
  if (!peer) return peer.error();
  if (Status s = conn.connect(*lq, RemoteQp{peer->qpn, peer->psn, peer->gid}, p); !s) return s.error();

  DriverSet drivers(dp);
  TrafficSpec s = spec;
  s.verb = Verb::Send;
  s.measure = Measure::Latency;
  LatClient client(*lq, s, LocalBuffer{buf->data(), buf->size(), (*mr)->lkey()}, RemoteBuffer{});
  const auto id = drivers.add(lq->worker, [&client](rdma::Engine& e, Nanos now) { client.poll(e, now); });
  // No progress for 10 s (the peer went away) or a signal ends the run.
  std::uint64_t last = 0;
  auto last_progress = std::chrono::steady_clock::now();
  const auto t0 = last_progress;
  auto next_report = t0 + std::chrono::seconds(1);
  std::uint64_t last_reported = 0;
  for (;;) {
    const DriverStatus st = drivers.inspect(lq->worker, [&] { return client.status(); });
    if (st.done) break;
    const auto now = std::chrono::steady_clock::now();
    if (st.completed != last) {
      last = st.completed;
      last_progress = now;
    }
    if (dp::StopSignals::requested() || now - last_progress > std::chrono::seconds(10)) {
      drivers.remove(lq->worker, id);
      conn.destroy(*lq);
      return make_error(ETIMEDOUT, dp::StopSignals::requested() ? "stopped by a signal"
                                                                 : "no answer from the pingpong server for 10 s");
    }
    if (progress && now >= next_report) {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - t0).count();
      progress("  " + std::to_string(s.size) + " B: " + std::to_string(st.completed) + " round trips after " +
               std::to_string(secs) + " s, " + std::to_string(st.completed - last_reported) + " in the last second");
      last_reported = st.completed;
      next_report += std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  drivers.remove(lq->worker, id);
  PingpongRun run;
  run.lat = summarise_latency(s.size, client.samples(), true);
  run.counters.errors = client.status().errors;
  if (client.status().errors) run.counters.first_error = ibv_wc_status_str(client.status().first_error);
  const rdma::Counters c = dp.call(lq->worker, [&](rdma::Engine&) { return lq->qp->counters(); });
  run.counters.retransmits = c.get(rdma::Counter::RetransmittedPkts);
  run.counters.naks = c.get(rdma::Counter::NaksReceived);
  run.counters.timeouts = c.get(rdma::Counter::RetransmitTimeouts);
  conn.destroy(*lq);
  dp.memory().deregister((*mr)->rkey());
  return run;
}

}  // namespace roce::client
