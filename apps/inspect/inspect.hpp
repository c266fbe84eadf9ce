// roce-inspect's work once the options are parsed: read the capture, decode every record,
// print the per-frame table or JSON lines, or the summary.
#pragma once

#include <ostream>
#include <string>

#include "protocol/parser.hpp"

namespace roce::inspect {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool summary = false;
  proto::ParseOptions parse{};
};

// Exit codes of roce-inspect.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCut = 1;    // the capture ends in the middle of a record (frames before it printed)
inline constexpr int kExitUsage = 2;  // bad command line, or a file that is missing, not a capture, or of an unsupported link type

// Prints to `out`; a read error goes to `err` as one line, after the frames read before it.
int run_inspect(const InspectOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace roce::inspect
