// Raw mode into a capture file: `count` frames of the stream, each stamped with its departure
// time at the rate (nanosecond pcap, so spacing below a microsecond survives). No DPDK.
#pragma once

#include <cstdint>
#include <string>

#include "apps/gen/raw/craft_stats.hpp"
#include "apps/gen/raw/frame_generator.hpp"
#include "lib/status.hpp"

namespace roce::gen {

struct PcapOutput {
  std::string path;
  std::uint64_t count = 1000;
  Rate rate = Rate::pps(1e6);  // Unlimited: every frame stamped with the start time
  std::int64_t start_ns = 0;   // timestamp of the first frame, ns since the Unix epoch
};

Result<CraftStats> write_pcap(RawFrameGenerator& gen, const PcapOutput& out);

}  // namespace roce::gen
