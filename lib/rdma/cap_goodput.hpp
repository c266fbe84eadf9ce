// Goodput for go-back-N's BDP cap trial (WindowTuning::bdp_cap_judge, BdpJudge::Goodput, off by default):
// packets acknowledged per unit of time while the cap holds, against the same over the latest
// stretch without it. Not the RTT samples' rates: their median leaves out the slow stretches
// (a capped QP waiting for an ACK, a probe's wait), which are what a cap costs, and reads the
// bunched ACKs of a deep window as bursts of rate; on the one-thread rig the medians judged a
// cap free that ran at 0.70 of lossless, and on two lcores read a cap of 6 packets as 1.9 x
// the rate without it while the turn ran at 0.76 (docs/loss.md, part 1, "Session 12", "Session 13").
// Pure arithmetic: the send window feeds it progress with the time it came.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lib/time.hpp"

namespace roce::rdma {

class CapGoodput {
 public:
  // What the progress belongs to: the stretch without the cap (the reference), the cap being
  // judged, or neither (a cap held because losses are frequent, which is not judged).
  enum class Phase : std::uint8_t { Uncapped, Judged, Neither };

  // `decision_packets`: packets per decision; the reference is the latest as many without the cap.
  void start(std::uint32_t decision_packets) {
    *this = CapGoodput{};
    chunk_ = std::max<double>(decision_packets, kChunks) / kChunks;
    decision_ = chunk_ * kChunks;
  }
  // `packets` acknowledged at `now`. A stretch without progress longer than `gap_ceiling`, and
  // what the ACK after it acknowledged, count toward neither side: that is a descheduled poller
  // (or a timer's wait), not the cap, which sends again as soon as an ACK comes. Counting the
  // stretch at the ceiling instead left in what arrived during it, all at once: a whole
  // uncapped window against a capped one, and on the emulated 25 Gbit/s link every grown cap
  // read 0.88-0.90 of the rate without it (docs/loss.md, part 1, "Session 13").
  void on_progress(Nanos now, double packets, Phase phase, Nanos gap_ceiling) {
    const Nanos gap = last_at_ > 0 ? now - last_at_ : 0;
    last_at_ = now;
    if (skip_ > 0) {
      skip_ -= packets;
      return;
    }
    if (gap > gap_ceiling) return;
    if (phase == Phase::Judged) {
      judged_packets_ += packets;
      judged_time_ += gap;
    } else if (phase == Phase::Uncapped) {
      open_packets_ += packets;
      open_time_ += gap;
      if (open_packets_ >= chunk_) {
        packets_[chunks_ % kChunks] = open_packets_;
        time_[chunks_ % kChunks] = open_time_;
        ++chunks_;
        open_packets_ = 0;
        open_time_ = 0;
      }
    }
  }
  // A loss: what was in flight behind it (at most `in_flight` packets) is resent and delivered
  // next, at the pace of the go-back, and counts toward neither side: the loss that starts a
  // trial was paid at the uncapped window, and a loss in either stretch is one event in a few
  // hundred packets, whose cost the ratio of two such stretches should not carry by chance.
  void on_loss(double in_flight) { skip_ = std::max(skip_, in_flight); }
  // No send work: the wait for the next work request is nobody's goodput.
  void on_idle() { last_at_ = 0; }
  // A decision starts: its own count from here.
  void restart_judged() { judged_packets_ = 0, judged_time_ = 0; }
  bool decision_due() const { return judged_packets_ >= decision_; }
  // The judged stretch's goodput over the reference's; -1 while the reference is shorter than
  // half a decision's packets (nothing then says the cap is free).
  double ratio() const {
    const std::uint32_t n = std::min(chunks_, kChunks);
    if (n < kChunks / 2 || judged_time_ <= 0) return -1;
    double p = 0;
    Nanos t = 0;
    for (std::uint32_t i = 0; i < n; ++i) p += packets_[i], t += time_[i];
    if (t <= 0) return -1;
    return (judged_packets_ / static_cast<double>(judged_time_)) / (p / static_cast<double>(t));
  }

 private:
  static constexpr std::uint32_t kChunks = 8;
  double packets_[kChunks] = {};  // the reference: a ring of stretches of chunk_ packets
  Nanos time_[kChunks] = {};
  std::uint32_t chunks_ = 0;
  double open_packets_ = 0;  // the stretch filling now
  Nanos open_time_ = 0;
  double judged_packets_ = 0;
  Nanos judged_time_ = 0;
  double chunk_ = 32, decision_ = 256;
  double skip_ = 0;
  Nanos last_at_ = 0;  // 0: no progress yet, or idle since
};

}  // namespace roce::rdma
