// Per-flow analysis of one capture, frame by frame in capture order: marks retransmissions and
// duplicate requests on the frames (so filters and outputs see them), pairs each requester's
// flow with the responder's answers into connections, and keeps what --summary and --plot show:
// frames and bytes, goodput over time, NAKs by syndrome, retransmitted PSNs, ACK coalescing,
// ECN CE marks and CNPs, RTT from a request to the response that answers it.
//
// A flow is the traffic to one QP: (source address, destination address, destination QP). A
// connection is a request flow A -> (B, qp b) with the response flow B -> (A, qp a) whose
// responses carry the request flow's PSNs (the BTH names only the destination QP, so that is
// how the two are found).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "apps/inspect/frame_view.hpp"
#include "apps/inspect/rate_timeline.hpp"

namespace roce::inspect {

struct FlowKey {
  IpView src, dst;
  std::uint32_t qpn = 0;
  friend bool operator==(const FlowKey&, const FlowKey&) = default;
};

struct FlowKeyHash {
  std::size_t operator()(const FlowKey& k) const noexcept;
};

struct RttStats {
  std::uint64_t samples = 0;
  std::int64_t min_ns = 0, max_ns = 0;
  double sum_ns = 0;
  std::vector<std::int64_t> kept;  // up to kKept samples, for the median
  static constexpr std::size_t kKept = 4096;
  void add(std::int64_t ns);
  std::int64_t median_ns() const;
};

// A point of the PSN-over-time picture.
struct PsnPoint {
  std::int64_t t_ns;
  std::int32_t psn_offset;  // from the flow's first PSN, unwrapped
  std::uint8_t kind;        // PsnPoint::kNew, kRetransmission, kNak
  static constexpr std::uint8_t kNew = 0, kRetransmission = 1, kNak = 2;
};

struct Flow {
  FlowKey key;
  std::string transport;  // of its first frame with a BTH
  std::uint64_t frames = 0, bytes = 0, payload_bytes = 0;
  std::int64_t first_ns = 0, last_ns = 0;
  std::uint64_t requests = 0, responses = 0, acks = 0, cnps = 0, ce = 0;
  std::uint64_t retransmitted = 0, duplicates = 0;
  std::map<std::uint32_t, std::uint32_t> retransmitted_psns;  // PSN -> times, first kMaxPsnsKept PSNs
  std::uint64_t retransmitted_distinct = 0;
  std::map<std::uint8_t, std::uint64_t> naks;  // by syndrome
  std::map<std::uint8_t, std::vector<std::uint32_t>> nak_psns;  // first few PSNs of each
  RateTimeline goodput;  // first-time payload bytes (requests, READ responses)

  // Sequence state: of the requests, and of the READ responses (a flow can carry both, when
  // both QPs of a connection send requests).
  bool seen_psn = false;
  std::uint32_t first_psn = 0, max_psn = 0;
  bool resp_seen = false;
  std::uint32_t resp_max = 0;
  bool acked_any = false;
  std::uint32_t acked_psn = 0;  // requests: highest PSN the responder acknowledged
  bool last_ack_valid = false;
  std::uint32_t last_ack_psn = 0;   // responses: PSN of the previous ACK
  std::uint64_t packets_acked = 0, coalesced_acks = 0;
  Flow* peer = nullptr;  // the other direction of its connection
  bool is_request_flow = false;
  RttStats rtt;  // requests: request -> the response that answers it

  struct Pending {
    std::uint32_t psn;
    std::int64_t t_ns;
    bool ambiguous;  // retransmitted: the response cannot be told apart (Karn)
  };
  std::vector<Pending> pending;  // ring of requests awaiting a response
  std::size_t pending_head = 0;
  std::vector<PsnPoint> points;  // with --plot

  static constexpr std::size_t kMaxPsnsKept = 64;
  static constexpr std::size_t kMaxPending = 65536;
};

struct AnalysisOptions {
  bool keep_points = false;  // for --plot
  std::size_t max_points = 20'000'000;
};

class Analysis {
 public:
  explicit Analysis(AnalysisOptions o = {}) : o_(o) {}

  // In capture order. Sets the frame's Retransmission and Duplicate flags, then asks
  // `displayed` (the display filter, which may test those flags) whether the frame goes into
  // the statistics; sequence state, pairing and RTTs follow every frame either way. Returns
  // what `displayed` said.
  template <typename Displayed>
  bool observe(FrameView& f, Displayed&& displayed) {
    Flow* fl = classify(f);
    const bool counted = displayed(static_cast<const FrameView&>(f));
    if (fl) account(*fl, f, counted);
    return counted;
  }
  void observe_all(FrameView& f) {
    observe(f, [](const FrameView&) { return true; });
  }

  // Flows in order of appearance.
  const std::vector<std::unique_ptr<Flow>>& flows() const { return flows_; }
  std::int64_t first_ns() const { return first_ns_; }
  std::int64_t last_ns() const { return last_ns_; }
  bool points_truncated() const { return points_truncated_; }

 private:
  Flow* classify(FrameView& f);
  void account(Flow& fl, FrameView& f, bool counted);
  Flow& flow_of(const FrameView& f);
  void pair(Flow& responses, const FrameView& f);
  void on_request(Flow& fl, FrameView& f, bool counted);
  void on_response(Flow& fl, const FrameView& f, bool counted);
  void add_point(Flow& fl, const FrameView& f, std::uint8_t kind);

  AnalysisOptions o_;
  std::unordered_map<FlowKey, Flow*, FlowKeyHash> by_key_;
  std::vector<std::unique_ptr<Flow>> flows_;
  std::int64_t first_ns_ = 0, last_ns_ = 0;
  bool any_ = false;
  std::size_t points_ = 0;
  bool points_truncated_ = false;
};

}  // namespace roce::inspect
