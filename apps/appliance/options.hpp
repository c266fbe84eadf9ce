// roce-appliance's command line.
#pragma once

#include <string>
#include <vector>

#include "apps/appliance/appliance.hpp"

namespace roce::app {

struct ApplianceCli {
  bool help = false;
  std::string help_text;
  ApplianceOptions options;
};

Result<ApplianceCli> parse_appliance_options(const std::vector<std::string>& args);

}  // namespace roce::app
