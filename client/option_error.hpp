// cxxopts says "Argument '70000' failed to parse" without naming the option; the user needs
// to know which one. Shared by every tool that parses options with cxxopts.
#pragma once

#include <string>
#include <vector>

namespace roce::client {

// `what` is the exception text; `args` the arguments parsed (argv[0] first). Appends the option
// the bad value was given to when it can be found, e.g. "... failed to parse (--oob-port)".
std::string explain_option_error(const std::string& what, const std::vector<std::string>& args);

}  // namespace roce::client
