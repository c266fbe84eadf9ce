// The default human output: one line per frame, like tshark's packet list, with every header
// decoded in the Details column.
#pragma once

#include <string>

#include "apps/inspect/frame_view.hpp"

namespace roce::inspect {

enum class TimeFormat : std::uint8_t {
  Both,      // relative seconds and UTC date/time (default)
  Relative,  // -t r: seconds since the first frame
  Utc,       // -t ud: UTC date and time
  Epoch,     // -t e: seconds since 1970
};

struct TableOptions {
  TimeFormat time = TimeFormat::Both;
  bool link = false;  // -e: MAC addresses too
};

std::string table_header(const TableOptions& o);
std::string table_row(const FrameView& v, const TableOptions& o);
// The Details column alone (extension headers, cut frames, analysis flags).
std::string frame_details(const FrameView& v);

}  // namespace roce::inspect
