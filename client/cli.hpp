// What every tool's main shares before and after its work: exit statuses, error lines that
// start with the tool's name, cxxopts errors that name the option, and a last catch for an
// exception that escaped. (The EAL's part is in client/runtime.hpp, ToolEal.)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lib/status.hpp"

// Declared only: a tool may configure cxxopts (CXXOPTS_VECTOR_DELIMITER) before it includes it.
namespace cxxopts {
class Options;
class ParseResult;
}  // namespace cxxopts

namespace roce::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the run could not be finished
inline constexpr int kExitUsage = 2;   // the command line asks for what cannot be

// Parses `args` (args[0] is the program's name). An unknown option or a value that does not
// parse is an error whose message names the option (explain_option_error). Arguments left
// over are in unmatched(): each tool words that refusal itself, after --help.
Result<cxxopts::ParseResult> parse_cli(cxxopts::Options& options, const std::vector<std::string>& args);

// `prog: why` on stderr; returns `code`.
int report_error(const std::string& prog, const std::string& why, int code = kExitFailed);

// How a tool reports an error: prints `why` its way and returns the exit status `code`.
using FailFn = std::function<int(const std::string& why, int code)>;

// Runs `body`. An exception that escapes it is a bug, but it ends with one line
// (`prog: internal error: ...`, or through `fail` when the tool has its own way) and status 1
// after the stack unwound (the EAL cleaned up among the rest), never an abort.
int guarded_main(const std::string& prog, const std::function<int()>& body, const FailFn& fail = {});

}  // namespace roce::client
