// Raw mode onto a DPDK port: frames of the stream built straight into mbufs and sent in bursts,
// each one no earlier than its departure time at the rate (paced on the TSC when run()). Frames
// the port refuses wait and go first next time, so a slow port slows the stream instead of
// losing frames. Stepped by hand with poll(elapsed), or run() on the calling lcore.
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "apps/gen/raw/craft_stats.hpp"
#include "apps/gen/raw/frame_generator.hpp"
#include "apps/gen/raw/stream_clock.hpp"
#include "lib/status.hpp"

namespace roce::gen {

struct PortSenderOptions {
  std::uint16_t port = 0;
  std::uint16_t queue = 0;
  rte_mempool* pool = nullptr;  // its data room must hold the stream's largest frame
  Rate rate{};
  std::uint64_t count = 0;      // frames to send; 0 = until stopped
};

struct PortSenderStats {
  CraftStats crafted;            // frames the port took, by opcode, CE, bad ICRC
  std::uint64_t tx_busy = 0;     // times the port took only part of a burst
  std::uint64_t mbuf_alloc_failures = 0;
};

class RawPortSender {
 public:
  static Result<RawPortSender> create(RawFrameGenerator gen, const PortSenderOptions& o);
  RawPortSender(RawPortSender&&) noexcept;
  RawPortSender& operator=(RawPortSender&&) = delete;
  ~RawPortSender();

  // Sends every frame due `elapsed` ns after the first one. Returns frames the port took.
  unsigned poll(Nanos elapsed);
  bool done() const { return pending_count_ == 0 && o_.count != 0 && made_ >= o_.count; }
  // Busy-polls on the TSC until done(), `stop`, or `max_ns` have passed; returns the ns it ran.
  Nanos run(const std::atomic<bool>& stop, Nanos max_ns = kNever);

  const PortSenderStats& stats() const { return stats_; }

 private:
  static constexpr std::uint16_t kBurstFrames = 32;
  static constexpr unsigned kMaxBurstsPerPoll = 4;
  RawPortSender(RawFrameGenerator gen, const PortSenderOptions& o);
  bool flush_pending();

  RawFrameGenerator gen_;
  PortSenderOptions o_;
  StreamClock clock_;
  std::uint64_t made_ = 0;
  // Built but not yet taken by the port; what each one is, to count it once it is.
  std::array<rte_mbuf*, kBurstFrames> pending_{};
  struct Made {
    CraftedFrame frame;
    Nanos departure = 0;
  };
  std::array<Made, kBurstFrames> pending_made_{};
  std::uint16_t pending_count_ = 0;
  PortSenderStats stats_;
};

}  // namespace roce::gen
