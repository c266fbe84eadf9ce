// A capture as the replay handles it: Ethernet frames with nanosecond timestamps, read from
// and written to pcap files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/status.hpp"
#include "lib/time.hpp"
#include "protocol/be.hpp"

namespace roce::replay {

struct Frame {
  Nanos ts = 0;                 // since the epoch
  std::vector<std::byte> bytes;
  std::uint64_t index = 0;      // 1-based position in the file it came from (0: made here)
};

// Ethernet captures only: the engine takes Ethernet frames. Records cut by the snap length
// are kept as they are (the engine then finds their ICRC not checkable and drops them).
Result<std::vector<Frame>> read_frames(const std::string& path);
// Classic pcap, microsecond timestamps (truncated).
Status write_frames(const std::string& path, const std::vector<Frame>& frames);

}  // namespace roce::replay
