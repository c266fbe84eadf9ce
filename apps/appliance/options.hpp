// roce-appliance's command line.
#pragma once

#include <string>
#include <vector>

#include "apps/appliance/appliance.hpp"

namespace roce::client {

struct ApplianceCli {
  bool help = false;
  std::string help_text;
  ApplianceOptions options;
};

Result<ApplianceCli> parse_appliance_options(const std::vector<std::string>& args);

// --mr-quota's default: half of MemTotal.
std::uint64_t default_mr_quota();

}  // namespace roce::client
