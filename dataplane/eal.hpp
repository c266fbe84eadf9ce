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

class Eal {
 public:
  // Initialises the EAL once per process; a second call is an error.
  static Status init(const std::vector<std::string>& eal_args);
  // Releases the EAL and removes the runtime folder a primary process leaves behind.
  static void cleanup();
  static bool initialised();
};

}  // namespace roce::dp
