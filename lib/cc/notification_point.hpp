// DCQCN notification point (the receiver side) for one flow: decides when a CE-marked data
// packet produces a CNP (spec 5.2). The caller classifies packets (see cnp.hpp triggers_cnp());
// only CE-marked data packets are passed in. One instance per QP; one per port gives NVIDIA's
// per-port pacing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/cc/counters.hpp"
#include "lib/time.hpp"

namespace roce::cc {

enum class NpMode : std::uint8_t {
  Paper,     // immediate if no CNP in the last N, else one deferred CNP at the end of the window
  Suppress,  // immediate if no CNP in the last N, else nothing
  Sample,    // one CNP at the next multiple of N if a CE arrived since the last sample (Yibo ns-3)
  PerAck,    // a CNP for every CE packet, no pacing (HPCC ns-3: the ACK carries the flag)
};

struct NpParams {
  NpMode mode = NpMode::Paper;
  Nanos interval = from_us(50);  // N
};

class NotificationPoint {
 public:
  explicit NotificationPoint(const NpParams& params) : params_(params) {}

  // A CE-marked data packet arrived; true: send a CNP now.
  bool on_ce_packet(Nanos now);
  // true: a deferred CNP is due (deadline <= now); send it now. At most one per call.
  bool advance(Nanos now);
  Nanos next_deadline() const { return deadline_; }

  const NpCounters& counters() const { return counters_; }
  const NpParams& params() const { return params_; }

 private:
  bool window_open(Nanos now) const { return !sent_any_ || now - last_cnp_ >= params_.interval; }
  bool send(Nanos now);

  NpParams params_;
  Nanos last_cnp_ = 0;
  bool sent_any_ = false;
  bool pending_ = false;
  Nanos deadline_ = kNever;
  NpCounters counters_;
};

// nullopt when usable, else what is wrong.
std::optional<std::string> check(const NpParams& p);

std::string to_string(NpMode m);
std::optional<NpMode> np_mode_from_string(std::string_view s);

}  // namespace roce::cc
