// EAL set-up with DPDK's own conventions: EAL arguments, then `--`, then the program's.
#pragma once

#include <string>
#include <vector>

#include "lib/status.hpp"

namespace roce::dp {

struct SplitArgs {
  std::vector<std::string> eal;  // argv[0] and everything before `--`
  std::vector<std::string> app;  // argv[0] and everything after `--`
};

// argv = prog [EAL args] [-- app args]. Without `--`, everything is the program's and EAL gets
// `defaults` (a program can run on an embedded default with no DPDK arguments at all).
SplitArgs split_args(int argc, char** argv, const std::vector<std::string>& defaults);

// A --vdev value with our ring for net_af_packet when it sets none of the ring's devargs
// (blocksz, framesz, framecnt): the PMD's own default, 512 frames of 2 KiB per queue, holds
// less than four QPs may have in flight at a 1 KiB MTU (256 packets each), so a poller
// descheduled for a few milliseconds lost frames in the kernel ring (docs/loss.md, the af_packet
// case), and a 4 KiB MTU frame does not fit a 2 KiB slot. Ours: kAfPacketRingFrames slots of
// 4608 bytes (a 4 KiB MTU frame and the TPACKET header), 8 to a 36 KiB block. Other vdevs, and
// af_packet vdevs that set their ring, come back as they were.
inline constexpr unsigned kAfPacketRingFrames = 4096;
std::string with_default_af_packet_ring(const std::string& vdev);

class Eal {
 public:
  // Initialises the EAL once per process; a second call is an error.
  static Status init(const std::vector<std::string>& eal_args);
  // Releases the EAL and removes the runtime folder a primary process leaves behind.
  static void cleanup();
  static bool initialised();
};

}  // namespace roce::dp
