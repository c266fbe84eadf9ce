// DCQCN on a queue pair: the reaction point and pacer hold what the QP sends (requests and
// READ responses) to Rc, and the notification point answers CE-marked data with CNPs.
#pragma once

#include <memory>
#include <optional>

#include "lib/cc/cnp.hpp"
#include "lib/cc/notification_point.hpp"
#include "lib/cc/pacer.hpp"
#include "lib/cc/reaction_point.hpp"
#include "lib/time.hpp"

namespace roce::rdma {

struct CongestionConfig {
  bool enabled = false;
  cc::RpParams rp = cc::paper_params(25e9);
  cc::NpParams np{};
  cc::CnpParams cnp{};
  std::uint32_t burst_bytes = 16 * 1024;  // pacer allowance: what may leave back to back at Rc
};

class QpCongestion {
 public:
  QpCongestion(const CongestionConfig& cfg, Nanos now)
      : rp_(cfg.rp), pacer_(cfg.rp.line_rate_bps, cfg.burst_bytes, now), np_(cfg.np) {}

  // Pacing gate for the next data frame of at most `max_frame_bytes`.
  bool may_send(Nanos now, std::uint32_t max_frame_bytes) const {
    return pacer_.may_send(now, cc::link_bytes(max_frame_bytes));
  }
  Nanos earliest_departure(std::uint32_t max_frame_bytes) const {
    return pacer_.earliest_departure(cc::link_bytes(max_frame_bytes));
  }
  void on_data_sent(Nanos now, std::uint32_t frame_bytes) {
    const std::uint32_t w = cc::link_bytes(frame_bytes);
    pacer_.on_sent(now, w);
    rp_.on_bytes_sent(now, w);
    sync_rate(now);
  }
  void on_cnp(Nanos now) {
    rp_.on_cnp(now);
    sync_rate(now);
  }
  // A CE-marked data packet arrived: true when a CNP should go now.
  bool on_ce(Nanos now) { return np_.on_ce_packet(now); }
  // Timers: returns true when a deferred CNP is due.
  bool advance(Nanos now) {
    rp_.advance(now);
    sync_rate(now);
    return np_.advance(now);
  }
  Nanos next_deadline() const {
    const Nanos a = rp_.next_deadline(), b = np_.next_deadline();
    return a < b ? a : b;
  }
  const cc::ReactionPoint& reaction_point() const { return rp_; }
  const cc::NotificationPoint& notification_point() const { return np_; }
  const cc::Pacer& pacer() const { return pacer_; }

 private:
  void sync_rate(Nanos now) {
    if (rp_.rc_bps() != pacer_.rate_bps()) pacer_.set_rate(now, rp_.rc_bps());
  }
  cc::ReactionPoint rp_;
  cc::Pacer pacer_;
  cc::NotificationPoint np_;
};

}  // namespace roce::rdma
