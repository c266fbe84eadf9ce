#include "apps/gen/ud_pingpong_client.hpp"

#include <chrono>
#include <cstring>
#include <thread>

#include "client/buffers.hpp"
#include "client/driver_set.hpp"
#include "client/oob/pingpong.hpp"
#include "client/traffic/drivers.hpp"

namespace roce::client {

namespace {

constexpr std::uint32_t kGrhBytes = 40;
constexpr std::uint32_t kQkey = 0x11111111;

// One datagram out, the echo back, timed; runs on the QP's worker.
class UdPinger {
 public:
  UdPinger(const LocalQp& qp, rdma::AddressHandle* ah, std::uint32_t remote_qpn, const TrafficSpec& spec, std::byte* send_buf,
           std::byte* recv_buf, std::uint32_t lkey)
      : qp_(qp), ah_(ah), remote_qpn_(remote_qpn), spec_(spec), send_(send_buf), recv_(recv_buf), lkey_(lkey) {
    samples_.reserve(spec.iters);
  }

  void poll(rdma::Engine& e, Nanos now) {
    if (st_.done) return;
    ibv_wc wc[8];
    const int n = e.poll_cq(qp_.cq, 8, wc);
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (st_.errors++ == 0) st_.first_error = wc[i].status;
        st_.done = true;
        return;
      }
      if (wc[i].opcode == IBV_WC_RECV) {
        recv_done_ = true;
        // The echo carries our payload back behind the GRH.
        if (wc[i].byte_len != spec_.size + kGrhBytes || std::memcmp(recv_ + kGrhBytes, send_, spec_.size) != 0) ++mismatches_;
      } else {
        send_done_ = true;
      }
    }
    if (in_flight_) {
      if (!send_done_ || !recv_done_) return;
      samples_.push_back(now - started_);
      ++st_.completed;
      in_flight_ = false;
    }
    if (st_.completed >= spec_.iters) {
      st_.done = true;
      return;
    }
    // A fresh pattern per iteration, so a stale buffer cannot pass for an echo.
    for (std::uint32_t i = 0; i < spec_.size; ++i) send_[i] = static_cast<std::byte>((i * 7 + st_.completed * 13 + 1) & 0xFF);
    std::memset(recv_, 0, spec_.size + kGrhBytes);
    ibv_sge rs{reinterpret_cast<std::uint64_t>(recv_), spec_.size + kGrhBytes, lkey_};
    ibv_recv_wr rwr{};
    rwr.sg_list = &rs;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    ibv_sge ss{reinterpret_cast<std::uint64_t>(send_), spec_.size, lkey_};
    ibv_send_wr swr{};
    swr.opcode = IBV_WR_SEND;
    swr.sg_list = &ss;
    swr.num_sge = 1;
    swr.send_flags = IBV_SEND_SIGNALED;
    swr.wr.ud.ah = &ah_->base;
    swr.wr.ud.remote_qpn = remote_qpn_;
    swr.wr.ud.remote_qkey = kQkey;
    ibv_send_wr* sbad = nullptr;
    if (e.post_recv(qp_.qp, &rwr, &rbad) != 0 || e.post_send(qp_.qp, &swr, &sbad) != 0) {
      if (st_.errors++ == 0) st_.first_error = IBV_WC_GENERAL_ERR;
      st_.done = true;
      return;
    }
    started_ = now;
    in_flight_ = true;
    send_done_ = recv_done_ = false;
  }

  const DriverStatus& status() const { return st_; }
  const std::vector<Nanos>& samples() const { return samples_; }
  std::uint64_t mismatches() const { return mismatches_; }

 private:
  LocalQp qp_;
  rdma::AddressHandle* ah_;
  std::uint32_t remote_qpn_;
  TrafficSpec spec_;
  std::byte* send_;
  std::byte* recv_;
  std::uint32_t lkey_;
  bool in_flight_ = false, send_done_ = false, recv_done_ = false;
  Nanos started_ = 0;
  std::vector<Nanos> samples_;
  std::uint64_t mismatches_ = 0;
  DriverStatus st_;
};

}  // namespace

Result<UdPingpongRun> run_ud_pingpong_client(dp::Dataplane& dp, const std::string& server, std::uint16_t port,
                                             const TrafficSpec& spec) {
  auto tcp = TcpStream::connect(server, port, 30'000);
  if (!tcp) return tcp.error();
  auto buf = MappedBuffer::anonymous(2 * (std::size_t{spec.size} + kGrhBytes) + 64);
  if (!buf) return buf.error();
  Connector conn(dp, static_cast<std::uint64_t>(dp.now()) | 1);
  auto mr = conn.register_memory(buf->data(), buf->size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return mr.error();
  QpParams p;
  p.type = IBV_QPT_UD;
  p.send_depth = 16;
  p.recv_depth = 16;
  auto lq = conn.create(p);
  if (!lq) return lq.error();
  PingpongDest mine;
  mine.qpn = lq->qpn;
  mine.psn = lq->psn;
  mine.gid = conn.local_gid();
  auto peer = pingpong_client_exchange(*tcp, mine);
  if (!peer) return peer.error();
  if (Status s = conn.connect(*lq, RemoteQp{peer->qpn, peer->psn, peer->gid}, p); !s) return s.error();
  auto ah = dp.call(lq->worker, [&](rdma::Engine& e) {
    ibv_ah_attr a{};
    a.is_global = 1;
    a.grh.dgid = peer->gid;
    a.grh.hop_limit = 1;
    a.port_num = 1;
    return e.create_ah(lq->pd, a);
  });
  if (!ah) return ah.error();

  std::byte* send_buf = buf->data();
  std::byte* recv_buf = buf->data() + spec.size + kGrhBytes;
  UdPinger pinger(*lq, *ah, peer->qpn, spec, send_buf, recv_buf, (*mr)->lkey());
  DriverSet drivers(dp);
  const auto id = drivers.add(lq->worker, [&pinger](rdma::Engine& e, Nanos now) { pinger.poll(e, now); });
  // UD has no retransmission: a datagram lost on the way ends the run here, not in a hang.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10) +
                       std::chrono::milliseconds(200) * static_cast<long>(spec.iters);
  while (!drivers.inspect(lq->worker, [&] { return pinger.status().done; }) && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  drivers.remove(lq->worker, id);
  UdPingpongRun run;
  run.lat = summarise_latency(spec.size, pinger.samples(), true);
  run.payload_mismatches = pinger.mismatches();
  run.counters.errors = pinger.status().errors;
  if (pinger.status().errors) run.counters.first_error = ibv_wc_status_str(pinger.status().first_error);
  if (!pinger.status().done) {
    ++run.counters.errors;
    run.counters.first_error = "no echo for a datagram (lost, or the peer stopped)";
  }
  dp.call(lq->worker, [&](rdma::Engine& e) { return e.destroy_ah(*ah); });
  conn.destroy(*lq);
  dp.memory().deregister((*mr)->rkey());
  return run;
}

}  // namespace roce::client
