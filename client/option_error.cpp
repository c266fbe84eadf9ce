#include "client/option_error.hpp"

namespace roce::client {

namespace {

// cxxopts quotes with ‘ ’ when built for Unicode, with ' otherwise.
std::string quoted(const std::string& what) {
  for (const auto& [open, close] : {std::pair<std::string, std::string>{"\u2018", "\u2019"}, {"'", "'"}}) {
    const auto a = what.find(open);
    if (a == std::string::npos) continue;
    const auto b = what.find(close, a + open.size());
    if (b != std::string::npos) return what.substr(a + open.size(), b - a - open.size());
  }
  return {};
}

}  // namespace

std::string explain_option_error(const std::string& what, const std::vector<std::string>& args) {
  if (what.find("failed to parse") == std::string::npos) return what;
  const std::string value = quoted(what);
  if (value.empty()) return what;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == value && i > 1 && args[i - 1].size() > 1 && args[i - 1][0] == '-') return what + " (" + args[i - 1] + ")";
    const auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos && a.substr(eq + 1) == value)
      return what + " (" + a.substr(0, eq) + ")";
  }
  return what;
}

}  // namespace roce::client
