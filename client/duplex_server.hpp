// The server's half of perftest's -b (duplex) bandwidth tests: perftest's server, given -b, runs
// the same traffic toward the client as the client runs toward it (run_iter_bw; ib_send_bw's
// run_iter_bi, which also waits for the peer's SENDs), between a sync before each size and the
// results both sides swap after it (xchg_bw_reports: each side sends its own figures, each prints
// the sum). The exchange never says how much to send: the server is told -s / -a and -n, as
// perftest's own server is.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "client/buffers.hpp"
#include "client/connector.hpp"
#include "client/driver_set.hpp"
#include "client/oob/perftest.hpp"
#include "client/oob/perftest_flow.hpp"
#include "client/traffic/drivers.hpp"

namespace roce::client {

// Where a -b client is in perftest's flow, from the records and results it sends: which sync
// comes right before a size's traffic. The first round of records names every QP (new ones);
// the first record of a known QP tells -q.
class DuplexCursor {
 public:
  explicit DuplexCursor(const PerftestTest& t) : flow_(perftest_flow(t)) {}
  // A record arrived (`new_qp`: its QP was not seen before). Gives the size index whose traffic
  // starts once it is answered, or an error naming where the client left -b's order.
  Result<std::optional<std::uint32_t>> record(bool new_qp);
  // The first field of a results exchange arrived.
  Status results();
  unsigned qps() const { return qps_; }

 private:
  void skip_local();
  Error astray(const std::string& got) const;
  std::vector<FlowOp> flow_;
  std::size_t pos_ = 0;
  unsigned qps_ = 0;  // 0 until the first round is over
  unsigned in_round_ = 0;
};

// One size's traffic of the server on every QP, and its figures.
struct DuplexQp {
  LocalQp local;
  RemoteBuffer remote;
};

class DuplexTraffic {
 public:
  DuplexTraffic(Connector& conn, DriverSet& drivers) : conn_(conn), drivers_(drivers) {}
  ~DuplexTraffic();
  DuplexTraffic(const DuplexTraffic&) = delete;
  DuplexTraffic& operator=(const DuplexTraffic&) = delete;

  // Starts `spec` on every QP; SEND also takes as many SENDs from the client on each QP, into
  // receives `recv_depth` deep (posted before this returns: the client may send at once);
  // `recv_depth` 0: the QPs take them from the session's shared receive queue (--use-srq).
  Status start(const std::vector<DuplexQp>& qps, const TrafficSpec& spec, std::uint32_t recv_depth, bool ud);
  // Waits for the size to finish (its operations completed and, SEND, the client's arrived);
  // fails when nothing moves for `stall`. The figures are perftest's, in MB/sec.
  Result<PerftestResults> finish(Nanos stall);
  std::uint64_t received_messages() const { return received_messages_; }
  std::uint64_t received_bytes() const { return received_bytes_; }
  bool running() const { return !bw_.empty(); }
  void stop();

 private:
  Status ensure_buffer(std::size_t per_qp, std::size_t qps);
  Connector& conn_;
  DriverSet& drivers_;
  MappedBuffer buffer_;
  const rdma::MemoryRegion* mr_ = nullptr;
  std::size_t per_qp_ = 0;
  TrafficSpec spec_;
  std::vector<DuplexQp> qps_;
  std::vector<std::unique_ptr<BwClient>> bw_;
  std::vector<std::uint64_t> ids_;
  std::uint64_t received_messages_ = 0, received_bytes_ = 0;
};

}  // namespace roce::client
