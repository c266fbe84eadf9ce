// roce-inspect's work once the options are parsed: read each capture, decode its records (in
// parallel batches), run the flow analysis, apply the display filter, and print the table,
// fields or JSON lines, then the summary and the picture.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "apps/inspect/display_filter.hpp"
#include "apps/inspect/fields_output.hpp"
#include "apps/inspect/summary.hpp"
#include "apps/inspect/table_output.hpp"
#include "protocol/parser.hpp"

namespace roce::inspect {

enum class Output : std::uint8_t { Table, Fields, Json, None };

struct InspectOptions {
  std::vector<std::string> paths;
  Output output = Output::Table;
  bool summary = false;
  bool json = false;  // the summary as JSON
  std::string plot_path;
  std::optional<DisplayFilter> filter;
  std::optional<std::uint64_t> count;  // stop after this many frames shown
  TableOptions table{};
  FieldsOptions fields{};
  std::vector<std::string> field_names;  // as given, for the header
  SummaryOptions summary_options{};
  proto::ParseOptions parse{};
  int threads = 0;        // 0: as many as TBB likes; 1: decode on the reading thread
  bool progress = false;  // a progress line on stderr
};

// Exit codes of roce-inspect.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCut = 1;    // the capture ends in the middle of a record (frames before it printed)
inline constexpr int kExitUsage = 2;  // bad command line, or a file that is missing, not a capture, or of an unsupported link type

// Prints to `out`; a read error goes to `err` as one line, after the frames read before it.
int run_inspect(const InspectOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace roce::inspect
