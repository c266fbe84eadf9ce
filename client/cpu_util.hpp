// perftest's --cpu_util: the host's CPU time from the first line of /proc/stat, and the user
// time over user plus idle between two readings, in percent (get_cpu_stats and calc_cpu_util
// in perftest 4.5).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace roce::client {

struct CpuTimes {
  std::uint64_t user = 0;
  std::uint64_t idle = 0;
};

// nullopt when the file cannot be read or its first line is not "cpu USER NICE SYSTEM IDLE ...".
std::optional<CpuTimes> read_cpu_times(const std::string& path = "/proc/stat");
double cpu_util_percent(const CpuTimes& before, const CpuTimes& after);

}  // namespace roce::client
