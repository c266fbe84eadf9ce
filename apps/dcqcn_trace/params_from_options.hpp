// dcqcn-trace's parameter options and their mapping onto each profile's RpParams.
#pragma once

#include <optional>
#include <string>

#include <cxxopts.hpp>

#include "lib/cc/params.hpp"

namespace roce::trace {

void add_param_options(cxxopts::Options& options);
// The profile's defaults with the given overrides; nullopt and `err` set when a value is bad or
// does not apply to the profile.
std::optional<cc::RpParams> params_from_options(const cxxopts::ParseResult& args, std::string& err);

}  // namespace roce::trace
