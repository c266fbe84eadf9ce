#include "client/cli.hpp"

#include <cxxopts.hpp>

#include <cstdio>
#include <exception>

#include "client/option_error.hpp"

namespace roce::client {

Result<cxxopts::ParseResult> parse_cli(cxxopts::Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    return options.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const std::exception& e) {
    return make_error(EINVAL, explain_option_error(e.what(), args));
  }
}

int report_error(const std::string& prog, const std::string& why, int code) {
  std::fprintf(stderr, "%s: %s\n", prog.c_str(), why.c_str());
  return code;
}

int guarded_main(const std::string& prog, const std::function<int()>& body, const FailFn& fail) {
  try {
    return body();
  } catch (const std::exception& e) {
    const std::string why = std::string("internal error: ") + e.what();
    return fail ? fail(why, kExitFailed) : report_error(prog, why);
  }
}

}  // namespace roce::client
