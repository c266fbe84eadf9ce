#include "client/cpu_util.hpp"

#include <fstream>
#include <sstream>

namespace roce::client {

std::optional<CpuTimes> read_cpu_times(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  std::istringstream in(line);
  std::string name;
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0;
  if (!(in >> name >> user >> nice >> system >> idle) || name != "cpu") return std::nullopt;
  return CpuTimes{user, idle};
}

double cpu_util_percent(const CpuTimes& before, const CpuTimes& after) {
  const double user = static_cast<double>(after.user - before.user);
  const double idle = static_cast<double>(after.idle - before.idle);
  return user + idle > 0 ? user / (user + idle) * 100 : 0;
}

}  // namespace roce::client
